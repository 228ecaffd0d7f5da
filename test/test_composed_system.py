"""The composed graph (simulator and controller in one process) against the two-node graph over DDS.

Lockstep: every joint state and every command the same within 1e-9 on every bundled scenario
and every controller type, and on a position-servo arm in both goal modes, the two graphs run
in this process side by side (one namespace per case, all cases at once). As processes: a
recorder and a late reader see every topic; Ctrl-C and a failing controller end the composed
process cleanly with the right exit code.
"""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import numpy as np
import procs
import pytest
import skelarm
import waiting
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState

from skelarm_ros.nodes.composed import ComposedSimulator
from skelarm_ros.nodes.controller import ControllerNode
from skelarm_ros.nodes.simulator import SimulatorNode
from skelarm_ros.nodes.spinning import events_executor
from skelarm_ros.sim.scenario import load_arm, resolve_scenario

pytestmark = pytest.mark.slow

TOLERANCE = 1e-9
STEPS = 25  # lockstep steps per case
BUNDLED = Path(__file__).resolve().parents[1] / "config" / "scenarios"
OTHER_TYPES = {  # controller types no bundled scenario uses, on the reach scenario ([controller] table)
    name: f'type = "{name}"'
    for name in skelarm.controller_types()
    if name not in {"computed_torque", "virtual_spring_damper", "mpc"}
}
OTHER_TYPES["mpc"] = 'type = "mpc"\nhorizon = 3\nmax_iter = 5'
SERVO = '\n[driver]\ninterface = "position"\nservo_kp = [60.0, 30.0]\nservo_kd = [3.0, 1.5]\n'
SERVO_MODES = {"reach_servo_reference": "reference", "reach_servo_stiffness": "stiffness"}
"""Cases of a position-servo arm (the reach scenario with SERVO): their goal mode."""


def _cases(folder: Path) -> dict[str, Path]:
    """Every bundled scenario with a controller, and the reach scenario with each other controller type."""
    cases = {
        path.stem: path
        for path in sorted(BUNDLED.glob("*.toml"))
        if "controller" in tomllib.loads(path.read_text(encoding="utf-8"))
    }
    reach = resolve_scenario("reach").read_text(encoding="utf-8").split("\n[controller]")[0]
    for name, table in OTHER_TYPES.items():
        path = folder / f"reach_{name}.toml"
        path.write_text(f"{reach}\n[controller]\n{table}\n", encoding="utf-8")
        cases[f"reach_{name}"] = path
    servo = folder / "reach_servo.toml"
    servo.write_text(resolve_scenario("reach").read_text(encoding="utf-8") + SERVO, encoding="utf-8")
    return cases | dict.fromkeys(SERVO_MODES, servo)


def _dt(path: Path) -> float:
    return float(load_arm(path).dt)


def _graph(context, namespace: str, name: str, path: Path, composed: bool) -> list[Node]:
    """The simulator first, then the controller, of one case (the probe reads joint_states and joint_commands)."""
    common = {"scenario": str(path), "command_interface": "joint_commands"}
    servo = {"interface": "position", "position_mode": SERVO_MODES[name]} if name in SERVO_MODES else {}
    simulator = {**common, "mode": "lockstep", "duration": STEPS * _dt(path), "publish_clock": False}
    simulator["markers_rate"] = 0.0
    if composed:
        node = ComposedSimulator(context=context, namespace=namespace, parameter_overrides=_p(simulator | servo))
        return [node, node.controller]
    simulator["state_readers"] = ["controller", "/probe"]
    controller = {**common, "reliable_states": True, "command_readers": ["simulator", "/probe"], **servo}
    return [
        SimulatorNode(context=context, namespace=namespace, parameter_overrides=_p(simulator)),
        ControllerNode(context=context, namespace=namespace, parameter_overrides=_p(controller)),
    ]


def _run(context, cases: dict[str, Path], composed: bool) -> dict[str, tuple[list, list]]:
    """Run every case in its own namespace at once; return each one's joint states and commands."""
    seen: dict[str, tuple[list, list]] = {}
    simulators = []
    executor = events_executor(context)
    probe = Node("probe", context=context)
    executor.add_node(probe)
    try:
        for index, (name, path) in enumerate(cases.items()):
            namespace = f"case{index}"
            seen[name] = ([], [])
            for topic, messages in zip(("joint_states", "joint_commands"), seen[name], strict=True):
                probe.create_subscription(JointState, f"/{namespace}/{topic}", messages.append, 10000)
            nodes = _graph(context, namespace, name, path, composed)
            simulators.append(nodes[0])
            for node in nodes:
                executor.add_node(node)
        ended = [node.finished.done for node in simulators]
        waiting.spin_until(
            executor, lambda: all(done() for done in ended), procs.START_TIMEOUT + 60.0, "the runs' ends"
        )
        assert [node.finished.result() for node in simulators] == [0] * len(simulators)
        # What is still in flight (the tests below say which case misses a message).
        waiting.spin_wait(executor, lambda: all(len(commands) > STEPS for _, commands in seen.values()), 10.0)
    finally:
        for node in list(executor.get_nodes()):
            executor.remove_node(node)
            node.destroy_node()
    return seen


def _p(parameters: dict) -> list[Parameter]:
    return [Parameter(name, value=value) for name, value in parameters.items()]


def _by_stamp(messages: list, field: str) -> dict[tuple[int, int], np.ndarray]:
    return {
        (msg.header.stamp.sec, msg.header.stamp.nanosec): np.array(
            [list(getattr(msg, name)) for name in field.split(",")]
        )
        for msg in messages
    }


