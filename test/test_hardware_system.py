"""Hardware swap: the controller drives a stand-in ros2_control driver instead of the simulator.

The driver (test/standin_driver.py) names the joints its own way, publishes them in its
own order at its own rate with no effort, stamps with the wall clock, and takes
commands in the order of its ``joints`` parameter (or stamped ``joint_commands``). The
controller, configured with ``joint_names`` (the driver's names in arm order) and
``command_joints`` (the driver's command order), must close the reach as on the
simulator and end at the same point.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import procs
import pytest
from procs import NS, START_TIMEOUT, stamp_ns

from skelarm_ros.sim.engine import ArmEngine
from skelarm_ros.sim.scenario import load_arm, load_scenario

pytestmark = pytest.mark.slow

rclpy = pytest.importorskip("rclpy")
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

DRIVER = Path(__file__).resolve().with_name("standin_driver.py")
ARM_JOINTS = ["shoulder", "elbow"]  # the driver's names, in the arm's joint order
DRIVER_JOINTS = ["elbow", "shoulder"]  # the driver's command order (its joints parameter)
SETTLE = 1.0  # simulated seconds after the task's duration before the end point is read


def tip_of(state: JointState, names: list[str]) -> np.ndarray:
    """The bundled reach arm's tip for a joint state, its joints picked by name."""
    arm = load_arm("reach")
    engine = ArmEngine(arm.skeleton, arm.dt)
    q = [state.position[list(state.name).index(name)] for name in names]
    return engine.endpoint(np.array(q))


def run_reach(probe: procs.Probe, tmp_path: Path, names: list[str], commands: list, label: str) -> np.ndarray:
    """Wait until the controller answers, then until the reach has had its time; return the final tip."""
    task = load_scenario("reach").task
    states: list[JointState] = probe.states
    probe.spin_until(lambda: bool(commands) and bool(states), START_TIMEOUT, f"{label}: the controller's commands\n")
    first = stamp_ns(states[-1])  # the controller's time line starts about here
    end = first + round((task.duration + SETTLE) * NS)
    probe.spin_until(lambda: stamp_ns(states[-1]) >= end, START_TIMEOUT, f"{label}: the end of the reach")
    tip = tip_of(states[-1], names)
    error = math.dist(tip, task.target)
    assert error < task.tolerance, f"{label}: the tip ended {error:.4f} m from the target\n{procs.logs(tmp_path)}"
    return tip


@pytest.mark.parametrize(
    ("interface", "reliability"),
    [("commands", "reliable"), ("joint_commands", "reliable"), ("commands", "best_effort")],
)
def test_controller_drives_a_driver_with_its_own_names_and_order(
    tmp_path: Path, interface: str, reliability: str
) -> None:
    probe = procs.Probe("arm1")
    # A best-effort driver's states reach only best-effort readers (a reliable reader does not match it).
    qos = procs.keep_all() if reliability == "reliable" else procs.best_effort()
    probe.states = probe.record(JointState, "joint_states", qos)
    if interface == "commands":
        commands = probe.record(Float64MultiArray, "effort_controller/commands", qos)
    else:
        commands = probe.record(JointState, "joint_commands", qos)
    processes = []
    try:
        processes.append(
            procs.start_script(
                DRIVER,
                tmp_path / "driver.log",
                "--ros-args",
                "-r",
                "__ns:=/arm1",
                *procs.parameter_args(
                    {
                        "arm_joints": ARM_JOINTS,
                        "joints": DRIVER_JOINTS,
                        "command_interface": interface,
                        "reliability": reliability,
                    }
                ),
            )
        )
        processes.append(
            procs.start_node(
                "controller",
                tmp_path / "controller.log",
                {"joint_names": ARM_JOINTS, "command_joints": DRIVER_JOINTS, "command_interface": interface},
                namespace="arm1",
            )
        )
        tip = run_reach(probe, tmp_path, ARM_JOINTS, commands, f"driver ({interface})")
        # The driver's own conventions held: its order, no effort, and the controller's order is the driver's.
        last = probe.states[-1]
        assert list(last.name) == list(reversed(ARM_JOINTS)) and len(last.effort) == 0
        if interface == "commands":
            assert all(len(message.data) == 2 for message in commands)
        else:
            assert list(commands[-1].name) == DRIVER_JOINTS
            # Each command is stamped with a state it answers (from the probe's first state on).
            heard = {stamp_ns(state) for state in probe.states}
            answered = {stamp_ns(message) for message in commands if stamp_ns(message) >= min(heard)}
            assert answered and answered <= heard
        controller_log = (tmp_path / "controller.log").read_text()
        assert "in the order ['elbow', 'shoulder']" in controller_log, controller_log
        assert "QoS" not in controller_log, controller_log  # nothing incompatible, nothing to say
    finally:
        codes = [procs.end(process) for process in processes]
        probe.close()
    assert codes == [0, 0], procs.logs(tmp_path)
    if interface == "commands" and reliability == "reliable":
        on_simulator = reach_on_the_simulator(tmp_path / "sim")
        assert math.dist(tip, on_simulator) < load_scenario("reach").task.tolerance, (tip, on_simulator)


def reach_on_the_simulator(folder: Path) -> np.ndarray:
    """The same controller and scenario on the simulator (realtime): the final tip."""
    folder.mkdir()
    probe = procs.Probe("arm2")
    probe.states = probe.record(JointState, "joint_states")
    commands = probe.record(Float64MultiArray, "effort_controller/commands")
    processes = []
    try:
        processes.append(procs.start_node("controller", folder / "controller.log", namespace="arm2"))
        processes.append(
            procs.start_node("simulator", folder / "simulator.log", {"scenario": "reach"}, namespace="arm2")
        )
        tip = run_reach(probe, folder, ["j1", "j2"], commands, "simulator")
    finally:
        codes = [procs.end(process) for process in processes]
        probe.close()
    assert codes == [0, 0], procs.logs(folder)
    return tip
