"""Driving a real arm: the controller as ``hardware:=none`` runs it, on a stand-in effort driver whose arm is MuJoCo.

The driver (test/standin_driver.py) is not the project's engine: its arm is a MuJoCo model
of the scenario's (RK4 at 0.5 ms), behind a driver as real arms have one: 250 Hz, commands
acting from its first tick 4 ms after they arrive (two ticks after the state they answer,
three when an answer comes late), positions read by a 16-bit encoder, velocities with
noise, brakes released at the first command; its own joint names, published in its own
order with a gripper joint that is not the arm's; commands taken in yet another order. The
controller runs as the launch runs it with ``hardware:=none`` (``skelarm-ros launch``, and
``ros2 launch`` where it is installed); the driver writes every command it received and
every state it published, which the checks read:

- an arm in the vertical plane, released at the first command, stays within 1 deg of where
  it was over the first 0.2 s; a stop leaves zero torque as the last command;
- gains far too high for the driver, with ``effort_limit`` 30 N*m and ``velocity_limit``
  3 rad/s: no command above 30 N*m, a zero command within 0.3 s of the first state faster
  than 3 rad/s and nothing but zero after, the controller's sentence, exit code 1 for the
  controller and the launch, which names it; the scenario's own gains with the same limits:
  the reach is not stopped and ends within its tolerance;
- starts from the scenario's pose beside a CPU-bound process: the commands of the first
  0.3 s never above twice what the reach needs in the simulator (its lockstep run); a start
  30 degrees away peaks within twice what a reach planned from there needs;
- a 1 s gap in the joint states brings a zero command within 0.6 s, then control resumes
  and the reach ends within its tolerance.

``SKELARM_ROS_STARTS`` sets how many starts from the pose (3 in ``make test``; the report
in docs/controller.md ran 20).
"""

from __future__ import annotations

import importlib.util
import math
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import procs
import pytest
from procs import START_TIMEOUT

from skelarm_ros.cli.launcher import failure
from skelarm_ros.control.loop import build_control_loop
from skelarm_ros.sim.engine import ArmEngine, run_controlled
from skelarm_ros.sim.scenario import load_arm, load_scenario

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # a 250 Hz driver and wall-time deadlines: alone

rclpy = pytest.importorskip("rclpy")
from std_srvs.srv import Trigger  # noqa: E402
from test_launcher_system import Launch  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Sequence

DRIVER = Path(__file__).resolve().with_name("standin_driver.py")
SCENARIO = Path(__file__).resolve().parents[1] / "config" / "scenarios" / "reach_four_dof_robot.toml"
ARM_JOINTS = ["turret", "shoulder", "elbow", "wrist"]  # the driver's names, in the arm's joint order
DRIVER_JOINTS = ["elbow", "turret", "wrist", "shoulder"]  # the order its effort controller takes them in
RATE = 250.0  # Hz, the driver's state rate
DRIVER_PRIORITY = 20  # SCHED_FIFO for the driver (a real one's hardware loop has it; the controller runs as launched)
COMMAND_DELAY = 0.004  # s from a command's arrival to the first driver tick it may act from
FAR = [-30.0, 25.0, 0.0, 0.0]  # degrees from the scenario's initial pose (inside the joints' limits)
DRIVE = "armature = 0.01\nviscous = 0.05\ncoulomb = 0.05\n"  # every link's, in MuJoCo and in the controller's model
LIMITS = "effort_limit = 30.0\nvelocity_limit = 3.0\n"
TOO_HIGH = (20000.0, 600.0)  # computed torque's kp, kd: far too high for a 250 Hz driver acting 8 ms late
SETTLE = 0.5  # s after the reach's duration before the tip is read
STARTS = int(os.environ.get("SKELARM_ROS_STARTS", "3"))
HOLD = 0.2  # s after the release over which the vertical arm must stay put
HELD = 1.0  # deg it may move meanwhile
FIRST = 0.3  # s of a start's first commands held to twice the reach's need


def scenario(
    folder: Path,
    name: str,
    *,
    duration: float = 1.0,
    gravity: bool = False,
    limits: str = "",
    gains: tuple[float, float] | None = None,
    initial: list[float] | None = None,
) -> Path:
    """The bundled four-link reach with the links' drive keys; shortened, vertical, limited, other gains, elsewhere."""
    text = SCENARIO.read_text().replace("duration = 5.0", f"duration = {duration}")
    text = text.replace("limits = [", f"{DRIVE}{limits}limits = [")
    if gravity:
        text = text.replace("[simulator]\n", "[simulator]\ngrav_vec = [0.0, -9.81]\n")
    if gains is not None:
        text = text.replace("kp = 200.0\nkd = 30.0", f"kp = {gains[0]}\nkd = {gains[1]}")
    if initial is not None:
        text = text.replace("q = [15.0, 15.0, 15.0, 15.0]", f"q = {initial}")
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


