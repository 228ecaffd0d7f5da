# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""``bag_info BAG``: what a bag holds, as ``ros2 bag info`` says it, and what its joint states carry.

For any bag :func:`skelarm_ros.bags.reader.open_bag` reads (rosbag2 sqlite3 or MCAP,
split, compressed, without ``metadata.yaml``, a truncated MCAP with ``--recover``, a
ROS 1 ``.bag``): its storage, files, start, end and duration (log time), and one line per
topic with its type, message count, rate and largest gap between two messages. A
``sensor_msgs/JointState`` topic's line also says which joints it names, which of
``position``, ``velocity`` and ``effort`` it carries, which of those are zero in every
message or never change, and in how many messages the header stamp is unset (zero).

The bag is read once, streaming; joint states of one repeated layout are read straight
from their bytes (:class:`skelarm_ros.bags.cdr.JointStateLayout`), everything else only
counted.

This module does not import rclpy.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from skelarm_ros import tool
from skelarm_ros.bags.cdr import JointStateLayout
from skelarm_ros.bags.reader import UNDECODABLE, Bag, BagError, open_bag
from skelarm_ros.interface import JOINT_STATE_TYPE, NANOSECONDS, WALL_CLOCK_NS, stamp_text

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from numpy.typing import NDArray

PROG = "bag_info"
FIELDS = ("position", "velocity", "effort")
"""The JointState arrays, in message order."""
_BLOCK = 4096  # joint states gathered before their values are folded into the statistics


@dataclass
class FieldUse:
    """What one JointState array carries over a topic's messages.

    Attributes
    ----------
    carried : int
        Messages in which the array has values.
    zero : list[str]
        Joints whose value is zero in every message that carries it.
    constant : list[str]
        Joints whose value never changes and is not zero.
    finite : bool
        At least one value carried is finite.
    joints : int
        Joints it carried values for.
    """

    carried: int = 0
    zero: list[str] = field(default_factory=list)
    constant: list[str] = field(default_factory=list)
    finite: bool = False
    joints: int = 0

    def sameness(self, name: str) -> list[str]:
        """Say which joints of the array ``name`` are all NaN, zero or constant, for a topic's line."""
        if not self.carried:
            return []
        if not self.finite:
            return [f"{name} all NaN"]
        constant = self.constant if self.carried > 1 else []  # one message says nothing of change
        if len(self.zero) == self.joints:
            return [f"{name} all zero"]
        if len(constant) == self.joints:
            return [f"{name} constant"]
        said = [f"{name} zero for {', '.join(self.zero)}"] if self.zero else []
        return said + ([f"{name} constant for {', '.join(constant)}"] if constant else [])


class _Range:
    """The smallest and largest finite value of each joint, folded in block by block."""

    def __init__(self) -> None:
        self.low: dict[str, float] = {}
        self.high: dict[str, float] = {}
        self.messages = 0

    def fold(self, names: Sequence[str], values: NDArray[np.float64]) -> None:
        """Fold in ``values`` of shape ``(messages, len(names))``."""
        self.messages += len(values)
        finite = np.isfinite(values)
        low = np.where(finite, values, np.inf).min(axis=0, initial=np.inf)
        high = np.where(finite, values, -np.inf).max(axis=0, initial=-np.inf)
        for name, lo, hi in zip(names, low.tolist(), high.tolist(), strict=True):
            self.low[name] = min(lo, self.low.get(name, lo))
            self.high[name] = max(hi, self.high.get(name, hi))

    def use(self, joints: Sequence[str]) -> FieldUse:
        """Return what the array carried, for the topic's joints in order."""
        same = [name for name in joints if name in self.low and self.low[name] == self.high[name]]
        zero = [name for name in same if self.low[name] == 0.0]
        constant = [name for name in same if self.low[name] != 0.0]
        finite = any(self.low[name] <= self.high[name] for name in self.low)
        return FieldUse(self.messages, zero, constant, finite, len(self.low))


