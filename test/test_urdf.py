"""The URDF made from a Skeleton, parsed back and checked joint by joint, link by link."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import skelarm
import urdf_samples as samples
from conftest import random_arm, robot_files, scenario_file
from urdf_parser_py.urdf import URDF, Box

from skelarm_ros.interface import default_joint_names
from skelarm_ros.sim.engine import build_model
from skelarm_ros.sim.scenario import load_arm
from skelarm_ros.sim.urdf import DEFAULT_EFFORT_LIMIT, LINK_WIDTH, link_names, skeleton_to_urdf
from skelarm_ros.sim.urdf_reader import URDFError, skeleton_from_urdf

ROBOT_FILES = robot_files()


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
    skeleton = load_arm(scenario_file("four_dof_robot")).skeleton
    with pytest.raises(ValueError, match="3 joint names for an arm of 4 joints"):
        skeleton_to_urdf(skeleton, ["a", "b", "c"])
    with pytest.raises(ValueError, match="2 effort limits for an arm of 4 joints"):
        skeleton_to_urdf(skeleton, default_joint_names(4), effort_limits=[1.0, 2.0])
    with pytest.raises(ValueError, match="effort limits must be positive"):
        skeleton_to_urdf(skeleton, default_joint_names(4), effort_limits=[1.0, 0.0, 1.0, math.nan])


# ----------------------------------------------------------------------------- reading a URDF back


def test_random_arms_read_back_exactly() -> None:
    rng = np.random.default_rng(7)
    for num_links in (1, 2, 3, 5, 8):
        for trial in range(10):
            skeleton = random_arm(rng, num_links, base=trial % 2 == 0)
            names = [f"arm/joint_{k}<&>" for k in range(num_links)]
            back, read_names = skeleton_from_urdf(skeleton_to_urdf(skeleton, names))
            assert read_names == names
            assert back.to_dict() == skeleton.to_dict()


def test_shared_robots_read_back_exactly(shared_scenarios: Path) -> None:
    for path in ROBOT_FILES:
        skeleton = load_arm(path).skeleton
        back, _ = skeleton_from_urdf(skeleton_to_urdf(skeleton, default_joint_names(skeleton.num_joints)))
        assert back.to_dict() == skeleton.to_dict(), path.stem


def test_a_joint_without_limits_is_written_continuous_and_read_back() -> None:
    skeleton = random_arm(np.random.default_rng(3), 3)
    skeleton.links[2].prop.qmin, skeleton.links[2].prop.qmax = -math.inf, math.inf
    text = skeleton_to_urdf(skeleton, ["a", "b", "c"])
    assert {joint.name: joint.type for joint in URDF.from_xml_string(text).joints}["b"] == "continuous"
    back, _ = skeleton_from_urdf(text)
    assert back.to_dict() == skeleton.to_dict()
    skeleton.links[2].prop.qmax = 1.0
    with pytest.raises(ValueError, match=r"joint 'b' has limits \[-inf, 1.0\]; a URDF joint has both limits finite"):
        skeleton_to_urdf(skeleton, ["a", "b", "c"])


def urdf_config(model: pin.Model, angles: np.ndarray) -> np.ndarray:
    """Pinocchio's configuration for joint angles (a continuous joint is cos, sin)."""
    parts = []
    for joint, angle in zip(model.joints[1:], angles, strict=True):
        parts.append([math.cos(angle), math.sin(angle)] if joint.nq == 2 else [angle])
    return np.concatenate(parts)


def assert_same_planar_arm(
    urdf: str, skeleton: skelarm.Skeleton, base_link: str | None = None, tip: str | None = None, seed: int = 0
):
    """The URDF's own model (Pinocchio) and the engine's model of the skeleton move alike.

    Mass matrices, inverse dynamics and the tip's place in the base's plane agree at random angles; gravity is
    zero in both (a z-axis arm feels none in its plane).
    """
    full = pin.buildModelFromXML(urdf)
    full.gravity = pin.Motion.Zero()
    engine, engine_tip = build_model(skeleton)
    full_data, engine_data = full.createData(), engine.createData()
    tip = tip or [frame.name for frame in full.frames if frame.type == pin.FrameType.BODY][-1]
    base_frame = full.getBodyId(base_link) if base_link else 1
    rng = np.random.default_rng(seed)
    for _ in range(10):
        q = rng.uniform(-2.0, 2.0, skeleton.num_joints)
        dq = rng.uniform(-2.0, 2.0, skeleton.num_joints)
        ddq = rng.uniform(-2.0, 2.0, skeleton.num_joints)
        config = urdf_config(full, q)
        np.testing.assert_allclose(pin.crba(full, full_data, config), pin.crba(engine, engine_data, q), atol=1e-12)
        np.testing.assert_allclose(
            pin.rnea(full, full_data, config, dq, ddq), pin.rnea(engine, engine_data, q, dq, ddq), atol=1e-12
        )
        pin.framesForwardKinematics(full, full_data, config)
        pin.framesForwardKinematics(engine, engine_data, q)
        in_base = full_data.oMf[base_frame].actInv(full_data.oMf[full.getFrameId(tip)]).translation
        np.testing.assert_allclose(in_base[:2], engine_data.oMf[engine_tip].translation[:2], atol=1e-12)


