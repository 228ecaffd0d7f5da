"""bag_info: what a bag holds, one line per topic, on bags written the way real drivers write them."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from bagwriter import NS, joint_state, write_bag
from conftest import BAGS
from driverbags import FRANKA_FINGERS, WALL, franka_ros1, servo_arm

from skelarm_ros.bags.info import JointStateProfile, bag_info, main
from skelarm_ros.startup import EXECUTABLES

AERIAL = BAGS / "aerial_servo_arm"


def report(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def topic_line(out: str, topic: str) -> str:
    (line,) = [line for line in out.splitlines() if line.split()[:1] == [topic]]
    return line


def test_a_drone_arm_s_mcap_bag_says_storage_times_and_one_line_per_topic(tmp_path, capsys):
    bag = servo_arm(tmp_path / "flight", frames=200, rate=50.0)
    code, out, err = report(capsys, str(bag))
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == f"Bag:        {bag}"
    assert lines[1].startswith("Files:      metadata.yaml, flight.mcap (") and lines[2] == "Storage:    mcap"
    assert lines[3].startswith("Duration:   3.9") and lines[4].startswith("Start:      2025-05-22 12:49:25.00")
    assert lines[5].startswith("End:        2025-05-22 12:49:28.9") and "UTC (17479181" in lines[5]
    assert lines[6] == "Messages:   330 on 3 topics (rates and gaps in log time)"
    assert len(lines) == 7 + 3  # one line per topic
    state = topic_line(out, "/servo/out/state")
    assert re.search(r"sensor_msgs/msg/JointState +190 msgs", state)
    # 190 states over 199 periods of 20 ms (ten dropped in the middle): 11 periods is the largest gap.
    rate, gap, at = re.search(r"(\S+) Hz, largest gap (\S+) s at (\S+) s", state).groups()
    assert float(rate) == pytest.approx(189 / 3.98, rel=0.01)
    assert float(gap) == pytest.approx(0.22, abs=0.003) and float(at) == pytest.approx(2.2, abs=0.005)
    assert state.endswith("; joints q0, q1, q2; position, velocity, effort; effort all zero")
    references = topic_line(out, "/servo/in/references")
    assert references.endswith("; joints q0, q1, q2; position; no velocity, effort")
    assert "px4_msgs/msg/VehicleAttitude" in topic_line(out, "/fmu/out/vehicle_attitude")


def test_a_ros1_bag_of_an_arm_with_gripper_fingers_names_all_nine_joints_and_the_fingers_zero_effort(tmp_path, capsys):
    bag = franka_ros1(tmp_path / "franka.bag", frames=100, rate=100.0)
    code, out, _ = report(capsys, str(bag))
    assert code == 0
    assert "Storage:    rosbag1" in out and "Messages:   101 on 2 topics" in out
    states = topic_line(out, "/joint_states")
    assert "100 msgs  100 Hz, largest gap 0.010 s" in states
    assert (
        "joints panda_joint1, panda_joint2, panda_joint3, panda_joint4, panda_joint5, panda_joint6, panda_joint7, "
        in states
    )
    assert states.endswith(f"; position, velocity, effort; effort zero for {', '.join(FRANKA_FINGERS)}")
    assert topic_line(out, "/robot_description").endswith("1 msgs  one message")


def test_unnamed_constant_and_unstamped_joint_states_are_said_so(tmp_path, capsys):
    messages = []
    for k in range(20):
        log = WALL + k * 10_000_000
        messages.append(("/servo/out/state", log, joint_state(0, (), (0.5, float(k), 0.0), (0.0, 0.0, 0.0))))
        names = ("a", "b") if k < 10 else ("b", "c")  # a driver that renamed a joint half way
        messages.append(("/mixed", log + 1, joint_state(log, names, (1.0, 2.0), (), (3.0, 3.0 + k))))
    bag = write_bag(tmp_path / "bag", messages)
    code, out, _ = report(capsys, str(bag))
    assert code == 0
    unnamed = topic_line(out, "/servo/out/state")
    assert unnamed.endswith(
        "; joints unnamed (3 values, in position order); position, velocity; no effort; position zero for #3; "
        "position constant for #1; velocity all zero; header stamp unset (0) in 20"
    )
    mixed = topic_line(out, "/mixed")
    assert mixed.endswith(
        "; joints a, b, c (names vary: 2 lists); position, effort; no velocity; position constant for a, c; "
        "effort constant for a"
    )


def test_a_profile_folds_blocks_of_many_messages_as_one():
    profile = JointStateProfile()
    for k in range(10_000):  # more than a block
        profile.add(("j1", "j2"), (2, 0, 2), (1, 0, 0.25, float(k % 7), 0.0, 0.0))
    uses = profile.uses()
    assert uses["position"].carried == 10_000 and uses["position"].constant == ["j1"]
    assert uses["effort"].zero == ["j1", "j2"] and not uses["velocity"].carried
    assert (
        profile.describe() == "joints j1, j2; position, effort; no velocity; position constant for j1; effort all zero"
    )


def test_a_truncated_mcap_in_its_folder_needs_recover_and_says_so(tmp_path, capsys):
    bag = servo_arm(tmp_path / "cut", frames=8000, rate=100.0)  # some MiB: MCAP chunks of 1 MiB
    mcap = next(bag.glob("*.mcap"))
    mcap.write_bytes(mcap.read_bytes()[: mcap.stat().st_size * 2 // 3])
    code, out, err = report(capsys, str(bag))
    assert code == 1 and out == ""
    assert err.startswith("bag_info: error: bag ") and "pass --recover" in err and err.count("\n") == 1
    code, out, err = report(capsys, str(bag), "--recover")
    assert code == 0
    assert "bag_info: note: recovered " in err and "complete messages from truncated MCAP" in err
    count = int(re.search(r"/servo/out/state\s+sensor_msgs/msg/JointState\s+(\d+) msgs", out).group(1))
    assert 0 < count < 7990
    assert bag_info(bag, recover=True).topics[-1].count == count


def test_bad_input_is_one_sentence_and_exit_1(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("not a bag")
    for path, words in (
        (tmp_path / "missing", "does not exist"),
        (tmp_path / "notes.txt", "is not a bag"),
    ):
        code, out, err = report(capsys, str(path))
        assert code == 1 and out == "" and words in err and err.count("\n") == 1, err


def test_bag_info_is_an_executable_and_takes_no_force_option(tmp_path, capsys):
    assert EXECUTABLES["bag_info"] == "skelarm_ros.bags.info:main"
    assert main(["--help"]) == 0
    assert "--force" not in capsys.readouterr().out
    bag = write_bag(tmp_path / "one", [("/joint_states", NS, joint_state(NS, ("j1",), (0.1,)))])
    done = subprocess.run(
        [sys.executable, "-m", "skelarm_ros.cli", "run", "bag_info", str(bag)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Messages:   1 on 1 topic " in done.stdout
    assert done.stdout.splitlines()[-1].endswith("1 msgs  one message; joints j1; position; no velocity, effort")


@pytest.mark.parametrize(
    "name", ["ros2bag_killed_on_contact", "ros2bag_servo_serial_log", "ros2bag_static_ats_inverror"]
)
def test_the_shared_drone_arm_bags_list_their_three_joint_state_topics(name, capsys):
    bag = AERIAL / name
    if not bag.exists():
        pytest.skip(f"the shared bag {bag} is absent (set SKELARM_ROS_SHARED_DATA)")
    code, out, err = report(capsys, str(bag))
    assert code == 0 and "Storage:    sqlite3" in out
    assert "bag_info: error" not in err
    state = topic_line(out, "/servo/out/state")
    assert "joints unnamed (3 values, in position order)" in state and " Hz, largest gap " in state
    assert all(" msgs  " in line for line in out.splitlines()[7:])


@pytest.mark.parametrize("name", ["db3", "db3_zstd", "mcap", "mcap_zstd"])
def test_the_storage_format_fixtures_are_described_split_and_compressed_alike(name, capsys):
    bag = BAGS / "format_fixtures" / name
    if not bag.exists():
        pytest.skip(f"the shared bag {bag} is absent (set SKELARM_ROS_SHARED_DATA)")
    info = bag_info(bag)
    code, out, _ = report(capsys, str(bag))
    assert code == 0
    assert f"Messages:   {info.messages} on {len(info.topics)} topics" in out
    assert len(out.splitlines()) == 7 + len(info.topics)
    assert sum(topic.count for topic in info.topics) == info.messages > 0
    assert info.files[0].name == "metadata.yaml"