@dataclass
class JointStateProfile:
    """What a JointState topic carries, gathered message by message (:meth:`add`, :meth:`add_values`).

    Attributes
    ----------
    joints : list[str]
        Every joint named, in the order first seen; ``#1 ... #N`` for values carried without names.
    name_lists : int
        Different name lists seen (more than one: the names vary between messages).
    unnamed : int
        Messages without names.
    unset_stamps : int
        Messages whose header stamp is zero.
    latest_stamp : float
        The latest header stamp (ns); before :data:`~skelarm_ros.interface.WALL_CLOCK_NS`
        the topic is stamped with simulated time, whose zero is its first instant.
    """

    joints: list[str] = field(default_factory=list)
    name_lists: int = 0
    unnamed: int = 0
    unset_stamps: int = 0
    latest_stamp: float = 0.0
    _lists: set[tuple[str, ...]] = field(default_factory=set, repr=False)
    _ranges: dict[str, _Range] = field(default_factory=lambda: {name: _Range() for name in FIELDS}, repr=False)
    _pending: dict[tuple[tuple[str, ...], tuple[int, int, int]], list[Any]] = field(default_factory=dict, repr=False)

    def add(self, names: tuple[str, ...], counts: tuple[int, int, int], values: Sequence[Any]) -> None:
        """Add one joint state: its names, array lengths and ``(sec, nanosec, *position, *velocity, *effort)``.

        ``values`` is what :meth:`skelarm_ros.bags.cdr.JointStateLayout.values` gives.
        """
        key = (names, counts)
        block = self._pending.get(key)
        if block is None:
            block = self._pending[key] = []
            if names not in self._lists:
                self._lists.add(names)
                self.name_lists = len(self._lists)
            self.joints.extend(name for name in _labels(names, max(counts)) if name not in self.joints)
        block.append(values)
        if len(block) >= _BLOCK:
            self._fold(key, self._pending.pop(key))

    def _fold(self, key: tuple[tuple[str, ...], tuple[int, int, int]], rows: list[Any]) -> None:
        names, counts = key
        if not names:
            self.unnamed += len(rows)
        table = np.asarray(rows, dtype=np.float64).reshape(len(rows), -1)
        self.unset_stamps += int(np.count_nonzero((table[:, 0] == 0) & (table[:, 1] == 0)))
        self.latest_stamp = max(self.latest_stamp, float(np.max(table[:, 0] * NANOSECONDS + table[:, 1])))
        start = 2
        for name, count in zip(FIELDS, counts, strict=True):
            if count:
                self._ranges[name].fold(_labels(names, count), table[:, start : start + count])
            start += count

    def uses(self) -> dict[str, FieldUse]:
        """Return what each of ``position``, ``velocity`` and ``effort`` carried."""
        for key in list(self._pending):
            self._fold(key, self._pending.pop(key))
        return {name: self._ranges[name].use(self.joints) for name in FIELDS}

    def describe(self) -> str:
        """Return what the joint states carry, for the topic's line."""
        uses = self.uses()
        if self.unnamed and len(self._lists) == 1:
            named = f"joints unnamed ({len(self.joints)} values, in position order)"
        else:
            named = f"joints {', '.join(self.joints)}"
            if self.name_lists > 1:
                named += f" (names vary: {self.name_lists} lists)"
        total = max((use.carried for use in uses.values()), default=0)
        parts = [named]
        carried = [
            name + ("" if use.carried == total else f" (in {use.carried})") for name, use in uses.items() if use.carried
        ]
        parts.append(", ".join(carried) if carried else "no values")
        missing = [name for name, use in uses.items() if not use.carried]
        if missing:
            parts.append("no " + ", ".join(missing))
        for name, use in uses.items():
            parts.extend(use.sameness(name))
        if self.unset_stamps and not 0 < self.latest_stamp < WALL_CLOCK_NS:  # simulated time starts at 0
            parts.append(f"header stamp unset (0) in {self.unset_stamps}")
        return "; ".join(parts)


