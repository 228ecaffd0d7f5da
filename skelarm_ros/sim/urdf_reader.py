# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Any URDF read as a skelarm arm, or refused with the joint or link at fault named.

A URDF is read with Pinocchio's URDF parser (urdfdom) and accepted when it is what a
skelarm ``Skeleton`` can represent (see :func:`skeleton_from_urdf`); anything else is
refused with a :class:`URDFError` that names the joint or link and what is wrong
with it. :mod:`skelarm_ros.sim.urdf` writes the descriptions this module reads back.

This module does not import rclpy.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO

import numpy as np
import pinocchio as pin
from skelarm import LinkProp, Skeleton

from skelarm_ros.sim.scenario import JointLimits

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from numpy.typing import NDArray

ANGLE_TOLERANCE = 1e-5  # rad: a joint axis this close to the base's z axis is taken as z
POSITION_TOLERANCE = 1e-5  # m: an offset this small off the arm's line or plane is taken as none


class URDFError(ValueError):
    """A robot description that is not the URDF of a planar skelarm arm."""


_MOVABLE = ("revolute", "continuous")
_OTHER_KINDS = {
    "prismatic": "prismatic (it slides)",
    "floating": "floating (a free joint with 6 degrees of freedom)",
    "planar": "planar (it slides in a plane and turns)",
}


def skeleton_from_urdf(
    urdf: str, *, base_link: str | None = None, tip_link: str | None = None
) -> tuple[Skeleton, list[str]]:
    """Read a URDF as a skelarm arm, or say why it is not one.

    The document is parsed by Pinocchio's URDF parser (urdfdom), so fixed joints
    are folded into the moving links as every URDF consumer folds them. It is
    accepted when a skelarm ``Skeleton`` represents it exactly (to within
    :data:`ANGLE_TOLERANCE` and :data:`POSITION_TOLERANCE`):

    - its movable joints are revolute or continuous (none mimics another) and form
      one chain from the base, with no branch; fixed joints anywhere are fine;
    - every joint turns about the base's +z axis (an ``<axis>`` and origin
      rotations that together give +z, such as a rotation about z, or a roll of
      pi with axis ``0 0 -1``, are fine);
    - with all joint angles zero the joints and the tip lie on the base's x axis,
      in order (a joint origin rotated about z and offset along y is fine when
      together they put the next joint on that line): skelarm's link length runs
      along its parent's x and the first joint is at ``(base_length, 0)``;
    - the arm lies in one plane: the first joint may be at any height above the
      base (the arm's plane is parallel to the base's x-y plane), every other
      joint and the tip at that same height;
    - each moving link (with whatever is fixed to it) has a positive mass.

    Each link's ``m`` is its folded mass, ``(rgx, rgy)`` its centre of mass in
    the link's skelarm frame (x along the link; a centre of mass off the plane is
    projected onto it, as it does not change motion in the plane), ``i`` its
    rotational inertia about the joint axis through the centre of mass, and
    ``qmin`` / ``qmax`` the joint's limits (``-inf`` / ``inf`` for a continuous
    joint).

    Parameters
    ----------
    urdf : str
        The URDF document.
    base_link : str | None, optional
        The link whose frame is the arm's base frame; it must be fixed to the
        URDF's root. Default: the root link.
    tip_link : str | None, optional
        The link whose origin is the end of the last link; it must be fixed to
        the last moving link. Default: the one link that ends the chain (the
        last moving link itself when nothing is fixed to it).

    Returns
    -------
    tuple[Skeleton, list[str]]
        The arm and its joint names, first joint (nearest the base) first.

    Raises
    ------
    URDFError
        If the document is not valid XML or URDF, or is not a planar chain of
        z-revolute joints that a Skeleton represents; the message names the
        joint or link at fault and what would be right.
    """
    document, model = _parse(urdf)
    reader = _Reader(document, model)
    chain = reader.chain()
    base = reader.frame_fixed_to(base_link, joint=0, role="base_link") if base_link else 1
    tip = reader.frame_fixed_to(tip_link, joint=chain[-1], role="tip_link") if tip_link else reader.leaf(chain[-1])
    return reader.skeleton(chain, base, tip), [str(model.names[joint]) for joint in chain]


