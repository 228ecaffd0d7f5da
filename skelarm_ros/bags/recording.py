# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""A rosbag2 recording written by a thread of its own: what the recorder node hands its messages to.

The recorder node (:mod:`skelarm_ros.nodes.recorder`) takes messages from its
subscriptions and hands each to :meth:`Recording.write`, which only puts it in a
bounded write queue. A writer thread drains the queue into the bag (rosbags'
``Writer``, rosbag2 format version 9), commits sqlite3 storage every
``flush_interval`` seconds, and closes the bag when :meth:`Recording.close` asks,
after writing everything queued. Writing, committing and closing chunks so never
hold up taking messages, as rosbag2's cache and its writer thread do.

When the queue is full (the storage is slower than the messages for longer than
the queue holds) :meth:`Recording.write` waits: nothing is dropped, and a reliable
publisher is held back by its unacknowledged messages instead (a lockstep
simulator then waits for the recording). The time spent waiting is counted.

What the bag says is what rosbag2 (Jazzy) writes: the ROS distribution
(``ROS_DISTRO``), each publisher's offered QoS profile as discovery reports it,
the type hash the publishers announce (:func:`plan_topic` has the rules), and in
MCAP the channel metadata ``offered_qos_profiles`` and ``topic_type_hash``. rosbags
writes its own name as the distribution and no ``topic_type_hash``;
:func:`skelarm_ros.bags.rosbags_adapter.rosbags_writer_as_rosbag2` changes that in rosbags'
writer (test/test_rosbags_adapter.py fails when rosbags moves what it changes).

Messages the middleware reports lost (QoS message-lost events, for best-effort
publishers) are counted per topic with :meth:`Recording.lost` and written into the
bag's ``custom_data`` (:data:`LOST_KEY`, :data:`LOST_BY_TOPIC_KEY`).

This module does not import rclpy.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from skelarm_ros.bags.rosbags_adapter import commit, rosbags_writer_as_rosbag2
from skelarm_ros.interface import CHANNEL_NAME, CHANNEL_TYPES, CONTROLLER_NAMESPACE, NANOSECONDS

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rosbags.interfaces import Connection

STORAGES = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}
"""Storage plugins by the name rosbag2 gives them."""
BAG_VERSION: Literal[9] = 9
"""The rosbag2 metadata version written (ROS 2 Jazzy's)."""
DEFAULT_ROS_DISTRO = "jazzy"
"""The distribution written when ``ROS_DISTRO`` is not set: the one whose rclpy and message definitions run here."""
DEFAULT_CACHE_SIZE = 16 * 1024 * 1024
"""Bytes of messages taken but not yet written that the write queue holds before taking waits."""
LOST_KEY = "skelarm_ros.messages_lost"
"""``custom_data`` key: the number of messages the middleware reported lost, over all topics (a decimal string)."""
LOST_BY_TOPIC_KEY = "skelarm_ros.messages_lost_by_topic"
"""``custom_data`` key: a JSON object of the lost-message counts by topic (only topics that lost some)."""
WAITED_KEY = "skelarm_ros.write_queue_wait_s"
"""``custom_data`` key: seconds taking messages waited for room in the full write queue (a decimal string)."""

# rmw's policy values, as rclpy's enums and discovery report them (and as rosbags numbers them).
RELIABLE = QosReliability.RELIABLE.value
TRANSIENT_LOCAL = QosDurability.TRANSIENT_LOCAL.value
_NO_HASH = ("", "INVALID")


class RecordingError(RuntimeError):
    """The bag cannot be opened or written; the message names the bag and what would help."""


def ros_distro() -> str:
    """Return the distribution to write into a bag: ``ROS_DISTRO`` (as rosbag2 does), else ``jazzy``."""
    return os.environ.get("ROS_DISTRO", "").strip() or DEFAULT_ROS_DISTRO


# -- what a topic's publishers offer, and what the recording asks for ---------------------------------


