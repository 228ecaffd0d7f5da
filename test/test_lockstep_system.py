"""System tests: the simulator and the controller as two real processes over DDS.

Lockstep must reproduce the offline skelarm run frame by frame; realtime must reach.
"""

from __future__ import annotations

import math
import subprocess
import time
import warnings
from pathlib import Path

import numpy as np
import procs
import pytest
import rclpy
import skelarm
from conftest import full_scenarios, reference_run
from geometry_msgs.msg import PointStamped
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

pytestmark = pytest.mark.slow

TOLERANCE = 1e-9
SHORTENED = {"periodic_curve_four_dof_robot": 2.0}  # simulated seconds instead of the task's 30 s
START_TIMEOUT = 60.0  # wall seconds for the processes to come up and be discovered


def _start(executable: str, parameters: dict[str, object], log: Path) -> subprocess.Popen:
    return procs.start_node(executable, log, parameters)


_stop = procs.end


@pytest.fixture
def probe():
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("probe", context=context)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(node)
    yield node, executor
    executor.shutdown()
    node.destroy_node()
    rclpy.try_shutdown(context=context)


def _spin_until(executor, condition, deadline: float, what: str) -> None:
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        executor.spin_once(timeout_sec=0.05)


def _seconds(msg) -> float:
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


@pytest.mark.parametrize("path", full_scenarios(), ids=lambda path: path.stem)
def test_lockstep_run_equals_the_offline_run(path, shared_scenarios, probe, tmp_path):
    node, executor = probe
    if path.stem in SHORTENED:
        # The offline run cut at the same simulated time: its frames are the full run's first frames.
        duration = SHORTENED[path.stem]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reference = skelarm.run_scenario(skelarm.load_scenario(path), duration=duration)
    else:
        reference = reference_run(path)
        duration = float(reference.times[-1])
    frames = len(reference.times)
    states: list[JointState] = []
    keep_all = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
    subscription = node.create_subscription(JointState, "joint_states", states.append, keep_all)
    processes = []
    try:
        simulator = _start(
            "simulator",
            {"scenario": path, "mode": "lockstep", "command_interface": "joint_commands", "duration": duration},
            tmp_path / "simulator.log",
        )
        processes.append(simulator)
        start = time.monotonic()
        _spin_until(executor, lambda: subscription.get_publisher_count() > 0, start + START_TIMEOUT, "the simulator")
        controller = _start(
            "controller", {"scenario": path, "command_interface": "joint_commands"}, tmp_path / "controller.log"
        )
        processes.append(controller)
        deadline = time.monotonic() + START_TIMEOUT + frames * 0.05
        _spin_until(executor, lambda: len(states) >= frames or simulator.poll() is not None, deadline, "the run")
        _spin_until(executor, lambda: len(states) >= frames, time.monotonic() + 10.0, f"{frames} states")
        assert simulator.wait(timeout=30.0) == 0, (tmp_path / "simulator.log").read_text()
    finally:
        node.destroy_subscription(subscription)
        codes = [_stop(process) for process in processes]
    assert codes == [0, 0], [(tmp_path / f"{name}.log").read_text() for name in ("simulator", "controller")]
    states = states[:frames]
    np.testing.assert_allclose([_seconds(msg) for msg in states], reference.times, rtol=0.0, atol=1e-9)
    q = np.array([list(msg.position) for msg in states])
    dq = np.array([list(msg.velocity) for msg in states])
    effort = np.array([list(msg.effort) for msg in states])
    np.testing.assert_allclose(q, reference.channel("q"), rtol=0.0, atol=TOLERANCE)
    np.testing.assert_allclose(dq, reference.channel("dq"), rtol=0.0, atol=TOLERANCE)
    np.testing.assert_array_equal(effort[0], 0.0)
    np.testing.assert_allclose(effort[1:], reference.channel("tau")[:-1], rtol=0.0, atol=TOLERANCE)


def test_realtime_reach_ends_within_tolerance(shared_scenarios, probe, tmp_path):
    node, executor = probe
    path = shared_scenarios / "reach.toml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scenario = skelarm.load_scenario(path)
    target, tolerance = scenario.task.target, scenario.task.tolerance
    assert tolerance is not None
    tips: list[PointStamped] = []
    subscription = node.create_subscription(PointStamped, "tip", tips.append, 100)
    processes = []
    try:
        processes.append(_start("controller", {"scenario": path}, tmp_path / "controller.log"))
        processes.append(_start("simulator", {"scenario": path, "mode": "realtime"}, tmp_path / "simulator.log"))

        def reached() -> bool:
            if not tips or _seconds(tips[-1]) < scenario.task.duration + 0.5:
                return False
            error = math.dist((tips[-1].point.x, tips[-1].point.y), target)
            return error < tolerance

        _spin_until(executor, reached, time.monotonic() + START_TIMEOUT + 30.0, "the tip to reach the target")
    finally:
        node.destroy_subscription(subscription)
        codes = [_stop(process) for process in processes]
    assert codes == [0, 0], [(tmp_path / f"{name}.log").read_text() for name in ("controller", "simulator")]
