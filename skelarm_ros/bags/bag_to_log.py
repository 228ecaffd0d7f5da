# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""``bag_to_log``: a bag's joint states, commands and wrench as a skelarm ``.sklog.npz``.

The bag is streamed once with :mod:`skelarm_ros.bags.reader`; values go straight into
numpy arrays grown in chunks, so memory follows the output arrays, not the bag.
Everything else the log needs to be understood later (joint names and order, the
clock, the effort's kind, unit, source and timing, topics and types, the source
files with their sha256, counts of repaired or masked samples) is written into the
log's ``[extra]`` table. Missing values are NaN and marked ``False`` in the
``valid_<channel>`` masks; no sample is deleted. See ``docs/bags.md``.

:func:`bag_to_log` runs five stages, each a function that can be called alone:

1. :func:`plan_topics`: which topics to read (joint states, commands, wrench,
   controller channels, ``robot_description``), given or found, and checked;
2. :func:`collect`: one streaming pass over them into growing arrays (joint states
   of one repeated layout read straight from their bytes by
   :class:`skelarm_ros.bags.cdr.JointStateLayout`; commands logged before the first state
   kept for it);
3. :func:`align`: every stream held onto the joint states' times on the chosen
   clock, giving the log's channels, masks and time axis;
4. :func:`resolve_skeleton`: the arm to embed, from a scenario or the recorded
   ``robot_description``;
5. :func:`log_extra`: the ``[extra]`` table.

The log is written by :func:`skelarm_ros.bags.logfile.write_log`.

This module does not import rclpy.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import time
import warnings
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from skelarm_ros import __version__
from skelarm_ros.bags.cdr import JointStateLayout
from skelarm_ros.bags.logfile import LogFileError, write_log
from skelarm_ros.bags.reader import Bag, BagError, open_bag
from skelarm_ros.interface import (
    EFFORT_COMMANDS,
    FLOAT_ARRAY_TYPE,
    JOINT_COMMANDS,
    JOINT_STATE_TYPE,
    JOINT_STATES,
    NANOSECONDS,
    POINT_TYPE,
    ROBOT_DESCRIPTION,
    STRING_TYPE,
    TIP_WRENCH,
    WRENCH_TYPE,
    channel_of,
    channel_topic,
    default_joint_names,
    sibling,
    split_names,
    stamp_to_nanoseconds,
)
from skelarm_ros.outputs import add_force_option, check_new
from skelarm_ros.sim.scenario import ScenarioError, load_arm
from skelarm_ros.sim.urdf_reader import URDFError, skeleton_from_urdf

if TYPE_CHECKING:
    from collections.abc import Sequence

    import skelarm
    from numpy.typing import NDArray

    from skelarm_ros.sim.scenario import ArmSetup

TOOL = "skelarm_ros.bags.bag_to_log"
CLOCKS = ("header", "log")
AUTO_COMMAND_TOPICS = (JOINT_COMMANDS, EFFORT_COMMANDS)
"""Command topics looked for next to the joint states, in this order."""
PROGRESS_MIN_MESSAGES = 5000
EARLY_COMMANDS = 1000  # commands logged before the first state that are kept for it (the newest)
_CHUNK = 65536
_RESERVED = ("time", "q", "dq", "tau", "ext_force", "measured_effort")
_CHANNEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # controller/<channel> topics that become log channels


class ConversionError(ValueError):
    """Input that cannot be converted; the message names the problem and the fix."""


# ----------------------------------------------------------------------------- arrays


class _Rows:
    """A float or int array that grows by whole chunks; rows start as NaN (or 0)."""

    def __init__(self, width: int | None, capacity: int = 0, dtype: type = np.float64) -> None:
        self.width = width
        self.dtype = dtype
        self.done: list[NDArray[Any]] = []
        self.chunk = self._new(max(capacity, 16))
        self.pos = 0

    def _new(self, rows: int) -> NDArray[Any]:
        shape = (rows,) if self.width is None else (rows, self.width)
        return np.full(shape, np.nan if self.dtype is np.float64 else 0, dtype=self.dtype)

    def take(self) -> tuple[NDArray[Any], int]:
        """Reserve the next row; return the chunk holding it and its index there."""
        if self.pos == len(self.chunk):
            self.done.append(self.chunk)
            self.chunk = self._new(_CHUNK)
            self.pos = 0
        self.pos += 1
        return self.chunk, self.pos - 1

    def put(self, value: float) -> None:
        """Append one value (a 1-D array)."""
        chunk, index = self.take()
        chunk[index] = value

    def row(self) -> NDArray[Any]:
        """Append a row (NaN-filled) and return it for writing."""
        chunk, index = self.take()
        return chunk[index]

    def array(self) -> NDArray[Any]:
        """Return the rows taken so far, as one array."""
        if not self.done:
            return self.chunk[: self.pos]
        return np.concatenate([*self.done, self.chunk[: self.pos]])

    def __len__(self) -> int:
        return sum(len(c) for c in self.done) + self.pos


class _NameMap:
    """Puts a message's per-name values into the chosen joint order (cached per name list)."""

    def __init__(self, joints: Sequence[str]) -> None:
        self.joints = list(joints)
        self.default = default_joint_names(len(joints)) == self.joints
        self._names: list[str] | None = None
        self._index = np.zeros(0, dtype=np.intp)
        self._complete = False
        self.unknown: set[str] = set()

    def _update(self, names: list[str], count: int) -> None:
        self._names = names
        if not names:  # no names: position order, as j1..jN
            names = default_joint_names(count)
        where = {name: i for i, name in enumerate(names)}
        self.unknown.update(name for name in names if name not in set(self.joints))
        self._index = np.array([where.get(name, -1) for name in self.joints], dtype=np.intp)
        self._complete = bool((self._index >= 0).all())
        self._count = len(names)
        self._identity = self._complete and self._index.tolist() == list(range(len(names)))

    def fill(self, row: NDArray[np.float64], names: list[str], values: Any) -> None:
        """Write ``values`` (one per name in ``names``) into ``row`` by name; the rest stays NaN."""
        if names != self._names or (not names and len(values) != self._count):
            self._update(names, len(values))
        if len(values) == 0:
            return
        if self._complete and len(values) == self._count:
            row[:] = values if self._identity else np.asarray(values)[self._index]
            return
        for j, k in enumerate(self._index):
            if 0 <= k < len(values):
                row[j] = values[k]


