# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Stage 3 of ``bag_to_log``: every stream held onto the joint states' times, giving the log's channels and masks.

This module does not import rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from skelarm_ros.bags.bag_to_log.skeleton import joint_units
from skelarm_ros.interface import (
    APPLIED_FROM_FRAME,
    APPLIED_UNTIL_FRAME,
    FLOAT_ARRAY_TYPE,
    GOAL_CHANNELS,
    JOINT_STATE_TYPE,
    NANOSECONDS,
    POINT_TYPE,
    POSITION,
    VELOCITY,
    WALL_CLOCK_NS,
)

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from skelarm_ros.bags.bag_to_log.collection import Collected
    from skelarm_ros.bags.bag_to_log.samples import Samples
    from skelarm_ros.bags.bag_to_log.topics import TopicPlan

GOAL_UNITS_OF = {GOAL_CHANNELS[POSITION]: "q", GOAL_CHANNELS[VELOCITY]: "dq"}
"""The joint state channel a servo's goals of each kind are in the unit of."""
_RESERVED = ("time", "q", "dq", "tau", "ext_force", "measured_effort", *GOAL_CHANNELS.values())


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

    ``tau`` is the commands held at each frame when effort commands were recorded (see
    :meth:`_Timeline.stamped`), else the joint states' effort; a servo's goals are held as
    commands are, into ``goal_position`` or ``goal_velocity``; ``ext_force`` is the wrench
    held at each frame; each controller channel is held as the commands are.

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
    goals = None
    if commands is not None and commands.kind in GOAL_CHANNELS:  # a servo's goals: tau stays the joint states' effort
        goals, commands = commands, None
    measured = commands is not None and bool(np.isfinite(arrays["tau"]).any())
    if commands is not None:
        if measured:  # the joint states' own effort, kept beside the commands (identify compares the two)
            arrays["measured_effort"] = arrays["tau"]
        arrays["tau"] = timeline.stamped(commands)
    if plan.wrench_topic and plan.wrench_topic in collected.streams:
        arrays["ext_force"] = timeline.measured(collected.streams[plan.wrench_topic])
    channel_meta: dict[str, dict[str, Any]] = joint_units(collected.joints, {})  # units by the kinds, stage 4
    if "ext_force" in arrays:
        channel_meta["ext_force"] = {"unit": "N", "label": "external tip force", "columns": ["fx", "fy"]}
    if measured:
        channel_meta["measured_effort"] = {
            "unit": "N*m",
            "label": "joint states' effort (applied until the frame)",
            "columns": collected.joints,
        }
    used: dict[str, str] = {}
    if goals is not None:
        name = GOAL_CHANNELS[goals.kind]
        arrays[name] = timeline.stamped(goals)
        label = f"the servo's {goals.kind} goal (commanded, from the frame on)"
        channel_meta[name] = {"label": label, "columns": collected.joints}  # its unit is q's or dq's (stage 4)
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
        effort["measured"] = {"channel": "measured_effort", "topic": plan.joint_topic, "timing": APPLIED_UNTIL_FRAME}
    if goals is not None:
        effort["goals"] = {"channel": GOAL_CHANNELS[goals.kind], "topic": goals.topic, "timing": APPLIED_FROM_FRAME}
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
            "timing": APPLIED_UNTIL_FRAME,
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
        "timing": APPLIED_FROM_FRAME,
        "alignment": timing,
    }
