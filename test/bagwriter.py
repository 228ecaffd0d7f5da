"""Bags written with rosbags for the replay tests: arm topics, offered QoS, a type with no package, ROS 1."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from skelarm_ros.bags.reader import qos_profile

NS = 1_000_000_000
STORE = get_typestore(Stores.ROS2_JAZZY)
T = STORE.types
# A type with no message package here, as px4_msgs's are on a drone's bag.
STORE.register(get_types_from_msg("uint64 timestamp\nfloat32[4] q\n", "px4_msgs/msg/VehicleAttitude"))
START = 1_700_000_000 * NS  # log time of a bag's first message


def stamp(ns: int):
    return T["builtin_interfaces/msg/Time"](sec=ns // NS, nanosec=ns % NS)


def joint_state(ns: int, names=("j1", "j2"), position=(0.0, 0.0), velocity=(), effort=()):
    return T["sensor_msgs/msg/JointState"](
        header=T["std_msgs/msg/Header"](stamp=stamp(ns), frame_id=""),
        name=list(names),
        position=np.asarray(position, dtype=np.float64),
        velocity=np.asarray(velocity, dtype=np.float64),
        effort=np.asarray(effort, dtype=np.float64),
    )


def string(text: str):
    return T["std_msgs/msg/String"](data=text)


def point(ns: int, x: float, y: float):
    return T["geometry_msgs/msg/PointStamped"](
        header=T["std_msgs/msg/Header"](stamp=stamp(ns), frame_id="base"),
        point=T["geometry_msgs/msg/Point"](x=x, y=y, z=0.0),
    )


def float_array(values):
    return T["std_msgs/msg/Float64MultiArray"](
        layout=T["std_msgs/msg/MultiArrayLayout"](dim=[], data_offset=0), data=np.asarray(values, dtype=np.float64)
    )


def attitude(k: int):
    return T["px4_msgs/msg/VehicleAttitude"](timestamp=k, q=np.zeros(4, dtype=np.float32))


def write_bag(
    path: Path,
    messages,
    *,
    storage: str = "sqlite3",
    latched=("/robot_description",),
    best_effort=(),
    qos: bool = True,
) -> Path:
    """Write ``(topic, log_ns, message)`` with rosbags, with the offered QoS a recorder stores (unless ``qos``)."""
    plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
    with Writer(path, version=9, storage_plugin=plugin) as writer:
        conns = {}
        for topic, log_ns, message in messages:
            if topic not in conns:
                profiles = (
                    [qos_profile(reliable=topic not in best_effort, transient_local=topic in latched)] if qos else []
                )
                conns[topic] = writer.add_connection(
                    topic, message.__msgtype__, typestore=STORE, offered_qos_profiles=profiles
                )
            writer.write(conns[topic], log_ns, STORE.serialize_cdr(message, message.__msgtype__))
    return path


def arm_run(frames: int = 20, period_ns: int = 10_000_000, namespace: str = ""):
    """A recorded arm: robot_description first, then a state and its command each period, a target once."""
    out = [(f"{namespace}/robot_description", START, string("<robot name='arm'/>"))]
    out.append((f"{namespace}/target", START + 1000, point(0, 0.5, 1.2)))
    for k in range(frames):
        log = START + period_ns * (k + 1)
        out.append((f"{namespace}/joint_states", log, joint_state(k * 2_000_000, position=(0.1 * k, -0.1 * k))))
        out.append((f"{namespace}/joint_commands", log + 500, joint_state(k * 2_000_000, position=(), effort=(k, -k))))
    return out


def recorded(path: Path, topics=None):
    """``(topic, log_ns, bytes)`` of a bag in log-time order, read with rosbags."""
    from skelarm_ros.bags.reader import open_bag

    with open_bag(path) as bag:
        return [(topic, log, bytes(data)) for topic, _, log, data in bag.raw_messages(topics)]


def write_ros1_bag(path: Path, frames: int = 10, period_ns: int = 5_000_000) -> Path:
    """A ROS 1 bag: joint states (with header seq), a latched description, and a ROS 1-only type."""
    from rosbags.rosbag1 import Writer as Writer1

    ros1 = get_typestore(Stores.ROS1_NOETIC)
    header = ros1.types["std_msgs/msg/Header"]
    time = ros1.types["builtin_interfaces/msg/Time"]
    with Writer1(path) as writer:
        description = writer.add_connection("/robot_description", "std_msgs/msg/String", typestore=ros1, latching=1)
        text = ros1.types["std_msgs/msg/String"](data="<robot/>")
        writer.write(description, START, ros1.serialize_ros1(text, "std_msgs/msg/String"))
        states = writer.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=ros1)
        log_type = "rosgraph_msgs/msg/Log"
        logs = writer.add_connection("/rosout", log_type, typestore=ros1)
        for k in range(frames):
            ns = START + (k + 1) * period_ns
            message = ros1.types["sensor_msgs/msg/JointState"](
                header=header(seq=k, stamp=time(sec=ns // NS, nanosec=ns % NS), frame_id="f"),
                name=["j1", "j2"],
                position=np.array([0.5 * k, float(k)]),
                velocity=np.array([1.0, 2.0]),
                effort=np.array([3.0, 4.0]),
            )
            writer.write(states, ns, ros1.serialize_ros1(message, "sensor_msgs/msg/JointState"))
        entry = ros1.types[log_type](
            header=header(seq=0, stamp=time(sec=1, nanosec=0), frame_id=""),
            level=2,
            name="n",
            msg="m",
            file="f",
            function="g",
            line=1,
            topics=[],
        )
        writer.write(logs, START + 1, ros1.serialize_ros1(entry, log_type))
    return path


def damage_definition(bag: Path, old: bytes, new: bytes) -> None:
    """Change a stored message definition in place, the same length (a flipped byte in a field name)."""
    (file,) = [f for f in bag.iterdir() if f.suffix in (".db3", ".mcap")]
    data = file.read_bytes()
    assert old in data
    file.write_bytes(data.replace(old, new))
