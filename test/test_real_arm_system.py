"""Driving a real arm: the controller on a stand-in effort driver that holds the last command it got.

The driver (test/standin_driver.py) has its own joint names, publishes them in its own
order with a gripper joint that is not the arm's, at 250 Hz, stamped with the wall clock,
and takes ``effort_controller/commands`` in yet another order, holding the newest. Each
start is a fresh driver and a fresh controller on a short four-link reach; the driver
writes every command it received, which the checks read:

- from the scenario's pose, over several starts, no command exceeds twice what the
  reach needs offline (``skelarm.run_scenario``), and the reach ends within tolerance;
- from 30 degrees away, the peak is at most twice that of a reach planned from there;
- a stop (SIGINT, SIGTERM) mid-reach leaves zero torque as the last command;
- a 1 s gap in the joint states brings a zero command within 0.6 s, then control
  resumes and the reach ends within tolerance;
- computed torque on an arm in the vertical plane reaches within tolerance.
"""

from __future__ import annotations

import math
import signal
from pathlib import Path

import numpy as np
import procs
import pytest
import skelarm
from procs import NS, START_TIMEOUT, stamp_ns

from skelarm_ros.sim.engine import ArmEngine
from skelarm_ros.sim.scenario import load_arm, load_scenario

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # a stand-in driver at 250 Hz and wall-time deadlines: alone

rclpy = pytest.importorskip("rclpy")
from sensor_msgs.msg import JointState  # noqa: E402

DRIVER = Path(__file__).resolve().with_name("standin_driver.py")
SCENARIO = Path(__file__).resolve().parents[1] / "config" / "scenarios" / "reach_four_dof_robot.toml"
ARM_JOINTS = ["turret", "shoulder", "elbow", "wrist"]  # the driver's names, in the arm's joint order
DRIVER_JOINTS = ["elbow", "turret", "wrist", "shoulder"]  # the order its effort controller takes them in
GRIPPER = "gripper"
RATE = 250.0  # Hz, the driver's state rate
DURATION = 1.0  # s, the reach's planned duration (short, so each start is quick)
SETTLE = 0.5  # s after the reach's duration before the tip is read
FAR = [-30.0, 25.0, 0.0, 0.0]  # degrees from the scenario's initial pose (inside the joints' limits)
GRAVITY = "[0.0, -9.81]"  # an arm in the vertical plane
STARTS_AT_THE_POSE = 3


def scenario(folder: Path, name: str, *, gravity: str = "", initial: list[float] | None = None) -> Path:
    """The bundled four-link reach, shortened; with gravity, or starting elsewhere, when asked."""
    text = SCENARIO.read_text().replace("duration = 5.0", f"duration = {DURATION}")
    if gravity:
        text = text.replace("[simulator]\n", f"[simulator]\ngrav_vec = {gravity}\n")
    if initial is not None:
        text = text.replace("q = [15.0, 15.0, 15.0, 15.0]", f"q = {initial}")
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


def offline_torque(path: Path) -> np.ndarray:
    """The torques (N*m, one row per step) of skelarm's own run of the scenario."""
    return np.asarray(skelarm.run_scenario(load_scenario(path), duration=DURATION).channel("tau"))


class Start:
    """One fresh driver and controller, the probe watching the driver's states."""

    def __init__(self, folder: Path, path: Path, driver: dict[str, object], controller: dict[str, object]) -> None:
        folder.mkdir()
        self.folder, self.path = folder, path
        self.commands_log = folder / "commands.txt"
        namespace = folder.name  # each start its own names, so nothing of an earlier start is heard
        self.probe = procs.Probe(namespace)
        self.states: list[JointState] = self.probe.record(JointState, "joint_states", procs.best_effort())
        driver_parameters = {
            "scenario": str(path),
            "arm_joints": ARM_JOINTS,
            "joints": DRIVER_JOINTS,
            "rate": RATE,
            "gripper": GRIPPER,
            "commands_log": str(self.commands_log),
            **driver,
        }
        self.driver = procs.start_script(
            DRIVER,
            folder / "driver.log",
            "--ros-args",
            "-r",
            f"__ns:=/{namespace}",
            *procs.parameter_args(driver_parameters),
        )
        self.probe.spin_until(lambda: len(self.states) > 0, START_TIMEOUT, f"the driver's joint states\n{self.log()}")
        controller_parameters = {
            "scenario": str(path),
            "joint_names": ARM_JOINTS,
            "command_joints": DRIVER_JOINTS,
            **controller,
        }
        self.controller = procs.start_node(
            "controller", folder / "controller.log", controller_parameters, namespace=namespace
        )

    def run_for(self, seconds: float) -> None:
        """Wait until the controller starts controlling, then until the driver's states are ``seconds`` past it."""
        states = self.states
        self.probe.spin_until(lambda: self.said("control starts with this state"), START_TIMEOUT, "control to start")
        end = stamp_ns(states[-1]) + round(seconds * NS)
        self.probe.spin_until(lambda: stamp_ns(states[-1]) >= end, START_TIMEOUT, "the end of the run")

    def stop(self, signum: int = signal.SIGINT) -> list[tuple[float, np.ndarray]]:
        """Stop the controller with ``signum``, then the driver; return the commands the driver received."""
        try:
            self.controller.send_signal(signum)
            code = procs.wait_exit(self.controller, 20.0)
            self.probe.spin_for(0.2)  # the driver takes what is in flight
        finally:
            codes = [procs.end(self.controller), procs.end(self.driver)]
            self.probe.close()
        assert code == 0 and codes == [0, 0], procs.logs(self.folder)
        rows = [line.split() for line in self.commands_log.read_text().splitlines() if line.strip()]
        return [(float(row[0]), np.array([float(value) for value in row[1:]])) for row in rows]

    def said(self, text: str) -> bool:
        return text in (self.folder / "controller.log").read_text()

    def tip_error(self) -> float:
        """How far the tip of the last state is from the task's target (m)."""
        arm = load_arm(self.path)
        last = self.states[-1]
        q = np.array([last.position[list(last.name).index(name)] for name in ARM_JOINTS])
        tip = ArmEngine(arm.skeleton, arm.dt).endpoint(q)
        return math.dist(tip, load_scenario(self.path).task.target)

    def log(self) -> str:
        return procs.logs(self.folder)