@dataclass(frozen=True)
class OfferedQos:
    """One publisher's QoS profile as discovery reports it, in rmw's numbers.

    Discovery does not carry a publisher's history and depth: they come as
    ``history`` 3 (unknown) and ``depth`` 0, and rosbag2 records them so.

    Attributes
    ----------
    history, reliability, durability, liveliness : int
        rmw's policy values (``rmw_qos_*_policy_t``; rclpy's enums have the same).
    depth : int
        History depth.
    deadline_ns, lifespan_ns, liveliness_lease_duration_ns : int
        Durations in nanoseconds (``2**63 - 1`` is infinite, 0 unspecified).
    avoid_ros_namespace_conventions : bool
        As the publisher set it.
    """

    history: int
    depth: int
    reliability: int
    durability: int
    deadline_ns: int
    lifespan_ns: int
    liveliness: int
    liveliness_lease_duration_ns: int
    avoid_ros_namespace_conventions: bool = False

    def for_bag(self) -> Qos:
        """Return the profile as rosbags writes it (rosbag2 v9 ``offered_qos_profiles`` entry)."""
        return Qos(
            QosHistory(self.history),
            self.depth,
            QosReliability(self.reliability),
            QosDurability(self.durability),
            _time(self.deadline_ns),
            _time(self.lifespan_ns),
            QosLiveliness(self.liveliness),
            _time(self.liveliness_lease_duration_ns),
            self.avoid_ros_namespace_conventions,
        )


