# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The geometry of the arm's rviz markers, computed from plain values.

Every function here returns :class:`MarkerShape` values (a kind, points in the
``base`` plane, a scale, a colour, a namespace and an id) that
:mod:`skelarm_ros.nodes.marker_msgs` turns into a ``visualization_msgs/MarkerArray``.
The markers show the arm in rviz with no ``robot_state_publisher`` and no TF: all
points are in ``base``.

Each call of :func:`scene` returns the same set of namespaces. A marker with
nothing to show (no force, no target, a tip path of fewer than two points) comes
back with ``visible=False`` so the message builder deletes the one rviz still
shows, instead of leaving a stale arrow or target behind.

The work per call is a few small numpy operations; a node calls it at a throttled
rate (e.g. 30 Hz), not every integration step.

This module does not import rclpy.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import numpy as np
from skelarm.scenario import Task, active_target_index, multi_target_specs

if TYPE_CHECKING:
    from collections.abc import Collection

    from numpy.typing import ArrayLike, NDArray
    from skelarm import Skeleton

RGBA = tuple[float, float, float, float]

# Colours follow skelarm's own drawings (skelarm.plotting, the GUI canvas).
LINK_COLOR: RGBA = (0.0, 0.392, 0.784, 1.0)  # blue, movable links
BASE_COLOR: RGBA = (0.588, 0.588, 0.588, 1.0)  # gray, fixed base link
JOINT_COLOR: RGBA = (0.0, 0.667, 0.0, 1.0)  # green, joints
TIP_PATH_COLOR: RGBA = (0.9, 0.1, 0.1, 0.8)  # red, like skelarm's tip trajectory
TARGET_COLOR: RGBA = (0.502, 0.0, 0.502, 1.0)  # purple, skelarm's default target colour
EQUILIBRIUM_COLOR: RGBA = (1.0, 0.55, 0.0, 1.0)  # orange, the controller's equilibrium / reference
FORCE_COLOR: RGBA = (0.85, 0.0, 0.0, 1.0)  # red, the external tip force

# The parts of the scene, each one or more namespaces; a node draws the parts it knows.
PARTS = ("arm", "tip_path", "target", "equilibrium", "tip_force")
SIMULATOR_PARTS = ("arm", "tip_path", "target", "tip_force")  # the simulator knows state, goal and force
CONTROLLER_PARTS = ("equilibrium",)  # the controller knows its equilibrium or reference point

_RING_SEGMENTS = 48
_RING_ANGLES = np.linspace(0.0, 2.0 * math.pi, _RING_SEGMENTS + 1)
_UNIT_CIRCLE = np.stack([np.cos(_RING_ANGLES), np.sin(_RING_ANGLES)], axis=1)  # closed: last point = first


class MarkerKind(StrEnum):
    """What a :class:`MarkerShape` is drawn as (the ``visualization_msgs/Marker`` types used)."""

    LINE_STRIP = "line_strip"  # points joined in order; scale x = line width
    SPHERE_LIST = "sphere_list"  # one sphere per point; scale = diameters
    SPHERE = "sphere"  # one sphere at points[0]; scale = diameters
    ARROW = "arrow"  # from points[0] to points[1]; scale = (shaft diameter, head diameter, head length)


@dataclass(frozen=True)
class MarkerShape:
    """One marker, in plain values.

    Attributes
    ----------
    namespace : str
        The marker's namespace (``ns``); with ``id`` it names the marker in rviz.
    id : int
        The marker's id within its namespace.
    kind : MarkerKind
        How the points are drawn.
    points : NDArray[np.float64]
        Points ``(x, y)`` in ``base`` (m), shape ``(k, 2)``; ``z`` is zero (the plane).
    scale : tuple[float, float, float]
        The marker's scale (m), meaning as in :class:`MarkerKind`.
    color : RGBA
        Red, green, blue, alpha in ``[0, 1]``.
    visible : bool
        ``False`` asks the message builder to delete this marker (nothing to show now).
    """

    namespace: str
    id: int
    kind: MarkerKind
    points: NDArray[np.float64]
    scale: tuple[float, float, float]
    color: RGBA
    visible: bool = True


