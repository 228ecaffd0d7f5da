"""The controller node in-process: a private Context, callbacks called directly."""

from __future__ import annotations

import copy
import math
import re
import time

import numpy as np
import pytest
import rclpy
from geometry_msgs.msg import PointStamped
from rclpy.parameter import Parameter
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from stand_ins import StandIn
from std_msgs.msg import Float64MultiArray
from waiting import wait_until

from skelarm_ros.control.loop import build_control_loop
from skelarm_ros.interface import COMMAND_TOPICS, channel_topic
from skelarm_ros.nodes.controller import ControllerNode
from skelarm_ros.sim.scenario import ScenarioError


@pytest.fixture
def make_node(context):
    nodes = []

    def make(stand_ins=None, **parameters):
        overrides = [Parameter(name, value=value) for name, value in parameters.items()]
        node = ControllerNode(context=context, parameter_overrides=overrides, stand_ins=stand_ins)
        nodes.append(node)
        return node

    yield make
    for node in nodes:
        node.destroy_node()


def decoded(message):
    # joint_commands go out as serialized bytes: keep what a subscriber would decode
    return deserialize_message(message, JointState) if isinstance(message, bytes) else message


def captured(subscribers: int = 1) -> StandIn:
    """A stand-in for a publisher, keeping what is published (decoded)."""
    return StandIn(readers=subscribers, keep=decoded)


def commands(capture: StandIn, interface: str = "commands", **channels: StandIn) -> dict[str, StandIn]:
    """The stand-ins of a controller: ``capture`` for the command topic of ``interface``, and channels by name."""
    return {COMMAND_TOPICS[interface]: capture, **{channel_topic(name): c for name, c in channels.items()}}


def feed(node, msg):
    """Hand the node a joint state as its subscription does: the serialized bytes."""
    node.state_input.take(serialize_message(msg))


def _state(names, positions, velocities, stamp_ns):
    msg = JointState(name=list(names), position=list(positions), velocity=list(velocities))
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    return msg


def test_joint_commands_carry_the_torque_and_the_states_stamp(make_node):
    capture = captured()
    node = make_node(
        commands(capture, "joint_commands"), command_interface="joint_commands", joint_names=["shoulder", "elbow"]
    )
    feed(node, _state(["elbow", "shoulder", "extra"], [0.2, 0.1, 5.0], [0.0, 0.0, 0.0], 1_500_000_000))
    loop, _ = build_control_loop("reach", joint_names=["shoulder", "elbow"])
    expected = loop.control(["shoulder", "elbow"], [0.1, 0.2], [0.0, 0.0], 0).torque
    (command,) = capture.messages
    assert isinstance(command, JointState)
    assert list(command.name) == ["shoulder", "elbow"]
    np.testing.assert_array_equal(command.effort, expected)
    assert (command.header.stamp.sec, command.header.stamp.nanosec) == (1, 500_000_000)


def test_float64_commands_in_joint_order(make_node):
    capture = captured()
    node = make_node(commands(capture))
    feed(node, _state(["j2", "j1"], [0.2, 0.1], [0.0, 0.0], 0))
    (command,) = capture.messages
    assert isinstance(command, Float64MultiArray)
    assert len(command.data) == 2
    assert all(math.isfinite(value) for value in command.data)


@pytest.mark.parametrize("interface", ["commands", "joint_commands"])
def test_commands_follow_the_command_joints_order(make_node, interface):
    capture = captured()
    node = make_node(
        commands(capture, interface),
        command_interface=interface,
        joint_names=["shoulder", "elbow"],
        command_joints=["elbow", "shoulder"],
    )
    feed(node, _state(["elbow", "shoulder"], [0.2, 0.1], [0.0, 0.0], 0))
    loop, _ = build_control_loop("reach", joint_names=["shoulder", "elbow"])
    shoulder, elbow = loop.control(["shoulder", "elbow"], [0.1, 0.2], [0.0, 0.0], 0).torque
    (command,) = capture.messages
    if interface == "joint_commands":
        assert list(command.name) == ["elbow", "shoulder"]
        assert list(command.effort) == [elbow, shoulder]
    else:
        assert list(command.data) == [elbow, shoulder]


