"""The composed graph (simulator and controller in one process) against the two-node graph over DDS.

Lockstep: every joint state and every command the same within 1e-9 on every bundled scenario
and every controller type, the two graphs run in this process side by side (one namespace per
case, all cases at once). As processes: a recorder and a late reader see every topic; Ctrl-C
and a failing controller end the composed process cleanly with the right exit code.
"""

from __future__ import annotations

import signal
import tomllib
from pathlib import Path

import numpy as np
import procs
import pytest
import skelarm
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
    return cases


def _dt(path: Path) -> float:
    return float(load_arm(path).dt)


def _run(context, cases: dict[str, Path], composed: bool) -> dict[str, tuple[list, list]]:
    """Run every case in its own namespace at once; return each one's joint states and commands, by stamp."""
    nodes, probes, seen = [], [], {}
    executor = events_executor(context)
    probe = None
    try:
        from rclpy.node import Node

        probe = Node("probe", context=context)
        executor.add_node(probe)
        for index, (name, path) in enumerate(cases.items()):
            namespace = f"case{index}"
            states: list = []
            commands: list = []
            seen[name] = (states, commands)
            probes.append(probe.create_subscription(JointState, f"/{namespace}/joint_states", states.append, 10000))
            probes.append(
                probe.create_subscription(JointState, f"/{namespace}/joint_commands", commands.append, 10000)
            )
            common = {"scenario": str(path), "command_interface": "joint_commands"}
            simulator = {**common, "mode": "lockstep", "duration": STEPS * _dt(path), "publish_clock": False}
            if composed:
                parameters = {**simulator, "min_subscribers": 1, "markers_rate": 0.0}
                nodes.append(ComposedSimulator(context=context, namespace=namespace, parameter_overrides=_p(parameters)))
                executor.add_node(nodes[-1].controller)
            else:
                parameters = {**simulator, "min_subscribers": 2, "markers_rate": 0.0}
                nodes.append(SimulatorNode(context=context, namespace=namespace, parameter_overrides=_p(parameters)))
                controller = {**common, "reliable_states": True, "min_subscribers": 2}
                executor.add_node(ControllerNode(context=context, namespace=namespace, parameter_overrides=_p(controller)))
            executor.add_node(nodes[-1])
        simulators = [node for node in nodes]
        deadline = procs.START_TIMEOUT + 60.0
        import time

        until = time.monotonic() + deadline
        while not all(node.finished.done() for node in simulators):
            assert time.monotonic() < until, "the runs did not end"
            executor.spin_once(timeout_sec=0.05)
        assert [node.finished.result() for node in simulators] == [0] * len(simulators)
        end = time.monotonic() + 10.0
        while time.monotonic() < end and any(len(c) < STEPS + 1 for _, c in seen.values()):
            executor.spin_once(timeout_sec=0.05)
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
        for field, ours, theirs in (
            ("position,velocity,effort", states_c, states),
            ("effort", commands_c, commands),
        ):
            mine, other = _by_stamp(ours, field), _by_stamp(theirs, field)
            assert mine.keys() == other.keys(), name
            for stamp, values in mine.items():
                np.testing.assert_allclose(values, other[stamp], rtol=0.0, atol=TOLERANCE, err_msg=f"{name} {stamp}")
