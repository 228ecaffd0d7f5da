# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Recorded tip forces: read them from logs, CSV files and bags, and replay them at any step.

A recorded tip force is a list of sample times (increasing, at least two) and one
force ``(fx, fy)`` per time, in newtons in ``base``. It is a zero-order hold: the
sample at ``t_k`` acts over ``[t_k, t_k+1)``. The last sample marks the end of the
record, so no force acts from it on, nor before the first sample. This is how
skelarm's logs and :func:`skelarm_ros.sim.engine.run_controlled` record ``ext_force``
(the force of frame k acts over the step that starts at frame k; the final frame,
which no step applies, records zero).

A simulation stepping by another step than the recording's gets, per step, the mean
force over that step (:meth:`RecordedForce.stepped`), so every push keeps its
impulse whatever the step; with the recording's own step each step gets its sample
exactly.

This module does not import rclpy.
"""

from __future__ import annotations

import csv
import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from skelarm import StateLog

from skelarm_ros.bags.logfile import LogFile, LogFileError, read_log
from skelarm_ros.interface import WRENCH_TYPE, stamp_to_nanoseconds
from skelarm_ros.sim.conversions import Rejected, planar_force

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from numpy.typing import ArrayLike, NDArray

TIME_TOLERANCE = 1e-9
"""Times closer than this (seconds) are the same time: clock rounding, e.g. to whole nanoseconds."""

LOG_SUFFIX = ".npz"
CSV_SUFFIX = ".csv"
CSV_COLUMNS = ("t", "fx", "fy")
WRENCH_TYPES = (WRENCH_TYPE, WRENCH_TYPE.replace("/msg/", "/"))  # as ROS 2 and ROS 1 name it
_PLANE = 2


class ForceSourceError(ValueError):
    """A recorded force that cannot be used; the message names the source, the problem and the fix."""


class RecordedForce:
    """A recorded tip force, held from each sample time to the next.

    Parameters
    ----------
    times : ArrayLike
        Sample times (seconds), shape ``(N,)``, increasing, ``N >= 2``. The last one
        marks the end of the record.
    forces : ArrayLike
        One force ``(fx, fy)`` (N, in ``base``) per sample time, shape ``(N, 2)``. The
        last row acts nowhere (the record ends there); it is kept as given.
    source : str, optional
        How to name the record in messages (a file name, say).
    tolerance : float, optional
        Times closer than this (seconds) count as equal, so a clock rounded to whole
        nanoseconds reads the sample it means.

    Raises
    ------
    ForceSourceError
        If the times do not increase, there are fewer than two, the forces are not one
        ``(fx, fy)`` per time, or a value is NaN or infinite.
    """

    def __init__(
        self,
        times: ArrayLike,
        forces: ArrayLike,
        *,
        source: str = "recorded force",
        tolerance: float = TIME_TOLERANCE,
    ) -> None:
        """Check and keep the samples."""
        self.source = source
        time_array = np.array(times, dtype=np.float64)
        force_array = np.array(forces, dtype=np.float64)
        if time_array.ndim != 1 or time_array.size < 2:
            msg = (
                f"{source}: a recorded force needs at least two sample times in a flat list "
                f"(the last marks the end of the record), got shape {time_array.shape}"
            )
            raise ForceSourceError(msg)
        if not np.isfinite(time_array).all():
            msg = f"{source}: the sample times hold a NaN or infinite value; give finite times in seconds"
            raise ForceSourceError(msg)
        if not (np.diff(time_array) > 0.0).all():
            first = int(np.argmax(np.diff(time_array) <= 0.0))
            msg = (
                f"{source}: the sample times must increase, but sample {first + 1} is at "
                f"{time_array[first + 1]!r} s after {time_array[first]!r} s"
            )
            raise ForceSourceError(msg)
        if force_array.shape != (time_array.size, _PLANE):
            msg = (
                f"{source}: the forces must be one (fx, fy) per sample time, shape ({time_array.size}, 2), "
                f"got {force_array.shape}"
            )
            raise ForceSourceError(msg)
        if not np.isfinite(force_array).all():
            row = int(np.argmax(~np.isfinite(force_array).all(axis=1)))
            msg = (
                f"{source}: the force at sample {row} ({force_array[row].tolist()}) is not finite; give finite newtons"
            )
            raise ForceSourceError(msg)
        if not (math.isfinite(tolerance) and tolerance >= 0.0):
            msg = f"the time tolerance must be zero or a positive number of seconds, got {tolerance!r}"
            raise ValueError(msg)
        self.tolerance = float(tolerance)
        self._times = time_array
        self._forces = force_array
        self._time_list: list[float] = time_array.tolist()
        # One read-only row per sample, handed out as it is: a read never copies.
        self._rows = [row for row in force_array.copy()]
        for row in self._rows:
            row.flags.writeable = False
        self._zero = np.zeros(_PLANE)
        self._zero.flags.writeable = False

    # -- the record ------------------------------------------------------------------------------

    @property
    def times(self) -> NDArray[np.float64]:
        """The sample times (seconds), shape ``(N,)`` (a copy)."""
        return self._times.copy()

    @property
    def forces(self) -> NDArray[np.float64]:
        """The samples ``(fx, fy)`` (N), shape ``(N, 2)`` (a copy)."""
        return self._forces.copy()

    @property
    def start(self) -> float:
        """Time of the first sample, where the record starts (seconds)."""
        return self._time_list[0]

    @property
    def end(self) -> float:
        """Time of the last sample, where the record ends (seconds)."""
        return self._time_list[-1]

    def __len__(self) -> int:
        """Return the number of samples, the end marker included."""
        return len(self._time_list)

    def __repr__(self) -> str:
        return f"RecordedForce({self.source!r}, {len(self)} samples over [{self.start!r}, {self.end!r}) s)"

    def shifted(self, offset: float) -> RecordedForce:
        """Return the same record with every time moved by ``offset`` seconds."""
        return RecordedForce(self._times + offset, self._forces, source=self.source, tolerance=self.tolerance)

    def impulse(self) -> NDArray[np.float64]:
        """Return the impulse of the whole record, ``sum f_k (t_k+1 - t_k)`` (N*s), shape ``(2,)``."""
        return np.diff(self._times) @ self._forces[:-1]

    # -- reading ---------------------------------------------------------------------------------

    def at(self, t: float) -> NDArray[np.float64]:
        """Return the force acting at time ``t``: the latest sample at or before ``t``, or zero.

        Parameters
        ----------
        t : float
            Time (seconds); a time within the tolerance before a sample reads that sample.

        Returns
        -------
        NDArray[np.float64]
            ``(fx, fy)`` (N), read-only; zero before the first sample and from the last on.
        """
        index = bisect_right(self._time_list, t + self.tolerance) - 1
        if index < 0 or index >= len(self._time_list) - 1:
            return self._zero
        return self._rows[index]

    def _snap(self, t: float) -> float:
        """Move ``t`` onto a sample time within the tolerance, so slivers vanish and steps tile exactly."""
        times = self._time_list
        index = bisect_left(times, t)
        for neighbour in (index - 1, index):
            if 0 <= neighbour < len(times) and abs(times[neighbour] - t) <= self.tolerance:
                return times[neighbour]
        return t

    def mean(self, begin: float, end: float) -> NDArray[np.float64]:
        """Return the mean force over ``[begin, end)``.

        Each sample is weighted by how long it acts within the interval; a boundary
        within the tolerance of a sample time is taken as that time, so slivers
        shorter than the tolerance count as no overlap. When one sample alone acts
        over the whole interval the result is exactly that sample. The cost depends
        on how many samples overlap the interval, not on the record's length.

        Parameters
        ----------
        begin, end : float
            The interval (seconds), ``end > begin``.

        Returns
        -------
        NDArray[np.float64]
            ``(fx, fy)`` (N).

        Raises
        ------
        ValueError
            If ``end <= begin`` or either is not finite.
        """
        if not (math.isfinite(begin) and math.isfinite(end) and end > begin):
            msg = f"the interval [{begin!r}, {end!r}) is empty or not finite; the mean force needs end > begin"
            raise ValueError(msg)
        lower, upper = self._snap(begin), self._snap(end)
        if upper <= lower:  # an interval shorter than the tolerance: the force at that instant
            return self.at(begin).copy()
        acting = self.acting(begin, end)
        if not acting:
            return self._zero.copy()
        times = self._time_list
        if len(acting) == 1:
            index = acting[0][0]
            if times[index] <= lower and upper <= times[index + 1]:
                return self._rows[index].copy()
        total = np.zeros(_PLANE)
        for index, overlap in acting:
            total += overlap * self._rows[index]
        return total / (end - begin)

    def acting(self, begin: float, end: float) -> list[tuple[int, float]]:
        """Return the samples acting within ``[begin, end)``, each with how long it acts there (s).

        Boundaries within the tolerance of a sample time are taken as that time (as
        :meth:`mean` takes them). Only the samples around the interval are looked at, so
        the cost depends on how many act in it, not on the record's length.

        Returns
        -------
        list[tuple[int, float]]
            ``(index, seconds)`` per acting sample, in time order; empty for none.
        """
        times = self._time_list
        lower, upper = self._snap(begin), self._snap(end)
        first = max(bisect_right(times, lower) - 1, 0)
        stop = min(bisect_left(times, upper), len(times) - 1)
        return [
            (index, min(upper, times[index + 1]) - max(lower, times[index]))
            for index in range(first, stop)
            if min(upper, times[index + 1]) > max(lower, times[index])
        ]

    def stepped(self, dt: float) -> Callable[[float], NDArray[np.float64]]:
        """Return the force for a simulation stepping by ``dt``: step ``[t, t+dt)`` gets the mean over it.

        Every push keeps its impulse whatever the step; with the recording's own
        aligned step each step gets its sample exactly.

        Parameters
        ----------
        dt : float
            The simulation's step (seconds), positive.

        Returns
        -------
        Callable[[float], NDArray[np.float64]]
            ``force(t)``, the force to hold over the step starting at ``t``; fits
            :func:`skelarm_ros.sim.engine.run_controlled`'s ``force``.

        Raises
        ------
        ValueError
            If ``dt`` is not a positive number.
        """
        if not (math.isfinite(dt) and dt > 0.0):
            msg = f"the step dt must be a positive number of seconds, got {dt!r}"
            raise ValueError(msg)
        step = float(dt)

        def force(t: float) -> NDArray[np.float64]:
            return self.mean(t, t + step)

        return force

    def spans(self, threshold: float, min_gap: float = 0.0) -> list[tuple[float, float]]:
        """Return the ``(begin, end)`` spans where the force's magnitude exceeds ``threshold``.

        Parameters
        ----------
        threshold : float
            Magnitude ``|(fx, fy)|`` (N) to exceed.
        min_gap : float, optional
            Spans closer than this (seconds) are joined into one.

        Returns
        -------
        list[tuple[float, float]]
            The spans in time order; each ends where the record or the push ends.
        """
        magnitude = np.hypot(self._forces[:-1, 0], self._forces[:-1, 1])
        times = self._time_list
        spans: list[tuple[float, float]] = []
        for index in np.flatnonzero(magnitude > threshold).tolist():
            begin, end = times[index], times[index + 1]
            if spans and begin - spans[-1][1] < max(min_gap, 0.0) + self.tolerance:
                spans[-1] = (spans[-1][0], end)
            else:
                spans.append((begin, end))
        return spans

    # -- sources ---------------------------------------------------------------------------------

    @classmethod
    def from_log(
        cls,
        log: StateLog | str | Path,
        channel: str = "ext_force",
        time_offset: float = 0.0,
    ) -> RecordedForce:
        """Read the tip force a skelarm :class:`~skelarm.StateLog` recorded.

        Parameters
        ----------
        log : StateLog | str | Path
            The log, or the path of a ``.sklog.npz`` file.
        channel : str, optional
            The channel holding ``(fx, fy)`` per frame.
        time_offset : float, optional
            Seconds added to every frame time.

        Returns
        -------
        RecordedForce
            One sample per frame; the final frame marks the end.

        Raises
        ------
        ForceSourceError
            If the file is missing or unreadable, or the log has no such channel.
        """
        opened: StateLog | LogFile
        if isinstance(log, StateLog):
            name, opened = "the log", log
        else:
            name = f"log '{log}'"
            try:
                opened = read_log(log)
            except LogFileError as error:
                raise ForceSourceError(str(error)) from None
        if channel not in opened.channel_names:
            msg = (
                f"{name} has no '{channel}' channel (it has {opened.channel_names}); "
                f"record the tip force there or name the channel that holds it"
            )
            raise ForceSourceError(msg)
        forces = opened.channel(channel)
        return cls(opened.times + time_offset, forces, source=f"{name} channel '{channel}'")

    @classmethod
    def from_csv(cls, path: str | Path, time_offset: float = 0.0) -> RecordedForce:
        """Read a tip force from a CSV file with a header row naming the columns ``t``, ``fx``, ``fy``.

        Other columns are ignored; blank lines are skipped. Times are seconds, forces
        newtons in ``base``; the last row marks the end of the record.

        Parameters
        ----------
        path : str | Path
            The CSV file.
        time_offset : float, optional
            Seconds added to every time.

        Returns
        -------
        RecordedForce
            One sample per row.

        Raises
        ------
        ForceSourceError
            If the file is missing or unreadable, lacks a column, holds a value that is
            not a number, or its times do not increase.
        """
        path = Path(path)
        source = f"CSV file '{path}'"
        rows = _read_csv(path, source)
        if not rows:
            msg = f"{source} is empty; give a header row 't,fx,fy' and one row per sample"
            raise ForceSourceError(msg)
        header = [name.strip() for name in rows[0][1]]
        missing = [name for name in CSV_COLUMNS if name not in header]
        if missing:
            msg = (
                f"{source} has no column(s) {missing} in its header row {header}; "
                f"the first row must name the columns t, fx, fy (time in s, force in N)"
            )
            raise ForceSourceError(msg)
        columns = [header.index(name) for name in CSV_COLUMNS]
        values: list[list[float]] = []
        for line, row in rows[1:]:
            if len(row) != len(header):
                msg = f"{source} line {line} has {len(row)} fields but the header has {len(header)}; one per column"
                raise ForceSourceError(msg)
            numbers = []
            for column, name in zip(columns, CSV_COLUMNS, strict=True):
                try:
                    numbers.append(float(row[column]))
                except ValueError:
                    msg = f"{source} line {line}: {name} is {row[column].strip()!r}, not a number"
                    raise ForceSourceError(msg) from None
            values.append(numbers)
        array = np.array(values, dtype=np.float64).reshape(-1, len(CSV_COLUMNS))
        return cls(array[:, 0] + time_offset, array[:, 1:], source=source)

    @classmethod
    def from_bag(
        cls,
        path: str | Path,
        topic: str,
        time_offset: float = 0.0,
    ) -> RecordedForce:
        """Read a tip force from a bag's ``geometry_msgs/WrenchStamped`` topic, by header stamp.

        The wrench's ``force.x`` and ``force.y`` are the samples (its frame must be
        ``base`` or empty); the last message marks the end of the record. A topic
        name without a leading ``/`` matches the same name with one.

        Parameters
        ----------
        path : str | Path
            Any bag :func:`skelarm_ros.bags.reader.open_bag` reads: a rosbag2 directory
            (sqlite3 or MCAP, split, compressed), a ``.db3`` / ``.mcap`` file or a ROS 1 ``.bag``.
        topic : str
            The wrench topic.
        time_offset : float, optional
            Seconds added to every stamp.

        Returns
        -------
        RecordedForce
            One sample per message.

        Raises
        ------
        ForceSourceError
            If the bag cannot be read, has no such WrenchStamped topic, or a message
            is not a planar force in ``base``.
        """
        path = Path(path)
        source = f"bag '{path}' topic '{topic}'"
        times: list[float] = []
        forces: list[NDArray[np.float64]] = []
        for stamp_ns, message in _read_wrenches(path, topic):
            try:
                force = planar_force(
                    str(message.header.frame_id),
                    (message.wrench.force.x, message.wrench.force.y, message.wrench.force.z),
                    (message.wrench.torque.x, message.wrench.torque.y, message.wrench.torque.z),
                    math.inf,
                )
            except Rejected as error:
                msg = f"{source}: the message stamped {stamp_ns * 1e-9!r} s is unusable: {error}"
                raise ForceSourceError(msg) from None
            times.append(stamp_ns * 1e-9)
            forces.append(force)
        return cls(np.array(times) + time_offset, np.array(forces).reshape(-1, _PLANE), source=source)


HOLD = "hold"
STEPPED = "stepped"
MODES = (HOLD, STEPPED)


@dataclass(frozen=True)
class ReplayStep:
    """What to publish for one new time, and what happened to the record at it.

    Attributes
    ----------
    force : NDArray[np.float64]
        ``(fx, fy)`` (N) to hold over the step that starts at this time.
    started : bool
        The record starts acting at this step.
    ended : bool
        This is the first step after the record ended (its force is zero).
    restarted : bool
        The time went back (the time line restarted); the replay starts over.
    """

    force: NDArray[np.float64]
    started: bool = False
    ended: bool = False
    restarted: bool = False


class ForcePlayer:
    """Plays a recorded force step by step: the force for each new time and the record's start and end.

    Parameters
    ----------
    record : RecordedForce
        The force to play.
    mode : str, optional
        ``hold``: the record's value at the step's time (zero-order hold);
        ``stepped``: the mean over the step ``[t, t + dt)``, so every push keeps its
        impulse whatever the step.
    dt : float | None, optional
        The step (seconds); needed by ``stepped``.

    Raises
    ------
    ValueError
        On an unknown mode, or ``stepped`` without a positive ``dt``.
    """

    def __init__(self, record: RecordedForce, mode: str = HOLD, dt: float | None = None) -> None:
        """Check the mode and the step; nothing is played yet."""
        if mode not in MODES:
            msg = f"unknown force replay mode '{mode}'; choose from {list(MODES)}"
            raise ValueError(msg)
        self.record = record
        self.mode = mode
        self._force: Callable[[float], NDArray[np.float64]]
        if mode == STEPPED:
            if dt is None or not (math.isfinite(dt) and dt > 0.0):
                msg = f"mode 'stepped' needs the step dt, a positive number of seconds, got {dt!r}"
                raise ValueError(msg)
            self._force = record.stepped(dt)
            # A step [t, t + dt) overlapping the record's start is the first one it acts in.
            self._first = record.start - dt + record.tolerance
        else:
            self._force = record.at
            self._first = record.start - record.tolerance
        self.last: float | None = None
        self.active = False
        self.ended = False

    def advance(self, t: float) -> ReplayStep | None:
        """Return what to publish for the new time ``t``, or ``None`` when ``t`` repeats the last time.

        Parameters
        ----------
        t : float
            The time (seconds) of the step about to be taken, on the record's time line.

        Returns
        -------
        ReplayStep | None
            The force and the record's events at ``t``.
        """
        restarted = False
        if self.last is not None:
            if t == self.last:
                return None
            if t < self.last:
                restarted = True
                self.active = self.ended = False
        self.last = t
        force = self._force(t)
        started = ended = False
        if not self.ended and t >= self.record.end - self.record.tolerance:
            self.ended = ended = True
            self.active = False
        elif not self.active and not self.ended and t > self._first:
            self.active = started = True
        return ReplayStep(force, started=started, ended=ended, restarted=restarted)


def load_force(source: str | Path, topic: str = "", time_offset: float = 0.0) -> RecordedForce:
    """Read a recorded tip force from a ``.sklog.npz`` log, a ``.csv`` file or a bag.

    Parameters
    ----------
    source : str | Path
        The file: ``*.npz`` is a skelarm log (channel ``ext_force``), ``*.csv`` a CSV
        file, anything else (a rosbag2 directory, a ``.db3`` / ``.mcap`` file, a ROS 1
        ``.bag``) a bag read through ``topic``.
    topic : str, optional
        The bag's WrenchStamped topic (bags only).
    time_offset : float, optional
        Seconds added to every sample time.

    Returns
    -------
    RecordedForce
        The record.

    Raises
    ------
    ForceSourceError
        With one sentence naming the source and what is wrong.
    """
    path = Path(source).expanduser()
    if str(source) == "":
        msg = "no force source given; set 'source' to a .sklog.npz log, a .csv file or a bag"
        raise ForceSourceError(msg)
    if not path.exists():
        msg = f"force source '{path}' does not exist; give the path of a .sklog.npz log, a .csv file or a bag"
        raise ForceSourceError(msg)
    if path.suffix == LOG_SUFFIX:
        return RecordedForce.from_log(path, time_offset=time_offset)
    if path.suffix == CSV_SUFFIX:
        return RecordedForce.from_csv(path, time_offset=time_offset)
    if not topic:
        msg = f"force source '{path}' is read as a bag, which needs 'topic', the WrenchStamped topic to replay"
        raise ForceSourceError(msg)
    return RecordedForce.from_bag(path, topic, time_offset=time_offset)


def _read_csv(path: Path, source: str) -> list[tuple[int, list[str]]]:
    """Return the non-blank rows of a CSV file with their line numbers."""
    try:
        with path.open(newline="", encoding="utf-8") as stream:
            return [(reader_line, row) for reader_line, row in _numbered(csv.reader(stream)) if any(row)]
    except FileNotFoundError:
        msg = f"{source} does not exist; give the path of a CSV file with columns t, fx, fy"
        raise ForceSourceError(msg) from None
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        msg = f"{source} cannot be read as CSV ({error}); check the file"
        raise ForceSourceError(msg) from None


def _numbered(reader: Any) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line number, row)`` from a csv reader."""
    for row in reader:
        yield reader.line_num, row