SERVO = 'interface = "position"\nservo_kp = [60.0, 30.0]\nservo_kd = [3.0, 1.5]\n'


@pytest.fixture
def servo_scenario(tmp_path):
    from skelarm_ros.sim.scenario import bundled_scenarios

    path = tmp_path / "servo.toml"
    path.write_text(bundled_scenarios()["reach"].read_text() + "\n[driver]\n" + SERVO)
    return str(path)


@pytest.mark.parametrize("interface", ["commands", "joint_commands"])
def test_a_servo_arms_goals_go_out_on_its_topic_or_in_the_position_field_in_command_order(
    make_node, servo_scenario, interface
):
    capture = captured()
    topic = "position_controller/commands" if interface == "commands" else "joint_commands"
    node = make_node(
        {topic: capture},
        scenario=servo_scenario,
        command_interface=interface,
        interface="position",
        position_mode="stiffness",
        joint_names=["shoulder", "elbow"],
        command_joints=["elbow", "shoulder"],
    )
    feed(node, _state(["elbow", "shoulder"], [0.2, 0.1], [0.5, 0.0], 1_000_000))
    loop, _ = build_control_loop(
        servo_scenario, joint_names=["shoulder", "elbow"], interface="position", position_mode="stiffness"
    )
    shoulder, elbow = loop.control(["shoulder", "elbow"], [0.1, 0.2], [0.0, 0.5], 1_000_000).command
    (command,) = capture.messages
    if interface == "joint_commands":
        assert list(command.name) == ["elbow", "shoulder"]
        assert list(command.position) == [elbow, shoulder] and list(command.effort) == []
        assert command.header.stamp.nanosec == 1_000_000
    else:
        assert list(command.data) == [elbow, shoulder]
    node.send_zero()  # a servo arm is held where the last state had it, not sent zero
    rest = capture.messages[-1]
    assert (list(rest.position) if interface == "joint_commands" else list(rest.data)) == [0.2, 0.1]
    start = time.monotonic()
    for look in range(1, 500):  # the timer's looks, each counting at most its period: the states go stale
        node.check_states(start + 0.01 * look)
    assert len(capture.messages) == 3 and node.watch.stale
    assert node.watch.rest == node.rest == "the goal holding the arm where it was"


def test_a_servo_arm_gets_no_goal_to_rest_at_before_any_state(make_node, servo_scenario):
    capture = captured()
    node = make_node({"position_controller/commands": capture}, scenario=servo_scenario, interface="position")
    node.send_zero()
    assert capture.messages == []


def test_a_reference_from_a_reaching_law_stops_the_node_at_start(make_node, shared_scenarios):
    with pytest.raises(ValueError, match="has none \\(a reaching law\\); set position_mode:=stiffness"):
        make_node(scenario=str(shared_scenarios / "multi_target.toml"), interface="position")


def test_bad_command_joints_fail_at_start(make_node):
    with pytest.raises(ValueError, match="command_joints"):
        make_node(joint_names=["shoulder", "elbow"], command_joints=["elbow", "wrist"])


@pytest.mark.parametrize(
    "bad",
    [
        _state(["j1", "j2"], [0.1, float("nan")], [0.0, 0.0], 2_000_000),
        _state(["j1"], [0.1], [0.0], 2_000_000),
        _state(["j1", "j2"], [0.1, 0.2], [0.0, 0.0], 1_000_000),  # duplicate of the first stamp
        _state(["j1", "j2", "j3"], [0.1, 0.2, 0.3], [0.0], 2_000_000),
    ],
    ids=["nan", "missing-joint", "duplicate-stamp", "wrong-lengths"],
)
def test_bad_states_are_counted_warned_and_not_commanded(make_node, bad, monkeypatch):
    capture = captured()
    node = make_node(commands(capture))
    warnings = []
    logger = node.get_logger()
    monkeypatch.setattr(type(logger), "warning", lambda self, text, **kw: warnings.append((text, kw)))
    feed(node, _state(["j1", "j2"], [0.1, 0.2], [0.0, 0.0], 1_000_000))
    feed(node, bad)
    assert len(capture.messages) == 1
    assert node.loop.rejected == 1
    ((text, kwargs),) = warnings
    assert text.startswith("joint state not controlled (1 so far): ")
    assert kwargs["throttle_duration_sec"] > 0
    feed(node, _state(["j1", "j2"], [0.1, 0.2], [0.0, 0.0], 3_000_000))
    assert len(capture.messages) == 2  # still running