def needed(path: Path) -> float:
    """The largest torque (N*m) the reach commands in the simulator (the engine, as its lockstep runs it)."""
    loop, _ = build_control_loop(path)
    arm = load_arm(path)
    engine = ArmEngine(arm.skeleton, arm.dt, grav_vec=arm.grav_vec, drive=arm.drive)
    log = run_controlled(engine, arm.skeleton.clone(), loop.controller, duration=loop.task.duration)
    return float(np.abs(log.channel("tau")).max())


class DriverLog:
    """A driver's log read as it grows: its rows, one list per stretch between resets."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._read = 0
        self._parts: list[list[list[float]]] = [[]]

    def rows(self, part: int = -1) -> np.ndarray:
        """The rows of one stretch (the last by default) so far, as an array (empty without any)."""
        if self.path.exists():
            with self.path.open(encoding="utf-8") as stream:
                stream.seek(self._read)
                text = stream.read()
            complete = text[: text.rfind("\n") + 1]  # a line still being written waits for the next read
            self._read += len(complete.encode())
            for line in complete.splitlines():
                if line == "reset":
                    self._parts.append([])
                elif line.strip():
                    self._parts[-1].append([float(value) for value in line.split()])
        rows = self._parts[part]
        return np.array(rows) if rows else np.empty((0, 0))


class Driver:
    """One stand-in driver with a MuJoCo arm in its own namespace, and a probe that can reset it."""

    def __init__(
        self,
        folder: Path,
        path: Path,
        *,
        arm_joints: Sequence[str] = tuple(ARM_JOINTS),
        joints: Sequence[str] = tuple(DRIVER_JOINTS),
        **parameters: object,
    ) -> None:
        folder.mkdir(exist_ok=True)
        self.folder, self.path, self.namespace = folder, path, folder.name
        self.arm_joints, self.joints = list(arm_joints), list(joints)  # the arm's order; its effort controller's
        self.commands_log, self.states_log = DriverLog(folder / "commands.txt"), DriverLog(folder / "states.txt")
        arguments = {
            "scenario": str(path),
            "plant": "mujoco",
            "arm_joints": self.arm_joints,
            "joints": self.joints,
            "gripper": "gripper",
            "rate": RATE,
            "command_delay": COMMAND_DELAY,
            "encoder_ticks": 2**16,
            "velocity_noise": 0.02,
            "brake": True,
            "thread_priority": DRIVER_PRIORITY,
            "commands_log": str(self.commands_log.path),
            "states_log": str(self.states_log.path),
            **parameters,
        }
        self.process = procs.start_script(
            DRIVER,
            folder / "driver.log",
            "--ros-args",
            "-r",
            f"__ns:=/{self.namespace}",
            *procs.parameter_args(arguments),
        )
        self.probe = procs.Probe(self.namespace)
        self.reset_client = self.probe.node.create_client(Trigger, "driver/reset")
        self.probe.spin_until(lambda: len(self.states()) > 0, START_TIMEOUT, f"the driver's states\n{self.logs()}")

    def states(self) -> np.ndarray:
        """The states published since the last reset: time, released, then the arm's exact q and dq."""
        return self.states_log.rows()

    def commands(self) -> np.ndarray:
        """The commands received since the last reset: time, then the torques in the arm's order."""
        return self.commands_log.rows()

    def released_for(self, seconds: float) -> bool:
        states = self.states()
        released = states[states[:, 1] > 0.0] if len(states) else states
        return len(released) > 0 and released[-1, 0] - released[0, 0] >= seconds

    def states_for(self, seconds: float) -> None:
        """Wait until the driver has published ``seconds`` more of states."""
        end = self.states()[-1, 0] + seconds
        self.probe.spin_until(lambda: self.states()[-1, 0] >= end, START_TIMEOUT, f"{seconds} s of states")

    def reset(self) -> None:
        assert self.probe.call(self.reset_client, Trigger.Request()).success

    def tip_error(self) -> float:
        """How far the tip of the arm's last state is from the task's target (m)."""
        states = self.states()
        arm = load_arm(self.path)
        tip = ArmEngine(arm.skeleton, arm.dt).endpoint(states[-1, 2 : 2 + len(self.arm_joints)])
        return math.dist(tip, load_scenario(self.path).task.target)

    def logs(self) -> str:
        return procs.logs(self.folder)

    def close(self) -> None:
        try:
            assert procs.end(self.process) == 0, self.logs()
        finally:
            self.probe.close()


