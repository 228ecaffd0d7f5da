# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Recorder node: the arm graph's topics into a rosbag2 bag, written with rosbags.

Topics are found by discovery (every ``discovery_period``): the names in the
``topics`` parameter (relative names resolve in the node's namespace) and the
controller channels of its own graph: ``controller/<channel>`` in its namespace,
published there (:func:`skelarm_ros.bags.recording.graph_channel`), not another
stack's ``/controller/...`` topics. Each is subscribed raw, keep-all, reliable when
every publisher is (else best effort) and transient local when every publisher is,
and written with its message definition, every publisher's offered QoS profile and
the type hash the publishers announce, as rosbag2 writes them
(:mod:`skelarm_ros.bags.recording`).

The node only takes messages: each goes with its log time (the node's clock) into
the bounded write queue of a :class:`skelarm_ros.bags.recording.Recording`, whose own
thread writes the bag. It spins on rclpy's EventsExecutor, which sustains several
times the single-threaded executor's rate at less CPU per message (docs/bags.md,
``skelarm-ros bench recorder``). Keep-all reliable subscriptions lose nothing: when
the recording falls behind, reliable publishers are held back by their
unacknowledged messages. Messages the middleware
reports lost (best-effort publishers) are counted, said in the closing line and
written into the bag's ``custom_data``.

Storage ``sqlite3`` (default) commits every ``flush_interval`` seconds: after a
SIGKILL everything committed before is readable by ``bag_to_log`` (the folder then
lacks ``metadata.yaml``; ``ros2 bag reindex`` restores it for ros2 bag). Storage
``mcap`` writes a chunk each MiB; after a SIGKILL ``bag_to_log --recover`` reads
the complete chunks. SIGINT and SIGTERM close the bag whole: what the subscriptions
still hold is taken, everything queued is written, then ``metadata.yaml``.
"""

from __future__ import annotations

import importlib
import sys
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import rclpy
from rclpy.event_handler import QoSMessageLostInfo, SubscriptionEventCallbacks
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from skelarm_ros.bags.recording import OfferedQos, Recording, RecordingError, graph_channel, plan_topic
from skelarm_ros.interface import CONTROLLER_NAMESPACE
from skelarm_ros.nodes.parameters import declare_parameters
from skelarm_ros.nodes.params.recorder import RecorderParams
from skelarm_ros.nodes.running import KitNode, run_node

if TYPE_CHECKING:
    from rclpy.subscription import Subscription

    from skelarm_ros.bags.recording import RecordingSummary, TopicPlan

NODE_NAME = "recorder"
DOC = "docs/bags.md"
DRAIN_LIMIT = 2.0  # s, the longest a stop spends taking what the subscriptions still hold
UNKNOWN_NAMESPACE = "_NODE_NAMESPACE_UNKNOWN_"  # rmw's namespace of a publisher whose node is not discovered yet


def _message_class(msgtype: str) -> Any:
    package, kind, name = msgtype.split("/")
    return getattr(importlib.import_module(f"{package}.{kind}"), name)


def offered_qos(profile: QoSProfile) -> OfferedQos:
    """Return a publisher's QoS profile (from discovery) as the recording's plain values."""
    return OfferedQos(
        history=int(profile.history),
        depth=int(profile.depth),
        reliability=int(profile.reliability),
        durability=int(profile.durability),
        deadline_ns=profile.deadline.nanoseconds,
        lifespan_ns=profile.lifespan.nanoseconds,
        liveliness=int(profile.liveliness),
        liveliness_lease_duration_ns=profile.liveliness_lease_duration.nanoseconds,
        avoid_ros_namespace_conventions=bool(profile.avoid_ros_namespace_conventions),
    )


def subscription_qos(plan: TopicPlan) -> QoSProfile:
    """Keep-all, with the reliability and durability the plan asks for."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_ALL,
        reliability=ReliabilityPolicy.RELIABLE if plan.reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if plan.transient_local else DurabilityPolicy.VOLATILE,
    )


def take_waiting(subscription: Subscription) -> bytes | None:
    """Take one message a raw subscription holds, without an executor; ``None`` when it holds none.

    This is the call rclpy's executors make to take a message
    (``Subscription.handle.take_message``); test/test_recorder.py fails if a new rclpy
    changes it.
    """
    with subscription.handle:
        taken = subscription.handle.take_message(subscription.msg_type, subscription.raw)
    return None if taken is None else taken[0]