def test_time_going_back_resets_by_default_and_is_rejected_on_request(make_node):
    capture = captured()
    node = make_node(commands(capture))
    for stamp in (5_000_000, 7_000_000, 1_000_000):
        feed(node, _state(["j1", "j2"], [0.1, 0.2], [0.0, 0.0], stamp))
    assert node.loop.restarts == 1 and node.loop.rejected == 0
    result = node.set_parameters([Parameter("time_reversal", value="reject")])[0]
    assert result.successful
    feed(node, _state(["j1", "j2"], [0.1, 0.2], [0.0, 0.0], 500_000))
    assert node.loop.rejected == 1
    assert len(capture.messages) == 3


def test_channels_published_stamped_with_point_and_joint_state_types(make_node, shared_scenarios):
    captures = {name: captured(subscribers=0) for name in ("endpoint", "equilibrium")}
    node = make_node(commands(captured(), **captures), scenario=str(shared_scenarios / "multi_target.toml"))
    feed(node, _state(["j1", "j2"], [0.5, 0.5], [0.0, 0.0], 0))  # no channel reader yet: none goes out
    for capture in captures.values():
        capture.readers = 1
    feed(node, _state(["j1", "j2"], [0.5, 0.5], [0.0, 0.0], 2_000_000))
    assert set(node.channel_pubs) == {"endpoint", "equilibrium"}
    (point,) = captures["endpoint"].messages
    assert isinstance(point, PointStamped)
    assert point.header.frame_id == "base" and point.header.stamp.nanosec == 2_000_000
    np.testing.assert_allclose([point.point.x, point.point.y], node.loop.controller.log_channels()["endpoint"])


def test_commands_and_channels_wait_in_order_for_the_readers_the_graph_names(make_node, context):
    def seen(topic: str, readers: int) -> StandIn:  # a publisher the graph sees, by topic and type
        return StandIn(topic, readers=readers, keep=decoded, msg_type=JointState)

    command = seen("/joint_commands", 1)  # matched by a reader from outside the graph, not a named one
    channels = {name: seen(f"/controller/{name}", 0) for name in ("q_ref", "error")}
    node = make_node(
        commands(command, "joint_commands", **channels),
        command_interface="joint_commands",
        command_readers=["simulator", "recorder"],
        channel_readers=["recorder"],
    )
    assert set(node.channel_pubs) == {"q_ref", "error"}  # announced at start-up, before any state
    for k in range(3):
        feed(node, _state(["j1", "j2"], [0.1, 0.2], [0.0, 0.0], k * 2_000_000))
    node.out.release()
    assert command.messages == [] and all(c.messages == [] for c in channels.values())
    readers = []
    try:
        simulator = rclpy.create_node("simulator", context=context)
        readers.append(simulator)
        simulator.create_subscription(JointState, "joint_commands", lambda _: None, 10)
        assert wait_until(lambda: "a /joint_commands reader of /simulator" not in node.readers_missing(), 20.0)
        command.readers = 2
        node.out.release()
        assert command.messages == []  # the recorder is not there yet
        recorder = rclpy.create_node("recorder", context=context)
        readers.append(recorder)
        for topic in ("joint_commands", "controller/q_ref", "controller/error"):
            recorder.create_subscription(JointState, topic, lambda _: None, 10)
        known = ["/controller/q_ref readers matched (0 of 1)", "/controller/error readers matched (0 of 1)"]
        assert wait_until(lambda: node.readers_missing() == known, 20.0), node.readers_missing()
        node.out.release()
        assert command.messages == []  # the recorder's channel readers are known, not matched yet
        for capture in channels.values():
            capture.readers = 1
        node.out.release()
    finally:
        for reader in readers:
            reader.destroy_node()
    assert [m.header.stamp.nanosec for m in command.messages] == [0, 2_000_000, 4_000_000]
    for capture in channels.values():
        assert [m.header.stamp.nanosec for m in capture.messages] == [0, 2_000_000, 4_000_000]
    feed(node, _state(["j1", "j2"], [0.1, 0.2], [0.0, 0.0], 6_000_000))  # and from now on at once
    assert len(command.messages) == 4 and all(len(c.messages) == 4 for c in channels.values())