def test_a_planar_arm_written_as_real_descriptions_are_is_read_with_fixed_links_folded() -> None:
    skeleton, names = skeleton_from_urdf(samples.PLANAR_THREE_LINK)
    assert names == ["shoulder", "elbow", "wrist"]
    assert skeleton.base_length == pytest.approx(0.1, abs=1e-15)
    upper, fore, hand = (link.prop for link in skeleton.links[1:])
    assert (upper.length, fore.length, hand.length) == pytest.approx([0.4, 0.3, 0.12], abs=1e-15)
    # the camera (0.1 kg at (0.1, 0.01) in the base's axes) rides on the upper arm; the flange on the hand
    assert (upper.m, fore.m, hand.m) == pytest.approx([2.1, 1.2, 0.7], abs=1e-15)
    assert (upper.rgx, upper.rgy) == pytest.approx([(2.0 * 0.2 + 0.1 * 0.1) / 2.1, 0.1 * 0.01 / 2.1], abs=1e-15)
    assert (fore.rgx, fore.rgy, fore.i) == pytest.approx([0.15, 0.01, 0.02], abs=1e-15)
    # the hand's frame is flipped: its centre of mass (0.05, 0.01) is (0.05, -0.01) in the arm's plane
    assert (hand.rgx, hand.rgy) == pytest.approx([(0.5 * 0.05 + 0.2 * 0.1) / 0.7, -0.5 * 0.01 / 0.7], abs=1e-15)
    assert (upper.qmin, upper.qmax, hand.qmin, hand.qmax) == (-2.9, 2.9, -math.inf, math.inf)
    assert_same_planar_arm(samples.PLANAR_THREE_LINK, skeleton, tip="tool0")


def test_folded_inertias_equal_pinocchios() -> None:
    """The inertials read from the tags and folded here are the ones Pinocchio folds (to rounding)."""
    skeleton, _ = skeleton_from_urdf(samples.PLANAR_THREE_LINK)
    model = pin.buildModelFromXML(samples.PLANAR_THREE_LINK)
    data = model.createData()
    pin.forwardKinematics(model, data, pin.neutral(model))
    for joint, link in enumerate(skeleton.links[1:], start=1):
        rotation = data.oMi[joint].rotation
        com = rotation @ model.inertias[joint].lever
        izz = (rotation @ model.inertias[joint].inertia @ rotation.T)[2, 2]
        assert (link.prop.m, link.prop.rgx, link.prop.rgy, link.prop.i) == pytest.approx(
            [model.inertias[joint].mass, com[0], com[1], izz], abs=1e-14
        )


@pytest.mark.parametrize("shift", ["0.3 0 0", "-0.2 0 0", "0 0 0.8"], ids=["ahead", "behind", "raised"])
def test_a_base_offset_along_x_and_a_raised_arm_are_read(shift: str) -> None:
    text = samples.two_link(j1={"xyz": shift})
    skeleton, _ = skeleton_from_urdf(text)
    assert skeleton.base_length == float(shift.split(maxsplit=1)[0])
    assert_same_planar_arm(text, skeleton)


def test_frames_turned_about_z_with_side_offsets_that_keep_the_arm_straight_are_read() -> None:
    # j1's frame turned -90 degrees: link1's +y runs along the base's x, so j2 at (0, 0.5) is 0.5 m along the arm
    text = samples.two_link(
        j1={"rpy": f"0 0 -{samples.HALF_PI}"}, j2={"xyz": "0 0.5 0", "rpy": f"0 0 {samples.HALF_PI}"}
    )
    skeleton, _ = skeleton_from_urdf(text)
    assert skeleton.links[1].prop.length == pytest.approx(0.5, abs=1e-15)
    # link1's centre of mass (0.25, 0.01) in its turned frame is (0.01, -0.25) in the arm's
    assert (skeleton.links[1].prop.rgx, skeleton.links[1].prop.rgy) == pytest.approx([0.01, -0.25], abs=1e-15)
    assert_same_planar_arm(text, skeleton)