@dataclass(frozen=True)
class MarkerStyle:
    """Sizes and colours of the markers, sized for an arm of about 2 m.

    Attributes
    ----------
    link_width : float
        Line width of the links (m).
    joint_diameter : float
        Diameter of the joint spheres (m).
    path_width : float
        Line width of the tip path (m).
    point_diameter : float
        Diameter of the target and equilibrium spheres (m).
    ring_width : float
        Line width of the tolerance ring (m).
    force_scale : float
        Arrow length per newton of tip force (m/N).
    arrow_shaft : float
        Arrow shaft diameter (m); the head is twice as wide and three times as long.
    min_force : float
        Forces at or below this norm (N) draw no arrow.
    link_color, base_color, joint_color, tip_path_color, target_color, equilibrium_color, force_color : RGBA
        Colours.
    """

    link_width: float = 0.025
    joint_diameter: float = 0.05
    path_width: float = 0.008
    point_diameter: float = 0.04
    ring_width: float = 0.006
    force_scale: float = 0.02
    arrow_shaft: float = 0.015
    min_force: float = 1e-9
    link_color: RGBA = LINK_COLOR
    base_color: RGBA = BASE_COLOR
    joint_color: RGBA = JOINT_COLOR
    tip_path_color: RGBA = TIP_PATH_COLOR
    target_color: RGBA = TARGET_COLOR
    equilibrium_color: RGBA = EQUILIBRIUM_COLOR
    force_color: RGBA = FORCE_COLOR


@dataclass(frozen=True)
class ArmGeometry:
    """The lengths a drawing of the arm needs, taken once from a Skeleton.

    Attributes
    ----------
    base_length : float
        Length of the fixed base link (m); the first joint is at ``(base_length, 0)``.
    lengths : NDArray[np.float64]
        Lengths of the movable links (m), shape ``(N,)``.
    """

    base_length: float
    lengths: NDArray[np.float64]

    @classmethod
    def from_skeleton(cls, skeleton: Skeleton) -> ArmGeometry:
        """Take the base and link lengths of a skelarm Skeleton (its state is not read)."""
        lengths = np.array([link.prop.length for link in skeleton.links[1:]], dtype=np.float64)
        return cls(float(skeleton.base_length), lengths)

    @property
    def num_joints(self) -> int:
        """Number of joints."""
        return int(self.lengths.size)

    def points(self, q: ArrayLike) -> NDArray[np.float64]:
        """Return the origin, every joint and the tip, in ``base``.

        Parameters
        ----------
        q : ArrayLike
            Joint angles (rad), shape ``(N,)``, or a series of them, shape ``(T, N)``.

        Returns
        -------
        NDArray[np.float64]
            Shape ``(N + 2, 2)`` (or ``(T, N + 2, 2)``): the origin ``(0, 0)``, joint 1
            at ``(base_length, 0)``, joints 2..N, and the tip, as skelarm's forward
            kinematics places them.

        Raises
        ------
        ValueError
            If ``q`` does not hold one angle per joint.
        """
        angles = np.asarray(q, dtype=np.float64)
        if angles.shape[-1:] != (self.num_joints,):
            msg = f"q has shape {angles.shape} but the arm has {self.num_joints} joints; give one angle per joint"
            raise ValueError(msg)
        absolute = np.cumsum(angles, axis=-1)
        steps = np.stack([np.cos(absolute), np.sin(absolute)], axis=-1) * self.lengths[:, None]
        points = np.zeros((*angles.shape[:-1], self.num_joints + 2, 2))
        points[..., 1:, 0] = self.base_length
        points[..., 2:, :] += np.cumsum(steps, axis=-2)
        return points

    def tip(self, q: ArrayLike) -> NDArray[np.float64]:
        """Return the tip position(s) ``(x, y)`` for ``q`` of shape ``(N,)`` or ``(T, N)``."""
        return self.points(q)[..., -1, :]


