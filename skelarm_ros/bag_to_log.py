# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""``bag_to_log``: a bag's joint states, commands and wrench as a skelarm ``.sklog.npz``.

The bag is streamed once with :mod:`skelarm_ros.bags`; values go straight into
numpy arrays grown in chunks, so memory follows the output arrays, not the bag.
Everything else the log needs to be understood later (joint names and order, the
clock, the effort's kind, unit, source and timing, topics and types, the source
files with their sha256, counts of repaired or masked samples) is written into the
log's ``[extra]`` table. Missing values are NaN and marked ``False`` in the
``valid_<channel>`` masks; no sample is deleted. See ``docs/bags.md``.

This module does not import rclpy.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
import tempfile
import time
import warnings
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np
import skelarm
from skelarm.recording import dump_toml

from skelarm_ros import __version__
from skelarm_ros.bags import Bag, BagError, open_bag, printable
from skelarm_ros.cdr import JointStateLayout
from skelarm_ros.interface import NANOSECONDS, default_joint_names
from skelarm_ros.scenario import ScenarioError, load_arm
from skelarm_ros.urdf import URDFError, skeleton_from_urdf

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

JOINT_STATE = "sensor_msgs/msg/JointState"
FLOAT_ARRAY = "std_msgs/msg/Float64MultiArray"
WRENCH = "geometry_msgs/msg/WrenchStamped"
POINT = "geometry_msgs/msg/PointStamped"
STRING = "std_msgs/msg/String"
COMMAND_TOPICS = ("joint_commands", "effort_controller/commands")  # auto-detected, in this order
WRENCH_TOPIC = "tip_wrench"
CONTROLLER_PREFIX = "controller/"

CLOCKS = ("header", "log")
PROGRESS_MIN_MESSAGES = 5000
EARLY_COMMANDS = 1000  # commands logged before the first state that are kept for it (the newest)
_CHUNK = 65536
_RESERVED = ("time", "q", "dq", "tau", "ext_force")
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
    """Samples of one topic: values and their times (ns)."""

    topic: str
    msgtype: str
    values: _Rows
    stamps: _Rows
    logs: _Rows
    names: list[str] = field(default_factory=list)
    namemap: _NameMap | None = None


def _stamp(message: Any) -> int:
    stamp = message.header.stamp
    return int(stamp.sec) * NANOSECONDS + int(stamp.nanosec)


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


# ----------------------------------------------------------------------------- skeleton from URDF


# ----------------------------------------------------------------------------- topic choice


def _sibling(topic: str, name: str) -> str:
    """``name`` in the namespace of ``topic`` (``/arm1/joint_states`` -> ``/arm1/<name>``)."""
    return topic.rsplit("/", 1)[0] + "/" + name


def _listing(bag: Bag, topics: Sequence[str]) -> str:
    return ", ".join(f"{t} ({bag.topics[t].count} messages)" for t in topics)


def _check_topic(bag: Bag, topic: str, types: Sequence[str], option: str) -> str:
    """Return ``topic`` (a leading ``/`` added) after checking it exists and has an accepted type."""
    name = topic if topic.startswith("/") else "/" + topic
    if name not in bag.topics:
        msg = f"bag '{bag.path}' has no topic '{name}' ({option}); its topics are {_listing(bag, list(bag.topics))}"
        raise ConversionError(msg)
    have = bag.topics[name].msgtype
    if have not in types:
        msg = f"topic '{name}' ({option}) is {have}, not {' or '.join(types)}; choose a topic of that type"
        raise ConversionError(msg)
    return name