@dataclass
class _Stream:
    """Samples of one topic other than the joint states as they are read: values and their times (ns)."""

    topic: str
    msgtype: str
    values: _Rows
    stamps: _Rows
    logs: _Rows
    names: list[str] = field(default_factory=list)
    namemap: _NameMap | None = None

    def samples(self) -> Samples:
        """Return what was read, as arrays."""
        return Samples(
            self.topic, self.msgtype, self.values.array(), self.stamps.array(), self.logs.array(), self.names
        )


@dataclass(frozen=True)
class Samples:
    """The samples of one topic other than the joint states, in log order.

    Attributes
    ----------
    topic, msgtype : str
        The topic and its type.
    values : NDArray[np.float64]
        One row per message, shape ``(N, width)``: a wrench's or point's ``(x, y)``, a
        command's effort in joint order, a Float64MultiArray's data, or a JointState
        channel's positions; what a message lacks is NaN.
    stamps : NDArray[np.int64]
        Header stamps (ns), shape ``(N,)``; empty for a type without a header (Float64MultiArray).
    logs : NDArray[np.int64]
        Log times (ns), shape ``(N,)``.
    names : list[str]
        A JointState channel's names (its columns), from its first message.
    """

    topic: str
    msgtype: str
    values: NDArray[np.float64]
    stamps: NDArray[np.int64]
    logs: NDArray[np.int64]
    names: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------- stage 1: plan the topics


@dataclass(frozen=True)
class TopicPlan:
    """The topics a conversion reads, with topic names as in the bag (leading ``/``).

    Attributes
    ----------
    joint_topic, joint_type : str
        The joint states and their type.
    command_topic, command_type : str | None
        The effort commands for ``tau`` and their type; ``None`` when ``tau`` is the joint states' effort.
    command_auto : bool
        Whether the command topic was found next to the joint topic (not given).
    wrench_topic : str | None
        The tip wrench for ``ext_force``, or ``None``.
    wrench_auto : bool
        Whether the wrench topic was found next to the joint topic (not given).
    controller : dict[str, str]
        Controller channels next to the joint topic: ``{channel: topic}``.
    description : str | None
        The ``robot_description`` topic to read the arm from, or ``None``.
    """

    joint_topic: str
    joint_type: str
    command_topic: str | None = None
    command_type: str | None = None
    command_auto: bool = False
    wrench_topic: str | None = None
    wrench_auto: bool = False
    controller: dict[str, str] = field(default_factory=dict)
    description: str | None = None

    @property
    def wanted(self) -> list[str]:
        """Every topic to read, joint states first."""
        topics = [self.joint_topic, self.command_topic, self.wrench_topic, *self.controller.values(), self.description]
        return [topic for topic in topics if topic]


def plan_topics(
    bag: Bag,
    *,
    joint_topic: str | None = None,
    command_topic: str | None = None,
    wrench_topic: str | None = None,
    read_description: bool = True,
) -> TopicPlan:
    """Choose and check the topics to read (see :func:`bag_to_log` for the rules).

    Parameters
    ----------
    bag : Bag
        The open bag.
    joint_topic, command_topic, wrench_topic : str | None, optional
        Topics given by the user (a leading ``/`` may be left out); the others are found.
    read_description : bool, optional
        Whether to read the arm from a recorded ``robot_description`` (not when a scenario gives it).

    Raises
    ------
    ConversionError
        If a given topic is missing or of the wrong type, or the joint states cannot be chosen.
    """
    if joint_topic:
        joint_topic = _check_topic(bag, joint_topic, [JOINT_STATE_TYPE], "--joint-topic")
    if command_topic:
        command_topic = _check_topic(bag, command_topic, [JOINT_STATE_TYPE, FLOAT_ARRAY_TYPE], "--command-topic")
    if not joint_topic:
        joint_topic = choose_joint_topic(bag, [command_topic] if command_topic else [])
    if bag.topics[joint_topic].count == 0:
        msg = f"joint-state topic '{joint_topic}' has no messages in bag '{bag.path}'; choose another"
        raise ConversionError(msg)
    command_auto = wrench_auto = False
    if not command_topic:
        command_topic = _beside(bag, joint_topic, AUTO_COMMAND_TOPICS, (JOINT_STATE_TYPE, FLOAT_ARRAY_TYPE))
        command_auto = command_topic is not None
    if wrench_topic:
        wrench_topic = _check_topic(bag, wrench_topic, [WRENCH_TYPE], "--wrench-topic")
    else:
        wrench_topic = _beside(bag, joint_topic, (TIP_WRENCH,), (WRENCH_TYPE,))
        wrench_auto = wrench_topic is not None
    _readable(bag, joint_topic, "--joint-topic", found=False)
    command_topic = _readable(bag, command_topic, "--command-topic", found=command_auto)
    wrench_topic = _readable(bag, wrench_topic, "--wrench-topic", found=wrench_auto)
    controller = {
        channel: topic
        for channel, topic in controller_topics(bag, joint_topic).items()
        if _readable(bag, topic, "", found=True)
    }
    description = description_topic(bag) if read_description else None
    return TopicPlan(
        joint_topic=joint_topic,
        joint_type=bag.topics[joint_topic].msgtype,
        command_topic=command_topic,
        command_type=bag.topics[command_topic].msgtype if command_topic else None,
        command_auto=command_auto and command_topic is not None,
        wrench_topic=wrench_topic,
        wrench_auto=wrench_auto and wrench_topic is not None,
        controller=controller,
        description=_readable(bag, description, "", found=True),
    )