def _time(nanoseconds: int) -> QosTime:
    """rmw_time_t from nanoseconds: infinite (2**63 - 1 ns) becomes sec 9223372036, nsec 854775807, as rmw has it."""
    return QosTime(nanoseconds // NANOSECONDS, nanoseconds % NANOSECONDS)


@dataclass(frozen=True)
class TopicPlan:
    """How one topic is recorded: what its subscription asks for and what the bag says of it.

    Attributes
    ----------
    name : str
        The full topic name.
    msgtype : str
        Its type (``sensor_msgs/msg/JointState``).
    offered : tuple[OfferedQos, ...]
        Every publisher's offered profile, written into the bag as rosbag2 does.
    type_hash : str
        The type description hash written (``RIHS01_...``).
    reliable : bool
        Subscribe reliably (every publisher is reliable); else best effort.
    transient_local : bool
        Subscribe transient local (every publisher is), so a latched message is received.
    notes : tuple[str, ...]
        Sentences for the log (mixed offers, conflicting type hashes).
    """

    name: str
    msgtype: str
    offered: tuple[OfferedQos, ...]
    type_hash: str
    reliable: bool
    transient_local: bool
    notes: tuple[str, ...] = ()


def graph_channel(name: str, msgtype: str, namespace: str, publisher_namespaces: Sequence[str]) -> str | None:
    """Say why a ``controller/...`` topic is not a controller channel of the recorder's own graph; ``None`` if it is.

    The recorder keeps its own arm graph's controller channels, not every topic under a
    ``controller`` namespace on the machine (another stack's ``/controller/optimizer/...``):
    a channel of this graph is ``<namespace>/controller/<channel>``, one name deep, of a
    channel type (PointStamped or JointState), published by a node in the recorder's
    namespace.

    Parameters
    ----------
    name, msgtype : str
        The topic (full name) and its type.
    namespace : str
        The recorder's namespace (``/`` or ``/arm1``).
    publisher_namespaces : Sequence[str]
        The namespace of each node publishing it.

    Returns
    -------
    str | None
        Why it is left out, for the recorder's log line; ``None`` when it is recorded.
    """
    home = namespace.rstrip("/")
    prefix = f"{home}/{CONTROLLER_NAMESPACE}/"
    channel = name.removeprefix(prefix)
    if not name.startswith(prefix) or not CHANNEL_NAME.fullmatch(channel):
        return f"not a {prefix}<channel> topic (a channel is one name deep)"
    if msgtype not in CHANNEL_TYPES:
        return f"its type {msgtype} is not a controller channel's ({', '.join(CHANNEL_TYPES)})"
    if not any(space.rstrip("/") == home for space in publisher_namespaces):
        published = ", ".join(sorted({space or "/" for space in publisher_namespaces}))
        return f"no node in the recorder's namespace {namespace or '/'} publishes it (only in {published})"
    return None


def plan_topic(
    name: str, msgtype: str, offered: Sequence[OfferedQos], type_hashes: Sequence[str], definition_hash: str
) -> TopicPlan:
    """Decide how to record a topic from its publishers, by rosbag2's rules.

    - Reliability: reliable when every publisher is, else best effort (which hears
      them all); durability: transient local when every publisher is, else volatile.
      History is keep-all either way (the recorder's choice; rosbag2 takes keep-last 10):
      a message not yet taken is never overwritten.
    - Type hash: the one every publisher announces; publishers that announce none
      are left out. Publishers that disagree, or none announcing one, give the hash
      of the definition the bag stores (rosbag2 writes an empty hash then, which
      rosbags cannot write), with a note when they disagree.

    Parameters
    ----------
    name, msgtype : str
        The topic and its type.
    offered : Sequence[OfferedQos]
        Each publisher's profile (at least one).
    type_hashes : Sequence[str]
        Each publisher's announced hash (``RIHS01_...``; empty or ``INVALID`` for none).
    definition_hash : str
        The hash of the message definition written into the bag.
    """
    notes = []
    reliable = all(qos.reliability == RELIABLE for qos in offered)
    if not reliable and any(qos.reliability == RELIABLE for qos in offered):
        notes.append(
            f"some, not all, publishers on '{name}' are reliable; recording it best effort to hear them all "
            "(messages of the reliable ones may be lost)"
        )
    transient_local = all(qos.durability == TRANSIENT_LOCAL for qos in offered)
    if not transient_local and any(qos.durability == TRANSIENT_LOCAL for qos in offered):
        notes.append(
            f"some, not all, publishers on '{name}' are transient local; recording it volatile "
            "(messages latched before the recording started are not received)"
        )
    announced = sorted({text for text in type_hashes if text not in _NO_HASH})
    type_hash = definition_hash
    if len(announced) == 1:
        type_hash = announced[0]
        if type_hash != definition_hash:
            notes.append(
                f"the publishers of '{name}' announce type hash {type_hash}, not that of the {msgtype} definition "
                f"the bag stores ({definition_hash}); a reader decoding with the stored definition may misread it"
            )
    elif len(announced) > 1:
        notes.append(
            f"the publishers of '{name}' announce different type hashes ({', '.join(announced)}); "
            f"writing that of the stored definition ({definition_hash})"
        )
    return TopicPlan(name, msgtype, tuple(offered), type_hash, reliable, transient_local, tuple(notes))


# -- the write queue ------------------------------------------------------------------------------------

_TOPIC = -1  # the time field of a queue item that adds a topic (its data field is the TopicPlan)


class WriteQueue:
    """A first-in first-out queue bounded in bytes, between the taking thread and the writer thread.

    An item counts against the bound from :meth:`put` until the writer says it is
    written (:meth:`done`). An item larger than the whole bound still goes in, alone.

    Parameters
    ----------
    max_bytes : int
        The bound (bytes).
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._items: deque[tuple[int, int, Any]] = deque()
        self._bytes = 0
        self._closed = False
        self._failure: BaseException | None = None
        self._ready = threading.Condition(threading.Lock())
        self.waited = 0.0
        """Seconds :meth:`put` waited for room, in all."""
        self.peak_bytes = 0
        """The most bytes held at once."""
        self.waiting = 0
        """Calls of :meth:`put` waiting for room now."""

    def put(self, item: tuple[int, int, Any], size: int) -> None:
        """Append ``item`` (``size`` bytes), first waiting while the queue is full.

        Raises
        ------
        RecordingError
            If the writer has failed (its error is the cause).
        """
        with self._ready:
            if self._bytes and self._bytes + size > self.max_bytes:
                start = time.monotonic()
                self.waiting += 1
                while self._bytes and self._bytes + size > self.max_bytes and self._failure is None:
                    self._ready.wait()
                self.waiting -= 1
                self.waited += time.monotonic() - start
            if self._failure is not None:
                raise RecordingError(str(self._failure)) from self._failure
            self._items.append(item)
            self._bytes += size
            self.peak_bytes = max(self.peak_bytes, self._bytes)
            if self._half_full():
                self._ready.notify_all()

    def _half_full(self) -> bool:
        return 2 * self._bytes >= self.max_bytes

    def take(self, timeout: float) -> tuple[list[tuple[int, int, Any]], bool]:
        """Return every queued item and whether the queue was closed, after ``timeout`` s or once half full.

        The writer takes in batches: a message stream does not wake it for every
        message (each wake-up is a thread switch and a turn of the interpreter lock
        taken from the thread that takes the messages), only when half the bound is
        queued, when the queue is closed, or after ``timeout``.
        """
        with self._ready:
            if not self._half_full() and not self._closed:
                self._ready.wait(timeout)
            items = list(self._items)
            self._items.clear()
            return items, self._closed

    def done(self, size: int) -> None:
        """Free ``size`` bytes of written items (wakes a waiting :meth:`put`)."""
        with self._ready:
            self._bytes -= size
            self._ready.notify_all()

    def close(self) -> None:
        """Say no more items come; :meth:`take` then returns at once."""
        with self._ready:
            self._closed = True
            self._ready.notify_all()

    def fail(self, error: BaseException) -> None:
        """Say the writer failed: every waiting and later :meth:`put` raises."""
        with self._ready:
            self._failure = error
            self._ready.notify_all()


# -- the recording --------------------------------------------------------------------------------------


@dataclass
class RecordingSummary:
    """What a closed recording holds.

    Attributes
    ----------
    path : Path
        The bag folder.
    storage : str
        ``sqlite3`` or ``mcap``.
    messages : int
        Messages written.
    topics : int
        Topics in the bag.
    lost : dict[str, int]
        Messages reported lost, by topic (only topics that lost some).
    waited : float
        Seconds taking messages waited for room in the full write queue.
    error : str
        Why the bag is incomplete, or empty when it was closed whole.
    """

    path: Path
    storage: str
    messages: int
    topics: int
    lost: dict[str, int] = field(default_factory=dict)
    waited: float = 0.0
    error: str = ""

    @property
    def lost_total(self) -> int:
        """Messages reported lost, over all topics."""
        return sum(self.lost.values())

    def line(self) -> str:
        """Return the recorder's closing line."""
        messages, topics = _counted(self.messages, "message"), _counted(self.topics, "topic")
        head = f"closed {self.path} ({self.storage}): {messages} on {topics}"
        if self.error:
            head = f"bag {self.path} is incomplete: {self.error}; {messages} written"
        lost = (
            f"{self.lost_total} lost ({', '.join(f'{topic} {count}' for topic, count in sorted(self.lost.items()))})"
            if self.lost
            else "none lost"
        )
        waited = f"; taking waited {self.waited:.2f} s for the write queue" if self.waited >= 0.005 else ""
        return f"{head}, {lost}{waited}"


def _counted(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


class Recording:
    """A bag written by a thread of its own from a bounded queue.

    Parameters
    ----------
    path : Path
        The bag folder to create (it must not exist).
    storage : str
        ``sqlite3`` or ``mcap``.
    flush_interval : float
        Seconds between sqlite3 commits (what survives a SIGKILL).
    max_cache_size : int
        Bytes the write queue holds before :meth:`write` waits.
    distro : str | None, optional
        The ROS distribution to write; :func:`ros_distro` when ``None``.
    """

    def __init__(
        self,
        path: Path,
        storage: str,
        *,
        flush_interval: float,
        max_cache_size: int = DEFAULT_CACHE_SIZE,
        distro: str | None = None,
    ) -> None:
        if storage not in STORAGES:
            msg = f"unknown storage '{storage}'; choose from {list(STORAGES)}"
            raise ValueError(msg)
        self.path = Path(path)
        self.storage = storage
        self.flush_interval = flush_interval
        self.distro = distro or ros_distro()
        self.typestore = get_typestore(Stores.ROS2_JAZZY)
        self._queue = WriteQueue(max_cache_size)
        self._thread: threading.Thread | None = None
        self._opened = threading.Event()
        self._error: BaseException | None = None
        self._names: list[str] = []
        self._lost: dict[str, int] = {}
        self._written = 0
        self._summary: RecordingSummary | None = None

    # -- the taking side (the node's thread) --

    def start(self) -> None:
        """Create the bag and start the writer thread.

        Raises
        ------
        RecordingError
            If the bag cannot be created (the folder exists, no permission...).
        """
        if self.path.exists():
            msg = f"output '{self.path}' exists already; choose another folder for the bag"
            raise RecordingError(msg)
        self._thread = threading.Thread(target=self._run, name="bag writer", daemon=True)
        self._thread.start()
        self._opened.wait()
        if self._error is not None:
            self._thread.join()
            msg = f"bag '{self.path}' cannot be created ({self._error})"
            raise RecordingError(msg) from self._error

    def known(self, msgtype: str) -> bool:
        """Whether a message definition of ``msgtype`` is known (ROS 2 Jazzy's), so the bag can hold it."""
        return msgtype in self.typestore.fielddefs

    def definition_hash(self, msgtype: str) -> str:
        """Return the type description hash (``RIHS01_...``) of the definition the bag stores for ``msgtype``."""
        return str(self.typestore.hash_rihs01(msgtype))

    def add_topic(self, plan: TopicPlan) -> int:
        """Add a topic to the bag (before any of its messages); return its handle for :meth:`write`."""
        handle = len(self._names)
        self._names.append(plan.name)
        self._queue.put((handle, _TOPIC, plan), 0)
        return handle

    def write(self, topic: int, log_time: int, data: bytes) -> None:
        """Queue one serialized message of topic handle ``topic``, logged at ``log_time`` (ns).

        Waits while the write queue is full.

        Raises
        ------
        RecordingError
            If the writer thread failed (the bag is then incomplete).
        """
        self._queue.put((topic, log_time, data), len(data))

    def lost(self, topic: str, total: int) -> None:
        """Note that the middleware reports ``total`` messages of ``topic`` lost so far (a running total)."""
        if total > self._lost.get(topic, 0):
            self._lost[topic] = total

    @property
    def queued_bytes_peak(self) -> int:
        """The most bytes the write queue held at once."""
        return self._queue.peak_bytes

    @property
    def writes_waiting(self) -> int:
        """Calls of :meth:`write` waiting now for room in the full write queue."""
        return self._queue.waiting

    def close(self) -> RecordingSummary:
        """Write everything queued, close the bag (``metadata.yaml``) and stop the writer thread.

        Returns
        -------
        RecordingSummary
            What the bag holds; its ``error`` says why when the bag could not be completed.
        """
        if self._summary is not None:
            return self._summary
        self._queue.close()
        if self._thread is not None:
            self._thread.join()
        error = "" if self._error is None else str(self._error)
        self._summary = RecordingSummary(
            self.path,
            self.storage,
            self._written,
            len(self._names),
            dict(self._lost),
            self._queue.waited,
            error,
        )
        return self._summary

    # -- the writer thread --

    def _run(self) -> None:
        try:
            writer = Writer(self.path, version=BAG_VERSION, storage_plugin=STORAGES[self.storage])
            writer.open()
            rosbags_writer_as_rosbag2(writer, self.distro)
        except Exception as error:  # any failure to create the bag is the start's error
            self._error = error
            self._opened.set()
            return
        self._opened.set()
        try:
            self._drain(writer)
            for key, value in self._custom_data().items():
                writer.set_custom_data(key, value)
            writer.close()
        except Exception as error:  # disk full, a file removed: the bag stays as far as it got
            self._error = error
            self._queue.fail(error)
            if writer.storage is not None:
                writer.abort()

    def _drain(self, writer: Writer) -> None:
        """Write queued items until the queue is closed and empty; commit every ``flush_interval``."""
        connections: dict[int, Connection] = {}
        next_commit = time.monotonic() + self.flush_interval
        while True:
            items, closed = self._queue.take(max(0.0, next_commit - time.monotonic()))
            size = 0
            for topic, log_time, data in items:
                if log_time == _TOPIC:
                    connections[topic] = self._add_connection(writer, data)
                    continue
                writer.write(connections[topic], log_time, data)
                size += len(data)
                self._written += 1
            self._queue.done(size)
            if time.monotonic() >= next_commit:
                commit(writer)  # sqlite3: what is committed survives a SIGKILL (MCAP writes whole chunks)
                next_commit = time.monotonic() + self.flush_interval
            if closed and not items:
                return

    def _add_connection(self, writer: Writer, plan: TopicPlan) -> Connection:
        msgdef, _ = self.typestore.generate_msgdef(plan.msgtype, ros_version=2)
        return writer.add_connection(
            plan.name,
            plan.msgtype,
            msgdef=msgdef,
            rihs01=plan.type_hash,
            offered_qos_profiles=[qos.for_bag() for qos in plan.offered],
        )

    def _custom_data(self) -> dict[str, str]:
        """Return the recorder's entries of the bag's ``custom_data`` (strings, as rosbag2's map holds them)."""
        return {
            LOST_KEY: str(sum(self._lost.values())),
            LOST_BY_TOPIC_KEY: json.dumps(dict(sorted(self._lost.items()))),
            WAITED_KEY: f"{self._queue.waited:.3f}",
        }
