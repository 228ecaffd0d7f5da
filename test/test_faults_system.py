"""Fault tolerance with real processes over DDS: a node dies, restarts or disappears mid-run.

- the controller killed mid-run (realtime): zero torque within ``command_timeout``, said
  once; a restarted controller takes over and the reach completes;
- the simulator restarted: the controller sees time go back, resets, and the reach
  completes on the new time line;
- lockstep without its controller: the simulator ends the wait after
  ``lockstep_timeout`` with an error naming the step and exits 1;
- two and four arms in their own namespaces: each completes its reach and hears only
  its own simulator (``skelarm-ros bench multiarm`` also reports their on-time steps).

The recorder stopped by SIGINT / SIGTERM / SIGKILL is test/test_recorder.py.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import procs
import pytest
from multiarm import run_arms
from procs import NS, START_TIMEOUT, stamp_ns

from skelarm_ros.sim.engine import ArmEngine
from skelarm_ros.sim.scenario import load_arm, load_scenario

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # timing checks: alone, after the parallel part (Makefile)

rclpy = pytest.importorskip("rclpy")
from sensor_msgs.msg import JointState  # noqa: E402

# s; above the 0.33 s a node can stall when it first meets another over Fast DDS's shared memory
# (docs/reliability.md): a new controller stalled that long would lapse a second time at 0.3 s.
COMMAND_TIMEOUT = 0.5
MARGIN = 0.5  # simulated s for the messages in flight between the kill and the probe
LAPSED = "no effort command for over command_timeout"
SETTLE = 1.0  # simulated s after the task's duration


def tip_error(state: JointState) -> float:
    """Distance (m) of the bundled reach arm's tip from its target, for a simulator's state."""
    arm = load_arm("reach")
    tip = ArmEngine(arm.skeleton, arm.dt).endpoint(np.array(state.position))
    return math.dist(tip, load_scenario("reach").task.target)


def wait_for_text(probe: procs.Probe, log: Path, text: str, timeout: float = 20.0) -> str:
    """Spin until ``text`` is in ``log``; return the log."""
    probe.spin_until(lambda: text in log.read_text(errors="replace"), timeout, f"'{text}' in {log.name}")
    return log.read_text(errors="replace")


def commanded(state: JointState) -> bool:
    return any(value != 0.0 for value in state.effort)


def wait_for_reach(probe: procs.Probe, states: list[JointState], since: int, folder: Path) -> None:
    """Wait until a state stamped the task's duration (and a settling second) after ``since``; check the tip."""
    task = load_scenario("reach").task
    end = since + round((task.duration + SETTLE) * NS)
    probe.spin_until(lambda: stamp_ns(states[-1]) >= end, START_TIMEOUT, "the end of the reach")
    error = tip_error(states[-1])
    assert error < task.tolerance, f"the tip ended {error:.4f} m from the target\n{procs.logs(folder)}"