FIELDS_READ = {
    JOINT_STATE_TYPE: ("header.stamp.sec", "header.stamp.nanosec", "name", "position", "velocity", "effort"),
    WRENCH_TYPE: ("header.stamp.sec", "header.stamp.nanosec", "wrench.force.x", "wrench.force.y"),
    POINT_TYPE: ("header.stamp.sec", "header.stamp.nanosec", "point.x", "point.y"),
    FLOAT_ARRAY_TYPE: ("data",),
    STRING_TYPE: ("data",),
}
"""The fields the conversion takes from each type's messages (a bag's own definition must have them)."""


def _readable(bag: Bag, topic: str | None, option: str, *, found: bool) -> str | None:
    """Return ``topic`` when its type's stored definition has the fields read; a found one is left out otherwise.

    A topic the user named (or the joint states) stops the conversion with one
    sentence; a topic found beside the joint states is left out with a note.
    """
    if topic is None:
        return None
    problem = bag.lacking(topic, FIELDS_READ[bag.topics[topic].msgtype])
    if problem is None:
        return topic
    if found:
        bag.notes.append(f"{problem}; left out")
        return None
    fix = f"record it again, or choose another topic with {option}"
    if option in OPTIONAL_TOPICS:
        fix = f"record it again, or drop {option} to convert without it"
    raise ConversionError(f"{problem}; {fix}")


def _listing(bag: Bag, topics: Sequence[str]) -> str:
    return ", ".join(f"{t} ({bag.topics[t].count} message{'' if bag.topics[t].count == 1 else 's'})" for t in topics)


OPTIONAL_TOPICS = {
    "--command-topic": "the commands are optional: drop --command-topic and tau comes from the commands "
    "found beside the joint states, or else from their effort",
    "--wrench-topic": "the tip force is optional: drop --wrench-topic to convert without it "
    "(the log then has no ext_force)",
}
"""What leaving out each optional topic option does, said when the topic it names is missing."""


def _check_topic(bag: Bag, topic: str, types: Sequence[str], option: str) -> str:
    """Return ``topic`` (a leading ``/`` added) after checking it exists and has an accepted type."""
    name = topic if topic.startswith("/") else "/" + topic
    if name not in bag.topics:
        optional = f"{OPTIONAL_TOPICS[option]}; " if option in OPTIONAL_TOPICS else ""
        msg = (
            f"bag '{bag.path}' has no topic '{name}' ({option}); {optional}"
            f"its topics are {_listing(bag, list(bag.topics))}"
        )
        raise ConversionError(msg)
    have = bag.topics[name].msgtype
    if have not in types:
        msg = f"topic '{name}' ({option}) is {have}, not {' or '.join(types)}; choose a topic of that type"
        raise ConversionError(msg)
    return name


def choose_joint_topic(bag: Bag, exclude: Sequence[str] = ()) -> str:
    """Choose the bag's joint-state topic: the only JointState topic (or the only one named ``joint_states``).

    Command and ``controller/<channel>`` topics are not candidates.

    Raises
    ------
    ConversionError
        If there is none, or several (the message lists them with their counts).
    """
    candidates = [
        name
        for name, info in bag.topics.items()
        if info.msgtype == JOINT_STATE_TYPE
        and info.count > 0
        and name not in exclude
        and channel_of(name) is None
        and name.rsplit("/", 1)[-1] != JOINT_COMMANDS
    ]
    named = [name for name in candidates if name.rsplit("/", 1)[-1] == JOINT_STATES]
    if len(named) == 1:
        return named[0]
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        msg = (
            f"bag '{bag.path}' has no {JOINT_STATE_TYPE} topic with messages; record the arm's joint states "
            "(or name another topic with --joint-topic)"
        )
        raise ConversionError(msg)
    msg = (
        f"bag '{bag.path}' has {len(candidates)} {JOINT_STATE_TYPE} topics: {_listing(bag, candidates)}; "
        "choose one with --joint-topic"
    )
    raise ConversionError(msg)


def _beside(bag: Bag, joint_topic: str, names: Sequence[str], types: Sequence[str]) -> str | None:
    """Return the first of ``names`` next to the joint topic that the bag has with messages of one of ``types``."""
    for name in names:
        candidate = sibling(joint_topic, name)
        info = bag.topics.get(candidate)
        if info and info.msgtype in types and info.count:
            return candidate
    return None


def controller_topics(bag: Bag, joint_topic: str) -> dict[str, str]:
    """Return the controller channels next to the joint topic, ``{channel: topic}``, in the bag's topic order.

    A channel is a ``controller/<channel>`` topic in the joint topic's namespace, of
    type PointStamped or JointState, whose channel is a name (letters, digits, ``_``).
    """
    channels: dict[str, str] = {}
    for name, info in bag.topics.items():
        channel = channel_of(name)
        if (
            channel is not None
            and name == sibling(joint_topic, channel_topic(channel))
            and _CHANNEL_NAME.fullmatch(channel)
            and info.msgtype in (POINT_TYPE, JOINT_STATE_TYPE)
        ):
            channels[channel] = name
    return channels


def description_topic(bag: Bag) -> str | None:
    """Return the bag's first ``.../robot_description`` topic of type String, or ``None``."""
    return next(
        (name for name, info in bag.topics.items() if name.endswith(ROBOT_DESCRIPTION) and info.msgtype == STRING_TYPE),
        None,
    )


# ----------------------------------------------------------------------------- stage 2: collect, one pass