def choose_joint_topic(bag: Bag, exclude: Sequence[str] = ()) -> str:
    """Choose the bag's joint-state topic: the only JointState topic (or the only one named ``joint_states``).

    Raises
    ------
    ConversionError
        If there is none, or several (the message lists them with their counts).
    """
    candidates = [
        name
        for name, info in bag.topics.items()
        if info.msgtype == JOINT_STATE
        and info.count > 0
        and name not in exclude
        and name.rsplit("/", 2)[-2:-1] != ["controller"]
        and name.rsplit("/", 1)[-1] != "joint_commands"
    ]
    named = [name for name in candidates if name.rsplit("/", 1)[-1] == "joint_states"]
    if len(named) == 1:
        return named[0]
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        msg = (
            f"bag '{bag.path}' has no {JOINT_STATE} topic with messages; record the arm's joint states "
            "(or name another topic with --joint-topic)"
        )
        raise ConversionError(msg)
    msg = (
        f"bag '{bag.path}' has {len(candidates)} {JOINT_STATE} topics: {_listing(bag, candidates)}; "
        "choose one with --joint-topic"
    )
    raise ConversionError(msg)


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


def _printable_tree(value: Any) -> Any:
    """Return ``value`` (nested dicts and lists) with every string's control characters written out.

    Names, topics and notes can come from a damaged bag; TOML (and so the log's
    metadata) cannot hold raw control characters.
    """
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(str(key)): _printable_tree(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_printable_tree(item) for item in value]
    return value


