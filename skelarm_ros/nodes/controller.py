# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The ``controller`` node: runs the scenario's skelarm controller on ``joint_states``.

A thin shell around :class:`skelarm_ros.control.loop.ControlLoop`: parameters, topics and
logging. See docs/controller.md for the parameters, topics and channel messages. Its last
command is zero torque, whatever stops it short of SIGKILL, and so is its command when the
joint states go stale or the controller fails; on a live arm (``live_arm``) a diverging arm
gets zero torque and the node ends with exit code 1 (docs/controller.md, "Driving a real arm").
A servo arm (``interface`` position or velocity, docs/servo.md) is sent goals instead, and
held where it is in place of zero torque.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

import numpy as np
from geometry_msgs.msg import PointStamped
from rclpy.clock import Clock, ClockType
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from skelarm_ros.bags.cdr import JointStateWriter
from skelarm_ros.control.latency import LoopLatency
from skelarm_ros.control.loop import ControlOutput, build_control_loop, channel_columns
from skelarm_ros.control.progress import TaskProgress
from skelarm_ros.control.restarts import combined
from skelarm_ros.control.safety import StateWatch
from skelarm_ros.control.settings import ControlSettings
from skelarm_ros.interface import (
    BASE_FRAME,
    JOINT_COMMANDS,
    JOINT_STATE_FIELDS,
    JOINT_STATES,
    TARGET,
    channel_topic,
    check_effort_limits,
    command_topic,
    stamp_to_nanoseconds,
)
from skelarm_ros.nodes.endpoints import KEEP_ALL, Direct, HeldBack, IncompatiblePeers, JointStateInput, newest
from skelarm_ros.nodes.graph_queries import reader_names, readers_missing, wait_for_acknowledgements
from skelarm_ros.nodes.parameters import LiveParameters, declare_parameters
from skelarm_ros.nodes.params.controller import ControllerParams
from skelarm_ros.nodes.running import KitNode, run_node, say
from skelarm_ros.sim.conversions import Rejected

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rclpy.publisher import Publisher
    from rclpy.subscription import Subscription

NODE_NAME = "controller"
DOC = "docs/controller.md"
WARN_PERIOD = 1.0  # seconds between repeats of a per-message warning
WAIT_REPORT = 5.0  # seconds between two reports of what the controller waits for
ZERO_ACK_TIMEOUT = 1.0  # seconds the last (zero) command waits for every reliable reader to take it
WATCH_PERIOD = 0.02  # seconds between two looks at the joint states' quiet time


