"""bag_to_log on bags written the way real drivers write them: other topic names, extra joints, positions only,
zero effort, no names, ROS 1; what it refuses (joints a topic never carries, commands without effort)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import skelarm
from bagwriter import float_array, joint_state, write_bag
from driverbags import FRANKA_ARM, FRANKA_FINGERS, SERVO_JOINTS, WALL, driven_run, franka_ros1, servo_arm

from skelarm_ros.bags.bag_to_log import ConversionError, bag_to_log, main
from skelarm_ros.bags.log_to_bag import log_to_bag
from skelarm_ros.bags.reader import open_bag


def refused(capsys, argv: list[str]) -> str:
    """Run bag_to_log; it must exit 1 with one ``bag_to_log: error:`` line and write nothing."""
    output = argv[argv.index("-o") + 1]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith("bag_to_log: error: ")
    assert not Path(output).exists()
    return captured.err.removeprefix("bag_to_log: error: ").strip()


def test_joints_the_topic_never_carries_are_refused_naming_those_it_does(tmp_path, capsys):
    bag = servo_arm(tmp_path / "flight")
    out = tmp_path / "arm.sklog.npz"
    sentence = refused(capsys, [str(bag), "-o", str(out), "--joint-topic", "/servo/out/state", "--joints", "q1,q2,q3"])
    assert sentence == (
        "--joints names q3, which the joint states on '/servo/out/state' never carry (they carry q0, q1, q2); "
        "choose names from those"
    )
    assert main([str(bag), "-o", str(out), "--joint-topic", "/servo/out/state", "--joints", "q2,q0"]) == 0
    log = skelarm.StateLog.load(out)
    assert log.extra["joint_names"] == ["q2", "q0"] and np.isfinite(log.channel("q")).all()


def test_zero_effort_and_a_gap_are_converted_as_recorded(tmp_path):
    bag = servo_arm(tmp_path / "flight", frames=200)
    summary = bag_to_log(bag, tmp_path / "arm.sklog.npz", joint_topic="servo/out/state")
    log = skelarm.StateLog.load(tmp_path / "arm.sklog.npz")
    assert summary.frames == 190 and log.extra["joint_names"] == list(SERVO_JOINTS)
    assert (log.channel("tau") == 0.0).all() and log.extra["effort"]["source"] == "joint_states"
    assert np.diff(log.times).max() == pytest.approx(0.22)  # the ten missing states stay missing: nothing invented


def test_a_command_topic_of_a_servos_positions_gives_the_goal_channel_and_tau_stays_the_measured_effort(tmp_path):
    bag = servo_arm(tmp_path / "flight")
    out = tmp_path / "a.sklog.npz"
    summary = bag_to_log(bag, out, joint_topic="/servo/out/state", command_topic="/servo/in/references")
    log = skelarm.StateLog.load(out)
    goals, q = log.channel("goal_position"), log.channel("q")
    assert log.channel_meta["goal_position"]["unit"] == log.channel_meta["q"]["unit"]  # no arm: "rad or m"
    assert log.extra["effort"]["source"] == "joint_states" and (log.channel("tau") == 0.0).all()
    assert log.extra["effort"]["goals"] == {
        "channel": "goal_position",
        "topic": "/servo/in/references",
        "timing": "applied_from_frame",
    }
    assert summary.extra["topics"]["commands"]["name"] == "/servo/in/references"
    # Sent every other state, each stamped with the state it answers, 0.01 rad above it: held until the next.
    held = np.isfinite(goals).all(axis=1)
    assert held[1:].all()
    np.testing.assert_allclose(goals[::2][:40], q[::2][:40] + 0.01, rtol=0, atol=1e-9)


def test_a_command_topic_carrying_nothing_is_refused_when_given(tmp_path):
    messages = []
    for k in range(5):
        stamp = WALL + k * 10_000_000
        messages.append(("/joint_states", stamp + 1, joint_state(stamp, ("a", "b"), (k, -k))))
        messages.append(("/servo/cmd", stamp + 2, joint_state(stamp, ("a", "b"), ())))
    bag = write_bag(tmp_path / "bag", messages)
    with pytest.raises(ConversionError) as refused:
        bag_to_log(bag, tmp_path / "o.sklog.npz", command_topic="/servo/cmd")
    assert str(refused.value) == (
        "--command-topic '/servo/cmd' carries no commands for the joints ['a', 'b']: its messages have no effort, "
        "position or velocity; choose a topic of effort commands or a servo's goals, or drop --command-topic to "
        "take tau from the joint states' effort"
    )


def test_goals_found_beside_the_states_are_the_goal_channel_and_tau_the_joint_states_effort(tmp_path):
    messages = []
    for k in range(10):
        stamp = WALL + k * 10_000_000
        messages.append(("/arm/joint_states", stamp + 1, joint_state(stamp, ("a", "b"), (k, -k), (), (0.5, 0.25))))
        messages.append(("/arm/joint_commands", stamp + 2, joint_state(stamp, ("a", "b"), (k + 1, -k))))  # positions
    bag = write_bag(tmp_path / "bag", messages)
    bag_to_log(bag, tmp_path / "o.sklog.npz")
    log = skelarm.StateLog.load(tmp_path / "o.sklog.npz")
    assert log.extra["effort"]["source"] == "joint_states"
    np.testing.assert_array_equal(log.channel("tau"), [[0.5, 0.25]] * 10)
    np.testing.assert_array_equal(log.channel("goal_position"), [[k + 1, -k] for k in range(10)])


def test_a_servos_array_goals_go_to_the_joints_command_joints_names_and_a_count_that_cannot_fit_is_refused(
    tmp_path, capsys
):
    messages = []
    for k in range(10):  # the states name a gripper beside the arm; the goals are the arm's, elbow first
        stamp = WALL + k * 4_000_000
        messages.append(("/joint_states", stamp + 1, joint_state(stamp, ("gripper", "shoulder", "elbow"), (0, k, -k))))
        messages.append(("/position_controller/commands", stamp + 2, float_array([-k - 0.5, k + 0.5])))
    bag = write_bag(tmp_path / "bag", messages)
    out = tmp_path / "o.sklog.npz"
    assert refused(capsys, [str(bag), "-o", str(out)]) == (
        "'/position_controller/commands' carries 2 values per message (a Float64MultiArray, no names) but the joint "
        "states have 3 joints ['gripper', 'shoulder', 'elbow']; pass --command-joints with the names of its values "
        "in their order (the controller's command_joints)"
    )
    assert main([str(bag), "-o", str(out), "--command-joints", "elbow,shoulder"]) == 0
    goals = skelarm.StateLog.load(out).channel("goal_position")
    np.testing.assert_array_equal(goals[:, 1:], [[k + 0.5, -k - 0.5] for k in range(10)])  # from the state before
    assert np.isnan(goals[:, 0]).all()  # no goal for the gripper


def test_commands_for_other_joints_only_are_refused(tmp_path):
    messages = []
    for k in range(5):
        stamp = WALL + k * 10_000_000
        messages.append(("/joint_states", stamp + 1, joint_state(stamp, ("a", "b"), (k, -k))))
        messages.append(("/gripper/commands", stamp + 2, joint_state(stamp, ("finger",), (), (), (1.0,))))
    bag = write_bag(tmp_path / "bag", messages)
    with pytest.raises(ConversionError, match=r"its messages have effort for other joints only \(finger\)"):
        bag_to_log(bag, tmp_path / "o.sklog.npz", command_topic="/gripper/commands")


def test_joints_name_the_positions_of_states_that_carry_no_names(tmp_path, capsys):
    messages = [
        ("/servo/out/state", WALL + k, joint_state(WALL + k, (), (0.1 * k, 0.2, 0.3), (), (1.0, 2.0, 3.0)))
        for k in range(5)
    ]
    messages += [("/servo/cmd", WALL + k + 1, joint_state(WALL + k, (), (), (), (k, 0.0, -k))) for k in range(5)]
    bag = write_bag(tmp_path / "bag", messages)
    out = tmp_path / "o.sklog.npz"
    argv = [str(bag), "-o", str(out), "--joint-topic", "/servo/out/state", "--command-topic", "/servo/cmd"]
    assert main([*argv, "--joints", "q1,q2,q3"]) == 0
    err = capsys.readouterr().err
    assert (
        "bag_to_log: note: joint states on '/servo/out/state' have an empty name list; "
        "--joints names their positions in order: q1, q2, q3\n"
    ) in err
    log = skelarm.StateLog.load(out)
    np.testing.assert_array_equal(log.channel("q")[:, 1:], [[0.2, 0.3]] * 5)
    np.testing.assert_array_equal(log.channel("tau")[:, 0], np.arange(5))  # unnamed commands: the same positions
    out.unlink()
    sentence = refused(capsys, [*argv, "--joints", "q1,q2"])
    assert sentence == (
        "--joints gives 2 names but the joint states on '/servo/out/state' carry no names and 3 positions; "
        "give 3 names, one per position in order"
    )


def test_a_ros1_arm_with_prismatic_fingers_converts_and_records_the_joint_kinds(tmp_path, capsys):
    bag = franka_ros1(tmp_path / "franka.bag", frames=50)
    out = tmp_path / "franka.sklog.npz"
    sentence = refused(capsys, [str(bag), "-o", str(out), "--joints", "panda_joint1,panda_hand"])
    assert "--joints names panda_hand, which the joint states on '/joint_states' never carry" in sentence
    summary = bag_to_log(bag, out)
    log = skelarm.StateLog.load(out)
    assert summary.frames == 50 and log.extra["joint_names"] == [*FRANKA_ARM, *FRANKA_FINGERS]
    assert log.extra["joint_kinds"] == {
        **dict.fromkeys(FRANKA_ARM, "revolute"),
        **dict.fromkeys(FRANKA_FINGERS, "prismatic"),
    }
    assert (log.channel("tau")[:, 7:] == 0.0).all() and np.isfinite(log.channel("tau")).all()
    assert log.channel_meta["q"]["unit"] == "rad or m"  # no skelarm arm embedded: each joint in its own unit


def test_a_measured_effort_goes_back_into_a_bag_as_the_joint_states_effort_never_as_commands(tmp_path):
    run = driven_run(tmp_path / "driven", frames=50)
    log = tmp_path / "driven.sklog.npz"
    bag_to_log(run.bag, log)
    assert skelarm.StateLog.load(log).extra["effort"]["timing"] == "applied_until_frame"
    again = tmp_path / "again"
    log_to_bag(log, again)
    with open_bag(again) as opened:
        assert "/joint_commands" not in opened.topics
        written = [message for *_, message in opened.messages(["/joint_states"])]
    with open_bag(run.bag) as opened:
        recorded = [message for *_, message in opened.messages([run.topic])]
    order = [list(run.names).index(name) for name in written[0].name]
    for mine, theirs in zip(written, recorded, strict=True):
        np.testing.assert_array_equal(mine.effort, np.asarray(theirs.effort)[order])  # frame k's own, as recorded
    bag_to_log(again, tmp_path / "back.sklog.npz")
    np.testing.assert_array_equal(
        skelarm.StateLog.load(tmp_path / "back.sklog.npz").channel("tau"), skelarm.StateLog.load(log).channel("tau")
    )


def test_states_without_velocity_go_back_into_a_bag_without_velocity(tmp_path):
    bag = servo_arm(tmp_path / "flight", frames=20)
    log = tmp_path / "refs.sklog.npz"
    bag_to_log(bag, log, joint_topic="/servo/in/references")
    log_to_bag(log, tmp_path / "again")
    with open_bag(tmp_path / "again") as opened:
        (first, *_) = [message for *_, message in opened.messages(["/joint_states"])]
        assert "/joint_commands" not in opened.topics
    assert len(first.position) == 3 and len(first.velocity) == 0 and len(first.effort) == 0


def test_the_joint_states_effort_kept_beside_commands_goes_back_as_the_joint_states_effort(tmp_path):
    messages = []
    for k in range(10):
        stamp = WALL + k * 10_000_000
        effort = (0.5 * k, -0.25 * k)  # measured, not the command of the state before
        messages.append(("/joint_states", stamp + 1, joint_state(stamp, ("a", "b"), (k, -k), (1.0, 1.0), effort)))
        messages.append(("/joint_commands", stamp + 2, joint_state(stamp, ("a", "b"), (), (), (k + 1.0, -k))))
    bag = write_bag(tmp_path / "bag", messages)
    log = tmp_path / "o.sklog.npz"
    bag_to_log(bag, log)
    log_to_bag(log, tmp_path / "again")
    with open_bag(tmp_path / "again") as opened:
        assert sorted(opened.topics) == ["/joint_commands", "/joint_states"]  # no controller/measured_effort
        efforts = [list(message.effort) for *_, message in opened.messages(["/joint_states"])]
    assert efforts == [[0.5 * k, -0.25 * k] for k in range(10)]
