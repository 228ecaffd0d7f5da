"""The player as a process over real DDS: recorded bytes, stamps, order; ROS 1 input; loop, clock, remap; bad bags."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import procs
import pytest
from bagwriter import NS, START, arm_run, recorded, write_bag, write_ros1_bag
from procs import START_TIMEOUT, stamp_ns

pytestmark = pytest.mark.slow

rclpy = pytest.importorskip("rclpy")
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402

MS = 1_000_000
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def player(log: Path, *arguments: str):
    command = [sys.executable, "-m", "skelarm_ros.cli", "run", "player", *arguments]
    return procs.start(command, log)


def raw(probe: procs.Probe, kind, topic: str, qos=None) -> list[bytes]:
    got: list[bytes] = []
    probe.subscriptions.append(
        probe.node.create_subscription(kind, topic, got.append, procs.keep_all() if qos is None else qos, raw=True)
    )
    return got


def test_a_bag_plays_its_recorded_bytes_in_order_and_the_player_exits_0(tmp_path):
    bag = write_bag(tmp_path / "run", arm_run(200, period_ns=5 * MS), storage="mcap")
    probe = procs.Probe()
    states = raw(probe, JointState, "/joint_states")
    commands = raw(probe, JointState, "/joint_commands")
    description = raw(probe, String, "/robot_description", LATCHED)
    process = player(
        tmp_path / "player.log",
        str(bag),
        "--wait-for-subscribers",
        "joint_states:=1",
        "/joint_commands:=1",
        "--wait-for-all-acked",
        "5000",
    )
    try:
        probe.spin_until(lambda: process.poll() is not None, START_TIMEOUT, "the player to finish")
        probe.spin_until(lambda: len(states) == 200 and len(commands) == 200, 10.0, "every state and command")
    finally:
        code = procs.end(process)
        probe.close()
    log = (tmp_path / "player.log").read_text()
    assert code == 0, log
    assert states == [data for _, _, data in recorded(bag, ["/joint_states"])]
    assert commands == [data for _, _, data in recorded(bag, ["/joint_commands"])]
    assert description == [data for _, _, data in recorded(bag, ["/robot_description"])]
    assert "[F] bag time" in log and "played 402 messages" in log, log


def test_a_ros1_bag_plays_as_ros2_joint_states(tmp_path):
    bag = write_ros1_bag(tmp_path / "arm.bag", frames=30)
    probe = procs.Probe()
    states = probe.record(JointState, "/joint_states")
    description = probe.record(String, "/robot_description", LATCHED)
    process = player(tmp_path / "player.log", str(bag), "--wait-for-subscribers", "1")
    try:
        probe.spin_until(lambda: len(states) == 30 and description, START_TIMEOUT, "the ROS 1 bag's states")
        probe.spin_until(lambda: process.poll() is not None, START_TIMEOUT, "the player to finish")
    finally:
        code = procs.end(process)
        probe.close()
    log = (tmp_path / "player.log").read_text()
    assert code == 0, log
    assert [stamp_ns(state) for state in states] == [START + (k + 1) * 5 * MS for k in range(30)]
    assert [list(state.position) for state in states] == [[0.5 * k, float(k)] for k in range(30)]
    assert description[0].data == "<robot/>"
    assert "rosgraph_msgs/msg/Log" in log  # the ROS 1-only type is skipped with a note


def test_loop_clock_rate_and_remap(tmp_path):
    bag = write_bag(tmp_path / "run", arm_run(20))  # 210 ms of log time
    probe = procs.Probe()
    states = probe.record(JointState, "/replayed/joint_states")
    ticks = probe.record(Clock, "/clock", QoSProfile(depth=100))
    process = player(
        tmp_path / "player.log",
        str(bag),
        "--topics",
        "joint_states",
        "--remap",
        "/joint_states:=/replayed/joint_states",
        "--loop",
        "--clock",
        "100",
        "--rate",
        "2",
        "--wait-for-subscribers",
        "1",
    )
    try:
        probe.spin_until(lambda: len(states) >= 60, START_TIMEOUT, "three passes of the states")
        assert process.poll() is None  # looping until stopped
    finally:
        code = procs.end(process)
        probe.close()
    assert code == 0, (tmp_path / "player.log").read_text()
    stamps = [stamp_ns(state) for state in states]
    one_pass = [k * 2 * MS for k in range(20)]
    assert stamps[:60] == one_pass * 3  # header stamps untouched, pass after pass
    clock = [tick.clock.sec * NS + tick.clock.nanosec for tick in ticks]
    assert clock and all(START <= value <= START + 210 * MS for value in clock)
    assert any(later < earlier for earlier, later in itertools.pairwise(clock))  # back to the start


def test_a_truncated_bag_plays_up_to_where_it_stops_and_bad_bags_exit_1(tmp_path):
    bag = write_bag(tmp_path / "run", arm_run(12_000, period_ns=MS), storage="mcap")  # about 3 MiB
    mcap = next(bag.glob("*.mcap"))
    data = mcap.read_bytes()
    mcap.write_bytes(data[: len(data) * 2 // 3])
    (tmp_path / "junk.db3").write_bytes(b"junk" * 64)
    processes = {
        "cut": player(tmp_path / "cut.log", str(mcap), "--rate", "20"),
        "junk": player(tmp_path / "junk.log", str(tmp_path / "junk.db3")),
        "missing": player(tmp_path / "missing.log", str(tmp_path / "nothing")),
        "usage": player(tmp_path / "usage.log", str(bag), "--rate", "-1"),
    }
    codes = {name: procs.wait_exit(process, START_TIMEOUT) for name, process in processes.items()}
    for process in processes.values():
        procs.end(process)
    assert codes == {"cut": 0, "junk": 1, "missing": 1, "usage": 2}, procs.logs(tmp_path)
    cut = (tmp_path / "cut.log").read_text()
    assert "complete messages from truncated MCAP" in cut and " s into the bag" in cut, cut
    assert "Traceback" not in procs.logs(tmp_path)
    assert "cannot be read" in (tmp_path / "junk.log").read_text()
    assert "does not exist" in (tmp_path / "missing.log").read_text()
    assert "rate must be a positive number" in (tmp_path / "usage.log").read_text()
