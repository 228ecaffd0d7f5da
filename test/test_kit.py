"""The node kit in-process: parameters from one class, the raw joint-state input, messages held back, the runner."""

from __future__ import annotations

import math
import signal
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from stand_ins import StandIn
from waiting import spin_wait

from skelarm_ros.interface import check_effort_limits
from skelarm_ros.nodes import spinning
from skelarm_ros.nodes.endpoints import HeldBack, IncompatiblePeers, JointStateInput
from skelarm_ros.nodes.parameters import LiveParameters, ParameterError, declare_parameters, given_parameters
from skelarm_ros.nodes.params.fields import choice, count, number, param
from skelarm_ros.nodes.running import KitNode, run_node

pytestmark = pytest.mark.ros


@dataclass(frozen=True)
class Table:
    scenario: Annotated[str, param("a scenario")] = ""
    dt: Annotated[float, number("a step", zero=True)] = 0.0
    timeout: Annotated[float, number("a timeout", live=True)] = 0.5
    mode: Annotated[str, choice(("realtime", "lockstep"), "a mode")] = "realtime"
    priority: Annotated[int, count("a priority", 99)] = 0
    clock: Annotated[bool, param("a flag")] = True
    names: Annotated[tuple[str, ...], param("names")] = ()
    effort_limits: Annotated[tuple[float, ...], param("limits", live=True)] = ()


def node_with(context: Any, **given: Any) -> Node:
    overrides = [Parameter(name, value=value) for name, value in given.items()]
    return Node("kit_test", context=context, parameter_overrides=overrides)


def declared(context: Any, **given: Any) -> Table:
    node = node_with(context, **given)
    try:
        return declare_parameters(node, Table, "docs/x.md")
    finally:
        node.destroy_node()


def test_the_given_parameters_are_read_where_rclpy_keeps_them(context: Any) -> None:
    """``given_parameters`` reads a private attribute of rclpy's Node: a new rclpy that moves it fails here."""
    node = node_with(context, dt=0.5)
    try:
        assert hasattr(node, "_parameter_overrides"), "rclpy's Node no longer keeps _parameter_overrides"
        given = given_parameters(node)
        assert set(given) == {"dt"} and given["dt"].value == 0.5
    finally:
        node.destroy_node()


def test_defaults_and_given_values_come_back_checked(context: Any) -> None:
    values = declared(context, dt=0.25, mode="lockstep", priority=50, names=["a", "b"])
    assert isinstance(values, Table)
    assert values.dt == 0.25 and values.mode == "lockstep" and values.priority == 50
    assert values.names == ("a", "b") and values.effort_limits == () and values.clock is True


@pytest.mark.parametrize(
    ("given", "sentence"),
    [
        ({"sceanrio": "reach"}, "kit_test has no parameter 'sceanrio' (did you mean 'scenario'?); its parameters are"),
        ({"dt": -0.001}, "parameter dt must be zero or a positive number (s), got -0.001"),
        ({"dt": 1}, "parameter dt is a floating-point number; write 1.0 instead of 1 (see docs/x.md)"),
        ({"dt": -1}, "parameter dt must be zero or a positive number (s), got -1.0"),  # the range, not "write -1.0"
        ({"mode": "Lockstep"}, "parameter mode 'Lockstep' is not one of realtime, lockstep"),
        ({"priority": 120}, "parameter priority must be a whole number from 0 to 99, got 120"),
        ({"clock": "yes"}, "parameter clock must be true or false, got 'yes' (see docs/x.md)"),
        ({"effort_limits": [1, 2]}, "parameter effort_limits is a list of floating-point numbers; write [1.0, 2.0]"),
    ],
)
def test_a_bad_parameter_is_one_sentence_with_the_fix(context: Any, given: dict[str, Any], sentence: str) -> None:
    with pytest.raises(ParameterError) as caught:
        declared(context, **given)
    assert str(caught.value).startswith(sentence)
    assert "\n" not in str(caught.value)


def test_parameters_rclpy_declares_itself_are_accepted(context: Any) -> None:
    assert declared(context, use_sim_time=True).dt == 0.0


def test_descriptors_state_ranges_and_choices_for_tools(context: Any) -> None:
    node = node_with(context)
    try:
        declare_parameters(node, Table, "docs/x.md")
        dt = node.describe_parameter("dt")
        assert dt.read_only and dt.floating_point_range[0].from_value == 0.0
        assert math.isinf(dt.floating_point_range[0].to_value)
        assert "(s, >= 0)" in dt.description
        assert node.describe_parameter("mode").additional_constraints == "one of: realtime, lockstep"
        assert node.describe_parameter("priority").integer_range[0].to_value == 99
        assert not node.describe_parameter("timeout").read_only
    finally:
        node.destroy_node()


