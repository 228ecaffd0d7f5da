# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Joint angles to compare: a hardware run beside its prediction (``compare --angles``).

A prediction (a lockstep ``hardware:=twin`` run, docs/predict.md) and the hardware run it
predicts start their time lines where control starts: at the first state a command answers
(its stamp, :attr:`Angles.origin`; a side without commands starts at its first state). The
two are set on that common origin, the prediction's angles interpolated at the hardware's
states; the shift of the hardware's time that matches the two best (RMS over every joint,
searched within ``max_shift``) is reported beside the per-joint RMS and largest difference,
at that shift and at none (:func:`compare_angles`).

Either side is a bag (its joint states: ``joint_states``, or the one JointState topic that
is no controller channel) or a ``.sklog.npz`` log (its ``q``). Differences are hardware minus
prediction, in rad.

This module does not import rclpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from skelarm_ros.bags.efforts import (
    CompareError,
    JointDifference,
    common_joints,
    joint_differences,
    load_efforts,
    named_rows,
    state_topics,
)
from skelarm_ros.bags.logfile import LogFileError, read_log
from skelarm_ros.bags.reader import BagError, open_bag
from skelarm_ros.interface import NANOSECONDS, default_joint_names

if TYPE_CHECKING:
    from numpy.typing import NDArray

MAX_SHIFT = 0.25
"""Seconds of time shift searched for the best match, each way, by default."""
SHIFT_STEPS = 4
"""Shifts searched per period of the hardware's states."""


@dataclass
class Angles:
    """One side's joint angles, by stamp.

    Attributes
    ----------
    path : Path
        The bag or log read.
    source : str
        Where in it they came from (a topic, or ``q``).
    joints : list[str]
        The column names.
    stamps : NDArray[np.int64]
        ``(n,)`` the states' stamps (ns), increasing.
    values : NDArray[np.float64]
        ``(n, len(joints))`` joint angles (rad).
    origin : int
        The stamp (ns) control starts at: of the first state a command answers, else of the first state.
    commanded : bool
        Whether :attr:`origin` is a command's (else the first state's).
    """

    path: Path
    source: str
    joints: list[str]
    stamps: NDArray[np.int64]
    values: NDArray[np.float64]
    origin: int
    commanded: bool

    @property
    def seconds(self) -> NDArray[np.float64]:
        """The states' times (s) from :attr:`origin`."""
        return np.asarray((self.stamps - self.origin) / NANOSECONDS, dtype=np.float64)

    def text(self) -> str:
        """Say where the angles came from and where control starts."""
        start = "the state its first command answers" if self.commanded else "its first state (no commands)"
        return f"{self.path} ({self.source}, {len(self.stamps)} states; time from {start})"


def _origin(path: Path, stamps: NDArray[np.int64]) -> tuple[int, bool]:
    """Return the stamp control starts at, and whether a command says so (its commands' first answered state)."""
    try:
        efforts = load_efforts(path, commands_only=True)
    except CompareError:  # no commands: its first state
        return int(stamps[0]), False
    answered = efforts.stamps[(efforts.stamps >= stamps[0]) & (efforts.stamps <= stamps[-1])]
    return (int(answered[0]), True) if len(answered) else (int(stamps[0]), False)


def load_angles(path: str | Path, topic: str | None = None) -> Angles:
    """Read one side's joint angles from a bag's joint states or a log's ``q``, and where its control starts.

    Parameters
    ----------
    path : str | Path
        A bag or a ``.sklog.npz`` log.
    topic : str | None, optional
        The bag's joint-state topic; ``None`` finds it (``joint_states``, or its only one).

    Raises
    ------
    CompareError
        If the file cannot be read or holds no joint angles (one sentence).
    """
    file = Path(path)
    if file.name.endswith(".npz"):
        try:
            log = read_log(file)
        except LogFileError as error:
            raise CompareError(str(error)) from None
        if "q" not in log.channel_names:
            msg = f"log '{file}' has no 'q' channel (joint angles), so no angles to compare"
            raise CompareError(msg)
        times = np.asarray(log.times, dtype=np.float64)
        values = np.asarray(log.channel("q"), dtype=np.float64).reshape(len(times), -1)
        stamps = int(log.extra.get("time_origin_ns", 0)) + np.round(times * NANOSECONDS).astype(np.int64)
        names = [str(name) for name in log.extra.get("joint_names", [])] or default_joint_names(values.shape[1])
        source, joints = "q", names[: values.shape[1]]
    else:
        try:
            with open_bag(file) as bag:
                source = topic or _state_topic(bag.path, state_topics(bag))
                if source not in bag.topics and "/" + source in bag.topics:
                    source = "/" + source
                if source not in bag.topics:
                    msg = f"bag '{file}' has no topic '{source}'; it has {list(bag.topics)}"
                    raise CompareError(msg)
                joints, stamps, values = named_rows(bag, source, (), "position")
        except BagError as error:
            raise CompareError(str(error)) from None
    keep = np.isfinite(values).all(axis=1) if values.size else np.zeros(0, bool)
    if not keep.any():
        msg = f"'{file}' holds no joint angles on {source}"
        raise CompareError(msg)
    stamps, values = stamps[keep], values[keep]
    origin, commanded = _origin(file, stamps)
    return Angles(file, source, joints, stamps, values, origin, commanded)


