"""The simulator as a real process over DDS: realtime exactness, lockstep, a slow reader, timeouts, exits.

Run as a script, this module is also the stand-in processes the tests start:
``python test_simulator_system.py controller`` answers each joint state with a PD
command stamped the same, and ``python test_simulator_system.py slow_listener FILE N``
is a deliberately slow reliable reader that writes the stamps it got.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import procs
import pytest
from procs import NS, end, stamp_ns, wait_exit

# The stand-in controller's law; the offline run uses the same function.
KP = np.array([30.0, 20.0])
KD = np.array([3.0, 2.0])
Q_REF = np.array([0.5, -0.3])


def pd(q: list[float], dq: list[float]) -> list[float]:
    return (KP * (Q_REF - np.asarray(q)) - KD * np.asarray(dq)).tolist()


# -- stand-in processes ----------------------------------------------------------------------


def run_controller() -> int:
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from sensor_msgs.msg import JointState

    rclpy.init()
    node = rclpy.create_node("stand_in_controller")
    publisher = node.create_publisher(JointState, "joint_commands", procs.keep_all())

    def answer(state: JointState) -> None:
        command = JointState(name=list(state.name), effort=pd(state.position, state.velocity))
        command.header.stamp = state.header.stamp
        publisher.publish(command)

    node.create_subscription(JointState, "joint_states", answer, procs.keep_all())
    with contextlib.suppress(KeyboardInterrupt, ExternalShutdownException):
        rclpy.spin(node)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


def run_slow_listener(out: str, expected: int) -> int:
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from sensor_msgs.msg import JointState

    rclpy.init()
    node = rclpy.create_node("slow_listener")
    stamps: list[int] = []

    def take(state: JointState) -> None:
        time.sleep(0.003)  # deliberately slower than the loop, so the simulator must wait for this reader
        stamps.append(state.header.stamp.sec * NS + state.header.stamp.nanosec)

    node.create_subscription(JointState, "joint_states", take, procs.keep_all())
    try:
        while len(stamps) < expected and rclpy.ok():
            rclpy.spin_once(node, timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    Path(out).write_text("\n".join(map(str, stamps)))
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


# -- helpers for the tests -------------------------------------------------------------------


def start_simulator(log: Path, *parameters: str) -> subprocess.Popen[bytes]:
    return procs.start(procs.node_command("simulator", ros_args=[w for p in parameters for w in ("-p", p)]), log)


def start_stand_in(log: Path, *args: str) -> subprocess.Popen[bytes]:
    return procs.start_script(Path(__file__).resolve(), log, *args)


class Probe(procs.Probe):
    """The shared probe, recording joint states."""

    def __init__(self) -> None:
        from sensor_msgs.msg import JointState

        super().__init__()
        self.states = self.record(JointState, "joint_states")


def offline_engine():
    from skelarm_ros.sim.engine import ArmEngine
    from skelarm_ros.sim.scenario import load_arm

    arm = load_arm(None)
    return ArmEngine(arm.skeleton, arm.dt, grav_vec=arm.grav_vec, enforce_limits=arm.enforce_limits)


def offline_pd_run(steps: int) -> list[tuple[int, list[float], list[float]]]:
    from skelarm_ros.interface import seconds_to_nanoseconds

    engine = offline_engine()
    states = [(seconds_to_nanoseconds(engine.t), engine.q.tolist(), engine.dq.tolist())]
    for _ in range(steps):
        engine.step(np.array(pd(engine.q.tolist(), engine.dq.tolist())))
        states.append((seconds_to_nanoseconds(engine.t), engine.q.tolist(), engine.dq.tolist()))
    return states


@pytest.fixture
def probe():
    probe = Probe()
    try:
        yield probe
    finally:
        probe.close()


# -- the tests -------------------------------------------------------------------------------

pytestmark = [pytest.mark.slow, pytest.mark.ros]


def test_realtime_run_after_pause_equals_the_engine_offline(probe: Probe, tmp_path: Path) -> None:
    from std_msgs.msg import Float64MultiArray
    from std_srvs.srv import SetBool

    tau = [0.8, -0.4]
    sim = start_simulator(tmp_path / "sim.log", "command_timeout:=1.0")
    try:
        pause = probe.node.create_client(SetBool, "simulator/pause")
        commands = probe.node.create_publisher(Float64MultiArray, "effort_controller/commands", 10)

        def send() -> None:
            commands.publish(Float64MultiArray(data=tau))

        # Republished well within command_timeout; the simulator shows it holds it before the pause.
        repeat = probe.node.create_timer(0.1, send)
        probe.spin_until(lambda: any(list(s.effort) == tau for s in probe.states), 20.0, "a state moved by the command")
        answer = probe.call(pause, SetBool.Request(data=True))
        assert answer.success, answer.message
        paused_ns = int(re.search(r"\((\d+) ns", answer.message).group(1))
        probe.spin_until(lambda: any(stamp_ns(s) == paused_ns for s in probe.states), 10.0, "the state at the pause")
        paused = next(s for s in probe.states if stamp_ns(s) == paused_ns)
        # Stay paused while the probe republishes the command a few times.
        resumes_at = time.monotonic() + 0.3
        probe.spin_until(lambda: time.monotonic() > resumes_at, 5.0, "the command republished during the pause")
        answer = probe.call(pause, SetBool.Request(data=False))
        assert answer.success and f"({paused_ns} ns" in answer.message  # nothing moved while paused
        probe.spin_until(
            lambda: sum(stamp_ns(s) > paused_ns for s in probe.states) >= 200, 30.0, "200 states after the resume"
        )
        repeat.cancel()
    finally:
        assert end(sim) == 0, (tmp_path / "sim.log").read_text()

    after = sorted((s for s in probe.states if stamp_ns(s) > paused_ns), key=stamp_ns)
    engine = offline_engine()
    engine.set_state(paused.position, paused.velocity)
    dt_ns = round(engine.dt * NS)
    done = 0
    for state in after:
        k = round((stamp_ns(state) - paused_ns) / dt_ns)
        while done < k:
            engine.step(np.array(tau))
            done += 1
        assert np.max(np.abs(np.array(state.position) - engine.q)) <= 1e-9, (k, (tmp_path / "sim.log").read_text())
        assert np.max(np.abs(np.array(state.velocity) - engine.dq)) <= 1e-9, k
        assert list(state.effort) == tau
    assert done >= 200


def run_lockstep(probe: Probe, tmp_path: Path, duration: float, readers: tuple[str, ...] = (), *extra: str):
    controller = start_stand_in(tmp_path / "controller.log", "controller")
    processes = [controller]
    try:
        # The stand-in readers (and this probe) are in the graph before the simulator starts.
        probe.spin_until(
            lambda: probe.node.count_subscribers("joint_states") >= len(readers) + 2,
            20.0,
            "the stand-in readers of joint_states",
        )
        sim = start_simulator(
            tmp_path / "sim.log",
            "mode:=lockstep",
            "command_interface:=joint_commands",
            f"duration:={duration}",
            # the stand-ins and this probe, by name: none may miss step 0
            f"state_readers:=[{', '.join(('stand_in_controller', *readers, 'probe'))}]",
            *extra,
        )
        processes.append(sim)
        steps = round(duration / 0.002)
        probe.spin_until(lambda: len(probe.states) >= steps + 1, 120.0, f"{steps + 1} lockstep states")
        code = wait_exit(sim, 30.0)
        assert code == 0, (tmp_path / "sim.log").read_text()
    finally:
        for process in reversed(processes):
            end(process)
    return steps


def test_lockstep_run_equals_the_offline_run(probe: Probe, tmp_path: Path) -> None:
    steps = run_lockstep(probe, tmp_path, 1.0)
    expected = offline_pd_run(steps)
    assert len(probe.states) == steps + 1
    for k, state in enumerate(probe.states):
        stamp, q, dq = expected[k]
        assert stamp_ns(state) == stamp, k
        assert np.max(np.abs(np.array(state.position) - q)) <= 1e-9, k
        assert np.max(np.abs(np.array(state.velocity) - dq)) <= 1e-9, k
    log = (tmp_path / "sim.log").read_text()
    assert f"ran {steps} steps" in log


def test_lockstep_slow_reliable_reader_gets_every_step(probe: Probe, tmp_path: Path) -> None:
    out = tmp_path / "stamps.txt"
    steps = 300
    slow = start_stand_in(tmp_path / "slow.log", "slow_listener", str(out), str(steps + 1))
    try:
        run_lockstep(probe, tmp_path, steps * 0.002, ("slow_listener",))
        assert wait_exit(slow, 60.0) == 0, (tmp_path / "slow.log").read_text()
    finally:
        end(slow)
    stamps = [int(line) for line in out.read_text().split()]
    assert stamps == [stamp_ns(state) for state in probe.states]
    assert len(stamps) == steps + 1


def test_lockstep_timeout_exits_non_zero_naming_the_message(probe: Probe, tmp_path: Path) -> None:
    from sensor_msgs.msg import JointState

    probe.node.create_publisher(JointState, "joint_commands", procs.keep_all())  # there, never answering
    sim = start_simulator(
        tmp_path / "sim.log", "mode:=lockstep", "command_interface:=joint_commands", "lockstep_timeout:=1.0"
    )
    try:
        probe.spin_until(lambda: sim.poll() is not None, 60.0, "the simulator to give up")
    finally:
        end(sim)
    log = (tmp_path / "sim.log").read_text()
    assert sim.returncode == 1, log
    assert "no joint_commands stamped 0.000000000 s (step 0) arrived within lockstep_timeout=1.0 s" in log
    assert "Traceback" not in log
    assert len(probe.states) == 1


def test_realtime_duration_exits_0(tmp_path: Path) -> None:
    sim = start_simulator(tmp_path / "sim.log", "duration:=0.2")
    try:
        code = wait_exit(sim, 60.0)
    finally:
        end(sim)
    log = (tmp_path / "sim.log").read_text()
    assert code == 0, log
    assert "ran 100 steps" in log


def test_a_realtime_run_with_stamped_commands_reports_how_many_steps_applied_the_answering_one(
    tmp_path: Path,
) -> None:
    controller = procs.start_node("controller", tmp_path / "controller.log", {"command_interface": "joint_commands"})
    try:
        sim = start_simulator(
            tmp_path / "sim.log", "command_interface:=joint_commands", "wait_for_controller:=true", "duration:=1.0"
        )
        code = wait_exit(sim, 90.0)
    finally:
        end(controller)
    log = (tmp_path / "sim.log").read_text()
    assert code == 0, procs.logs(tmp_path)
    found = re.search(r"ran 500 steps .*; (\d+) of (\d+) steps \(([0-9.]+)%\) applied the command answering", log)
    assert found, log
    assert 0 < int(found[1]) <= int(found[2]) <= 500


@pytest.mark.parametrize("mode", ["realtime", "lockstep"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_ends_a_running_simulator_at_once_with_0(
    probe: Probe, tmp_path: Path, mode: str, signum: signal.Signals
) -> None:
    processes = []
    try:
        if mode == "lockstep":
            processes.append(start_stand_in(tmp_path / "controller.log", "controller"))
        sim = start_simulator(tmp_path / "sim.log", f"mode:={mode}", "command_interface:=joint_commands")
        processes.append(sim)
        probe.spin_until(lambda: len(probe.states) >= 50, 60.0, "50 states")
        sim.send_signal(signum)
        code = wait_exit(sim, 5.0)
    finally:
        for process in reversed(processes):
            end(process)
    log = (tmp_path / "sim.log").read_text()
    assert code == 0, log
    assert "stopped by a signal; ran" in log
    assert "Traceback" not in log


def test_sigint_ends_the_wait_for_a_stopped_reader_at_once(probe: Probe, tmp_path: Path) -> None:
    """A finished run waits for reliable readers to acknowledge; SIGINT must end that wait, not be held by it."""
    listener = start_stand_in(tmp_path / "listener.log", "slow_listener", str(tmp_path / "stamps.txt"), "1000000")
    sim = None
    try:
        probe.spin_until(lambda: probe.node.count_subscribers("joint_states") >= 2, 30.0, "the listener")
        sim = start_simulator(tmp_path / "sim.log", "duration:=6.0")
        probe.spin_until(lambda: len(probe.states) >= 10 or sim.poll() is not None, 60.0, "10 states")
        os.kill(listener.pid, signal.SIGSTOP)  # it neither reads nor acknowledges from now on
        waiting = "for every reliable reader to take the last states"
        probe.spin_until(lambda: waiting in (tmp_path / "sim.log").read_text(), 30.0, "the acknowledgement wait")
        sim.send_signal(signal.SIGINT)
        code = wait_exit(sim, 3.0)
    finally:
        os.kill(listener.pid, signal.SIGCONT)
        end(listener)
        if sim is not None:
            end(sim)
    log = (tmp_path / "sim.log").read_text()
    assert code == 0, log
    assert "Traceback" not in log


@pytest.mark.parametrize(
    ("parameters", "sentence"),
    [
        (["scenario:=/nonexistent/arm.toml"], "scenario file '/nonexistent/arm.toml' does not exist"),
        (["mode:=lockstep"], "mode 'lockstep' needs stamped commands; set command_interface:=joint_commands"),
    ],
)
def test_bad_start_exits_1_with_one_sentence(tmp_path: Path, parameters: list[str], sentence: str) -> None:
    sim = start_simulator(tmp_path / "sim.log", *parameters)
    try:
        code = wait_exit(sim, 60.0)
    finally:
        end(sim)
    log = (tmp_path / "sim.log").read_text()
    assert code == 1, log
    assert sentence in log
    assert "Traceback" not in log


def test_invalid_scenario_file_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[skeleton]\n[[skeleton.link]]\nlength = 1.0\nmass = -2.0\ninertia = 0.1\n")
    sim = start_simulator(tmp_path / "sim.log", f"scenario:={bad}")
    try:
        code = wait_exit(sim, 60.0)
    finally:
        end(sim)
    log = (tmp_path / "sim.log").read_text()
    assert code == 1, log
    assert f"scenario file '{bad}'" in log and "positive mass" in log
    assert "Traceback" not in log


if __name__ == "__main__":
    if sys.argv[1:2] == ["controller"]:
        sys.exit(run_controller())
    if sys.argv[1:2] == ["slow_listener"]:
        sys.exit(run_slow_listener(sys.argv[2], int(sys.argv[3])))
    sys.exit(f"usage: {sys.argv[0]} controller | slow_listener FILE COUNT")
