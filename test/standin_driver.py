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
  (s since the first state) and the torques in the arm's joint order;
- ``delay`` (s): a command acts ``delay`` after the driver's newest state when it arrived
  (a driver takes commands at its ticks: one arriving after the next tick's state acts a
  tick later), at the arm's own step; 0: from the next step integrated;
- ``position_noise`` / ``velocity_noise`` (rad, rad/s), ``encoder_ticks`` (per revolution),
  ``seed``: Gaussian noise on the published angles and velocities, angles quantised to whole
  encoder ticks; ``effort:=true`` publishes the motors' mean torque over each period, with
  ``effort_noise`` (N*m);
- ``brakes:=true``: the arm is held where it starts until the first command (a vertical arm
  does not fall while the effort controller starts);
- ``thread_priority`` (1-99): its threads under SCHED_FIFO, as a real driver's loop runs, where
  the user may (a driver on a loaded machine otherwise misses its ticks).

Inside, the arm is :class:`skelarm_ros.sim.engine.ArmEngine` of the scenario's robot,
stepped at the scenario's ``dt``, or, with ``engine:=mujoco``, the scenario's arm with its
masses, centres of mass and inertias off (test/geared_arm.py's ``true_arm``, ``arm_seed``),
four-joint drives' armature and friction (``TRUE_DRIVE``) and the scenario's gravity,
integrated by MuJoCo (RK4 at 0.5 ms). Either is stepped to keep up with the wall clock (a
physical arm does not wait for its driver's timer).

``python test/standin_driver.py --ros-args -r __ns:=/arm1 -p arm_joints:="[shoulder, elbow]"
-p joints:="[elbow, shoulder]"``
"""

from __future__ import annotations

import sys
from collections import deque

import numpy as np
import rclpy
from rclpy.clock import Clock, ClockType
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from skelarm_ros.nodes.spinning import set_thread_priority, spin_until, try_shutdown
from skelarm_ros.sim.engine import ArmEngine
from skelarm_ros.sim.scenario import load_arm

MAX_CATCH_UP = 0.1  # s of the arm's time per tick at most, so a stalled process does not integrate a long gap at once


class EngineArm:
    """The scenario's arm on the package's engine: ``step(tau)`` advances ``dt`` and returns the torque applied."""

    def __init__(self, arm, offset: np.ndarray) -> None:
        self.engine = ArmEngine(arm.skeleton, arm.dt, grav_vec=arm.grav_vec, enforce_limits=arm.enforce_limits)
        if len(offset):
            self.engine.set_state(self.engine.q + offset, self.engine.dq)
        self.dt = arm.dt
        self.t = 0.0

    @property
    def q(self) -> np.ndarray:
        return self.engine.q

    @property
    def dq(self) -> np.ndarray:
        return self.engine.dq

    def step(self, tau: np.ndarray) -> np.ndarray:
        self.engine.step(tau)
        self.t += self.dt
        return tau


class MujocoArm:
    """The scenario's arm made real in MuJoCo (test/geared_arm.py): other masses, drives, another integrator."""

    def __init__(self, arm, offset: np.ndarray, seed: int) -> None:
        from geared_arm import SIM_STEP, TRUE_DRIVE, GearedArm, true_arm

        from skelarm_ros.sim.scenario import JointDrive

        drive = TRUE_DRIVE if arm.num_joints == TRUE_DRIVE.num_joints else JointDrive.ideal(arm.num_joints)
        self.mujoco = GearedArm(true_arm(seed, arm.skeleton), drive)
        self.mujoco.model.opt.gravity[:2] = arm.grav_vec
        self.mujoco.reset(arm.skeleton.q + offset if len(offset) else arm.skeleton.q)
        self.dt = SIM_STEP
        self.t = 0.0

    @property
    def q(self) -> np.ndarray:
        return self.mujoco.data.qpos.copy()

    @property
    def dq(self) -> np.ndarray:
        return self.mujoco.data.qvel.copy()

    def step(self, tau: np.ndarray) -> np.ndarray:
        self.t += self.dt
        return self.mujoco.step(tau)


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
        self.delay = float(self.declare_parameter("delay", 0.0).value)
        noise = [float(self.declare_parameter(name, 0.0).value) for name in ("position_noise", "velocity_noise")]
        self.noise = np.array(noise)
        ticks = int(self.declare_parameter("encoder_ticks", 0).value)
        self.encoder = 2.0 * np.pi / ticks if ticks else 0.0
        self.rng = np.random.default_rng(int(self.declare_parameter("seed", 0).value))
        self.effort = bool(self.declare_parameter("effort", False).value)
        self.effort_noise = float(self.declare_parameter("effort_noise", 0.0).value)
        self.braked = bool(self.declare_parameter("brakes", False).value)
        arm = load_arm(scenario or None)
        assert len(arm_joints) == arm.num_joints and sorted(joints) == sorted(arm_joints)
        if self.declare_parameter("engine", "pinocchio").value == "mujoco":
            self.arm = MujocoArm(arm, offset, int(self.declare_parameter("arm_seed", 4).value))
        else:
            self.arm = EngineArm(arm, offset)
        self.pending: deque[tuple[float, np.ndarray]] = deque()  # (the arm's time it acts from, command)
        self.applied = np.zeros(arm.num_joints)
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
        tau = np.zeros(len(self.arm_joints))
        for name, value in zip(self.joints, msg.data, strict=True):
            tau[self.arm_joints.index(name)] = value
        self._took(tau)

    def _took(self, tau: np.ndarray) -> None:
        now = (self._wall.now().nanoseconds - self._origin_ns) * 1e-9
        if self._first_command is None:
            self._first_command = now
        self.received.append((now, tau.tolist()))
        self.pending.append((self.arm.t + self.delay, tau))  # the arm's time of the newest state, plus the delay

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
        self._took(np.array([efforts[name] for name in self.arm_joints]))

    def _tick(self) -> None:
        elapsed = (self._wall.now().nanoseconds - self._origin_ns) * 1e-9
        arm, steps, torque = self.arm, 0, 0.0
        start = arm.t
        while arm.t + arm.dt <= elapsed and arm.t - start < MAX_CATCH_UP:
            while self.pending and self.pending[0][0] <= arm.t:  # due: it arrived a delay ago
                self.tau = self.pending.popleft()[1]
                self.braked = False
            if self.braked:  # held where it is, the time going on
                arm.t += arm.dt
            else:
                torque += arm.step(self.tau)
            steps += 1
        if steps == 0:  # no new state since the last one: a driver publishes each state once
            return
        self.applied = np.zeros(len(self.arm_joints)) + torque / steps  # the motors' mean torque (zero braked)
        if arm.t - start >= MAX_CATCH_UP:  # fell behind: the arm does not replay the gap
            arm.t = elapsed
        if self.gap > 0.0 and self._first_command is not None:
            silent = self._first_command + self.gap_at
            if silent <= elapsed < silent + self.gap:  # a hung bus: the arm moves on, nothing is published
                return
        gripper = [0.02] * len(self.gripper), [0.0] * len(self.gripper)
        stamp_ns = self._origin_ns + round(arm.t * 1e9)
        q, dq = (value + self._noise(sigma) for value, sigma in zip((arm.q, arm.dq), self.noise, strict=True))
        if self.encoder:
            q = np.round(q / self.encoder) * self.encoder
        msg = JointState(
            name=self.published,
            position=gripper[0] + q[self._out].tolist(),
            velocity=gripper[1] + dq[self._out].tolist(),
        )
        if self.effort:
            effort = self.applied + self._noise(self.effort_noise)
            msg.effort = [0.0] * len(self.gripper) + effort[self._out].tolist()
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
        self.state_pub.publish(msg)

    def _noise(self, sigma: float) -> np.ndarray | float:
        """Gaussian noise of ``sigma`` per joint; nothing drawn for none."""
        return sigma * self.rng.standard_normal(len(self.arm_joints)) if sigma else 0.0


def main() -> int:
    rclpy.init()
    node = StandInDriver()
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    set_thread_priority(node, int(node.declare_parameter("thread_priority", 0).value))
    spin_until(node, executor)  # ends cleanly on SIGINT / SIGTERM
    node.write_commands()
    node.destroy_node()
    try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