@dataclass
class TipTrail:
    """A bounded history of tip positions, the newest last.

    Parameters
    ----------
    max_points : int, optional
        Most points kept; the oldest drop off.
    min_distance : float, optional
        A point closer than this (m) to the newest kept point is not added, so an arm
        at rest does not flush its history.
    """

    max_points: int = 500
    min_distance: float = 1e-3
    _points: deque[tuple[float, float]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        """Check the bounds and start empty."""
        if self.max_points < 2:
            msg = f"a tip trail needs max_points >= 2 to draw a path, got {self.max_points}"
            raise ValueError(msg)
        if not (math.isfinite(self.min_distance) and self.min_distance >= 0.0):
            msg = f"min_distance must be a finite distance >= 0 (m), got {self.min_distance}"
            raise ValueError(msg)
        self._points = deque(maxlen=self.max_points)

    def append(self, point: ArrayLike) -> bool:
        """Add a tip position ``(x, y)``; return whether it was kept."""
        x, y = (float(value) for value in np.asarray(point, dtype=np.float64).reshape(2))
        if self._points:
            last_x, last_y = self._points[-1]
            if math.hypot(x - last_x, y - last_y) < self.min_distance:
                return False
        self._points.append((x, y))
        return True

    def clear(self) -> None:
        """Forget the history (e.g. when the simulator is reset)."""
        self._points.clear()

    def __len__(self) -> int:
        """Return the number of points kept."""
        return len(self._points)

    def points(self) -> NDArray[np.float64]:
        """Return the kept points, oldest first, shape ``(k, 2)``."""
        return np.array(self._points, dtype=np.float64).reshape(-1, 2)


def _hidden(namespace: str, kind: MarkerKind, style_scale: tuple[float, float, float], color: RGBA) -> MarkerShape:
    return MarkerShape(namespace, 0, kind, np.zeros((0, 2)), style_scale, color, visible=False)


def _point(value: ArrayLike | None, what: str) -> NDArray[np.float64] | None:
    if value is None:
        return None
    array = np.asarray(value, dtype=np.float64).reshape(-1)
    if array.size != 2 or not np.isfinite(array).all():
        msg = f"{what} must be a finite point (x, y) in metres, got {array.tolist()}"
        raise ValueError(msg)
    return array


def arm_shapes(points: NDArray[np.float64], style: MarkerStyle) -> list[MarkerShape]:
    """Return the base link, the movable links and the joints for the points of :meth:`ArmGeometry.points`.

    Namespaces: ``base_link`` (gray line, hidden for a zero base length), ``links``
    (blue line strip from joint 1 to the tip) and ``joints`` (green spheres at the
    joints and the tip).
    """
    line = (style.link_width, 0.0, 0.0)
    base = points[:2]
    has_base = bool(np.any(base[1] != base[0]))
    sphere = (style.joint_diameter,) * 3
    return [
        MarkerShape("base_link", 0, MarkerKind.LINE_STRIP, base, line, style.base_color, visible=has_base),
        MarkerShape("links", 0, MarkerKind.LINE_STRIP, points[1:], line, style.link_color),
        MarkerShape("joints", 0, MarkerKind.SPHERE_LIST, points[1:], sphere, style.joint_color),
    ]


def tip_path_shape(trail: NDArray[np.float64], style: MarkerStyle) -> MarkerShape:
    """Return the tip path (namespace ``tip_path``) as a line strip; hidden with fewer than two points."""
    scale = (style.path_width, 0.0, 0.0)
    if len(trail) < 2:
        return _hidden("tip_path", MarkerKind.LINE_STRIP, scale, style.tip_path_color)
    return MarkerShape("tip_path", 0, MarkerKind.LINE_STRIP, trail, scale, style.tip_path_color)


def target_shapes(
    target: ArrayLike | None, tolerance: float | None, style: MarkerStyle, color: RGBA | None = None
) -> list[MarkerShape]:
    """Return the target sphere (``target``) and its tolerance ring (``target_tolerance``).

    Parameters
    ----------
    target : ArrayLike | None
        The reaching goal ``(x, y)`` in ``base``; ``None`` hides both markers.
    tolerance : float | None
        Success radius (m); ``None`` or zero hides the ring.
    style : MarkerStyle
        Sizes and colours.
    color : RGBA | None, optional
        The target's colour (e.g. the task's); default ``style.target_color``.

    Raises
    ------
    ValueError
        If the target is not a finite point or the tolerance is negative or not finite.
    """
    rgba = style.target_color if color is None else color
    sphere = (style.point_diameter,) * 3
    ring_scale = (style.ring_width, 0.0, 0.0)
    goal = _point(target, "target")
    if tolerance is not None and not (math.isfinite(tolerance) and tolerance >= 0.0):
        msg = f"target tolerance must be a finite radius >= 0 (m), got {tolerance}"
        raise ValueError(msg)
    if goal is None:
        return [
            _hidden("target", MarkerKind.SPHERE, sphere, rgba),
            _hidden("target_tolerance", MarkerKind.LINE_STRIP, ring_scale, rgba),
        ]
    dot = MarkerShape("target", 0, MarkerKind.SPHERE, goal[None, :], sphere, rgba)
    if not tolerance:
        return [dot, _hidden("target_tolerance", MarkerKind.LINE_STRIP, ring_scale, rgba)]
    ring = goal + float(tolerance) * _UNIT_CIRCLE
    return [dot, MarkerShape("target_tolerance", 0, MarkerKind.LINE_STRIP, ring, ring_scale, rgba)]


def equilibrium_shape(equilibrium: ArrayLike | None, style: MarkerStyle) -> MarkerShape:
    """Return the controller's equilibrium or reference point (namespace ``equilibrium``); ``None`` hides it."""
    sphere = (style.point_diameter,) * 3
    point = _point(equilibrium, "equilibrium")
    if point is None:
        return _hidden("equilibrium", MarkerKind.SPHERE, sphere, style.equilibrium_color)
    return MarkerShape("equilibrium", 0, MarkerKind.SPHERE, point[None, :], sphere, style.equilibrium_color)


def force_shape(tip: ArrayLike, force: ArrayLike | None, style: MarkerStyle) -> MarkerShape:
    """Return the tip force as an arrow from the tip (namespace ``tip_force``).

    The arrow starts at the tip and is ``style.force_scale`` metres long per newton,
    pointing along the force. A force of norm ``style.min_force`` or less (or
    ``None``) hides it.

    Raises
    ------
    ValueError
        If the tip or the force is not a finite planar vector.
    """
    shaft = style.arrow_shaft
    scale = (shaft, 2.0 * shaft, 3.0 * shaft)
    start = _point(tip, "tip")
    vector = _point(force, "tip force")
    if start is None or vector is None or math.hypot(vector[0], vector[1]) <= style.min_force:
        return _hidden("tip_force", MarkerKind.ARROW, scale, style.force_color)
    points = np.stack([start, start + style.force_scale * vector])
    return MarkerShape("tip_force", 0, MarkerKind.ARROW, points, scale, style.force_color)


def scene(
    arm: ArmGeometry,
    q: ArrayLike,
    *,
    trail: TipTrail | None = None,
    force: ArrayLike | None = None,
    target: ArrayLike | None = None,
    tolerance: float | None = None,
    equilibrium: ArrayLike | None = None,
    style: MarkerStyle | None = None,
    target_color: RGBA | None = None,
    parts: Collection[str] = PARTS,
) -> list[MarkerShape]:
    """Return the markers of the arm's scene, always the same namespaces in the same order.

    Parameters
    ----------
    arm : ArmGeometry
        The arm's lengths (:meth:`ArmGeometry.from_skeleton`, made once).
    q : ArrayLike
        Joint angles (rad), shape ``(N,)``.
    trail : TipTrail | None, optional
        The tip's recent path; the caller appends the tip to it (``None``: no path).
    force : ArrayLike | None, optional
        External tip force ``(fx, fy)`` in ``base`` (N); ``None`` or zero: no arrow.
    target : ArrayLike | None, optional
        Reaching goal ``(x, y)`` (m); ``None``: no target.
    tolerance : float | None, optional
        The target's success radius (m); ``None``: no ring.
    equilibrium : ArrayLike | None, optional
        The controller's spring equilibrium or reference point ``(x, y)``; ``None``: none.
    style : MarkerStyle | None, optional
        Sizes and colours; default :class:`MarkerStyle()`.
    target_color : RGBA | None, optional
        The target's colour, e.g. from the task; default the style's.
    parts : Collection[str], optional
        Which parts of :data:`PARTS` to draw; a node draws only what it owns, so two
        publishers on one ``markers`` topic never delete each other's markers.

    Returns
    -------
    list[MarkerShape]
        In this order, for the parts asked for: ``base_link``, ``links``, ``joints``
        (part ``arm``), ``tip_path``, ``target`` and ``target_tolerance`` (part
        ``target``), ``equilibrium``, ``tip_force``. Those with nothing to show have
        ``visible=False``.

    Raises
    ------
    ValueError
        On an unknown part, or a bad point, tolerance or force.
    """
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        msg = f"unknown marker part(s) {unknown}; choose from {list(PARTS)}"
        raise ValueError(msg)
    look = MarkerStyle() if style is None else style
    points = arm.points(q)
    shapes: list[MarkerShape] = []
    if "arm" in parts:
        shapes += arm_shapes(points, look)
    if "tip_path" in parts:
        shapes.append(tip_path_shape(np.zeros((0, 2)) if trail is None else trail.points(), look))
    if "target" in parts:
        shapes += target_shapes(target, tolerance, look, target_color)
    if "equilibrium" in parts:
        shapes.append(equilibrium_shape(equilibrium, look))
    if "tip_force" in parts:
        shapes.append(force_shape(points[-1], force, look))
    return shapes


@dataclass(frozen=True)
class Goal:
    """A reaching target of a scenario's task.

    Attributes
    ----------
    position : NDArray[np.float64]
        ``(x, y)`` in ``base`` (m).
    color : str
        The task's colour for it (a colour name or ``#rrggbb``).
    tolerance : float | None
        Success radius (m), or ``None``.
    active : bool
        Whether it is the goal sought (a multi-target task has one active target).
    """

    position: NDArray[np.float64]
    color: str
    tolerance: float | None
    active: bool = True


def goals_from_config(config: Mapping[str, Any]) -> list[Goal]:
    """Return the targets of a scenario's ``[task]`` table, parsed by skelarm; empty when there is none.

    A multi-target task gives every candidate with the active one marked.

    Raises
    ------
    ValueError
        If skelarm rejects the ``[task]`` table (the message says what is wrong).
    """
    section = config.get("task")
    if not isinstance(section, Mapping):
        return []
    task = Task.from_dict(section)
    if "targets" in task.params:
        active = active_target_index(task)
        return [
            Goal(np.asarray(pos, dtype=np.float64), color, tolerance, index == active)
            for index, (pos, _, color, tolerance) in enumerate(multi_target_specs(task))
        ]
    if task.target is None:
        return []
    return [Goal(np.asarray(task.target, dtype=np.float64), task.color, task.tolerance)]


def color_rgba(color: str, alpha: float = 1.0) -> RGBA:
    """Turn a colour name or ``#rrggbb`` (as skelarm's task ``color``) into RGBA.

    Raises
    ------
    ValueError
        If matplotlib does not know the colour.
    """
    from matplotlib.colors import to_rgba

    try:
        red, green, blue, _ = to_rgba(color)
    except ValueError:
        msg = f"unknown colour {color!r}; use a colour name (purple, teal...) or '#rrggbb'"
        raise ValueError(msg) from None
    return (float(red), float(green), float(blue), float(alpha))
