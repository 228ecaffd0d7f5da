# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""What the recorded runs allow, checked before any fit: torque, motion, rate, limits, and the filter they need.

Each refusal is one sentence naming the joints and the fix (:class:`IdentificationError`);
irregular steps and dropped samples are notes (:func:`irregular`). The checks read the noise from the
data themselves:

- the noise of a signal is estimated from its fourth differences (a smooth motion
  sampled fast has almost none there; white noise of standard deviation ``s`` has
  ``sqrt(70) s``), robustly (median absolute deviation);
- an encoder's quantum is the smallest step the angles take when most steps are whole
  multiples of it; it sets a floor ``quantum / sqrt(12)`` under the position noise;
- the motion's frequency is the one below which 99 % of the angles' power lies;
- a velocity is clean up to where its spectrum (Welch) falls to 100 times its noise
  floor (the median level over the upper half of the band); one clean up to half the
  Nyquist frequency needs no filter (on simulated runs: the fit stays exact and fast);
- otherwise the cut-off is three times the motion's frequency: filtering the torques
  and the regressor alike keeps ``tau = W theta`` exact, so a low cut-off costs only the
  information above it, while the noise the differentiated velocity puts into the
  regressor grows with the cut-off (as its cube, for white velocity noise);
- below that cut-off a recorded velocity's white noise ``s_v`` keeps ``2 fc / fs`` of its
  variance, while the angles' central difference turns white angle noise ``s_q`` into
  velocity noise that grows with frequency, ``s_q^2 (2 / fs) (2 pi)^2 fc^3 / 3`` of it: so
  on a continuous motion the angles give the cleaner velocity where
  ``2 pi fc s_q / sqrt(3) < s_v`` (a 16-bit encoder read at 500 Hz against a velocity
  read to 0.02 rad/s, by three orders), and that one is used.

This module does not import rclpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from skelarm_ros.identification import IdentificationError
from skelarm_ros.identification.data import CONSTANT_TOLERANCE
from skelarm_ros.identification.signals import GAP_FACTOR

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

    from skelarm_ros.identification.data import Recording, Samples

MIN_RANGE = math.radians(1.0)  # rad: the least sweep of a joint that excites it
RANGE_PER_NOISE = 100.0  # a joint must sweep this many times its position noise
VELOCITY_SNR = 3.0  # its velocity's RMS must be this many times the velocity noise
RATE_PER_MOTION = 20.0  # samples per second per Hz of the motion's frequency
MOTION_POWER = 0.99  # share of the angles' power below the motion's frequency
SATURATED_SHARE = 0.2  # share of a run a joint's torque may sit at its extreme
SATURATION_TOLERANCE = 1e-3  # of the peak torque: how close to it counts as sitting there
FILTER_FLOOR = 100.0  # the velocity's spectrum above this many times its noise floor is signal
HARMONICS = 3.0  # the cut-off, in multiples of the motion's frequency
CLEAN = 0.5  # of the Nyquist frequency: a signal clean up to here needs no filter
_D4 = math.sqrt(70.0)  # norm of the fourth-difference stencil (1, -4, 6, -4, 1)
_MAD = 1.4826  # median absolute deviation to standard deviation (Gaussian)
_WELCH_SECONDS = 4.0
_QUANTUM_SHARE = 0.9
_IRREGULAR = 1.2  # 95th over 5th percentile of the steps beyond which they are irregular


def noise(values: NDArray[np.float64]) -> float:
    """Return the standard deviation of the white noise on a sampled signal, from its fourth differences (robust).

    NaN values break the differences there and are left out.
    """
    d4 = np.diff(values, 4)
    d4 = d4[np.isfinite(d4)]
    if d4.size == 0:
        return 0.0
    return float(_MAD * np.median(np.abs(d4 - np.median(d4))) / _D4)


def quantum(values: NDArray[np.float64]) -> float:
    """Return the encoder's step (rad) when the angles move in whole multiples of one; 0 when they do not."""
    steps = np.abs(np.diff(values))
    steps = steps[np.isfinite(steps) & (steps > 0.0)]
    if steps.size < 10:
        return 0.0
    smallest = float(np.percentile(steps, 1))
    if smallest <= 0.0:
        return 0.0
    ratio = steps / smallest
    whole = np.abs(ratio - np.round(ratio)) <= 1e-3 * np.maximum(1.0, ratio)
    return smallest if np.count_nonzero(whole) >= _QUANTUM_SHARE * steps.size else 0.0


