# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Stage 2 of ``bag_to_log``: one streaming pass over the planned topics into growing arrays.

Joint states of one repeated layout are read straight from their bytes by
:class:`skelarm_ros.bags.cdr.JointStateLayout`; commands logged before the first state
are kept for it. What the pass has to say (joint states without names) it returns as
values (:attr:`Collected.said`), as every stage does.

This module does not import rclpy.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from skelarm_ros.bags.bag_to_log.samples import ConversionError, NameMap, Rows, Samples, Stream
from skelarm_ros.bags.cdr import JointStateLayout
from skelarm_ros.interface import (
    EFFORT,
    FLOAT_ARRAY_TYPE,
    JOINT_STATE_TYPE,
    NANOSECONDS,
    POINT_TYPE,
    POSITION,
    VELOCITY,
    WRENCH_TYPE,
    array_command_kind,
    default_joint_names,
    stamp_to_nanoseconds,
)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from numpy.typing import NDArray

    from skelarm_ros.bags.bag_to_log.topics import TopicPlan
    from skelarm_ros.bags.reader import Bag

PROGRESS_MIN_MESSAGES = 5000
EARLY_COMMANDS = 1000  # commands logged before the first state that are kept for it (the newest)
COMMAND_FIELDS = (EFFORT, POSITION, VELOCITY)
"""The fields a JointState command may carry, in the order one is chosen: the first its messages carry."""


def command_kind(topic: str, message: Any) -> str:
    """Return what a command topic's message carries: ``effort``, or a servo's ``position`` or ``velocity`` goals.

    A ``Float64MultiArray`` by its topic (``<kind>_controller/commands``, effort for any other); a
    JointState by the first of :data:`COMMAND_FIELDS` it carries (empty when it carries none).
    """
    if not hasattr(message, "name"):
        return array_command_kind(topic)
    return next((kind for kind in COMMAND_FIELDS if len(getattr(message, kind))), "")


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
        The bag's notes (the log records them).
    said : list[str]
        What a user should know that the log does not record: joint states without names,
        read in position order.
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
    said: list[str]
    skipped: dict[str, int]
    files: list[Path]


