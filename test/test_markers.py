"""Marker geometry (pure) and the MarkerArray built from it."""

from __future__ import annotations

import math
import tomllib

import numpy as np
import pytest
import skelarm
from builtin_interfaces.msg import Time
from conftest import random_arm, scenario_file
from visualization_msgs.msg import Marker

from skelarm_ros.nodes.marker_msgs import arm_markers, equilibrium_markers
from skelarm_ros.sim.markers import (
    CONTROLLER_PARTS,
    SIMULATOR_PARTS,
    ArmGeometry,
    MarkerKind,
    MarkerStyle,
    TipTrail,
    color_rgba,
    force_shape,
    goals_from_config,
    scene,
    target_shapes,
)
from skelarm_ros.sim.scenario import load_arm

NAMESPACES = [
    "base_link",
    "links",
    "joints",
    "tip_path",
    "target",
    "target_tolerance",
    "equilibrium",
    "tip_force",
]


def skelarm_points(skeleton: skelarm.Skeleton) -> np.ndarray:
    """Origin, every joint and the tip, from skelarm's own forward kinematics."""
    origin = [(skeleton.links[0].x, skeleton.links[0].y)]
    return np.array(origin + [(link.xe, link.ye) for link in skeleton.links])


@pytest.mark.parametrize("num_links", [1, 2, 4, 7])
def test_arm_points_match_skelarm_forward_kinematics(num_links: int) -> None:
    rng = np.random.default_rng(num_links)
    for _ in range(20):
        skeleton = random_arm(rng, num_links, base=bool(rng.integers(2)))
        arm = ArmGeometry.from_skeleton(skeleton)
        np.testing.assert_allclose(arm.points(skeleton.q), skelarm_points(skeleton), atol=1e-12)
        np.testing.assert_allclose(arm.tip(skeleton.q), [skeleton.links[-1].xe, skeleton.links[-1].ye], atol=1e-12)


def test_arm_points_of_a_series_equal_one_by_one() -> None:
    rng = np.random.default_rng(7)
    arm = ArmGeometry.from_skeleton(random_arm(rng, 3))
    series = rng.uniform(-3, 3, (11, 3))
    batch = arm.points(series)
    assert batch.shape == (11, 5, 2)
    for row, q in zip(batch, series, strict=True):
        np.testing.assert_allclose(row, arm.points(q), atol=1e-12)


def test_shared_robot_base_offset_puts_the_first_joint_at_base_length() -> None:
    setup = load_arm(scenario_file("base_offset_robot"))
    points = ArmGeometry.from_skeleton(setup.skeleton).points(np.zeros(setup.num_joints))
    np.testing.assert_allclose(points, [[0, 0], [0.5, 0], [1.5, 0], [2.3, 0]], atol=1e-12)


def test_wrong_joint_count_names_the_problem() -> None:
    arm = ArmGeometry(0.0, np.array([1.0, 1.0]))
    with pytest.raises(ValueError, match="2 joints; give one angle per joint"):
        arm.points([0.1, 0.2, 0.3])


def test_tip_trail_is_bounded_and_skips_points_that_did_not_move() -> None:
    trail = TipTrail(max_points=5, min_distance=0.01)
    assert trail.points().shape == (0, 2)
    assert trail.append((0.0, 0.0))
    assert not trail.append((0.005, 0.0))  # closer than min_distance to the newest point
    for k in range(1, 10):
        assert trail.append((0.1 * k, 0.0))
    assert len(trail) == 5
    np.testing.assert_allclose(trail.points()[:, 0], [0.5, 0.6, 0.7, 0.8, 0.9])
    trail.clear()
    assert len(trail) == 0
    with pytest.raises(ValueError, match="max_points >= 2"):
        TipTrail(max_points=1)
    with pytest.raises(ValueError, match="min_distance"):
        TipTrail(min_distance=-1.0)


def test_scene_has_the_same_namespaces_whatever_is_shown() -> None:
    arm = ArmGeometry(0.3, np.array([1.0, 0.8]))
    bare = scene(arm, [0.1, 0.2])
    full_trail = TipTrail()
    full_trail.append((0.0, 1.0))
    full_trail.append((0.1, 1.0))
    full = scene(
        arm, [0.1, 0.2], trail=full_trail, force=(3.0, 4.0), target=(1.0, 1.0), tolerance=0.05, equilibrium=(0.5, 0.5)
    )
    assert [shape.namespace for shape in bare] == NAMESPACES
    assert [shape.namespace for shape in full] == NAMESPACES
    assert [shape.visible for shape in bare] == [True, True, True, False, False, False, False, False]
    assert all(shape.visible for shape in full)
    assert not scene(ArmGeometry(0.0, np.array([1.0])), [0.0])[0].visible  # no base link to draw


def test_force_arrow_starts_at_the_tip_and_scales_with_the_force() -> None:
    style = MarkerStyle(force_scale=0.05)
    arrow = force_shape((1.0, 2.0), (3.0, -4.0), style)
    assert arrow.kind is MarkerKind.ARROW
    assert arrow.visible
    np.testing.assert_allclose(arrow.points, [[1.0, 2.0], [1.15, 1.8]])
    assert math.isclose(float(np.linalg.norm(arrow.points[1] - arrow.points[0])), 0.05 * 5.0)
    assert not force_shape((1.0, 2.0), (0.0, 0.0), style).visible
    assert not force_shape((1.0, 2.0), None, style).visible
    with pytest.raises(ValueError, match="tip force must be a finite point"):
        force_shape((1.0, 2.0), (math.nan, 0.0), style)