def test_killed_controller_gives_zero_torque_once_and_a_new_one_completes_the_reach(tmp_path: Path) -> None:
    probe = procs.Probe("arm1")
    states = probe.record(JointState, "joint_states")
    sim_log = tmp_path / "simulator.log"
    processes = []
    try:
        processes.append(procs.start_node("controller", tmp_path / "controller.log", namespace="arm1"))
        processes.append(procs.start_node("simulator", sim_log, {"command_timeout": COMMAND_TIMEOUT}, namespace="arm1"))
        probe.spin_until(lambda: bool(states) and commanded(states[-1]), START_TIMEOUT, "the controller's torque")
        moving = stamp_ns(states[-1])
        probe.spin_until(lambda: stamp_ns(states[-1]) > moving + NS // 2, START_TIMEOUT, "half a second of reach")
        procs.kill(processes[0])
        killed_at = stamp_ns(states[-1])
        probe.spin_until(
            lambda: any(stamp_ns(s) > killed_at and not commanded(s) for s in states), START_TIMEOUT, "zero torque"
        )
        zero_at = next(stamp_ns(s) for s in states if stamp_ns(s) > killed_at and not commanded(s))
        assert (zero_at - killed_at) / NS <= COMMAND_TIMEOUT + MARGIN
        # Zero from then on, as long as nobody commands.
        probe.spin_until(lambda: stamp_ns(states[-1]) > zero_at + NS // 2, START_TIMEOUT, "states after the lapse")
        assert not any(commanded(s) for s in states if stamp_ns(s) >= zero_at)
        wait_for_text(probe, sim_log, LAPSED)

        processes.append(procs.start_node("controller", tmp_path / "controller2.log", namespace="arm1"))
        probe.spin_until(lambda: commanded(states[-1]), START_TIMEOUT, "the new controller's torque")
        wait_for_reach(probe, states, stamp_ns(states[-1]), tmp_path)
        log = wait_for_text(probe, sim_log, "commands resumed")
    finally:
        codes = [procs.end(process) for process in processes]
        probe.close()
    assert log.count(LAPSED) == 1, log
    assert codes[1:] == [0, 0], procs.logs(tmp_path)
    assert "Traceback" not in procs.logs(tmp_path)


def test_restarted_simulator_is_followed_from_its_new_time_line(tmp_path: Path) -> None:
    probe = procs.Probe("arm1")
    states = probe.record(JointState, "joint_states")
    processes = []
    try:
        processes.append(procs.start_node("controller", tmp_path / "controller.log", namespace="arm1"))
        # As the launch starts it: step 0 waits for the controller and both readers by name (controller, probe).
        waiting = {"wait_for_controller": True, "state_readers": ["controller", "probe"]}
        processes.append(procs.start_node("simulator", tmp_path / "simulator.log", waiting, namespace="arm1"))
        probe.spin_until(
            lambda: bool(states) and stamp_ns(states[-1]) > NS and commanded(states[-1]),
            START_TIMEOUT,
            "a second of controlled reach",
        )
        assert procs.end(processes[1]) == 0, procs.logs(tmp_path)
        processes.append(procs.start_node("simulator", tmp_path / "simulator2.log", waiting, namespace="arm1"))

        def restart() -> int | None:
            """Where the new time line starts: the first state stamped earlier than the one before it."""
            return next((k for k in range(1, len(states)) if stamp_ns(states[k]) < stamp_ns(states[k - 1])), None)

        # The first simulator's last states may still be in flight: the new ones are those after its time went back.
        probe.spin_until(lambda: restart() is not None, START_TIMEOUT, "the new simulator's states")
        before = restart()
        assert before is not None and stamp_ns(states[before]) == 0  # its time starts again
        probe.spin_until(lambda: commanded(states[-1]), START_TIMEOUT, "commands on the new time line")
        wait_for_reach(probe, states, stamp_ns(states[before]), tmp_path)
    finally:
        codes = [procs.end(process) for process in processes]
        probe.close()
    # Controlled from the new time line's start: a controller that rejected the earlier stamps
    # (time_reversal:=reject) would send nothing until the new time passed the old one (1 s).
    assert any(commanded(s) and stamp_ns(s) < NS // 2 for s in states[before:]), procs.logs(tmp_path)
    assert codes == [0, 0, 0], procs.logs(tmp_path)


def test_lockstep_without_its_controller_ends_after_the_timeout_and_exits_1(tmp_path: Path) -> None:
    probe = procs.Probe("arm1")
    states = probe.record(JointState, "joint_states")
    sim_log = tmp_path / "simulator.log"
    processes = []
    try:
        processes.append(
            procs.start_node(
                "controller", tmp_path / "controller.log", {"command_interface": "joint_commands"}, namespace="arm1"
            )
        )
        probe.spin_until(lambda: probe.node.count_publishers("joint_commands") > 0, START_TIMEOUT, "the controller")
        sim = procs.start_node(
            "simulator",
            sim_log,
            {"mode": "lockstep", "command_interface": "joint_commands", "lockstep_timeout": 1.0},
            namespace="arm1",
        )
        processes.append(sim)
        probe.spin_until(lambda: len(states) > 200, START_TIMEOUT, "200 lockstep states")
        procs.kill(processes[0])
        code = procs.wait_exit(sim, 60.0)  # nothing hangs: it gives up by itself
        probe.spin_for(0.3)
    finally:
        for process in processes:
            procs.end(process)
        probe.close()
    log = sim_log.read_text()
    assert code == 1, log
    last = states[-1]
    step = round(stamp_ns(last) / (0.002 * NS))
    stamp = f"{last.header.stamp.sec}.{last.header.stamp.nanosec:09d} s (step {step})"
    assert f"lockstep: no joint_commands stamped {stamp} arrived within lockstep_timeout=1.0 s" in log, log
    assert "Traceback" not in log


@pytest.mark.parametrize("count", [2, 4])
def test_arms_in_their_namespaces_each_complete_and_hear_only_their_own(tmp_path: Path, count: int) -> None:
    tolerance = load_scenario("reach").task.tolerance
    runs = run_arms(count, tmp_path)
    for run in runs:
        ns = f"/{run.namespace}"
        assert run.state_publishers == [f"{ns}/simulator"], run
        assert run.state_subscribers == [f"{ns}/controller"], run
        assert run.command_publishers == [f"{ns}/controller"], run
        assert run.exit_code == 0, procs.logs(tmp_path)
        assert run.tip_error < tolerance, (run, procs.logs(tmp_path))
