# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""What the recorded runs tell of the arm's driver: its rate, command delay, noise and encoder ticks.

``identify`` writes them into the twin's ``[driver]`` table (docs/scenarios.md, "[driver]"),
so that ``hardware:=twin scenario:=twin.toml`` runs the controller against the driver the
arm has, and says what it could not estimate (the prior's value, if it gives one, is kept):

- ``rate``: one over the median step of the recorded states, when the steps are regular
  (a driver's header stamps; log times jitter with the recorder);
- ``command_delay``: whole ticks from the state a command answers to the tick it acts
  from. Without delay the effort published at frame ``k+1`` (applied until it) is the
  command of frame ``k``; the delay is the shift that makes them closest
  (:func:`~skelarm_ros.identification.data.command_lag`), rounded to whole ticks, as the
  simulator's driver acts on commands only at its ticks. Without a measured effort the
  commands are held against the torque the prior needs for the recorded motion
  (inverse dynamics of the angles, velocities and accelerations), the same way;
- ``encoder_ticks``: per revolution, where a joint's angles step in whole multiples of
  one quantum (:func:`~skelarm_ros.identification.checks.quantum`);
- ``position_noise``, ``velocity_noise``: from each signal's fourth differences
  (:func:`~skelarm_ros.identification.checks.noise`); the angles' noise beyond what the
  encoder's ticks themselves give (``quantum / sqrt(12)``);
- ``effort_noise``: from the fourth differences of the published effort less the command
  that acted over it, so that the torque's own changes do not count; only with commands.

``torque_lag`` (a current loop's lag) is not estimated: it shows only as a fraction of a
tick in the delay.

This module does not import rclpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from skelarm_ros.identification import checks
from skelarm_ros.identification.data import align, choose_torque, command_lag, least_shift
from skelarm_ros.identification.regressor import applied_torque
from skelarm_ros.identification.signals import lowpass

if TYPE_CHECKING:
    from collections.abc import Sequence

    import skelarm
    from numpy.typing import NDArray

    from skelarm_ros.identification.data import Recording
    from skelarm_ros.identification.regressor import Structure
    from skelarm_ros.sim.scenario import ArmSetup

    _Model = tuple[Structure, skelarm.Skeleton, float | None]

IRREGULAR = 1.2  # 95th over 5th percentile of the steps beyond which the states come at no rate of their own
MAX_MISFIT = 0.5  # share of the torque's RMS: commands further from the torque do not show in it
_WHOLE = 1e-6  # relative: a tick this close to a whole number of integration steps is one
_DIGITS = 3  # significant digits of the noise written
_ENCODER_WHOLE = 1e-3  # relative: ticks per revolution this close to a whole number are one
_SHOWN = {"measured effort": "show in the measured effort", "motion": "fit the motion best"}
_MIN_MOTION_SAMPLES = 200  # steps a delay is read from the motion on
_MOTION_SHIFTS = (3, 12)  # ticks before and after the state a command answers that the motion is tried at
_BETWEEN_TICKS = 0.2  # of a tick: an effort following the commands further off their ticks lags them
_SUBTICK = 0.5  # of an encoder tick: position noise below it is not told from the ticks' own steps


@dataclass(frozen=True)
class DriverEstimate:
    """What the runs tell of the driver.

    Attributes
    ----------
    table : dict[str, Any]
        The ``[driver]`` keys estimated (per-joint keys as lists, one value per joint).
    found : tuple[str, ...]
        One phrase per key estimated: its value and what it was read from.
    missing : tuple[str, ...]
        One phrase per key not estimated: why, and whether the prior's value is kept.
    dt : float | None
        The twin's integration step when the prior's does not divide the rate's period
        into whole steps (the twin's ``[simulator].dt``); ``None`` to keep the prior's.
    """

    table: dict[str, Any]
    found: tuple[str, ...]
    missing: tuple[str, ...]
    dt: float | None

    def record(self) -> dict[str, list[str]]:
        """Return what the twin's ``[identification]`` table records of it."""
        return {"driver_estimated": list(self.found), "driver_not_estimated": list(self.missing)}


def estimate(
    recordings: Sequence[Recording],
    assessment: checks.Assessment,
    prior: ArmSetup,
    arm: Structure,
    *,
    cutoff: float | None,
) -> DriverEstimate:
    """Estimate the driver's ``[driver]`` keys from the runs (see the module).

    Parameters
    ----------
    recordings : Sequence[Recording]
        The inputs, in the arm's joint order, as read (before any velocity is replaced).
    assessment : checks.Assessment
        What the data checks found of them (noise, encoder step).
    prior : ArmSetup
        The prior: its geometry, its integration step (the twin's), and its ``[driver]``
        keys, kept where nothing is estimated.
    arm : Structure
        The arm's regressor: without a measured effort, the delay is the commands' shift
        it fits best to the motion.
    cutoff : float | None
        The identification's low-pass cut-off (Hz), ``None`` for none.

    Returns
    -------
    DriverEstimate
        The keys, and in words what was and was not estimated.
    """
    said = _Said()
    period, twin_dt = _rate(recordings, prior.dt, said)
    delay = _delay(recordings, (arm, prior.skeleton, cutoff), period, said)
    _noise(recordings, assessment, delay, said)
    table, found, missing = said.table, said.found, said.missing
    missing.append("torque_lag: not estimated (a current loop's lag shows only as a fraction of a tick in the delay)")
    given = prior.driver.given if prior.driver is not None else frozenset()
    missing = [f"{line}; the prior's value is kept" if line.split(":")[0] in given else line for line in missing]
    return DriverEstimate(table, tuple(found), tuple(missing), twin_dt)


@dataclass
class _Said:
    """The keys estimated so far, and the phrases on what was and was not."""

    table: dict[str, Any] = field(default_factory=dict)
    found: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def _rate(recordings: Sequence[Recording], dt: float, said: _Said) -> tuple[float, float | None]:
    """Estimate the rate; return the states' median step (s) and the twin's new step, if it needs one."""
    table, found, missing = said.table, said.found, said.missing
    steps = np.concatenate([np.diff(r.time) for r in recordings])
    steps = steps[np.isfinite(steps) & (steps > 0.0)]
    period = float(np.median(steps))
    low, high = np.percentile(steps, [5, 95])
    if high > IRREGULAR * low:
        missing.append(
            f"rate: the states' steps vary from {1e3 * low:.3g} to {1e3 * high:.3g} ms (5th to 95th percentile): "
            "they are not stamped at the driver's ticks; stamp them where they are measured (--clock header)"
        )
        return period, None
    rate = float(f"{1.0 / period:.6g}")
    period = 1.0 / rate
    table["rate"] = rate
    found.append(f"rate: {rate:g} Hz (the median step of the states, {1e3 * period:.4g} ms)")
    whole = period / dt
    if round(whole) >= 1 and abs(whole - round(whole)) <= _WHOLE * whole:
        return period, None
    steps_per_tick = math.ceil(whole)
    twin_dt = period / steps_per_tick
    found.append(
        f"dt: the twin integrates at {twin_dt:.6g} s, {steps_per_tick} step{'s' if steps_per_tick > 1 else ''} "
        f"a tick (the prior's {dt:g} s does not divide the driver's period)"
    )
    return period, twin_dt


def _delay(recordings: Sequence[Recording], model: _Model, period: float, said: _Said) -> tuple[int, float] | None:
    """Estimate the command delay; return it in whole ticks and in ticks as found (``None`` when not estimated)."""
    table, found, missing = said.table, said.found, said.missing
    lags, why = [], []
    for recording in recordings:
        lag, source = _lag(recording, model)
        if lag is None:
            why.append(f"{recording.source}: {source}")
            continue
        seconds, misfit = lag
        if misfit > MAX_MISFIT or seconds < -0.5 * period:
            why.append(
                f"{recording.source}: its commands do not show in the {source} (at best {100 * misfit:.3g} % RMS "
                f"apart, {1e3 * seconds:.3g} ms after the state they answer)"
            )
            continue
        lags.append((seconds, source))
    if not lags:
        missing.append("command_delay: " + "; ".join(why))
        return None
    seconds = float(np.median([lag for lag, _ in lags]))
    ticks = max(round(seconds / period), 0)
    table["command_delay"] = float(f"{ticks * period:.6g}")
    sources = " and ".join(dict.fromkeys(_SHOWN[source] for _, source in lags))
    found.append(
        f"command_delay: {1e3 * ticks * period:.4g} ms, {ticks} tick{'' if ticks == 1 else 's'} (the commands "
        f"{sources} {1e3 * seconds:.3g} ms after the state they answer)"
    )
    return ticks, seconds / period


def _lag(recording: Recording, model: _Model) -> tuple[tuple[float, float] | None, str]:
    """Return the commands' lag behind the state they answer and what it was read from (or why not)."""
    if recording.torque("commands") is None:
        return None, "no commands recorded beside the states (record the command topic)"
    if recording.torque("measured") is not None:
        return command_lag(recording), "measured effort"
    return _motion_lag(choose_torque(recording, "commands"), model), "motion"


def _motion_lag(recording: Recording, model: _Model) -> tuple[float, float] | None:
    """Return the shift of the commands (s) that the arm's model fits best to the motion, and the fit's misfit there.

    For each shift the arm's parameters are fitted anew (least squares on the regressor,
    low-passed alike with the torque at the identification's cut-off): the command of
    frame ``k`` acting over the step from frame ``k + shift``.
    """
    samples = align(recording)
    step = float(np.median(np.diff(recording.time)))
    frames = np.round(samples.time / step).astype(np.int64)
    shifts = np.arange(-_MOTION_SHIFTS[0], _MOTION_SHIFTS[1] + 1)
    commands = recording.tau
    # the steps every shift pairs with a command (a filter would spread one missing over its run)
    index = frames[:, np.newaxis] - shifts[np.newaxis, :]
    inside = (index >= 0) & (index < len(commands))
    usable = inside.all(axis=1)
    usable[usable] = np.isfinite(commands[index[usable]]).all(axis=(1, 2))
    if np.count_nonzero(usable) < _MIN_MOTION_SAMPLES:
        return None
    frames, index = frames[usable], index[usable]
    kept = replace(samples, **{key: getattr(samples, key)[usable] for key in ("time", "q", "dq", "ddq", "tau")})
    kept = replace(
        kept,
        force=None if samples.force is None else samples.force[usable],
        segment=np.cumsum(np.r_[0, (np.diff(frames) != 1) | (np.diff(samples.segment[usable]) != 0)]),
        published=None,
    )
    arm, skeleton, cutoff = model
    n = arm.num_joints
    rows = arm.regressor(kept.q, kept.dq, kept.ddq)[:, arm.active]
    per_sample = rows.reshape(n, len(kept), -1).transpose(1, 0, 2)
    if cutoff is not None:
        per_sample = lowpass(per_sample, kept.segment, cutoff, step)
    misfit = np.full(len(shifts), np.nan)
    for i in range(len(shifts)):
        torque = applied_torque(skeleton, replace(kept, tau=commands[index[:, i]]))
        if cutoff is not None:
            torque = lowpass(torque, kept.segment, cutoff, step)
        keep = np.isfinite(torque).all(axis=1) & np.isfinite(per_sample).all(axis=(1, 2))
        matrix = per_sample[keep].reshape(-1, per_sample.shape[2])
        target = torque[keep].reshape(-1)
        if target.size <= matrix.shape[1]:
            continue
        solution, *_ = np.linalg.lstsq(matrix, target, rcond=None)
        misfit[i] = math.sqrt(float(np.mean((target - matrix @ solution) ** 2)) / float(np.mean(target**2)))
    if not np.isfinite(misfit).any():
        return None
    best, least = least_shift(shifts, misfit)
    return best * step, least


def _noise(
    recordings: Sequence[Recording], assessment: checks.Assessment, delay: tuple[int, float] | None, said: _Said
) -> None:
    """Estimate the encoder ticks and the noise of the angles, velocities and effort."""
    table, found, missing = said.table, said.found, said.missing
    joints = assessment.joints
    quanta = [joint.quantum for joint in joints]
    if any(quanta):
        table["encoder_ticks"] = [_ticks(quantum) for quantum in quanta]
        found.append(f"encoder_ticks: {_listed(table['encoder_ticks'])} per revolution (the angles' least step)")
    else:
        missing.append("encoder_ticks: no joint's angles step in whole multiples of one quantum")
    beyond = [math.sqrt(max(j.position_noise**2 - j.quantum**2 / 12.0, 0.0)) for j in joints]
    beyond = [0.0 if value < _SUBTICK * j.quantum else value for value, j in zip(beyond, joints, strict=True)]
    table["position_noise"] = _rounded(beyond)
    words = " beyond the encoder's ticks (less than half a tick is not told from their steps)" if any(quanta) else ""
    found.append(f"position_noise: {_listed(table['position_noise'])} rad{words} (the angles' fourth differences)")
    if all(r.velocity_recorded for r in recordings):
        table["velocity_noise"] = _rounded([joint.velocity_noise for joint in joints])
        found.append(f"velocity_noise: {_listed(table['velocity_noise'])} rad/s (the velocities' fourth differences)")
    else:
        missing.append("velocity_noise: the driver publishes no velocity")
    effort = _effort_noise(recordings, None if delay is None else delay[0])
    if isinstance(effort, str):
        missing.append(f"effort_noise: {effort}")
    else:
        table["effort_noise"] = _rounded(effort)
        found.append(
            f"effort_noise: {_listed(table['effort_noise'])} N*m (the fourth differences of the measured effort "
            "less the command that acted over it" + _lagging(delay)
        )


def _lagging(delay: tuple[int, float] | None) -> str:
    """Return the end of the effort noise's phrase: an upper bound when the effort lags the commands between ticks."""
    if delay is None or abs(delay[1] - delay[0]) <= _BETWEEN_TICKS:
        return ")"
    return (
        f"; an upper bound: the effort follows the commands {delay[1] - delay[0]:+.2g} tick off the tick, as through "
        "a current loop's lag, which passes part of the commands' own changes into it)"
    )


def _effort_noise(recordings: Sequence[Recording], ticks: int | None) -> list[float] | str:
    """Return the effort's noise per joint, or why it cannot be told from the torque's own changes."""
    residuals = []
    for recording in recordings:
        commands, measured = recording.torque("commands"), recording.torque("measured")
        if commands is None or measured is None:
            continue
        shift = 1 + (ticks or 0)
        residuals.append(measured.values[shift:] - commands.values[: len(commands.values) - shift])
    if not residuals:
        return "no measured effort beside commands, so its noise cannot be told from the torque's own changes"
    if ticks is None:
        return "the commands' delay is not known, so the effort cannot be paired with the command it follows"
    width = residuals[0].shape[1]
    return [float(np.median([checks.noise(r[:, j]) for r in residuals])) for j in range(width)]


def _ticks(quantum: float) -> int | float:
    """Return the encoder ticks per revolution of a quantum (rad), whole when close to whole; 0 for none."""
    if quantum <= 0.0:
        return 0
    ticks = 2.0 * math.pi / quantum
    return round(ticks) if abs(ticks - round(ticks)) <= _ENCODER_WHOLE * ticks else float(f"{ticks:.6g}")


def _rounded(values: Sequence[float] | NDArray[np.float64]) -> list[float]:
    return [float(f"{value:.{_DIGITS}g}") for value in values]


def _listed(values: Sequence[float]) -> str:
    return ", ".join(f"{value:g}" for value in values)
