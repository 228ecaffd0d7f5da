# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""What a good reach is, in numbers: the score ``skelarm-ros tune`` minimises and the constraints it keeps.

A run of the task is judged from what the arm's driver publishes (the joint states, as a bag
of the run holds them) and what the controller asked for, by its error over time ``e(t)``:
the distance of the tip (from the published joint angles) to the task's target (m). With
``s`` the task's tolerance (:func:`error_scale`), ``T`` the run's length (the task and a hold
of at least :data:`MIN_HOLD` seconds after it) and ``t`` counted from the run's first state:

- ``itae``: the integral of ``t * e(t)`` over the run (the error weighted by how late it comes);
- ``final_error``: ``e`` at the end of the run;
- ``overshoot``: how far the error grows past ``s`` again after it first came within ``s`` (0 if never);
- ``settling_time``: from when on ``e`` stays within ``s`` (``T`` when it never settles).

The score is ``itae / (s T^2 / 2) + final_error / s + overshoot / s + settling_time / T``:
each term 1 for a run that sits at the tolerance all along, so none dominates by its unit.
The constraints, each satisfied at 0 or below (Optuna's convention):

- ``effort``: the largest torque the controller asked for (before the effort limits clamp it:
  :attr:`~skelarm_ros.control.loop.ControlOutput.demand`) over the links' ``effort_limit``, less 1:
  a loop that needs more than the motors give is clamped, and a clamped loop is not the loop tuned;
- ``speed``: the largest published joint speed over its ``velocity_limit``, less 1;
- ``hold``: the growth of the error's swing over the hold after the task: the swing of the
  hold's second half over its first half's, less :data:`HOLD_GROWTH`, each swing at least
  :data:`HOLD_FLOOR` of ``s`` (so a settled arm's sensor noise never counts as growth);
- ``stopped``: 0 when the run went to its end with the arm controlled; when it ended early (a
  non-finite state, a state the controller gave no command for) or the controller's divergence
  guard stopped the arm, the share of the planned run (the task and :data:`MIN_HOLD`) that was
  left then, at least :data:`STOPPED_FLOOR`: a candidate that goes unstable later is less
  infeasible, which leads the search towards the stable ones.

A run that ended early or went non-finite scores :data:`STOPPED_VALUE`. Several runs of one
candidate (the robust samples: twins and delays) give their worst score and their worst
constraints (:func:`worst`).

This module imports neither rclpy nor Optuna.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence

    import skelarm
    from numpy.typing import NDArray

MIN_HOLD = 2.0
"""Seconds of hold after the task a run has, to see a growing oscillation."""
HOLD_FLOOR = 0.05
"""A swing below this share of the tolerance is no oscillation (sensor noise, a settled arm)."""
HOLD_GROWTH = 1.25
"""The hold's second half may swing this many times as wide as its first (a steady limit cycle), not more."""
STOPPED_FLOOR = 0.01
"""The ``stopped`` constraint of a run stopped at its very end: above 0, so still infeasible."""
STOPPED_VALUE = 1e6
"""The score of a run that ended early or went non-finite: worse than any finished run."""
DEFAULT_SCALE = 0.01
"""The error scale (m) of a task without a tolerance."""
CONSTRAINTS = ("effort", "speed", "hold", "stopped")
TERMS = ("itae", "final_error", "overshoot", "settling_time")
OBJECTIVE = (
    "score = ITAE/(s*T^2/2) + final error/s + overshoot/s + settling time/T of the tip's distance to the target "
    "(s the task's tolerance, T the task and a 2 s hold), the worst over the robust samples; constraints: demand "
    "within effort_limit, speed within velocity_limit, no growing oscillation in the hold, not stopped"
)
"""The objective in one line, as the tuned scenario's ``[tuning]`` table says it."""


@dataclass(frozen=True)
class Trace:
    """What a run of the task gives, per published state.

    Attributes
    ----------
    time : NDArray[np.float64]
        Each state's time from the run's first state (s), shape ``(K,)``, increasing.
    error : NDArray[np.float64]
        The task's error at each state (m), shape ``(K,)``.
    demand : NDArray[np.float64]
        The torque the controller asked for before any limit (N*m), shape ``(K, N)``.
    speed : NDArray[np.float64]
        Joint velocities (rad/s), shape ``(K, N)``.
    task_end : float
        When the task's planned time ends (s, from the first state); the rest is the hold.
    stopped : str
        Why the run ended early or the arm was stopped (empty when neither).
    stopped_at : float
        When (s, from the first state): the last state of a run that ended early, the state the
        guard stopped the arm at; ``inf`` for neither.
    """

    time: NDArray[np.float64]
    error: NDArray[np.float64]
    demand: NDArray[np.float64]
    speed: NDArray[np.float64]
    task_end: float
    stopped: str = ""
    stopped_at: float = math.inf

    def left_when_stopped(self) -> float:
        """Return the ``stopped`` constraint: 0, or the share of the planned run left when it stopped."""
        if not self.stopped:
            return 0.0
        planned = self.task_end + MIN_HOLD
        return max(1.0 - min(self.stopped_at, float(self.time[-1])) / planned, STOPPED_FLOOR)


@dataclass(frozen=True)
class Score:
    """One run's (or one candidate's worst) figures, score and constraints.

    Attributes
    ----------
    value : float
        The score (lower is better).
    itae, final_error, overshoot, settling_time : float
        Its terms before scaling (m*s^2, m, m, s).
    effort, speed, hold, stopped : float
        The constraints, satisfied at 0 or below.
    """

    value: float
    itae: float
    final_error: float
    overshoot: float
    settling_time: float
    effort: float
    speed: float
    hold: float
    stopped: float

    @property
    def constraints(self) -> list[float]:
        """The constraints in :data:`CONSTRAINTS` order."""
        return [self.effort, self.speed, self.hold, self.stopped]

    @property
    def feasible(self) -> bool:
        """Whether every constraint holds."""
        return all(value <= 0.0 for value in self.constraints)

    def violated(self) -> list[str]:
        """Return the constraints that do not hold, each as ``name +value``."""
        pairs = zip(CONSTRAINTS, self.constraints, strict=True)
        return [f"{name} {value:+.3g}" for name, value in pairs if not value <= 0.0]

    def text(self) -> str:
        """Return the figures in one phrase."""
        verdict = "feasible" if self.feasible else "infeasible: " + ", ".join(self.violated())
        return (
            f"score {self.value:.4g} (ITAE {self.itae:.4g} m*s^2, final error {1e3 * self.final_error:.3g} mm, "
            f"overshoot {1e3 * self.overshoot:.3g} mm, settling {self.settling_time:.3g} s; {verdict})"
        )

    def table(self) -> dict[str, float]:
        """Return the figures as a TOML table (every field by name)."""
        return {name: float(value) for name, value in asdict(self).items()}

    def difference(self, other: Score) -> float:
        """Return the largest absolute difference between two scores' figures (``inf`` where one is not finite)."""
        worst = 0.0
        for name, value in asdict(self).items():
            theirs = getattr(other, name)
            if value == theirs:
                continue
            worst = max(worst, abs(value - theirs) if math.isfinite(value - theirs) else math.inf)
        return worst


def error_scale(tolerance: float | None) -> float:
    """Return the error scale ``s`` (m): the task's tolerance, else :data:`DEFAULT_SCALE`."""
    if tolerance is not None and tolerance > 0.0:
        return float(tolerance)
    return DEFAULT_SCALE


def tip_positions(skeleton: skelarm.Skeleton, angles: NDArray[np.float64]) -> NDArray[np.float64]:
    """Return the tip's position ``(x, y)`` (m) at each row of joint angles, shape ``(K, 2)``.

    The planar chain as skelarm and the engine build it: the first joint at ``(base_length, 0)``,
    each link ``length`` along the sum of the angles up to its joint.
    """
    lengths = np.array([link.prop.length for link in skeleton.links[1:]], dtype=np.float64)
    absolute = np.cumsum(np.atleast_2d(angles), axis=1)
    x = float(skeleton.base_length) + np.cos(absolute) @ lengths
    y = np.sin(absolute) @ lengths
    return np.column_stack([x, y])


def trace_of(  # noqa: PLR0917 - a run's arrays, as a run or a bag gives them
    skeleton: skelarm.Skeleton,
    target: NDArray[np.float64],
    stamps_ns: NDArray[np.int64],
    position: NDArray[np.float64],
    velocity: NDArray[np.float64],
    demand: NDArray[np.float64],
    task_duration: float,
    stopped: str = "",
    stopped_at: float = math.inf,
) -> Trace:
    """Return the trace of a run from its published states and the torque asked for.

    Parameters
    ----------
    skeleton : skelarm.Skeleton
        The arm (its geometry gives the tip).
    target : NDArray[np.float64]
        The task's target ``(x, y)`` (m).
    stamps_ns : NDArray[np.int64]
        The states' stamps (ns), shape ``(K,)``.
    position, velocity : NDArray[np.float64]
        The published joint angles (rad) and velocities (rad/s), shape ``(K, N)``.
    demand : NDArray[np.float64]
        The torque asked for answering each state (N*m), shape ``(K, N)``.
    task_duration : float
        The task's length (s), counted from the first state.
    stopped : str, optional
        Why the run ended early or the arm was stopped.
    stopped_at : float, optional
        When the arm was stopped (s from the first state); a run that ended early ended at its last state.
    """
    stamps = np.asarray(stamps_ns, dtype=np.int64)
    time = (stamps - stamps[0]) / 1e9
    tips = tip_positions(skeleton, np.asarray(position, dtype=np.float64))
    error = np.hypot(tips[:, 0] - target[0], tips[:, 1] - target[1])
    arrays = (time, error, np.asarray(demand, dtype=np.float64), np.asarray(velocity))
    return Trace(*arrays, task_duration, stopped, stopped_at)


def score(trace: Trace, scale: float, effort_limit: NDArray[np.float64], velocity_limit: NDArray[np.float64]) -> Score:
    """Return a run's score and constraints (see the module).

    Parameters
    ----------
    trace : Trace
        The run.
    scale : float
        The error scale ``s`` (:func:`error_scale`).
    effort_limit, velocity_limit : NDArray[np.float64]
        The links' limits (``inf`` where a joint has none), shape ``(N,)``.

    Returns
    -------
    Score
        The run's figures; a run that ended early or went non-finite scores :data:`STOPPED_VALUE`.

    Raises
    ------
    ValueError
        If the run has fewer than two states, or no hold of :data:`MIN_HOLD` seconds after the task.
    """
    time, error = trace.time, trace.error
    if time.size < 2:
        msg = "a run of fewer than two states cannot be scored"
        raise ValueError(msg)
    finite = bool(np.isfinite(error).all() and np.isfinite(trace.speed).all() and np.isfinite(trace.demand).all())
    length = float(time[-1] - time[0])
    held = time[-1] - trace.task_end >= MIN_HOLD - 1e-9
    effort = _excess(trace.demand, effort_limit) if finite else math.inf
    speed = _excess(trace.speed, velocity_limit) if finite else math.inf
    if not finite or (trace.stopped and not held):
        left = trace.left_when_stopped() if trace.stopped else 1.0
        return Score(STOPPED_VALUE, math.inf, math.inf, math.inf, length, effort, speed, math.inf, left)
    if not held:
        msg = f"the run ends {time[-1] - trace.task_end:.3g} s after the task; score runs with a hold of {MIN_HOLD} s"
        raise ValueError(msg)
    elapsed = time - time[0]
    itae = float(np.trapezoid(elapsed * error, elapsed))
    final = float(error[-1])
    inside = np.flatnonzero(error <= scale)
    overshoot = 0.0 if inside.size == 0 else max(0.0, float(error[inside[0] :].max()) - scale)
    outside = np.flatnonzero(error > scale)
    settling = 0.0 if outside.size == 0 else (length if outside[-1] == error.size - 1 else elapsed[outside[-1] + 1])
    value = itae / (scale * length**2 / 2.0) + final / scale + overshoot / scale + float(settling) / length
    hold = _hold_growth(elapsed, error, trace.task_end - float(time[0]), HOLD_FLOOR * scale)
    return Score(value, itae, final, overshoot, float(settling), effort, speed, hold, trace.left_when_stopped())


def _excess(values: NDArray[np.float64], limits: NDArray[np.float64]) -> float:
    """Return the largest ``|value| / limit - 1`` over joints with a limit (-1 where none has one)."""
    limited = np.isfinite(limits)
    if not limited.any() or values.size == 0:
        return -1.0
    peak = np.abs(values[:, limited]).max(axis=0)
    return float((peak / limits[limited]).max() - 1.0)


def _hold_growth(elapsed: NDArray[np.float64], error: NDArray[np.float64], task_end: float, floor: float) -> float:
    """Return the hold's second half's swing over its first half's, less :data:`HOLD_GROWTH` (each >= ``floor``)."""
    hold = elapsed >= task_end
    middle = task_end + (elapsed[-1] - task_end) / 2.0
    first, second = error[hold & (elapsed < middle)], error[elapsed >= middle]
    if first.size == 0 or second.size == 0:
        return 0.0
    swing_first = max(float(first.max() - first.min()), floor)
    swing_second = max(float(second.max() - second.min()), floor)
    return swing_second / swing_first - HOLD_GROWTH


def worst(scores: Sequence[Score]) -> Score:
    """Return the worst of several runs of one candidate: the highest score, each constraint's highest value.

    The figures (ITAE and the rest) are those of the run with the highest score.
    """
    if not scores:
        msg = "no run to judge"
        raise ValueError(msg)
    top = max(scores, key=lambda item: item.value)
    return Score(
        top.value,
        top.itae,
        top.final_error,
        top.overshoot,
        top.settling_time,
        max(item.effort for item in scores),
        max(item.speed for item in scores),
        max(item.hold for item in scores),
        max(item.stopped for item in scores),
    )