def test_readers_are_named_not_counted(make_node):
    with pytest.raises(ValueError, match=r"^parameter command_readers must name nodes \(/plotter, recorder\)"):
        make_node(command_readers=["2"])
    with pytest.raises(ValueError, match=r"controller's parameter 'min_subscribers' was removed: name the command"):
        make_node(min_subscribers=2)


def test_joint_channels_and_silence_without_subscribers(make_node):
    quiet = captured(subscribers=0)
    listened = captured(subscribers=0)  # read from the second state on
    node = make_node(commands(captured(), q_ref=quiet, error=listened))
    feed(node, _state(["j1", "j2"], [0.1, 0.2], [0.0, 0.0], 0))
    assert set(node.channel_pubs) == {"q_ref", "error"}
    listened.readers = 1
    feed(node, _state(["j1", "j2"], [0.1, 0.2], [0.0, 0.0], 2_000_000))
    assert quiet.messages == []
    (error,) = listened.messages
    assert list(error.name) == ["j1", "j2"] and len(error.position) == 2
    np.testing.assert_allclose(error.position, node.loop.controller.log_channels()["error"])


def test_effort_limits_are_tunable_and_validated(make_node):
    capture = captured()
    node = make_node(commands(capture), effort_limits=[0.1, 0.1])
    feed(node, _state(["j1", "j2"], [-1.0, 2.5], [3.0, -3.0], 0))
    assert max(abs(value) for value in capture.messages[0].data) <= 0.1
    bad = node.set_parameters([Parameter("effort_limits", value=[1.0])])[0]
    assert not bad.successful and bad.reason == (
        "parameter effort_limits has 1 values but the arm has 2 joints; give one limit per joint or none"
    )
    assert node.set_parameters([Parameter("effort_limits", value=[5.0, 5.0])])[0].successful
    np.testing.assert_array_equal(node.loop.effort_limits, [5.0, 5.0])


def test_target_message_and_bad_target(make_node, shared_scenarios, monkeypatch):
    node = make_node(commands(captured()), scenario=str(shared_scenarios / "multi_target.toml"))
    warnings = []
    monkeypatch.setattr(type(node.get_logger()), "warning", lambda self, text, **kw: warnings.append(text))
    target = PointStamped()
    target.header.frame_id = "base"
    target.point.x, target.point.y = 0.3, 1.2
    node.on_target(target)
    feed(node, _state(["j1", "j2"], [0.5, 0.5], [0.0, 0.0], 0))
    np.testing.assert_array_equal(node.loop.controller.target, [0.3, 1.2])
    target.header.frame_id = "map"
    node.on_target(target)
    assert len(warnings) == 1 and "frame 'map'" in warnings[0]


def test_unknown_controller_type_fails_at_start(make_node, tmp_path):
    from skelarm_ros.sim.scenario import resolve_scenario

    text = resolve_scenario("reach").read_text(encoding="utf-8").split("[controller]")[0]
    path = tmp_path / "bad.toml"
    path.write_text(text + '[controller]\ntype = "no_such_controller"\n', encoding="utf-8")
    with pytest.raises(ScenarioError, match="unknown controller type 'no_such_controller'; choose from"):
        make_node(scenario=str(path))


def test_bad_command_interface_fails_at_start(make_node):
    sentence = r"^parameter command_interface 'position' is not one of commands, joint_commands$"
    with pytest.raises(ValueError, match=sentence):
        make_node(command_interface="position")