def write_log(
    output: Path,
    arrays: dict[str, NDArray[Any]],
    *,
    skeleton: skelarm.Skeleton | None,
    producer: str,
    channel_meta: dict[str, dict[str, Any]],
    extra: dict[str, Any],
) -> None:
    """Write a ``.sklog.npz`` in skelarm's format atomically (temp file in the folder, then rename).

    Parameters
    ----------
    output : Path
        The log to write (replaced if it exists).
    arrays : dict[str, NDArray]
        ``time`` and one array per channel, first axis over frames.
    skeleton : skelarm.Skeleton | None
        The arm to embed.
    producer, channel_meta, extra
        The metadata :class:`skelarm.StateLog` stores.
    """
    meta: dict[str, Any] = {"schema_version": 1, "created_at": datetime.now(UTC).isoformat(), "producer": producer}
    if skeleton is not None:
        meta["skeleton"] = skeleton.to_dict()
    if channel_meta:
        meta["channels"] = channel_meta
    meta["extra"] = extra
    payload: dict[str, Any] = {**arrays, "__meta__": np.array(dump_toml(_printable_tree(meta)))}
    folder = output.resolve().parent
    if not folder.is_dir():
        msg = f"output folder '{folder}' does not exist; create it or choose another output path"
        raise ConversionError(msg)
    handle, temp = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "wb") as stream:
            np.savez(stream, **payload)
            stream.flush()
            os.fsync(stream.fileno())
        Path(temp).replace(output)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


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
    header = clock == "header"
    output = Path(output)
    arm = load_arm(scenario) if scenario else None
    with open_bag(bag_path, recover=recover) as bag:
        # ---- topics
        if joint_topic:
            joint_topic = _check_topic(bag, joint_topic, [JOINT_STATE], "--joint-topic")
        if command_topic:
            command_topic = _check_topic(bag, command_topic, [JOINT_STATE, FLOAT_ARRAY], "--command-topic")
        if not joint_topic:
            joint_topic = choose_joint_topic(bag, [command_topic] if command_topic else [])
        if bag.topics[joint_topic].count == 0:
            msg = f"joint-state topic '{joint_topic}' has no messages in bag '{bag.path}'; choose another"
            raise ConversionError(msg)
        command_auto = False
        if not command_topic:
            for name in COMMAND_TOPICS:
                candidate = _sibling(joint_topic, name)
                info = bag.topics.get(candidate)
                if info and info.msgtype in (JOINT_STATE, FLOAT_ARRAY) and info.count:
                    command_topic, command_auto = candidate, True
                    break
        wrench_auto = False
        if wrench_topic:
            wrench_topic = _check_topic(bag, wrench_topic, [WRENCH], "--wrench-topic")
        else:
            candidate = _sibling(joint_topic, WRENCH_TOPIC)
            info = bag.topics.get(candidate)
            if info and info.msgtype == WRENCH and info.count:
                wrench_topic, wrench_auto = candidate, True
        prefix = _sibling(joint_topic, CONTROLLER_PREFIX)
        controller = {
            name[len(prefix) :]: name
            for name, info in bag.topics.items()
            if name.startswith(prefix)
            and _CHANNEL_NAME.fullmatch(name[len(prefix) :])
            and info.msgtype in (POINT, JOINT_STATE)
        }
        description = next(
            (n for n, i in bag.topics.items() if n.endswith("robot_description") and i.msgtype == STRING), None
        )
        wanted = [t for t in (joint_topic, command_topic, wrench_topic, *controller.values()) if t]
        if description and arm is None:
            wanted.append(description)
        command_type = bag.topics[command_topic].msgtype if command_topic else None

        # ---- one pass
        capacity = bag.topics[joint_topic].count
        state = _Rows(0)  # replaced at the first state: q, dq, tau side by side, one row per message
        span = 0  # joints per quantity
        state_times = _Rows(2, capacity, np.int64)  # header stamp, log time
        statemap: _NameMap | None = None
        streams: dict[str, _Stream] = {}
        urdf: str | None = None
        counts = {"messages_read": 0, "stamp_fallbacks": 0, "empty_name_lists": 0}
        total = sum(bag.topics[t].count for t in wanted)
        bar = _Progress(total, progress if total > PROGRESS_MIN_MESSAGES else None)
        showing = bar.stream is not None

        def sample(topic: str, msgtype: str, log_time: int, message: Any) -> None:
            """Add one message of a topic other than the joint states to its stream."""
            stream = streams.get(topic)
            if stream is None:
                width = 2 if msgtype in (WRENCH, POINT) else (len(statemap.joints) if statemap else 0)
                if msgtype == JOINT_STATE and topic != command_topic:
                    width = len(message.position)
                size = bag.topics[topic].count
                stream = _Stream(
                    topic, msgtype, _Rows(width, size), _Rows(None, size, np.int64), _Rows(None, size, np.int64)
                )
                if msgtype == JOINT_STATE and topic != command_topic:
                    stream.names = list(message.name)
                streams[topic] = stream
            row = stream.values.row()
            if msgtype == WRENCH:
                row[0] = message.wrench.force.x
                row[1] = message.wrench.force.y
            elif msgtype == POINT:
                row[0] = message.point.x
                row[1] = message.point.y
            elif msgtype == FLOAT_ARRAY:
                floats = message.data
                row[: min(len(floats), len(row))] = floats[: len(row)]
            elif topic == command_topic:
                if stream.namemap is None and statemap is not None:
                    stream.namemap = _NameMap(statemap.joints)
                if stream.namemap is not None:
                    stream.namemap.fill(row, message.name, message.effort)
            else:
                row[: min(len(message.position), len(row))] = message.position[: len(row)]
            if msgtype != FLOAT_ARRAY:
                stream.stamps.put(_stamp(message))
            stream.logs.put(log_time)

        # Commands logged before the first state (a recorder may take a command before the state it answers).
        early: deque[tuple[str, str, int, Any]] = deque(maxlen=EARLY_COMMANDS)
        read = 0
        # Joint states of one repeated layout in the joints' own order skip rosbags' decoder (cdr.JointStateLayout).
        layout = JointStateLayout() if bag.standard(JOINT_STATE) else None
        for read, (topic, msgtype, log_time, data) in enumerate(bag.raw_messages(bag.decodable(wanted)), start=1):
            if showing:
                bar.update(read)
            if topic == joint_topic and layout is not None and (values := layout.values(data)) is not None:
                state.row()[:] = values[2:]
                times = state_times.row()
                times[0] = values[0] * NANOSECONDS + values[1]
                times[1] = log_time
                continue
            message = bag.decode(topic, msgtype, data)
            if message is None:
                continue
            if topic == joint_topic:
                if statemap is None:
                    first = list(message.name)
                    if joints:
                        chosen = list(joints)
                    elif first:
                        chosen = first
                    else:
                        chosen = default_joint_names(len(message.position))
                        warnings.warn(
                            f"joint states on '{joint_topic}' have an empty name list; "
                            f"naming the joints {chosen} in position order (pass --joints to name them)",
                            stacklevel=2,
                        )
                    if not chosen:
                        msg = f"the first message on '{joint_topic}' has no joints; choose another topic"
                        raise ConversionError(msg)
                    statemap = _NameMap(chosen)
                    state = _Rows(3 * len(chosen), capacity)
                    span = len(chosen)
                    while early:
                        sample(*early.popleft())
                names = message.name
                if not names:
                    counts["empty_name_lists"] += 1
                row = state.row()
                statemap.fill(row[:span], names, message.position)
                statemap.fill(row[span : 2 * span], names, message.velocity)
                statemap.fill(row[2 * span :], names, message.effort)
                times = state_times.row()
                stamp = message.header.stamp
                times[0] = stamp.sec * NANOSECONDS + stamp.nanosec
                times[1] = log_time
                if layout is not None and statemap.joints == list(names):
                    layout.learn(data, message)
                    if layout.counts != (span, span, span):  # the fast path fills whole rows only
                        layout = JointStateLayout()
                continue
            if topic == description:
                urdf = urdf or str(message.data)
                continue
            if topic == command_topic and statemap is None:
                early.append((topic, msgtype, log_time, message))  # its state may be logged just after it
                continue
            sample(topic, msgtype, log_time, message)
        bar.finish()
        counts["messages_read"] = read
        if statemap is None:
            msg = f"no joint-state message on '{joint_topic}' could be decoded in bag '{bag.path}'"
            raise ConversionError(msg)
        notes = list(bag.notes)
        skipped = dict(bag.skipped_messages)
        files = list(bag.files)
        joint_type = bag.topics[joint_topic].msgtype

    # ---- align onto the state times
    state_time_rows = state_times.array()
    logs = state_time_rows[:, 1]
    stamps, fell = resolve_times(state_time_rows[:, 0], logs, header)
    counts["stamp_fallbacks"] += fell
    stream_times: dict[str, NDArray[np.int64]] = {}
    for name, stream in streams.items():
        if stream.msgtype != FLOAT_ARRAY:
            stream_times[name], fell = resolve_times(stream.stamps.array(), stream.logs.array(), header)
            counts["stamp_fallbacks"] += fell
    next_logs = np.append(logs[1:], np.iinfo(np.int64).max)
    block = state.array()
    arrays: dict[str, NDArray[Any]] = {
        key: block[:, index * span : (index + 1) * span] for index, key in enumerate(("q", "dq", "tau"))
    }

    def stamped_hold(stream: _Stream) -> NDArray[np.float64]:
        """Hold a stream stamped with the state it was computed from."""
        if header and stream.msgtype != FLOAT_ARRAY:
            return _hold(stream_times[stream.topic], stream.values.array(), stamps, "right")
        return _hold(stream.logs.array(), stream.values.array(), next_logs, "left")

    effort: dict[str, Any] = {"kind": "joint_torque", "unit": "N*m"}
    if command_topic and command_topic in streams:
        arrays["tau"] = stamped_hold(streams[command_topic])
        timing = (
            "command stamped with the state it was computed from, held at or before each state's stamp"
            if header and command_type == JOINT_STATE
            else "latest command logged before the next state was logged"
        )
        effort |= {
            "source": "commands",
            "topic": command_topic,
            "type": str(command_type),
            "auto_detected": command_auto,
            "timing": "applied_from_frame",
            "alignment": timing,
        }
    else:
        effort |= {
            "source": "joint_states",
            "topic": joint_topic,
            "type": joint_type,
            "timing": "applied_until_frame",
            "alignment": "effort field as recorded: the torque applied over the step that ended at the frame",
        }
    if wrench_topic and wrench_topic in streams:
        stream = streams[wrench_topic]
        times, query = (stream_times[wrench_topic], stamps) if header else (stream.logs.array(), logs)
        arrays["ext_force"] = _hold(times, stream.values.array(), query, "right")
    channel_meta: dict[str, dict[str, Any]] = {
        "q": {"unit": "rad", "label": "joint angle", "columns": statemap.joints},
        "dq": {"unit": "rad/s", "label": "joint velocity", "columns": statemap.joints},
        "tau": {"unit": "N*m", "label": "joint torque", "columns": statemap.joints},
    }
    if "ext_force" in arrays:
        channel_meta["ext_force"] = {"unit": "N", "label": "external tip force", "columns": ["fx", "fy"]}
    controller_used: dict[str, str] = {}
    for channel, topic in controller.items():
        if topic not in streams:
            continue
        stream = streams[topic]
        name = channel if channel not in _RESERVED and not channel.startswith("valid_") else f"controller_{channel}"
        held = stamped_hold(stream)
        if stream.msgtype == JOINT_STATE and stream.names == [channel] and held.shape[1] == 1:
            held = held[:, 0]
        arrays[name] = held
        controller_used[name] = topic
        columns = ["x", "y"] if stream.msgtype == POINT else (stream.names or [])
        channel_meta[name] = {"label": f"controller {channel}", "columns": columns}
    masked: dict[str, int] = {}
    for key in list(arrays):
        valid = np.isfinite(arrays[key])
        arrays[f"valid_{key}"] = valid
        masked[key] = int(valid.size - np.count_nonzero(valid))
    origin = int(stamps[0])
    arrays["time"] = (stamps - origin) / NANOSECONDS

    # ---- skeleton
    skeleton: skelarm.Skeleton | None = None
    skeleton_source = "none"
    if arm is not None:
        skeleton, skeleton_source = arm.skeleton, f"scenario {arm.path}"
        if arm.num_joints != len(statemap.joints):
            msg = (
                f"scenario '{arm.path}' has {arm.num_joints} joints but the bag has {len(statemap.joints)} "
                f"({statemap.joints}); pass the scenario of this arm"
            )
            raise ConversionError(msg)
    elif urdf is not None:
        try:
            skeleton, urdf_joints = skeleton_from_urdf(urdf)
            if len(urdf_joints) != len(statemap.joints):
                notes.append(f"robot_description has joints {urdf_joints}, the states {statemap.joints}; not embedded")
                skeleton = None
            else:
                skeleton_source = f"robot_description on {description}"
        except URDFError as error:
            notes.append(f"robot_description could not be read as a skelarm arm ({error}); no skeleton embedded")

    order = np.diff(stamps)
    extra: dict[str, Any] = {
        "tool": "skelarm_ros.bag_to_log",
        "tool_version": __version__,
        "joint_names": statemap.joints,
        "clock": clock,
        "time_origin_ns": origin,
        "time_unit": "s since time_origin_ns",
        "effort": effort,
        "valid_masks": "valid_<channel>: true where the value was recorded and finite; missing values are NaN",
        "skeleton_source": skeleton_source,
        "topics": {
            "joint_states": {"name": joint_topic, "type": joint_type},
            **({"commands": {"name": command_topic, "type": str(command_type)}} if command_topic else {}),
            **(
                {"wrench": {"name": wrench_topic, "type": WRENCH, "auto_detected": wrench_auto}} if wrench_topic else {}
            ),
            **({"controller": controller_used} if controller_used else {}),
        },
        "sources": [{"path": str(path.resolve()), "sha256": sha256(path)} for path in files if path.is_file()],
        "counts": {
            **counts,
            "frames": len(stamps),
            "out_of_order": int(np.count_nonzero(order < 0)),
            "duplicate_stamps": int(np.count_nonzero(order == 0)),
            "skipped_undecodable": skipped,
            "unknown_joint_names": sorted(statemap.unknown),
            "masked": masked,
        },
        "notes": notes,
    }
    write_log(
        output,
        arrays,
        skeleton=skeleton,
        producer="skelarm_ros.bag_to_log",
        channel_meta=channel_meta,
        extra=extra,
    )
    return Summary(
        output=output,
        frames=len(stamps),
        messages=counts["messages_read"],
        seconds=time.perf_counter() - started,
        joints=statemap.joints,
        masked=masked,
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
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``bag_to_log`` from the command line; returns the exit code."""
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    joints = [name.strip() for name in args.joints.split(",") if name.strip()] if args.joints else None
    if args.joints is not None and not joints:
        print("bag_to_log: error: --joints is empty; give joint names separated by commas", file=sys.stderr)
        return 2
    progress = sys.stderr if sys.stderr.isatty() else None
    try:
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
    except (BagError, ConversionError, ScenarioError) as error:
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
