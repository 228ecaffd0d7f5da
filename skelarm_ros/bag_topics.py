# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""What playing a bag needs of its topics beyond :mod:`skelarm_ros.bags`: offered QoS and ROS 1 types.

:func:`offered_qos` reads the QoS each topic was recorded with (a rosbag2 bag's
offered QoS profiles, a ROS 1 connection's ``latching`` flag) from the storage
files a :class:`~skelarm_ros.bags.Bag` has open. :func:`ros2_converter` turns the
bytes of a ROS 1 message into the CDR bytes of its ROS 2 type, with rosbags'
converter (the one ``rosbags-convert`` uses): the same wire format is rewritten
field for field (a header's ``seq`` dropped), a type whose fields differ is
migrated field by field.

Both reach into rosbags (its readers' connections, its converter module) here
only, so that a change of rosbags shows in one place.

This module does not import rclpy.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rosbags.typesys import Stores, get_typestore

from skelarm_ros.bags import STORAGE_SUFFIXES, Bag

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable


def _open_errors() -> tuple[type[Exception], ...]:
    """Return what rosbags' readers raise when a storage file cannot be opened again (a truncated MCAP, say)."""
    from rosbags.rosbag1 import ReaderError as ReaderError1
    from rosbags.rosbag2 import ReaderError as ReaderError2

    errors: tuple[type[Exception], ...] = (ReaderError1, ReaderError2, OSError, ValueError, KeyError, IndexError)
    try:
        import apsw

        errors = (*errors, apsw.Error)
    except ImportError:  # pragma: no cover - apsw comes with rosbags
        pass
    return (*errors, TypeError, EOFError)


@dataclass(frozen=True)
class TopicQos:
    """The QoS a topic was recorded with.

    Attributes
    ----------
    reliable : bool
        Every recorded publisher offered reliable delivery (else best effort).
    transient_local : bool
        A recorded publisher offered transient-local durability (latched).
    depth : int
        The largest history depth offered (0 when the bag does not say).
    """

    reliable: bool = True
    transient_local: bool = False
    depth: int = 0


def _merge(profiles: Iterable[TopicQos]) -> TopicQos:
    """One QoS for several publishers: reliable if all were, latched if one was."""
    items = list(profiles)
    return TopicQos(
        reliable=all(item.reliable for item in items),
        transient_local=any(item.transient_local for item in items),
        depth=max((item.depth for item in items), default=0),
    )


def _connection_qos(connection: Any) -> list[TopicQos]:
    """Return the offered QoS of one rosbags connection (rosbag2 profiles, or ROS 1 latching)."""
    ext = connection.ext
    profiles = getattr(ext, "offered_qos_profiles", None)
    if profiles is None:  # ROS 1: reliable TCP, latched when the publisher latched
        return [TopicQos(reliable=True, transient_local=bool(getattr(ext, "latching", 0)))]
    return [
        TopicQos(
            reliable=profile.reliability.name == "RELIABLE",
            transient_local=profile.durability.name == "TRANSIENT_LOCAL",
            depth=int(profile.depth),
        )
        for profile in profiles
    ]


def _storage_paths(bag: Bag) -> list[Path]:
    """Return the paths to open again: the bag itself, or each storage file of a folder without metadata."""
    path = bag.path
    if path.is_file() or (path / "metadata.yaml").exists():
        return [path]
    return [file for file in bag.files if file.suffix in STORAGE_SUFFIXES]


def offered_qos(bag: Bag) -> dict[str, TopicQos]:
    """Return the QoS each topic of ``bag`` was recorded with, by topic.

    Topics the bag records no QoS for (an old rosbag2 version, a storage file that
    cannot be opened a second time, such as a truncated MCAP) are left out; the
    caller chooses their default.

    Parameters
    ----------
    bag : Bag
        An open bag (:func:`skelarm_ros.bags.open_bag`).

    Returns
    -------
    dict[str, TopicQos]
        By topic name.
    """
    from rosbags.rosbag1 import Reader as Reader1
    from rosbags.rosbag2 import Reader as Reader2

    found: dict[str, list[TopicQos]] = {}
    for path in _storage_paths(bag):
        try:
            reader = Reader2(path) if bag.is_ros2 else Reader1(path)
            reader.open()
        except _open_errors():
            continue  # the QoS of its topics stays unknown
        try:
            for connection in reader.connections:
                found.setdefault(connection.topic, []).extend(_connection_qos(connection))
        finally:
            reader.close()
    return {topic: _merge(profiles) for topic, profiles in found.items() if profiles}


# ROS 1 types that ROS 2 knows by another name (as rosbags-convert renames them).
_RENAMES = {"tf/msg/tfMessage": "tf2_msgs/msg/TFMessage"}


@dataclass(frozen=True)
class Conversion:
    """How a ROS 1 type is played as ROS 2.

    Attributes
    ----------
    msgtype : str
        The ROS 2 type (``sensor_msgs/msg/JointState``).
    convert : Callable[[bytes], bytes]
        ROS 1 bytes to little-endian CDR bytes of :attr:`msgtype`.
    migrated : bool
        Whether the two definitions differ beyond the header's ``seq`` (fields then
        matched by name and type, the others set to their defaults).
    """

    msgtype: str
    convert: Callable[[bytes], bytes]
    migrated: bool


def ros2_converter(bag: Bag, msgtype: str) -> Conversion | None:
    """Return how to play a ROS 1 bag's ``msgtype`` as its ROS 2 type, or ``None`` when ROS 2 has none.

    Parameters
    ----------
    bag : Bag
        An open ROS 1 bag (its type store holds the stored ROS 1 definitions).
    msgtype : str
        The type as rosbags names it (``sensor_msgs/msg/JointState``).

    Returns
    -------
    Conversion | None
        The ROS 2 type and the byte converter; ``None`` when ROS 2 Jazzy has no type of
        that name (``rosgraph_msgs/msg/Log``, a package of ROS 1 only).
    """
    from rosbags.convert.converter import generate_message_converter

    jazzy = get_typestore(Stores.ROS2_JAZZY)
    target = _RENAMES.get(msgtype, msgtype)
    if target not in jazzy.fielddefs or msgtype not in bag.typestore.fielddefs:
        return None
    said = io.StringIO()
    with contextlib.redirect_stdout(said):  # rosbags prints a line when it migrates a type
        converter = generate_message_converter(bag.typestore, jazzy, msgtype, target, {}, src_is2=False, dst_is2=True)

    def convert(data: bytes) -> bytes:
        return bytes(converter(data))

    return Conversion(target, convert, migrated=bool(said.getvalue()))