def test_rounded_quarter_turns_within_the_tolerance_are_read() -> None:
    text = samples.two_link(j1={"rpy": "0 0 -1.5708"}, j2={"xyz": "0 0.5 0", "rpy": "0 0 1.5708"})
    skeleton, _ = skeleton_from_urdf(text)
    assert skeleton.links[1].prop.length == pytest.approx(0.5, abs=1e-5)
    with pytest.raises(URDFError, match=r"'j2' is .* m off the base's x axis"):
        skeleton_from_urdf(samples.two_link(j1={"rpy": "0 0 -1.571"}, j2={"xyz": "0 0.5 0", "rpy": "0 0 1.571"}))


def test_a_flipped_frame_whose_axis_points_down_turns_about_z() -> None:
    text = samples.two_link(j2={"rpy": f"{samples.PI} 0 0", "axis": "0 0 -1"})
    skeleton, _ = skeleton_from_urdf(text)
    assert skeleton.links[2].prop.rgy == pytest.approx(0.02, abs=1e-15)  # (0.2, -0.02) seen from below
    assert_same_planar_arm(text, skeleton)


def test_base_link_and_tip_link_choose_the_frames() -> None:
    # the arm stands on a table placed off the root's x axis, turned: only the table's frame makes it planar
    table = (
        samples.link("table")
        + samples.joint("world_to_table", "fixed", "world", "table", "0.5 0.3 0.8", "0 0 0.7", extra="")
        + samples.joint("table_to_base", "fixed", "table", "base", extra="")
    )
    text = samples.two_link().replace('<link name="base"></link>', samples.link("world") + table + samples.link("base"))
    with pytest.raises(URDFError, match=r"'j1' is .* m off the base's x axis from the base"):
        skeleton_from_urdf(text)
    skeleton, _ = skeleton_from_urdf(text, base_link="table")
    on_root, _ = skeleton_from_urdf(samples.two_link())
    for read, expected in zip(skeleton.links, on_root.links, strict=True):
        assert list(vars(read.prop).values()) == pytest.approx(list(vars(expected.prop).values()), abs=1e-15)
    assert_same_planar_arm(text, skeleton, base_link="table")
    with pytest.raises(URDFError, match="base_link 'link1' is not fixed to the URDF's root"):
        skeleton_from_urdf(text, base_link="link1")
    with pytest.raises(URDFError, match="base_link 'nowhere' is not a link of the URDF"):
        skeleton_from_urdf(text, base_link="nowhere")
    # a second frame fixed to the last link: which one is the tip must be said
    camera = samples.link("camera") + samples.joint("camera_joint", "fixed", "link2", "camera", "0.1 0 0", extra="")
    two_ends = samples.two_link().replace("</robot>", camera + "</robot>")
    with pytest.raises(URDFError, match="links 'camera', 'tip' all end the arm after joint 'j2'; say which"):
        skeleton_from_urdf(two_ends)
    assert skeleton_from_urdf(two_ends, tip_link="tip")[0].links[2].prop.length == 0.4
    assert skeleton_from_urdf(two_ends, tip_link="camera")[0].links[2].prop.length == 0.1
    with pytest.raises(URDFError, match="tip_link 'link1' is not fixed to the link moved by joint 'j2'"):
        skeleton_from_urdf(two_ends, tip_link="link1")


def test_a_last_link_with_nothing_fixed_to_it_has_zero_length() -> None:
    text = samples.two_link().replace('<link name="tip"></link>', "").split('<joint name="tip_joint"')[0] + "</robot>"
    skeleton, _ = skeleton_from_urdf(text)
    assert skeleton.links[2].prop.length == 0.0
    assert_same_planar_arm(text, skeleton)


def tilted_mount() -> str:
    """j2 sits on a mount fixed to link1 with a pitch of 0.2 rad."""
    mount = samples.link("mount") + samples.joint(
        "link1_to_mount", "fixed", "link1", "mount", "0.5 0 0", "0 0.2 0", extra=""
    )
    return samples.two_link(j2={"parent": "mount", "xyz": "0 0 0"}).replace("</robot>", mount + "</robot>")


