# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The ``simulator`` node: integrates a skelarm arm and publishes its state.

A thin shell: :class:`skelarm_ros.sim.simulation.Simulation` holds the arm and its
inputs, :class:`skelarm_ros.sim.run.SimulatorRun` decides when the run starts,
waits, lapses and ends; this node declares the parameters, wires topics, services
and timers, and says what the run says. In ``realtime`` mode a timer steps the arm
under the newest command; in ``lockstep`` mode each step waits for the command
stamped with the state it answers (docs/interfaces.md). See docs/simulator.md.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

from geometry_msgs.msg import PointStamped, WrenchStamped
from rclpy.clock import Clock, ClockType
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import SetBool, Trigger

from skelarm_ros.bags.cdr import JointStateWriter
from skelarm_ros.interface import (
    BASE_FRAME,
    CLOCK,
    COMMANDS,
    JOINT_STATES,
    LOCKSTEP,
    PAUSE_SERVICE,
    RESET_SERVICE,
    ROBOT_DESCRIPTION,
    TIP,
    TIP_WRENCH,
    check_effort_limits,
    check_mode,
    command_topic,
    stamp_text,
    stamp_to_nanoseconds,
)
from skelarm_ros.nodes.endpoints import KEEP_ALL, LATCHED, Direct, IncompatiblePeers, JointStateInput, newest
from skelarm_ros.nodes.graph_queries import publishing_nodes, reader_names, readers_missing
from skelarm_ros.nodes.marker_msgs import SimulatorMarkers
from skelarm_ros.nodes.parameters import LiveParameters, declare_parameters
from skelarm_ros.nodes.params.simulator import SimulatorParams
from skelarm_ros.nodes.running import KitNode, run_node, say
from skelarm_ros.nodes.spinning import Beat
from skelarm_ros.sim.conversions import Rejected
from skelarm_ros.sim.run import SimulatorRun, start_missing
from skelarm_ros.sim.scenario import load_arm
from skelarm_ros.sim.simulation import COMMAND, STALE_COMMAND, STALE_WRENCH, WRENCH, LockstepPairing, Simulation
from skelarm_ros.sim.urdf import arm_urdf

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np
    from numpy.typing import NDArray
    from rclpy.publisher import Publisher
    from rclpy.subscription import Subscription

NODE_NAME = "simulator"
DOC = "docs/simulator.md"
WATCH_PERIOD = 0.02  # s, how often the start condition and the lockstep timeout are looked at
WARN_EVERY = 2.0  # s, throttle of per-message warnings
ACK_TIMEOUT = 10.0  # s, the longest a finished run waits for its reliable readers to take the last states
HISTORY = 100  # realtime: messages kept per topic


