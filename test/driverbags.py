"""Bags written the way real arms' drivers record them, for the tests of bag_info, bag_to_log, replay and compare.

What real recordings hold and this package's own bags do not: joint states on the driver's
own topic under its own names (``/servo/out/state``, ``q0, q1, q2``), more joints than the
arm (a gripper's prismatic fingers), positions only, an effort field that is all zero,
wall-clock stamps with the delivery jitter between stamp and log time, dropped messages
(a gap), encoder quantisation and noise, measured effort that lags the command through the
actuator, topics of types with no package here (px4_msgs), ROS 1 bags.

Every bag is written with rosbags (``bagwriter``); nothing here needs the shared data.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from bagwriter import NS, attitude, joint_state, string, write_bag

WALL = 1_747_918_165 * NS  # a wall-clock start (May 2025), as a real driver stamps
TICK = 2 * np.pi / 4096  # a 12-bit servo encoder's step (rad)
SERVO_JOINTS = ("q0", "q1", "q2")


def quantised(values: np.ndarray, step: float = TICK) -> np.ndarray:
    """Values as an encoder of resolution ``step`` reports them."""
    return np.round(values / step) * step


def servo_motion(frames: int, rate: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Three servos moving slowly: positions (quantised, noisy) and their velocities, shape ``(frames, 3)``."""
    t = np.arange(frames)[:, None] / rate
    phase = np.array([0.0, 1.0, 2.0])
    q = 0.4 * np.sin(0.7 * t + phase) + np.array([0.0, -0.8, 1.2])
    dq = 0.28 * np.cos(0.7 * t + phase) + rng.normal(0.0, 0.002, size=(frames, 3))
    return quantised(q + rng.normal(0.0, 0.0005, size=q.shape)), dq