def _same_topic(name: str, wanted: str) -> bool:
    """Whether a bag's topic is the one asked for, with or without the leading ``/``."""
    return name.lstrip("/") == wanted.lstrip("/")


def _read_wrenches(path: Path, topic: str) -> Iterator[tuple[int, Any]]:
    """Yield ``(header stamp in ns, message)`` of a bag's WrenchStamped topic, in log order."""
    from skelarm_ros.bags.reader import BagError, open_bag

    source = f"bag '{path}'"
    try:
        with open_bag(path) as bag:
            names = [name for name in bag.topics if _same_topic(name, topic)]
            if not names:
                wrenches = sorted(name for name, info in bag.topics.items() if info.msgtype in WRENCH_TYPES)
                msg = f"{source} has no topic '{topic}'; its WrenchStamped topics are {wrenches}"
                raise ForceSourceError(msg)
            info = bag.topics[names[0]]
            if info.msgtype not in WRENCH_TYPES:
                msg = f"{source} topic '{names[0]}' carries {info.msgtype}, not {WRENCH_TYPE}"
                raise ForceSourceError(msg)
            for _, _, _, message in bag.messages(names[:1]):
                stamp = message.header.stamp
                yield stamp_to_nanoseconds(stamp.sec, stamp.nanosec), message
            skipped = bag.skipped_messages.get(names[0], 0)
            if skipped:
                msg = (
                    f"{source} topic '{names[0]}' has {skipped} message(s) that cannot be decoded; "
                    "a force with gaps is not replayed, repair or re-record the bag"
                )
                raise ForceSourceError(msg)
    except BagError as error:
        raise ForceSourceError(str(error)) from None


__all__ = ["ForcePlayer", "ForceSourceError", "RecordedForce", "ReplayStep", "load_force"]