class _Collector:
    """The pass's state: the joint states' rows, the other topics' streams, and the commands that came early."""

    def __init__(
        self, bag: Bag, plan: TopicPlan, joints: Sequence[str] | None, command_joints: Sequence[str] = ()
    ) -> None:
        self.bag = bag
        self.plan = plan
        self.joints = joints
        self.command_joints = list(command_joints)
        self.capacity = bag.topics[plan.joint_topic].count
        self.statemap: NameMap | None = None
        self.state = Rows(0)  # replaced at the first state: q, dq, tau side by side, one row per message
        self.span = 0  # joints per quantity
        self.state_times = Rows(2, self.capacity, np.int64)  # header stamp, log time
        self.streams: dict[str, Stream] = {}
        self.urdf: str | None = None
        self.empty_name_lists = 0
        self.said: list[str] = []
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

    def _first_state(self, message: Any) -> NameMap:
        """Fix the joints from the first state (or ``joints``), then take the commands that came before it."""
        first = list(message.name)
        count = len(message.position)
        chosen = list(self.joints or first or default_joint_names(count))
        if not first and (not self.joints or len(chosen) == count):
            how = (
                f"--joints names their positions in order: {', '.join(chosen)}"
                if self.joints
                else f"naming the joints {chosen} in position order (pass --joints to name them)"
            )
            self.said.append(f"joint states on '{self.plan.joint_topic}' have an empty name list; {how}")
        if not chosen:
            msg = f"the first message on '{self.plan.joint_topic}' has no joints; choose another topic"
            raise ConversionError(msg)
        self.statemap = NameMap(chosen, unnamed_as=() if first else chosen)
        self.state = Rows(3 * len(chosen), self.capacity)
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
            if len(floats):
                self._array_names(stream, len(floats)).fill(row, [], floats)
                stream.carried += 1
            stream.kind = stream.kind or command_kind(topic, message)
        elif topic == self.plan.command_topic:
            if stream.namemap is None and self.statemap is not None:
                stream.namemap = NameMap(self.statemap.joints, self.statemap.unnamed_as)
            stream.kind = stream.kind or command_kind(topic, message)
            if stream.namemap is not None and stream.kind:
                values = getattr(message, stream.kind)
                stream.namemap.fill(row, message.name, values)
                stream.carried += len(values) > 0
        else:
            row[: min(len(message.position), len(row))] = message.position[: len(row)]
        if msgtype != FLOAT_ARRAY_TYPE:
            stream.stamps.put(stamp_to_nanoseconds(message.header.stamp.sec, message.header.stamp.nanosec))
        stream.logs.put(log_time)

    def _array_names(self, stream: Stream, count: int) -> NameMap:
        """Return how an array's values (no names) go into the joints' columns: ``command_joints``, or joint order.

        Raises
        ------
        ConversionError
            If the array has another count of values than the names given (or, without them, the joints).
        """
        if stream.namemap is not None and len(stream.namemap.unnamed_as) == count:
            return stream.namemap
        assert self.statemap is not None  # a command waits for the first state (other)
        joints = self.statemap.joints
        names = self.command_joints or joints
        if len(names) != count:
            given = "--command-joints names" if self.command_joints else "the joint states have"
            msg = (
                f"'{stream.topic}' carries {count} values per message (a Float64MultiArray, no names) but {given} "
                f"{len(names)} joints {names}; pass --command-joints with the names of its values in their order (the "
                "controller's command_joints)"
            )
            raise ConversionError(msg)
        stream.namemap = NameMap(joints, unnamed_as=names)
        return stream.namemap

    def _new_stream(self, topic: str, msgtype: str, message: Any) -> Stream:
        """Make a topic's stream, its width from the type (a point, the joints, or the first message's values)."""
        per_value = msgtype == JOINT_STATE_TYPE and topic != self.plan.command_topic
        if per_value:
            width = len(message.position)
        elif msgtype in (WRENCH_TYPE, POINT_TYPE):
            width = 2
        else:
            width = len(self.statemap.joints) if self.statemap else 0
        size = self.bag.topics[topic].count
        stream = Stream(topic, msgtype, Rows(width, size), Rows(None, size, np.int64), Rows(None, size, np.int64))
        if per_value:
            stream.names = list(message.name)
        return stream

    def collected(self, messages: int) -> Collected:
        """Return what was gathered.

        A command topic found beside the joint states that carries no effort for the
        log's joints is left out with a note (``tau`` is then the joint states' effort).

        Raises
        ------
        ConversionError
            If no joint state could be decoded, ``joints`` names a joint the joint states
            never carry, or the command topic given carries no effort for the log's joints.
        """
        if self.statemap is None:
            msg = f"no joint-state message on '{self.plan.joint_topic}' could be decoded in bag '{self.bag.path}'"
            raise ConversionError(msg)
        self._check_joints(self.statemap)
        self._check_commands(self.statemap)
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
            said=list(self.said),
            skipped=dict(self.bag.skipped_messages),
            files=list(self.bag.files),
        )

    def _check_joints(self, statemap: NameMap) -> None:
        """Refuse joints asked for (``--joints``) that no joint state carries: their columns would be NaN only."""
        missing = statemap.never_carried
        if not missing:
            return
        topic = self.plan.joint_topic
        if self.empty_name_lists == len(self.state_times):  # no state named its joints: --joints names positions
            count = statemap.unnamed
            msg = (
                f"--joints gives {len(statemap.joints)} names but the joint states on '{topic}' carry no names and "
                f"{count} positions; give {count} names, one per position in order"
            )
        else:
            msg = (
                f"--joints names {', '.join(missing)}, which the joint states on '{topic}' never carry "
                f"(they carry {', '.join(statemap.carried)}); choose names from those"
            )
        raise ConversionError(msg)

    def _check_commands(self, statemap: NameMap) -> None:
        """Refuse a given command topic without commands for the log's joints; leave a found one out with a note.

        A JointState command carries effort, or a servo's position or velocity goals (the first
        of those fields its messages carry).
        """
        topic = self.plan.command_topic
        stream = self.streams.get(topic) if topic else None
        if topic is None or stream is None:
            return
        if stream.carried == 0:
            what = "empty data" if stream.msgtype == FLOAT_ARRAY_TYPE else "no effort, position or velocity"
        elif stream.namemap is not None and len(stream.namemap.never_carried) == len(statemap.joints):
            what = f"{stream.kind} for other joints only ({', '.join(stream.namemap.carried)})"
        else:
            return
        problem = f"'{topic}' carries no commands for the joints {statemap.joints}: its messages have {what}"
        if self.plan.command_auto:
            del self.streams[topic]
            self.bag.notes.append(f"{problem}; tau is the joint states' effort")
            return
        msg = (
            f"--command-topic {problem}; choose a topic of effort commands or a servo's goals, "
            "or drop --command-topic to take tau from the joint states' effort"
        )
        raise ConversionError(msg)


def collect(
    bag: Bag,
    plan: TopicPlan,
    *,
    joints: Sequence[str] | None = None,
    command_joints: Sequence[str] = (),
    progress: IO[str] | None = None,
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
    command_joints : Sequence[str], optional
        The joints of a Float64MultiArray command's values, in their order; by default the joints'.
    progress : IO[str] | None, optional
        Where to draw a progress bar (for more than :data:`PROGRESS_MIN_MESSAGES` messages).

    Raises
    ------
    ConversionError
        If the first joint state has no joints, or none could be decoded, or an array command's count
        is not that of ``command_joints`` (by default the joints).
    BagError
        If the bag turns out to be damaged while reading.
    """
    collector = _Collector(bag, plan, joints, command_joints)
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
