"""System tests of ``skelarm-ros launch sim``: real processes over real DDS, a probe node watching.

They check what test_launch_file.py checks through launch_testing, here where launch_testing is
not installed: joint states arrive, the controller closes the loop, a reach ends at its target,
every process exits cleanly; plus the lockstep and hardware:=none graphs and stopping on SIGINT.
"""

from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import sys
import threading
import tomllib
from collections.abc import Sequence
from typing import Any

import procs
import pytest

from skelarm_ros.sim.scenario import resolve_scenario

pytestmark = pytest.mark.slow

rclpy = pytest.importorskip("rclpy")
from geometry_msgs.msg import PointStamped  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

START_DEADLINE = 60.0  # s for the graph to start on a loaded machine
STARTED = re.compile(r"^\[launch\] started (\S+) \(pid (\d+)\)$")
LAUNCHER = (sys.executable, "-m", "skelarm_ros.cli", "launch", "sim")


def reach_target() -> tuple[float, float, float]:
    """The bundled reach's target (x, y) and tolerance (m)."""
    task = tomllib.loads(resolve_scenario("reach").read_text())["task"]
    x, y = task["target"]["pos"]
    return x, y, task["target"]["tolerance"]


class Launch:
    """A launcher as a process, its output collected line by line: ``skelarm-ros launch sim`` unless told.

    Parameters
    ----------
    *arguments : str
        ``name:=value`` launch arguments.
    command : Sequence[str], optional
        The launcher's command line before the arguments.
    **popen
        Further ``subprocess.Popen`` options (``stdin``, default none; ``env``, default this process's; ...).
    """

    started = STARTED  # the line that gives a started node's label and pid

    def __init__(self, *arguments: str, command: Sequence[str] = LAUNCHER, **popen: Any) -> None:
        self.process = subprocess.Popen(
            [*command, *arguments],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            **{"stdin": subprocess.DEVNULL, "env": dict(os.environ), **popen},
        )
        self.lines: list[str] = []
        self._news = threading.Condition()  # notified on each line and at the end of the output
        self._ended = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in iter(self.process.stdout.readline, b""):
            with self._news:
                self.lines.append(raw.decode(errors="replace").rstrip("\n"))
                self._news.notify_all()
        with self._news:
            self._ended = True
            self._news.notify_all()

    def node_pids(self) -> dict[str, int]:
        """The launched nodes' pids, from the launcher's 'started' lines."""
        return {m[1]: int(m[2]) for m in (self.started.match(line) for line in list(self.lines)) if m}

    def wait_for_line(self, text: str, timeout: float) -> bool:
        """Whether a line containing ``text`` comes out within ``timeout`` seconds (before the output ends)."""
        with self._news:
            self._news.wait_for(lambda: self._ended or any(text in line for line in self.lines), timeout)
            return any(text in line for line in self.lines)

    def wait(self, timeout: float) -> int:
        code = self.process.wait(timeout)
        self._reader.join(5.0)
        return code

    def end(self) -> None:
        """End the launcher (and so its nodes) if a test left it running."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(20.0)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for pid in self.node_pids().values():
            if alive(pid):
                os.kill(pid, signal.SIGKILL)

    def output(self) -> str:
        return "\n".join(self.lines)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is ended, only not yet reaped by its (gone) parent.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


class Probe(procs.Probe):
    """The shared probe in an arm's namespace, recording its states, tips and both kinds of commands."""

    def __init__(self, namespace: str) -> None:
        super().__init__(namespace)
        reliable = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
        self.states: list[JointState] = self.record(JointState, "joint_states", reliable)
        self.tips: list[PointStamped] = self.record(PointStamped, "tip", reliable)
        self.commands: list[Float64MultiArray] = self.record(Float64MultiArray, "effort_controller/commands", reliable)
        self.joint_commands: list[JointState] = self.record(JointState, "joint_commands", reliable)


@pytest.fixture
def probe_arm1():
    probe = Probe("arm1")
    yield probe
    probe.close()


