# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Stage 1 of ``bag_to_log``: which topics to read, given or found beside the joint states, and checked.

This module does not import rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from skelarm_ros.bags.bag_to_log.samples import ConversionError
from skelarm_ros.interface import (
    CHANNEL_NAME,
    CHANNEL_TYPES,
    EFFORT_COMMANDS,
    FLOAT_ARRAY_TYPE,
    JOINT_COMMANDS,
    JOINT_STATE_TYPE,
    JOINT_STATES,
    POINT_TYPE,
    POSITION_COMMANDS,
    ROBOT_DESCRIPTION,
    STRING_TYPE,
    TIP_WRENCH,
    VELOCITY_COMMANDS,
    WRENCH_TYPE,
    channel_of,
    channel_topic,
    sibling,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from skelarm_ros.bags.reader import Bag

AUTO_COMMAND_TOPICS = (JOINT_COMMANDS, EFFORT_COMMANDS, POSITION_COMMANDS, VELOCITY_COMMANDS)
"""Command topics looked for next to the joint states, in this order (a servo arm's goals are commands too)."""


@dataclass(frozen=True)
class TopicPlan:
    """The topics a conversion reads, with topic names as in the bag (leading ``/``).

    Attributes
    ----------
    joint_topic, joint_type : str
        The joint states and their type.
    command_topic, command_type : str | None
        The commands and their type: effort commands for ``tau``, or a servo's goals for ``goal_position`` or
        ``goal_velocity`` (``tau`` then the joint states' effort); ``None`` when there are none.
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
    "--command-topic": "the commands are optional: drop --command-topic and tau comes from the effort commands "
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
            and CHANNEL_NAME.fullmatch(channel)
            and info.msgtype in CHANNEL_TYPES
        ):
            channels[channel] = name
    return channels


def description_topic(bag: Bag) -> str | None:
    """Return the bag's first ``.../robot_description`` topic of type String, or ``None``."""
    return next(
        (name for name, info in bag.topics.items() if name.endswith(ROBOT_DESCRIPTION) and info.msgtype == STRING_TYPE),
        None,
    )
