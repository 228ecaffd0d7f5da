# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""``visualization_msgs/MarkerArray`` messages from the plain marker shapes of :mod:`skelarm_ros.sim.markers`.

Intended use, in the node that owns the arm's state (the simulator)::

    arm = ArmGeometry.from_skeleton(setup.skeleton)  # once
    trail = TipTrail(max_points=500)  # once; trail.clear() on reset
    # in a timer at ~30 Hz (never every integration step):
    trail.append(sim.tip())
    publisher.publish(arm_markers(arm, q, stamp, trail=trail, force=force, target=goal, tolerance=radius,
                                  parts=SIMULATOR_PARTS))

and in a controller that has an equilibrium or reference point, on the same
``markers`` topic: ``publisher.publish(equilibrium_markers(point, stamp))``.

Every array a caller publishes carries the same namespaces; a marker with
nothing to show is sent as ``DELETE`` so rviz drops what it showed before. All
markers are in ``base`` with an identity pose, so rviz shows them with ``base``
as fixed frame and no TF. :class:`SimulatorMarkers` is the simulator's use of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from builtin_interfaces.msg import Time as TimeMsg
from geometry_msgs.msg import Point, PointStamped
from rclpy.clock import Clock, ClockType
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from skelarm_ros.interface import BASE_FRAME, MARKERS, TARGET
from skelarm_ros.sim.markers import (
    SIMULATOR_PARTS,
    ArmGeometry,
    Goal,
    MarkerKind,
    MarkerStyle,
    TipTrail,
    color_rgba,
    equilibrium_shape,
    goals_from_config,
    scene,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from builtin_interfaces.msg import Time
    from numpy.typing import ArrayLike
    from skelarm import Skeleton

    from skelarm_ros.nodes.running import KitNode
    from skelarm_ros.sim.markers import MarkerShape

_TYPES = {
    MarkerKind.LINE_STRIP: Marker.LINE_STRIP,
    MarkerKind.SPHERE_LIST: Marker.SPHERE_LIST,
    MarkerKind.SPHERE: Marker.SPHERE,
    MarkerKind.ARROW: Marker.ARROW,
}


def to_marker(shape: MarkerShape, stamp: Time, frame_id: str = BASE_FRAME) -> Marker:
    """Build one ``Marker`` from a :class:`~skelarm_ros.sim.markers.MarkerShape`.

    A :attr:`~skelarm_ros.sim.markers.MarkerKind.SPHERE` is placed by its pose (at the
    shape's first point); every other kind carries its points. A hidden shape
    becomes a ``DELETE`` for its namespace and id.
    """
    marker = Marker()
    marker.header.stamp = stamp
    marker.header.frame_id = frame_id
    marker.ns = shape.namespace
    marker.id = shape.id
    marker.type = _TYPES[shape.kind]
    marker.pose.orientation.w = 1.0
    if not shape.visible:
        marker.action = Marker.DELETE
        return marker
    marker.action = Marker.ADD
    marker.scale.x, marker.scale.y, marker.scale.z = shape.scale
    marker.color = ColorRGBA(r=shape.color[0], g=shape.color[1], b=shape.color[2], a=shape.color[3])
    if shape.kind is MarkerKind.SPHERE:
        marker.pose.position.x, marker.pose.position.y = (float(value) for value in shape.points[0])
    else:
        marker.points = [Point(x=x, y=y) for x, y in shape.points.tolist()]
    return marker


def marker_array(shapes: Iterable[MarkerShape], stamp: Time, frame_id: str = BASE_FRAME) -> MarkerArray:
    """Build a ``MarkerArray`` of the shapes, all stamped ``stamp`` in ``frame_id``."""
    return MarkerArray(markers=[to_marker(shape, stamp, frame_id) for shape in shapes])


def arm_markers(
    arm: ArmGeometry, q: ArrayLike, stamp: Time, *, frame_id: str = BASE_FRAME, **options: Any
) -> MarkerArray:
    """Build the arm's marker scene for the ``markers`` topic.

    Parameters
    ----------
    arm : ArmGeometry
        The arm's lengths, made once with :meth:`ArmGeometry.from_skeleton`.
    q : ArrayLike
        Joint angles (rad), one per joint.
    stamp : Time
        The stamp of the state drawn (``builtin_interfaces/Time``, simulated time).
    frame_id : str, optional
        The plane's frame (default ``base``).
    **options : Any
        What else to draw, passed to :func:`skelarm_ros.sim.markers.scene`: ``trail``
        (a :class:`~skelarm_ros.sim.markers.TipTrail`), ``force`` ``(fx, fy)`` in N,
        ``target`` ``(x, y)``, ``tolerance`` (m), ``equilibrium`` ``(x, y)``,
        ``style``, ``target_color`` and ``parts`` (the simulator passes
        :data:`~skelarm_ros.sim.markers.SIMULATOR_PARTS`).

    Returns
    -------
    MarkerArray
        One marker per namespace of the parts drawn, in the order of :func:`~skelarm_ros.sim.markers.scene`.

    Raises
    ------
    ValueError
        On an unknown part, a wrong number of joint angles, or a bad point, tolerance or force.
    """
    return marker_array(scene(arm, q, **options), stamp, frame_id)


def equilibrium_markers(
    point: ArrayLike | None, stamp: Time, *, style: MarkerStyle | None = None, frame_id: str = BASE_FRAME
) -> MarkerArray:
    """Build the controller's equilibrium (or reference) marker, namespace ``equilibrium``.

    Parameters
    ----------
    point : ArrayLike | None
        ``(x, y)`` in ``base`` (m); ``None`` deletes the marker.
    stamp : Time
        The stamp of the state the point belongs to.
    style : MarkerStyle | None, optional
        Sizes and colours.
    frame_id : str, optional
        The plane's frame (default ``base``).
    """
    return marker_array([equilibrium_shape(point, MarkerStyle() if style is None else style)], stamp, frame_id)


class SimulatorMarkers:
    """The simulator's ``markers``: the arm, its tip path, the goal and the applied tip force, on a wall-clock timer.

    The goal is the scenario's (its colour and tolerance ring) until a ``target``
    message moves it, as the controller follows the target live.

    Parameters
    ----------
    node : KitNode
        The simulator node (publisher, subscription and timer are its own; the publisher
        is its stand-in for ``markers`` when it has one).
    skeleton : skelarm.Skeleton
        The arm drawn.
    config : Mapping[str, Any]
        The scenario's tables (its task's goal).
    rate : float
        Markers per second (wall time).
    state : Callable[[], tuple[tuple[int, int], Any, Any, Any]]
        Returns the present ``((sec, nanosec), q, tip, applied force)``.
    """

    def __init__(
        self,
        node: KitNode,
        skeleton: Skeleton,
        config: Mapping[str, Any],
        rate: float,
        state: Callable[[], tuple[tuple[int, int], Any, Any, Any]],
    ) -> None:
        """Create the publisher, the target subscription and the timer."""
        self._arm = ArmGeometry.from_skeleton(skeleton)
        self._trail = TipTrail()
        try:
            goals = goals_from_config(config)
        except ValueError as error:  # a task type only a controller plugin knows: the arm is still drawn
            goals = []
            node.get_logger().info(
                f"markers show no goal: the scenario's [task] is not one skelarm reads here ({error})"
            )
        self._goal = next((goal for goal in goals if goal.active), None)
        self._state = state
        self.publisher = node.publisher(MarkerArray, MARKERS, 10)
        node.create_subscription(PointStamped, TARGET, self.on_target, 10)
        node.create_timer(1.0 / rate, self.publish, clock=Clock(clock_type=ClockType.STEADY_TIME))

    def clear(self) -> None:
        """Forget the tip path (after a reset)."""
        self._trail.clear()

    def on_target(self, msg: PointStamped) -> None:
        """Show a live reaching goal (the controller follows ``target``) instead of the scenario's."""
        position = np.array([msg.point.x, msg.point.y])
        if msg.header.frame_id in ("", BASE_FRAME) and np.isfinite(position).all():
            tolerance = None if self._goal is None else self._goal.tolerance
            color = "purple" if self._goal is None else self._goal.color
            self._goal = Goal(position, color, tolerance)

    def publish(self) -> None:
        """Publish the scene of the present state, while someone reads it."""
        if self.publisher.get_subscription_count() == 0:
            return
        (sec, nanosec), q, tip, force = self._state()
        self._trail.append(tip)
        goal = self._goal
        self.publisher.publish(
            arm_markers(
                self._arm,
                q,
                TimeMsg(sec=sec, nanosec=nanosec),
                trail=self._trail,
                force=force,
                target=None if goal is None else goal.position,
                tolerance=None if goal is None else goal.tolerance,
                target_color=None if goal is None else color_rgba(goal.color),
                parts=SIMULATOR_PARTS,
            )
        )