def _runs(time: NDArray[np.float64], values: NDArray[np.float64]) -> list[NDArray[np.float64]]:
    """Return the stretches of consecutive valid frames (no NaN, no gap), as arrays."""
    steps = np.diff(time)
    median = float(np.median(steps)) if steps.size else 0.0
    valid = np.isfinite(values)
    joined = valid[:-1] & valid[1:] & (steps <= GAP_FACTOR * median)
    breaks = np.flatnonzero(~joined) + 1
    return [values[run] for run in np.split(np.arange(len(values)), breaks) if run.size and valid[run].all()]


@dataclass
class JointSignal:
    """What one joint's recorded signals say, over every input.

    Attributes
    ----------
    name : str
        The joint.
    sweep : float
        The range its angle covers (rad), 0.5 to 99.5 percentile.
    position_noise : float
        Noise of its angle (rad), at least ``quantum / sqrt(12)``.
    quantum : float
        The encoder's step (rad), 0 when none shows.
    velocity_noise : float
        Noise of its velocity (rad/s; recorded, or differentiated from the angles).
    velocity_rms : float
        RMS of its velocity without the noise (rad/s).
    motion : float
        The frequency (Hz) below which 99 % of its angle's power lies.
    band : float
        The frequency (Hz) up to which its velocity's spectrum stands above its noise floor.
    """

    name: str
    sweep: float
    position_noise: float
    quantum: float
    velocity_noise: float
    velocity_rms: float
    motion: float
    band: float


@dataclass
class Assessment:
    """The joints' signals and the sampling step of the runs."""

    joints: list[JointSignal]
    step: float

    @property
    def rate(self) -> float:
        """Sampling rate (Hz)."""
        return 1.0 / self.step

    @property
    def motion(self) -> float:
        """The motion's frequency (Hz): the highest of the joints'."""
        return max(joint.motion for joint in self.joints)


