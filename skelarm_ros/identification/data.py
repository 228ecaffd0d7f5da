# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Recorded runs as identification samples: conventions applied, masked samples dropped, velocity differentiated.

A bag is converted with :func:`skelarm_ros.bags.bag_to_log.bag_to_log` to a temporary log
and read back with :meth:`skelarm.StateLog.load`, so bags and logs go through one
path and a bag is read with exactly ``bag_to_log``'s conventions (docs/bags.md):
joint names and order, the clock, the valid-sample masks, and which torque the effort
is and over which step it acted (``[extra].effort.timing``):

- ``applied_from_frame`` (commands; every skelarm log): the torque at frame ``k``
  acted over the step from ``t_k`` to ``t_{k+1}``;
- ``applied_until_frame`` (a joint state's effort): the torque at frame ``k`` acted
  over the step that ended at ``t_k``.

Frames missing from a recording (a step longer than 1.5 median steps) break the run:
no acceleration is taken across the gap.

The acceleration of sample ``k`` is the forward difference quotient
``(dq_{k+1} - dq_k) / (t_{k+1} - t_k)`` and its torque the one that acted over that
step. The simulator integrates with semi-implicit Euler (``dq += ddq dt``), so on
simulated data this quotient is exactly the acceleration the dynamics produced. When
the steps are uniform to within the stamps' rounding (``|h_k - h| <= 1e-6 h + 2 ns``)
the mean step ``h = (t_last - t_first) / (N - 1)`` is used, so nanosecond stamps
cost no accuracy.

A sample is used only where its angle, velocity, next velocity and torque (and the
tip force, when recorded) are valid; the rest are dropped and counted, never filled in.

This module does not import rclpy.
"""

from __future__ import annotations

import math
import tempfile
import tomllib
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import skelarm

from skelarm_ros.identification import IdentificationError
from skelarm_ros.interface import default_joint_names

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

FROM_FRAME = "applied_from_frame"
UNTIL_FRAME = "applied_until_frame"
TIMINGS = (FROM_FRAME, UNTIL_FRAME)
LOG_SUFFIX = ".npz"
_UNIFORM_RTOL = 1e-6  # relative spread of the steps accepted as a uniform step
_UNIFORM_ATOL = 2e-9  # s: two nanosecond-stamp roundings
_MIN_FRAMES = 3
GAP_FACTOR = 1.5  # a step this many times the median one is frames missing


@dataclass
class Recording:
    """One input as read, in its own joint order.

    Attributes
    ----------
    source : Path
        The bag or log it came from.
    joints : list[str]
        Joint names, one per column.
    time : NDArray[np.float64]
        Frame times (s), shape ``(N,)``.
    q, dq, tau : NDArray[np.float64]
        Joint angles (rad), velocities (rad/s) and torques (N*m), shape ``(N, n)``;
        NaN where a value is not valid.
    force : NDArray[np.float64] | None
        External tip force ``(fx, fy)`` (N) held over the step from each frame, shape
        ``(N, 2)``; ``None`` when none was recorded.
    timing : str
        Which step the torque at a frame acted over (:data:`TIMINGS`).
    effort : str
        Where the torque came from, for the report.
    skeleton : skelarm.Skeleton | None
        The arm embedded in the log (a scenario or ``robot_description``), if any.
    """

    source: Path
    joints: list[str]
    time: NDArray[np.float64]
    q: NDArray[np.float64]
    dq: NDArray[np.float64]
    tau: NDArray[np.float64]
    force: NDArray[np.float64] | None
    timing: str
    effort: str
    skeleton: skelarm.Skeleton | None

    def reordered(self, joints: Sequence[str]) -> Recording:
        """Return the recording with its columns in the order of ``joints`` (matched by name).

        Raises
        ------
        IdentificationError
            If the joint names are not the same set.
        """
        if list(joints) == self.joints:
            return self
        if sorted(joints) != sorted(self.joints):
            msg = (
                f"input '{self.source}' has joints {self.joints} but the first input has {list(joints)}; "
                "identify runs of one arm together"
            )
            raise IdentificationError(msg)
        order = [self.joints.index(name) for name in joints]
        return Recording(
            self.source,
            list(joints),
            self.time,
            self.q[:, order],
            self.dq[:, order],
            self.tau[:, order],
            self.force,
            self.timing,
            self.effort,
            self.skeleton,
        )


@dataclass
class Samples:
    """Identification samples: one row per step with a valid state, acceleration and torque.

    Attributes
    ----------
    time : NDArray[np.float64]
        Time of each sample (s since its input's first frame), shape ``(S,)``.
    q, dq, ddq, tau : NDArray[np.float64]
        Angle (rad), velocity (rad/s), acceleration (rad/s^2) and the torque that
        acted over the step (N*m), shape ``(S, n)``.
    force : NDArray[np.float64] | None
        Tip force over the step (N), shape ``(S, 2)``, or ``None``.
    segment : NDArray[np.int64]
        Index of the run of consecutive steps each sample belongs to, shape ``(S,)``
        (a dropped sample or another input starts a new one; filters run per segment).
    step : float
        The (mean) step between frames (s).
    frames : int
        Frames read.
    dropped : int
        Steps not used because a value was NaN or masked.
    gaps : int
        Steps not used because frames are missing after them (a step over 1.5 median steps).
    uniform : bool
        Whether every step equals ``step`` to within the stamps' rounding.
    """

    time: NDArray[np.float64]
    q: NDArray[np.float64]
    dq: NDArray[np.float64]
    ddq: NDArray[np.float64]
    tau: NDArray[np.float64]
    force: NDArray[np.float64] | None
    segment: NDArray[np.int64]
    step: float
    frames: int
    dropped: int
    gaps: int
    uniform: bool

    def __len__(self) -> int:
        """Return the number of samples."""
        return int(self.q.shape[0])


# -- reading ---------------------------------------------------------------------------------------------


def _load_log(path: Path, shown: Path) -> skelarm.StateLog:
    try:
        return skelarm.StateLog.load(path)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, tomllib.TOMLDecodeError) as error:
        msg = (
            f"input '{shown}' is not a readable skelarm log ({type(error).__name__}: {error}); "
            "pass a .sklog.npz written by skelarm or bag_to_log, or a bag"
        )
        raise IdentificationError(msg) from None


def _bag_log(path: Path, joint_topic: str | None, notes: list[str]) -> skelarm.StateLog:
    """Convert a bag with ``bag_to_log`` to a temporary log and read it back."""
    from skelarm_ros.bags.bag_to_log import bag_to_log

    with tempfile.TemporaryDirectory(prefix="skelarm-identify-") as folder:
        output = Path(folder) / "run.sklog.npz"
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                bag_to_log(path, output, joint_topic=joint_topic)
        except ValueError as error:  # bag_to_log's errors are ValueErrors with one sentence each
            msg = f"bag '{path}' cannot be read: {error}"
            raise IdentificationError(msg) from None
        notes.extend(f"{path}: {warning.message}" for warning in caught)
        return _load_log(output, path)


def _channel(log: skelarm.StateLog, name: str, width: int | None = None) -> NDArray[np.float64] | None:
    """Return a channel as a float matrix, NaN where its ``valid_<name>`` mask is false; ``None`` if absent."""
    if name not in log.channel_names:
        return None
    values = np.array(log.channel(name), dtype=np.float64)
    values = values.reshape(len(values), -1)
    if width is not None and values.shape[1] != width:
        return None
    mask_name = f"valid_{name}"
    if mask_name in log.channel_names:
        mask = np.asarray(log.channel(mask_name)).reshape(values.shape).astype(bool)
        values[~mask] = np.nan
    return values


def _joint_names(log: skelarm.StateLog, width: int) -> list[str]:
    names = log.extra.get("joint_names")
    if not (isinstance(names, list) and len(names) == width):
        names = log.channel_meta.get("q", {}).get("columns")
    if isinstance(names, list) and len(names) == width and len(set(names)) == width:
        return [str(name) for name in names]
    return default_joint_names(width)


def _timing(log: skelarm.StateLog, shown: Path) -> tuple[str, str]:
    effort = log.extra.get("effort")
    if not isinstance(effort, dict) or "timing" not in effort:
        return FROM_FRAME, "logged torque (skelarm's convention: applied from its frame)"
    timing = str(effort["timing"])
    if timing not in TIMINGS:
        msg = (
            f"input '{shown}' gives effort timing '{timing}', which identify does not know; "
            f"it must be one of {list(TIMINGS)} (see docs/bags.md)"
        )
        raise IdentificationError(msg)
    source = str(effort.get("source", "effort"))
    topic = effort.get("topic")
    where = f"{source} on {topic}" if topic else source
    return timing, f"{where} ({timing.replace('_', ' ')})"


def _required(values: NDArray[np.float64] | None, missing: str) -> NDArray[np.float64]:
    """Return a channel that has at least one finite value, else raise ``missing``'s sentence."""
    if values is None or not np.isfinite(values).any():
        raise IdentificationError(missing)
    return values


def read_recording(path: str | Path, *, joint_topic: str | None = None) -> Recording:
    """Read one bag or ``.sklog.npz`` log.

    Parameters
    ----------
    path : str | Path
        A bag (rosbag2 folder, ``.db3``, ``.mcap``, ROS 1 ``.bag``) or a ``.sklog.npz`` log.
    joint_topic : str | None, optional
        The JointState topic of a bag (``bag_to_log --joint-topic``).

    Returns
    -------
    Recording
        The arrays with their conventions.

    Raises
    ------
    IdentificationError
        If the input is missing or unreadable, or has no joint angles, velocities or torque.
    """
    source = Path(path)
    notes: list[str] = []
    if not source.exists():
        msg = f"input '{source}' does not exist; pass a bag (folder, .db3, .mcap, .bag) or a .sklog.npz log"
        raise IdentificationError(msg)
    is_log = source.is_file() and source.suffix == LOG_SUFFIX
    log = _load_log(source, source) if is_log else _bag_log(source, joint_topic, notes)
    q = _channel(log, "q")
    if q is None or len(q) == 0:
        msg = f"input '{source}' has no joint angles (channel 'q'); record joint states"
        raise IdentificationError(msg)
    width = q.shape[1]
    dq = _required(
        _channel(log, "dq", width),
        f"input '{source}' has no joint velocities; identify differentiates the velocity, "
        "so record joint states with their velocity",
    )
    tau = _required(
        _channel(log, "tau", width),
        f"input '{source}' has no joint torque (no effort in its joint states and no effort commands); "
        "record the commands (joint_commands or effort_controller/commands) or a driver's effort",
    )
    timing, effort = _timing(log, source)
    force = _channel(log, "ext_force", 2)
    if force is not None and not np.any(force[np.isfinite(force)]):
        force = None  # recorded but never pushed: nothing to add
    try:
        skeleton: skelarm.Skeleton | None = log.build_skeleton()
    except (ValueError, TypeError, KeyError):
        skeleton = None
    recording = Recording(
        source=source,
        joints=_joint_names(log, width),
        time=np.asarray(log.times, dtype=np.float64),
        q=q,
        dq=dq,
        tau=tau,
        force=force,
        timing=timing,
        effort=effort,
        skeleton=skeleton,
    )
    for note in notes:
        warnings.warn(note, stacklevel=2)
    return recording


# -- aligning --------------------------------------------------------------------------------------------


def steps_of(time: NDArray[np.float64], source: Path) -> tuple[NDArray[np.float64], NDArray[np.bool_], float, bool]:
    """Return the step after each frame (s), where frames are missing, the mean step, and whether it is uniform.

    A step longer than 1.5 times the median step is a gap (messages lost in the
    recording): no acceleration is taken across it.

    Raises
    ------
    IdentificationError
        If a time is not finite or the times do not increase.
    """
    if len(time) < _MIN_FRAMES:
        msg = f"input '{source}' has {len(time)} frames; identification needs a run of many steps"
        raise IdentificationError(msg)
    steps = np.diff(time)
    bad = np.flatnonzero(~(steps > 0.0))  # also NaN
    if bad.size:
        k = int(bad[0])
        msg = (
            f"input '{source}': times do not increase at frame {k + 1} "
            f"(t={float(time[k + 1]):.9g} s after {float(time[k]):.9g} s); "
            "identify needs frames in time order (for a bag stamped out of order, convert it with "
            "bag_to_log --clock log and identify the log)"
        )
        raise IdentificationError(msg)
    gap = steps > GAP_FACTOR * float(np.median(steps))
    regular = steps[~gap]
    mean = float(np.sum(regular)) / len(regular)
    uniform = bool(np.max(np.abs(regular - mean)) <= _UNIFORM_RTOL * mean + _UNIFORM_ATOL)
    return (np.where(gap, steps, mean) if uniform else steps), gap, mean, uniform


def align(recording: Recording) -> Samples:
    """Pair each step's state and acceleration with the torque that acted over it.

    Parameters
    ----------
    recording : Recording
        One input.

    Returns
    -------
    Samples
        One row per step whose values are all valid and whose next frame follows without a gap.

    Raises
    ------
    IdentificationError
        If the times do not increase or there are too few frames.
    """
    steps, gap, mean, uniform = steps_of(recording.time, recording.source)
    q, dq = recording.q[:-1], recording.dq[:-1]
    ddq = (recording.dq[1:] - dq) / steps[:, np.newaxis]
    tau = recording.tau[:-1] if recording.timing == FROM_FRAME else recording.tau[1:]
    columns = [q, dq, ddq, tau]
    force = recording.force[:-1] if recording.force is not None else None
    if force is not None:
        columns.append(force)
    finite = np.all(np.isfinite(np.hstack(columns)), axis=1)
    valid = finite & ~gap
    segment = np.cumsum(~valid)[valid].astype(np.int64)
    return Samples(
        time=(recording.time[:-1] - recording.time[0])[valid],
        q=q[valid],
        dq=dq[valid],
        ddq=ddq[valid],
        tau=tau[valid],
        force=None if force is None else force[valid],
        segment=segment,
        step=mean,
        frames=len(recording.time),
        dropped=int(np.count_nonzero(~finite)),
        gaps=int(np.count_nonzero(gap)),
        uniform=uniform,
    )


def merge(parts: Sequence[Samples]) -> Samples:
    """Join the samples of several inputs (each input's segments stay apart)."""
    if len(parts) == 1:
        return parts[0]
    offset = 0
    segments = []
    for part in parts:
        segments.append(part.segment + offset)
        offset = int(segments[-1].max()) + 1 if len(part) else offset
    forces = [part.force for part in parts]
    width = parts[0].q.shape[1]
    force = None
    if any(item is not None for item in forces):
        force = np.vstack([np.zeros((len(p), 2)) if f is None else f for p, f in zip(parts, forces, strict=True)])
    steps = [part.step for part in parts]
    uniform = all(part.uniform for part in parts) and max(steps) - min(steps) <= _UNIFORM_RTOL * max(steps)
    return Samples(
        time=np.concatenate([part.time for part in parts]),
        q=np.vstack([part.q for part in parts]).reshape(-1, width),
        dq=np.vstack([part.dq for part in parts]).reshape(-1, width),
        ddq=np.vstack([part.ddq for part in parts]).reshape(-1, width),
        tau=np.vstack([part.tau for part in parts]).reshape(-1, width),
        force=force,
        segment=np.concatenate(segments),
        step=float(np.mean(steps)),
        frames=sum(part.frames for part in parts),
        dropped=sum(part.dropped for part in parts),
        gaps=sum(part.gaps for part in parts),
        uniform=uniform,
    )


# -- filtering -------------------------------------------------------------------------------------------

FILTER_ORDER = 4


def lowpass(values: NDArray[np.float64], segment: NDArray[np.int64], cutoff: float, step: float) -> NDArray[Any]:
    """Zero-phase Butterworth low-pass of ``values`` along axis 0, one segment at a time.

    Parameters
    ----------
    values : NDArray[np.float64]
        Samples along axis 0 (any trailing shape).
    segment : NDArray[np.int64]
        Segment index per sample; consecutive samples of one segment are filtered together.
    cutoff : float
        Cut-off frequency (Hz), below the Nyquist frequency ``0.5 / step``.
    step : float
        Sampling step (s).

    Returns
    -------
    NDArray
        The filtered values (same shape); samples of segments too short to filter are NaN.
    """
    from scipy.signal import butter, sosfiltfilt

    sos = butter(FILTER_ORDER, cutoff, btype="low", fs=1.0 / step, output="sos")
    out = np.full(values.shape, np.nan)
    starts = np.flatnonzero(np.diff(segment, prepend=segment[:1] - 1))
    ends = [*starts[1:].tolist(), len(segment)]
    pad = 3 * (2 * len(sos) + 1)  # sosfiltfilt's default padding
    for start, end in zip(starts.tolist(), ends, strict=True):
        if end - start > pad:
            out[start:end] = sosfiltfilt(sos, values[start:end], axis=0)
    return out


def check_cutoff(cutoff: float, step: float) -> None:
    """Check a filter cut-off against the sampling step.

    Raises
    ------
    IdentificationError
        If the cut-off is not a positive frequency below the Nyquist frequency.
    """
    nyquist = 0.5 / step
    if not (math.isfinite(cutoff) and 0.0 < cutoff < nyquist):
        msg = (
            f"--filter {cutoff} Hz is not a cut-off below the Nyquist frequency {nyquist:.6g} Hz of these runs "
            f"(step {step:.6g} s); give a positive frequency under it, or leave the filter out"
        )
        raise IdentificationError(msg)