@pytest.mark.parametrize(
    ("scenario", "channels"),
    [("reach", {"q_ref", "error"}), ("multi_target", {"endpoint", "equilibrium"})],
)
def test_channel_topics_exist_before_the_first_state(make_node, scenario, channels):
    """A recorder discovers the channel topics at start-up, so it records them from the first state."""
    node = make_node(scenario=scenario)
    assert set(node.channel_pubs) == channels
    topics = {name for name, _ in node.get_publisher_names_and_types_by_node(node.get_name(), "/")}
    assert {f"/controller/{name}" for name in channels} <= topics
    before = copy.deepcopy(node.loop.controller.log_channels())
    assert before == {}  # the trial step ran on a copy: the controller itself has not run


class _Logger:
    def __init__(self):
        self.lines = []

    def info(self, text):
        self.lines.append(("info", text))

    def warning(self, text):
        self.lines.append(("warning", text))


class _LoggingNode:
    def __init__(self):
        self.logger = _Logger()

    def get_logger(self):
        return self.logger


def test_thread_priority_puts_every_thread_under_sched_fifo_or_says_why_not(monkeypatch):
    import os

    from skelarm_ros.nodes.spinning import set_thread_priority

    calls = []
    monkeypatch.setattr(os, "sched_setscheduler", lambda tid, policy, param: calls.append((tid, policy, param)))
    node = _LoggingNode()
    assert not set_thread_priority(node, 0) and calls == []  # 0: the scheduler is left alone
    assert set_thread_priority(node, 50)
    threads = {int(name) for name in os.listdir("/proc/self/task")}
    assert {tid for tid, _, _ in calls} == threads
    assert all(policy == os.SCHED_FIFO and param.sched_priority == 50 for _, policy, param in calls)
    assert node.logger.lines[-1] == ("info", "every thread of this process runs under SCHED_FIFO priority 50")

    def refuse(tid, policy, param):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "sched_setscheduler", refuse)
    assert not set_thread_priority(node, 50)
    level, text = node.logger.lines[-1]
    assert level == "warning"
    assert "thread_priority:=50 could not be set (Operation not permitted)" in text
    assert "rtprio in /etc/security/limits.conf" in text and "running with normal scheduling" in text


def test_thread_priority_is_declared_read_only_within_1_to_99(make_node):
    node = make_node(thread_priority=10)
    assert node.thread_priority == 10
    descriptor = node.describe_parameter("thread_priority")
    assert descriptor.read_only
    assert (descriptor.integer_range[0].from_value, descriptor.integer_range[0].to_value) == (0, 99)


def test_a_driver_that_does_not_stamp_its_states_is_timed_by_arrival_on_request(make_node, monkeypatch):
    unstamped = [_state(["j1", "j2"], [0.1 * k, 0.2], [0.0, 0.0], 0) for k in range(3)]  # every stamp zero
    capture = captured()
    node = make_node(commands(capture, "joint_commands"), command_interface="joint_commands")
    warnings = []
    monkeypatch.setattr(type(node.get_logger()), "warning", lambda self, text, **kw: warnings.append(text))
    for state in unstamped:
        feed(node, state)
    assert len(capture.messages) == 1 and node.loop.rejected == 2  # by its header: the first state only
    assert "repeats the previous stamp" in warnings[0] and "state_stamps:=arrival" in warnings[0]

    capture = captured()
    node = make_node(commands(capture, "joint_commands"), command_interface="joint_commands", state_stamps="arrival")
    for state in unstamped:
        feed(node, state)
        time.sleep(0.01)
    assert len(capture.messages) == 3 and node.loop.rejected == 0
    assert {(c.header.stamp.sec, c.header.stamp.nanosec) for c in capture.messages} == {(0, 0)}  # its own stamp
    last_t = float(re.search(r"the last at t=([0-9.]+) s", node.progress.summary()).group(1))
    assert last_t >= 0.009  # the time line followed the arrivals (10 ms or more apart; it starts at the 2nd)