class SimulatorNode(KitNode):
    """Simulates a skelarm arm and publishes ``joint_states``, ``tip``, ``/clock`` and ``robot_description``.

    Parameters
    ----------
    commands : Direct | None, optional
        ``None`` subscribes to the commands; a ``Direct`` takes them from another node of the
        process, by :meth:`hold` (realtime) and :attr:`pairing` (lockstep).
    **kwargs : Any
        Passed on to :class:`~skelarm_ros.nodes.running.KitNode` (``stand_ins=``) and
        :class:`rclpy.node.Node` (``context=``, ``parameter_overrides=``...).

    Attributes
    ----------
    params : SimulatorParams
        The parameters in use (a live change replaces them whole).

    Raises
    ------
    ScenarioError
        If the scenario cannot be read (one sentence naming the file and the problem).
    ValueError
        If a parameter is invalid (one sentence naming it and what is accepted).
    """

    node_name = NODE_NAME
    description = "skelarm_ros simulator."
    doc = DOC
    now = staticmethod(time.monotonic)
    """The steady clock the run's times come from (seconds)."""

    def __init__(self, *, commands: Direct | None = None, **kwargs: Any) -> None:
        """Build the node (see the class); ``commands`` says where its commands come from."""
        self._direct = commands
        super().__init__(**kwargs)

    def setup(self) -> None:
        """Declare the parameters, build the simulation and its run, and wire the node."""
        params = self.params = declare_parameters(self, SimulatorParams, DOC, self.shared)
        check_mode(params.mode, params.command_interface)
        arm = load_arm(params.scenario or None)
        self.sim = Simulation(
            arm,
            params.joint_names,
            dt=params.dt,
            effort_limits=params.effort_limits,
            wrench_tolerance=params.wrench_tolerance,
            driver=params.driver,
        )
        self.lockstep = params.mode == LOCKSTEP
        self.wait_for_wrench = params.wait_for_wrench
        self.state_readers = reader_names(self, params.state_readers)
        self.tip_readers = reader_names(self, params.tip_readers)
        self._need_controller = self.lockstep or params.wait_for_controller
        self.run = SimulatorRun(
            params.mode,
            self.sim.dt,
            duration=params.duration,
            command_timeout=params.command_timeout,
            lockstep_timeout=params.lockstep_timeout,
            start_condition=self._need_controller or bool(self.state_readers or self.tip_readers),
            answered=self.sim.answered,
            tick_period=self.sim.tick_period / params.real_time_factor,
        )
        self.pairing = LockstepPairing(self.wait_for_wrench, self.sim.rejected)
        self.thread_priority = params.thread_priority
        self.time_slice = 0.0 if self.lockstep else params.scheduler_slice  # a lockstep run goes flat out
        joints = self.sim.num_joints
        LiveParameters(
            self,
            params,
            self._apply_parameters,
            checks={"effort_limits": lambda _name, value: check_effort_limits(value or [], joints)},
        )
        self._loggers = {
            kind: self.get_logger().get_child(kind.replace(" ", "_"))
            for kind in (COMMAND, WRENCH, STALE_COMMAND, STALE_WRENCH)
        }
        self._wire(params, arm)
        driver = self.sim.driver
        self.get_logger().info(
            f"simulating {joints} joints {self.sim.joint_names} from '{arm.path}' at dt={self.sim.dt} s "
            f"in {params.mode} mode" + ("" if driver is None else f"; as the arm's driver: {driver.describe()}")
        )

    def _wire(self, params: SimulatorParams, arm: Any) -> None:
        # Lockstep: reliable keep-all both ways. Realtime: reliable states reach any reader; best-effort
        # subscriptions take commands and wrenches from reliable and best-effort publishers alike.
        qos = KEEP_ALL if self.lockstep else newest(HISTORY, reliable=True)
        inputs = KEEP_ALL if self.lockstep else newest(HISTORY, reliable=False)
        readers = IncompatiblePeers(self, f"read {JOINT_STATES} with volatile durability (states keep no history)")
        self.state_pub = self.publisher(JointState, JOINT_STATES, qos, event_callbacks=readers.publisher_events())
        readers.endpoint = self.state_pub
        self.tip_pub = self.publisher(PointStamped, TIP, qos)
        self.clock_pub = self.publisher(ClockMsg, CLOCK, qos) if params.publish_clock else None
        self.description_pub = self.publisher(String, ROBOT_DESCRIPTION, LATCHED)
        self.command_sub = self._command_input(command_topic(params.command_interface, self.sim.interface), inputs)
        self.wrench_sub = self.create_subscription(WrenchStamped, TIP_WRENCH, self.on_wrench, inputs)
        self.create_service(Trigger, RESET_SERVICE, self.on_reset)
        self.create_service(SetBool, PAUSE_SERVICE, self.on_pause)
        joints = self.sim.num_joints
        self._state_writer = JointStateWriter(self.sim.joint_names, (joints, joints, joints))
        self._tip_msg = PointStamped()
        self._tip_msg.header.frame_id = BASE_FRAME
        self._clock_msg = ClockMsg()
        self.description_pub.publish(String(data=arm_urdf(arm, self.sim.joint_names, params.effort_limits)))
        self.markers = None
        if params.markers_rate > 0.0:
            self.markers = SimulatorMarkers(self, arm.skeleton, arm.config, params.markers_rate, self._drawn_state)
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(WATCH_PERIOD, self.watch, clock=steady)
        if not self.lockstep:  # the spin keeps the steps' deadlines in its own thread (run_node)
            self.beat = Beat(self.sim.tick_period / params.real_time_factor, self.tick)

    def _command_input(self, topic: str, qos: Any) -> Subscription | Direct:
        """Subscribe to the commands on ``topic``, or take them from the node of the process that hands them in."""
        if self._direct is not None:
            self._direct.topic_name = self._direct.topic_name or topic
            return self._direct
        controllers = IncompatiblePeers(self, f"lockstep needs every command: publish {topic} reliably")
        if self.params.command_interface != COMMANDS:
            self.command_input = JointStateInput(
                self, topic, qos, self.on_joint_command, self.on_damaged_command, peers=controllers
            )
            return self.command_input.subscription
        events = controllers.subscription_events()
        subscription = self.create_subscription(Float64MultiArray, topic, self.on_commands, qos, event_callbacks=events)
        controllers.endpoint = subscription
        return subscription

    def _apply_parameters(self, params: SimulatorParams) -> None:
        """Apply a checked set of parameters (the live ones may have changed)."""
        self.params = params
        self.sim.set_effort_limits(params.effort_limits)
        self.sim.wrench_tolerance = params.wrench_tolerance
        self.run.set_timeouts(command_timeout=params.command_timeout, lockstep_timeout=params.lockstep_timeout)

    # -- saying --------------------------------------------------------------------------------------

    def _reject(self, kind: str, error: Rejected) -> None:
        self._loggers[kind].warning(
            f"{error}; not applied ({self.sim.rejected[kind]} {kind} message(s) rejected so far)",
            throttle_duration_sec=WARN_EVERY,
        )

    def _stale(self, kind: str, topic: str, stamp_ns: int) -> None:
        self._loggers[kind].warning(
            f"ignored a {topic} message stamped {stamp_text(stamp_ns)} while waiting for the one stamped "
            f"{self._expected_text()} ({self.sim.rejected[kind]} stale so far)",
            throttle_duration_sec=WARN_EVERY,
        )

    def _expected_text(self) -> str:
        return f"{stamp_text(self.sim.stamp_ns())} (step {self.sim.steps})"

    # -- inputs ----------------------------------------------------------------------------------------

    def on_commands(self, msg: Float64MultiArray) -> None:
        """Take an ``effort_controller/commands`` message (a servo's: its interface's), values in joint order."""
        try:
            tau = self.sim.command_from_array(msg.data)
        except Rejected as error:
            self._reject(COMMAND, error)
            return
        self.hold(tau, None)

    def on_damaged_command(self, problem: str) -> None:
        """Count and report a command that could not be deserialized."""
        self.sim.rejected[COMMAND] += 1
        self._reject(COMMAND, Rejected(problem))

    def on_joint_command(  # noqa: PLR0917 - the JointState input's fields, handed on
        self, names: Sequence[str], position: Any, velocity: Any, effort: Sequence[float], sec: int, nanosec: int
    ) -> None:
        """Take a ``joint_commands`` message's fields: held (realtime) or paired with its step (lockstep)."""
        try:
            tau = self.sim.command_from_fields(names, position, velocity, effort)
        except Rejected as error:
            self._reject(COMMAND, error)
            return
        stamp_ns = stamp_to_nanoseconds(sec, nanosec)
        if not self.lockstep:
            self.hold(tau, stamp_ns)
        elif self.pairing.offer_command(stamp_ns, tau):
            self._try_step()
        else:
            self._stale(STALE_COMMAND, self.command_sub.topic_name, stamp_ns)

    def hold(self, tau: NDArray[np.float64], stamp_ns: int | None) -> None:
        """Hold ``tau`` as the newest command (stamped ``stamp_ns``, or unstamped) for the next realtime steps."""
        self.sim.hold_command(tau, stamp_ns)
        say(self, self.run.command_arrived(self.now()))

    def on_wrench(self, msg: WrenchStamped) -> None:
        """Take a ``tip_wrench`` message: held (realtime) or paired with its step (lockstep)."""
        wrench = msg.wrench
        try:
            force = self.sim.wrench_force(
                msg.header.frame_id,
                (wrench.force.x, wrench.force.y, wrench.force.z),
                (wrench.torque.x, wrench.torque.y, wrench.torque.z),
            )
        except Rejected as error:
            self._reject(WRENCH, error)
            return
        if not (self.lockstep and self.wait_for_wrench):
            self.sim.hold_force(force)
            return
        stamp_ns = stamp_to_nanoseconds(msg.header.stamp.sec, msg.header.stamp.nanosec)
        if self.pairing.offer_force(stamp_ns, force):
            self._try_step()
        else:
            self._stale(STALE_WRENCH, self.wrench_sub.topic_name, stamp_ns)

    # -- services --------------------------------------------------------------------------------------

    def on_reset(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """Serve ``simulator/reset``: back to the initial state, a new time line."""
        self.sim.reset()
        if self.markers is not None:
            self.markers.clear()
        self.run.reset(self.now())
        if self.run.started:
            self._begin_step()
        response.success = True
        response.message = "reset to the initial state; time restarts at 0"
        self.get_logger().info(response.message)
        return response

    def on_pause(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        """Serve ``simulator/pause``: true pauses, false resumes."""
        now = self.now()
        if request.data:
            self.run.pause(now)
        else:
            self.run.resume(now)
        word = "paused" if self.run.paused else "resumed"
        response.success = True
        stamp = self.sim.stamp_ns()
        response.message = f"{word} at stamp {stamp_text(stamp)} ({stamp} ns, step {self.sim.steps})"
        self.get_logger().info(response.message)
        if not self.run.paused and self.lockstep:
            self._try_step()
        return response

    # -- stepping ----------------------------------------------------------------------------------------

    def publish_state(self) -> None:
        """Publish ``/clock`` and ``tip`` (only while read: they are volatile) and ``joint_states`` (as bytes)."""
        sec, nanosec = self.sim.stamp()
        if self.clock_pub is not None and self.clock_pub.get_subscription_count():
            self._clock_msg.clock.sec, self._clock_msg.clock.nanosec = sec, nanosec
            self.clock_pub.publish(self._clock_msg)
        self.state_pub.publish(self._state_writer.pack(sec, nanosec, *self.sim.published_state()))
        if self.tip_pub.get_subscription_count():
            x, y = self.sim.tip().tolist()
            tip = self._tip_msg
            tip.header.stamp.sec, tip.header.stamp.nanosec = sec, nanosec
            tip.point.x, tip.point.y = x, y
            self.tip_pub.publish(tip)

    def _drawn_state(self) -> tuple[tuple[int, int], Any, Any, Any]:
        return self.sim.stamp(), self.sim.engine.q, self.sim.tip(), self.sim.applied_force

    def _begin_step(self) -> None:
        if self.lockstep:
            self.pairing.expect(self.sim.stamp_ns())
            self.run.awaiting(self.now())
        self.publish_state()

    def _advance(self, tau: NDArray[np.float64] | None, force: Any = None, live: bool = True) -> None:
        """Step to the next published state; publish it unless the run ended (then publish the last one)."""
        if not self.sim.advance(tau, force, live=live):
            say(self, self.run.halted(self.sim.halted))
            return
        said = self.run.stepped(self.now(), self.sim.steps, self.sim.t)
        if self.run.finished:
            self.publish_state()
            say(self, said)
            self.finish(self.run.code or 0)
            return
        self._begin_step()

    def tick(self, due: float | None = None) -> None:
        """Realtime step at the beat's deadline ``due``: apply the held command (zero after a lapse) and force."""
        if not self.run.stepping:
            return
        live, said = self.run.command_live(self.now())
        say(self, said)
        self._advance(None, live=live)

    def _try_step(self) -> None:
        """Lockstep: step when the awaited command (and wrench) are there."""
        if self.run.stepping and self.pairing.ready():
            command, force = self.pairing.take()
            self._advance(command, force)

    def begin(self) -> None:
        """Start the run now, whatever the start condition says, and publish step 0's state."""
        say(self, self.run.start(self.now()))
        self._begin_step()

    def watch(self) -> None:
        """Start once the graph is ready; end a lockstep run whose step waits too long."""
        now = self.now()
        if not self.run.started:
            say(self, self.run.poll_start(now, self.start_missing() if self.run.start_condition else []))
            if self.run.started:
                self._begin_step()
            return
        if self.sim.halted:  # a halted lockstep run waits for a reset, not for a command
            self.run.awaiting(now)
            return
        missing = " and ".join(self.pairing.missing())
        sources = f"a controller answering joint_states on {self.command_sub.topic_name}"
        if self.wait_for_wrench:
            sources += f" and a force source on {self.wrench_sub.topic_name}"
        say(self, self.run.check_wait(now, f"{missing} stamped {self._expected_text()}", sources))
        if self.run.finished:
            self.finish(self.run.code or 1)

    def start_missing(self) -> list[str]:
        """Return what step 0 still waits for: its publishers, and its readers by name (``readers_missing``).

        Every node publishing the commands is a ``joint_states`` reader to wait for when step 0 waits for a controller.
        """
        sub, need = self.command_sub, self._need_controller
        commanding = sorted(publishing_nodes(self, sub.topic_name)) if need and self._direct is None else []
        waits = start_missing(
            sub.get_publisher_count(),
            wrench_publishers=self.wrench_sub.get_publisher_count() if self.wait_for_wrench else None,
            need_controller=need,
            command_topic=sub.topic_name,
            wrench_topic=self.wrench_sub.topic_name,
        )
        states = list(dict.fromkeys([*self.state_readers, *commanding]))
        return (
            waits
            + readers_missing(self, self.state_pub, states)
            + readers_missing(self, self.tip_pub, self.tip_readers)
        )

    # -- the end ------------------------------------------------------------------------------------------

    def stop_report(self) -> str:
        """Return what a stop by a signal says: the run's summary."""
        return f"stopped by a signal; {self.run.summary().text()}"

    def last_publishers(self) -> list[Publisher]:
        """Return the publishers whose reliable readers must take the last messages before the process exits.

        ``joint_states``, ``tip`` and ``/clock``; a process running more nodes (the
        composed graph's controller) adds theirs.
        """
        return [pub for pub in (self.state_pub, self.tip_pub, self.clock_pub) if pub is not None]

    def wrap_up(self) -> int:
        """After the run ended by itself: wait for the readers to take the last states; return the exit code.

        The wait ends when the last reader that had not taken them has (no fixed time),
        after at most :data:`ACK_TIMEOUT` seconds (a reader that never acknowledges: a
        warning, still exit 0), or at a stop request.
        """
        code = super().wrap_up()
        if code == 0:
            self.wait_for_readers(self.last_publishers(), ACK_TIMEOUT, "the last states")
        return code


def main(args: list[str] | None = None) -> int:
    """Run the simulator node until stopped, or until ``duration`` of simulated time has run."""
    return run_node(SimulatorNode, args=args)


if __name__ == "__main__":
    sys.exit(main())
