# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""A position servo's gains and torque limit from recorded runs: the twin's ``[driver]`` servo keys.

A servo arm's firmware runs a PD on its position goal, ``servo_kp (goal - q) - servo_kd dq``,
saturated at its torque limit (docs/servo.md). From runs with the goals (``goal_position``,
as ``bag_to_log`` keeps them) and the joint states, the torque the servo gave is

- the joint states' effort, when the driver publishes it (the servo's torque, as a
  Dynamixel's present current in N*m), else
- the torque the arm's model needs for the recorded motion, ``M(q) ddq + h(q, dq)`` with the
  drive's armature and friction, from the prior (``identify --scenario``): the servo's gains
  in N*m/rad need either.

Per joint :func:`estimate_servo` fits ``tau = kp (goal - q) - kd dq`` by least squares on the
frames where the servo is not saturated, with the goal that acts at a frame found as the one
sent 0 to :data:`MAX_LAG` frames before it (the lag that fits best). A gain is told only where
the data tell it (:data:`MIN_EXPLAINED` of the torque explained, a relative standard error
under :data:`MAX_KP_ERROR`, the runs' two halves agreeing within it); the torque limit only
where the servo saturated (its torque held at a ceiling while the fitted PD asks for more).
Everything it could not tell is said in one sentence each, with why.

This module does not import rclpy.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from skelarm_ros.identification import IdentificationError
from skelarm_ros.identification.data import BagOptions, joint_columns, log_channel, log_joint_names, read_input
from skelarm_ros.identification.signals import differentiate, within
from skelarm_ros.identification.twin import model_torque, toml_text
from skelarm_ros.interface import GOAL_CHANNELS, POSITION

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

    from skelarm_ros.bags.logfile import LogFile
    from skelarm_ros.sim.scenario import ArmSetup

GOALS = GOAL_CHANNELS[POSITION]
MAX_LAG = 5  # frames: the goal acting at a frame is one sent up to this many frames before it
MIN_FRAMES = 20  # unsaturated frames with a goal a joint's fit needs
MIN_EXPLAINED = 0.5  # share of the torque's variance the fitted PD must explain for its gains to be told
MAX_KP_ERROR = 0.2  # largest relative standard error of servo_kp that is told
MAX_KD_ERROR = 0.5  # largest relative standard error of servo_kd that is told
CEILING = 0.97  # frames whose torque is within this share of the joint's largest are at the ceiling
ASKS_MORE = 1.1  # ... and saturated where the fitted PD asks for this much more
MIN_SATURATED = 5  # saturated frames that tell the torque limit
CLOSE = 0.005  # rad: goals within this of the angles (their spread) are too close to tell a PD


@dataclass(frozen=True)
class ServoRun:
    """One recorded run of a servo arm, in its joints' order.

    Attributes
    ----------
    source : Path
        The bag or log.
    joints : list[str]
        The joints, one per column.
    time : NDArray[np.float64]
        Frame times (s), ``(N,)``.
    q, dq, goals : NDArray[np.float64]
        Angles (rad), velocities (rad/s) and the position goal held from each frame (rad),
        ``(N, n)``; NaN where not valid (no goal yet).
    effort : NDArray[np.float64] | None
        The joint states' effort (N*m), ``(N, n)``; ``None`` when the driver publishes none.
    """

    source: Path
    joints: list[str]
    time: NDArray[np.float64]
    q: NDArray[np.float64]
    dq: NDArray[np.float64]
    goals: NDArray[np.float64]
    effort: NDArray[np.float64] | None

    def selected(self, joints: Sequence[str]) -> ServoRun:
        """Return the run with the columns of ``joints``, in their order."""
        index = joint_columns(self.source, self.joints, joints, "pick the arm's joints with --joints a,b,c")
        effort = None if self.effort is None else self.effort[:, index]
        return ServoRun(
            self.source, list(joints), self.time, self.q[:, index], self.dq[:, index], self.goals[:, index], effort
        )

    def window(self, start: float | None, end: float | None) -> ServoRun:
        """Return the frames from ``start`` to ``end`` seconds after the run's first frame (as ``identify --start``)."""
        keep = within(self.time, start, end)
        effort = None if self.effort is None else self.effort[keep]
        return ServoRun(
            self.source, self.joints, self.time[keep], self.q[keep], self.dq[keep], self.goals[keep], effort
        )


def read_servo_run(path: str | Path, options: BagOptions | None = None) -> ServoRun | None:
    """Read a bag or ``.sklog.npz`` log's joint states and position goals; ``None`` when it has no goals.

    Raises
    ------
    IdentificationError
        If the input cannot be read (one sentence).
    """
    source = Path(path)
    log, _ = read_input(source, options)
    return servo_run_of(log, source)


def servo_run_of(log: LogFile, source: Path) -> ServoRun | None:
    """Return the joint states and position goals a log holds (an input read); ``None`` when it has no goals."""
    q = log_channel(log, "q")
    goals = None if q is None else log_channel(log, GOALS, q.shape[1])
    if q is None or goals is None or not np.isfinite(goals).any():
        return None
    time = np.asarray(log.times, dtype=np.float64)
    dq = log_channel(log, "dq", q.shape[1])
    if dq is None or not np.isfinite(dq).any():
        dq = differentiate(time, q)
    effort = log_channel(log, "tau", q.shape[1])
    source_of_tau = log.extra.get("effort", {}).get("source") if isinstance(log.extra.get("effort"), dict) else None
    finite = None if effort is None else effort[np.isfinite(effort)]
    measured = finite is not None and source_of_tau == "joint_states" and finite.size > 1 and bool(np.std(finite) > 0)
    return ServoRun(source, log_joint_names(log, q.shape[1]), time, q, dq, goals, effort if measured else None)


@dataclass
class ServoEstimate:
    """What the runs told of each joint's servo.

    Attributes
    ----------
    joints : list[str]
        The joints, in the arm's order.
    kp, kd, limit : NDArray[np.float64]
        ``servo_kp`` (N*m/rad), ``servo_kd`` (N*m*s/rad) and the torque limit (N*m) per joint;
        NaN where the data do not tell it.
    torque : str
        Which torque the fit used.
    lines : list[str]
        The report: one line per joint (gains, their standard errors, the lag, the share explained).
    untold : list[str]
        One sentence per value it could not tell, with why.
    """

    joints: list[str]
    kp: NDArray[np.float64]
    kd: NDArray[np.float64]
    limit: NDArray[np.float64]
    torque: str
    lines: list[str] = field(default_factory=list)
    untold: list[str] = field(default_factory=list)

    def driver(self) -> dict[str, Any]:
        """Return the ``[driver]`` keys told: ``interface``, ``servo_kp``, ``servo_kd`` (each told for all joints)."""
        table: dict[str, Any] = {}
        if np.isfinite(self.kp).all():
            table = {"interface": POSITION, "servo_kp": _numbers(self.kp)}
            if np.isfinite(self.kd).all():
                table["servo_kd"] = _numbers(self.kd)
        return table

    def apply(self, config: dict[str, Any]) -> None:
        """Write what was told into a twin's tables: the ``[driver]`` gains and the links' ``effort_limit``."""
        table = self.driver()
        if table:
            config["driver"] = {**config.get("driver", {}), **table}
        links = config.get("skeleton", {}).get("link", [])
        for link, limit in zip(links, self.limit, strict=False):
            if math.isfinite(limit):
                link["effort_limit"] = float(f"{limit:.4g}")


def _numbers(values: NDArray[np.float64]) -> list[float]:
    return [float(f"{value:.4g}") for value in values]


def estimate_servo(runs: Sequence[ServoRun], arm: ArmSetup | None = None) -> ServoEstimate:
    """Estimate each joint's ``servo_kp``, ``servo_kd`` and torque limit from servo runs (see the module).

    Parameters
    ----------
    runs : Sequence[ServoRun]
        Runs of one arm, their columns in the same joints' order.
    arm : ArmSetup | None, optional
        The prior arm, whose model gives the torque where the runs have no measured effort.

    Returns
    -------
    ServoEstimate
        The values told (NaN where not) and the sentences on what was not.
    """
    joints = runs[0].joints
    n = len(joints)
    estimate = ServoEstimate(joints, np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan), "")
    torques: list[NDArray[np.float64]] = []
    measured = all(run.effort is not None for run in runs)
    if measured:
        estimate.torque = "the joint states' effort (the servo's torque)"
        torques = [run.effort for run in runs if run.effort is not None]
    elif arm is not None and arm.num_joints == n:
        estimate.torque = "the prior's model torque for the recorded motion (no effort recorded)"
        for run in runs:
            ddq = differentiate(run.time, run.dq)
            rows = np.isfinite(run.q).all(axis=1) & np.isfinite(run.dq).all(axis=1) & np.isfinite(ddq).all(axis=1)
            tau = np.full(run.q.shape, np.nan)
            tau[rows] = model_torque(arm, run.q[rows], run.dq[rows], ddq[rows])
            torques.append(tau)
    else:
        estimate.untold.append(
            "servo_kp, servo_kd and the torque limit cannot be told: the runs record no effort and no prior "
            "(--scenario with the arm's masses) gives the torque the motion needed; record the servo's torque "
            "(present current) in the joint states' effort, or pass --scenario"
        )
        return estimate
    for j, name in enumerate(joints):
        _fit_joint(estimate, j, name, runs, torques)
    return estimate