class Recorder(KitNode):
    """Subscribe to the arm graph's topics and hand their messages to a :class:`Recording`."""

    node_name = NODE_NAME
    description = "Record the arm graph's topics into a rosbag2 bag."
    doc = DOC

    def setup(self) -> None:
        """Declare parameters, open the bag and start discovery."""
        params = self.params = declare_parameters(self, RecorderParams, DOC)
        self.nice = params.nice
        output = params.output or datetime.now(UTC).strftime("recorder_%Y%m%d_%H%M%S")
        self._wanted = {self._resolve(name) for name in params.topics}
        self._controller = self._resolve(CONTROLLER_NAMESPACE) + "/"
        self._recorded: dict[str, tuple[int, Subscription]] = {}
        self._ignored: set[str] = set()
        self._log_clock = self.get_clock()
        self.summary: RecordingSummary | None = None
        try:
            self.recording: Recording | None = Recording(
                Path(output),
                params.storage,
                flush_interval=params.flush_interval,
                max_cache_size=params.max_cache_size,
            )
            self.recording.start()
        except RecordingError as error:
            raise ValueError(str(error)) from None
        self.path = self.recording.path
        self.create_timer(params.discovery_period, self.discover)
        self.get_logger().info(f"recording into {self.path} ({params.storage}, {self.recording.distro})")

    def _resolve(self, name: str) -> str:
        if name.startswith("/"):
            return name
        namespace = self.get_namespace().rstrip("/")
        return f"{namespace}/{name}"

    def discover(self) -> None:
        """Subscribe to every wanted topic that has a publisher."""
        recording = self.recording
        if recording is None:
            return
        for name, types in self.get_topic_names_and_types():
            if name in self._recorded or name in self._ignored:
                continue
            if name not in self._wanted and not name.startswith(self._controller):
                continue
            msgtype = types[0]
            if not recording.known(msgtype):
                self._ignored.add(name)
                self.get_logger().warning(f"not recording '{name}': type {msgtype} has no known definition")
                continue
            publishers = [info for info in self.get_publishers_info_by_topic(name) if info.topic_type == msgtype]
            if not publishers:
                continue  # only readers so far: wait for a publisher, whose QoS decides ours
            if name not in self._wanted:
                spaces = [info.node_namespace for info in publishers]
                if UNKNOWN_NAMESPACE in spaces:
                    continue  # discovery has not said yet which node publishes it: look again
                reason = graph_channel(name, msgtype, self.get_namespace(), spaces)
                if reason is not None:  # another stack's controller/... topic
                    self._ignored.add(name)
                    self.get_logger().info(f"not recording '{name}': {reason}")
                    continue
            plan = plan_topic(
                name,
                msgtype,
                [offered_qos(info.qos_profile) for info in publishers],
                [str(info.topic_type_hash) for info in publishers],
                recording.definition_hash(msgtype),
            )
            for note in plan.notes:
                self.get_logger().warning(note)
            self._subscribe(recording, plan)

    def _subscribe(self, recording: Recording, plan: TopicPlan) -> None:
        handle = recording.add_topic(plan)  # before the subscription, so the topic is in the bag first
        subscription = self.create_subscription(
            _message_class(plan.msgtype),
            plan.name,
            partial(self._take, handle),
            subscription_qos(plan),
            raw=True,
            event_callbacks=SubscriptionEventCallbacks(message_lost=partial(self._lost, plan.name)),
        )
        self._recorded[plan.name] = (handle, subscription)
        reliability = "reliable" if plan.reliable else "best effort"
        self.get_logger().info(f"recording '{plan.name}' ({plan.msgtype}, {reliability}, keep all)")

    @property
    def ignored(self) -> frozenset[str]:
        """The topics looked at and left out (a type with no definition, another stack's ``controller/...``)."""
        return frozenset(self._ignored)

    @property
    def recorded(self) -> dict[str, Subscription]:
        """The subscriptions of the topics being recorded, by full topic name."""
        return {name: subscription for name, (_, subscription) in self._recorded.items()}

    def _take(self, handle: int, data: bytes) -> None:
        recording = self.recording
        if recording is None:
            return
        try:
            recording.write(handle, self._log_clock.now().nanoseconds, data)
        except RecordingError:
            self.finish(1)  # the closing line says why

    def _lost(self, topic: str, info: QoSMessageLostInfo) -> None:
        if self.recording is not None:
            self.recording.lost(topic, int(info.total_count))

    def drain(self, limit: float = DRAIN_LIMIT) -> None:
        """Take what the subscriptions still hold (a stop ends the spin with messages waiting), for ``limit`` s."""
        deadline = time.monotonic() + limit
        for handle, subscription in list(self._recorded.values()):
            while time.monotonic() < deadline and self.recording is not None:
                data = take_waiting(subscription)
                if data is None:
                    break
                self._take(handle, data)

    def close(self) -> None:
        """Take what is left, write everything queued and close the bag; say what it holds."""
        if self.recording is None:
            return
        if self.context.ok():
            self.drain()
        recording, self.recording = self.recording, None
        self.summary = recording.close()
        logger = self.get_logger() if self.context.ok() else rclpy.logging.get_logger(NODE_NAME)
        if self.summary.error or self.summary.lost:
            logger.warning(self.summary.line())
        else:
            logger.info(self.summary.line())


def main(args: list[str] | None = None) -> int:
    """Run the recorder until SIGINT or SIGTERM, then close the bag."""
    return run_node(Recorder, args=args)


if __name__ == "__main__":
    sys.exit(main())