def launch(driver: Driver, path: Path, launcher: tuple[str, ...] = (), *more: str) -> Launch:
    """The controller as ``hardware:=none`` starts it, beside ``driver`` (``skelarm-ros launch`` unless told; ``more``
    launch arguments)."""
    arguments = [
        *more,
        "hardware:=none",
        f"scenario:={path}",
        f"namespace:={driver.namespace}",
        f"joint_names:={','.join(driver.arm_joints)}",
        f"command_joints:={','.join(driver.joints)}",
    ]
    return Launch(*arguments, command=launcher) if launcher else Launch(*arguments)


def stop(launched: Launch, driver: Driver) -> None:
    """Stop the launch as a user does (Ctrl-C); it and its controller end with 0, zero torque the last command."""
    try:
        launched.process.send_signal(signal.SIGINT)
        code = launched.wait(30.0)
    finally:
        launched.end()
    output = launched.output()
    assert code == 0, f"{output}\n{driver.logs()}"
    assert "as the last command" in output, output
    driver.probe.spin_for(0.1)  # the driver takes what is in flight
    assert not np.any(driver.commands()[-1, 1:]), f"the last command was {driver.commands()[-1]}\n{output}"


def run_until(driver: Driver, launched: Launch, seconds: float) -> None:
    """Wait until the arm has been released (the first command acted) for ``seconds``."""
    ok = driver.probe.wait_for(lambda: driver.released_for(seconds) or launched.process.poll() is not None, 120.0)
    assert ok and launched.process.poll() is None, f"{launched.output()}\n{driver.logs()}"


def run_task(driver: Driver, launched: Launch, *, after: str = "") -> None:
    """Wait until the controller says its task's time ended (after its line saying ``after``), then :data:`SETTLE`."""

    def ended() -> bool:
        lines = list(launched.lines)
        start = next((index for index, line in enumerate(lines) if after in line), None)
        return start is not None and any("the task's time" in line for line in lines[start:])

    ok = driver.probe.wait_for(lambda: ended() or launched.process.poll() is not None, 120.0)
    assert ok and launched.process.poll() is None, f"{launched.output()}\n{driver.logs()}"
    driver.states_for(SETTLE)


@pytest.fixture
def cpu_bound():
    """A process that keeps one core busy for the test's duration, ended by its id."""
    process = subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
    yield process
    procs.kill(process)


def test_a_vertical_arm_is_held_from_the_first_command(tmp_path: Path) -> None:
    path = scenario(tmp_path, "vertical", duration=5.0, gravity=True)  # its reference moves < 0.01 deg in 0.2 s
    driver = Driver(tmp_path / "vertical", path)
    try:
        launched = launch(driver, path)
        run_until(driver, launched, HOLD + 0.1)
        stop(launched, driver)
        states = driver.states()
    finally:
        driver.close()
    pose = states[0, 2:6]
    released = states[states[:, 1] > 0.0]
    early = released[released[:, 0] <= released[0, 0] + HOLD]
    moved = math.degrees(np.abs(early[:, 2:6] - pose).max())
    print(f"the vertical arm moved {moved:.3f} deg in the first {HOLD} s after its release")
    assert moved < HELD, f"the arm moved {moved:.2f} deg in its first {HOLD} s\n{launched.output()}"
    assert "its model has the scenario's gravity + drive" in launched.output()
    assert "no effort limit bounds the commands of turret, shoulder, elbow, wrist" in launched.output()


LAUNCHERS = {"skelarm-ros launch": ()}
if shutil.which("ros2") and importlib.util.find_spec("ros2launch"):
    LAUNCHERS["ros2 launch"] = (str(shutil.which("ros2")), "launch", "skelarm_ros", "sim.launch.py")


