# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Recorder node: the arm graph's topics into a rosbag2 bag, written with rosbags.

Topics are found by discovery (every ``discovery_period``): the names in the
``topics`` parameter (relative names resolve in the node's namespace) and every
``controller/<channel>`` topic. Each is subscribed raw with the QoS its publishers
offer, and written with its message definition and offered QoS profile, so
``ros2 bag info`` / ``ros2 bag play`` accept the bag.

Storage ``sqlite3`` (default) commits every ``flush_interval`` seconds: after a
SIGKILL everything committed before is readable by ``bag_to_log`` (the folder then
lacks ``metadata.yaml``; ``ros2 bag reindex`` restores it for ros2 bag). Storage
``mcap`` writes a chunk each MiB; after a SIGKILL ``bag_to_log --recover`` reads
the complete chunks. SIGINT and SIGTERM close the bag cleanly.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from skelarm_ros.bags import qos_profile
from skelarm_ros.nodes.spinning import parameter_problem, spin_until, try_shutdown

DEFAULT_TOPICS = [
    "joint_states",
    "joint_commands",
    "effort_controller/commands",
    "tip_wrench",
    "tip",
    "target",
    "robot_description",
]
STORAGES = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}


def _message_class(msgtype: str) -> Any:
    package, kind, name = msgtype.split("/")
    return getattr(importlib.import_module(f"{package}.{kind}"), name)


class Recorder(Node):
    """Subscribe to the arm graph's topics and write them into a rosbag2 bag."""

    def __init__(self, **kwargs: Any) -> None:
        """Declare parameters, open the bag and start discovery (never blocks)."""
        super().__init__("recorder", **kwargs)
        self.declare_parameter(
            "output",
            "",
            ParameterDescriptor(description="bag folder to create (default recorder_<UTC time>)", read_only=True),
        )
        self.declare_parameter("storage", "sqlite3", ParameterDescriptor(description="sqlite3 or mcap", read_only=True))
        self.declare_parameter(
            "topics",
            DEFAULT_TOPICS,
            ParameterDescriptor(
                description="topics to record (relative names resolve in the namespace); controller/* always",
                read_only=True,
            ),
        )
        self.declare_parameter(
            "flush_interval",
            0.2,
            ParameterDescriptor(
                description="seconds between sqlite3 commits (what survives a SIGKILL)", read_only=True
            ),
        )
        self.declare_parameter(
            "discovery_period",
            0.1,
            ParameterDescriptor(description="seconds between looks for new topics", read_only=True),
        )
        storage = str(self.get_parameter("storage").value)
        if storage not in STORAGES:
            msg = f"parameter storage is '{storage}'; choose sqlite3 or mcap"
            raise ValueError(msg)
        output = str(self.get_parameter("output").value) or datetime.now(UTC).strftime("recorder_%Y%m%d_%H%M%S")
        if Path(output).exists():
            msg = f"output '{output}' exists already; choose another folder for the bag"
            raise ValueError(msg)
        self.path = Path(output)
        self.storage = storage
        self._store = get_typestore(Stores.ROS2_JAZZY)
        self._writer: Writer | None = Writer(self.path, version=9, storage_plugin=STORAGES[storage])
        self._writer.open()
        names = [str(t) for t in self.get_parameter("topics").value or []]
        self._wanted = {self._resolve(name) for name in names}
        self._controller = self._resolve("controller") + "/"
        self._connections: dict[str, Any] = {}
        self._ignored: set[str] = set()
        self.count = 0
        self.create_timer(float(self.get_parameter("discovery_period").value), self.discover)
        self.create_timer(float(self.get_parameter("flush_interval").value), self.flush)
        self.get_logger().info(f"recording into {self.path} ({storage})")

    def _resolve(self, name: str) -> str:
        if name.startswith("/"):
            return name
        namespace = self.get_namespace().rstrip("/")
        return f"{namespace}/{name}"

    def discover(self) -> None:
        """Subscribe to every wanted topic that has appeared."""
        if self._writer is None:
            return
        for name, types in self.get_topic_names_and_types():
            if name in self._connections or name in self._ignored:
                continue
            if name not in self._wanted and not name.startswith(self._controller):
                continue
            msgtype = types[0]
            if msgtype not in self._store.types:
                self._ignored.add(name)
                self.get_logger().warning(f"not recording '{name}': type {msgtype} has no known definition")
                continue
            publishers = self.get_publishers_info_by_topic(name)
            if not publishers:
                continue  # only readers so far: wait for a publisher, whose QoS decides ours
            latched = any(p.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for p in publishers)
            reliable = all(p.qos_profile.reliability == ReliabilityPolicy.RELIABLE for p in publishers)
            qos = QoSProfile(
                depth=1000,
                reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
                durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
            )
            connection = self._writer.add_connection(
                name,
                msgtype,
                typestore=self._store,
                offered_qos_profiles=[qos_profile(reliable=reliable, transient_local=latched)],
            )
            self._connections[name] = connection
            self.create_subscription(_message_class(msgtype), name, partial(self._write, connection), qos, raw=True)
            self.get_logger().info(f"recording '{name}' ({msgtype})")

    def _write(self, connection: Any, data: bytes) -> None:
        if self._writer is not None:
            self._writer.write(connection, self.get_clock().now().nanoseconds, data)
            self.count += 1

    def flush(self) -> None:
        """Commit what sqlite3 storage has so far (MCAP writes whole chunks by itself)."""
        storage = self._writer.storage if self._writer is not None else None
        connection = getattr(storage, "conn", None)
        if connection is not None:
            connection.commit()

    def close(self) -> None:
        """Close the bag, writing ``metadata.yaml``."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.close()
            # After a signal the context is down: log to the console only, not to /rosout.
            logger = self.get_logger() if self.context.ok() else rclpy.logging.get_logger(self.get_logger().name)
            logger.info(f"closed {self.path}: {self.count} messages")


def main(args: list[str] | None = None) -> int:
    """Run the recorder until SIGINT or SIGTERM, then close the bag."""
    rclpy.init(args=args)
    parser = argparse.ArgumentParser(prog="recorder", description="Record the arm graph's topics into a rosbag2 bag.")
    parser.parse_args(rclpy.utilities.remove_ros_args(args if args is not None else sys.argv)[1:])
    node: Recorder | None = None
    code = 0
    try:
        node = Recorder()
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        spin_until(node, executor)  # until SIGINT or SIGTERM shuts the context down
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except ValueError as error:
        rclpy.logging.get_logger("recorder").error(str(error))
        code = 1
    except ParameterException as error:
        rclpy.logging.get_logger("recorder").error(parameter_problem(error, "docs/bags.md"))
        code = 1
    finally:
        if node is not None:
            node.close()
            node.destroy_node()
        try_shutdown()
    return code


if __name__ == "__main__":
    sys.exit(main())
