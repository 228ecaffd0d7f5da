"""A stand-in for a real arm's ros2_control driver (effort, or a servo arm's position or velocity), for hardware tests.

Not shipped.

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
- ``interface:=position`` (or ``velocity``) makes it a servo arm's driver: each joint a servo
  whose firmware runs a PD ``servo_kp (goal - q) - servo_kd dq`` (a P ``servo_kv (goal - dq)``)
  saturated at ``servo_limit`` (N*m), per joint in the arm's order: MuJoCo's own position
  (velocity) actuators, evaluated within its RK4 steps (``plant:=mujoco`` only). It takes
  goals on ``position_controller/commands`` (``velocity_controller/commands``), or in the
  ``position`` (``velocity``) field of ``joint_commands``; its servos give no torque until the
  first goal acts, and ``effort:=true`` publishes their torque at the tick;
- ``command_delay`` (seconds): a command acts from the driver's first tick at or after its
  arrival plus this (as a scenario's ``[driver].command_delay``); so at 250 Hz with 4 ms
  it acts two ticks after the state it answers, three when the answer comes late;
- ``position_noise`` (rad), ``velocity_noise`` (rad/s), ``encoder_ticks`` (per revolution)
  and ``seed``: the published positions quantised to whole encoder ticks, then both with
  Gaussian noise (the arm's own state is exact);
- ``effort:=true`` publishes ``effort``: the motors' torque over the period that ended at the
  state (zero while braked), with ``effort_noise`` (N*m) of Gaussian noise;
- ``brake:=true`` holds the arm still at its pose until the first command acts (a robot's
  brakes, released when control starts);
- ``gripper:=name`` adds a joint that is not the arm's (first in its states, never commanded);
- ``offset`` (degrees per joint) starts the arm that far from the scenario's initial pose;
- ``gap_at`` / ``gap`` (seconds): that long after the first command, no joint state is
  published for ``gap`` seconds (a hung bus), while the arm goes on under the held command;
- ``commands_after`` (seconds): commands are taken only that long after the states start
  (ros2_control spawns the effort controller after the joint state broadcaster);
- ``commands_log:=path`` gets one line per command received, as it comes: the wall time
  (s since the first state) and the torques in the arm's joint order; ``states_log:=path``
  one line per state published: its stamp (s since the first state), ``1`` once the arm is
  released (``0`` while braked), then the arm's exact joint angles and velocities;
- ``thread_priority`` (1-99): its threads run under SCHED_FIFO, as a real driver's hardware
  loop does, where the user may (else it says so and runs normally);
- the service ``driver/reset`` (std_srvs/Trigger) puts the arm back at rest at its first
  pose, braked again with ``brake``, its held command zero, and writes ``reset`` in both logs.

Inside, the arm is the scenario's robot in one of two engines (``plant``): ``mujoco``, a
MuJoCo model of it (``mujoco_arm.py``, RK4 at 0.5 ms, the links' armature and friction as
MuJoCo's, the joint limits as its stops), an engine that is not the project's; or ``engine``, the project's own
:class:`skelarm_ros.sim.engine.ArmEngine` at the scenario's ``dt``. Either is stepped to keep
up with the wall clock (a physical arm does not wait for its driver's timer). With
``arm_seed`` (0 or more) the MuJoCo arm is not the scenario's but the arm made real from it:
masses 5-10 % off, centres of mass and inertias off (``geared_arm.true_arm``), and a
four-link arm gets the geared drives' armature and friction (``geared_arm.TRUE_DRIVE``).

``python test/standin_driver.py --ros-args -r __ns:=/arm1 -p arm_joints:="[shoulder, elbow]"
-p joints:="[elbow, shoulder]"``
"""

from __future__ import annotations

import math
import sys
from collections import deque

import numpy as np
import rclpy
from mujoco_arm import MujocoArm, Servos
from rclpy.clock import Clock, ClockType
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger

from skelarm_ros.nodes.spinning import set_thread_priority, spin_until, try_shutdown
from skelarm_ros.sim.engine import ArmEngine
from skelarm_ros.sim.scenario import load_arm

MAX_CATCH_UP = 0.1  # s the arm is integrated per tick at most, so a stalled process does not integrate a long gap


class EnginePlant:
    """The project's own engine as the driver's arm (steps of the scenario's ``dt``)."""

    def __init__(self, arm) -> None:
        self.engine = ArmEngine(arm.skeleton, arm.dt, grav_vec=arm.grav_vec, enforce_limits=arm.enforce_limits)
        self.step_size = arm.dt

    q = property(lambda self: self.engine.q)
    dq = property(lambda self: self.engine.dq)

    def reset(self, q) -> None:
        self.engine.set_state(q, np.zeros_like(self.engine.q))

    def step(self, tau, steps: int) -> None:
        for _ in range(steps):
            self.engine.step(tau)


