"""Shadow runs over real DDS: a recorded run replayed into a controller (replay:=BAG), compared with what it commanded.

- A lockstep run replayed into the same controller gives its commands back (within 1e-9), every one.
- A stand-in driver's run replayed into another controller gives that controller's commands for those
  states: the ones its control loop computes offline from the recorded states.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import procs
import pytest
from bagwriter import recorded
from procs import START_TIMEOUT
from test_launcher_system import Launch

from skelarm_ros.bags.reader import open_bag
from skelarm_ros.cli.compare import compare_commands, load_commands, main
from skelarm_ros.control import build_control_loop
from skelarm_ros.interface import stamp_to_nanoseconds
from skelarm_ros.sim.conversions import Rejected
from skelarm_ros.sim.scenario import resolve_scenario

pytestmark = pytest.mark.slow

rclpy = pytest.importorskip("rclpy")
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

DRIVER = Path(__file__).resolve().with_name("standin_driver.py")
ARM_JOINTS = ["shoulder", "elbow"]
DRIVER_JOINTS = ["elbow", "shoulder"]


def launch(*arguments: str, budget: float = START_TIMEOUT + 60.0) -> str:
    """Run ``skelarm-ros launch sim`` to its end; return its output (it must exit 0)."""
    run = Launch(*arguments)
    try:
        code = run.wait(budget)
    finally:
        run.end()
    assert code == 0, run.output()
    return run.output()


def other_controller(folder: Path) -> Path:
    """The bundled reach with a joint PD controller in place of its computed torque."""
    text = resolve_scenario("reach").read_text()
    scenario = folder / "reach_pd.toml"
    scenario.write_text(
        text.replace('type = "computed_torque"', 'type = "joint_pd"').replace("kp = 200.0", "kp = 80.0")
    )
    return scenario


def test_a_replayed_lockstep_run_gives_the_same_controller_its_commands_back(tmp_path):
    run, shadow = tmp_path / "run", tmp_path / "shadow"
    launch("namespace:=s1", "mode:=lockstep", "duration:=1.0", f"record:={run}")
    output = launch("namespace:=s1", f"replay:={run}", f"record:={shadow}")
    assert "[launch] s1/player finished; stopping the graph" in output, output
    # The states went through the graph unchanged, every one, in order.
    assert recorded(shadow, ["/s1/joint_states"]) and [data for *_, data in recorded(shadow, ["/s1/joint_states"])] == [
        data for *_, data in recorded(run, ["/s1/joint_states"])
    ]
    comparison = compare_commands(load_commands(run), load_commands(shadow))
    assert len(comparison.stamps) == 501  # a state every 2 ms from 0 to 1 s, each answered in both
    assert comparison.recorded_only == comparison.shadow_only == 0
    assert comparison.largest <= 1e-9, comparison.text()


def record_driver_run(folder: Path, bag: Path) -> None:
    """The stand-in driver driven by the reach's controller for about 1.5 s, recorded (arm3)."""
    probe = procs.Probe("arm3")
    states = probe.record(JointState, "joint_states")
    commands = probe.record(Float64MultiArray, "effort_controller/commands")
    processes = []
    try:
        processes.append(
            procs.start_script(
                DRIVER,
                folder / "driver.log",
                "--ros-args",
                "-r",
                "__ns:=/arm3",
                *procs.parameter_args({"arm_joints": ARM_JOINTS, "joints": DRIVER_JOINTS}),
            )
        )
        processes.append(
            procs.start_node(
                "controller",
                folder / "controller.log",
                {"joint_names": ARM_JOINTS, "command_joints": DRIVER_JOINTS},
                namespace="arm3",
            )
        )
        processes.append(procs.start_node("recorder", folder / "recorder.log", {"output": str(bag)}, namespace="arm3"))
        recording = ["/arm3/recorder"]
        probe.spin_until(
            lambda: (
                probe.subscriber_nodes("/arm3/joint_states").count(recording[0]) == 1
                and probe.subscriber_nodes("/arm3/effort_controller/commands").count(recording[0]) == 1
                and len(commands) > 0
            ),
            START_TIMEOUT,
            "the recorder to record the states and the controller's commands",
        )
        first = len(states)
        probe.spin_until(lambda: len(states) >= first + 750, START_TIMEOUT, "1.5 s of the driver's states, recorded")
    finally:
        codes = [procs.end(process) for process in reversed(processes)]  # the recorder first
        probe.close()
    assert codes == [0, 0, 0], procs.logs(folder)


def offline_commands(scenario: Path, bag: Path) -> dict[int, np.ndarray]:
    """The commands the scenario's control loop computes for the recorded states, by stamp, in command order."""
    loop, _ = build_control_loop(scenario, joint_names=ARM_JOINTS)
    out = {}
    with open_bag(bag) as opened:
        for _, _, _, state in opened.messages(["/arm3/joint_states"]):
            stamp = stamp_to_nanoseconds(state.header.stamp.sec, state.header.stamp.nanosec)
            try:
                output = loop.control(list(state.name), list(state.position), list(state.velocity), stamp)
            except Rejected:
                continue
            out[stamp] = np.asarray(loop.command_torque(output.torque), dtype=np.float64)
    assert loop.command_joints == ARM_JOINTS
    return out


def test_a_replayed_driver_run_gives_another_controller_its_own_commands(tmp_path, capsys):
    run, shadow = tmp_path / "driver_run", tmp_path / "shadow"
    record_driver_run(tmp_path, run)
    scenario = other_controller(tmp_path)
    launch(
        "namespace:=arm3",
        f"replay:={run}",
        f"record:={shadow}",
        f"scenario:={scenario}",
        f"joint_names:={','.join(ARM_JOINTS)}",
    )
    expected = offline_commands(scenario, run)
    got = load_commands(shadow)
    assert got.joints == ARM_JOINTS
    assert sorted(expected) == list(got.stamps)  # every recorded state answered, once
    values = np.array([expected[int(stamp)] for stamp in got.stamps])
    assert np.max(np.abs(got.values - values)) <= 1e-9
    # Beside the recorded commands (unstamped, in the driver's order) they differ: another controller.
    image = tmp_path / "compare.png"
    assert main([str(run), str(shadow), "--command-joints", ",".join(DRIVER_JOINTS), "-o", str(image)]) == 0
    printed = capsys.readouterr().out
    assert "/arm3/effort_controller/commands (paired with /arm3/joint_states)" in printed
    assert image.is_file()
    comparison = compare_commands(load_commands(run, command_joints=DRIVER_JOINTS), got)
    # Recorded from the controller's first command on: about 750 states, most answered in the recording.
    assert comparison.largest > 1e-3 and len(comparison.stamps) > 300