@dataclass
class Collected:
    """What the streaming pass gathered.

    Attributes
    ----------
    joints : list[str]
        Joint names, in column order.
    state : NDArray[np.float64]
        One row per joint-state message: ``q``, ``dq`` and ``tau`` side by side, shape ``(N, 3 * J)``.
    state_times : NDArray[np.int64]
        Per joint-state message its header stamp and log time (ns), shape ``(N, 2)``.
    streams : dict[str, Samples]
        The other topics' samples, by topic.
    urdf : str | None
        The first recorded ``robot_description``, if read.
    messages : int
        Messages read.
    empty_name_lists : int
        Joint states without names (read as j1 ... jN, in position order).
    unknown_names : list[str]
        Joint names seen that are not among :attr:`joints`, sorted.
    notes : list[str]
        The bag's notes.
    skipped : dict[str, int]
        Messages that could not be decoded, per topic.
    files : list[Path]
        The bag's files.
    """

    joints: list[str]
    state: NDArray[np.float64]
    state_times: NDArray[np.int64]
    streams: dict[str, Samples]
    urdf: str | None
    messages: int
    empty_name_lists: int
    unknown_names: list[str]
    notes: list[str]
    skipped: dict[str, int]
    files: list[Path]


class _Collector:
    """The pass's state: the joint states' rows, the other topics' streams, and the commands that came early."""

    def __init__(self, bag: Bag, plan: TopicPlan, joints: Sequence[str] | None) -> None:
        self.bag = bag
        self.plan = plan
        self.joints = joints
        self.capacity = bag.topics[plan.joint_topic].count
        self.statemap: _NameMap | None = None
        self.state = _Rows(0)  # replaced at the first state: q, dq, tau side by side, one row per message
        self.span = 0  # joints per quantity
        self.state_times = _Rows(2, self.capacity, np.int64)  # header stamp, log time
        self.streams: dict[str, _Stream] = {}
        self.urdf: str | None = None
        self.empty_name_lists = 0
        # Commands logged before the first state (a recorder may take a command before the state it answers).
        self.early: deque[tuple[str, str, int, Any]] = deque(maxlen=EARLY_COMMANDS)

    def fast_state(self, values: tuple[Any, ...], log_time: int) -> None:
        """Add a joint state read by the layout reader: ``(sec, nanosec, *q, *dq, *tau)`` in joint order."""
        self.state.row()[:] = values[2:]
        times = self.state_times.row()
        times[0] = values[0] * NANOSECONDS + values[1]
        times[1] = log_time

    def joint_state(self, message: Any, log_time: int) -> None:
        """Add a decoded joint state, its values put in joint order by name."""
        statemap = self.statemap if self.statemap is not None else self._first_state(message)
        span = self.span
        names = message.name
        if not names:
            self.empty_name_lists += 1
        row = self.state.row()
        statemap.fill(row[:span], names, message.position)
        statemap.fill(row[span : 2 * span], names, message.velocity)
        statemap.fill(row[2 * span :], names, message.effort)
        times = self.state_times.row()
        stamp = message.header.stamp
        times[0] = stamp.sec * NANOSECONDS + stamp.nanosec
        times[1] = log_time

    def _first_state(self, message: Any) -> _NameMap:
        """Fix the joints from the first state (or ``joints``), then take the commands that came before it."""
        first = list(message.name)
        if self.joints:
            chosen = list(self.joints)
        elif first:
            chosen = first
        else:
            chosen = default_joint_names(len(message.position))
            warnings.warn(
                f"joint states on '{self.plan.joint_topic}' have an empty name list; "
                f"naming the joints {chosen} in position order (pass --joints to name them)",
                stacklevel=5,  # past joint_state, collect and bag_to_log: to the line that called bag_to_log
            )
        if not chosen:
            msg = f"the first message on '{self.plan.joint_topic}' has no joints; choose another topic"
            raise ConversionError(msg)
        self.statemap = _NameMap(chosen)
        self.state = _Rows(3 * len(chosen), self.capacity)
        self.span = len(chosen)
        while self.early:
            self.sample(*self.early.popleft())
        return self.statemap

    def learn(self, layout: JointStateLayout, data: bytes, message: Any) -> JointStateLayout:
        """Let the layout reader learn a joint state in the joints' own order; a fresh one if it cannot fill rows."""
        assert self.statemap is not None  # a state was just added
        if self.statemap.joints == list(message.name):
            layout.learn(data, message)
            if layout.counts != (self.span, self.span, self.span):  # the fast path fills whole rows only
                return JointStateLayout()
        return layout

    def other(self, topic: str, msgtype: str, log_time: int, message: Any) -> None:
        """Add a message of a topic other than the joint states."""
        if topic == self.plan.description:
            self.urdf = self.urdf or str(message.data)
        elif topic == self.plan.command_topic and self.statemap is None:
            self.early.append((topic, msgtype, log_time, message))  # its state may be logged just after it
        else:
            self.sample(topic, msgtype, log_time, message)

    def sample(self, topic: str, msgtype: str, log_time: int, message: Any) -> None:
        """Add one message to its topic's stream."""
        stream = self.streams.get(topic)
        if stream is None:
            stream = self.streams[topic] = self._new_stream(topic, msgtype, message)
        row = stream.values.row()
        if msgtype == WRENCH_TYPE:
            row[0] = message.wrench.force.x
            row[1] = message.wrench.force.y
        elif msgtype == POINT_TYPE:
            row[0] = message.point.x
            row[1] = message.point.y
        elif msgtype == FLOAT_ARRAY_TYPE:
            floats = message.data
            row[: min(len(floats), len(row))] = floats[: len(row)]
        elif topic == self.plan.command_topic:
            if stream.namemap is None and self.statemap is not None:
                stream.namemap = _NameMap(self.statemap.joints)
            if stream.namemap is not None:
                stream.namemap.fill(row, message.name, message.effort)
        else:
            row[: min(len(message.position), len(row))] = message.position[: len(row)]
        if msgtype != FLOAT_ARRAY_TYPE:
            stream.stamps.put(stamp_to_nanoseconds(message.header.stamp.sec, message.header.stamp.nanosec))
        stream.logs.put(log_time)

    def _new_stream(self, topic: str, msgtype: str, message: Any) -> _Stream:
        """Make a topic's stream, its width from the type (a point, the joints, or the first message's values)."""
        per_value = msgtype == JOINT_STATE_TYPE and topic != self.plan.command_topic
        if per_value:
            width = len(message.position)
        elif msgtype in (WRENCH_TYPE, POINT_TYPE):
            width = 2
        else:
            width = len(self.statemap.joints) if self.statemap else 0
        size = self.bag.topics[topic].count
        stream = _Stream(topic, msgtype, _Rows(width, size), _Rows(None, size, np.int64), _Rows(None, size, np.int64))
        if per_value:
            stream.names = list(message.name)
        return stream

    def collected(self, messages: int) -> Collected:
        """Return what was gathered.

        Raises
        ------
        ConversionError
            If no joint state could be decoded.
        """
        if self.statemap is None:
            msg = f"no joint-state message on '{self.plan.joint_topic}' could be decoded in bag '{self.bag.path}'"
            raise ConversionError(msg)
        return Collected(
            joints=self.statemap.joints,
            state=self.state.array(),
            state_times=self.state_times.array(),
            streams={topic: stream.samples() for topic, stream in self.streams.items()},
            urdf=self.urdf,
            messages=messages,
            empty_name_lists=self.empty_name_lists,
            unknown_names=sorted(self.statemap.unknown),
            notes=list(self.bag.notes),
            skipped=dict(self.bag.skipped_messages),
            files=list(self.bag.files),
        )


