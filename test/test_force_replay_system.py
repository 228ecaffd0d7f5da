"""System test: a recorded push replayed through force_replay into the lockstep simulator, over DDS.

The engine records a run with a scripted push (``ext_force`` as applied). Replaying
that log into the simulator (lockstep, ``wait_for_wrench:=true``) with the same
controller gives the recorded motion back and applies every recorded force exactly;
with another controller the same force arrives at the same times.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import procs
import pytest
import rclpy
import waiting
from geometry_msgs.msg import WrenchStamped
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from test_forces import run_reach, scripted_push

from skelarm_ros.bags.forces import RecordedForce
from skelarm_ros.interface import stamp_to_nanoseconds
from skelarm_ros.sim.scenario import resolve_scenario

pytestmark = pytest.mark.slow

TOLERANCE = 1e-9
DURATION = 1.2  # simulated seconds: both pushes and some recovery
START_TIMEOUT = 60.0  # wall seconds for the processes to come up and find each other
KEEP_ALL = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
OTHER_CONTROLLER = '[controller]\ntype = "virtual_spring_damper"\nk_task = 150.0\nd_task = 25.0\n'


def _start(executable: str, parameters: dict[str, object], log: Path) -> subprocess.Popen:
    return procs.start_node(executable, log, parameters)


_stop = procs.end


@dataclass
class Replay:
    """What a probe heard during one replayed run."""

    states: list[JointState] = field(default_factory=list)
    wrenches: dict[int, tuple[float, float]] = field(default_factory=dict)

    def add_wrench(self, msg: WrenchStamped) -> None:
        stamp = stamp_to_nanoseconds(msg.header.stamp.sec, msg.header.stamp.nanosec)
        assert stamp not in self.wrenches, f"two wrenches stamped {stamp} ns; one per step"
        self.wrenches[stamp] = (msg.wrench.force.x, msg.wrench.force.y)


def replay_run(
    tmp_path: Path, scenario: Path, source: Path, frames: int, mode: str, *, composed: bool = False
) -> Replay:
    """Run simulator, controller and force_replay on ``scenario`` until the simulator ends; return what was heard.

    ``composed``: the simulator and the controller as one process (``compose:=true``).
    """
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("probe", context=context)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(node)
    heard = Replay()
    subscriptions = [
        node.create_subscription(JointState, "joint_states", heard.states.append, KEEP_ALL),
        node.create_subscription(WrenchStamped, "tip_wrench", heard.add_wrench, KEEP_ALL),
    ]

    spin_until = waiting.Spinning(executor, details=lambda: f"logs:\n{procs.logs(tmp_path)}").spin_until

    names = ("composed", "force_replay") if composed else ("simulator", "controller", "force_replay")
    processes: list[subprocess.Popen] = []
    try:
        simulator = _start(
            names[0],
            {
                "scenario": scenario,
                "mode": "lockstep",
                "command_interface": "joint_commands",
                "wait_for_wrench": True,
                "duration": DURATION,
            },
            tmp_path / f"{names[0]}.log",
        )
        processes.append(simulator)
        spin_until(lambda: subscriptions[0].get_publisher_count() > 0, START_TIMEOUT, "the simulator")
        if not composed:
            processes.append(
                _start(
                    "controller",
                    # As the launch runs it in lockstep: every state is answered, so none may be lost.
                    {
                        "scenario": scenario,
                        "command_interface": "joint_commands",
                        "reliable_states": True,
                        "state_timeout": 0.0,
                    },
                    tmp_path / "controller.log",
                )
            )
        processes.append(
            _start(
                "force_replay",
                # Wrenches are held back until the simulator and this probe read them (volatile: a
                # reader matched late misses the first ones), as the launch names its recorder.
                {"source": source, "mode": mode, "scenario": scenario, "wrench_readers": ["simulator", "probe"]},
                tmp_path / "force_replay.log",
            )
        )
        run_timeout = START_TIMEOUT + frames * 0.05
        spin_until(lambda: len(heard.states) >= frames or simulator.poll() is not None, run_timeout, "the run")
        spin_until(lambda: len(heard.states) >= frames, 10.0, f"{frames} states")
        # Topics are not ordered with one another: the last step's wrench may trail the final state.
        spin_until(lambda: len(heard.wrenches) >= frames - 1, 10.0, "every step's wrench")
        assert simulator.wait(timeout=30.0) == 0, (tmp_path / f"{names[0]}.log").read_text()
    finally:
        for subscription in subscriptions:
            node.destroy_subscription(subscription)
        codes = [_stop(process) for process in processes]
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    assert codes == [0] * len(names), {name: (tmp_path / f"{name}.log").read_text() for name in names}
    assert "the recorded force starts acting" in (tmp_path / "force_replay.log").read_text()
    return heard


def check_forces(heard: Replay, times: np.ndarray, forces: np.ndarray) -> None:
    """Every step k got the wrench stamped t_k, exactly the recorded force of step k."""
    steps = len(times) - 1  # the final frame is no step: its recorded force acts nowhere
    stamps = [round(t * 1e9) for t in times[:steps]]
    missing = [stamp for stamp in stamps if stamp not in heard.wrenches]
    assert not missing, f"{len(missing)} steps got no wrench, the first stamped {missing[0]} ns"
    applied = np.array([heard.wrenches[stamp] for stamp in stamps])
    np.testing.assert_array_equal(applied, forces[:steps])


def check_motion(heard: Replay, reference) -> None:
    states = heard.states[: len(reference)]
    seconds = [msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9 for msg in states]
    np.testing.assert_allclose(seconds, reference.times, rtol=0.0, atol=1e-9)
    for channel, field_name in (("q", "position"), ("dq", "velocity")):
        values = np.array([list(getattr(msg, field_name)) for msg in states])
        np.testing.assert_allclose(values, reference.channel(channel), rtol=0.0, atol=TOLERANCE)
    effort = np.array([list(msg.effort) for msg in states])
    np.testing.assert_allclose(effort[1:], reference.channel("tau")[:-1], rtol=0.0, atol=TOLERANCE)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory):
    """The offline pushed reach both tests replay, run once: its log and the file it is saved in."""
    log = run_reach(scripted_push, duration=DURATION)
    path = tmp_path_factory.mktemp("recorded") / "push.sklog.npz"
    log.save(path)
    return log, path


def test_replaying_a_recorded_push_gives_the_recorded_motion_back(recorded, tmp_path: Path) -> None:
    log, path = recorded
    forces = log.channel("ext_force")
    assert np.abs(forces).max() > 1.0, "the scripted push did not act"
    heard = replay_run(tmp_path, resolve_scenario("reach"), path, len(log), mode="stepped")
    check_forces(heard, log.times, forces)
    check_motion(heard, log)


def test_the_composed_graph_replays_a_recorded_push_as_the_two_processes_do(recorded, tmp_path: Path) -> None:
    log, path = recorded
    heard = replay_run(tmp_path, resolve_scenario("reach"), path, len(log), mode="stepped", composed=True)
    check_forces(heard, log.times, log.channel("ext_force"))
    check_motion(heard, log)


def test_another_controller_gets_the_same_force_at_the_same_times(recorded, tmp_path: Path) -> None:
    log, path = recorded
    reach = resolve_scenario("reach").read_text(encoding="utf-8")
    scenario = tmp_path / "reach_spring.toml"
    scenario.write_text(reach[: reach.index("[controller]")] + OTHER_CONTROLLER, encoding="utf-8")
    heard = replay_run(tmp_path, scenario, path, len(log), mode="hold")
    check_forces(heard, log.times, log.channel("ext_force"))
    # The arm moved differently (another controller) under the same pushes: the offline
    # run of that controller with the recorded force is what the graph reproduced.
    offline = run_reach(RecordedForce.from_log(log).at, scenario=scenario, duration=DURATION)
    check_motion(heard, offline)
    q = np.array([list(msg.position) for msg in heard.states[: len(log)]])
    assert np.abs(q - log.channel("q")).max() > 1e-3, "the other controller moved the arm as the recorded one did"