def gripper_branch() -> str:
    """Two revolute fingers on the last link: a tree."""
    fingers = "".join(
        samples.link(f"finger_{side}", samples.inertial(0.05))
        + samples.joint(f"finger_{side}_joint", "revolute", "link2", f"finger_{side}", "0.4 0 0")
        for side in ("left", "right")
    )
    return samples.two_link().replace("</robot>", fingers + "</robot>")


NOT_PLANAR = {
    "axis x": (
        samples.two_link(j2={"axis": "1 0 0"}),
        r"URDF joint 'j2' turns about \(1, 0, 0\) in the base's axes, 90",
    ),
    "axis y": (samples.two_link(j1={"axis": "0 1 0"}), r"URDF joint 'j1' turns about \(0, 1, 0\)"),
    "axis -z": (
        samples.two_link(j2={"axis": "0 0 -1"}),
        r"URDF joint 'j2' turns about -z of the base .* counts clockwise",
    ),
    "tilted origin rpy": (
        samples.two_link(j2={"rpy": "0.3 0 0"}),
        r"URDF joint 'j2' .* 17.19 degrees off its z",
    ),
    "tilted fixed joint before": (
        tilted_mount(),
        r"URDF joint 'j2' turns about \(0.1987, 0, 0.9801\) in the base's axes, 11.46 degrees off its z",
    ),
    "z offset": (
        samples.two_link(j2={"xyz": "0.5 0 0.05"}),
        r"URDF joint 'j2' is 0.05 m along z from joint 'j1'; .* one plane",
    ),
    "tip z offset": (
        samples.two_link(tip_joint={"xyz": "0.4 0 -0.02"}),
        r"URDF link 'tip' is -0.02 m along z from joint 'j2'",
    ),
    "y offset": (
        samples.two_link(j2={"xyz": "0.5 0.1 0"}),
        r"URDF joint 'j2' is 0.1 m off the base's x axis from joint 'j1'",
    ),
    "base y offset": (
        samples.two_link(j1={"xyz": "0.2 -0.1 0"}),
        r"URDF joint 'j1' is -0.1 m off the base's x axis from the base",
    ),
    "turned about z": (samples.two_link(j1={"rpy": "0 0 0.4"}), r"'j2' is 0.19\d* m off the base's x axis"),
    "folded back": (
        samples.two_link(j2={"xyz": "-0.5 0 0"}),
        r"URDF joint 'j2' is -0.5 m along x from joint 'j1', behind it",
    ),
    "prismatic joint": (samples.two_link(j2={"kind": "prismatic"}), r"URDF joint 'j2' is prismatic \(it slides\)"),
    "floating joint": (samples.two_link(j1={"kind": "floating", "extra": ""}), r"URDF joint 'j1' is floating"),
    "planar joint": (samples.two_link(j1={"kind": "planar", "extra": ""}), r"URDF joint 'j1' is planar"),
    "mimic joint": (
        samples.two_link(j2={"extra": '<limit lower="-1" upper="1" effort="1" velocity="1"/><mimic joint="j1"/>'}),
        r"URDF joint 'j2' mimics joint 'j1'; a skelarm arm's joints each move on their own",
    ),
    "branching tree": (
        gripper_branch(),
        r"the URDF branches: joints 'finger_left_joint' and 'finger_right_joint' both "
        r"move with joint 'j2'; a skelarm arm is a single chain",
    ),
    "branching at the base": (samples.two_link(j2={"parent": "base"}), r"joints 'j1' and 'j2' both move with the base"),
    "massless link": (
        samples.two_link().replace(samples.inertial(1.0, "0.2 -0.02 0", 0.02), ""),
        r"the link moved by URDF joint 'j2' has no mass; give it an <inertial> with a positive <mass>",
    ),
    "limits upside down": (
        samples.two_link(j1={"extra": '<limit lower="1" upper="-1" effort="1" velocity="1"/>'}),
        r"URDF joint 'j1' has limits lower=1.0 > upper=-1.0 \(rad\)",
    ),
    "no movable joint": (
        samples.robot(samples.link("base"), samples.link("a"), samples.joint("f", "fixed", "base", "a", extra="")),
        "the URDF has no revolute joint",
    ),
    "not XML": ("<robot", "the URDF is not valid XML"),
    "revolute without limits": (
        samples.two_link(j1={"extra": ""}),
        r"the URDF parser refused it: Joint \[j1\] is of type REVOLUTE but it does not specify",
    ),
    "not a number": (samples.two_link(j1={"xyz": "abc 0 0"}), r"refused it: Unable to parse component \[abc\]"),
    "two roots": (samples.robot(samples.link("a"), samples.link("b")), "refused it: Failed to find root link"),
    "RRBot (vertical plane)": (samples.RRBOT, r"URDF joint 'joint1' turns about \(0, 1, 0\)"),
    "UR-like": (samples.UR_LIKE, r"URDF joint 'shoulder_lift_joint' turns about \(0, 1, 0\)"),
    "SCARA": (samples.SCARA, r"URDF joint 'j2' is 0.05 m along z from joint 'j1'"),
    "gripper": (samples.WITH_GRIPPER, r"URDF joint 'left_finger_joint' is prismatic"),
    "mobile base": (samples.ON_MOBILE_BASE, r"URDF joint 'base_joint' is planar"),
}