@dataclass
class TopicInfo:
    """One topic of a bag, as read.

    Attributes
    ----------
    name, msgtype : str
        The topic and its type.
    count : int
        Messages read.
    decodable : bool
        Whether its type's definition is in the bag or in ROS 2 Jazzy (ROS 1 Noetic).
    first, last : int | None
        Log times of its first and last message (ns).
    gap : int
        The largest time between two of its messages in log time (ns).
    gap_at : int | None
        Log time (ns) of the message that ended the largest gap.
    joints : JointStateProfile | None
        What a JointState topic carries.
    """

    name: str
    msgtype: str
    decodable: bool
    count: int = 0
    first: int | None = None
    last: int | None = None
    gap: int = 0
    gap_at: int | None = None
    joints: JointStateProfile | None = None

    def add(self, log_time: int) -> None:
        """Count one message logged at ``log_time`` (ns); messages come in log-time order."""
        if self.last is not None and log_time - self.last > self.gap:
            self.gap, self.gap_at = log_time - self.last, log_time
        self.first = log_time if self.first is None else self.first
        self.last = log_time
        self.count += 1

    @property
    def rate(self) -> float | None:
        """Messages per second over its span in log time; ``None`` with fewer than two or no span."""
        if self.count < 2 or self.first is None or self.last is None or self.last == self.first:
            return None
        return (self.count - 1) * NANOSECONDS / (self.last - self.first)

    def timing(self, start: int) -> str:
        """Return its rate and largest gap (seconds after the bag's start ``start``)."""
        rate = self.rate
        if rate is None:
            return (
                "one message"
                if self.count == 1
                else ("no messages" if not self.count else "no time between its messages")
            )
        gap_at = ((self.gap_at or start) - start) / NANOSECONDS
        return f"{rate:.4g} Hz, largest gap {self.gap / NANOSECONDS:.3f} s at {gap_at:.3f} s"


@dataclass
class BagInfo:
    """What a bag holds (:func:`bag_info`).

    Attributes
    ----------
    path : Path
        The bag.
    storage : str
        ``sqlite3``, ``mcap`` or ``rosbag1``.
    files : list[Path]
        The files read.
    topics : list[TopicInfo]
        Its topics, by name.
    notes : list[str]
        What the bag's reader said (compression, recovered data, a missing ``metadata.yaml``).
    """

    path: Path
    storage: str
    files: list[Path]
    topics: list[TopicInfo]
    notes: list[str]

    @property
    def messages(self) -> int:
        """Messages read over all topics."""
        return sum(topic.count for topic in self.topics)

    @property
    def start(self) -> int | None:
        """Log time of the bag's first message (ns)."""
        return min((t.first for t in self.topics if t.first is not None), default=None)

    @property
    def end(self) -> int | None:
        """Log time of the bag's last message (ns)."""
        return max((t.last for t in self.topics if t.last is not None), default=None)

    def lines(self) -> list[str]:
        """Return the report: the bag's lines, then one line per topic."""
        size = sum(file.stat().st_size for file in self.files if file.is_file())
        start, end = self.start, self.end
        lines = [
            f"Bag:        {self.path}",
            f"Files:      {', '.join(file.name for file in self.files)} ({_size(size)})",
            f"Storage:    {self.storage}",
        ]
        if start is None or end is None:
            lines.append("Duration:   no messages")
        else:
            lines += [
                f"Duration:   {(end - start) / NANOSECONDS:.9f} s",
                f"Start:      {_when(start)}",
                f"End:        {_when(end)}",
            ]
        topics = f"{len(self.topics)} topic{'' if len(self.topics) == 1 else 's'}"
        lines.append(f"Messages:   {self.messages} on {topics} (rates and gaps in log time)")
        width = max((len(topic.name) for topic in self.topics), default=0)
        types = max((len(topic.msgtype) for topic in self.topics), default=0)
        counts = max((len(str(topic.count)) for topic in self.topics), default=1)
        base = start or 0
        for topic in self.topics:
            line = (
                f"  {topic.name:<{width}}  {topic.msgtype:<{types}}  {topic.count:>{counts}} msgs  {topic.timing(base)}"
            )
            if topic.joints is not None:
                line += f"; {topic.joints.describe()}"
            elif not topic.decodable:
                line += "; type not defined in the bag or in ROS 2 Jazzy: not decoded"
            lines.append(line)
        return lines