def peak(commands: list[tuple[float, np.ndarray]]) -> float:
    return max(float(np.abs(tau).max()) for _, tau in commands)


def test_starts_at_the_pose_never_kick_and_a_stop_leaves_zero_torque(tmp_path: Path) -> None:
    """Fresh starts, some with the driver's effort controller up a second after its states (as ros2_control)."""
    path = scenario(tmp_path, "reach")
    offline = offline_torque(path)
    needed = float(np.abs(offline).max())
    tolerance = load_scenario(path).task.tolerance
    for index in range(STARTS_AT_THE_POSE):
        late = {"commands_after": 1.0} if index % 2 == 1 else {}
        start = Start(tmp_path / f"start{index}", path, late, {"soft_start": 0.0})
        midway = index == STARTS_AT_THE_POSE - 1
        try:
            start.run_for(DURATION / 2 if midway else DURATION + SETTLE)
            error = start.tip_error()
        finally:
            commands = start.stop(signal.SIGINT if index % 2 == 0 else signal.SIGTERM)
        first = [tau.round(3).tolist() for _, tau in commands[:4]]
        label = f"start {index}: peak {peak(commands):.3f} N*m (offline {needed:.3f}), first {first}\n{start.log()}"
        assert peak(commands) <= 2.0 * needed, label
        # Deterministic: the first command the driver gets is the one of t=0 at the pose, as offline.
        np.testing.assert_allclose(commands[0][1], offline[0], atol=1e-9, err_msg=label)
        assert not np.any(commands[-1][1]), f"start {index}: the last command was {commands[-1][1]}\n{start.log()}"
        assert start.said("as the last command")
        if not midway:
            assert error < tolerance, f"start {index}: the tip ended {error:.4f} m from the target\n{start.log()}"


def test_a_far_start_is_planned_from_where_the_arm_is(tmp_path: Path) -> None:
    path = scenario(tmp_path, "reach")
    initial = (np.array([15.0, 15.0, 15.0, 15.0]) + FAR).tolist()
    needed = float(np.abs(offline_torque(scenario(tmp_path, "from_there", initial=initial))).max())
    start = Start(tmp_path / "far", path, {"offset": FAR}, {"soft_start": 0.0})
    try:
        start.run_for(DURATION + SETTLE)
        error = start.tip_error()
    finally:
        commands = start.stop()
    assert peak(commands) <= 2.0 * needed, f"peak {peak(commands):.3f} N*m, planned from there {needed:.3f}"
    assert error < load_scenario(path).task.tolerance, f"the tip ended {error:.4f} m from the target\n{start.log()}"
    assert start.said("the arm starts 0.524 rad (30.0 deg) from the scenario's initial pose at turret")


def test_stale_states_bring_a_zero_command_then_control_resumes(tmp_path: Path) -> None:
    path = scenario(tmp_path, "reach")
    gap_at, gap = 0.3, 1.0
    start = Start(tmp_path / "gap", path, {"gap_at": gap_at, "gap": gap}, {})
    try:
        start.run_for(gap_at + gap + DURATION + SETTLE)
        error = start.tip_error()
    finally:
        commands = start.stop()
    silent = commands[0][0] + gap_at  # the driver's time its states stopped
    zeros = [at for at, tau in commands if silent < at <= silent + gap and not np.any(tau)]
    assert zeros, f"no zero command in the gap\n{start.log()}"
    assert zeros[0] - silent <= 0.6, f"the zero command came {zeros[0] - silent:.3f} s into the gap"
    assert any(np.any(tau) for at, tau in commands if at > silent + gap), "control did not resume"
    assert start.said("no joint state on /gap/joint_states for") and start.said("are back after")
    assert error < load_scenario(path).task.tolerance, f"the tip ended {error:.4f} m from the target\n{start.log()}"


def test_computed_torque_reaches_on_a_vertical_arm(tmp_path: Path) -> None:
    """The arm in the vertical plane, the launch's soft start for a driver: gravity is compensated."""
    path = scenario(tmp_path, "vertical", gravity=GRAVITY)
    start = Start(tmp_path / "vertical", path, {}, {"soft_start": 1.0})
    try:
        start.run_for(DURATION + 2 * SETTLE)
        error = start.tip_error()
    finally:
        start.stop()
    assert start.said("its model has the scenario's gravity")
    assert error < load_scenario(path).task.tolerance, f"the tip ended {error:.4f} m from the target\n{start.log()}"
