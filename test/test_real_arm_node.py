"""The controller node's part in driving a real arm, in-process: the first reader, stale states, the last zero."""

from __future__ import annotations

import time

import numpy as np
import pytest
from rclpy.parameter import Parameter
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from stand_ins import StandIn

from skelarm_ros.control.loop import build_control_loop
from skelarm_ros.interface import COMMAND_TOPICS
from skelarm_ros.nodes.controller import ControllerNode
from skelarm_ros.sim.scenario import load_scenario

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


def feed(node: ControllerNode, stamp_ns: int, q=None) -> None:
    """Hand the node a joint state at rest (the scenario's pose unless ``q``), as its subscription does."""
    positions = load_scenario(SCENARIO).skeleton.q if q is None else q
    msg = JointState(name=NAMES, position=list(positions), velocity=[0.0] * 4)
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    node.state_input.take(serialize_message(msg))


def torques(capture: StandIn) -> list[list[float]]:
    return [list(message.data) for message in capture.messages]


def test_no_state_is_controlled_before_the_command_topic_has_a_reader(make_node):
    capture = StandIn(readers=0)
    node = make_node(capture)
    feed(node, 1_000_000_000)
    feed(node, 1_004_000_000)
    assert capture.messages == [] and node.loop.last_stamp is None  # the time line has not started
    capture.readers = 1  # the driver's effort controller is up
    feed(node, 1_200_000_000)
    fresh, _ = build_control_loop(SCENARIO)
    first = fresh.control(NAMES, load_scenario(SCENARIO).skeleton.q.tolist(), [0.0] * 4, 0).torque
    np.testing.assert_array_equal(torques(capture), [first.tolist()])  # the command of t=0
    held = make_node(StandIn(readers=0), min_subscribers=1)  # beside a simulator: the held-back start instead
    feed(held, 1)
    assert held.loop.last_stamp == 1
    # On a driver only the newest state waits to be controlled: no old one starts the time line.
    assert node.state_input.subscription.qos_profile.depth == 1
    assert held.state_input.subscription.qos_profile.depth == 10


def test_stale_states_give_one_zero_command_and_the_next_state_restarts(make_node):
    capture = StandIn()
    node = make_node(capture, state_timeout=0.25)
    feed(node, 1_000_000_000, q=np.radians([0.0, 40.0, 40.0, 10.0]))
    node.check_states(time.monotonic() + 0.1)
    assert len(capture.messages) == 1  # not stale yet
    node.check_states(time.monotonic() + 0.5)
    node.check_states(time.monotonic() + 0.9)
    assert len(capture.messages) == 2 and not any(torques(capture)[1])  # one zero command per gap
    feed(node, 2_000_000_000, q=np.radians([5.0, 45.0, 40.0, 10.0]))
    assert node.loop.restarts == 1 and len(capture.messages) == 3 and any(torques(capture)[2])
    node.set_parameters([Parameter("state_timeout", value=0.0)])
    node.check_states(time.monotonic() + 100.0)
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