def servo_arm(path: Path, *, storage: str = "mcap", frames: int = 200, rate: float = 50.0, seed: int = 1) -> Path:
    """A three-servo arm on a drone, as its ROS 2 Jazzy driver records it.

    - ``/servo/out/state``: the driver's joint states, names ``q0, q1, q2``, position
      (quantised) and velocity, effort all zero (the servos report none), stamped with the
      wall clock, logged 1-3 ms later, at ``rate``; ten messages in the middle are missing
      (a gap of 11 periods);
    - ``/servo/in/references``: the position references sent to the servos, positions only,
      at half the rate;
    - ``/fmu/out/vehicle_attitude``: the flight controller's attitude (px4_msgs, no package here).
    """
    rng = np.random.default_rng(seed)
    period = round(NS / rate)
    q, dq = servo_motion(frames, rate, rng)
    gap = range(frames // 2, frames // 2 + 10)
    messages = []
    for k in range(frames):
        stamp = WALL + k * period
        log = stamp + int(rng.integers(1_000_000, 3_000_000))
        if k not in gap:
            messages.append(("/servo/out/state", log, joint_state(stamp, SERVO_JOINTS, q[k], dq[k], (0.0, 0.0, 0.0))))
        if k % 2 == 0:
            messages.append(("/servo/in/references", log + 200_000, joint_state(stamp, SERVO_JOINTS, q[k] + 0.01)))
        if k % 5 == 0:
            messages.append(("/fmu/out/vehicle_attitude", log + 300_000, attitude(k)))
    return write_bag(
        path, sorted(messages, key=lambda item: item[1]), storage=storage, best_effort=("/servo/out/state",)
    )


FRANKA_ARM = tuple(f"panda_joint{k}" for k in range(1, 8))
FRANKA_FINGERS = ("panda_finger_joint1", "panda_finger_joint2")


def franka_urdf() -> str:
    """A Franka-like description: seven revolute arm joints, two prismatic fingers."""
    links = ["<link name='panda_link0'/>"]
    joints = []
    parent = "panda_link0"
    for k, name in enumerate(FRANKA_ARM, start=1):
        links.append(f"<link name='panda_link{k}'/>")
        joints.append(
            f"<joint name='{name}' type='revolute'><parent link='{parent}'/><child link='panda_link{k}'/>"
            "<axis xyz='0 0 1'/><limit lower='-2.9' upper='2.9' effort='87' velocity='2.1'/></joint>"
        )
        parent = f"panda_link{k}"
    for name in FRANKA_FINGERS:
        links.append(f"<link name='{name}_link'/>")
        joints.append(
            f"<joint name='{name}' type='prismatic'><parent link='{parent}'/><child link='{name}_link'/>"
            "<axis xyz='0 1 0'/><limit lower='0' upper='0.04' effort='20' velocity='0.2'/></joint>"
        )
    return f"<robot name='panda'>{''.join(links)}{''.join(joints)}</robot>"


def franka_ros1(path: Path, *, frames: int = 100, rate: float = 100.0, seed: int = 2) -> Path:
    """A Franka arm recorded in ROS 1: ``/joint_states`` of nine joints (seven arm, two prismatic fingers).

    Positions, velocities and measured torques (the fingers' effort zero), header ``seq``,
    wall-clock stamps, a latched ``/robot_description`` with the fingers as prismatic joints.
    """
    from rosbags.rosbag1 import Writer as Writer1
    from rosbags.typesys import Stores, get_typestore

    ros1 = get_typestore(Stores.ROS1_NOETIC)
    header, time = ros1.types["std_msgs/msg/Header"], ros1.types["builtin_interfaces/msg/Time"]
    rng = np.random.default_rng(seed)
    period = round(NS / rate)
    names = [*FRANKA_ARM, *FRANKA_FINGERS]
    with Writer1(path) as writer:
        description = writer.add_connection("/robot_description", "std_msgs/msg/String", typestore=ros1, latching=1)
        text = ros1.types["std_msgs/msg/String"](data=franka_urdf())
        writer.write(description, WALL, ros1.serialize_ros1(text, "std_msgs/msg/String"))
        states = writer.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=ros1)
        for k in range(frames):
            stamp = WALL + (k + 1) * period
            arm = 0.3 * np.sin(0.5 * k / rate + np.arange(7))
            fingers = np.full(2, 0.02 + 0.01 * np.sin(k / rate))
            effort = np.concatenate([5.0 * np.cos(0.5 * k / rate + np.arange(7)), np.zeros(2)])
            message = ros1.types["sensor_msgs/msg/JointState"](
                header=header(seq=k, stamp=time(sec=stamp // NS, nanosec=stamp % NS), frame_id=""),
                name=names,
                position=np.concatenate([arm, fingers]),
                velocity=rng.normal(0.0, 0.01, size=9),
                effort=effort + rng.normal(0.0, 0.05, size=9) * (np.arange(9) < 7),
            )
            writer.write(states, stamp + 500_000, ros1.serialize_ros1(message, "sensor_msgs/msg/JointState"))
    return path


@dataclass(frozen=True)
class DrivenRun:
    """A driver's recorded run under effort commands, with what was commanded (for checks).

    Attributes
    ----------
    bag : Path
        The recording: joint states with measured effort on ``topic``, no commands.
    topic : str
        The joint-state topic.
    names : tuple[str, ...]
        The driver's joint names, in its order.
    stamps : np.ndarray
        ``(n,)`` the states' stamps (ns).
    commands : np.ndarray
        ``(n, joints)`` the effort commanded from each state on (N*m).
    lag : int
        States by which the measured effort follows the command that caused it.
    """

    bag: Path
    topic: str
    names: tuple[str, ...]
    stamps: np.ndarray
    commands: np.ndarray
    lag: int


def driven_run(
    path: Path,
    *,
    topic: str = "/arm_driver/joint_states",
    names: tuple[str, ...] = ("elbow", "shoulder"),
    frames: int = 400,
    rate: float = 250.0,
    lag: int = 3,
    noise: float = 0.01,
    step: float = 0.001,
    storage: str = "sqlite3",
    seed: int = 3,
) -> DrivenRun:
    """A real arm's driver recorded under effort commands it does not record: measured effort only.

    The command is held over a step (as ros2_control holds it); the driver's effort is
    measured through the actuator: the command applied ``lag`` states earlier (its bus and
    current loop), then a first-order current filter, sensor noise and the torque sensor's
    quantisation ``step``. So by the package's convention the effort of state k+1 answers
    the command of state k, and here the best alignment is ``lag`` states.
    """
    rng = np.random.default_rng(seed)
    period = round(NS / rate)
    t = np.arange(frames) / rate
    commands = np.stack([2.0 * np.sin(2.0 * np.pi * 1.3 * t), 1.5 * np.cos(2.0 * np.pi * 0.7 * t + 0.3)], axis=1)
    applied = np.vstack([np.zeros((lag, 2)), commands[:-lag]]) if lag else commands.copy()
    filtered = np.zeros_like(applied)
    for k in range(1, frames):
        filtered[k] = filtered[k - 1] + 0.8 * (applied[k] - filtered[k - 1])
    measured = quantised(filtered + rng.normal(0.0, noise, size=filtered.shape), step)
    q = np.cumsum(np.cumsum(commands, axis=0), axis=0) * 1e-5
    order = [("shoulder", "elbow").index(name) for name in names]  # the arm's joints in the driver's order
    stamps = WALL + np.arange(frames, dtype=np.int64) * period
    messages = [
        (
            topic,
            int(stamps[k]) + int(rng.integers(200_000, 900_000)),
            joint_state(int(stamps[k]), names, quantised(q[k, order]), q[k, order] * 0.0 + 0.01, measured[k, order]),
        )
        for k in range(frames)
    ]
    bag = write_bag(path, messages, storage=storage)
    return DrivenRun(bag, topic, names, stamps, commands, lag)


def shadow_bag(path: Path, run: DrivenRun, commands: np.ndarray | None = None, *, skip: tuple[int, ...] = ()) -> Path:
    """A shadow run's recording: the replayed states as ``/joint_states``, stamped ``/joint_commands`` answering them.

    The commands are ``run.commands`` (or ``commands``) in the arm's order (``shoulder``, ``elbow``).
    """
    values = run.commands if commands is None else commands
    messages = []
    for k, stamp in enumerate(run.stamps.tolist()):
        messages.append(
            ("/joint_states", stamp + 1000, joint_state(stamp, ("shoulder", "elbow"), (0.0, 0.0), (0.0, 0.0)))
        )
        if k not in skip:
            messages.append(
                ("/joint_commands", stamp + 2000, joint_state(stamp, ("shoulder", "elbow"), (), (), values[k]))
            )
    return write_bag(path, messages)


def many_joints_names(count: int = 42) -> list[str]:
    """Joint names of a PR2-like robot: arms, head, torso, casters and grippers, ``count`` of them."""
    names = ["torso_lift_joint", "head_pan_joint", "head_tilt_joint", "laser_tilt_mount_joint"]
    for side in ("l", "r"):
        names += [
            f"{side}_shoulder_pan_joint",
            f"{side}_shoulder_lift_joint",
            f"{side}_upper_arm_roll_joint",
            f"{side}_elbow_flex_joint",
            f"{side}_forearm_roll_joint",
            f"{side}_wrist_flex_joint",
            f"{side}_wrist_roll_joint",
            f"{side}_gripper_joint",
            f"{side}_gripper_l_finger_joint",
            f"{side}_gripper_r_finger_joint",
            f"{side}_gripper_l_finger_tip_joint",
            f"{side}_gripper_r_finger_tip_joint",
            f"{side}_gripper_motor_slider_joint",
        ]
    for corner in ("fl", "fr", "bl", "br"):
        names += [f"{corner}_caster_rotation_joint", f"{corner}_caster_l_wheel_joint", f"{corner}_caster_r_wheel_joint"]
    return names[:count]


PRISMATIC_MANY = (
    "torso_lift_joint",
    "l_gripper_joint",
    "r_gripper_joint",
    "l_gripper_motor_slider_joint",
    "r_gripper_motor_slider_joint",
)


def many_joints_urdf(names: list[str]) -> str:
    """A description of every joint: the torso lift and gripper sliders prismatic, the rest revolute or continuous."""
    parts = ["<robot name='pr2'><link name='base_link'/>"]
    for k, name in enumerate(names):
        kind = (
            "prismatic"
            if name in PRISMATIC_MANY
            else ("continuous" if "roll" in name or "wheel" in name else "revolute")
        )
        parts.append(
            f"<link name='link{k}'/><joint name='{name}' type='{kind}'><parent link='base_link'/>"
            f"<child link='link{k}'/><axis xyz='0 0 1'/><limit lower='-1' upper='1' effort='10' velocity='1'/></joint>"
        )
    parts.append("</robot>")
    return "".join(parts)


def many_joints(path: Path, *, count: int = 42, frames: int = 60, rate: float = 100.0) -> Path:
    """A PR2-like robot's ``/joint_states`` of ``count`` joints with its ``/robot_description``."""
    names = many_joints_names(count)
    period = round(NS / rate)
    messages = [("/robot_description", WALL, string(many_joints_urdf(names)))]
    for k in range(frames):
        stamp = WALL + (k + 1) * period
        phase = np.arange(count) * 0.3
        position = 0.2 * np.sin(k / rate * 3.0 + phase)
        effort = 3.0 * np.cos(k / rate * 2.0 + phase)
        messages.append(("/joint_states", stamp + 300_000, joint_state(stamp, names, position, position * 0.0, effort)))
    return write_bag(path, messages)
