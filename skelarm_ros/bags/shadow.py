# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""What a shadow run (launch argument ``replay:=BAG``) plays from a recorded run, and under which names.

A shadow run plays a recorded arm's joint states into a controller in place of the
simulator. A real arm's bag keeps them on its driver's own topic under its own joint
names (``/servo/out/state``, ``q0, q1, q2``), so :func:`shadow_plan` takes the joint-state
topic the launch argument ``replay_joint_topic`` names (``joint_states`` by default; a
relative name is looked for in every recorded namespace, an absolute one is taken as
it is), plays it as the graph's ``joint_states``, and reads the joint names its first
state carries, for the controller. The arm's ``target`` and ``robot_description`` are
played where they were recorded beside it. A bag the controller could not answer (no
names, no positions or velocities) is refused before anything starts, with one
sentence naming the topic and the way out.

This module does not import rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from skelarm_ros.bags.replay import PlayError, open_for_playing
from skelarm_ros.interface import JOINT_STATE_TYPE, JOINT_STATES, ROBOT_DESCRIPTION, TARGET

if TYPE_CHECKING:
    from skelarm_ros.bags.reader import Bag

BESIDE = (TARGET, ROBOT_DESCRIPTION)
"""The recorded arm topics played beside its joint states (not the commands: the shadow makes its own)."""


@dataclass(frozen=True)
class ShadowPlan:
    """What a shadow run plays.

    Attributes
    ----------
    topics : list[tuple[str, str]]
        ``(name in the bag, relative name in the graph)``: the joint states first (as
        ``joint_states``), then ``target`` and ``robot_description`` where recorded.
    joint_names : list[str]
        The joints the recorded states name, in their order (the first state's).
    states : int
        Recorded joint states.
    """

    topics: list[tuple[str, str]]
    joint_names: list[str]
    states: int

    @property
    def joint_topic(self) -> str:
        """The recorded joint-state topic, as the bag names it."""
        return self.topics[0][0]


def _arms(bag: Bag, joint_topic: str) -> dict[str, str]:
    """Return the recorded joint-state topics ``joint_topic`` names, by the namespace of their arm."""
    if joint_topic.startswith("/"):
        return {"": joint_topic} if joint_topic in bag.topics else {}
    suffix = "/" + joint_topic.strip("/")
    return {name[: -len(suffix)]: name for name in bag.topics if name.endswith(suffix)}


def _listing(bag: Bag) -> str:
    found = [f"{name} ({info.count})" for name, info in bag.topics.items() if info.msgtype == JOINT_STATE_TYPE]
    return ", ".join(found) if found else "none"


def _choose_arm(bag: Bag, path: str, joint_topic: str, namespace: str) -> tuple[str, str]:
    """Return the recorded arm's namespace and joint-state topic (one sentence when there is none or several)."""
    arms = _arms(bag, joint_topic)
    if not arms:
        msg = (
            f"bag '{path}' has no {joint_topic} topic to replay; its sensor_msgs/JointState topics (messages) are "
            f"{_listing(bag)}: pass replay_joint_topic:= the one of the arm's joint states"
        )
        raise PlayError(msg)
    mine = "/" + namespace if namespace else ""
    if len(arms) == 1:
        return next(iter(arms.items()))
    if mine in arms:
        return mine, arms[mine]
    found = ", ".join(sorted(arm or "/" for arm in arms))
    msg = f"bag '{path}' holds several arms ({found}); pass namespace:= one of them to replay it"
    raise PlayError(msg)


def _first_state(bag: Bag, topic: str) -> object:
    """Return the first decodable joint state of ``topic`` (one sentence when it has none or is another type)."""
    summary = bag.topics[topic]
    if summary.msgtype != JOINT_STATE_TYPE:
        msg = f"topic '{topic}' is {summary.msgtype}, not {JOINT_STATE_TYPE}; pass replay_joint_topic:= arm states"
        raise PlayError(msg)
    for _, _, _, message in bag.messages([topic]):
        return message
    msg = f"the joint-state topic '{topic}' of bag '{bag.path}' has no message to replay; record the arm's states"
    raise PlayError(msg)


def _check_answerable(topic: str, state: object) -> list[str]:
    """Return the joint names of a recorded state the controller can answer; one sentence for one it cannot."""
    names = [str(name) for name in getattr(state, "name", [])]
    position, velocity = getattr(state, "position", []), getattr(state, "velocity", [])
    if not names:
        msg = (
            f"the joint states on '{topic}' carry no joint names, and the controller takes joints by name; give "
            "them names with bag_to_log --joints and log_to_bag, and replay that bag"
        )
        raise PlayError(msg)
    for field, values in (("position", position), ("velocity", velocity)):
        if len(values) != len(names):
            msg = (
                f"the joint states on '{topic}' carry {len(values)} {field} values for the {len(names)} joints "
                f"{names}, and the controller needs a {field} per joint; replay a recording of positions and "
                "velocities"
            )
            raise PlayError(msg)
    return names


def shadow_plan(path: str, namespace: str = "", joint_topic: str = JOINT_STATES) -> ShadowPlan:
    """Return what a shadow run plays from the bag at ``path``.

    Parameters
    ----------
    path : str
        The recorded bag.
    namespace : str, optional
        The graph's namespace (relative, ``arm1``); it chooses among several recorded
        arms, and a single recorded arm plays into it whatever namespace it had.
    joint_topic : str, optional
        The recorded joint-state topic: relative (``joint_states``, ``servo/out/state``),
        looked for in every recorded namespace, or absolute (``/servo/out/state``).

    Raises
    ------
    PlayError
        If the bag cannot be read, has no such topic (the sentence lists its JointState
        topics), has several arms and ``namespace`` names none of them, or its states
        carry no names, positions or velocities for the controller.
    """
    bag = open_for_playing(path)
    try:
        arm, topic = _choose_arm(bag, path, joint_topic, namespace)
        names = _check_answerable(topic, _first_state(bag, topic))
        topics = [(topic, JOINT_STATES)]
        for relative in BESIDE:  # beside the arm's states, else at the root (a description is often there)
            found = next((name for name in (f"{arm}/{relative}", f"/{relative}") if name in bag.topics), None)
            if found is not None and found not in (name for name, _ in topics):
                topics.append((found, relative))
        return ShadowPlan(topics, names, bag.topics[topic].count)
    finally:
        bag.close()
