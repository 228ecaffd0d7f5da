# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The ``simulator`` node: integrates a skelarm arm and publishes its state.

A thin shell around :class:`skelarm_ros.simulation.Simulation`: parameters, topics,
services and the step loop. In ``realtime`` mode a timer steps the arm under the
newest command; in ``lockstep`` mode each step waits for the command stamped with
the state it answers (docs/interfaces.md). See docs/simulator.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

import numpy as np
import rclpy
from builtin_interfaces.msg import Time as TimeMsg
from geometry_msgs.msg import PointStamped, WrenchStamped
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.clock import Clock, ClockType
from rclpy.duration import Duration
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    QoSCompatibility,
    QoSProfile,
    ReliabilityPolicy,
    qos_check_compatible,
)
from rclpy.serialization import deserialize_message
from rclpy.task import Future
from rclpy.utilities import remove_ros_args
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import SetBool, Trigger
from visualization_msgs.msg import MarkerArray

from skelarm_ros.cdr import JointStateLayout, JointStateWriter
from skelarm_ros.conversions import Rejected
from skelarm_ros.interface import (
    BASE_FRAME,
    check_effort_limits,
    check_mode,
    check_non_negative,
    check_positive,
    stamp_to_nanoseconds,
)
from skelarm_ros.markers import SIMULATOR_PARTS, ArmGeometry, Goal, TipTrail, color_rgba, goals_from_config
from skelarm_ros.nodes.marker_msgs import arm_markers
from skelarm_ros.nodes.spinning import node_executor, parameter_problem, spin_until, try_shutdown
from skelarm_ros.scenario import ScenarioError, load_arm
from skelarm_ros.simulation import (
    COMMAND,
    LAPSED,
    RESUMED,
    STALE_COMMAND,
    STALE_WRENCH,
    WRENCH,
    LockstepPairing,
    Simulation,
    lockstep_missing,
)
from skelarm_ros.urdf import skeleton_to_urdf

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from rclpy.publisher import Publisher
    from rclpy.timer import Timer

NODE_NAME = "simulator"
WATCH_PERIOD = 0.02  # s, how often lockstep checks for its controller and its timeout
WARN_EVERY = 2.0  # s, throttle of per-message warnings
START_SETTLE = 0.5  # s the start condition must hold before step 0, while discovery settles
WAIT_REPORT = 5.0  # s, how often a start that waits says what for
STATE_TYPE = "sensor_msgs/msg/JointState"
ACK_TIMEOUT = 10.0  # s, how long a finished run waits for reliable readers to acknowledge
ACK_SLICE = 0.05  # s, the longest one acknowledgement wait lasts before checking for a shutdown

# Reliable keep-all: a slow reliable reader holds the loop back instead of losing steps.
LOCKSTEP_QOS = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
REALTIME_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.RELIABLE)
LATCHED_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST,
    depth=1,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)


def _full_name(namespace: str, name: str) -> str:
    return f"{namespace.rstrip('/')}/{name}"


def _descriptor(description: str, *, read_only: bool = False, low: float | None = None) -> ParameterDescriptor:
    ranges = [] if low is None else [FloatingPointRange(from_value=low, to_value=1e9, step=0.0)]
    return ParameterDescriptor(description=description, read_only=read_only, floating_point_range=ranges)


def _count_descriptor(description: str, high: int) -> ParameterDescriptor:
    """Return a read-only integer parameter descriptor for values from 0 to ``high``."""
    return ParameterDescriptor(
        description=description, read_only=True, integer_range=[IntegerRange(from_value=0, to_value=high, step=1)]
    )