def joint_limits_from_urdf(urdf: str, joint_names: Sequence[str]) -> JointLimits:
    """Read the effort and velocity limits of the named joints from their ``<limit effort= velocity=>``.

    A joint without a ``<limit>``, or whose ``effort`` or ``velocity`` is absent or zero (URDF's
    "not given"), has no such limit (``inf``).

    Parameters
    ----------
    urdf : str
        The URDF document.
    joint_names : Sequence[str]
        The arm's joints, in its order (:func:`skeleton_from_urdf` returns them).

    Returns
    -------
    JointLimits
        One value per joint, as the links' ``effort_limit`` and ``velocity_limit`` keys give them.

    Raises
    ------
    URDFError
        If the document is not XML, a named joint is not in it, or a limit is not a number.
    """
    try:
        document = ET.fromstring(urdf)
    except ET.ParseError as error:
        msg = f"the URDF is not valid XML ({error})"
        raise URDFError(msg) from None
    joints = {str(joint.get("name")): joint for joint in document.findall("{*}joint")}
    columns: dict[str, list[float]] = {"effort": [], "velocity": []}
    for name in joint_names:
        if name not in joints:
            msg = f"the URDF has no joint '{name}'; give the names of its joints"
            raise URDFError(msg)
        limit = joints[name].find("{*}limit")
        for key, column in columns.items():
            text = None if limit is None else limit.get(key)
            try:
                value = math.inf if text is None else float(text)
            except ValueError:
                msg = f"URDF joint '{name}' has <limit {key}=\"{text}\">; give a number"
                raise URDFError(msg) from None
            column.append(value if math.isfinite(value) and value > 0.0 else math.inf)
    return JointLimits(np.array(columns["effort"]), np.array(columns["velocity"]))


def _parse(urdf: str) -> tuple[ET.Element, pin.Model]:
    """Parse the XML, then the URDF with urdfdom (its own complaints become the message)."""
    try:
        document = ET.fromstring(urdf)
    except ET.ParseError as error:
        msg = f"the URDF is not valid XML ({error})"
        raise URDFError(msg) from None
    with tempfile.TemporaryFile(mode="w+b") as captured:
        try:
            with _stderr_to(captured):
                model = pin.buildModelFromXML(urdf)
        except (ValueError, RuntimeError) as error:
            captured.seek(0)
            reasons = _urdfdom_reasons(captured.read().decode(errors="replace")) or str(error)
            msg = f"the URDF parser refused it: {reasons}"
            raise URDFError(msg) from None
        captured.seek(0)
        sys.stderr.write(captured.read().decode(errors="replace"))  # the parser's warnings, if any
    return document, model


@contextlib.contextmanager
def _stderr_to(stream: BinaryIO) -> Iterator[None]:
    """Send file descriptor 2 (where urdfdom prints its reasons) to ``stream`` for a moment."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        os.dup2(stream.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _urdfdom_reasons(text: str) -> str:
    """Return the reasons urdfdom printed, one clause each (``Error: ...`` lines, locations dropped)."""
    reasons = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Error:")]
    return "; ".join(reasons)


@dataclass(frozen=True)
class _Segment:
    """A piece of the arm at zero joint angles: where ``end`` is from ``start``, in the base's axes."""

    start: str
    end: str
    offset: NDArray[np.float64]