@pytest.mark.parametrize("launcher", list(LAUNCHERS))
def test_a_diverging_arm_is_stopped_and_the_launch_ends_with_1_naming_the_controller(
    tmp_path: Path, launcher: str
) -> None:
    arm = scenario(tmp_path, "arm", duration=2.0, gravity=True, limits=LIMITS)
    too_high = scenario(tmp_path, "too_high", duration=2.0, gravity=True, limits=LIMITS, gains=TOO_HIGH)
    driver = Driver(tmp_path / "limits", arm)
    try:
        launched = launch(driver, too_high, LAUNCHERS[launcher])
        ended = driver.probe.wait_for(lambda: launched.process.poll() is not None, 60.0)
        code = launched.wait(30.0) if ended else None
        launched.end()
        driver.probe.spin_for(0.1)
        states, commands = driver.states(), driver.commands()
        output = launched.output()
        assert code == 1, f"{output}\n{driver.logs()}"
        assert failure("controller", 1) in output or failure(f"{driver.namespace}/controller", 1) in output, output
        assert "the arm is diverging:" in output and "faster than its velocity_limit 3 rad/s" in output, output
        assert np.abs(commands[:, 1:]).max() <= 30.0  # none above the links' effort_limit reached the driver
        fast = states[np.abs(states[:, 6:10]).max(axis=1) > 3.0, 0]
        zeros = np.flatnonzero(~commands[:, 1:].any(axis=1))
        assert len(fast) and len(zeros), f"{output}\n{driver.logs()}"
        stopped_at = commands[zeros[0], 0]
        assert stopped_at <= fast[0] + 0.3, (stopped_at, fast[0])
        print(f"{launcher}: first state faster than 3 rad/s at {fast[0]:.3f} s, zero command at {stopped_at:.3f} s")
        assert not commands[zeros[0] :, 1:].any()  # nothing but zero after
        # The scenario's own gains, the same limits: the reach is not stopped and ends within its tolerance.
        driver.reset()
        own = launch(driver, arm, LAUNCHERS[launcher])
        run_task(driver, own)
        error = driver.tip_error()
        stop(own, driver)
    finally:
        driver.close()
    assert "diverging" not in own.output(), own.output()
    print(f"{launcher}: the scenario's own gains end {error * 1e3:.1f} mm from the target")
    assert error < load_scenario(arm).task.tolerance, f"the tip ended {error:.4f} m from the target\n{own.output()}"


def test_starts_beside_a_cpu_bound_process_never_kick(tmp_path: Path, cpu_bound: subprocess.Popen) -> None:
    path = scenario(tmp_path, "reach")
    need = needed(path)
    driver = Driver(tmp_path / "starts", path)
    peaks = []
    try:
        for index in range(STARTS):
            launched = launch(driver, path)
            run_until(driver, launched, FIRST)
            stop(launched, driver)
            commands = driver.commands()
            first = commands[commands[:, 0] <= commands[0, 0] + FIRST, 1:]
            peaks.append(float(np.abs(first).max()))
            assert peaks[-1] <= 2.0 * need, f"start {index}: peaks {peaks} N*m, the reach needs {need:.3f}\n" + (
                launched.output()
            )
            driver.reset()
    finally:
        driver.close()
    print(f"{STARTS} starts beside a CPU-bound process: first {FIRST} s peaks {peaks} N*m; the reach needs {need:.3f}")
    initial = (np.array([15.0] * 4) + FAR).tolist()
    far = Driver(tmp_path / "far", path, offset=FAR)
    try:
        launched = launch(far, path)
        run_task(far, launched)
        error = far.tip_error()
        stop(launched, far)
        peak = float(np.abs(far.commands()[:, 1:]).max())
    finally:
        far.close()
    from_there = needed(scenario(tmp_path, "from_there", initial=initial))
    print(f"a start 30 deg away: peak {peak:.3f} N*m; a reach planned from there needs {from_there:.3f}")
    assert peak <= 2.0 * from_there, f"peak {peak:.3f} N*m, planned from there {from_there:.3f}\n{launched.output()}"
    assert error < load_scenario(path).task.tolerance, f"the tip ended {error:.4f} m from the target"
    assert "the arm starts 0.524 rad (30.0 deg) from the scenario's initial pose at turret" in launched.output()


def test_stale_states_bring_a_zero_command_then_control_resumes(tmp_path: Path) -> None:
    path = scenario(tmp_path, "reach")
    gap_at, gap = 0.3, 1.0
    driver = Driver(tmp_path / "gap", path, gap_at=gap_at, gap=gap)
    try:
        launched = launch(driver, path)
        run_task(driver, launched, after="time line restarted")
        error = driver.tip_error()
        stop(launched, driver)
        commands = driver.commands()
    finally:
        driver.close()
    silent = commands[0, 0] + gap_at  # the driver's time its states stopped
    zeros = [row[0] for row in commands if silent < row[0] <= silent + gap and not np.any(row[1:])]
    assert zeros, f"no zero command in the gap\n{launched.output()}"
    assert zeros[0] - silent <= 0.6, f"the zero command came {zeros[0] - silent:.3f} s into the gap"
    assert any(np.any(row[1:]) for row in commands if row[0] > silent + gap), "control did not resume"
    output = launched.output()
    assert "no joint state on /gap/joint_states for" in output and "are back after" in output, output
    assert error < load_scenario(path).task.tolerance, f"the tip ended {error:.4f} m from the target\n{output}"