def _stacked(runs: Sequence[ServoRun], torques: Sequence[NDArray[np.float64]], j: int, lag: int) -> NDArray[Any]:
    """Rows ``(goal - q, -dq, tau)`` of joint ``j`` over every run, the goal sent ``lag`` frames before."""
    parts = []
    for run, tau in zip(runs, torques, strict=True):
        goals = run.goals[:, j]
        if lag:
            goals = np.concatenate([np.full(lag, np.nan), goals[:-lag]])
        parts.append(np.column_stack([goals - run.q[:, j], -run.dq[:, j], tau[:, j]]))
    rows = np.concatenate(parts)
    return rows[np.isfinite(rows).all(axis=1)]


def _fit_joint(
    estimate: ServoEstimate, j: int, name: str, runs: Sequence[ServoRun], torques: Sequence[NDArray[np.float64]]
) -> None:
    """Fit one joint's PD at the best lag, find its ceiling, and say what it tells."""
    best: tuple[float, int, NDArray[Any], NDArray[Any], NDArray[Any]] | None = None
    usable = 0  # the most frames with a goal, an angle and a torque at any lag
    for lag in range(MAX_LAG + 1):
        rows = _stacked(runs, torques, j, lag)
        usable = max(usable, len(rows))
        if len(rows) < MIN_FRAMES:
            continue
        peak = float(np.max(np.abs(rows[:, 2])))
        free = rows[np.abs(rows[:, 2]) < CEILING * peak] if peak > 0.0 else rows
        if len(free) < MIN_FRAMES:
            continue
        coef, *_ = np.linalg.lstsq(free[:, :2], free[:, 2], rcond=None)
        residual = free[:, 2] - free[:, :2] @ coef
        explained = 1.0 - float(np.var(residual)) / max(float(np.var(free[:, 2])), 1e-300)
        if best is None or explained > best[0]:
            best = (explained, lag, coef, free, rows)
    if best is None:
        why = (
            f"fewer than {MIN_FRAMES} frames have a goal, an angle and a torque"
            if usable < MIN_FRAMES
            else f"its torque stays at one value over the {usable} frames with a goal (the joint does not move)"
        )
        estimate.untold.append(f"{name}: its servo cannot be told: {why}")
        return
    explained, lag, coef, free, rows = best
    kp, kd = (float(value) for value in coef)
    errors = _standard_errors(free, coef)
    spread = float(np.std(free[:, 0]))
    estimate.lines.append(
        f"{name}: servo_kp {kp:.4g} N*m/rad (+/- {errors[0]:.2g}), servo_kd {kd:.4g} N*m*s/rad "
        f"(+/- {errors[1]:.2g}); the goal acting {lag} frame{'s' if lag != 1 else ''} after it was sent; "
        f"{100 * max(explained, 0.0):.0f} % of the torque explained over {len(free)} frames "
        f"(goal - angle spread {spread:.3g} rad)"
    )
    if explained < MIN_EXPLAINED or kp <= 0.0 or errors[0] > MAX_KP_ERROR * abs(kp):
        offset = float(np.mean(free[:, 0]))
        if abs(offset) > 3.0 * spread:
            why = (
                f"the goals sit {offset:+.3g} rad off the angles on average (another zero, sign or unit than the "
                "joint states'), or the joint does not follow them"
            )
        elif spread < CLOSE:
            why = f"the goals stay within {spread:.2g} rad of the angles: too close to tell the PD from the noise"
        else:
            why = (
                "the angles do not follow the goals as a servo's PD would at these frames "
                f"({1.0 / _step(runs):.3g} Hz: record faster, with the goals on the joint states' convention)"
            )
        estimate.untold.append(
            f"{name}: servo_kp and servo_kd cannot be told: the PD explains {100 * max(explained, 0.0):.0f} % of "
            f"the torque (servo_kp {kp:.3g} +/- {errors[0]:.2g}); {why}"
        )
        return
    halves = [np.linalg.lstsq(half[:, :2], half[:, 2], rcond=None)[0][0] for half in np.array_split(free, 2)]
    if abs(halves[0] - halves[1]) > MAX_KP_ERROR * abs(kp):
        estimate.untold.append(
            f"{name}: servo_kp cannot be told: the runs' first and second halves give {halves[0]:.3g} and "
            f"{halves[1]:.3g} N*m/rad (the servo is not the PD the fit assumes, or the torque used is not its own)"
        )
        return
    estimate.kp[j] = kp
    if kd > 0.0 and errors[1] <= MAX_KD_ERROR * kd:
        estimate.kd[j] = kd
    else:
        estimate.untold.append(
            f"{name}: servo_kd cannot be told (the fit gives {kd:.3g} +/- {errors[1]:.2g} N*m*s/rad): too little "
            "velocity in the frames"
        )
    _ceiling(estimate, j, name, rows, coef)