def run_to_end(probe: Probe, launch: Launch, budget: float) -> int:
    """Spin the probe while the launched graph runs; return the launcher's exit code."""
    try:
        ended = probe.wait_for(lambda: launch.process.poll() is not None, budget)
        assert ended, f"the graph did not end within {budget} s:\n{launch.output()}"
        probe.spin_for(0.3)  # what is still in flight
        return launch.wait(10.0)
    finally:
        launch.end()


def assert_reached(probe: Probe, launch: Launch) -> None:
    x, y, tolerance = reach_target()
    assert len(probe.states) > 100, launch.output()
    start, end = probe.states[0].position, probe.states[-1].position
    assert max(abs(a - b) for a, b in zip(start, end, strict=True)) > 0.1, "the arm did not move"
    tip = probe.tips[-1].point
    assert math.hypot(tip.x - x, tip.y - y) < tolerance, f"tip ended at ({tip.x:.3f}, {tip.y:.3f}), not ({x}, {y})"


def assert_all_ended_cleanly(launch: Launch, code: int, expected: set[str]) -> None:
    assert code == 0, launch.output()
    pids = launch.node_pids()
    assert set(pids) == expected, launch.output()
    assert not [label for label, pid in pids.items() if alive(pid)]
    assert not [line for line in launch.lines if "failed" in line or "ended with exit code" in line]


def test_realtime_reach_ends_at_its_target_and_the_graph_ends_with_the_duration(probe_arm1):
    launch = Launch("namespace:=arm1", "duration:=4.0", "extra_readers:=probe")
    code = run_to_end(probe_arm1, launch, START_DEADLINE + 30.0)
    assert_all_ended_cleanly(launch, code, {"arm1/simulator", "arm1/controller"})
    assert "[launch] arm1/simulator finished; stopping the graph" in launch.lines
    # The controller closes the loop: its commands arrive, and they move the arm onto the target. The
    # simulator waits for the probe's joint_states reader, not for its match with the controller's publisher,
    # which discovery may make late: the torque applied from step 0 is read from the states' effort.
    assert len(probe_arm1.commands) > 100
    assert any(abs(value) > 1e-3 for message in probe_arm1.states for value in message.effort)
    assert_reached(probe_arm1, launch)


def test_lockstep_answers_every_state_and_ends_at_the_target(probe_arm1):
    launch = Launch("namespace:=arm1", "mode:=lockstep", "duration:=2.5", "extra_readers:=probe")
    code = run_to_end(probe_arm1, launch, START_DEADLINE + 60.0)
    assert_all_ended_cleanly(launch, code, {"arm1/simulator", "arm1/controller"})
    steps = round(2.5 / 0.002)
    # Lockstep integrates a step only with the command answering its state, so every state
    # after the first carries (as its effort) the torque the controller computed for the one before.
    assert len(probe_arm1.states) == steps + 1, launch.output()
    assert [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in probe_arm1.states] == [
        k * 2_000_000 for k in range(steps + 1)
    ]
    assert sum(any(abs(e) > 1e-9 for e in m.effort) for m in probe_arm1.states[1:]) > steps // 2
    assert_reached(probe_arm1, launch)


def test_hardware_none_drives_a_driver_and_stops_on_sigint():
    probe = Probe("arm2")
    launch = Launch("namespace:=arm2", "hardware:=none")
    try:
        driver = probe.node.create_publisher(JointState, "joint_states", 10)
        state = JointState(name=["j1", "j2"], position=[0.6, 1.0], velocity=[0.0, 0.0], effort=[0.0, 0.0])

        def answered() -> bool:
            state.header.stamp.nanosec += 2_000_000  # one 2 ms step later each time
            driver.publish(state)
            return len(probe.commands) > 0

        assert probe.wait_for(answered, START_DEADLINE), launch.output()
        assert len(probe.commands[-1].data) == 2
        launch.process.send_signal(signal.SIGINT)
        code = launch.wait(30.0)
    finally:
        launch.end()
        probe.close()
    assert_all_ended_cleanly(launch, code, {"arm2/controller"})
    assert "[launch] stop requested; stopping the graph" in launch.lines
