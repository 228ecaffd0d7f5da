"""A stand-in for a real arm's ros2_control driver, for the hardware-swap tests (not shipped).

It behaves as a robot with a joint state broadcaster and an effort controller would:

- ``joint_states`` (sensor_msgs/JointState) with the driver's own joint names in its own
  order (the arm's joints reversed), ``position`` and ``velocity`` present, ``effort``
  absent, stamped with the wall clock, at its own rate (parameter ``rate``, 500 Hz) on a
  wall timer;
- ``reliability:=best_effort`` publishes and subscribes best effort (sensor-data QoS);
- ``command_interface:=commands``: takes ``effort_controller/commands``
  (std_msgs/Float64MultiArray) in the order of its ``joints`` parameter, as
  ``JointGroupEffortController`` does; ``command_interface:=joint_commands``: takes
  stamped ``joint_commands`` (sensor_msgs/JointState, ``effort`` by name), the
  topic_based_ros2_control convention. The newest command is held;
- ``gripper:=name`` adds a joint that is not the arm's (first in its states, never commanded);
- ``offset`` (degrees per joint) starts the arm that far from the scenario's initial pose;
- ``gap_at`` / ``gap`` (seconds): that long after the first command, no joint state is
  published for ``gap`` seconds (a hung bus), while the arm goes on under the held command;
- ``commands_after`` (seconds): commands are taken only that long after the states start
  (ros2_control spawns the effort controller after the joint state broadcaster);
- ``commands_log:=path`` writes, at exit, one line per command received: the wall time
  (s since the first state) and the torques in the arm's joint order.

Inside, the arm is :class:`skelarm_ros.sim.engine.ArmEngine` of the scenario's robot,
stepped at the scenario's ``dt`` to keep up with the wall clock (a physical arm does
not wait for its driver's timer).

``python test/standin_driver.py --ros-args -r __ns:=/arm1 -p arm_joints:="[shoulder, elbow]"
-p joints:="[elbow, shoulder]"``
"""

from __future__ import annotations

import sys

import numpy as np
import rclpy
from rclpy.clock import Clock, ClockType
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from skelarm_ros.nodes.spinning import spin_until, try_shutdown
from skelarm_ros.sim.engine import ArmEngine
from skelarm_ros.sim.scenario import load_arm

MAX_CATCH_UP = 50  # steps per tick at most, so a stalled process does not integrate a long gap at once