def test_a_live_set_is_checked_whole_before_any_of_it_applies(context: Any) -> None:
    node = node_with(context)
    applied: list[Table] = []
    try:
        values = declare_parameters(node, Table, "docs/x.md")
        checks = {"effort_limits": lambda _name, value: check_effort_limits(value, 2)}
        live = LiveParameters(node, values, applied.append, checks=checks)
        limits = Parameter("effort_limits", value=[1.0, 2.0])
        bad = node.set_parameters_atomically([limits, Parameter("timeout", value=0.0)])
        assert not bad.successful and bad.reason == "parameter timeout must be a positive number (s), got 0.0"
        assert applied == [] and live.current is values
        bad = node.set_parameters([Parameter("effort_limits", value=[1.0])])[0]
        assert bad.reason == (
            "parameter effort_limits has 1 values but the arm has 2 joints; give one limit per joint or none"
        )
        good = node.set_parameters_atomically([limits, Parameter("timeout", value=0.1)])
        assert good.successful
        assert [(new.effort_limits, new.timeout) for new in applied] == [((1.0, 2.0), 0.1)]
        assert live.current is applied[-1] and values.timeout == 0.5  # replaced whole, never changed in place
        assert not node.set_parameters([Parameter("dt", value=0.1)])[0].successful  # read-only
    finally:
        node.destroy_node()


def state(names: list[str], position: list[float], stamp: tuple[int, int] = (1, 5)) -> JointState:
    msg = JointState(name=names, position=position, velocity=[0.5] * len(position), effort=[-1.0] * len(position))
    msg.header.stamp.sec, msg.header.stamp.nanosec = stamp
    return msg


def test_joint_states_are_read_directly_once_their_layout_is_known_and_decoded_otherwise(context: Any) -> None:
    node = Node("reader", context=context)
    got: list[tuple[Any, ...]] = []
    problems: list[str] = []
    try:
        reader = JointStateInput(
            node, "joint_states", QoSProfile(depth=10), lambda *fields: got.append(fields), problems.append
        )
        reader.take(serialize_message(state(["a", "b"], [0.1, 0.2])))  # decoded; the layout is learned
        reader.take(serialize_message(state(["a", "b"], [0.3, 0.4], (2, 7))))  # read directly
        reader.take(serialize_message(state(["b", "a", "c"], [1.0, 2.0, 3.0])))  # another layout: decoded
        reader.take(b"\x00\x01\x00\x00garbage")
        assert [tuple(map(list, fields[:4])) + fields[4:] for fields in got] == [
            (["a", "b"], [0.1, 0.2], [0.5, 0.5], [-1.0, -1.0], 1, 5),
            (["a", "b"], [0.3, 0.4], [0.5, 0.5], [-1.0, -1.0], 2, 7),
            (["b", "a", "c"], [1.0, 2.0, 3.0], [0.5] * 3, [-1.0] * 3, 1, 5),
        ]
        assert len(problems) == 1 and problems[0].startswith("a /joint_states message could not be deserialized (")
    finally:
        node.destroy_node()