def collect(
    bag: Bag, plan: TopicPlan, *, joints: Sequence[str] | None = None, progress: IO[str] | None = None
) -> Collected:
    """Read the planned topics in one pass, in log-time order.

    Parameters
    ----------
    bag : Bag
        The open bag.
    plan : TopicPlan
        What to read.
    joints : Sequence[str] | None, optional
        Joint names and their column order; by default as in the first joint state.
    progress : IO[str] | None, optional
        Where to draw a progress bar (for more than :data:`PROGRESS_MIN_MESSAGES` messages).

    Raises
    ------
    ConversionError
        If the first joint state has no joints, or none could be decoded.
    BagError
        If the bag turns out to be damaged while reading.
    """
    collector = _Collector(bag, plan, joints)
    total = sum(bag.topics[topic].count for topic in plan.wanted)
    bar = _Progress(total, progress if total > PROGRESS_MIN_MESSAGES else None)
    showing = bar.stream is not None
    joint_topic = plan.joint_topic
    # Joint states of one repeated layout in the joints' own order skip rosbags' decoder (cdr.JointStateLayout).
    layout = JointStateLayout() if bag.standard(JOINT_STATE_TYPE) else None
    read = 0
    for read, (topic, msgtype, log_time, data) in enumerate(bag.raw_messages(bag.decodable(plan.wanted)), start=1):
        if showing:
            bar.update(read)
        if topic == joint_topic and layout is not None and (values := layout.values(data)) is not None:
            collector.fast_state(values, log_time)
            continue
        message = bag.decode(topic, msgtype, data)
        if message is None:
            continue
        if topic != joint_topic:
            collector.other(topic, msgtype, log_time, message)
            continue
        collector.joint_state(message, log_time)
        if layout is not None:
            layout = collector.learn(layout, data, message)
    bar.finish()
    return collector.collected(read)


# ----------------------------------------------------------------------------- stage 3: align


# Header stamps before 1973 are simulated time (a simulator's clock starts at 0), not the wall clock.
WALL_CLOCK_NS = 100_000_000 * NANOSECONDS


def resolve_times(stamps: NDArray[np.int64], logs: NDArray[np.int64], header: bool) -> tuple[NDArray[np.int64], int]:
    """Return one topic's message times and how many fell back from the header stamp to log time.

    With ``header``, a zero stamp means "not set" on a topic stamped with the wall
    clock (or never stamped) and falls back to the message's log time; on a topic
    stamped with simulated time (every non-zero stamp before 1973) zero is its first
    instant and is kept. Without ``header`` the log times are the times.
    """
    if not header:
        return logs, 0
    unset = stamps == 0
    if not unset.any():
        return stamps, 0
    stamped = stamps[~unset]
    if stamped.size and int(stamped.max()) < WALL_CLOCK_NS:
        return stamps, 0
    return np.where(unset, logs, stamps), int(np.count_nonzero(unset))


def _hold(event_times: NDArray[np.int64], values: NDArray[np.float64], query: NDArray[Any], side: str) -> Any:
    """Zero-order hold: for each query time the latest event at (``right``) or strictly before (``left``) it."""
    order = np.argsort(event_times, kind="stable")
    times = event_times[order]
    index = np.searchsorted(times, query, side=side) - 1  # type: ignore[call-overload]
    shape = (len(query), *values.shape[1:])
    out = np.full(shape, np.nan)
    have = index >= 0
    out[have] = values[order[index[have]]]
    return out


class _Timeline:
    """The frames' times and every stream's on one clock, and the holds of a stream onto the frames."""

    def __init__(self, collected: Collected, header: bool) -> None:
        self.header = header
        self.logs = collected.state_times[:, 1]
        self.stamps, self.fallbacks = resolve_times(collected.state_times[:, 0], self.logs, header)
        self.times: dict[str, NDArray[np.int64]] = {}
        for name, stream in collected.streams.items():
            if stream.msgtype != FLOAT_ARRAY_TYPE:
                self.times[name], fell = resolve_times(stream.stamps, stream.logs, header)
                self.fallbacks += fell
        self.next_logs = np.append(self.logs[1:], np.iinfo(np.int64).max)

    def stamped(self, stream: Samples) -> NDArray[np.float64]:
        """Hold a stream stamped with the state it was computed from (commands, controller channels).

        With header stamps, the latest sample stamped at or before each frame's time;
        else (or for a type without a header) the latest sample logged before the next
        frame was logged.
        """
        if self.header and stream.msgtype != FLOAT_ARRAY_TYPE:
            return _hold(self.times[stream.topic], stream.values, self.stamps, "right")
        return _hold(stream.logs, stream.values, self.next_logs, "left")

    def measured(self, stream: Samples) -> NDArray[np.float64]:
        """Hold a measured stream (the wrench): its latest sample at or before each frame's time."""
        times, query = (self.times[stream.topic], self.stamps) if self.header else (stream.logs, self.logs)
        return _hold(times, stream.values, query, "right")


