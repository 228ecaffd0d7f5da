# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""A URDF robot description made from a skelarm Skeleton.

The frames follow the engine: a fixed ``base`` link, one revolute-z joint per
movable link (the first at ``(base_length, 0, 0)``, each next at ``(length, 0, 0)``
of its parent), inertials at each link's centre of mass, and a fixed ``tip`` frame
at the end of the last link. Each link is drawn as a box of its length, so rviz's
RobotModel shows the arm as skelarm draws it.

This module does not import rclpy.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING
from xml.sax.saxutils import quoteattr

from skelarm import LinkProp, Skeleton

from skelarm_ros.interface import BASE_FRAME

if TYPE_CHECKING:
    from collections.abc import Sequence


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


def skeleton_to_urdf(
    skeleton: Skeleton,
    joint_names: Sequence[str],
    *,
    effort_limits: Sequence[float] | None = None,
    name: str = "skelarm",
) -> str:
    """Write the URDF of a skelarm arm.

    Parameters
    ----------
    skeleton : Skeleton
        The arm (geometry, inertias, joint limits).
    joint_names : Sequence[str]
        One name per joint.
    effort_limits : Sequence[float] | None, optional
        Per-joint effort limits (N*m); ``None`` or an infinite limit writes
        :data:`DEFAULT_EFFORT_LIMIT`.
    name : str, optional
        The robot's name.

    Returns
    -------
    str
        The URDF document.

    Raises
    ------
    ValueError
        If the joint names or effort limits are not one per joint, or an effort
        limit is not positive.
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
        parts.append(
            f"  <link name={quoteattr(child)}>\n"
            f"    <inertial>\n"
            f'      <origin xyz="{_num(prop.rgx)} {_num(prop.rgy)} 0" rpy="0 0 0"/>\n'
            f'      <mass value="{_num(prop.m)}"/>\n'
            f'      <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="{_num(prop.i)}"/>\n'
            f"    </inertial>\n" + _box(prop.length, f"link_color_{index % 2}", _COLORS[index % 2]) + "  </link>\n"
        )
        effort = efforts[index] if math.isfinite(efforts[index]) else DEFAULT_EFFORT_LIMIT
        parts.append(
            f'  <joint name={quoteattr(joint_names[index])} type="revolute">\n'
            f"    <parent link={quoteattr(parent)}/>\n    <child link={quoteattr(child)}/>\n"
            f'    <origin xyz="{_num(offset)} 0 0" rpy="0 0 0"/>\n    <axis xyz="0 0 1"/>\n'
            f'    <limit lower="{_num(prop.qmin)}" upper="{_num(prop.qmax)}" '
            f'effort="{_num(effort)}" velocity="{_num(DEFAULT_VELOCITY_LIMIT)}"/>\n'
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


class URDFError(ValueError):
    """A robot description that is not the URDF of a planar skelarm arm."""


def skeleton_from_urdf(urdf: str) -> tuple[Skeleton, list[str]]:
    """Rebuild a skelarm Skeleton from a URDF written by :func:`skelarm_ros.urdf.skeleton_to_urdf`.

    Revolute joints' origins give ``base_length`` and the link lengths, the fixed
    ``tip`` joint gives the last length, inertials give ``m``, ``com`` and ``izz``,
    joint limits give ``qmin`` / ``qmax``.

    Parameters
    ----------
    urdf : str
        The URDF document.

    Returns
    -------
    tuple[Skeleton, list[str]]
        The arm and its joint names in chain order.

    Raises
    ------
    URDFError
        If the document is not XML or not a planar serial chain of revolute joints.
    """
    try:
        return _skeleton_from_urdf(urdf)
    except ET.ParseError as error:
        msg = f"robot_description is not valid XML ({error})"
        raise URDFError(msg) from None
    except (ValueError, TypeError, AttributeError) as error:
        if isinstance(error, URDFError):
            raise
        msg = f"robot_description is not a skelarm arm's URDF ({error})"
        raise URDFError(msg) from None


def _skeleton_from_urdf(urdf: str) -> tuple[Skeleton, list[str]]:
    root = ET.fromstring(urdf)
    links = {link.get("name"): link for link in root.iter("link")}
    by_parent: dict[str, ET.Element] = {}
    for joint in root.iter("joint"):
        parent = joint.find("parent")
        if parent is not None:
            by_parent[str(parent.get("link"))] = joint

    def origin_x(joint: ET.Element) -> float:
        origin = joint.find("origin")
        xyz = origin.get("xyz") if origin is not None else None
        return float((xyz or "0 0 0").split()[0])

    names: list[str] = []
    offsets: list[float] = []
    props: list[dict[str, float]] = []
    current = "base"
    tip = 0.0
    while current in by_parent:
        joint = by_parent[current]
        child = str(joint.find("child").get("link"))  # type: ignore[union-attr]
        if joint.get("type") == "fixed":
            tip = origin_x(joint)
            break
        if joint.get("type") not in ("revolute", "continuous"):
            kind = joint.get("type")
            msg = f"robot_description joint '{joint.get('name')}' is {kind}; a skelarm arm has revolute joints"
            raise URDFError(msg)
        names.append(str(joint.get("name")))
        offsets.append(origin_x(joint))
        inertial = links[child].find("inertial") if child in links else None
        mass = inertial.find("mass") if inertial is not None else None
        inertia = inertial.find("inertia") if inertial is not None else None
        com = inertial.find("origin") if inertial is not None else None
        rgx, rgy = ([float(v) for v in (com.get("xyz") or "0 0 0").split()[:2]]) if com is not None else (0.0, 0.0)
        limit = joint.find("limit")
        props.append(
            {
                "m": float(mass.get("value", 0.0)) if mass is not None else 0.0,
                "i": float(inertia.get("izz", 0.0)) if inertia is not None else 0.0,
                "rgx": rgx,
                "rgy": rgy,
                "qmin": float(limit.get("lower", -math.pi)) if limit is not None else -math.pi,
                "qmax": float(limit.get("upper", math.pi)) if limit is not None else math.pi,
            }
        )
        current = child
    if not names:
        msg = "robot_description has no chain of revolute joints starting at link 'base'"
        raise URDFError(msg)
    lengths = [*offsets[1:], tip]
    link_props = [LinkProp(length=length, **prop) for length, prop in zip(lengths, props, strict=True)]
    return Skeleton(link_props, base_length=offsets[0]), names