@pytest.mark.parametrize(("text", "words"), NOT_PLANAR.values(), ids=NOT_PLANAR.keys())
def test_what_a_skeleton_cannot_represent_is_refused_naming_the_joint(text: str, words: str, capfd) -> None:
    with pytest.raises(URDFError, match=words) as caught:
        skeleton_from_urdf(text)
    assert "\n" not in str(caught.value)
    assert capfd.readouterr().err == ""  # urdfdom's own lines are in the sentence, not on the terminal


# ----------------------------------------------------------------------------- a driver's robot_description in a bag


def description_bag(path: Path, description: str, names: list[str]) -> Path:
    """A bag of a driver: three joint states and its robot_description."""
    from test_bags import STORE, joint_state, write_bag

    messages = [("/robot_description", 0, STORE.types["std_msgs/msg/String"](data=description))]
    messages += [("/joint_states", 10 + k, joint_state(10 + k, names, [0.1 * k] * len(names))) for k in range(3)]
    return write_bag(path, messages)


def test_bag_to_log_embeds_a_planar_drivers_skeleton(tmp_path: Path) -> None:
    from skelarm_ros.bags.bag_to_log import bag_to_log

    bag = description_bag(tmp_path / "planar", samples.PLANAR_THREE_LINK, ["shoulder", "elbow", "wrist"])
    summary = bag_to_log(bag, tmp_path / "planar.sklog.npz")
    log = skelarm.StateLog.load(tmp_path / "planar.sklog.npz")
    assert log.build_skeleton().to_dict() == skeleton_from_urdf(samples.PLANAR_THREE_LINK)[0].to_dict()
    assert summary.extra["skeleton_source"].startswith("robot_description on ")


def test_bag_to_log_embeds_no_skeleton_from_a_non_planar_description_and_says_why(tmp_path: Path, capsys) -> None:
    from skelarm_ros.bags.bag_to_log import main

    bag = description_bag(
        tmp_path / "ur", samples.UR_LIKE, ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint"]
    )
    assert main([str(bag), "-o", str(tmp_path / "ur.sklog.npz")]) == 0
    log = skelarm.StateLog.load(tmp_path / "ur.sklog.npz")
    with pytest.raises(ValueError, match="no embedded skeleton"):
        log.build_skeleton()
    assert log.extra["skeleton_source"] == "none"
    err = capsys.readouterr().err
    assert (
        "bag_to_log: note: robot_description could not be read as a skelarm arm (URDF joint 'shoulder_lift_joint' "
        "turns about (0, 1, 0) in the base's axes, 90 degrees off its z axis" in err
    )
    assert err.count("\n") == 1, err  # the note is the only line: urdfdom prints nothing of its own


def test_a_urdf_in_an_xml_namespace_reads_the_same() -> None:
    plain = samples.two_link(j2={"extra": '<limit lower="-1" upper="1" effort="1" velocity="1"/><mimic joint="j1"/>'})
    with pytest.raises(URDFError, match="mimics joint 'j1'"):
        skeleton_from_urdf(
            plain.replace('<robot name="sample">', '<robot name="sample" xmlns="http://example.org/urdf">')
        )
    text = samples.two_link().replace('<robot name="sample">', '<robot name="sample" xmlns="http://example.org/urdf">')
    assert skeleton_from_urdf(text)[0].to_dict() == skeleton_from_urdf(samples.two_link())[0].to_dict()
