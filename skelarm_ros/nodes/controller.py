# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The ``controller`` node: runs the scenario's skelarm controller on ``joint_states``.

A thin shell around :class:`skelarm_ros.control.ControlLoop`: parameters, topics and
logging. See docs/controller.md for the parameters, topics and channel messages.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

import rclpy
from geometry_msgs.msg import PointStamped
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.clock import Clock, ClockType
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from skelarm_ros.cdr import JointStateLayout, JointStateWriter
from skelarm_ros.control.loop import TIME_REVERSAL_MODES, ControlOutput, build_control_loop, channel_columns
from skelarm_ros.conversions import Rejected
from skelarm_ros.interface import BASE_FRAME, stamp_to_nanoseconds
from skelarm_ros.nodes.spinning import node_executor, parameter_problem, spin_until, try_shutdown
from skelarm_ros.scenario import ScenarioError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rclpy.publisher import Publisher
    from rclpy.timer import Timer

COMMAND_INTERFACES = ("commands", "joint_commands")
_WARN_PERIOD = 1.0  # seconds between repeats of a per-message warning
_RELEASE_PERIOD = 0.02  # s, how often held-back commands check for their readers


class ControllerNode(Node):
    """Run a skelarm controller on joint states and publish its effort commands and channels.

    Parameters
    ----------
    node_name : str, optional
        The node's name.
    **kwargs : Any
        Forwarded to :class:`rclpy.node.Node` (``context=``, ``parameter_overrides=``...).

    Raises
    ------
    ScenarioError
        If the scenario cannot be used (the node is destroyed first).
    ValueError
        If a parameter is out of range (the node is destroyed first).
    """

    def __init__(self, node_name: str = "controller", **kwargs: Any) -> None:
        """Declare the parameters, build the control loop and wire the topics; never blocks."""
        super().__init__(node_name, **kwargs)
        try:
            self._setup()
        except (ScenarioError, ValueError):
            self.destroy_node()
            raise

    def _declare(self, name: str, value: Any, description: str, **descriptor: Any) -> Any:
        declared = self.declare_parameter(name, value, ParameterDescriptor(description=description, **descriptor))
        return declared.value

    def _setup(self) -> None:
        scenario = self._declare(
            "scenario", "", "skelarm scenario TOML (path or bundled name; empty: bundled reach)", read_only=True
        )
        joint_names = self._declare(
            "joint_names", Parameter.Type.STRING_ARRAY, "joint names in command order; empty: j1 ... jN", read_only=True
        )
        command_joints = self._declare(
            "command_joints",
            Parameter.Type.STRING_ARRAY,
            "joint_names in the order effort_controller/commands carries them (the driver's joints); "
            "empty: joint_names order",
            read_only=True,
        )
        interface = self._declare(
            "command_interface",
            "commands",
            "commands: Float64MultiArray on effort_controller/commands; joint_commands: JointState on joint_commands",
            read_only=True,
        )
        dt = self._declare(
            "dt",
            0.0,
            "control step handed to the controller (s); 0: the scenario's [simulator].dt",
            read_only=True,
            floating_point_range=[FloatingPointRange(from_value=0.0, to_value=10.0)],
        )
        fast_model = self._declare(
            "fast_model", True, "Pinocchio model for computed torque, inverse-dynamics PD and MPC", read_only=True
        )
        depth = self._declare(
            "qos_depth", 10, "history depth of joint_states and effort_controller/commands (reliable)", read_only=True
        )
        effort_limits = self._declare(
            "effort_limits", Parameter.Type.DOUBLE_ARRAY, "per-joint torque bounds (N*m); empty: none"
        )
        time_reversal = self._declare(
            "time_reversal",
            "reset",
            f"a state stamped earlier than the previous one: one of {list(TIME_REVERSAL_MODES)}",
        )
        self._publish_channels: bool = self._declare(
            "publish_channels", True, "publish the controller's channels on controller/<channel>"
        )
        self.thread_priority: int = self._declare(
            "thread_priority",
            0,
            "SCHED_FIFO priority (1-99) for every thread of the process, if permitted; 0 leaves the scheduler alone",
            read_only=True,
            integer_range=[IntegerRange(from_value=0, to_value=99, step=1)],
        )
        self._min_readers: int = self._declare(
            "min_subscribers",
            0,
            "readers of the command topic (simulator, recorder) to wait for before the first command; "
            "commands and channel messages are held back in order until then",
            read_only=True,
        )
        self._min_channel_readers: int = self._declare(
            "min_channel_subscribers",
            0,
            "readers of each controller/<channel> topic (a recorder) to wait for as well",
            read_only=True,
        )
        if interface not in COMMAND_INTERFACES:
            msg = f"command_interface must be one of {list(COMMAND_INTERFACES)}, got {interface!r}"
            raise ValueError(msg)
        if depth < 1:
            msg = f"qos_depth must be at least 1, got {depth}"
            raise ValueError(msg)
        if self._min_readers < 0 or self._min_channel_readers < 0:
            msg = (
                f"min_subscribers and min_channel_subscribers count readers, got {self._min_readers} and "
                f"{self._min_channel_readers}; give 0 or more"
            )
            raise ValueError(msg)
        self.loop, problems = build_control_loop(
            scenario,
            joint_names=joint_names or (),
            dt=dt,
            fast_model=fast_model,
            time_reversal=time_reversal,
            effort_limits=effort_limits or (),
            command_joints=command_joints or (),
        )
        for problem in problems:
            self.get_logger().warning(problem)
        self.failures = 0
        self._interface = interface
        state_qos = QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE)
        # Lockstep waits for every command: keep all, so none is dropped.
        self._out_qos = (
            QoSProfile(depth=1, history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
            if interface == "joint_commands"
            else state_qos
        )
        self._command_pub: Publisher = (
            self.create_publisher(JointState, "joint_commands", self._out_qos)
            if interface == "joint_commands"
            else self.create_publisher(Float64MultiArray, "effort_controller/commands", self._out_qos)
        )
        # joint_commands go out as bytes (skelarm_ros.cdr): the stamp and efforts written into a template.
        self._command_writer = JointStateWriter(self.loop.command_joints, (0, 0, len(self.loop.command_joints)))
        self._state_layout = JointStateLayout()
        self._channel_pubs: dict[str, tuple[Publisher, list[str] | None]] = {}
        for name, value in self.loop.expected_channels().items():  # so recorders find them before the run
            self._channel_publisher(name, value)
        # Until the readers the graph starts are matched (min_subscribers), what would go out waits here.
        self._held: list[tuple[bytes | Float64MultiArray, list[tuple[Publisher, Any]]]] | None = None
        self._release_timer: Timer | None = None
        if self._min_readers or self._min_channel_readers:
            self._held = []
            steady = Clock(clock_type=ClockType.STEADY_TIME)
            self._release_timer = self.create_timer(_RELEASE_PERIOD, self._release_held, clock=steady)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        # Raw: a state's bytes are read directly when of the layout seen before, else decoded as usual.
        self.create_subscription(JointState, "joint_states", self._on_joint_state_bytes, state_qos, raw=True)
        self.create_subscription(PointStamped, "target", self._on_target, 10)
        controller = type(self.loop.controller).__name__
        self.get_logger().info(
            f"{controller} on {len(self.loop.joint_names)} joints {self.loop.joint_names}, dt={self.loop.dt} s, "
            f"commands on {'joint_commands' if interface == 'joint_commands' else 'effort_controller/commands'} "
            f"in the order {self.loop.command_joints}"
        )

    # -- parameters -------------------------------------------------------------------------------

    def _on_set_parameters(self, parameters: list[Parameter]) -> SetParametersResult:
        try:
            for parameter in parameters:
                if parameter.name == "effort_limits":
                    self.loop.set_effort_limits(list(parameter.value or ()))
                elif parameter.name == "time_reversal":
                    self.loop.set_time_reversal(str(parameter.value))
                elif parameter.name == "publish_channels":
                    self._publish_channels = bool(parameter.value)
        except ValueError as error:
            return SetParametersResult(successful=False, reason=str(error))
        return SetParametersResult(successful=True)

    # -- callbacks --------------------------------------------------------------------------------

    def _on_joint_state_bytes(self, data: bytes) -> None:
        """Take a serialized joint state: read directly when of the known layout, else decoded."""
        layout = self._state_layout
        values = layout.values(data)
        if values is not None:
            positions, velocities, _ = layout.counts
            self._control(
                layout.names,
                values[2 : 2 + positions],
                values[2 + positions : 2 + positions + velocities],
                values[0],
                values[1],
            )
            return
        try:
            msg = deserialize_message(data, JointState)
        except Exception as error:  # rclpy raises several types on damaged bytes
            self.loop.rejected += 1
            self.get_logger().warning(
                f"joint state not controlled ({self.loop.rejected} so far): it could not be deserialized ({error})",
                throttle_duration_sec=_WARN_PERIOD,
            )
            return
        layout.learn(data, msg)
        self._on_joint_state(msg)

    def _on_joint_state(self, msg: JointState) -> None:
        stamp = msg.header.stamp
        self._control(msg.name, msg.position, msg.velocity, stamp.sec, stamp.nanosec)

    def _control(
        self, names: Sequence[str], positions: Sequence[float], velocities: Sequence[float], sec: int, nanosec: int
    ) -> None:
        restarts = self.loop.restarts
        try:
            output = self.loop.control(names, positions, velocities, stamp_to_nanoseconds(sec, nanosec))
        except Rejected as error:
            self.get_logger().warning(
                f"joint state not controlled ({self.loop.rejected} so far): {error}",
                throttle_duration_sec=_WARN_PERIOD,
            )
            return
        except Exception as error:  # a controller's own failure must not end the node
            self.failures += 1
            self.get_logger().error(
                f"the controller failed on a joint state ({self.failures} so far, no command sent): "
                f"{type(error).__name__}: {error}",
                throttle_duration_sec=_WARN_PERIOD,
            )
            return
        if self.loop.restarts > restarts:
            self.get_logger().info(
                f"time line restarted at the state stamped {sec}.{nanosec:09d} s "
                f"(a new target, or time went back); controller reset ({self.loop.restarts} restarts so far)"
            )
        command = self._command(output, sec, nanosec)
        held = self._held
        channels = self._channel_messages(output, sec, nanosec, held is not None) if self._publish_channels else []
        if held is not None:
            held.append((command, channels))
            self._release_held()
            return
        self._command_pub.publish(command)
        for publisher, message in channels:
            publisher.publish(message)

    def _readers_matched(self) -> bool:
        """Whether the command topic and every channel topic have the readers the graph starts."""
        if self._command_pub.get_subscription_count() < self._min_readers:
            return False
        return all(pub.get_subscription_count() >= self._min_channel_readers for pub, _ in self._channel_pubs.values())

    def _release_held(self) -> None:
        """Send what was held back, in order, once the readers the graph starts are matched."""
        if self._held is None or not self._readers_matched():
            return
        held, self._held = self._held, None
        for command, channels in held:
            self._command_pub.publish(command)
            for publisher, message in channels:
                publisher.publish(message)
        if self._release_timer is not None:
            self.destroy_timer(self._release_timer)
            self._release_timer = None
        if held:
            self.get_logger().info(f"readers matched; sent the {len(held)} command(s) held back until then")

    def _command(self, output: ControlOutput, sec: int, nanosec: int) -> bytes | Float64MultiArray:
        torque = self.loop.command_torque(output.torque).tolist()
        if self._interface == "joint_commands":
            return self._command_writer.pack(sec, nanosec, (), (), torque)
        return Float64MultiArray(data=torque)

    def _channel_messages(
        self, output: ControlOutput, sec: int, nanosec: int, unread: bool
    ) -> list[tuple[Publisher, PointStamped | JointState]]:
        """Build the channel messages of one state (for topics nobody reads only when ``unread``)."""
        messages: list[tuple[Publisher, PointStamped | JointState]] = []
        for name, value in output.channels.items():
            publisher, columns = self._channel_pubs.get(name) or self._channel_publisher(name, value)
            if not unread and publisher.get_subscription_count() == 0:
                continue
            values = value.reshape(-1).tolist()
            message: PointStamped | JointState
            if columns is None:
                message = PointStamped()
                message.header.frame_id = BASE_FRAME
                message.point.x, message.point.y = values[0], values[1]
            else:
                message = JointState(name=columns, position=values)
            message.header.stamp.sec, message.header.stamp.nanosec = sec, nanosec
            messages.append((publisher, message))
        return messages

    def _channel_publisher(self, name: str, value: Any) -> tuple[Publisher, list[str] | None]:
        """Create the publisher of one channel: PointStamped for a point, else JointState."""
        columns = channel_columns(name, value, self.loop.joint_names)
        kind = PointStamped if columns is None else JointState
        entry = (self.create_publisher(kind, f"controller/{name}", self._out_qos), columns)
        self._channel_pubs[name] = entry
        return entry

    def _on_target(self, msg: PointStamped) -> None:
        point = msg.point
        try:
            self.loop.set_target(msg.header.frame_id, point.x, point.y, point.z)
        except Rejected as error:
            self.get_logger().warning(f"target ignored: {error}", throttle_duration_sec=_WARN_PERIOD)
            return
        self.get_logger().info(
            f"new target ({point.x:.4g}, {point.y:.4g}); the controller restarts from the next state"
        )


def main(args: list[str] | None = None) -> int:
    """Start the controller node (``ros2 run skelarm_ros controller``)."""
    rclpy.init(args=args)
    argv = rclpy.utilities.remove_ros_args(sys.argv if args is None else args)
    parser = argparse.ArgumentParser(
        prog="controller",
        description="Run a skelarm scenario's controller on joint_states; set it up with --ros-args -p name:=value.",
    )
    parser.parse_args(argv[1:])
    try:
        node = ControllerNode()
    except (ScenarioError, ValueError) as error:
        rclpy.logging.get_logger("controller").fatal(f"controller cannot start: {error}")
        try_shutdown()
        return 1
    except ParameterException as error:
        rclpy.logging.get_logger("controller").fatal(
            f"controller cannot start: {parameter_problem(error, 'docs/controller.md')}"
        )
        try_shutdown()
        return 1
    try:
        # The EventsExecutor answers a state in a fraction of the single-threaded executor's time.
        executor = node_executor(node, node.thread_priority)
        spin_until(node, executor)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