def _spectrum(runs: Sequence[NDArray[np.float64]], step: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Welch power spectral density of the longest run (frequencies in Hz, density)."""
    from scipy.signal import welch

    longest = max(runs, key=len)
    segment = min(len(longest), max(16, round(_WELCH_SECONDS / step)))
    frequency, density = welch(longest - np.mean(longest), fs=1.0 / step, nperseg=segment, detrend="linear")
    return np.asarray(frequency), np.asarray(density)


def _motion_frequency(runs: Sequence[NDArray[np.float64]], step: float) -> float:
    longest = max(runs, key=len)
    if len(longest) < 8:
        return 0.0
    centred = longest - np.polyval(np.polyfit(np.arange(len(longest)), longest, 1), np.arange(len(longest)))
    power = np.abs(np.fft.rfft(centred * np.hanning(len(centred)))) ** 2
    frequency = np.fft.rfftfreq(len(centred), step)
    total = np.cumsum(power[1:])
    if total.size == 0 or total[-1] <= 0.0:
        return 0.0
    return float(frequency[1:][int(np.searchsorted(total, MOTION_POWER * total[-1]))])


def _band(runs: Sequence[NDArray[np.float64]], step: float) -> float:
    """Up to which frequency the velocity's spectrum stands FILTER_FLOOR above its noise floor."""
    longest = max(runs, key=len)
    if len(longest) < 16:
        return 0.5 / step
    frequency, density = _spectrum(runs, step)
    upper = frequency >= 0.25 / step
    floor = float(np.median(density[upper])) if np.any(upper) else 0.0
    peak = float(np.max(density))
    if peak <= 0.0 or floor <= 1e-12 * peak:
        return 0.5 / step  # clean: no noise floor to speak of
    above = np.flatnonzero(density > FILTER_FLOOR * floor)
    return float(frequency[above[-1]]) if above.size else float(frequency[1])


def assess(recordings: Sequence[Recording], step: float) -> Assessment:
    """Estimate each joint's sweep, noise, velocity, motion frequency and clean band over every input.

    Parameters
    ----------
    recordings : Sequence[Recording]
        The inputs, in the arm's joint order.
    step : float
        The sampling step (s).

    Returns
    -------
    Assessment
        Per joint.
    """
    joints = []
    for j, name in enumerate(recordings[0].joints):
        angles = [r.q[:, j] for r in recordings]
        velocities = [r.dq[:, j] for r in recordings]
        angle_runs = [run for r in recordings for run in _runs(r.time, r.q[:, j])]
        velocity_runs = [run for r in recordings for run in _runs(r.time, r.dq[:, j])]
        everything = np.concatenate(angles)
        everything = everything[np.isfinite(everything)]
        sweep = float(np.ptp(np.percentile(everything, [0.5, 99.5]))) if everything.size else 0.0
        step_q = max((quantum(run) for run in angle_runs), default=0.0)
        position_noise = max(
            float(np.median([noise(run) for run in angle_runs])) if angle_runs else 0.0, step_q / 12**0.5
        )
        velocity_noise = float(np.median([noise(run) for run in velocity_runs])) if velocity_runs else 0.0
        speeds = np.concatenate(velocities)
        speeds = speeds[np.isfinite(speeds)]
        power = float(np.mean(speeds**2)) if speeds.size else 0.0
        joints.append(
            JointSignal(
                name=name,
                sweep=sweep,
                position_noise=position_noise,
                quantum=step_q,
                velocity_noise=velocity_noise,
                velocity_rms=math.sqrt(max(power - velocity_noise**2, 0.0)),
                motion=_motion_frequency(angle_runs, step) if angle_runs else 0.0,
                band=_band(velocity_runs, step) if velocity_runs else 0.5 / step,
            )
        )
    return Assessment(joints, step)


# -- refusals --------------------------------------------------------------------------------------------


def check_torque(recordings: Sequence[Recording]) -> None:
    """Refuse a torque that is all zero or never changes on some joint (a placeholder, not a torque).

    Raises
    ------
    IdentificationError
        Naming the joints and the fix.
    """
    for recording in recordings:
        zero, constant = [], []
        for j, name in enumerate(recording.joints):
            column = recording.tau[:, j][np.isfinite(recording.tau[:, j])]
            if column.size == 0:
                continue  # no valid torque at all: too few samples, said later with the count
            if not np.any(column):
                zero.append(name)
            elif float(np.ptp(column)) <= CONSTANT_TOLERANCE * max(1.0, float(np.max(np.abs(column)))):
                constant.append(f"{name} ({float(column[0]):.6g} N*m)")
        fix = (
            "identify needs the torque that drove the arm: record the effort commands (joint_commands or "
            "effort_controller/commands) beside the joint states, or use a driver that publishes measured "
            "or commanded torque in their effort"
        )
        if zero:
            msg = (
                f"input '{recording.source}' has a torque of zero throughout on joint {', '.join(zero)} "
                f"({recording.effort}; many servo drivers publish such a placeholder); {fix}"
            )
            raise IdentificationError(msg)
        if constant:
            msg = (
                f"input '{recording.source}' has a torque that never changes on joint {', '.join(constant)} "
                f"({recording.effort}: a placeholder, not a torque); {fix}"
            )
            raise IdentificationError(msg)


def check_motion(assessment: Assessment) -> None:
    """Refuse joints that do not move enough to excite them, judged against their noise.

    Raises
    ------
    IdentificationError
        Naming each such joint with its sweep and how it compares with its noise.
    """
    still = []
    for joint in assessment.joints:
        needed = max(MIN_RANGE, RANGE_PER_NOISE * joint.position_noise)
        slow = joint.velocity_rms < VELOCITY_SNR * joint.velocity_noise
        if joint.sweep < needed or slow:
            ratio = joint.sweep / joint.position_noise if joint.position_noise > 0.0 else math.inf
            speed = joint.velocity_rms / joint.velocity_noise if joint.velocity_noise > 0.0 else math.inf
            still.append(
                f"{joint.name} sweeps {math.degrees(joint.sweep):.3g} deg ({ratio:.3g} x its position noise, "
                f"velocity {speed:.2g} x its noise)"
            )
    if still:
        msg = (
            f"the runs do not move joint {'; '.join(still)}: too little to excite it (each joint must sweep at "
            f"least {math.degrees(MIN_RANGE):g} deg and {RANGE_PER_NOISE:g} x its position noise, with a velocity "
            f"{VELOCITY_SNR:g} x its noise); record a run that moves every joint, e.g. the excitation controller "
            "(docs/identification.md, 'Your arm')"
        )
        raise IdentificationError(msg)


def check_rate(assessment: Assessment) -> None:
    """Refuse runs sampled too slowly to differentiate their motion.

    Raises
    ------
    IdentificationError
        Naming the rate, the motion's frequency and the rate needed.
    """
    needed = RATE_PER_MOTION * assessment.motion
    if assessment.rate < needed:
        fastest = max(assessment.joints, key=lambda joint: joint.motion)
        msg = (
            f"the joint states come at {assessment.rate:.4g} Hz, too slowly to differentiate a motion up to "
            f"{assessment.motion:.3g} Hz ({fastest.name}; {100 * MOTION_POWER:g} % of its power below it); "
            f"record at {needed:.3g} Hz or more (the driver's state publish rate), or excite more slowly"
        )
        raise IdentificationError(msg)


def check_saturation(recordings: Sequence[Recording]) -> None:
    """Refuse a torque that sits at one extreme value for a large share of a run (an effort limit).

    Raises
    ------
    IdentificationError
        Naming the joints, the value and the share.
    """
    for recording in recordings:
        held = []
        for j, name in enumerate(recording.joints):
            column = recording.tau[:, j][np.isfinite(recording.tau[:, j])]
            if column.size < 10:
                continue
            peak = float(np.max(np.abs(column)))
            tolerance = SATURATION_TOLERANCE * peak
            share = (
                max(
                    np.count_nonzero(column >= np.max(column) - tolerance),
                    np.count_nonzero(column <= np.min(column) + tolerance),
                )
                / column.size
            )
            if share > SATURATED_SHARE and peak > 0.0:
                held.append(f"{name} ({peak:.4g} N*m for {100 * share:.0f} % of it)")
        if held:
            msg = (
                f"input '{recording.source}' holds the torque at an effort limit on joint {', '.join(held)}: "
                "there the arm is not driven as planned and a driver's own limit makes the applied torque "
                "differ from the recorded one; lower the excitation's amplitudes, or its effort_limits below "
                "the driver's"
            )
            raise IdentificationError(msg)


def irregular(recordings: Sequence[Recording], samples: Samples) -> list[str]:
    """Return the notes on irregular steps, dropped samples and gaps (the fit goes on)."""
    notes = []
    for recording in recordings:
        steps = np.diff(recording.time)
        steps = steps[steps > 0.0]
        if steps.size > 10:
            low, high = np.percentile(steps, [5, 95])
            if high > _IRREGULAR * low:
                notes.append(
                    f"input '{recording.source}': its steps vary from {1e3 * low:.3g} to {1e3 * high:.3g} ms "
                    f"(5th to 95th percentile, median {1e3 * float(np.median(steps)):.3g} ms); each step's own "
                    "length is used, but a jittering clock blurs the accelerations: stamp the states where they "
                    "are measured (header stamps; --clock header)"
                )
    if samples.dropped or samples.gaps:
        notes.append(
            f"{samples.dropped} steps dropped (a NaN or masked value) and {samples.gaps} at gaps in the "
            "recording (frames lost); they are left out, not filled in"
        )
    return notes


def cleaner_from_angles(assessment: Assessment, cutoff: float | None) -> list[bool]:
    """Per joint, whether the angles' central difference is a cleaner velocity than the recorded one below ``cutoff``.

    Parameters
    ----------
    assessment : Assessment
        The signals of runs that carry recorded velocities.
    cutoff : float | None
        The filter's cut-off (Hz); ``None`` (no filter: the velocity is clean) keeps every recorded velocity.

    Returns
    -------
    list[bool]
        ``2 pi cutoff s_q / sqrt(3) < s_v`` per joint (``s_q``, ``s_v`` the angle and velocity noise).
    """
    if cutoff is None:
        return [False] * len(assessment.joints)
    gain = 2.0 * math.pi * cutoff / math.sqrt(3.0)
    return [gain * joint.position_noise < joint.velocity_noise for joint in assessment.joints]


def choose_cutoff(assessment: Assessment) -> tuple[float | None, str]:
    """Return the filter's cut-off the runs need, and why, in words.

    Returns
    -------
    tuple[float | None, str]
        The cut-off (Hz), ``None`` for no filter, and the reason for the report.
    """
    nyquist = 0.5 * assessment.rate
    band = max(joint.band for joint in assessment.joints)
    noisiest = max(assessment.joints, key=lambda joint: joint.velocity_noise / max(joint.velocity_rms, 1e-300))
    noise_words = f"velocity noise {noisiest.velocity_noise:.2g} rad/s on {noisiest.name}"
    if noisiest.quantum:
        noise_words += f", encoder step {noisiest.quantum:.3g} rad"
    if band >= CLEAN * nyquist:
        return None, f"none: the velocity is clean up to {band:.3g} Hz ({noise_words}); --filter HZ to set one"
    cutoff = min(HARMONICS * assessment.motion, CLEAN * nyquist)
    return cutoff, (
        f"zero-phase 4th-order Butterworth at {cutoff:.3g} Hz on torques and regressor alike: "
        f"{HARMONICS:g} x the motion's {assessment.motion:.3g} Hz, as the velocity is noisy above {band:.3g} Hz "
        f"({noise_words}); --filter HZ to choose another"
    )