class _Reader:
    """The checks and readings of one parsed URDF, in Pinocchio's joint order."""

    def __init__(self, document: ET.Element, model: pin.Model) -> None:
        self.model = model
        self.data = model.createData()
        pin.framesForwardKinematics(model, self.data, pin.neutral(model))
        self.joints = {str(joint.get("name")): joint for joint in document.findall("{*}joint")}
        self.inertials = {str(link.get("name")): link.find("{*}inertial") for link in document.findall("{*}link")}

    def name(self, joint: int) -> str:
        return str(self.model.names[joint])

    def chain(self) -> list[int]:
        """Return the movable joints in chain order, after checking their kinds and that they do not branch."""
        model = self.model
        joints = list(range(1, model.njoints))
        for joint in joints:
            self._check_kind(self.name(joint))
        if not joints:
            msg = "the URDF has no revolute joint; a skelarm arm has at least one, turning about the base's z axis"
            raise URDFError(msg)
        children: dict[int, list[int]] = {}
        for joint in joints:
            children.setdefault(int(model.parents[joint]), []).append(joint)
        for parent, kids in children.items():
            if len(kids) > 1:
                where = "the base" if parent == 0 else f"joint '{self.name(parent)}'"
                msg = (
                    f"the URDF branches: joints '{self.name(kids[0])}' and '{self.name(kids[1])}' both move with "
                    f"{where}; a skelarm arm is a single chain of joints"
                )
                raise URDFError(msg)
        return joints

    def _check_kind(self, name: str) -> None:
        element = self.joints[name]
        kind = str(element.get("type"))
        if kind not in _MOVABLE:
            msg = (
                f"URDF joint '{name}' is {_OTHER_KINDS.get(kind, kind)}; a skelarm arm has only revolute or "
                "continuous joints turning about the base's z axis"
            )
            raise URDFError(msg)
        mimic = element.find("{*}mimic")
        if mimic is not None:
            msg = (
                f"URDF joint '{name}' mimics joint '{mimic.get('joint')}'; a skelarm arm's joints each move "
                "on their own"
            )
            raise URDFError(msg)

    def frame_fixed_to(self, link: str, *, joint: int, role: str) -> int:
        """Return the frame of a named link, which must be fixed to ``joint`` (0: the root)."""
        model = self.model
        if not model.existBodyName(link):
            msg = f"{role} '{link}' is not a link of the URDF"
            raise URDFError(msg)
        frame = model.getBodyId(link)
        if model.frames[frame].parentJoint != joint:
            owner = "the URDF's root" if joint == 0 else f"the link moved by joint '{self.name(joint)}'"
            msg = f"{role} '{link}' is not fixed to {owner}; choose a link fixed to it"
            raise URDFError(msg)
        return int(frame)

    def leaf(self, joint: int) -> int:
        """Return the one link that ends the chain after ``joint`` (the tip)."""
        model = self.model
        referenced = {int(frame.parentFrame) for frame in model.frames}
        leaves = [
            index
            for index, frame in enumerate(model.frames)
            if frame.type == pin.FrameType.BODY and frame.parentJoint == joint and index not in referenced
        ]
        if len(leaves) > 1:
            names = ", ".join(f"'{model.frames[index].name}'" for index in leaves)
            msg = f"links {names} all end the arm after joint '{self.name(joint)}'; say which one is its tip (tip_link)"
            raise URDFError(msg)
        return leaves[0]

    def rotation(self, joint: int, base: int) -> NDArray[np.float64]:
        """Return the rotation of a joint's frame at zero angles, in the base's axes."""
        return np.asarray(self.data.oMf[base].rotation.T @ self.data.oMi[joint].rotation)

    def axis(self, joint: int) -> NDArray[np.float64]:
        """Return a revolute joint's unit axis in its own frame."""
        joint_model = self.model.joints[joint]
        joint_data = joint_model.createData()
        joint_model.calc(joint_data, pin.neutral(self.model)[joint_model.idx_q : joint_model.idx_q + joint_model.nq])
        angular = np.asarray(joint_data.S).reshape(6)[3:]
        return np.asarray(angular / np.linalg.norm(angular))

    def segments(self, chain: list[int], base: int, tip: int) -> list[_Segment]:
        """Return the pieces base to first joint, joint to joint, last joint to tip (base axes, zero angles)."""
        model, data = self.model, self.data
        first = data.oMf[base].actInv(data.oMi[chain[0]]).translation
        pieces = [_Segment("the base", f"joint '{self.name(chain[0])}'", np.asarray(first))]
        ends = [*chain[1:], None]
        for joint, after in zip(chain, ends, strict=True):
            placement = model.jointPlacements[after] if after is not None else model.frames[tip].placement
            end = f"joint '{self.name(after)}'" if after is not None else f"link '{model.frames[tip].name}'"
            offset = self.rotation(joint, base) @ np.asarray(placement.translation)
            pieces.append(_Segment(f"joint '{self.name(joint)}'", end, offset))
        return pieces

    def check_axis(self, joint: int, base: int) -> NDArray[np.float64]:
        """Check that a joint turns about the base's +z; return its axis in its own frame."""
        local = self.axis(joint)
        world = self.rotation(joint, base) @ local
        tilt = math.acos(min(1.0, max(-1.0, float(world[2]))))
        if math.pi - tilt <= ANGLE_TOLERANCE:
            msg = (
                f"URDF joint '{self.name(joint)}' turns about -z of the base (its <axis> and the rpy of the origins "
                "up to it), so its angle counts clockwise; a skelarm joint angle counts counter-clockwise about +z"
            )
            raise URDFError(msg)
        if tilt > ANGLE_TOLERANCE:
            msg = (
                f"URDF joint '{self.name(joint)}' turns about ({_vector(world)}) in the base's axes, "
                f"{math.degrees(tilt):.4g} degrees off its z axis (from its <axis> and the rpy of the origins up to "
                "it); a skelarm arm moves in its base's x-y plane, every joint turning about +z"
            )
            raise URDFError(msg)
        return local

    def limits(self, joint: int) -> tuple[float, float]:
        """Return a joint's limits in rad (``-inf``, ``inf`` for a continuous joint)."""
        name = self.name(joint)
        if self.joints[name].get("type") == "continuous":
            return -math.inf, math.inf
        index = self.model.joints[joint].idx_q
        lower, upper = float(self.model.lowerPositionLimit[index]), float(self.model.upperPositionLimit[index])
        if lower > upper:
            msg = (
                f"URDF joint '{name}' has limits lower={lower} > upper={upper} (rad); "
                "the lower limit must not be above the upper"
            )
            raise URDFError(msg)
        return lower, upper

    def inertia(self, joint: int) -> pin.Inertia:
        """Return the inertia moving with ``joint`` (its links and all fixed to them), in the joint's frame."""
        total: pin.Inertia | None = None
        for frame in self.model.frames:
            if frame.type != pin.FrameType.BODY or frame.parentJoint != joint:
                continue
            body = _inertial(self.inertials.get(str(frame.name)))
            if body is None:
                continue
            placed = frame.placement.act(body)
            total = placed if total is None else total + placed
        if total is None or not total.mass > 0.0:
            msg = (
                f"the link moved by URDF joint '{self.name(joint)}' has no mass; give it an <inertial> with a "
                "positive <mass> (kg), which the dynamics need"
            )
            raise URDFError(msg)
        return total

    def skeleton(self, chain: list[int], base: int, tip: int) -> Skeleton:
        """Check the arm and return it as a skelarm Skeleton."""
        axes = [self.check_axis(joint, base) for joint in chain]
        segments = self.segments(chain, base, tip)
        lengths = [_length(segment, first=index == 0) for index, segment in enumerate(segments)]
        props = []
        for joint, local, length in zip(chain, axes, lengths[1:], strict=True):
            inertia = self.inertia(joint)
            com = self.rotation(joint, base) @ np.asarray(inertia.lever)
            izz = float(local @ np.asarray(inertia.inertia) @ local)
            lower, upper = self.limits(joint)
            props.append(
                LinkProp(
                    length=length,
                    m=float(inertia.mass),
                    i=izz,
                    rgx=float(com[0]),
                    rgy=float(com[1]),
                    qmin=lower,
                    qmax=upper,
                )
            )
        return Skeleton(props, base_length=lengths[0])