class MujocoPlant(MujocoArm):
    """The MuJoCo model of the scenario's arm (or, with ``seed`` 0 or more, of the arm made real from it)."""

    def __init__(self, arm, seed: int = -1, servos: Servos | None = None) -> None:
        skeleton, drive = arm.skeleton, arm.drive
        if seed >= 0:
            from geared_arm import TRUE_DRIVE, true_arm

            skeleton = true_arm(seed, arm.skeleton)
            drive = TRUE_DRIVE if arm.num_joints == TRUE_DRIVE.num_joints else drive
        super().__init__(skeleton, drive, tuple(arm.grav_vec), stops=arm.enforce_limits, servos=servos)
        self.step_size = self.model.opt.timestep


class StandInDriver(Node):
    """A ros2_control-like effort driver around a simulated arm."""

    def __init__(self) -> None:
        super().__init__("driver")
        value = self._parameter
        arm_joints = list(value("arm_joints", ["shoulder", "elbow"]))
        joints = list(value("joints", Parameter.Type.STRING_ARRAY) or arm_joints)
        self.interface = value("command_interface", "commands")
        self.kind = str(value("interface", "effort"))  # what it takes: effort, or a servo's position or velocity
        rate = float(value("rate", 500.0))
        gripper = str(value("gripper", ""))
        offset = np.radians(list(value("offset", Parameter.Type.DOUBLE_ARRAY) or []))
        self.gap_at, self.gap = float(value("gap_at", 0.0)), float(value("gap", 0.0))
        self.command_delay = float(value("command_delay", 0.0))
        self.position_noise = float(value("position_noise", 0.0))
        self.velocity_noise = float(value("velocity_noise", 0.0))
        ticks = int(value("encoder_ticks", 0))
        self.encoder = 2.0 * math.pi / ticks if ticks > 0 else 0.0
        self.rng = np.random.default_rng(int(value("seed", 0)))
        self.brake = bool(value("brake", False))
        self.effort, self.effort_noise = bool(value("effort", False)), float(value("effort_noise", 0.0))
        # best_effort: sensor-data QoS, as many real arms' drivers and simulators' bridges publish
        reliable = value("reliability", "reliable") == "reliable"
        arm = load_arm(value("scenario", "") or None)
        assert len(arm_joints) == arm.num_joints and sorted(joints) == sorted(arm_joints)
        mujoco = value("plant", "engine") == "mujoco"
        servos = None
        if self.kind != "effort":
            assert mujoco, "a servo arm's driver needs plant:=mujoco (its servos are MuJoCo's actuators)"
            gains = {key: tuple(value(key, [0.0] * arm.num_joints)) for key in ("servo_kp", "servo_kd", "servo_kv")}
            servos = Servos(self.kind, tuple(value("servo_limit", [1e9] * arm.num_joints)), *gains.values())
        self.plant = MujocoPlant(arm, int(value("arm_seed", -1)), servos) if mujoco else EnginePlant(arm)
        self.pose = arm.skeleton.q + offset if len(offset) else arm.skeleton.q.copy()
        self.arm_joints, self.joints = arm_joints, joints
        self.gripper = [gripper] if gripper else []
        self.published = self.gripper + list(reversed(arm_joints))  # its own order, not the arm's
        self._out = [arm_joints.index(name) for name in self.published[len(self.gripper) :]]
        self.logs = {name: self._open(str(value(name, ""))) for name in ("commands_log", "states_log")}
        self.ignored = 0
        self._wall = Clock(clock_type=ClockType.SYSTEM_TIME)
        self._origin_ns = self._wall.now().nanoseconds
        self._reset()
        qos = QoSProfile(
            depth=10, reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT
        )
        self.state_pub = self.create_publisher(JointState, "joint_states", qos)
        self._qos = qos
        commands_after = float(value("commands_after", 0.0))
        if commands_after > 0.0:  # as ros2_control spawns the effort controller after the state broadcaster
            self._later = self.create_timer(
                commands_after, self._subscribe, clock=Clock(clock_type=ClockType.STEADY_TIME)
            )
        else:
            self._subscribe()
        self.create_service(Trigger, "driver/reset", self._on_reset)
        self.create_timer(1.0 / rate, self._tick, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.get_logger().info(
            f"stand-in driver: joints {joints}, publishing {self.published}, {self.kind} {self.interface} "
            f"at {rate} Hz, arm in {type(self.plant).__name__}"
        )

    def _parameter(self, name: str, default):
        return self.declare_parameter(name, default).value

    @staticmethod
    def _open(path: str):
        return open(path, "w", encoding="utf-8", buffering=1) if path else None

    def _write(self, log: str, values) -> None:
        stream = self.logs[log]
        if stream is not None:
            stream.write(" ".join(repr(float(value)) for value in values) + "\n")

    def _now(self) -> float:
        return (self._wall.now().nanoseconds - self._origin_ns) * 1e-9

    def _reset(self) -> None:
        """The arm at rest at its first pose, braked with ``brake``, no command held or waiting."""
        self.plant.reset(self.pose)
        self.plant_t = self._now()
        self.tau = np.zeros(len(self.arm_joints)) if self.kind == "effort" else None  # a servo: no goal yet
        self.waiting: deque[tuple[float, np.ndarray]] = deque()  # (when it acts, torque)
        self.released = not self.brake
        self._first_command: float | None = None

    def _on_reset(self, _request, response):
        self._reset()
        for stream in self.logs.values():
            if stream is not None:
                stream.write("reset\n")
        response.success = True
        return response

    def _subscribe(self) -> None:
        """Take commands from now on (the effort, position or velocity controller is active)."""
        if self.interface == "joint_commands":
            self.create_subscription(JointState, "joint_commands", self._on_joint_commands, self._qos)
        else:
            topic = f"{self.kind}_controller/commands"
            self.create_subscription(Float64MultiArray, topic, self._on_commands, self._qos)
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

    def _on_joint_commands(self, msg: JointState) -> None:
        efforts = dict(zip(msg.name, getattr(msg, self.kind), strict=False))
        if sorted(efforts) != sorted(self.arm_joints) or not np.isfinite(list(efforts.values())).all():
            self.ignored += 1
            return
        self._took(np.array([efforts[name] for name in self.arm_joints]))

    def _took(self, tau: np.ndarray) -> None:
        now = self._now()
        if self._first_command is None:
            self._first_command = now
        self.waiting.append((now + self.command_delay, tau))
        self._write("commands_log", [now, *tau])

    def _tick(self) -> None:
        now = self._now()
        joints = len(self.arm_joints)
        if self.kind != "effort":  # the servos' torque at the tick (none before the first goal, or braked)
            applied = self.plant.torque if self.released and self.tau is not None else np.zeros(joints)
        else:
            applied = self.tau if self.released else np.zeros(joints)  # over the period ending now
        if self.released:  # the arm moves under the torque that acted since the last tick
            steps = int(min(now - self.plant_t, MAX_CATCH_UP) / self.plant.step_size)
            self.plant.step(self.tau, steps)
            self.plant_t += steps * self.plant.step_size
        self.plant_t = max(self.plant_t, now - self.plant.step_size)  # a stalled process does not replay the gap
        while self.waiting and self.waiting[0][0] <= now:  # what acts from this tick on
            self.tau = self.waiting.popleft()[1]
            self.released = True
        if self.gap > 0.0 and self._first_command is not None:
            silent = self._first_command + self.gap_at
            if silent <= now < silent + self.gap:  # a hung bus: the arm moves on, nothing is published
                return
        q, dq = self.plant.q, self.plant.dq
        self._write("states_log", [now, float(self.released), *q, *dq])
        seen_q = np.round(q / self.encoder) * self.encoder if self.encoder else q.copy()
        seen_q = seen_q + self.position_noise * self.rng.standard_normal(q.size)
        seen_dq = dq + self.velocity_noise * self.rng.standard_normal(dq.size)
        gripper = [0.02] * len(self.gripper), [0.0] * len(self.gripper)
        msg = JointState(
            name=self.published,
            position=gripper[0] + seen_q[self._out].tolist(),
            velocity=gripper[1] + seen_dq[self._out].tolist(),
        )
        if self.effort:
            seen_effort = applied + self.effort_noise * self.rng.standard_normal(applied.size)
            msg.effort = [0.0] * len(self.gripper) + seen_effort[self._out].tolist()
        stamp_ns = self._origin_ns + round(now * 1e9)
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
        self.state_pub.publish(msg)

    def close(self) -> None:
        for stream in self.logs.values():
            if stream is not None:
                stream.close()


def main() -> int:
    rclpy.init()
    node = StandInDriver()
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    # A real arm's driver runs its hardware loop at a real-time priority, where the machine allows it.
    set_thread_priority(node, int(node.declare_parameter("thread_priority", 0).value))
    spin_until(node, executor)  # ends cleanly on SIGINT / SIGTERM
    node.close()
    node.destroy_node()
    try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
