# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""A node's topics: QoS presets, the raw joint-state input, messages held back, peers that cannot match.

- :data:`KEEP_ALL`, :data:`LATCHED` and :func:`newest`: the QoS profiles the nodes use;
  :func:`publisher_qos` the profile a recorded topic is played with.
- :func:`message_class`: the Python class of a message type named as the graph names it.
- :class:`JointStateInput` reads ``sensor_msgs/JointState`` as bytes, directly when of
  a known layout (:mod:`skelarm_ros.bags.cdr`), through rclpy otherwise.
- :class:`Direct` takes the place of a node's subscription when another node of the
  process hands it its input by calls (the composed graph).
- :class:`HeldBack` holds messages back, in order, until the readers a graph starts
  are matched.
- :class:`IncompatiblePeers` names each peer whose QoS cannot match an endpoint, once,
  with the fix.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rclpy.clock import Clock, ClockType
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    QoSCompatibility,
    QoSProfile,
    ReliabilityPolicy,
    qos_check_compatible,
)
from rclpy.serialization import deserialize_message
from rclpy.subscription import Subscription
from sensor_msgs.msg import JointState

from skelarm_ros.bags.cdr import JointStateLayout
from skelarm_ros.nodes.graph_queries import full_name

if TYPE_CHECKING:
    from collections.abc import Callable

    from rclpy.node import Node
    from rclpy.publisher import Publisher
    from rclpy.timer import Timer

    from skelarm_ros.bags.reader import TopicQos

CHECK_PERIOD = 0.02  # s, how often held-back messages look for their readers

KEEP_ALL = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
"""Reliable, keep-all: a slow reliable reader holds the writer back instead of losing messages (lockstep)."""
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
"""Reliable, transient local, depth 1: a late reader still gets the last message (``robot_description``)."""


def newest(depth: int, *, reliable: bool) -> QoSProfile:
    """Return a keep-last ``depth`` profile; best effort takes reliable and best-effort publishers alike."""
    reliability = ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=reliability)


def publisher_qos(qos: TopicQos) -> QoSProfile:
    """Return the publisher's QoS profile for a topic's recorded QoS (keep-last its depth)."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=qos.depth,
        reliability=ReliabilityPolicy.RELIABLE if qos.reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if qos.transient_local else DurabilityPolicy.VOLATILE,
    )


def message_class(msgtype: str) -> Any | None:
    """Return the Python class of a ROS 2 message type (``pkg/msg/Name``), or ``None`` when not installed."""
    try:
        package, kind, name = msgtype.split("/")
        return getattr(importlib.import_module(f"{package}.{kind}"), name, None)
    except (ValueError, ImportError):
        return None


# -- joint states as bytes -------------------------------------------------------------------------------


class JointStateInput:
    """A raw ``sensor_msgs/JointState`` subscription: known layouts read directly, others through rclpy.

    Parameters
    ----------
    node : Node
        The node that subscribes.
    topic : str
        The topic.
    qos : QoSProfile
        The subscription's QoS.
    on_state : Callable[..., None]
        Gets ``(names, position, velocity, effort, sec, nanosec)`` of each message.
    on_damaged : Callable[[str], None]
        Gets one sentence for a message that cannot be deserialized.
    peers : IncompatiblePeers | None, optional
        Names publishers whose QoS cannot match the subscription.
    """

    def __init__(  # noqa: PLR0917 - the subscription's own arguments, then the two callbacks and the watcher
        self,
        node: Node,
        topic: str,
        qos: QoSProfile,
        on_state: Callable[..., None],
        on_damaged: Callable[[str], None],
        peers: IncompatiblePeers | None = None,
    ) -> None:
        """Subscribe (raw) to ``topic``."""
        self._layout = JointStateLayout()
        self._on_state = on_state
        self._on_damaged = on_damaged
        events = None if peers is None else peers.subscription_events()
        self.subscription = node.create_subscription(
            JointState, topic, self.take, qos, raw=True, event_callbacks=events
        )
        if peers is not None:
            peers.endpoint = self.subscription

    def take(self, data: bytes) -> None:
        """Hand one serialized message's fields on (or its problem)."""
        layout = self._layout
        values = layout.values(data)
        if values is not None:
            positions, velocities, _ = layout.counts
            at = 2 + positions + velocities
            self._on_state(
                layout.names, values[2 : 2 + positions], values[2 + positions : at], values[at:], values[0], values[1]
            )
            return
        try:
            msg = deserialize_message(data, JointState)
        except Exception as error:  # rclpy raises several types on damaged bytes
            self._on_damaged(f"a {self.subscription.topic_name} message could not be deserialized ({error})")
            return
        layout.learn(data, msg)
        stamp = msg.header.stamp
        self._on_state(msg.name, msg.position, msg.velocity, msg.effort, stamp.sec, stamp.nanosec)


