"""The force replay node in-process: one wrench per new clock time, timer timing, bad sources and parameters."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rclpy
from geometry_msgs.msg import WrenchStamped
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from stand_ins import StandIn
from test_forces import accumulated_times, run_reach, scripted_push
from waiting import spin_for, spin_until, wait_until

from skelarm_ros.bags.forces import ForceSourceError, RecordedForce
from skelarm_ros.interface import seconds_to_stamp, stamp_to_nanoseconds
from skelarm_ros.nodes.force_replay import ForceReplayNode, main
from skelarm_ros.nodes.graph_queries import readers_missing
from skelarm_ros.sim.scenario import ScenarioError

pytestmark = pytest.mark.ros

DT = 0.002
SAMPLES = [[1.0, -2.0], [3.0, 0.5], [0.0, 4.0], [7.0, 7.0]]  # the last marks the end
KEEP_ALL = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
WAIT = 20.0  # wall seconds for discovery between the node and the probe on a loaded machine


def record(start: float = 0.0) -> RecordedForce:
    return RecordedForce(accumulated_times(DT, len(SAMPLES) - 1, start), SAMPLES)


def make(
    context: rclpy.Context, given: RecordedForce | None = None, published: Published | None = None, **parameters: Any
) -> ForceReplayNode:
    overrides = [Parameter(name, value=value) for name, value in parameters.items()]
    stand_ins = None if published is None else {"tip_wrench": published}
    return ForceReplayNode(given, context=context, parameter_overrides=overrides, stand_ins=stand_ins)


class Published(StandIn):
    """Stands in for the tip_wrench publisher: keeps (stamp, fx, fy, frame) of what the node publishes."""

    def __init__(self) -> None:
        super().__init__("/tip_wrench", keep=self.fields, msg_type=WrenchStamped)

    @property
    def wrenches(self) -> list[tuple[int, float, float, str]]:
        return self.messages

    @staticmethod
    def fields(msg: WrenchStamped) -> tuple[int, float, float, str]:
        wrench = msg.wrench
        assert (wrench.force.z, wrench.torque.x, wrench.torque.y, wrench.torque.z) == (0.0, 0.0, 0.0, 0.0)
        stamp = stamp_to_nanoseconds(msg.header.stamp.sec, msg.header.stamp.nanosec)
        return stamp, wrench.force.x, wrench.force.y, msg.header.frame_id


def clock(t: float) -> Clock:
    msg = Clock()
    msg.clock.sec, msg.clock.nanosec = seconds_to_stamp(t)
    return msg


def test_clock_timing_publishes_once_per_new_time_stamped_with_it(context, capfd) -> None:
    published = Published()
    node = make(context, record(), published)
    try:
        times = accumulated_times(DT, 6)
        for t in times:
            node.on_clock(clock(t))
            node.on_clock(clock(t))  # a repeated clock time is not a new step
        expected = [*SAMPLES[:3], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]
        assert [w[0] for w in published.wrenches] == [round(t * 1e9) for t in times]
        assert [[w[1], w[2]] for w in published.wrenches] == expected
        assert {w[3] for w in published.wrenches} == {"base"}
        # The time line restarts (a simulator reset): the record plays again from its start.
        node.on_clock(clock(0.0))
        node.on_clock(clock(DT))
        assert [[w[1], w[2]] for w in published.wrenches[-2:]] == SAMPLES[:2]
    finally:
        node.destroy_node()
    err = capfd.readouterr().err
    assert err.count("starts acting at t=0 s") == 2
    assert err.count("ended at t=0.006 s") == 1
    assert "time went back to 0 s" in err


def test_stepped_mode_gives_each_step_its_mean(context) -> None:
    # The scenario's step (reach: 2 ms) is the recording's: each step gets its sample exactly.
    published = Published()
    node = make(context, record(), published, mode="stepped", scenario="reach")
    try:
        assert node.dt == DT
        for t in accumulated_times(DT, 3):
            node.on_clock(clock(t))
        assert [[w[1], w[2]] for w in published.wrenches] == [*SAMPLES[:3], [0.0, 0.0]]
    finally:
        node.destroy_node()
    published = Published()
    node = make(context, record(), published, mode="stepped", dt=2 * DT)
    try:
        for t in (0.0, 2 * DT, 4 * DT):
            node.on_clock(clock(t))
        np.testing.assert_allclose([[w[1], w[2]] for w in published.wrenches], [[2.0, -0.75], [0.0, 2.0], [0, 0]])
    finally:
        node.destroy_node()


def test_time_offset_delays_the_record(context) -> None:
    published = Published()
    node = make(context, record(), published, time_offset=0.01)
    try:
        for t in accumulated_times(DT, 8):
            node.on_clock(clock(t))
        forces = [[w[1], w[2]] for w in published.wrenches]
        assert forces == [[0.0, 0.0]] * 5 + SAMPLES[:3] + [[0.0, 0.0]]
    finally:
        node.destroy_node()


class FakeClock:
    def __init__(self) -> None:
        self.nanoseconds = 5_000_000_000

    def now(self) -> FakeClock:
        return self


def test_timer_timing_stops_after_one_zero_wrench(context, capfd) -> None:
    published = Published()
    node = make(context, record(), published, timing="timer", dt=DT)
    try:
        fake = FakeClock()
        node.get_clock = lambda: fake  # type: ignore[method-assign]
        for _ in range(4):
            assert not node.timer.is_canceled()
            node.on_timer()
            fake.nanoseconds += 2_000_000
        assert node.timer.is_canceled()
        assert [[w[1], w[2]] for w in published.wrenches] == [*SAMPLES[:3], [0.0, 0.0]]
        assert [w[0] for w in published.wrenches] == [5_000_000_000 + k * 2_000_000 for k in range(4)]
    finally:
        node.destroy_node()
    assert "tip_wrench is zero from now on" in capfd.readouterr().err


def test_the_wrench_publisher_appears_once_clock_has_a_publisher(context) -> None:
    node = make(context, record())
    probe = rclpy.create_node("probe", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(probe)
    received: list[WrenchStamped] = []
    try:
        subscription = probe.create_subscription(WrenchStamped, "tip_wrench", received.append, KEEP_ALL)
        spin_for(executor, 1.0)
        assert node.wrench_pub is None, "tip_wrench was offered before /clock had a publisher"
        clock_pub = probe.create_publisher(Clock, "/clock", KEEP_ALL)

        spin_until(executor, lambda: subscription.get_publisher_count() > 0, WAIT, "the tip_wrench publisher")
        spin_until(executor, lambda: clock_pub.get_subscription_count() > 0, WAIT, "the /clock subscription")
        times = accumulated_times(DT, 4)
        for t in times:
            clock_pub.publish(clock(t))
        spin_until(executor, lambda: len(received) >= len(times), WAIT, "one wrench per clock time")
        stamps = [stamp_to_nanoseconds(m.header.stamp.sec, m.header.stamp.nanosec) for m in received]
        assert stamps == [round(t * 1e9) for t in times]
        assert [[m.wrench.force.x, m.wrench.force.y] for m in received] == [*SAMPLES[:3], [0.0, 0.0], [0.0, 0.0]]
    finally:
        executor.shutdown()
        probe.destroy_node()
        node.destroy_node()


def test_the_source_parameter_reads_a_log(context, tmp_path: Path) -> None:
    path = tmp_path / "push.sklog.npz"
    run_reach(scripted_push, duration=0.6).save(path)
    node = make(context, source=str(path))
    try:
        assert np.array_equal(node.record.at(0.4), [3.0, -2.0])
        assert node.record.end == pytest.approx(0.6)
    finally:
        node.destroy_node()


@pytest.mark.parametrize(
    ("parameters", "error", "message"),
    [
        ({"mode": "ramp"}, ValueError, r"^parameter mode 'ramp' is not one of hold, stepped$"),
        ({"timing": "wall"}, ValueError, r"^parameter timing 'wall' is not one of clock, timer$"),
        ({"mode": "stepped", "scenario": "/nowhere.toml"}, ScenarioError, "does not exist"),
        ({"source": ""}, ForceSourceError, "no force source given"),
    ],
)
def test_bad_parameters_are_refused_with_a_sentence(context, parameters, error, message) -> None:
    given = None if "source" in parameters else record()
    with pytest.raises(error, match=message):
        make(context, given, **parameters)


def test_a_negative_step_is_refused(context) -> None:
    with pytest.raises(ValueError, match=r"^parameter dt must be zero or a positive number \(s\), got -1\.0$"):
        make(context, record(), dt=-1.0)


def bad_sources(folder: Path) -> dict[str, tuple[Path, str]]:
    """Bad force sources and the sentence each must give."""
    no_force = folder / "no_force.sklog.npz"
    run_reach(None, duration=0.02).save(no_force)
    corrupt = folder / "corrupt.sklog.npz"
    corrupt.write_bytes(b"PK\x03\x04 truncated")
    columns = folder / "columns.csv"
    columns.write_text("time,force_x,force_y\n0,1,2\n1,0,0\n")
    decreasing = folder / "decreasing.csv"
    decreasing.write_text("t,fx,fy\n0,1,2\n0.5,0,0\n0.25,0,0\n")
    return {
        "missing": (folder / "absent.sklog.npz", "does not exist"),
        "corrupt": (corrupt, "is not a readable skelarm .sklog.npz log"),
        "no_force": (no_force, "has no 'ext_force' channel"),
        "columns": (columns, "has no column(s) ['t', 'fx', 'fy']"),
        "decreasing": (decreasing, "the sample times must increase"),
    }


@pytest.mark.parametrize("case", ["missing", "corrupt", "no_force", "columns", "decreasing"])
def test_main_exits_1_with_one_sentence_on_a_bad_source(case: str, tmp_path: Path, capfd) -> None:
    path, sentence = bad_sources(tmp_path)[case]
    code = main(["force_replay", "--ros-args", "-p", f"source:={path}"])
    err = capfd.readouterr().err
    assert code == 1
    assert sentence in err
    assert str(path) in err
    assert "Traceback" not in err


@pytest.mark.slow
def test_the_process_exits_non_zero_at_start_up_on_a_bad_source(tmp_path: Path) -> None:
    path, sentence = bad_sources(tmp_path)["decreasing"]
    result = subprocess.run(
        [sys.executable, "-m", "skelarm_ros.nodes.force_replay", "--ros-args", "-p", f"source:={path}"],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
        check=False,
    )
    assert result.returncode == 1
    assert sentence in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_wrenches_wait_in_order_for_their_readers_by_name(context) -> None:
    published = Published()
    node = make(context, record(), published, wrench_readers=["simulator", "recorder"])
    readers = []
    try:
        published.readers = 1  # a reader from outside the graph: a count of one would be met
        assert node.ensure_publisher() is published
        times = accumulated_times(DT, 3)
        for t in times:
            node.on_clock(clock(t))
        for name in ("simulator", "recorder"):
            node.out.release()
            assert published.wrenches == []  # the simulator or the recorder is not there yet: held back
            readers.append(rclpy.create_node(name, context=context))
            readers[-1].create_subscription(WrenchStamped, "tip_wrench", lambda _: None, 10)
        known = ["/tip_wrench readers matched (1 of 2)"]
        assert wait_until(lambda: readers_missing(node, published, ["/simulator", "/recorder"]) == known, 20.0)
        node.out.release()
        assert published.wrenches == []  # known, not matched yet
        published.readers = 2
        node.out.release()
        node.on_clock(clock(times[-1] + DT))
        stamps = [w[0] for w in published.wrenches]
        assert stamps == [round(t * 1e9) for t in [*times, times[-1] + DT]]  # every one, in order
        assert [[w[1], w[2]] for w in published.wrenches[:3]] == SAMPLES[:3]
    finally:
        node.destroy_node()
        for reader in readers:
            reader.destroy_node()