def _inertial(element: ET.Element | None) -> pin.Inertia | None:
    """Read a link's ``<inertial>`` in the link's frame (mass, centre of mass, inertia about it), if any."""
    if element is None:
        return None
    origin = element.find("{*}origin")
    xyz = _floats(origin.get("xyz") if origin is not None else None)
    rpy = _floats(origin.get("rpy") if origin is not None else None)
    mass = element.find("{*}mass")
    tensor = element.find("{*}inertia")
    values = {
        key: float(tensor.get(key, 0.0)) if tensor is not None else 0.0
        for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    }
    moments = np.array(
        [
            [values["ixx"], values["ixy"], values["ixz"]],
            [values["ixy"], values["iyy"], values["iyz"]],
            [values["ixz"], values["iyz"], values["izz"]],
        ]
    )
    rotation = pin.rpy.rpyToMatrix(*rpy)
    value = float(mass.get("value", 0.0)) if mass is not None else 0.0
    return pin.Inertia(value, np.array(xyz), rotation @ moments @ rotation.T)


def _floats(text: str | None) -> list[float]:
    return [float(part) for part in text.split()] if text else [0.0, 0.0, 0.0]


def _vector(values: NDArray[np.float64]) -> str:
    return ", ".join(f"{round(float(value), 6) + 0.0:.4g}" for value in values)


def _length(segment: _Segment, *, first: bool) -> float:
    """Return the skelarm length of a piece of the arm, after checking it lies along the base's x axis."""
    x, y, z = (float(value) for value in segment.offset)
    end, start = segment.end, segment.start
    if not first and abs(z) > POSITION_TOLERANCE:
        msg = (
            f"URDF {end} is {z:.6g} m along z from {start}; a skelarm arm lies in one plane: every joint and the "
            "tip at the height of the first joint"
        )
        raise URDFError(msg)
    if abs(y) > POSITION_TOLERANCE:
        msg = (
            f"with all joint angles zero, URDF {end} is {y:.6g} m off the base's x axis from {start}; in a skelarm "
            "arm the first joint sits at (base_length, 0) and each link runs along its parent's x axis, so at zero "
            "angles every joint and the tip lie on the base's x axis"
        )
        raise URDFError(msg)
    if not first and x < -POSITION_TOLERANCE:
        msg = (
            f"with all joint angles zero, URDF {end} is {x:.6g} m along x from {start}, behind it; a skelarm "
            "link's length is zero or positive"
        )
        raise URDFError(msg)
    return x if first or x >= 0.0 else 0.0
