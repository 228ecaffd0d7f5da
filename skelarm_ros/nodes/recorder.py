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

import importlib
import sys
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from skelarm_ros.bags import qos_profile
from skelarm_ros.interface import ARM_TOPICS, CONTROLLER_NAMESPACE
from skelarm_ros.nodes.kit import KitNode, Param, choice, declare_parameters, number, run_node, text
from skelarm_ros.rosbags_adapter import commit

NODE_NAME = "recorder"
DOC = "docs/bags.md"
STORAGES = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}

PARAMETERS = (
    text("output", "", "bag folder to create (default recorder_<UTC time>)"),
    choice("storage", tuple(STORAGES), "sqlite3 or mcap"),
    Param(
        "topics",
        list(ARM_TOPICS),
        "topics to record (relative names resolve in the namespace); controller/* always",
    ),
    number("flush_interval", 0.2, "time between sqlite3 commits (what survives a SIGKILL)"),
    number("discovery_period", 0.1, "time between looks for new topics"),
)


def _message_class(msgtype: str) -> Any:
    package, kind, name = msgtype.split("/")
    return getattr(importlib.import_module(f"{package}.{kind}"), name)


class Recorder(KitNode):
    """Subscribe to the arm graph's topics and write them into a rosbag2 bag."""

    node_name = NODE_NAME
    description = "Record the arm graph's topics into a rosbag2 bag."
    doc = DOC
    events_executor = False

    def __init__(self, **kwargs: Any) -> None:
        """Declare parameters, open the bag and start discovery (never blocks)."""
        super().__init__(NODE_NAME, **kwargs)

    def setup(self) -> None:
        """Declare parameters, open the bag and start discovery."""
        p = declare_parameters(self, PARAMETERS, DOC)
        storage = p["storage"]
        output = str(p["output"]) or datetime.now(UTC).strftime("recorder_%Y%m%d_%H%M%S")
        if Path(output).exists():
            msg = f"output '{output}' exists already; choose another folder for the bag"
            raise ValueError(msg)
        self.path = Path(output)
        self.storage = storage
        self._store = get_typestore(Stores.ROS2_JAZZY)
        self._writer: Writer | None = Writer(self.path, version=9, storage_plugin=STORAGES[storage])
        self._writer.open()
        names = [str(topic) for topic in p["topics"] or []]
        self._wanted = {self._resolve(name) for name in names}
        self._controller = self._resolve(CONTROLLER_NAMESPACE) + "/"
        self._connections: dict[str, Any] = {}
        self._ignored: set[str] = set()
        self.count = 0
        self.create_timer(p["discovery_period"], self.discover)
        self.create_timer(p["flush_interval"], self.flush)
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
        if self._writer is not None:
            commit(self._writer)

    def close(self) -> None:
        """Close the bag, writing ``metadata.yaml``."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.close()
            self.get_logger().info(f"closed {self.path}: {self.count} messages")


def main(args: list[str] | None = None) -> int:
    """Run the recorder until SIGINT or SIGTERM, then close the bag."""
    return run_node(Recorder, args=args)


if __name__ == "__main__":
    sys.exit(main())