@dataclass
class Aligned:
    """The log's arrays and what describes them.

    Attributes
    ----------
    arrays : dict[str, NDArray]
        The channels (``q``, ``dq``, ``tau``, ``ext_force``, controller channels), their
        ``valid_<channel>`` masks and ``time`` (seconds since :attr:`origin`), in file order.
    channel_meta : dict[str, dict[str, Any]]
        Unit, label and columns per channel.
    effort : dict[str, Any]
        Where ``tau`` comes from and how it is timed.
    controller : dict[str, str]
        Log channel to topic, for the controller channels written.
    masked : dict[str, int]
        Masked values per channel.
    stamps : NDArray[np.int64]
        Frame times (ns).
    origin : int
        The first frame's time (ns).
    fallbacks : int
        Header stamps that fell back to log time.
    """

    arrays: dict[str, NDArray[Any]]
    channel_meta: dict[str, dict[str, Any]]
    effort: dict[str, Any]
    controller: dict[str, str]
    masked: dict[str, int]
    stamps: NDArray[np.int64]
    origin: int
    fallbacks: int


def align(collected: Collected, plan: TopicPlan, *, header: bool) -> Aligned:
    """Hold every stream onto the joint states' times: the log's channels, masks and time axis.

    ``tau`` is the commands held at each frame when commands were recorded (see
    :meth:`_Timeline.stamped`), else the joint states' effort; ``ext_force`` is the
    wrench held at each frame; each controller channel is held as the commands are.

    Parameters
    ----------
    collected : Collected
        The pass's output.
    plan : TopicPlan
        The topics read.
    header : bool
        Header stamps as the clock (a zero stamp falling back to log time, see
        :func:`resolve_times`); else log time.
    """
    timeline = _Timeline(collected, header)
    span = len(collected.joints)
    block = collected.state
    arrays: dict[str, NDArray[Any]] = {
        key: block[:, index * span : (index + 1) * span] for index, key in enumerate(("q", "dq", "tau"))
    }
    commands = collected.streams.get(plan.command_topic) if plan.command_topic else None
    measured = commands is not None and bool(np.isfinite(arrays["tau"]).any())
    if commands is not None:
        if measured:  # the joint states' own effort, kept beside the commands (identify compares the two)
            arrays["measured_effort"] = arrays["tau"]
        arrays["tau"] = timeline.stamped(commands)
    if plan.wrench_topic and plan.wrench_topic in collected.streams:
        arrays["ext_force"] = timeline.measured(collected.streams[plan.wrench_topic])
    channel_meta: dict[str, dict[str, Any]] = {
        "q": {"unit": "rad", "label": "joint angle", "columns": collected.joints},
        "dq": {"unit": "rad/s", "label": "joint velocity", "columns": collected.joints},
        "tau": {"unit": "N*m", "label": "joint torque", "columns": collected.joints},
    }
    if "ext_force" in arrays:
        channel_meta["ext_force"] = {"unit": "N", "label": "external tip force", "columns": ["fx", "fy"]}
    if measured:
        channel_meta["measured_effort"] = {
            "unit": "N*m",
            "label": "joint states' effort (applied until the frame)",
            "columns": collected.joints,
        }
    used: dict[str, str] = {}
    for channel, topic in plan.controller.items():
        if topic in collected.streams:
            name, arrays[name], channel_meta[name] = _controller_channel(channel, collected.streams[topic], timeline)
            used[name] = topic
    masked: dict[str, int] = {}
    for key in list(arrays):
        valid = np.isfinite(arrays[key])
        arrays[f"valid_{key}"] = valid
        masked[key] = int(valid.size - np.count_nonzero(valid))
    origin = int(timeline.stamps[0])
    arrays["time"] = (timeline.stamps - origin) / NANOSECONDS
    effort = _effort(plan, header, from_commands=commands is not None)
    if measured:
        effort["measured"] = {"channel": "measured_effort", "topic": plan.joint_topic, "timing": "applied_until_frame"}
    return Aligned(arrays, channel_meta, effort, used, masked, timeline.stamps, origin, timeline.fallbacks)


def _controller_channel(
    channel: str, stream: Samples, timeline: _Timeline
) -> tuple[str, NDArray[np.float64], dict[str, Any]]:
    """Return a controller channel's log name, values held onto the frames, and description.

    The log name is the channel's, or ``controller_<channel>`` for one that would
    clash with the log's own (``q``, ``valid_q``...). A JointState channel with the
    single name of its channel is one value per frame, shape ``(N,)``.
    """
    name = channel if channel not in _RESERVED and not channel.startswith("valid_") else f"controller_{channel}"
    held = timeline.stamped(stream)
    if stream.msgtype == JOINT_STATE_TYPE and stream.names == [channel] and held.shape[1] == 1:
        held = held[:, 0]
    columns = ["x", "y"] if stream.msgtype == POINT_TYPE else (stream.names or [])
    return name, held, {"label": f"controller {channel}", "columns": columns}


def _effort(plan: TopicPlan, header: bool, *, from_commands: bool) -> dict[str, Any]:
    """Describe ``tau``: from the commands (applied from the frame on) or the joint states' effort (until it)."""
    effort: dict[str, Any] = {"kind": "joint_torque", "unit": "N*m"}
    if not from_commands:
        return effort | {
            "source": "joint_states",
            "topic": plan.joint_topic,
            "type": plan.joint_type,
            "timing": "applied_until_frame",
            "alignment": "effort field as recorded: the torque applied over the step that ended at the frame",
        }
    timing = (
        "command stamped with the state it was computed from, held at or before each state's stamp"
        if header and plan.command_type == JOINT_STATE_TYPE
        else "latest command logged before the next state was logged"
    )
    return effort | {
        "source": "commands",
        "topic": plan.command_topic,
        "type": str(plan.command_type),
        "auto_detected": plan.command_auto,
        "timing": "applied_from_frame",
        "alignment": timing,
    }