class SimulatorNode(Node):
    """Simulates a skelarm arm and publishes ``joint_states``, ``tip``, ``/clock`` and ``robot_description``.

    Parameters
    ----------
    **kwargs : Any
        Passed on to :class:`rclpy.node.Node` (``context=``, ``parameter_overrides=``...).

    Raises
    ------
    ScenarioError
        If the scenario cannot be read (one sentence naming the file and the problem).
    ValueError
        If a parameter is invalid (one sentence naming it and what is accepted).
    """

    def __init__(self, **kwargs: Any) -> None:
        """Declare the parameters, load the arm and wire topics, services and the step loop."""
        super().__init__(NODE_NAME, **kwargs)
        declare = self.declare_parameter
        scenario = declare(
            "scenario",
            "",
            _descriptor("skelarm scenario or robot TOML (path or bundled name; empty: reach)", read_only=True),
        ).value
        dt = declare("dt", 0.0, _descriptor("integration step in s; 0 takes the scenario's", read_only=True, low=0.0))
        names = declare(
            "joint_names",
            Parameter.Type.STRING_ARRAY,
            _descriptor("joint names in arm order; empty for j1..jN", read_only=True),
        ).value
        self.mode = str(declare("mode", "realtime", _descriptor("realtime or lockstep", read_only=True)).value)
        self.command_interface = str(
            declare(
                "command_interface",
                "commands",
                _descriptor(
                    "commands (Float64MultiArray on effort_controller/commands) or joint_commands "
                    "(JointState by name, effort field)",
                    read_only=True,
                ),
            ).value
        )
        timeout = declare(
            "command_timeout", 0.5, _descriptor("realtime: a command older than this (s) gives zero torque", low=0.0)
        ).value
        limits = declare(
            "effort_limits",
            Parameter.Type.DOUBLE_ARRAY,
            _descriptor("per-joint torque limits (N*m) commands are clamped to; empty for none"),
        ).value
        tolerance = declare(
            "wrench_tolerance",
            1e-6,
            _descriptor("largest tip-wrench force.z / torque accepted as zero", low=0.0),
        ).value
        self.publish_clock = bool(
            declare("publish_clock", True, _descriptor("publish simulated time on /clock", read_only=True)).value
        )
        rtf = declare(
            "real_time_factor",
            1.0,
            _descriptor("realtime: simulated seconds per wall second (timer period dt/rtf)", read_only=True, low=0.0),
        ).value
        self.lockstep_timeout = check_positive(
            "lockstep_timeout",
            declare(
                "lockstep_timeout",
                5.0,
                _descriptor("lockstep: longest wait (s) for a step's command (and wrench) before failing", low=0.0),
            ).value,
        )
        self.duration = check_non_negative(
            "duration",
            declare(
                "duration", 0.0, _descriptor("simulated seconds to run, 0 until stopped", read_only=True, low=0.0)
            ).value,
        )
        self.wait_for_wrench = bool(
            declare(
                "wait_for_wrench",
                False,
                _descriptor("lockstep: also wait for the tip_wrench stamped with each step's time", read_only=True),
            ).value
        )
        self.min_subscribers = int(
            declare(
                "min_subscribers",
                0,
                _count_descriptor(
                    "joint_states readers to wait for before step 0 (controller, recorder, ...); "
                    "lockstep waits for at least one",
                    1000,
                ),
            ).value
        )
        self.wait_for_controller = bool(
            declare(
                "wait_for_controller",
                False,
                _descriptor(
                    "realtime: publish step 0 only once a controller publishes commands (lockstep always waits)",
                    read_only=True,
                ),
            ).value
        )
        self.thread_priority = int(
            declare(
                "thread_priority",
                0,
                _count_descriptor(
                    "SCHED_FIFO priority (1-99) for every thread of the process, if permitted; "
                    "0 leaves the scheduler alone",
                    99,
                ),
            ).value
        )
        markers_rate = declare(
            "markers_rate",
            30.0,
            _descriptor("rate (Hz, wall time) of the markers for rviz; 0 turns them off", read_only=True, low=0.0),
        ).value
        check_mode(self.mode, self.command_interface)
        rtf = check_positive("real_time_factor", rtf, "simulated s per wall s")
        arm = load_arm(scenario or None)
        self.sim = Simulation(
            arm,
            names or [],
            dt=dt.value,
            command_timeout=timeout,
            effort_limits=limits or [],
            wrench_tolerance=tolerance,
        )
        self.lockstep = self.mode == "lockstep"
        self.pairing = LockstepPairing(self.wait_for_wrench, self.sim.rejected)
        self.last_step = round(self.duration / self.sim.dt) if self.duration > 0.0 else None
        self.finished: Future = Future()
        self.state_listeners: list[Callable[[SimulatorNode, tuple[int, int]], None]] = []
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._loggers = {
            kind: self.get_logger().get_child(kind.replace(" ", "_"))
            for kind in (COMMAND, WRENCH, STALE_COMMAND, STALE_WRENCH)
        }
        self.add_on_set_parameters_callback(self._on_set_parameters)

        qos = LOCKSTEP_QOS if self.lockstep else REALTIME_QOS
        self.state_pub = self.create_publisher(JointState, "joint_states", qos)
        self.tip_pub = self.create_publisher(PointStamped, "tip", qos)
        self.clock_pub = self.create_publisher(ClockMsg, "/clock", qos) if self.publish_clock else None
        self.description_pub = self.create_publisher(String, "robot_description", LATCHED_QOS)
        if self.command_interface == "commands":
            self.command_sub = self.create_subscription(
                Float64MultiArray, "effort_controller/commands", self._on_commands, qos
            )
        else:
            # Raw: the commands' bytes are read directly (skelarm_ros.cdr), without rclpy's message conversion.
            self.command_sub = self.create_subscription(
                JointState, "joint_commands", self._on_joint_commands_bytes, qos, raw=True
            )
            self._command_layout = JointStateLayout()
        self.wrench_sub = self.create_subscription(WrenchStamped, "tip_wrench", self._on_wrench, qos)
        self.create_service(Trigger, "simulator/reset", self._on_reset)
        self.create_service(SetBool, "simulator/pause", self._on_pause)

        joints = self.sim.num_joints
        self._state_writer = JointStateWriter(self.sim.joint_names, (joints, joints, joints))
        self._tip_msg = PointStamped()
        self._tip_msg.header.frame_id = BASE_FRAME
        self._clock_msg = ClockMsg()
        self.description_pub.publish(
            String(data=skeleton_to_urdf(arm.skeleton, self.sim.joint_names, effort_limits=limits or None))
        )

        self.marker_pub: Publisher | None = None
        if markers_rate > 0.0:
            self._marker_arm = ArmGeometry.from_skeleton(arm.skeleton)
            self._trail = TipTrail()
            self._goal = next((goal for goal in goals_from_config(arm.config) if goal.active), None)
            self.marker_pub = self.create_publisher(MarkerArray, "markers", 10)
            self.create_subscription(PointStamped, "target", self._on_target, 10)
            self.create_timer(1.0 / markers_rate, self.publish_markers, clock=self._steady)

        self.started = False
        self._run_start = 0.0
        self._ready_since: float | None = None
        self._wait_since = 0.0
        self._told_halt = False
        self._step_timer: Timer
        if self.lockstep:
            self._step_timer = self.create_timer(WATCH_PERIOD, self._watch, clock=self._steady)
            self.get_logger().info("lockstep: waiting for a controller (a publisher on joint_commands)")
        else:
            self._step_timer = self.create_timer(self.sim.dt / rtf, self.tick, clock=self._steady)
        self.get_logger().info(
            f"simulating {self.sim.num_joints} joints {self.sim.joint_names} from '{arm.path}' "
            f"at dt={self.sim.dt} s in {self.mode} mode"
        )

    # -- parameters ------------------------------------------------------------------------------

    def _on_set_parameters(self, parameters: list[Parameter]) -> SetParametersResult:
        """Validate tunable parameters and apply them live (all or none)."""
        updates: dict[str, Any] = {}
        try:
            for parameter in parameters:
                if parameter.name == "command_timeout":
                    updates["command_timeout"] = check_positive("command_timeout", parameter.value)
                elif parameter.name == "effort_limits":
                    updates["effort_limits"] = check_effort_limits(parameter.value or [], self.sim.num_joints)
                elif parameter.name == "wrench_tolerance":
                    updates["wrench_tolerance"] = check_non_negative("wrench_tolerance", parameter.value, "N or N*m")
                elif parameter.name == "lockstep_timeout":
                    updates["lockstep_timeout"] = check_positive("lockstep_timeout", parameter.value)
        except (TypeError, ValueError) as error:
            return SetParametersResult(successful=False, reason=str(error))
        for name, value in updates.items():
            setattr(self if name == "lockstep_timeout" else self.sim, name, value)
        return SetParametersResult(successful=True)

    # -- inputs ----------------------------------------------------------------------------------

    def _reject(self, kind: str, error: Rejected) -> None:
        self._loggers[kind].warning(
            f"{error}; not applied ({self.sim.rejected[kind]} {kind} message(s) rejected so far)",
            throttle_duration_sec=WARN_EVERY,
        )

    def _stale(self, kind: str, topic: str, sec: int, nanosec: int) -> None:
        self._loggers[kind].warning(
            f"ignored a {topic} message stamped {sec}.{nanosec:09d} s while waiting for the one stamped "
            f"{self._expected_text()} ({self.sim.rejected[kind]} stale so far)",
            throttle_duration_sec=WARN_EVERY,
        )

    def _hold(self, tau: np.ndarray, stamp_ns: int | None = None) -> None:
        if self.sim.hold_command(tau, self.get_clock().now().nanoseconds * 1e-9, stamp_ns) == RESUMED:
            self.get_logger().info("commands resumed; applying them again")

    def _on_commands(self, msg: Float64MultiArray) -> None:
        try:
            tau = self.sim.command_from_array(msg.data)
        except Rejected as error:
            self._reject(COMMAND, error)
            return
        self._hold(tau)

    def _on_joint_commands_bytes(self, data: bytes) -> None:
        """Take a serialized ``joint_commands`` message: read directly when of the known layout, else decoded."""
        layout = self._command_layout
        values = layout.values(data)
        if values is not None:
            start = 2 + layout.counts[0] + layout.counts[1]
            self._command(layout.names, values[start : start + layout.counts[2]], values[0], values[1])
            return
        try:
            msg = deserialize_message(data, JointState)
        except Exception as error:  # rclpy raises several types on damaged bytes
            self.sim.rejected[COMMAND] += 1
            self._reject(COMMAND, Rejected(f"a joint_commands message could not be deserialized ({error})"))
            return
        layout.learn(data, msg)
        self._on_joint_commands(msg)

    def _on_joint_commands(self, msg: JointState) -> None:
        stamp = msg.header.stamp
        self._command(msg.name, msg.effort, stamp.sec, stamp.nanosec)

    def _command(self, names: Sequence[str], efforts: Sequence[float], sec: int, nanosec: int) -> None:
        try:
            tau = self.sim.command_from_joint_state(names, efforts)
        except Rejected as error:
            self._reject(COMMAND, error)
            return
        if not self.lockstep:
            self._hold(tau, stamp_to_nanoseconds(sec, nanosec))
            return
        if not self.pairing.offer_command(stamp_to_nanoseconds(sec, nanosec), tau):
            self._stale(STALE_COMMAND, "joint_commands", sec, nanosec)
            return
        self._try_step()

    def _on_wrench(self, msg: WrenchStamped) -> None:
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
        stamp = msg.header.stamp
        if not self.pairing.offer_force(stamp_to_nanoseconds(stamp.sec, stamp.nanosec), force):
            self._stale(STALE_WRENCH, "tip_wrench", stamp.sec, stamp.nanosec)
            return
        self._try_step()

    # -- services --------------------------------------------------------------------------------

    def _on_reset(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self.sim.reset()
        if self.marker_pub is not None:
            self._trail.clear()
        self._told_halt = False
        if not self.lockstep or self.started:
            self._begin_step()
        response.success = True
        response.message = "reset to the initial state; time restarts at 0"
        self.get_logger().info(response.message)
        return response

    def _on_pause(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        sec, nanosec = self.sim.stamp()
        self.sim.paused = bool(request.data)
        word = "paused" if self.sim.paused else "resumed"
        response.success = True
        response.message = f"{word} at stamp {sec}.{nanosec:09d} s ({self.sim.stamp_ns()} ns, step {self.sim.steps})"
        self.get_logger().info(response.message)
        if not self.sim.paused and self.lockstep and self.started:
            self._wait_since = self._now()
            self._try_step()
        return response

    # -- stepping --------------------------------------------------------------------------------

    def _now(self) -> float:
        return time.monotonic()  # the steady clock, without building an rclpy Time per step

    def publish_state(self) -> None:
        """Publish ``/clock`` (when enabled), ``joint_states`` and ``tip`` for the present state.

        ``joint_states`` goes out as bytes written by :class:`skelarm_ros.cdr.JointStateWriter`
        (what rclpy would serialize, without building a message). ``/clock`` and ``tip``
        are published only while someone reads them: with volatile durability a message
        nobody reads is dropped anyway, and a reader that joins gets the next one.
        Afterwards each function in :attr:`state_listeners` is called with the node and
        the state's stamp, so other outputs (markers) can be added without changing this.
        """
        sec, nanosec = self.sim.stamp()
        engine = self.sim.engine
        if self.clock_pub is not None and self.clock_pub.get_subscription_count():
            self._clock_msg.clock.sec, self._clock_msg.clock.nanosec = sec, nanosec
            self.clock_pub.publish(self._clock_msg)
        self.state_pub.publish(
            self._state_writer.pack(sec, nanosec, engine.q_list, engine.dq_list, self.sim.effort.tolist())
        )
        if self.tip_pub.get_subscription_count():
            x, y = self.sim.tip().tolist()
            tip = self._tip_msg
            tip.header.stamp.sec, tip.header.stamp.nanosec = sec, nanosec
            tip.point.x, tip.point.y = x, y
            self.tip_pub.publish(tip)
        for listener in self.state_listeners:
            listener(self, (sec, nanosec))

    def _on_target(self, msg: PointStamped) -> None:
        """Show a live reaching goal (the controller follows ``target``) instead of the scenario's."""
        position = np.array([msg.point.x, msg.point.y])
        if msg.header.frame_id in ("", BASE_FRAME) and np.isfinite(position).all():
            tolerance = None if self._goal is None else self._goal.tolerance
            color = "purple" if self._goal is None else self._goal.color
            self._goal = Goal(position, color, tolerance)

    def publish_markers(self) -> None:
        """Publish the arm, its tip path, the scenario's target and the applied tip force as markers."""
        if self.marker_pub is None or self.marker_pub.get_subscription_count() == 0:
            return
        sec, nanosec = self.sim.stamp()
        self._trail.append(self.sim.tip())
        goal = self._goal
        self.marker_pub.publish(
            arm_markers(
                self._marker_arm,
                self.sim.engine.q,
                TimeMsg(sec=sec, nanosec=nanosec),
                trail=self._trail,
                force=self.sim.applied_force,
                target=None if goal is None else goal.position,
                tolerance=None if goal is None else goal.tolerance,
                target_color=None if goal is None else color_rgba(goal.color),
                parts=SIMULATOR_PARTS,
            )
        )

    def _begin_step(self) -> None:
        if self.lockstep:
            self.pairing.expect(self.sim.stamp_ns())
            self._wait_since = self._now()
        self.publish_state()

    def _say_halted(self) -> None:
        if not self._told_halt:
            self._told_halt = True
            self.get_logger().error(self.sim.halted)

    def _after_step(self) -> bool:
        """Publish the new state; return whether the run goes on."""
        if self.last_step is not None and self.sim.steps >= self.last_step:
            self.publish_state()
            self.get_logger().info(self.run_summary() + "; stopping")
            self.finish(0)
            return False
        self._begin_step()
        return True

    def run_summary(self) -> str:
        """One sentence on the run so far: steps, simulated and wall time, rate, and (realtime) answered commands.

        The wall time runs from the first published state to now, so ``steps / wall``
        is the loop's rate.
        """
        wall = time.perf_counter() - self._run_start if self.started else 0.0
        rate = f"{self.sim.steps / wall:.0f}" if wall > 0.0 else "-"
        text = f"ran {self.sim.steps} steps ({self.sim.t:.6g} s simulated) in {wall:.6g} s wall time ({rate} steps/s)"
        if not self.lockstep and self.sim.answered.total:
            text += f"; {self.sim.answered.summary()}"
        return text

    def _start_run(self) -> None:
        self.started = True
        self._run_start = time.perf_counter()

    def tick(self) -> None:
        """Realtime step: apply the held command (or zero) and the held force, step, publish."""
        if self.finished.done():
            return
        if not self.started:
            if (self.min_subscribers == 0 and not self.wait_for_controller) or self._ready_to_start():
                self._start_run()
                self.publish_state()
            return
        if self.sim.paused:
            return
        if self.sim.halted:
            self._say_halted()
            return
        tau, event = self.sim.held_command(self.get_clock().now().nanoseconds * 1e-9)
        if event == LAPSED:
            self.get_logger().warning(
                f"no effort command for over command_timeout={self.sim.command_timeout} s; "
                "applying zero torque until commands resume"
            )
        if self.sim.advance(tau):
            self._after_step()
        else:
            self._say_halted()

    def _try_step(self) -> None:
        """Lockstep: step when the awaited command (and wrench) are there, then publish the next state."""
        if not self.started or self.sim.paused or self.finished.done() or not self.pairing.ready():
            return
        command, force = self.pairing.take()
        if self.sim.advance(command, force):
            self._after_step()
        else:
            self._say_halted()

    def _lockstep_missing(self) -> list[str]:
        """Return what lockstep waits for before step 0 (:func:`skelarm_ros.simulation.lockstep_missing`).

        Only ``joint_states`` readers that can match the publisher count: a reader of
        another type or with an incompatible QoS (transient local, say) is never matched
        and must not hold the start back forever.
        """
        topic = self.state_pub.topic_name
        me = (self.get_namespace(), self.get_name())
        # The publisher's QoS as the graph states it (defaults resolved), once it is there.
        own = next(
            (
                info.qos_profile
                for info in self.get_publishers_info_by_topic(topic)
                if (info.node_namespace, info.node_name) == me
            ),
            None,
        )
        readers = [
            _full_name(info.node_namespace, info.node_name)
            for info in self.get_subscriptions_info_by_topic(topic)
            if info.topic_type == STATE_TYPE
            and (own is None or qos_check_compatible(own, info.qos_profile)[0] != QoSCompatibility.ERROR)
        ]
        commanding = {
            _full_name(info.node_namespace, info.node_name)
            for info in self.get_publishers_info_by_topic(self.command_sub.topic_name)
        }
        return lockstep_missing(
            self.command_sub.get_publisher_count(),
            commanding,
            readers,
            self.state_pub.get_subscription_count(),
            wrench_publishers=self.wrench_sub.get_publisher_count() if self.wait_for_wrench else None,
            min_readers=self.min_subscribers,
            need_controller=self.lockstep or self.wait_for_controller,
            command_topic=self.command_sub.topic_name,
        )

    def _ready_to_start(self) -> bool:
        """Whether step 0 can go out: nothing missing (see :meth:`_lockstep_missing`) for START_SETTLE s."""
        waiting = self._lockstep_missing()
        if waiting:
            self._ready_since = None
            self.get_logger().info(
                f"{self.mode}: still waiting for {'; '.join(waiting)}", throttle_duration_sec=WAIT_REPORT
            )
            return False
        if self._ready_since is None:
            self._ready_since = self._now()  # the graph may still be filling in: let it settle
            return False
        return self._now() - self._ready_since >= START_SETTLE

    def _expected_text(self) -> str:
        expected = self.sim.stamp_ns()
        return f"{expected // 1_000_000_000}.{expected % 1_000_000_000:09d} s (step {self.sim.steps})"

    def _watch(self) -> None:
        """Lockstep: start once a controller is there; fail when a step waits too long."""
        if self.finished.done():
            return
        if not self.started:
            if self._ready_to_start():
                self._start_run()
                self.get_logger().info("lockstep: controller present; starting")
                self._begin_step()
            return
        if self.sim.paused or self.sim.halted:
            self._wait_since = self._now()
            return
        if self._now() - self._wait_since > self.lockstep_timeout:
            missing = " and ".join(self.pairing.missing())
            self.get_logger().error(
                f"lockstep: no {missing} stamped {self._expected_text()} arrived within "
                f"lockstep_timeout={self.lockstep_timeout} s; is a controller answering joint_states on "
                f"joint_commands{' and a force source on tip_wrench' if self.wait_for_wrench else ''}? stopping"
            )
            self.finish(1)

    def finish(self, code: int) -> None:
        """End the run with an exit code (the first call wins); ``main`` then exits."""
        if not self.finished.done():
            self._step_timer.cancel()
            self.finished.set_result(code)

    def wait_for_readers(self, timeout: float = ACK_TIMEOUT) -> bool:
        """Block until every reliable reader acknowledged every published state (after a run).

        Waits in slices of :data:`ACK_SLICE`, so a shutdown (SIGINT, SIGTERM) ends the
        wait at once; returns ``False`` then, or when ``timeout`` (s, in all) passes.
        """
        pending: list[Publisher] = [self.state_pub, self.tip_pub]
        if self.clock_pub is not None:
            pending.append(self.clock_pub)
        deadline = time.monotonic() + timeout
        piece = Duration(seconds=ACK_SLICE)
        while pending:
            if not self.context.ok() or time.monotonic() > deadline:
                return False
            pending = [pub for pub in pending if not pub.wait_for_all_acked(piece)]
        return True


def main(args: list[str] | None = None) -> int:
    """Run the simulator node until stopped, or until ``duration`` of simulated time has run.

    SIGINT and SIGTERM end it promptly with exit code 0 at any point after start-up,
    including while a finished run waits for its readers' acknowledgements.
    """
    argv = remove_ros_args(sys.argv if args is None else args)
    argparse.ArgumentParser(
        prog=NODE_NAME, description="skelarm_ros simulator; set parameters with --ros-args -p name:=value"
    ).parse_args(argv[1:])
    rclpy.init(args=sys.argv if args is None else args)
    node: SimulatorNode | None = None
    try:
        try:
            node = SimulatorNode()
        except (ScenarioError, ValueError) as error:
            rclpy.logging.get_logger(NODE_NAME).error(str(error))
            return 1
        except ParameterException as error:
            rclpy.logging.get_logger(NODE_NAME).error(parameter_problem(error, "docs/simulator.md"))
            return 1
        executor = node_executor(node, node.thread_priority)
        if not spin_until(node, executor, node.finished):
            summary = node.run_summary()
            node.destroy_node()  # first, so the line below goes to the console only (the context is shut down)
            node = None
            rclpy.logging.get_logger(NODE_NAME).info(f"stopped by a signal; {summary}")
            return 0
        code = int(node.finished.result() or 0)
        if code == 0 and not node.wait_for_readers():
            if not node.context.ok():
                return 0
            node.get_logger().warning(f"not every reader acknowledged the last states within {ACK_TIMEOUT} s")
        executor.remove_node(node)
        return code
    except (KeyboardInterrupt, ExternalShutdownException):
        return 0
    finally:
        if node is not None:
            node.destroy_node()
        try_shutdown()


if __name__ == "__main__":
    sys.exit(main())