class Direct:
    """An input that another node of the same process hands in by calling the node, in place of its subscription.

    A node given one subscribes nothing for that input; its one publisher is the caller,
    there from the start. The composed graph wires its simulator and controller with
    them (:mod:`skelarm_ros.nodes.composed`).

    Parameters
    ----------
    topic_name : str, optional
        The topic it takes the place of, named in what the node says; empty: the node
        sets the topic it would have subscribed.
    """

    def __init__(self, topic_name: str = "") -> None:
        """Stand for ``topic_name``'s subscription."""
        self.topic_name = topic_name

    def get_publisher_count(self) -> int:
        """Return 1: the node of the process that calls."""
        return 1


# -- messages held back until the readers are there -------------------------------------------------------


class HeldBack:
    """Publishes through it go out at once, or, until ``ready()`` first holds, wait in order.

    A graph's recorder may take longer to be matched than its controller takes to
    answer step 0; holding back keeps every message for it. Once released, it never
    holds again.

    Parameters
    ----------
    node : Node
        The node publishing.
    ready : Callable[[], bool]
        Whether the readers the graph starts are matched; ``None`` never holds.
    on_release : Callable[[int], None]
        Gets the number of messages that were held, when they go out.
    """

    def __init__(
        self, node: Node, ready: Callable[[], bool] | None, on_release: Callable[[int], None] | None = None
    ) -> None:
        """Start holding (when there is something to wait for)."""
        self._node = node
        self._ready = ready
        self._on_release = on_release
        self._held: list[tuple[Publisher, Any]] | None = None
        self._timer: Timer | None = None
        if ready is not None:
            self._held = []
            self._timer = node.create_timer(CHECK_PERIOD, self.release, clock=Clock(clock_type=ClockType.STEADY_TIME))

    @property
    def holding(self) -> bool:
        """Whether messages are still held back."""
        return self._held is not None

    def publish(self, publisher: Publisher, message: Any) -> None:
        """Publish ``message`` now, or after those held before it."""
        if self._held is None:
            publisher.publish(message)
            return
        self._held.append((publisher, message))
        self.release()

    def release(self) -> None:
        """Send what is held, in order, once ``ready()`` holds."""
        if self._held is None or self._ready is None or not self._ready():
            return
        held, self._held = self._held, None
        for publisher, message in held:
            publisher.publish(message)
        if self._timer is not None:
            self._node.destroy_timer(self._timer)
            self._timer = None
        if self._on_release is not None:
            self._on_release(len(held))


# -- QoS mismatches ---------------------------------------------------------------------------------------


class IncompatiblePeers:
    """Names each peer whose QoS cannot match an endpoint of ours, once, with the fix.

    rclpy's own line for an incompatible peer names neither the peer nor a fix; this
    one does. Pass :meth:`subscription_events` or :meth:`publisher_events` when creating
    the endpoint, then set :attr:`endpoint` to it.

    Parameters
    ----------
    node : Node
        The node the endpoint belongs to.
    fix : str
        What to do about a mismatch, for the sentence.
    """

    def __init__(self, node: Node, fix: str) -> None:
        """Watch nothing yet (set :attr:`endpoint`)."""
        self._node = node
        self._fix = fix
        self._told: set[str] = set()
        self.endpoint: Subscription | Publisher | None = None
        self.said: list[str] = []

    def subscription_events(self) -> SubscriptionEventCallbacks:
        """Return the event callbacks to create a subscription with."""
        return SubscriptionEventCallbacks(incompatible_qos=self._on_event)

    def publisher_events(self) -> PublisherEventCallbacks:
        """Return the event callbacks to create a publisher with."""
        return PublisherEventCallbacks(incompatible_qos=self._on_event)

    def _on_event(self, _info: object) -> None:
        self.check()

    def check(self) -> list[str]:
        """Name every incompatible peer not named before; return the sentences said."""
        endpoint = self.endpoint
        if endpoint is None:
            return []
        topic, ours = endpoint.topic_name, endpoint.qos_profile
        reading = isinstance(endpoint, Subscription)
        peers = (
            self._node.get_publishers_info_by_topic(topic)
            if reading
            else self._node.get_subscriptions_info_by_topic(topic)
        )
        said = []
        for peer in peers:
            name = full_name(peer.node_namespace, peer.node_name)
            pair = (peer.qos_profile, ours) if reading else (ours, peer.qos_profile)
            compatibility, reason = qos_check_compatible(*pair)
            if compatibility != QoSCompatibility.ERROR or name in self._told:
                continue
            self._told.add(name)
            role = "publisher" if reading else "reader"
            said.append(
                f"the {role} {name} of {topic} cannot match this node's QoS ({reason.strip().rstrip(';')}); {self._fix}"
            )
        for sentence in said:
            self._node.get_logger().warning(sentence)
        self.said.extend(said)
        return said