def _step(runs: Sequence[ServoRun]) -> float:
    """Return the runs' median frame step (s)."""
    steps = np.concatenate([np.diff(run.time) for run in runs])
    return float(np.median(steps[steps > 0.0])) if np.any(steps > 0.0) else math.inf


def _standard_errors(rows: NDArray[Any], coef: NDArray[Any]) -> NDArray[np.float64]:
    """Return the least-squares fit's standard errors of its two coefficients."""
    x, y = rows[:, :2], rows[:, 2]
    dof = max(len(rows) - 2, 1)
    sigma2 = float(np.sum((y - x @ coef) ** 2)) / dof
    try:
        covariance = sigma2 * np.linalg.inv(x.T @ x)
    except np.linalg.LinAlgError:
        return np.array([np.inf, np.inf])
    return np.sqrt(np.abs(np.diag(covariance)))


def _ceiling(estimate: ServoEstimate, j: int, name: str, rows: NDArray[Any], coef: NDArray[Any]) -> None:
    """Tell the torque limit where the torque stays at its ceiling while the fitted PD asks for more."""
    torque = np.abs(rows[:, 2])
    asked = np.abs(rows[:, :2] @ coef)
    peak = float(torque.max())
    saturated = (torque >= CEILING * peak) & (asked >= ASKS_MORE * torque)
    if int(saturated.sum()) >= MIN_SATURATED:
        estimate.limit[j] = float(np.median(torque[saturated]))
        estimate.lines.append(
            f"{name}: torque limit {estimate.limit[j]:.4g} N*m (the torque held there in {int(saturated.sum())} "
            f"frames while the PD asked up to {float(asked[saturated].max()):.3g} N*m)"
        )
        return
    estimate.untold.append(
        f"{name}: its torque limit cannot be told: the servo never saturated (its torque reached {peak:.3g} N*m, "
        "what its gains asked); a run that pushes it against a load or a stop would show it"
    )


