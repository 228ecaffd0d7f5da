# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""URDF robot descriptions of skelarm arms, written from a Skeleton (read back by :mod:`skelarm_ros.sim.urdf_reader`).

The frames written follow the engine: a fixed ``base`` link, one revolute-z joint
per movable link (the first at ``(base_length, 0, 0)``, each next at
``(length, 0, 0)`` of its parent), inertials at each link's centre of mass, and a
fixed ``tip`` frame at the end of the last link. Each link is drawn as a box of its
length, so rviz's RobotModel shows the arm as skelarm draws it. A joint with no
limits (``qmin = -inf``, ``qmax = inf``) is written as a continuous joint.

This module imports neither rclpy nor Pinocchio: the launcher and the simulator write
descriptions with it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING
from xml.sax.saxutils import quoteattr

from skelarm_ros.interface import BASE_FRAME
from skelarm_ros.sim.scenario import JointLimits

if TYPE_CHECKING:
    from collections.abc import Sequence

    from skelarm import LinkProp, Skeleton

    from skelarm_ros.sim.scenario import ArmSetup


LINK_WIDTH = 0.04  # m, drawn thickness of a link
DEFAULT_EFFORT_LIMIT = 1000.0  # N*m, written when no effort limit is configured
DEFAULT_VELOCITY_LIMIT = 100.0  # rad/s, URDF requires one
_COLORS = ("0.20 0.40 0.80 1", "0.90 0.50 0.10 1")


def link_names(num_joints: int) -> list[str]:
    """Names of the movable links, ``link1 ... linkN``."""
    return [f"link{i + 1}" for i in range(num_joints)]


def _num(value: float) -> str:
    return repr(float(value))


def _box(length: float, material: str, color: str) -> str:
    size = max(length, 1e-4)
    return (
        f'    <visual>\n      <origin xyz="{_num(length / 2)} 0 0" rpy="0 0 0"/>\n'
        f'      <geometry><box size="{_num(size)} {LINK_WIDTH} {LINK_WIDTH}"/></geometry>\n'
        f'      <material name="{material}"><color rgba="{color}"/></material>\n    </visual>\n'
    )


def _joint_kind(name: str, prop: LinkProp) -> tuple[str, str]:
    """Return the URDF joint type of a link and its position-limit attributes."""
    if math.isinf(prop.qmin) and math.isinf(prop.qmax) and prop.qmin < 0.0 < prop.qmax:
        return "continuous", ""
    if not (math.isfinite(prop.qmin) and math.isfinite(prop.qmax)):
        msg = (
            f"joint '{name}' has limits [{prop.qmin}, {prop.qmax}]; a URDF joint has both limits finite "
            "(revolute) or none (continuous: qmin = -inf and qmax = inf)"
        )
        raise ValueError(msg)
    return "revolute", f'lower="{_num(prop.qmin)}" upper="{_num(prop.qmax)}" '


