# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""What the ROS graph holds, asked of rclpy: who reads and publishes a topic, and whether readers took everything.

- :func:`matching_readers`: the readers of a publisher's topic that can match it
  (right type, compatible QoS), so a node waits only for readers that will be matched.
- :func:`publishing_nodes`: the nodes that publish a topic.
- :func:`wait_for_acknowledgements`: block, in slices a stop ends, until every
  reliable reader acknowledged what some publishers published.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from rclpy.duration import Duration
from rclpy.qos import QoSCompatibility, qos_check_compatible

from skelarm_ros.nodes.spinning import stop_requested

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from rclpy.node import Node
    from rclpy.publisher import Publisher


def full_name(namespace: str, name: str) -> str:
    """Return a node's full name from its namespace and name (``/arm1``, ``controller`` -> ``/arm1/controller``)."""
    return f"{namespace.rstrip('/')}/{name}"


def matching_readers(node: Node, publisher: Publisher, msgtype: str) -> list[str]:
    """Return the full names of the graph's readers of ``publisher``'s topic that can match it.

    A reader of another type or with an incompatible QoS (transient local against a
    volatile publisher, say) is never matched, so it must not be waited for.
    """
    topic = publisher.topic_name
    me = (node.get_namespace(), node.get_name())
    own = next(
        (i.qos_profile for i in node.get_publishers_info_by_topic(topic) if (i.node_namespace, i.node_name) == me),
        None,
    )
    return [
        full_name(info.node_namespace, info.node_name)
        for info in node.get_subscriptions_info_by_topic(topic)
        if info.topic_type == msgtype
        and (own is None or qos_check_compatible(own, info.qos_profile)[0] != QoSCompatibility.ERROR)
    ]


def node_full_name(node: Node, name: str) -> str:
    """Return ``name`` as a full node name: itself when it starts with ``/``, else in ``node``'s namespace.

    An empty name (none given) stays empty.
    """
    if not name or name.startswith("/"):
        return name
    return full_name(node.get_namespace(), name)


def named_reader_missing(node: Node, publishers: Sequence[Publisher], named: str) -> list[str]:
    """Say which of ``publishers``' topics the node ``named`` (a full name; empty for none) has no reader of yet.

    A reader counts when it can match (:func:`matching_readers`); nothing is said when no node is named.
    """
    return [
        f"a {publisher.topic_name} reader of {named}"
        for publisher in publishers
        if named and named not in matching_readers(node, publisher, _type_name(publisher))
    ]


def readers_missing(node: Node, publisher: Publisher, minimum: int, named: str = "") -> list[str]:
    """Say what ``publisher`` still waits for before its first message goes out; empty when its readers are there.

    ``minimum`` readers matched at least (the graph's, counted). With ``named``, the full
    name of a node of the graph (its recorder), that node must have a reader of the topic
    that can match (:func:`named_reader_missing`), and every reader of the topic that can
    match must be matched: a reader from outside the graph (``ros2 topic echo``, a plotter)
    started before it is counted but never stands in for it.
    """
    missing = named_reader_missing(node, [publisher], named)
    expected = max(minimum, graph_readers(node, publisher)) if named else minimum
    matched = publisher.get_subscription_count()
    if matched < expected:
        missing.append(f"{publisher.topic_name} readers matched ({matched} of {expected})")
    return missing


def graph_readers(node: Node, publisher: Publisher) -> int:
    """Return how many readers of ``publisher``'s topic in the graph can match it (:func:`matching_readers`)."""
    return len(matching_readers(node, publisher, _type_name(publisher)))


def _type_name(publisher: Publisher) -> str:
    """Return a publisher's message type as the graph names it (``sensor_msgs/msg/JointState``)."""
    msg_type: Any = publisher.msg_type
    return f"{msg_type.__module__.split('.')[0]}/msg/{msg_type.__name__}"


def publishing_nodes(node: Node, topic: str) -> set[str]:
    """Return the full names of the nodes publishing ``topic`` (a full name)."""
    return {full_name(info.node_namespace, info.node_name) for info in node.get_publishers_info_by_topic(topic)}


def wait_for_acknowledgements(
    publishers: Sequence[Publisher],
    timeout: float | None,
    piece: float = 0.05,
    stopped: Callable[[], bool] = stop_requested,
) -> list[Publisher]:
    """Block until every reliable reader acknowledged everything ``publishers`` published.

    Parameters
    ----------
    publishers : Sequence[Publisher]
        The publishers whose readers must acknowledge.
    timeout : float | None
        Seconds to wait in all; ``None`` waits as long as it takes.
    piece : float, optional
        Seconds of one wait, so a stop ends the wait promptly.
    stopped : Callable[[], bool], optional
        Whether to stop waiting (by default: whether SIGINT or SIGTERM arrived).

    Returns
    -------
    list[Publisher]
        The publishers some reader has not acknowledged yet, when stopped or when
        ``timeout`` passed first; empty when every reader acknowledged.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    pending = list(publishers)
    while pending and not stopped() and (deadline is None or time.monotonic() <= deadline):
        pending = [publisher for publisher in pending if not publisher.wait_for_all_acked(Duration(seconds=piece))]
    return pending