# ----------------------------------------------------------------------------- stage 4: the skeleton


def resolve_skeleton(
    joints: Sequence[str], *, arm: ArmSetup | None, urdf: str | None, description: str | None
) -> tuple[skelarm.Skeleton | None, str, list[str]]:
    """Return the arm to embed, where it came from (``extra.skeleton_source``), and notes.

    Parameters
    ----------
    joints : Sequence[str]
        The log's joints.
    arm : ArmSetup | None
        A scenario's arm (``--scenario``); it must have as many joints.
    urdf : str | None
        The recorded ``robot_description``, used when no scenario is given; one that
        is not a skelarm arm, or has another number of joints, is left out with a note.
    description : str | None
        The topic it was recorded on.

    Raises
    ------
    ConversionError
        If the scenario's arm has another number of joints.
    """
    if arm is not None:
        if arm.num_joints != len(joints):
            msg = (
                f"scenario '{arm.path}' has {arm.num_joints} joints but the bag has {len(joints)} "
                f"({list(joints)}); pass the scenario of this arm"
            )
            raise ConversionError(msg)
        return arm.skeleton, f"scenario {arm.path}", []
    if urdf is None:
        return None, "none", []
    try:
        skeleton, urdf_joints = skeleton_from_urdf(urdf)
    except URDFError as error:
        return None, "none", [f"robot_description could not be read as a skelarm arm ({error}); no skeleton embedded"]
    if len(urdf_joints) != len(joints):
        return None, "none", [f"robot_description has joints {urdf_joints}, the states {list(joints)}; not embedded"]
    return skeleton, f"robot_description on {description}", []


# ----------------------------------------------------------------------------- stage 5: the metadata


def log_extra(
    plan: TopicPlan, collected: Collected, aligned: Aligned, *, clock: str, skeleton_source: str, notes: list[str]
) -> dict[str, Any]:
    """Return the log's ``[extra]`` table: the conventions, topics, sources and counts of the conversion.

    Parameters
    ----------
    plan, collected, aligned
        The stages' outputs.
    clock : str
        ``header`` or ``log``.
    skeleton_source : str
        Where the embedded arm came from (``none`` when there is none).
    notes : list[str]
        Things a user should know (from the bag and the skeleton).
    """
    order = np.diff(aligned.stamps)
    topics: dict[str, Any] = {"joint_states": {"name": plan.joint_topic, "type": plan.joint_type}}
    if plan.command_topic:
        topics["commands"] = {"name": plan.command_topic, "type": str(plan.command_type)}
    if plan.wrench_topic:
        topics["wrench"] = {"name": plan.wrench_topic, "type": WRENCH_TYPE, "auto_detected": plan.wrench_auto}
    if aligned.controller:
        topics["controller"] = aligned.controller
    return {
        "tool": TOOL,
        "tool_version": __version__,
        "joint_names": collected.joints,
        "clock": clock,
        "time_origin_ns": aligned.origin,
        "time_unit": "s since time_origin_ns",
        "effort": aligned.effort,
        "valid_masks": "valid_<channel>: true where the value was recorded and finite; missing values are NaN",
        "skeleton_source": skeleton_source,
        "topics": topics,
        "sources": [
            {"path": str(path.resolve()), "sha256": sha256(path)} for path in collected.files if path.is_file()
        ],
        "counts": {
            "messages_read": collected.messages,
            "stamp_fallbacks": aligned.fallbacks,
            "empty_name_lists": collected.empty_name_lists,
            "frames": len(aligned.stamps),
            "out_of_order": int(np.count_nonzero(order < 0)),
            "duplicate_stamps": int(np.count_nonzero(order == 0)),
            "skipped_undecodable": collected.skipped,
            "unknown_joint_names": collected.unknown_names,
            "masked": aligned.masked,
        },
        "notes": notes,
    }


# ----------------------------------------------------------------------------- conversion


@dataclass
class Summary:
    """What a conversion did.

    Attributes
    ----------
    output : Path
        The written log.
    frames : int
        Samples (joint-state messages) written.
    messages : int
        Messages read from the bag.
    seconds : float
        Wall time of the conversion.
    joints : list[str]
        Joint names, in column order.
    masked : dict[str, int]
        Masked (missing) values per channel.
    extra : dict[str, Any]
        The ``[extra]`` table written.
    """

    output: Path
    frames: int
    messages: int
    seconds: float
    joints: list[str]
    masked: dict[str, int]
    extra: dict[str, Any]

    def text(self) -> str:
        """Return a few lines for the terminal."""
        rate = self.messages / self.seconds if self.seconds > 0 else float("inf")
        masked = ", ".join(f"{k}: {v}" for k, v in self.masked.items() if v) or "nothing"
        counts = self.extra["counts"]
        return (
            f"wrote {self.output}: {self.frames} frames of joints {self.joints}\n"
            f"read {self.messages} messages in {self.seconds:.2f} s ({rate:.0f} msgs/s); "
            f"clock {self.extra['clock']}, tau from {self.extra['effort']['source']}\n"
            f"masked values: {masked}; stamp fallbacks to log time: {counts['stamp_fallbacks']}, "
            f"out-of-order stamps: {counts['out_of_order']}, duplicate stamps: {counts['duplicate_stamps']}"
        )