def _labels(names: Sequence[str], count: int) -> list[str]:
    """Name ``count`` values: by ``names`` as far as they go, then by position (``#k``)."""
    return [*names[:count], *(f"#{k + 1}" for k in range(len(names), count))]


def _size(size: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    return f"{size} B"  # pragma: no cover - the loop returns


def _when(ns: int) -> str:
    """Return a log time as a UTC date with nanoseconds and as seconds (``stamp_text``)."""
    moment = datetime.fromtimestamp(ns // NANOSECONDS, tz=UTC)
    return f"{moment:%Y-%m-%d %H:%M:%S}.{ns % NANOSECONDS:09d} UTC ({stamp_text(ns)})"


def _joint_states(bag: Bag, profiles: dict[str, JointStateProfile]) -> Iterable[tuple[str, int]]:
    """Read every message's topic and log time; fold the JointState topics' values into ``profiles``."""
    standard = bag.standard(JOINT_STATE_TYPE)
    layouts: dict[str, JointStateLayout] = {}
    for topic, msgtype, log_time, data in bag.raw_messages():
        yield topic, log_time
        profile = profiles.get(topic)
        if profile is None:
            continue
        layout = layouts.get(topic)
        if layout is not None and (values := layout.values(data)) is not None:
            profile.add(tuple(layout.names), layout.counts, values)
            continue
        message = bag.decode(topic, msgtype, data)
        if message is None:
            continue
        arrays = (message.position, message.velocity, message.effort)
        stamp = message.header.stamp
        values = (stamp.sec, stamp.nanosec, *(value for array in arrays for value in array))
        profile.add(tuple(message.name), (len(arrays[0]), len(arrays[1]), len(arrays[2])), values)
        if standard:
            learned = JointStateLayout()
            if learned.learn(data, message):
                layouts[topic] = learned


def bag_info(path: str | Path, *, recover: bool = False) -> BagInfo:
    """Read a bag once and say what it holds.

    Parameters
    ----------
    path : str | Path
        Any bag :func:`skelarm_ros.bags.reader.open_bag` reads.
    recover : bool, optional
        Read a truncated MCAP up to its damage.

    Raises
    ------
    BagError
        If the bag cannot be read (one sentence naming it and the fix).
    """
    with open_bag(path, recover=recover) as bag:
        topics = {name: TopicInfo(name, summary.msgtype, summary.decodable) for name, summary in bag.topics.items()}
        profiles = {
            name: JointStateProfile()
            for name, summary in bag.topics.items()
            if summary.msgtype == JOINT_STATE_TYPE and summary.decodable
        }
        for topic, log_time in _joint_states(bag, profiles):
            topics[topic].add(log_time)
        for name, profile in profiles.items():
            topics[name].joints = profile
        notes = [note for note in bag.notes if not note.startswith(UNDECODABLE)]
        return BagInfo(bag.path, bag.storage, list(bag.files), list(topics.values()), notes)


def _parser() -> argparse.ArgumentParser:
    parser = tool.parser(
        PROG,
        "Say what a bag holds: storage, duration, start and end, and per topic its type, count, rate and "
        "largest gap; for joint states their joints and which of position, velocity and effort they carry.",
        writes=False,
    )
    parser.add_argument("bag", help="rosbag2 directory, .db3 or .mcap file, or ROS 1 .bag")
    parser.add_argument("--recover", action="store_true", help="read a truncated MCAP up to its damage")
    return parser


def _report(args: argparse.Namespace) -> tool.Done:
    info = bag_info(args.bag, recover=args.recover)
    return tool.Done(report=info.lines(), notes=info.notes)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``bag_info`` from the command line; returns the exit code (1 with one sentence on a bad bag)."""
    return tool.run_main(_parser(), argv, _report, errors=(BagError,))


if __name__ == "__main__":
    sys.exit(main())
