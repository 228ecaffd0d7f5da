"""The controller node's part in driving a real arm, in-process: the start, stale states, the last zero, the
start-up word on effort limits, the divergence's exit code, the answers' latency."""

from __future__ import annotations

import time

import numpy as np
import pytest
import rclpy.logging
from rclpy.parameter import Parameter
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from stand_ins import StandIn
from std_msgs.msg import Float64MultiArray

from skelarm_ros.control.loop import build_control_loop
from skelarm_ros.interface import COMMAND_TOPICS
from skelarm_ros.nodes.composed import ComposedSimulator
from skelarm_ros.nodes.controller import WATCH_PERIOD, ControllerNode
from skelarm_ros.sim.scenario import load_arm, resolve_scenario

SCENARIO = "reach_four_dof_robot"
NAMES = ["j1", "j2", "j3", "j4"]


@pytest.fixture
def make_node(context):
    nodes = []

    def make(capture: StandIn, **parameters):
        overrides = [Parameter(name, value=value) for name, value in {"scenario": SCENARIO, **parameters}.items()]
        node = ControllerNode(
            context=context, parameter_overrides=overrides, stand_ins={COMMAND_TOPICS["commands"]: capture}
        )
        nodes.append(node)
        return node

    yield make
    for node in nodes:
        node.destroy_node()


@pytest.fixture
def log_lines(monkeypatch) -> list[str]:
    """What the nodes log from now on (every level), one line each."""
    lines: list[str] = []
    logger_type = type(rclpy.logging.get_logger("test"))
    for level in ("info", "warning", "error"):
        monkeypatch.setattr(logger_type, level, lambda _self, text, **_kwargs: lines.append(text))
    return lines


def feed(node: ControllerNode, stamp_ns: int, q=None, dq=None) -> None:
    """Hand the node a joint state (the scenario's pose unless ``q``, at rest unless ``dq``), as its subscription
    does."""
    positions = load_arm(SCENARIO).skeleton.q if q is None else q
    msg = JointState(name=NAMES, position=list(positions), velocity=[0.0] * 4 if dq is None else list(dq))
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    node.state_input.take(serialize_message(msg))


def torques(capture: StandIn) -> list[list[float]]:
    return [list(message.data) for message in capture.messages]


def test_on_a_live_arm_control_waits_for_a_reader_and_the_time_line_starts_after_the_plan(make_node):
    capture = StandIn(readers=0)
    node = make_node(capture, live_arm=True)
    feed(node, 1_000_000_000)
    feed(node, 1_004_000_000)
    assert capture.messages == [] and node.loop.last_stamp is None  # no reader: nothing taken
    capture.readers = 1  # the driver's effort controller is up
    feed(node, 1_200_000_000)  # planned on, answered with the torque that holds the arm (none: horizontal)
    assert torques(capture) == [[0.0] * 4] and node.loop.last_stamp == 1_200_000_000
    feed(node, 1_260_000_000)  # however long the plan took, the time line starts here
    fresh, _ = build_control_loop(SCENARIO)
    first = fresh.control(NAMES, load_arm(SCENARIO).skeleton.q.tolist(), [0.0] * 4, 0).torque
    np.testing.assert_array_equal(torques(capture), [[0.0] * 4, first.tolist()])  # then the command of t=0
    # Only the newest state waits to be taken: no old one starts the time line.
    assert node.state_input.subscription.qos_profile.depth == 1
    # Not declared live (a controller started by hand beside the simulator): nothing is inferred from the rest.
    answered = StandIn(readers=1)
    plain = make_node(answered)
    feed(plain, 1)
    assert plain.loop.last_stamp == 1 and len(answered.messages) == 1
    assert plain.state_input.subscription.qos_profile.depth == 10
    beside = StandIn("/effort_controller/commands", readers=0, msg_type=Float64MultiArray)
    held = make_node(beside, command_readers=["simulator"])  # beside a simulator: the held-back start
    feed(held, 1)
    assert held.loop.last_stamp == 1


def look(node: ControllerNode, start: float, end: float) -> None:
    """The node's watch timer, on time every period from ``start`` to ``end`` (monotonic s)."""
    for now in np.arange(start, end + 1e-9, WATCH_PERIOD):
        node.check_states(float(now))