def _state_topic(path: Path, candidates: list[str]) -> str:
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        msg = f"bag '{path}' has no joint states, so no joint angles to compare"
        raise CompareError(msg)
    msg = f"bag '{path}' has several joint-state topics ({', '.join(candidates)}); choose one with --recorded-topic"
    raise CompareError(msg)


@dataclass
class AngleComparison:
    """A hardware run's angles beside its prediction's, on their common time line.

    Attributes
    ----------
    joints : list[JointDifference]
        Per joint, hardware minus prediction at :attr:`shift` (rad).
    unshifted : list[JointDifference]
        The same with no shift.
    shift : float
        The shift (s) of the hardware's time that matches the prediction best: positive when
        the hardware runs behind the prediction (its angles come that much later).
    seconds : NDArray[np.float64]
        ``(n,)`` the hardware's compared states' times from its origin (s).
    difference : NDArray[np.float64]
        ``(n, joints)`` hardware minus prediction at :attr:`shift` (rad).
    span : float
        Seconds of the common time line compared.
    max_shift : float
        The largest shift searched (s).
    """

    joints: list[JointDifference]
    unshifted: list[JointDifference]
    shift: float
    seconds: NDArray[np.float64]
    difference: NDArray[np.float64]
    span: float
    max_shift: float

    @property
    def rms(self) -> float:
        """The RMS difference over every joint at :attr:`shift` (rad)."""
        return float(np.sqrt(np.nanmean(np.square(self.difference))))

    def text(self) -> str:
        """Return the table the tool prints (mrad)."""
        edge = " (the edge of the search: widen --max-lag)" if abs(self.shift) >= self.max_shift - 1e-12 else ""
        lines = [
            f"compared {len(self.seconds)} hardware states over {self.span:.3f} s of the prediction, from where "
            f"control starts; the best time shift is {self.shift * 1e3:+.1f} ms (the hardware "
            f"{'behind' if self.shift >= 0 else 'ahead of'} the prediction){edge}, RMS {self.rms * 1e3:.3f} mrad "
            "over all joints",
            f"{'joint':<12} {'RMS mrad':>10} {'max mrad':>10} {'at (s)':>8} {'RMS unshifted':>14}",
        ]
        lines += [
            f"{j.name:<12} {j.rms * 1e3:>10.3f} {j.max * 1e3:>10.3f} {j.at:>8.3f} {u.rms * 1e3:>14.3f}"
            for j, u in zip(self.joints, self.unshifted, strict=True)
        ]
        return "\n".join(lines)


def _columns(hardware: Angles, prediction: Angles) -> tuple[list[str], list[int], list[int]]:
    none = (
        f"the hardware run's joint states name {hardware.joints} and the prediction's {prediction.joints}: none "
        "in common; run the prediction with the arm's joint names (joint_names:=)"
    )
    joints, columns_p, columns_h = common_joints(prediction.joints, hardware.joints, none)
    return joints, columns_h, columns_p


def _difference(
    seconds: NDArray[np.float64],
    hardware: NDArray[np.float64],
    times: NDArray[np.float64],
    predicted: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Hardware minus the prediction interpolated at ``seconds`` (rows outside the prediction's span: NaN)."""
    inside = (seconds >= times[0]) & (seconds <= times[-1])
    out = np.full(hardware.shape, np.nan)
    for k in range(hardware.shape[1]):
        out[inside, k] = hardware[inside, k] - np.interp(seconds[inside], times, predicted[:, k])
    return out


def compare_angles(hardware: Angles, prediction: Angles, *, max_shift: float = MAX_SHIFT) -> AngleComparison:
    """Set the hardware run's angles beside the prediction's on their common origin, at the best time shift.

    The prediction's angles are interpolated (linearly) at the hardware's states' times
    less the shift; the hardware's states before its origin or beyond the prediction's end
    are left out. Shifts from ``-max_shift`` to ``max_shift`` are searched in steps of a
    quarter of the hardware's period (:data:`SHIFT_STEPS`).

    Raises
    ------
    CompareError
        If the sides share no joint.
    """
    joints, columns_h, columns_p = _columns(hardware, prediction)
    seconds, measured = hardware.seconds, hardware.values[:, columns_h]
    times, predicted = prediction.seconds, prediction.values[:, columns_p]
    keep = seconds >= 0.0
    seconds, measured = seconds[keep], measured[keep]
    period = float(np.median(np.diff(seconds))) if len(seconds) > 1 else 0.0
    step = period / SHIFT_STEPS
    count = math.floor(max_shift / step + 1e-9) if step > 0.0 else 0
    shifts = np.arange(-count, count + 1) * step

    def rms(shift: float) -> float:
        rows = _difference(seconds - shift, measured, times, predicted)
        rows = rows[np.isfinite(rows).all(axis=1)]
        return float(np.sqrt(np.mean(np.square(rows)))) if len(rows) else math.inf

    scores = [rms(float(shift)) for shift in shifts]  # at no shift both have their origin's state: finite
    best = float(shifts[int(np.argmin(scores))])
    difference = _difference(seconds - best, measured, times, predicted)
    straight = _difference(seconds, measured, times, predicted)
    inside = np.isfinite(difference).all(axis=1)
    return AngleComparison(
        joint_differences(joints, difference[inside], seconds[inside]),
        joint_differences(joints, straight, seconds),
        best,
        seconds[inside],
        difference[inside],
        float(times[-1] - times[0]),
        max_shift,
    )