def servo_into(config: dict[str, Any], runs: Sequence[ServoRun], prior: ArmSetup | None) -> ServoEstimate | None:
    """Estimate the servo of the runs with position goals, written into a twin's tables; ``None``: there are none."""
    if not runs:
        return None
    estimate = estimate_servo(runs, prior)
    estimate.apply(config)
    return estimate


def servo_report(estimate: ServoEstimate) -> list[str]:
    """Return the report's lines on the servo: the torque used, each joint's fit, what it could not tell."""
    lines = [f"servo (position goals): fitted on {estimate.torque}", *(f"  {line}" for line in estimate.lines)]
    table = estimate.driver()
    written = ", ".join(sorted(table)) if table else "nothing"
    limits = [name for name, value in zip(estimate.joints, estimate.limit, strict=True) if math.isfinite(value)]
    if limits:
        written += f"; effort_limit of {', '.join(limits)}"
    lines.append(f"  written into the twin: {written}")
    lines.extend(f"  not told: {sentence}" for sentence in estimate.untold)
    return lines


def identify_servo(
    inputs: Sequence[str | Path],
    output: str | Path,
    *,
    prior: ArmSetup | None,
    bag: BagOptions | None = None,
    joints: Sequence[str] | None = None,
) -> list[str] | None:
    """Write the twin of a servo arm whose runs record goals and no torque: the prior with its servo told.

    With no torque the arm's dynamics cannot be identified (``identify``'s regression needs
    it); the prior's model gives the torque the servo's fit needs. Return the report's lines;
    ``None`` when an input records no position goals or records the servo's torque (then the
    dynamics are identified, and the servo with them).

    Raises
    ------
    IdentificationError
        Without a prior (one sentence), or when nothing of the servo could be told.
    """
    from skelarm_ros.outputs import write_atomically

    options = bag or BagOptions()
    read = [read_servo_run(path, options) for path in inputs]
    runs = [run for run in read if run is not None and run.effort is None]
    if not runs or len(runs) < len(read):
        return None
    order = list(joints) if joints else runs[0].joints
    told = [run.selected(order) for run in runs]
    if prior is None:
        msg = (
            "the runs record a servo's position goals but no torque, so neither the arm's dynamics nor the servo's "
            "gains in N*m/rad can be told from them alone; pass --scenario with the arm (its masses and gravity)"
        )
        raise IdentificationError(msg)
    estimate = estimate_servo(told, prior)
    if not estimate.driver() and not np.isfinite(estimate.limit).any():
        msg = "nothing of the servo could be told: " + "; ".join(estimate.untold)
        raise IdentificationError(msg)
    config = copy.deepcopy(prior.config)
    estimate.apply(config)
    text = toml_text(config)
    target = Path(output)
    write_atomically(target, lambda path: path.write_text(text, encoding="utf-8"))
    return [
        f"data: {sum(len(run.time) for run in told)} frames of {len(estimate.joints)} joints {estimate.joints} "
        f"from {len(told)} run{'s' if len(told) > 1 else ''}; no torque recorded: the arm's dynamics are the prior's",
        *servo_report(estimate),
        f"wrote {target}",
    ]