class StandInDriver(Node):
    """A ros2_control-like driver around the Pinocchio arm."""

    def __init__(self) -> None:
        super().__init__("driver")
        scenario = self.declare_parameter("scenario", "").value
        arm_joints = list(self.declare_parameter("arm_joints", ["shoulder", "elbow"]).value)
        joints = list(self.declare_parameter("joints", Parameter.Type.STRING_ARRAY).value or arm_joints)
        self.interface = self.declare_parameter("command_interface", "commands").value
        rate = float(self.declare_parameter("rate", 500.0).value)
        gripper = str(self.declare_parameter("gripper", "").value)
        offset = np.radians(list(self.declare_parameter("offset", Parameter.Type.DOUBLE_ARRAY).value or []))
        self.gap_at = float(self.declare_parameter("gap_at", 0.0).value)
        self.gap = float(self.declare_parameter("gap", 0.0).value)
        self.commands_log = str(self.declare_parameter("commands_log", "").value)
        # best_effort: sensor-data QoS, as many real arms' drivers and simulators' bridges publish
        reliable = self.declare_parameter("reliability", "reliable").value == "reliable"
        arm = load_arm(scenario or None)
        assert len(arm_joints) == arm.num_joints and sorted(joints) == sorted(arm_joints)
        self.engine = ArmEngine(arm.skeleton, arm.dt, grav_vec=arm.grav_vec, enforce_limits=arm.enforce_limits)
        if len(offset):
            self.engine.set_state(self.engine.q + offset, self.engine.dq)
        self.arm_joints = arm_joints
        self.joints = joints
        self.gripper = [gripper] if gripper else []
        self.published = self.gripper + list(reversed(arm_joints))  # its own order, not the arm's
        self._out = [arm_joints.index(name) for name in self.published[len(self.gripper) :]]
        self.received: list[tuple[float, list[float]]] = []
        self._first_command: float | None = None
        self.tau = np.zeros(arm.num_joints)
        self.ignored = 0
        self._wall = Clock(clock_type=ClockType.SYSTEM_TIME)
        self._origin_ns = self._wall.now().nanoseconds
        qos = QoSProfile(
            depth=10, reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT
        )
        self.state_pub = self.create_publisher(JointState, "joint_states", qos)
        self._qos = qos
        commands_after = float(self.declare_parameter("commands_after", 0.0).value)
        if commands_after > 0.0:  # as ros2_control spawns the effort controller after the state broadcaster
            self._later = self.create_timer(
                commands_after, self._subscribe, clock=Clock(clock_type=ClockType.STEADY_TIME)
            )
        else:
            self._subscribe()
        self.create_timer(1.0 / rate, self._tick, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.get_logger().info(
            f"stand-in driver: joints {joints}, publishing {self.published}, {self.interface} at {rate} Hz"
        )

    def _subscribe(self) -> None:
        """Take commands from now on (the effort controller is active)."""
        if self.interface == "joint_commands":
            self.create_subscription(JointState, "joint_commands", self._on_joint_commands, self._qos)
        else:
            self.create_subscription(Float64MultiArray, "effort_controller/commands", self._on_commands, self._qos)
        if hasattr(self, "_later"):
            self._later.cancel()

    def _on_commands(self, msg: Float64MultiArray) -> None:
        if len(msg.data) != len(self.joints) or not np.isfinite(msg.data).all():
            self.ignored += 1
            return
        for name, value in zip(self.joints, msg.data, strict=True):
            self.tau[self.arm_joints.index(name)] = value
        self._took()

    def _took(self) -> None:
        now = (self._wall.now().nanoseconds - self._origin_ns) * 1e-9
        if self._first_command is None:
            self._first_command = now
        self.received.append((now, self.tau.tolist()))

    def write_commands(self) -> None:
        """Write the commands received, one line each: wall seconds, then the torques in arm order."""
        if self.commands_log:
            lines = (" ".join(repr(value) for value in (at, *tau)) for at, tau in self.received)
            with open(self.commands_log, "w", encoding="utf-8") as stream:
                stream.write("\n".join(lines) + "\n")

    def _on_joint_commands(self, msg: JointState) -> None:
        efforts = dict(zip(msg.name, msg.effort, strict=False))
        if sorted(efforts) != sorted(self.arm_joints) or not np.isfinite(list(efforts.values())).all():
            self.ignored += 1
            return
        self.tau = np.array([efforts[name] for name in self.arm_joints])
        self._took()

    def _tick(self) -> None:
        elapsed = (self._wall.now().nanoseconds - self._origin_ns) * 1e-9
        steps = 0
        while self.engine.t + self.engine.dt <= elapsed and steps < MAX_CATCH_UP:
            self.engine.step(self.tau)
            steps += 1
        if steps == 0:  # no new state since the last one: a driver publishes each state once
            return
        if steps == MAX_CATCH_UP:  # fell behind: the arm does not replay the gap
            self.engine.set_state(self.engine.q, self.engine.dq, elapsed)
        if self.gap > 0.0 and self._first_command is not None:
            silent = self._first_command + self.gap_at
            if silent <= elapsed < silent + self.gap:  # a hung bus: the arm moves on, nothing is published
                return
        gripper = [0.02] * len(self.gripper), [0.0] * len(self.gripper)
        stamp_ns = self._origin_ns + round(self.engine.t * 1e9)
        msg = JointState(
            name=self.published,
            position=gripper[0] + self.engine.q[self._out].tolist(),
            velocity=gripper[1] + self.engine.dq[self._out].tolist(),
        )
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
        self.state_pub.publish(msg)


def main() -> int:
    rclpy.init()
    node = StandInDriver()
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    spin_until(node, executor)  # ends cleanly on SIGINT / SIGTERM
    node.write_commands()
    node.destroy_node()
    try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