def skeleton_to_urdf(
    skeleton: Skeleton,
    joint_names: Sequence[str],
    *,
    effort_limits: Sequence[float] | None = None,
    velocity_limits: Sequence[float] | None = None,
    name: str = "skelarm",
) -> str:
    """Write the URDF of a skelarm arm.

    Parameters
    ----------
    skeleton : Skeleton
        The arm (geometry, inertias, joint limits). A joint whose limits are
        ``-inf`` and ``inf`` is written as a continuous joint.
    joint_names : Sequence[str]
        One name per joint.
    effort_limits : Sequence[float] | None, optional
        Per-joint effort limits (N*m); ``None`` or an infinite limit writes
        :data:`DEFAULT_EFFORT_LIMIT`.
    velocity_limits : Sequence[float] | None, optional
        Per-joint velocity limits (rad/s); ``None`` or an infinite limit writes
        :data:`DEFAULT_VELOCITY_LIMIT`.
    name : str, optional
        The robot's name.

    Returns
    -------
    str
        The URDF document.

    Raises
    ------
    ValueError
        If the joint names or effort limits are not one per joint, an effort
        limit is not positive, or a joint has one infinite limit.
    """
    links = link_names(skeleton.num_joints)
    if len(joint_names) != skeleton.num_joints:
        msg = f"got {len(joint_names)} joint names for an arm of {skeleton.num_joints} joints; give one name per joint"
        raise ValueError(msg)
    efforts = list(effort_limits) if effort_limits is not None else [DEFAULT_EFFORT_LIMIT] * skeleton.num_joints
    if len(efforts) != skeleton.num_joints:
        msg = f"got {len(efforts)} effort limits for an arm of {skeleton.num_joints} joints; give one per joint"
        raise ValueError(msg)
    if not all(effort > 0.0 for effort in efforts):  # also rejects NaN
        msg = f"effort limits must be positive (N*m; inf for none), got {efforts}"
        raise ValueError(msg)
    speeds = list(velocity_limits) if velocity_limits is not None else [DEFAULT_VELOCITY_LIMIT] * skeleton.num_joints
    if len(speeds) != skeleton.num_joints or not all(speed > 0.0 for speed in speeds):
        msg = f"velocity limits must be one positive value per joint (rad/s; inf for none), got {speeds}"
        raise ValueError(msg)
    parts = [f'<?xml version="1.0"?>\n<robot name={quoteattr(name)}>\n']
    parts.append(f'  <link name="{BASE_FRAME}">\n')
    if skeleton.base_length > 0.0:
        parts.append(_box(skeleton.base_length, "base_gray", "0.5 0.5 0.5 1"))
    parts.append("  </link>\n")
    parent = BASE_FRAME
    offset = skeleton.base_length
    for index, link in enumerate(skeleton.links[1:]):
        prop = link.prop
        child = links[index]
        kind, position_limits = _joint_kind(joint_names[index], prop)
        parts.append(
            f"  <link name={quoteattr(child)}>\n"
            f"    <inertial>\n"
            f'      <origin xyz="{_num(prop.rgx)} {_num(prop.rgy)} 0" rpy="0 0 0"/>\n'
            f'      <mass value="{_num(prop.m)}"/>\n'
            f'      <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="{_num(prop.i)}"/>\n'
            f"    </inertial>\n" + _box(prop.length, f"link_color_{index % 2}", _COLORS[index % 2]) + "  </link>\n"
        )
        effort = efforts[index] if math.isfinite(efforts[index]) else DEFAULT_EFFORT_LIMIT
        speed = speeds[index] if math.isfinite(speeds[index]) else DEFAULT_VELOCITY_LIMIT
        parts.append(
            f'  <joint name={quoteattr(joint_names[index])} type="{kind}">\n'
            f"    <parent link={quoteattr(parent)}/>\n    <child link={quoteattr(child)}/>\n"
            f'    <origin xyz="{_num(offset)} 0 0" rpy="0 0 0"/>\n    <axis xyz="0 0 1"/>\n'
            f'    <limit {position_limits}effort="{_num(effort)}" velocity="{_num(speed)}"/>\n'
            f"  </joint>\n"
        )
        parent = child
        offset = prop.length
    parts.append(
        '  <link name="tip"/>\n'
        '  <joint name="tip_joint" type="fixed">\n'
        f"    <parent link={quoteattr(parent)}/>\n"
        '    <child link="tip"/>\n'
        f'    <origin xyz="{_num(offset)} 0 0" rpy="0 0 0"/>\n'
        "  </joint>\n</robot>\n"
    )
    return "".join(parts)


# ----------------------------------------------------------------------------- reading


def arm_urdf(arm: ArmSetup, joint_names: Sequence[str], effort_limits: Sequence[float] = ()) -> str:
    """Write the URDF of a scenario's arm with its links' effort and velocity limits (the simulator's description).

    Parameters
    ----------
    arm : ArmSetup
        The scenario's arm (:func:`skelarm_ros.sim.scenario.load_arm`).
    joint_names : Sequence[str]
        One name per joint.
    effort_limits : Sequence[float], optional
        Effort limits that override the links' ``effort_limit`` keys (a node's ``effort_limits``); empty for theirs.

    Returns
    -------
    str
        The URDF document.
    """
    rated = arm.limits or JointLimits.none(arm.num_joints)
    return skeleton_to_urdf(
        arm.skeleton,
        joint_names,
        effort_limits=list(effort_limits) or rated.effort_list(),
        velocity_limits=rated.velocity.tolist(),
    )