def test_composed_lockstep_equals_the_two_node_lockstep_on_every_scenario_and_controller(context, tmp_path):
    cases = _cases(tmp_path)
    two_nodes = _run(context, cases, composed=False)
    composed = _run(context, cases, composed=True)
    for name in cases:
        states, commands = two_nodes[name]
        states_c, commands_c = composed[name]
        assert len(states) == len(states_c) == STEPS + 1, name
        assert len(commands) == len(commands_c) == STEPS + 1, name
        if name in SERVO_MODES:  # goals in the position field, none in the effort field
            assert all(len(msg.position) == 2 and not msg.effort for msg in commands + commands_c), name
        for field, ours, theirs in (
            ("position,velocity,effort", states_c, states),
            ("position" if name in SERVO_MODES else "effort", commands_c, commands),  # a servo's goals
        ):
            mine, other = _by_stamp(ours, field), _by_stamp(theirs, field)
            assert mine.keys() == other.keys(), name
            for stamp, values in mine.items():
                np.testing.assert_allclose(values, other[stamp], rtol=0.0, atol=TOLERANCE, err_msg=f"{name} {stamp}")


# -- as processes ------------------------------------------------------------------------------------


def _late_reader(probe: procs.Probe, namespace: str) -> dict[str, list]:
    """Subscribe, as ``ros2 topic echo`` does, to every topic the graph publishes now; return what each gets."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    got: dict[str, list] = {}
    for topic, types in probe.node.get_topic_names_and_types():
        if not (topic.startswith(f"/{namespace}/") or topic == "/clock") or not probe.node.count_publishers(topic):
            continue
        latched = topic.endswith("robot_description")
        qos = QoSProfile(
            depth=10,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
        )
        package, _, name = types[0].split("/")
        got[topic] = probe.record(getattr(importlib.import_module(f"{package}.msg"), name), topic, qos)
    return got


def test_a_recorder_and_a_late_reader_see_every_topic_of_the_composed_graph(tmp_path):
    from test_launcher_system import START_DEADLINE, Launch, assert_all_ended_cleanly, run_to_end

    from skelarm_ros.bags.info import bag_info

    bag = tmp_path / "bag"
    probe = procs.Probe("arm1")
    launch = Launch("namespace:=arm1", "compose:=true", "duration:=3.0", f"record:={bag}")
    try:
        assert launch.wait_for_line("realtime: starting", START_DEADLINE), launch.output()
        # The graph's waits count readers: the late reader comes after the recorder has every topic, or it
        # could be the reader the controller's channels were held back for, and the recorder would miss their start.
        for topic in ("effort_controller/commands", "controller/error", "controller/q_ref"):
            assert launch.wait_for_line(f"recording '/arm1/{topic}'", 10.0), launch.output()
        probe.spin_until(lambda: probe.node.count_publishers("/arm1/markers") > 0, 10.0, "the markers publisher")
        late = _late_reader(probe, "arm1")
        probe.spin_until(lambda: all(late.values()) or launch.process.poll() is not None, 20.0, "every topic")
        code = run_to_end(probe, launch, START_DEADLINE)
    finally:
        launch.end()
        probe.close()
    assert_all_ended_cleanly(launch, code, {"arm1/composed", "arm1/recorder"})
    channels = {topic for topic in late if "/controller/" in topic}
    expected = {"/arm1/joint_states", "/arm1/effort_controller/commands", "/arm1/tip", "/arm1/markers", "/clock"}
    assert expected | {"/arm1/robot_description"} <= set(late) and channels, sorted(late)
    assert [topic for topic, messages in late.items() if not messages] == []
    steps = round(3.0 / 0.002)
    recorded = {topic.name: topic.count for topic in bag_info(bag).topics}
    assert recorded["/arm1/joint_states"] == steps + 1, recorded
    assert recorded["/arm1/tip"] == steps + 1, recorded
    assert recorded["/arm1/effort_controller/commands"] >= steps, recorded
    assert all(recorded[topic] >= steps for topic in channels), recorded


def test_ctrl_c_ends_the_composed_process_with_0_and_its_summary(tmp_path):
    log = tmp_path / "composed.log"
    process = procs.start_node("composed", log, {"scenario": "reach", "markers_rate": 0.0})
    try:
        # Stepping for a while: the controller says when the reach got to its target.
        reached = waiting.wait_until(lambda: "target reached" in log.read_text() or process.poll() is not None, 60.0)
        assert reached and process.poll() is None, log.read_text()
    finally:
        code = procs.end(process)
    text = log.read_text()
    assert code == 0, text
    assert "stopped by a signal" in text and "controller:" in text and "step lateness:" in text, text
    assert "Traceback" not in text, text


def test_a_failing_controller_ends_the_composed_process_with_1(tmp_path):
    scenario = tmp_path / "failing.toml"
    reach = resolve_scenario("reach").read_text(encoding="utf-8").split("\n[controller]")[0]
    scenario.write_text(f'{reach}\n[controller]\ntype = "joint_pd"\nkp = nan\n', encoding="utf-8")  # NaN torques
    log = tmp_path / "composed.log"
    process = procs.start_node(
        "composed", log, {"scenario": scenario, "mode": "lockstep", "command_interface": "joint_commands"}
    )
    try:
        code = process.wait(timeout=procs.START_TIMEOUT)
    finally:
        procs.end(process)
    text = log.read_text()
    assert code == 1, text
    assert "the controller gave no command for the state stamped 0.000000000 s" in text, text
    assert "Traceback" not in text, text