class ControllerNode(KitNode):
    """Run a skelarm controller on joint states and publish its effort commands and channels.

    Parameters
    ----------
    node_name : str, optional
        The node's name.
    states : Direct | None, optional
        Where its joint states come from: ``None`` subscribes to ``joint_states``; a
        :class:`~skelarm_ros.nodes.endpoints.Direct` takes them from another node of the
        process, which calls :meth:`answer` with each (the composed graph's simulator).
    **kwargs : Any
        Forwarded to :class:`~skelarm_ros.nodes.running.KitNode` (``stand_ins=``) and
        :class:`rclpy.node.Node` (``context=``, ``parameter_overrides=``...).

    Attributes
    ----------
    params : ControllerParams
        The parameters in use (a live change replaces them whole).

    Raises
    ------
    ScenarioError
        If the scenario cannot be used (the node is destroyed first).
    ValueError
        If a parameter is out of range (the node is destroyed first).
    """

    node_name = NODE_NAME
    description = "Run a skelarm scenario's controller on joint_states."
    doc = DOC

    def __init__(self, node_name: str = NODE_NAME, *, states: Direct | None = None, **kwargs: Any) -> None:
        """Declare the parameters, build the control loop and wire the topics; never blocks."""
        self._direct = states
        super().__init__(node_name, **kwargs)

    def setup(self) -> None:
        """Declare the parameters, build the control loop and wire the topics."""
        params = self.params = declare_parameters(self, ControllerParams, DOC, self.shared)
        self.loop, problems = build_control_loop(params.scenario, ControlSettings.of(params))
        self.rest = "zero torque" if self.loop.servo is None else "the goal holding the arm where it was"
        """What a stop sends, as the log says it: zero torque, or a servo arm's goal where it is."""
        for problem in problems:
            self.get_logger().warning(problem)
        self.thread_priority = params.thread_priority
        self.time_slice = params.scheduler_slice
        self._arrival_stamps = params.state_stamps == "arrival"
        self.failures = 0
        self._stamped = params.command_interface == JOINT_COMMANDS
        # Best effort reads reliable and best-effort drivers alike; lockstep reads (and answers) every state.
        # On a live arm only the newest joint state is kept: a state that waited in a queue while the node started,
        # or fell behind, never anchors the time line (its age would be the reference's head start over the arm).
        state_qos = newest(1 if params.live_arm else params.qos_depth, reliable=params.reliable_states)
        # Lockstep waits for every command: keep all, so none is dropped. Reliable commands reach any reader.
        self._out_qos = KEEP_ALL if self._stamped else newest(params.qos_depth, reliable=True)
        topic = command_topic(params.command_interface, params.interface)
        readers = IncompatiblePeers(self, f"read {topic} with volatile durability (commands keep no history)")
        self.command_pub: Publisher = self.publisher(
            JointState if self._stamped else Float64MultiArray,
            topic,
            self._out_qos,
            event_callbacks=readers.publisher_events(),
        )
        readers.endpoint = self.command_pub
        self._command_topic: str = self.command_pub.topic_name or topic  # as said in the log (a stand-in has none)
        # joint_commands go out as bytes (skelarm_ros.bags.cdr): the stamp and values written into a template, in the
        # field of the interface (effort, position or velocity).
        self._field = JOINT_STATE_FIELDS.index(params.interface)
        counts = [len(self.loop.command_joints) if k == self._field else 0 for k in range(3)]
        self._command_writer = JointStateWriter(self.loop.command_joints, counts)
        self.channel_pubs: dict[str, tuple[Publisher, list[str] | None]] = {}
        for name, value in self.loop.expected_channels().items():  # so recorders find them before the run
            self._channel_publisher(name, value)
        self.command_readers = reader_names(self, params.command_readers)
        self.channel_readers = reader_names(self, params.channel_readers)
        # Until the readers the graph names are matched, what would go out waits, in order.
        named = self.command_readers or self.channel_readers
        self.out = HeldBack(self, (lambda: not self.readers_missing()) if named else None, self._released)
        # A driver's states may flow before its effort controller reads commands (ros2_control spawns it after
        # the state broadcaster): on a live arm control waits for the readers, or its time line would run ahead.
        self._awaits_reader = params.live_arm
        joints = self.loop.num_joints
        LiveParameters(
            self,
            params,
            self._apply_parameters,
            checks={"effort_limits": lambda _name, value: check_effort_limits(value or [], joints)},
        )
        self.state_input: JointStateInput | None = None
        self.states = self._state_input(state_qos)
        self.watch = StateWatch(params.state_timeout, self.states.topic_name, WATCH_PERIOD, self.rest)
        self.latency = LoopLatency(warn=params.live_arm)
        self._sent = 0.0  # when the last command went out (monotonic s)
        self._last_stamp = (0, 0)  # the newest controlled state's stamp, which a zero joint_commands carries
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(WATCH_PERIOD, self.check_states, clock=steady)
        self.create_subscription(PointStamped, TARGET, self.on_target, 10)
        self.progress = TaskProgress(self.loop)
        self._waiting_said = -WAIT_REPORT
        self.create_timer(1.0, self.status, clock=steady)
        model = " + ".join(self.loop.model_terms)
        servo = self.loop.servo
        self.get_logger().info(
            f"{type(self.loop.controller).__name__} on {joints} joints {self.loop.joint_names}, dt={self.loop.dt} s, "
            f"commands on {topic} in the order {self.loop.command_joints}; plans from the {params.plan_from}"
            + (f"; its model has the scenario's {model}" if model else "")
            + ("" if servo is None else f"; sends {servo.describe()}")
        )
        unlimited = self.loop.unlimited_joints
        if params.live_arm and unlimited:
            self.get_logger().warning(
                f"no effort limit bounds the commands of {', '.join(unlimited)}: give the scenario's links "
                "effort_limit (N*m), or effort_limits:=[...], so a diverging loop cannot command any torque"
            )

    def _state_input(self, qos: Any) -> Subscription | Direct:
        """Subscribe to the joint states, or take them from the node of the process that hands them in."""
        if self._direct is not None:  # another node of the process calls answer() with each state
            self._direct.topic_name = self._direct.topic_name or JOINT_STATES
            return self._direct
        drivers = IncompatiblePeers(
            self, f"publish {JOINT_STATES} reliably, or set reliable_states:=false to take best-effort states"
        )
        self.state_input = JointStateInput(self, JOINT_STATES, qos, self.on_state, self.on_damaged_state, peers=drivers)
        return self.state_input.subscription

    def _apply_parameters(self, params: ControllerParams) -> None:
        """Apply a checked set of parameters (the live ones may have changed)."""
        self.params = params
        self.loop.tune(ControlSettings.of(params))
        self.watch.timeout = params.state_timeout

    def readers_missing(self) -> list[str]:
        """Say what the first command and channel messages still wait for: the readers named, by name."""
        missing = readers_missing(self, self.command_pub, self.command_readers)
        for publisher, _ in self.channel_pubs.values():
            missing += readers_missing(self, publisher, self.channel_readers)
        return missing

    def _released(self, count: int) -> None:
        if count:
            self.get_logger().info(f"readers matched; sent the {count} message(s) held back until then")

    # -- callbacks --------------------------------------------------------------------------------

    def on_damaged_state(self, problem: str) -> None:
        """Count and report a joint state that could not be deserialized."""
        self.loop.rejected += 1
        self.get_logger().warning(
            f"joint state not controlled ({self.loop.rejected} so far): {problem}", throttle_duration_sec=WARN_PERIOD
        )

    def on_state(
        self,
        names: Sequence[str],
        positions: Sequence[float],
        velocities: Sequence[float],
        _effort: Any,
        sec: int,
        nanosec: int,
    ) -> None:
        """Control one joint state's fields; publish the command (stamped with the state's stamp) and channels."""
        arrived = time.monotonic()
        say(self, self.watch.heard(arrived))
        stamp = self.get_clock().now().nanoseconds if self._arrival_stamps else None
        self.latency.state(stamp_to_nanoseconds(sec, nanosec) if stamp is None else stamp)
        if self._awaits_reader and not self._reader_matched():
            return
        if self.answer(names, positions, velocities, sec, nanosec, arrived=stamp) is not None:
            say(self, self.latency.answered(arrived, self._sent))

    def answer(
        self,
        names: Sequence[str],
        positions: Sequence[float],
        velocities: Sequence[float],
        sec: int,
        nanosec: int,
        *,
        arrived: int | None = None,
    ) -> ControlOutput | None:
        """Control one joint state and publish its command and channels; return the output.

        ``arrived`` (ns of the node's clock) times the state instead of its stamp
        (``state_stamps:=arrival``); its command still carries the stamp.

        ``None`` when the state was rejected or the controller failed (both logged). A live
        arm's state that a time line was only prepared on is answered too, with the torque
        that holds the arm (:meth:`~skelarm_ros.control.loop.ControlLoop.control`). The
        composed graph's simulator calls it with each state it publishes (its states are never
        stale and its commands have their reader in the process: neither is watched).
        """
        try:
            stamp_ns = stamp_to_nanoseconds(sec, nanosec) if arrived is None else arrived
            output = self.loop.control(names, positions, velocities, stamp_ns)
        except Rejected as error:
            self.get_logger().warning(
                f"joint state not controlled ({self.loop.rejected} so far): {error}", throttle_duration_sec=WARN_PERIOD
            )
            return None
        except Exception as error:  # a controller's own failure must not end the node, nor leave torque held
            self.failures += 1
            self.send_zero()
            self.get_logger().error(
                f"the controller failed on a joint state ({self.failures} so far, {self.rest} sent): "
                f"{type(error).__name__}: {error}",
                throttle_duration_sec=WARN_PERIOD,
            )
            return None
        self._last_stamp = (sec, nanosec)
        say(self, output.said)
        if output.restart and combined(output.restart).counts:
            why = ", ".join(kind.value for kind in output.restart)
            self.get_logger().info(
                f"time line restarted from the state stamped {sec}.{nanosec:09d} s ({why}); controller reset "
                f"({self.loop.restarts} restarts so far)"
            )
        out = self.out
        out.publish(self.command_pub, self._message(output.command, sec, nanosec))
        self._sent = time.monotonic()
        if self.loop.stopped is not None:
            self.finish(1)
        if self.params.publish_channels:
            for publisher, message in self._channel_messages(output, sec, nanosec, out.holding):
                out.publish(publisher, message)
        say(self, self.progress.controlled(output.t))
        return output

    def _reader_matched(self) -> bool:
        """Whether the command topic has a reader, the driver's (named or not); said as control starts, or while not.

        Only the first is waited for so: a lockstep simulator sends each state once, and the
        readers named beside it (a recorder) have what is computed held back for them.
        """
        topic = self._command_topic
        missing = readers_missing(self, self.command_pub, (), 1)
        if missing:
            self.get_logger().info(
                f"joint states arrive but {topic} has no reader yet (the driver's command controller); "
                "control starts when it has one",
                throttle_duration_sec=WAIT_REPORT,
            )
            return False
        self._awaits_reader = False
        self.get_logger().info(f"{topic} has a reader; control starts")
        return True

    def stop_report(self) -> str:
        """Return what a stop by a signal says: the run's commands, where the tip was left, the answers' latency."""
        return f"stopped by a signal; {self.progress.summary()}; {self.latency.text()}"

    def wrap_up(self) -> int:
        """After the run ended by itself (a live arm diverged): say the summary; return the exit code."""
        self.get_logger().info(f"stopped; {self.progress.summary()}; {self.latency.text()}")
        return super().wrap_up()

    def send_zero(self) -> bool:
        """Publish zero torque on the command topic now (a ``joint_commands`` one stamped as the newest state).

        A servo arm is sent the goal that holds it where the last state had it (nothing before any
        state). Return whether a command went out.
        """
        rest = self.loop.rest_command()
        if rest is not None:
            self.command_pub.publish(self._message(rest, *self._last_stamp))
        return rest is not None

    def check_states(self, now: float | None = None) -> None:
        """Send one zero command when the joint states went stale (``state_timeout``); control resumes with the next.

        ``now`` is the monotonic time (s) to judge at; ``None`` for the clock's.
        """
        said = self.watch.check(time.monotonic() if now is None else now)
        if said:
            self.send_zero()
            self.loop.hold()
            say(self, said)

    def close(self) -> None:
        """Leave the arm at zero torque: publish a zero command as the last one and wait for its readers to take it.

        Runs on every way out :func:`~skelarm_ros.nodes.running.run_node` sees (a signal, the
        end of the run, an error that ends the spin), before the node is destroyed. A
        driver that holds the last command then holds zero.
        """
        if not self.params.zero_on_stop:
            return
        try:
            if not self.send_zero():
                self.get_logger().info("no state came: no goal to hold the servo arm at was sent")
                return
            unacked = wait_for_acknowledgements([self.command_pub], ZERO_ACK_TIMEOUT, stopped=lambda: False)
        except Exception as error:  # the context may already be gone: say it, the node ends anyway
            self.get_logger().error(f"could not send the last zero command: {type(error).__name__}: {error}")
            return
        # A reader acknowledges at the writer's next heartbeat (up to seconds apart), not per message.
        later = f" (not acknowledged by every reader within {ZERO_ACK_TIMEOUT:g} s)" if unacked else ""
        self.get_logger().info(f"sent {self.rest} on {self._command_topic} as the last command{later}")

    def status(self) -> None:
        """Say how the task goes every few seconds, or what the controller waits for before its first state."""
        now = time.monotonic()
        if self.progress.commands:
            say(self, self.progress.report(now))
            return
        subscription = self.states
        if subscription.get_publisher_count() == 0 and now - self._waiting_said >= WAIT_REPORT:
            self._waiting_said = now
            self.get_logger().info(
                f"waiting for a publisher on {subscription.topic_name} (the simulator, or a driver's joint states)"
            )

    def _message(self, command: np.ndarray, sec: int, nanosec: int) -> bytes | Float64MultiArray:
        """Return a command (``joint_names`` order) as sent: in command order; stamped, in its interface's field."""
        values = self.loop.command_torque(command).tolist()
        if not self._stamped:
            return Float64MultiArray(data=values)
        fields: list[list[float]] = [[], [], []]
        fields[self._field] = values
        return self._command_writer.pack(sec, nanosec, *fields)

    def _channel_messages(
        self, output: ControlOutput, sec: int, nanosec: int, unread: bool
    ) -> list[tuple[Publisher, PointStamped | JointState]]:
        """Build the channel messages of one state (for topics nobody reads only when ``unread``)."""
        messages: list[tuple[Publisher, PointStamped | JointState]] = []
        for name, value in output.channels.items():
            publisher, columns = self.channel_pubs.get(name) or self._channel_publisher(name, value)
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
        entry = (self.publisher(kind, channel_topic(name), self._out_qos), columns)
        self.channel_pubs[name] = entry
        return entry

    def on_target(self, msg: PointStamped) -> None:
        """Take a new reaching target; the controller follows it from the next state."""
        point = msg.point
        try:
            new = self.loop.set_target(msg.header.frame_id, point.x, point.y, point.z)
        except Rejected as error:
            self.get_logger().warning(f"target ignored: {error}", throttle_duration_sec=WARN_PERIOD)
            return
        if new:
            self.get_logger().info(
                f"new target ({point.x:.4g}, {point.y:.4g}); the controller restarts from the next state"
            )


def main(args: list[str] | None = None) -> int:
    """Run the controller node (``ros2 run skelarm_ros controller``) until stopped."""
    return run_node(ControllerNode, args=args)


if __name__ == "__main__":
    sys.exit(main())
