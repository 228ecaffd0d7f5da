# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Checks and conversions between message fields and arrays, on plain values.

The nodes hand these functions the fields of a message (lists, strings, numbers),
never the message itself, so the rules for what is accepted are tested without
ROS. A value that breaks a rule raises :class:`Rejected` with one sentence naming
the problem and what would be right; the caller counts it and warns.

This module does not import rclpy.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from skelarm_ros.interface import BASE_FRAME

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray


class Rejected(ValueError):
    """A message that is not applied; the message says why and what is expected."""


def effort_array(values: Sequence[float], num_joints: int, what: str = "effort command") -> NDArray[np.float64]:
    """Check an effort vector given in joint order (``Float64MultiArray.data``).

    Parameters
    ----------
    values : Sequence[float]
        One value per joint, in ``joint_names`` order.
    num_joints : int
        Number of joints of the arm.
    what : str, optional
        How to name the message in the rejection.

    Returns
    -------
    NDArray[np.float64]
        The values, shape ``(num_joints,)``.

    Raises
    ------
    Rejected
        On a wrong count or a NaN or infinite value.
    """
    array = np.asarray(values, dtype=np.float64).reshape(-1)
    if array.size != num_joints:
        msg = f"{what} has {array.size} values but the arm has {num_joints} joints; send one value per joint"
        raise Rejected(msg)
    if not np.isfinite(array).all():
        msg = f"{what} holds a NaN or infinite value ({array.tolist()}); send finite values"
        raise Rejected(msg)
    return array


def by_name(
    names: Sequence[str],
    values: Sequence[float],
    joint_names: Sequence[str],
    field: str,
    what: str = "message",
    *,
    allow_extra: bool = False,
) -> NDArray[np.float64]:
    """Pick one field of a JointState-like message by joint name, into ``joint_names`` order.

    Parameters
    ----------
    names : Sequence[str]
        The message's ``name`` list.
    values : Sequence[float]
        The message's ``position``, ``velocity`` or ``effort`` list.
    joint_names : Sequence[str]
        The arm's joints, in the order wanted.
    field : str
        The field's name, for messages.
    what : str, optional
        How to name the message in the rejection.
    allow_extra : bool, optional
        Ignore names that are not the arm's (a driver may publish more joints).

    Returns
    -------
    NDArray[np.float64]
        The values in ``joint_names`` order.

    Raises
    ------
    Rejected
        On a length mismatch, an unknown or repeated name (unless ``allow_extra``),
        a missing joint, or a NaN or infinite value.
    """
    if len(values) != len(names):
        msg = f"{what} has {len(names)} names but {len(values)} {field} values; send one value per name"
        raise Rejected(msg)
    index: dict[str, int] = {}
    for position, name in enumerate(names):
        if name in index:
            msg = f"{what} names joint '{name}' twice; each joint once"
            raise Rejected(msg)
        index[name] = position
    if not allow_extra:
        unknown = [name for name in names if name not in set(joint_names)]
        if unknown:
            msg = f"{what} names unknown joint(s) {unknown}; the arm's joints are {list(joint_names)}"
            raise Rejected(msg)
    missing = [name for name in joint_names if name not in index]
    if missing:
        msg = f"{what} lacks joint(s) {missing}; it must carry every joint of {list(joint_names)}"
        raise Rejected(msg)
    array = np.array([values[index[name]] for name in joint_names], dtype=np.float64)
    if not np.isfinite(array).all():
        msg = f"{what} holds a NaN or infinite {field} value ({array.tolist()}); send finite values"
        raise Rejected(msg)
    return array


class NameOrder:
    """:func:`by_name` for a stream of messages, keeping the mapping of the last name list it checked.

    A stream repeats one name list, so its check and mapping are done once; a message
    with another list, a wrong length or a non-finite value goes through :func:`by_name`
    itself (and is rejected with its sentence).

    Parameters
    ----------
    joint_names : Sequence[str]
        The arm's joints, in the order wanted.
    what : str
        How to name the message in a rejection.
    allow_extra : bool, optional
        Ignore names that are not the arm's.
    """

    def __init__(self, joint_names: Sequence[str], what: str, *, allow_extra: bool = False) -> None:
        """Start with no name list seen."""
        self.joint_names = list(joint_names)
        self.what = what
        self.allow_extra = allow_extra
        self._names: list[str] | None = None
        self._index: list[int] = []

    def pick(self, names: Sequence[str], values: Sequence[float], field: str) -> NDArray[np.float64]:
        """Return ``values`` (one per name in ``names``) in ``joint_names`` order, as :func:`by_name` does.

        Raises
        ------
        Rejected
            As :func:`by_name`.
        """
        if names != self._names or len(values) != len(names):
            array = by_name(names, values, self.joint_names, field, self.what, allow_extra=self.allow_extra)
            where = {name: position for position, name in enumerate(names)}
            self._names, self._index = list(names), [where[name] for name in self.joint_names]
            return array
        array = np.array([values[position] for position in self._index], dtype=np.float64)
        if not np.isfinite(array).all():
            return by_name(names, values, self.joint_names, field, self.what, allow_extra=self.allow_extra)
        return array


def planar_force(
    frame_id: str,
    force: Sequence[float],
    torque: Sequence[float],
    tolerance: float,
    frame: str = BASE_FRAME,
) -> NDArray[np.float64]:
    """Check a tip wrench and return its planar force ``(fx, fy)``.

    Parameters
    ----------
    frame_id : str
        The wrench header's frame; must be ``frame`` (an empty frame is taken as ``frame``).
    force, torque : Sequence[float]
        ``(x, y, z)`` of the wrench's force and torque.
    tolerance : float
        Largest out-of-plane component (``force.z``, any torque) accepted as zero.
    frame : str, optional
        The plane's frame.

    Returns
    -------
    NDArray[np.float64]
        ``(fx, fy)`` in newtons.

    Raises
    ------
    Rejected
        On another frame, non-finite values, or out-of-plane components beyond tolerance.
    """
    if frame_id not in ("", frame):
        msg = f"tip wrench is in frame '{frame_id}'; send it in '{frame}' (force.x and force.y in the arm's plane)"
        raise Rejected(msg)
    values = [*force, *torque]
    if not all(math.isfinite(value) for value in values):
        msg = f"tip wrench holds a NaN or infinite value ({values}); send finite values"
        raise Rejected(msg)
    out_of_plane = max(abs(force[2]), *(abs(value) for value in torque))
    if out_of_plane > tolerance:
        msg = (
            f"tip wrench has out-of-plane components (force.z={force[2]}, torque={list(torque)}) beyond "
            f"{tolerance}; only force.x and force.y act on a planar arm, send the others as zero"
        )
        raise Rejected(msg)
    return np.array([force[0], force[1]], dtype=np.float64)