def test_an_incompatible_peer_is_named_once_with_the_fix(context: Any) -> None:
    reader, driver = Node("reader", context=context), Node("driver", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(reader)
    executor.add_node(driver)
    try:
        peers = IncompatiblePeers(reader, "publish joint_states reliably")
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        subscription = reader.create_subscription(
            JointState, "joint_states", lambda _msg: None, reliable, event_callbacks=peers.subscription_events()
        )
        peers.endpoint = subscription
        best_effort = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
        driver.create_publisher(JointState, "joint_states", best_effort)
        spin_wait(executor, lambda: bool(peers.said), 20.0)
        assert len(peers.said) == 1, peers.said
        assert peers.said[0].startswith("the publisher /driver of /joint_states cannot match this node's QoS (")
        assert peers.said[0].endswith("; publish joint_states reliably")
        assert peers.check() == []  # once per peer
    finally:
        executor.shutdown()
        driver.destroy_node()
        reader.destroy_node()


def test_messages_are_held_back_in_order_until_the_readers_are_there(context: Any) -> None:
    node = Node("holder", context=context)
    first, second = StandIn(readers=0), StandIn(readers=0)
    released: list[int] = []
    try:
        out = HeldBack(node, lambda: first.readers >= 1 and second.readers >= 1, released.append)
        for k in range(3):
            out.publish(first, k)  # type: ignore[arg-type]
            out.publish(second, -k)  # type: ignore[arg-type]
        first.readers = 1
        out.release()
        assert out.holding and first.messages == [] and released == []
        second.readers = 1
        out.release()
        assert not out.holding and released == [6]
        assert first.messages == [0, 1, 2] and second.messages == [0, -1, -2]
        out.publish(first, 3)  # type: ignore[arg-type]
        assert first.messages == [0, 1, 2, 3]
        assert HeldBack(node, None).holding is False  # nothing to wait for: never holds
    finally:
        node.destroy_node()


class Talking(KitNode):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("talking", **kwargs)

    def setup(self) -> None:
        self.chatter = self.publisher(JointState, "chatter", 10)
        self.other = self.publisher(JointState, "other", 10)
        self.chatter.publish(JointState(name=["j1"]))


def test_a_node_publishes_through_the_stand_in_given_for_a_topic(context: Any) -> None:
    chatter = StandIn("/chatter")
    node = Talking(context=context, stand_ins={"chatter": chatter})
    try:
        assert node.chatter is chatter and [list(msg.name) for msg in chatter.messages] == [["j1"]]
        assert node.other.topic_name == "/other" and node.other is not chatter  # a real publisher
        assert {name for name, _ in node.get_publisher_names_and_types_by_node("talking", "/")} >= {"/other"}
        assert "/chatter" not in {name for name, _ in node.get_publisher_names_and_types_by_node("talking", "/")}
    finally:
        node.destroy_node()


class Failing(KitNode):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("failing", **kwargs)

    def setup(self) -> None:
        self.create_publisher(JointState, "joint_states", 10)
        msg = "the scenario is not there; pass one that is"
        raise ValueError(msg)


def test_a_node_whose_setup_fails_is_destroyed(context: Any) -> None:
    destroyed: list[bool] = []
    original = KitNode.destroy_node

    def destroy(self: KitNode) -> None:
        destroyed.append(True)
        original(self)

    KitNode.destroy_node = destroy  # type: ignore[method-assign]
    try:
        with pytest.raises(ValueError, match="the scenario is not there"):
            Failing(context=context)
    finally:
        KitNode.destroy_node = original  # type: ignore[method-assign]
    assert destroyed == [True]


def test_the_runner_says_the_sentence_and_exits_1(capfd: pytest.CaptureFixture[str]) -> None:
    assert run_node(Failing, name="failing", description="Fails.", doc="docs/x.md", args=["failing"]) == 1
    err = capfd.readouterr().err
    assert "[ERROR]" in err and "[failing]: the scenario is not there; pass one that is" in err
    assert "Traceback" not in err


class Waiting(KitNode):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("waiting", **kwargs)

    def setup(self) -> None:
        self.closed = False
        self.create_timer(0.01, lambda: signal.raise_signal(signal.SIGINT))  # a Ctrl-C while a callback runs

    def stop_report(self) -> str:
        return "stopped by a signal; all is well"


def test_a_signal_ends_the_spin_between_callbacks_and_the_node_says_its_last_words(
    capfd: pytest.CaptureFixture[str],
) -> None:
    spinning.clear_stop()  # a fresh stop flag for this test
    before = signal.getsignal(signal.SIGINT)
    try:
        assert run_node(Waiting, name="waiting", description="Waits.", doc="docs/x.md", args=["waiting"]) == 0
        assert spinning.stop_requested()
    finally:
        spinning.clear_stop()  # the nodes other tests run in this process spin
    assert signal.getsignal(signal.SIGINT) is before  # the handlers in place before are back
    err = capfd.readouterr().err
    assert "[waiting]: stopped by a signal; all is well" in err
    for noise in ("Traceback", "FATAL", "Exception in", "Failed to publish log message to rosout"):
        assert noise not in err, err


def test_a_publisher_waits_for_its_readers_by_name_not_for_a_count(context: Any) -> None:
    """readers_missing: the graph's readers by name, then every reader that can match matched; at least one unnamed."""
    from skelarm_ros.nodes.graph_queries import node_full_name, reader_names, readers_missing

    node = Node("controller", context=context)
    echo = Node("echo", context=context)
    executor = SingleThreadedExecutor(context=context)
    for each in (node, echo):
        executor.add_node(each)
    recorder = None
    try:
        publisher = node.create_publisher(JointState, "joint_commands", 10)
        named = reader_names(node, ["recorder", "/recorder", ""])
        assert named == ("/recorder",) and node_full_name(node, "/arm2/recorder") == "/arm2/recorder"
        assert node_full_name(node, "") == ""  # none given
        assert readers_missing(node, publisher, (), 1) == ["/joint_commands readers matched (0 of 1)"]
        echo.create_subscription(JointState, "joint_commands", lambda _: None, 10)
        assert spin_wait(executor, lambda: not readers_missing(node, publisher, (), 1), 20.0)  # any one: the echo
        assert readers_missing(node, publisher, named) == ["a /joint_commands reader of /recorder"]  # not a name
        recorder = Node("recorder", context=context)
        executor.add_node(recorder)
        recorder.create_subscription(JointState, "joint_commands", lambda _: None, 10)
        assert spin_wait(executor, lambda: not readers_missing(node, publisher, named), 20.0)
        assert publisher.get_subscription_count() == 2
    finally:
        executor.shutdown()
        for each in (node, echo, recorder):
            if each is not None:
                each.destroy_node()