def test_tolerance_ring_is_a_closed_circle_of_the_tolerance_radius() -> None:
    dot, ring = target_shapes((0.55, 1.21), 0.02, MarkerStyle(), color_rgba("teal"))
    np.testing.assert_allclose(dot.points, [[0.55, 1.21]])
    assert ring.kind is MarkerKind.LINE_STRIP
    np.testing.assert_allclose(np.linalg.norm(ring.points - [0.55, 1.21], axis=1), 0.02)
    np.testing.assert_allclose(ring.points[0], ring.points[-1])
    assert dot.color == ring.color == pytest.approx((0.0, 0.50196, 0.50196, 1.0), abs=1e-4)
    dot, ring = target_shapes((0.55, 1.21), None, MarkerStyle())
    assert dot.visible and not ring.visible
    with pytest.raises(ValueError, match="tolerance must be a finite radius"):
        target_shapes((0.0, 0.0), -0.1, MarkerStyle())
    with pytest.raises(ValueError, match="target must be a finite point"):
        target_shapes((0.0, 0.0, 0.0), None, MarkerStyle())
    with pytest.raises(ValueError, match="unknown colour 'nocolour'"):
        color_rgba("nocolour")


def test_marker_array_is_in_base_with_the_stamp_and_deletes_what_is_hidden() -> None:
    setup = load_arm(scenario_file("reach"))
    arm = ArmGeometry.from_skeleton(setup.skeleton)
    trail = TipTrail()
    for q in np.linspace(setup.q0, setup.q0 + 0.3, 10):
        trail.append(arm.tip(q))
    stamp = Time(sec=3, nanosec=250_000_000)
    array = arm_markers(arm, setup.q0, stamp, trail=trail, force=(2.0, 0.0), target=(0.55, 1.21), tolerance=0.02)
    markers = {marker.ns: marker for marker in array.markers}
    assert [marker.ns for marker in array.markers] == NAMESPACES
    for marker in array.markers:
        assert marker.header.frame_id == "base"
        assert marker.header.stamp == stamp
        assert marker.pose.orientation.w == 1.0
    links = markers["links"]
    assert (links.type, links.action) == (Marker.LINE_STRIP, Marker.ADD)
    tip = arm.tip(setup.q0)
    assert (links.points[-1].x, links.points[-1].y) == pytest.approx(tuple(tip))
    assert len(markers["tip_path"].points) == 10
    assert markers["joints"].type == Marker.SPHERE_LIST
    assert (markers["target"].pose.position.x, markers["target"].pose.position.y) == (0.55, 1.21)
    arrow = markers["tip_force"]
    assert arrow.type == Marker.ARROW
    assert (arrow.points[0].x, arrow.points[0].y) == pytest.approx(tuple(tip))
    assert arrow.scale.x > 0 and arrow.color.a == 1.0
    for hidden in ("base_link", "equilibrium"):
        assert markers[hidden].action == Marker.DELETE
    stopped = arm_markers(arm, setup.q0, stamp, force=(0.0, 0.0))
    assert {m.ns: m.action for m in stopped.markers}["tip_force"] == Marker.DELETE


def test_simulator_and_controller_parts_split_the_namespaces_between_them() -> None:
    arm = ArmGeometry(0.0, np.array([1.0, 1.0]))
    simulator = [shape.namespace for shape in scene(arm, [0.0, 0.0], parts=SIMULATOR_PARTS)]
    controller = [shape.namespace for shape in scene(arm, [0.0, 0.0], parts=CONTROLLER_PARTS)]
    assert sorted(simulator + controller) == sorted(NAMESPACES)
    assert controller == ["equilibrium"]
    with pytest.raises(ValueError, match=r"unknown marker part\(s\) \['arms'\]; choose from"):
        scene(arm, [0.0, 0.0], parts=["arms"])
    stamp = Time(sec=1)
    (shown,) = equilibrium_markers((0.4, 0.9), stamp).markers
    assert (shown.ns, shown.action, shown.type) == ("equilibrium", Marker.ADD, Marker.SPHERE)
    assert (shown.pose.position.x, shown.pose.position.y, shown.header.frame_id) == (0.4, 0.9, "base")
    (gone,) = equilibrium_markers(None, stamp).markers
    assert (gone.ns, gone.action) == ("equilibrium", Marker.DELETE)


def test_multi_target_scenario_marks_the_active_target() -> None:
    config = tomllib.loads((scenario_file("multi_target")).read_text())
    goals = goals_from_config(config)
    assert [goal.active for goal in goals] == [True, False, False]
    assert [goal.color for goal in goals] == ["purple", "teal", "orange"]
    assert goals_from_config({"skeleton": {}}) == []
    goal = goals_from_config(tomllib.loads((scenario_file("reach")).read_text()))[0]
    assert goal.position.tolist() == [0.55, 1.21] and goal.tolerance == 0.02
    with pytest.raises(ValueError, match="unknown task type 'juggling'"):
        goals_from_config({"task": {"type": "juggling"}})