def sha256(path: Path) -> str:
    """Return the sha256 of a file, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class _Progress:
    """A one-line progress bar on a terminal's stderr."""

    def __init__(self, total: int, stream: IO[str] | None) -> None:
        self.total = total
        self.stream = stream
        self.step = max(total // 50, 1)

    def update(self, count: int) -> None:
        if self.stream is not None and count % self.step == 0:
            self.stream.write(f"\rbag_to_log: {100 * count // self.total:3d}% ({count}/{self.total} messages)")
            self.stream.flush()

    def finish(self) -> None:
        if self.stream is not None:
            self.stream.write("\n")


def bag_to_log(
    bag_path: str | Path,
    output: str | Path,
    *,
    joint_topic: str | None = None,
    command_topic: str | None = None,
    wrench_topic: str | None = None,
    joints: Sequence[str] | None = None,
    clock: str = "header",
    scenario: str | Path | None = None,
    recover: bool = False,
    progress: IO[str] | None = None,
) -> Summary:
    """Convert a bag into a skelarm ``.sklog.npz``.

    Parameters
    ----------
    bag_path : str | Path
        A rosbag2 directory, a ``.db3`` / ``.mcap`` file or a ROS 1 ``.bag``.
    output : str | Path
        The log to write.
    joint_topic : str | None, optional
        The JointState topic; by default the only one (see :func:`choose_joint_topic`).
    command_topic : str | None, optional
        Effort commands (JointState ``effort`` or Float64MultiArray in joint order) for
        ``tau``; by default ``joint_commands`` or ``effort_controller/commands`` next to
        the joint topic when present, else ``tau`` is the joint states' effort.
    wrench_topic : str | None, optional
        WrenchStamped tip force for ``ext_force``; by default ``tip_wrench`` next to the
        joint topic when present.
    joints : Sequence[str] | None, optional
        Joint names and their column order; by default as in the first message.
    clock : str, optional
        ``header`` (stamps, a zero stamp falls back to log time) or ``log``.
    scenario : str | Path | None, optional
        Scenario or robot TOML whose skeleton is embedded; by default the bag's
        ``robot_description`` when recorded.
    recover : bool, optional
        Read a truncated MCAP file up to its damage.
    progress : IO[str] | None, optional
        Where to draw a progress bar (for bags of more than a few thousand messages).

    Returns
    -------
    Summary
        What was written.

    Raises
    ------
    BagError, ConversionError, ScenarioError
        With one sentence naming the problem; no output is left behind.
    """
    started = time.perf_counter()
    if clock not in CLOCKS:
        msg = f"unknown clock '{clock}'; choose 'header' (message stamps) or 'log' (recording time)"
        raise ConversionError(msg)
    output = Path(output)
    arm = load_arm(scenario) if scenario else None
    with open_bag(bag_path, recover=recover) as bag:
        plan = plan_topics(
            bag,
            joint_topic=joint_topic,
            command_topic=command_topic,
            wrench_topic=wrench_topic,
            read_description=arm is None,
        )
        collected = collect(bag, plan, joints=joints, progress=progress)
    aligned = align(collected, plan, header=clock == "header")
    skeleton, skeleton_source, notes = resolve_skeleton(
        collected.joints, arm=arm, urdf=collected.urdf, description=plan.description
    )
    extra = log_extra(
        plan, collected, aligned, clock=clock, skeleton_source=skeleton_source, notes=[*collected.notes, *notes]
    )
    if arm is not None:  # the scenario's tables travel with the log, as a skelarm run's do (plot draws its task)
        extra["source_config"] = arm.config
    try:
        write_log(
            output, aligned.arrays, skeleton=skeleton, producer=TOOL, channel_meta=aligned.channel_meta, extra=extra
        )
    except LogFileError as error:
        raise ConversionError(str(error)) from None
    return Summary(
        output=output,
        frames=len(aligned.stamps),
        messages=collected.messages,
        seconds=time.perf_counter() - started,
        joints=collected.joints,
        masked=aligned.masked,
        extra=extra,
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bag_to_log",
        description="Convert a rosbag2 (sqlite3/MCAP) or ROS 1 bag into a skelarm .sklog.npz log.",
    )
    parser.add_argument("bag", help="rosbag2 directory, .db3 or .mcap file, or ROS 1 .bag")
    parser.add_argument("-o", "--output", required=True, help="the .sklog.npz to write")
    parser.add_argument("--joint-topic", help="sensor_msgs/JointState topic (default: the only one)")
    parser.add_argument(
        "--command-topic",
        help="effort commands for tau (JointState effort or Float64MultiArray; "
        "default: joint_commands or effort_controller/commands next to the joint topic)",
    )
    parser.add_argument("--wrench-topic", help="WrenchStamped tip force (default: tip_wrench next to the joint topic)")
    parser.add_argument("--joints", help="joint names in column order, comma separated (default: the first message's)")
    parser.add_argument("--clock", choices=CLOCKS, default="header", help="header stamps (default) or log time")
    parser.add_argument("--scenario", help="scenario or robot TOML whose skeleton to embed")
    parser.add_argument("--recover", action="store_true", help="read a truncated MCAP up to its damage")
    add_force_option(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``bag_to_log`` from the command line; returns the exit code."""
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    joints = split_names(args.joints) or None
    if args.joints is not None and not joints:
        print("bag_to_log: error: --joints is empty; give joint names separated by commas", file=sys.stderr)
        return 2
    progress = sys.stderr if sys.stderr.isatty() else None
    try:
        check_new(args.output, args.force)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            summary = bag_to_log(
                args.bag,
                args.output,
                joint_topic=args.joint_topic,
                command_topic=args.command_topic,
                wrench_topic=args.wrench_topic,
                joints=joints,
                clock=args.clock,
                scenario=args.scenario,
                recover=args.recover,
                progress=progress,
            )
    except (BagError, ConversionError, ScenarioError, ValueError) as error:  # ValueError: check_new's sentence
        print(f"bag_to_log: error: {error}", file=sys.stderr)
        return 1
    for warning in caught:
        print(f"bag_to_log: warning: {warning.message}", file=sys.stderr)
    for note in summary.extra["notes"]:
        print(f"bag_to_log: note: {note}", file=sys.stderr)
    print(summary.text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