def test_stale_states_give_one_zero_command_and_the_next_state_restarts(make_node):
    capture = StandIn()
    node = make_node(capture, state_timeout=0.25)
    feed(node, 1_000_000_000, q=np.radians([0.0, 40.0, 40.0, 10.0]))
    now = time.monotonic()
    look(node, now + 0.02, now + 0.2)
    assert len(capture.messages) == 1  # not stale yet
    look(node, now + 0.22, now + 0.9)
    assert len(capture.messages) == 2 and not any(torques(capture)[1])  # one zero command per gap
    feed(node, 2_000_000_000, q=np.radians([5.0, 45.0, 40.0, 10.0]))
    assert node.loop.restarts == 1 and len(capture.messages) == 3 and any(torques(capture)[2])
    node.set_parameters([Parameter("state_timeout", value=0.0)])
    look(node, now + 1.0, now + 10.0)
    assert len(capture.messages) == 3  # never, with 0


def test_the_last_command_is_zero_when_the_node_closes(make_node):
    capture = StandIn()
    node = make_node(capture)
    feed(node, 1_000_000_000, q=np.radians([0.0, 40.0, 40.0, 10.0]))
    assert any(torques(capture)[-1])
    node.close()
    assert torques(capture)[-1] == [0.0] * 4
    quiet = StandIn()
    kept = make_node(quiet, zero_on_stop=False)
    feed(kept, 1_000_000_000, q=np.radians([0.0, 40.0, 40.0, 10.0]))
    kept.close()
    assert any(torques(quiet)[-1])


def test_a_live_arm_without_effort_limits_is_said_once_at_start_up(make_node, tmp_path, log_lines):
    make_node(StandIn(), live_arm=True)
    warned = [line for line in log_lines if "no effort limit bounds the commands" in line]
    assert len(warned) == 1 and "of j1, j2, j3, j4:" in warned[0]
    log_lines.clear()
    limited = tmp_path / "limited.toml"
    limited.write_text(resolve_scenario(SCENARIO).read_text().replace("limits = [", "effort_limit = 5.0\nlimits = ["))
    bounded = make_node(StandIn(), live_arm=True, scenario=str(limited))
    assert bounded.loop.effort_limits.tolist() == [5.0] * 4
    make_node(StandIn())  # beside the simulator: no word of it
    assert not any("no effort limit" in line for line in log_lines)


def test_a_diverging_live_arm_gets_zero_torque_and_ends_the_node_with_exit_code_1(make_node, tmp_path, log_lines):
    limited = tmp_path / "limited.toml"
    text = resolve_scenario(SCENARIO).read_text()
    limited.write_text(text.replace("limits = [", "effort_limit = 5.0\nvelocity_limit = 3.0\nlimits = ["))
    capture = StandIn()
    node = make_node(capture, live_arm=True, scenario=str(limited))
    feed(node, 1_000_000_000)  # planned on: the hold
    feed(node, 1_004_000_000)  # the time line's start
    assert len(capture.messages) == 2 and not node.finished.done()
    feed(node, 1_008_000_000, dq=[0.0, 3.5, 0.0, 0.0])
    assert node.finished.done() and node.finished.result() == 1 and node.wrap_up() == 1
    feed(node, 1_012_000_000)
    assert torques(capture)[2:] == [[0.0] * 4] * 2  # nothing but zero after
    said = [line for line in log_lines if "the arm is diverging" in line]
    assert said == [
        "the arm is diverging: j2 turned at 3.5 rad/s, faster than its velocity_limit 3 rad/s; sent zero torque, "
        "and the controller sends nothing but zero until it ends (exit code 1)"
    ]


def test_the_answers_latency_is_measured_and_said_in_the_summary(make_node):
    node = make_node(StandIn(), live_arm=True)
    for k in range(20):
        feed(node, 1_000_000_000 + k * 4_000_000)
    assert node.latency.answers == 20 and node.latency.period == 0.004  # the first (planned on) with the hold
    assert 0.0 < node.latency.worst < 10.0
    assert "answers took" in node.stop_report() and "20 later than half the state period (4.00 ms)" in (
        node.stop_report()
    )


def test_the_composed_graph_runs_a_live_arm_as_a_driver_s_controller_runs_it(context):
    """hardware:=twin compose:=true: the simulator stands in for the driver, the controller is a live arm's."""
    composed = ComposedSimulator(context=context, parameter_overrides=[Parameter("live_arm", value=True)])
    try:
        assert composed.controller.loop.live_arm
        composed.begin()  # step 0's state answered at once: planned on, the arm held
        assert composed.controller.loop.last_stamp == 0 and composed.controller.progress.commands == 1
    finally:
        composed.destroy_node()
