"""System tests: the simulator and the controller as two real processes over DDS.

Lockstep must reproduce the offline skelarm run frame by frame; realtime must reach.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import procs
import pytest
import skelarm
from conftest import full_scenarios, reference_run
from geometry_msgs.msg import PointStamped
from sensor_msgs.msg import JointState

from skelarm_ros.sim.scenario import resolve_scenario

pytestmark = pytest.mark.slow

TOLERANCE = 1e-9
SHORTENED = {"periodic_curve_four_dof_robot": 2.0}  # simulated seconds instead of the task's 30 s
START_TIMEOUT = 60.0  # wall seconds for the processes to come up and be discovered


@pytest.fixture
def probe():
    probe = procs.Probe()
    yield probe
    probe.close()


def _seconds(msg) -> float:
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


def _offline(scenario, duration: float) -> skelarm.StateLog:
    """The offline skelarm run of ``scenario`` cut at ``duration`` simulated seconds."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return skelarm.run_scenario(skelarm.load_scenario(scenario), duration=duration)


def _lockstep_states(probe, tmp_path, scenario, duration: float, frames: int, frame_time: float = 0.05, **controller):
    """Run the simulator in lockstep for ``duration`` and the controller as two processes; return the first states.

    ``frame_time`` is the wall seconds one frame may take at most; ``controller`` are the
    controller's parameters besides the ones the launch gives it in lockstep.
    """
    states = probe.record(JointState, "joint_states")
    processes = []
    try:
        simulator = procs.start_node(
            "simulator",
            tmp_path / "simulator.log",
            # Step 0 waits for the controller's and the probe's readers, by name, so the probe sees every state.
            {
                "scenario": scenario,
                "mode": "lockstep",
                "command_interface": "joint_commands",
                "duration": duration,
                "state_readers": ["controller", "/probe"],
            },
        )
        processes.append(simulator)
        probe.spin_until(lambda: probe.node.count_publishers("joint_states") > 0, START_TIMEOUT, "the simulator")
        processes.append(
            procs.start_node(
                "controller",
                tmp_path / "controller.log",
                # As the launch runs it in lockstep: a stall of the simulator is no stale arm.
                {"scenario": scenario, "command_interface": "joint_commands", "state_timeout": 0.0, **controller},
            )
        )
        timeout = START_TIMEOUT + frames * frame_time
        probe.spin_until(lambda: len(states) >= frames or simulator.poll() is not None, timeout, "the run")
        probe.spin_until(lambda: len(states) >= frames, 10.0, f"{frames} states")
        assert simulator.wait(timeout=30.0) == 0, (tmp_path / "simulator.log").read_text()
    finally:
        codes = [procs.end(process) for process in processes]
    assert codes == [0, 0], procs.logs(tmp_path)
    return states[:frames]


@pytest.mark.parametrize("path", full_scenarios(), ids=lambda path: path.stem)
def test_lockstep_run_equals_the_offline_run(path, shared_scenarios, probe, tmp_path):
    if path.stem in SHORTENED:
        # The offline run cut at the same simulated time: its frames are the full run's first frames.
        duration = SHORTENED[path.stem]
        reference = _offline(path, duration)
    else:
        reference = reference_run(path)
        duration = float(reference.times[-1])
    states = _lockstep_states(probe, tmp_path, path, duration, len(reference.times))
    np.testing.assert_allclose([_seconds(msg) for msg in states], reference.times, rtol=0.0, atol=1e-9)
    q = np.array([list(msg.position) for msg in states])
    dq = np.array([list(msg.velocity) for msg in states])
    effort = np.array([list(msg.effort) for msg in states])
    np.testing.assert_allclose(q, reference.channel("q"), rtol=0.0, atol=TOLERANCE)
    np.testing.assert_allclose(dq, reference.channel("dq"), rtol=0.0, atol=TOLERANCE)
    np.testing.assert_array_equal(effort[0], 0.0)
    np.testing.assert_allclose(effort[1:], reference.channel("tau")[:-1], rtol=0.0, atol=TOLERANCE)


MPC_TOLERANCE = 1e-6  # rad: MPC's finite-difference optimizer amplifies last-bit differences (docs/simulator.md)


def test_an_mpc_lockstep_run_stays_within_its_stated_distance_of_the_offline_run(probe, tmp_path):
    scenario = tmp_path / "mpc.toml"
    reach = resolve_scenario("reach").read_text(encoding="utf-8").split("[controller]")[0]
    scenario.write_text(
        reach.replace("dt = 0.002", "dt = 0.01") + '[controller]\ntype = "mpc"\nhorizon = 3\nmax_iter = 5\n'
    )
    reference = _offline(scenario, 0.3)
    frames = len(reference.times)
    states = _lockstep_states(probe, tmp_path, scenario, 0.3, frames, frame_time=60.0 / frames, reliable_states=True)
    q = np.array([list(msg.position) for msg in states])
    assert np.abs(q - reference.channel("q")).max() <= MPC_TOLERANCE


def test_realtime_reach_ends_within_tolerance(shared_scenarios, probe, tmp_path):
    path = shared_scenarios / "reach.toml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scenario = skelarm.load_scenario(path)
    target, tolerance = scenario.task.target, scenario.task.tolerance
    assert tolerance is not None
    tips = probe.record(PointStamped, "tip", 100)
    processes = []
    try:
        processes.append(procs.start_node("controller", tmp_path / "controller.log", {"scenario": path}))
        processes.append(
            procs.start_node("simulator", tmp_path / "simulator.log", {"scenario": path, "mode": "realtime"})
        )

        def reached() -> bool:
            if not tips or _seconds(tips[-1]) < scenario.task.duration + 0.5:
                return False
            error = math.dist((tips[-1].point.x, tips[-1].point.y), target)
            return error < tolerance

        probe.spin_until(reached, START_TIMEOUT + 30.0, "the tip to reach the target")
    finally:
        codes = [procs.end(process) for process in processes]
    assert codes == [0, 0], [(tmp_path / f"{name}.log").read_text() for name in ("controller", "simulator")]
