"""The URDF made from a Skeleton, parsed back and checked joint by joint, link by link."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import skelarm
from conftest import SCENARIOS, random_arm
from urdf_parser_py.urdf import URDF, Box

from skelarm_ros.engine import build_model
from skelarm_ros.interface import default_joint_names
from skelarm_ros.scenario import load_arm
from skelarm_ros.urdf import DEFAULT_EFFORT_LIMIT, LINK_WIDTH, link_names, skeleton_to_urdf

ROBOT_FILES = sorted(SCENARIOS.glob("*.toml"))


def check_urdf(skeleton: skelarm.Skeleton, names: list[str], efforts: list[float] | None) -> URDF:
    """Parse the URDF back and compare every joint, limit, inertial and visual with the skeleton."""
    robot = URDF.from_xml_string(skeleton_to_urdf(skeleton, names, effort_limits=efforts))
    links = {link.name: link for link in robot.links}
    joints = {joint.name: joint for joint in robot.joints}
    children = link_names(skeleton.num_joints)
    assert robot.get_root() == "base"
    assert set(links) == {"base", "tip", *children}
    assert set(joints) == {*names, "tip_joint"}
    parent, offset = "base", skeleton.base_length
    for index, link in enumerate(skeleton.links[1:]):
        prop = link.prop
        joint = joints[names[index]]
        assert joint.type == "revolute"
        assert joint.axis == [0.0, 0.0, 1.0]
        assert (joint.parent, joint.child) == (parent, children[index])
        assert joint.origin.xyz == pytest.approx([offset, 0.0, 0.0], abs=1e-15)
        assert joint.origin.rpy == [0.0, 0.0, 0.0]
        assert joint.limit.lower == prop.qmin
        assert joint.limit.upper == prop.qmax
        expected_effort = DEFAULT_EFFORT_LIMIT if efforts is None or math.isinf(efforts[index]) else efforts[index]
        assert joint.limit.effort == expected_effort
        assert joint.limit.velocity > 0.0
        body = links[children[index]]
        assert body.inertial.mass == prop.m
        assert body.inertial.origin.xyz == [prop.rgx, prop.rgy, 0.0]
        assert body.inertial.inertia.izz == prop.i
        assert (body.inertial.inertia.ixy, body.inertial.inertia.ixz, body.inertial.inertia.iyz) == (0.0, 0.0, 0.0)
        check_box(body, prop.length)
        parent, offset = children[index], prop.length
    tip = joints["tip_joint"]
    assert (tip.type, tip.parent, tip.child) == ("fixed", parent, "tip")
    assert tip.origin.xyz == [offset, 0.0, 0.0]
    if skeleton.base_length > 0.0:
        check_box(links["base"], skeleton.base_length)
    else:
        assert links["base"].visuals == []
    return robot


def check_box(link, length: float) -> None:
    """A link is drawn as one box of its length along x, starting at its joint."""
    (visual,) = link.visuals
    assert isinstance(visual.geometry, Box)
    assert visual.geometry.size == pytest.approx([max(length, 1e-4), LINK_WIDTH, LINK_WIDTH], rel=1e-15)
    assert visual.origin.xyz == pytest.approx([length / 2, 0.0, 0.0], rel=1e-15)


@pytest.mark.parametrize("path", ROBOT_FILES, ids=[path.stem for path in ROBOT_FILES])
def test_shared_robots_round_trip(path: Path) -> None:
    skeleton = load_arm(path).skeleton
    names = default_joint_names(skeleton.num_joints)
    check_urdf(skeleton, names, None)
    efforts = [float(5 * (k + 1)) for k in range(skeleton.num_joints)]
    efforts[-1] = math.inf  # no limit on the last joint: the default is written
    check_urdf(skeleton, names, efforts)


def test_shared_robot_files_are_the_expected_ones() -> None:
    stems = {path.stem for path in ROBOT_FILES}
    assert {"base_offset_robot", "four_dof_robot", "simple_robot", "reach"} <= stems


@pytest.mark.parametrize("num_links", [1, 2, 3, 5, 8])
def test_random_arms_round_trip(num_links: int) -> None:
    rng = np.random.default_rng(100 + num_links)
    for trial in range(10):
        skeleton = random_arm(rng, num_links, base=trial % 2 == 0)
        names = [f"arm/joint_{k}<&>" for k in range(num_links)]  # names needing XML escapes
        check_urdf(skeleton, names, list(rng.uniform(0.5, 50.0, num_links)))


def test_zero_length_link_still_has_a_visible_box() -> None:
    skeleton = skelarm.Skeleton(
        [skelarm.LinkProp(length=0.0, m=1.0, i=0.1, rgx=0.0, rgy=0.0, qmin=-1.0, qmax=1.0)], base_length=0.2
    )
    check_urdf(skeleton, ["j1"], None)


def test_urdfdom_reads_the_same_dynamics_as_the_engine() -> None:
    """The C++ URDF parser (as rviz and robot_state_publisher use it) gives the engine's model."""
    rng = np.random.default_rng(5)
    for path in ROBOT_FILES[:3]:
        skeleton = load_arm(path).skeleton
        parsed = pin.buildModelFromXML(skeleton_to_urdf(skeleton, default_joint_names(skeleton.num_joints)))
        engine, _ = build_model(skeleton)
        np.testing.assert_allclose(parsed.lowerPositionLimit, engine.lowerPositionLimit)
        np.testing.assert_allclose(parsed.upperPositionLimit, engine.upperPositionLimit)
        for _ in range(5):
            q = rng.uniform(-2, 2, skeleton.num_joints)
            dq = rng.uniform(-2, 2, skeleton.num_joints)
            np.testing.assert_allclose(
                pin.crba(parsed, parsed.createData(), q), pin.crba(engine, engine.createData(), q), atol=1e-12
            )
            np.testing.assert_allclose(
                pin.rnea(parsed, parsed.createData(), q, dq, np.zeros_like(q)),
                pin.rnea(engine, engine.createData(), q, dq, np.zeros_like(q)),
                atol=1e-12,
            )


def test_wrong_counts_and_bad_effort_limits_are_named() -> None:
    skeleton = load_arm(SCENARIOS / "four_dof_robot.toml").skeleton
    with pytest.raises(ValueError, match="3 joint names for an arm of 4 joints"):
        skeleton_to_urdf(skeleton, ["a", "b", "c"])
    with pytest.raises(ValueError, match="2 effort limits for an arm of 4 joints"):
        skeleton_to_urdf(skeleton, default_joint_names(4), effort_limits=[1.0, 2.0])
    with pytest.raises(ValueError, match="effort limits must be positive"):
        skeleton_to_urdf(skeleton, default_joint_names(4), effort_limits=[1.0, 0.0, 1.0, math.nan])


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("<robot", "not valid XML"),
        ('<robot name="r"><link name="base"/></robot>', "no chain of revolute joints"),
        (
            '<robot name="r"><link name="base"/><link name="l1"/><joint name="j" type="prismatic">'
            '<parent link="base"/><child link="l1"/></joint></robot>',
            "is prismatic",
        ),
        (
            '<robot name="r"><link name="base"/><link name="l1"/><joint name="j" type="revolute">'
            '<parent link="base"/><child link="l1"/><origin xyz="abc 0 0"/></joint></robot>',
            "not a skelarm arm",
        ),
    ],
)
def test_a_urdf_that_is_not_a_skelarm_arm_is_named(text: str, words: str) -> None:
    from skelarm_ros.urdf import URDFError, skeleton_from_urdf

    with pytest.raises(URDFError, match=words):
        skeleton_from_urdf(text)
