# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Stage 4 of ``bag_to_log``: the arm to embed, from a scenario or the recorded ``robot_description``.

Besides a skelarm arm to embed, the kind of each joint (revolute or prismatic: angles in
rad or positions in m, torques in N*m or forces in N) is taken from any recorded
description, so that a log of a robot that is not a skelarm arm says its units too.

This module does not import rclpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from xml.etree import ElementTree

from skelarm_ros.bags.bag_to_log.samples import ConversionError
from skelarm_ros.sim.urdf_reader import URDFError, skeleton_from_urdf

if TYPE_CHECKING:
    from collections.abc import Sequence

    import skelarm

    from skelarm_ros.sim.scenario import ArmSetup


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


ROTATING = ("revolute", "continuous")
"""URDF joint types whose position is an angle (rad) and whose effort a torque (N*m)."""
SLIDING = ("prismatic",)
"""URDF joint types whose position is a length (m) and whose effort a force (N)."""


def joint_kinds(joints: Sequence[str], *, urdf: str | None, skelarm_arm: bool) -> dict[str, str]:
    """Return each joint's kind (its URDF joint type) where known.

    Parameters
    ----------
    joints : Sequence[str]
        The log's joints.
    urdf : str | None
        A recorded ``robot_description`` (any robot's URDF); its ``<joint name type>`` are read.
    skelarm_arm : bool
        Whether a skelarm arm is embedded: every joint of it is revolute.

    Returns
    -------
    dict[str, str]
        Joint name to ``revolute``, ``continuous``, ``prismatic``... for the joints of the log
        whose kind is known; empty when none is.
    """
    if skelarm_arm:
        return dict.fromkeys(joints, "revolute")
    if not urdf:
        return {}
    try:
        root = ElementTree.fromstring(urdf)
    except ElementTree.ParseError:
        return {}
    types = {element.get("name"): element.get("type") for element in root.iter("joint")}
    return {name: str(types[name]) for name in joints if types.get(name)}


def joint_units(joints: Sequence[str], kinds: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Return the unit and label of ``q``, ``dq`` and ``tau`` for joints of these kinds.

    Angles, torques when every joint rotates; lengths, forces when every joint slides;
    otherwise both units, each joint in its own (as ``sensor_msgs/JointState`` carries them).
    """
    if joints and all(kinds.get(name) in ROTATING for name in joints):
        units = ("rad", "rad/s", "N*m")
        labels = ("joint angle", "joint velocity", "joint torque")
    elif joints and all(kinds.get(name) in SLIDING for name in joints):
        units = ("m", "m/s", "N")
        labels = ("joint position", "joint velocity", "joint force")
    else:
        units = ("rad or m", "rad/s or m/s", "N*m or N")
        labels = ("joint position", "joint velocity", "joint effort")
    return {
        channel: {"unit": unit, "label": label, "columns": list(joints)}
        for channel, unit, label in zip(("q", "dq", "tau"), units, labels, strict=True)
    }
