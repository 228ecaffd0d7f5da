# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Opening any bag with rosbags, and streaming its decoded messages.

:func:`open_bag` opens a rosbag2 directory (metadata versions 1 to 9, sqlite3 or
MCAP storage, split into several files, whole-file or per-message zstd
compression), a bare ``.db3`` or ``.mcap`` storage file, a rosbag2 directory whose
recording was killed before it wrote ``metadata.yaml``, or a ROS 1 ``.bag``. Messages
come out in log-time order (split files are merged) as
``(topic, msgtype, log_time_ns, message)``.

Types are decoded with the definitions stored in the bag, falling back to ROS 2
Jazzy's (or ROS 1 Noetic's) standard definitions; a type neither knows is skipped
with a note, never an error. Every problem a user can cause raises
:class:`BagError` with one sentence naming the file and the fix.

This module does not import rclpy.
"""

from __future__ import annotations

import heapq
import struct
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rosbags.interfaces import Connection, MessageDefinitionFormat
from rosbags.serde import SerdeError
from rosbags.typesys import Stores, TypesysError, get_types_from_idl, get_types_from_msg, get_typestore

from skelarm_ros.bags.logfile import printable
from skelarm_ros.bags.rosbags_adapter import (
    MCAP_MAGIC,
    READ_ERRORS,
    RawMessage,
    Storage,
    listed_files,
    missing_field,
    open_reader,
    recover_mcap,
    referenced_types,
    ros1_to_ros2,
    storage_of,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Iterator, Sequence

    from rosbags.typesys.store import Typestore

STORAGE_SUFFIXES = (".db3", ".mcap")
UNDECODABLE = "skipped topics of types with no definition in the bag or in ROS 2 Jazzy"
"""How the note on topics whose type cannot be decoded begins."""


class BagError(ValueError):
    """A bag that cannot be read; the message names the file and what would be right."""


@dataclass(frozen=True)
class TopicSummary:
    """One topic of a bag.

    Attributes
    ----------
    msgtype : str
        Its message type (``sensor_msgs/msg/JointState``).
    count : int
        Number of messages stored.
    decodable : bool
        Whether the type can be decoded (a definition is stored or known).
    """

    msgtype: str
    count: int
    decodable: bool


@dataclass
class Bag:
    """An open bag: its topics, notes and a message stream. Build with :func:`open_bag`.

    Attributes
    ----------
    path : Path
        What was opened.
    files : list[Path]
        Every storage file (and ``metadata.yaml``) read.
    storage : str
        ``sqlite3``, ``mcap`` or ``rosbag1``.
    topics : dict[str, TopicSummary]
        Topics by name.
    notes : list[str]
        Things a user should know (skipped types, recovered data...).
    message_count : int
        Messages stored, over all topics.
    """

    path: Path
    files: list[Path]
    storage: str
    topics: dict[str, TopicSummary]
    notes: list[str]
    message_count: int
    typestore: Typestore
    is_ros2: bool
    _sources: list[Callable[[set[str]], Iterator[RawMessage]]] = field(repr=False)
    _stack: ExitStack = field(repr=False)
    skipped_messages: dict[str, int] = field(default_factory=dict)
    qos: dict[str, TopicQos] = field(default_factory=dict)

    def close(self) -> None:
        """Close every file of the bag."""
        self._stack.close()

    def __enter__(self) -> Bag:
        """Return the open bag."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the bag."""
        self.close()

    def raw_messages(self, topics: Collection[str] | None = None) -> Iterator[RawMessage]:
        """Yield the serialized messages of ``topics`` (all when ``None``) in log-time order.

        Raises
        ------
        BagError
            If the storage turns out to be damaged while reading.
        """
        wanted = set(self.topics if topics is None else topics)
        streams = [source(wanted) for source in self._sources]
        merged = streams[0] if len(streams) == 1 else heapq.merge(*streams, key=lambda item: item[2])
        try:
            for item in merged:
                if item[2].__class__ is not int:  # a damaged SQLite row can hold anything as its time
                    msg = (
                        f"bag '{self.path}' is damaged: a message on {item[0]} has no log time "
                        f"({item[2]!r}); repair it (ros2 bag reindex) or re-record it"
                    )
                    raise BagError(msg)
                yield item
        except READ_ERRORS as error:
            msg = (
                f"bag '{self.path}' is damaged after some messages ({error}); "
                "repair it (ros2 bag reindex, or --recover for a truncated MCAP) or re-record it"
            )
            raise BagError(msg) from None

    def decodable(self, topics: Collection[str] | None = None) -> list[str]:
        """Return ``topics`` (all when ``None``) without those whose type cannot be decoded."""
        return [name for name in (self.topics if topics is None else topics) if self.topics[name].decodable]

    def decode(self, topic: str, msgtype: str, data: bytes) -> Any | None:
        """Deserialize one message of :meth:`raw_messages`; ``None`` if damaged (and counted as skipped)."""
        try:
            if self.is_ros2:
                return self.typestore.deserialize_cdr(data, msgtype)
            return self.typestore.deserialize_ros1(data, msgtype)
        except (SerdeError, struct.error, ValueError, IndexError, TypeError, AssertionError):
            self.skipped_messages[topic] = self.skipped_messages.get(topic, 0) + 1
            return None

    def standard(self, msgtype: str) -> bool:
        """Whether ``msgtype`` here is defined as in ROS 2 Jazzy (its fields and every nested type's)."""
        if not self.is_ros2:
            return False
        jazzy = get_typestore(Stores.ROS2_JAZZY).fielddefs
        pending, seen = [msgtype], set()
        while pending:
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            if self.typestore.fielddefs.get(name) != jazzy.get(name) or name not in jazzy:
                return False
            pending.extend(referenced_types(jazzy, name))
        return True

    def lacking(self, topic: str, paths: Sequence[str]) -> str | None:
        """Say which field a reader takes from ``topic``'s messages the bag's definition of its type lacks.

        A bag carries its own message definitions and is decoded with them; one that
        differs from ROS 2's where a reader looks (a damaged byte in a name, another
        message under the same type name) would decode to a message without the field.

        Parameters
        ----------
        topic : str
            A topic of the bag.
        paths : Sequence[str]
            The fields read, dotted (``header.stamp.sec``).

        Returns
        -------
        str | None
            What is wrong, for a sentence the caller ends with its fix; ``None`` when
            every field is there.
        """
        msgtype = self.topics[topic].msgtype
        for path in paths:
            missing = missing_field(self.typestore.fielddefs, msgtype, path)
            if missing is not None:
                fields = ", ".join(name for name, _ in self.typestore.fielddefs[msgtype][1])
                return (
                    f"bag '{self.path}' defines {msgtype} (topic '{topic}') without the field '{missing}' "
                    f"(its fields: {fields}), so its stored definition is damaged or is another message's"
                )
        return None

    def messages(self, topics: Collection[str] | None = None) -> Iterator[tuple[str, str, int, Any]]:
        """Yield ``(topic, msgtype, log_time_ns, message)`` in log-time order.

        Topics whose type cannot be decoded are left out (:attr:`notes` says so); a
        message that fails to decode is skipped and counted in :attr:`skipped_messages`.

        Parameters
        ----------
        topics : Collection[str] | None, optional
            The topics to read; ``None`` reads every decodable topic.
        """
        for topic, msgtype, log_time, data in self.raw_messages(self.decodable(topics)):
            message = self.decode(topic, msgtype, data)
            if message is not None:
                yield topic, msgtype, log_time, message


def read_messages(path: str | Path, topics: Collection[str] | None = None) -> Iterator[tuple[str, str, int, Any]]:
    """Open a bag and yield ``(topic, msgtype, log_time_ns, message)`` in log-time order.

    Parameters
    ----------
    path : str | Path
        A rosbag2 directory, a ``.db3`` / ``.mcap`` file or a ROS 1 ``.bag``.
    topics : Collection[str] | None, optional
        Topics to read; ``None`` reads every decodable topic.
    """
    with open_bag(path) as bag:
        yield from bag.messages(topics)


def _damaged(path: Path, error: BaseException, recover_hint: bool) -> BagError:
    text = str(error).rstrip(".")
    if recover_hint:
        hint = "pass --recover to read the messages written before the damage, or re-record it"
    else:
        hint = "check that it is a complete rosbag2 (sqlite3 or MCAP) or ROS 1 bag"
    return BagError(f"bag '{path}' cannot be read: it is truncated or not a bag ({text}); {hint}")


def _build_typestore(connections: list[Connection], is_ros2: bool, notes: list[str]) -> Typestore:
    """Build a type store: stored definitions first, the distribution's standard ones for everything else."""
    typs: dict[str, Any] = {}
    failed: set[str] = set()
    for conn in connections:
        fmt, data = conn.msgdef.format, conn.msgdef.data
        if fmt == MessageDefinitionFormat.NONE or conn.msgtype in typs or conn.msgtype in failed:
            continue
        try:
            if fmt == MessageDefinitionFormat.MSG:
                typs.update(get_types_from_msg(data, conn.msgtype))
            else:
                sep = "=" * 80 + "\n"
                parts = [part.split("\n", 1)[1] for part in data.split(sep)[1:]] if data.startswith(sep) else [data]
                for idl in parts:
                    typs.update(get_types_from_idl(idl))
        except (TypesysError, ValueError, IndexError) as error:
            failed.add(conn.msgtype)
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            notes.append(
                f"the stored definition of {conn.msgtype} could not be parsed ({printable(reason)[:200]}); "
                "using the default"
            )
    store = get_typestore(Stores.EMPTY)
    for name, (_, fields) in store.fielddefs.items():  # builtin_interfaces' Time and Duration are fixed
        if name in typs and [(f[0].lower(), f[1]) for f in typs[name][1]] != [(f[0].lower(), f[1]) for f in fields]:
            del typs[name]
            notes.append(f"the bag's stored definition of {name} differs from ROS 2's; using ROS 2's")
    default = get_typestore(Stores.ROS2_JAZZY if is_ros2 else Stores.ROS1_NOETIC)
    merged = {**default.fielddefs, **typs}
    # Only the bag's types and those nested in them: registering generates code for each type.
    needed: set[str] = set()
    pending = [conn.msgtype for conn in connections]
    while pending:
        name = pending.pop()
        if name in needed or name not in merged:
            continue
        needed.add(name)
        pending.extend(referenced_types(merged, name))
    store.register({name: merged[name] for name in sorted(needed)})
    return store


def _decodable(store: Typestore, msgtype: str, seen: set[str] | None = None) -> bool:
    """Whether ``msgtype`` and every type nested in it are defined in ``store``."""
    if msgtype not in store.fielddefs:
        return False
    seen = seen if seen is not None else set()
    seen.add(msgtype)
    return all(name in seen or _decodable(store, name, seen) for name in referenced_types(store.fielddefs, msgtype))


def _rosbag2_storage_files(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if p.suffix in STORAGE_SUFFIXES and p.is_file())


def open_bag(path: str | Path, *, recover: bool = False) -> Bag:
    """Open a bag for reading.

    Parameters
    ----------
    path : str | Path
        A rosbag2 directory, a bare ``.db3`` or ``.mcap`` storage file, or a ROS 1 ``.bag``.
    recover : bool, optional
        Read a truncated MCAP file up to its last complete record instead of failing.

    Returns
    -------
    Bag
        The open bag; close it (or use it as a context manager).

    Raises
    ------
    BagError
        If the path is missing, not a bag, truncated or corrupted (the message says which).
    """
    path = Path(path)
    if not path.exists():
        msg = f"bag '{path}' does not exist; pass a rosbag2 directory, a .db3 or .mcap file, or a ROS 1 .bag"
        raise BagError(msg)
    notes: list[str] = []
    stack = ExitStack()
    try:
        if path.is_dir() and not (path / "metadata.yaml").exists():
            parts = _rosbag2_storage_files(path)
            if not parts:
                msg = f"'{path}' is not a bag: it has no metadata.yaml and no .db3 or .mcap storage file"
                raise BagError(msg)
            notes.append(f"'{path}' has no metadata.yaml (the recording was not closed); read its storage files")
        elif path.is_file() and path.suffix not in (*STORAGE_SUFFIXES, ".bag"):
            msg = (
                f"'{path}' is not a bag: expected a rosbag2 directory, a .db3 or .mcap storage file, "
                f"or a ROS 1 .bag file (got suffix '{path.suffix}')"
            )
            raise BagError(msg)
        else:
            parts = [path]
        if path.is_file() and path.stat().st_size == 0:
            msg = f"bag file '{path}' is empty; it holds no messages (was the recording interrupted at once?)"
            raise BagError(msg)
        return _open_parts(path, parts, recover, notes, stack)
    except BaseException:
        stack.close()
        raise


def _open_parts(path: Path, parts: list[Path], recover: bool, notes: list[str], stack: ExitStack) -> Bag:
    """Open each part, gather connections, and make one source per storage file."""
    is_ros2 = path.suffix != ".bag"
    storages = [storage for part in parts for storage in _open_part(part, is_ros2, recover, stack)]
    connections = [conn for storage in storages for conn in storage.connections]
    for storage in storages:
        notes.extend(storage.notes)
    typestore = _build_typestore(connections, is_ros2, notes)
    topics: dict[str, TopicSummary] = {}
    for conn in connections:
        known = topics.get(conn.topic)
        count = conn.msgcount + (known.count if known else 0)
        topics[conn.topic] = TopicSummary(conn.msgtype, count, _decodable(typestore, conn.msgtype))
    undecodable = sorted({t.msgtype for t in topics.values() if not t.decodable})
    if undecodable:
        notes.append(f"{UNDECODABLE}: {undecodable}")
    return Bag(
        path=path,
        files=[file for storage in storages for file in storage.files],
        storage=storages[-1].kind if storages else "",
        topics=dict(sorted(topics.items())),
        notes=notes,
        message_count=sum(t.count for t in topics.values()),
        typestore=typestore,
        is_ros2=is_ros2,
        _sources=[source for storage in storages for source in storage.sources],
        _stack=stack,
        qos=offered_qos(connections),
    )


def _mcap_files(folder: Path) -> list[Path]:
    """Return the MCAP files a rosbag2 folder's ``metadata.yaml`` lists; none when it lists others or is unreadable."""
    try:
        files = listed_files(folder)
    except (OSError, KeyError, TypeError, ValueError):  # ruamel's YAMLError is a ValueError
        return []
    return files if files and all(file.suffix == ".mcap" for file in files) else []


def _open_folder_parts(folder: Path, files: list[Path], stack: ExitStack) -> list[Storage]:
    """Open a damaged MCAP folder's files one by one: each complete file whole, a truncated one up to its damage."""
    storages = []
    for file in files:
        try:
            reader = open_reader(file, ros2=True)
        except (KeyError, *READ_ERRORS):  # type: ignore[misc]
            storages.extend(_open_part(file, True, True, stack))
            continue
        stack.callback(reader.close)
        storages.append(storage_of(reader, file))
    storages[0].files.insert(0, folder / "metadata.yaml")
    return storages


def _open_part(part: Path, is_ros2: bool, recover: bool, stack: ExitStack) -> list[Storage]:
    """Open one storage file or directory (a truncated MCAP up to its damage with ``recover``).

    A rosbag2 folder of MCAP files that does not open whole is opened file by file with
    ``recover`` (each truncated file up to its damage); without it, the refusal says so.
    """
    if recover and part.suffix == ".mcap":
        try:
            with part.open("rb") as stream:
                magic = stream.read(len(MCAP_MAGIC))
            if magic != MCAP_MAGIC:
                msg = (
                    f"'{part}' is not an MCAP file (no MCAP magic at its start); --recover only repairs truncated MCAP"
                )
                raise BagError(msg)
            return [recover_mcap(part)]
        except BagError:
            raise
        except (ValueError, KeyError, *READ_ERRORS) as error:  # type: ignore[misc]
            raise _damaged(part, error, recover_hint=False) from None
    try:
        reader = open_reader(part, ros2=is_ros2)
    except (KeyError, *READ_ERRORS) as error:  # type: ignore[misc]
        mcap_files = _mcap_files(part) if part.is_dir() else []
        if recover and mcap_files:
            return _open_folder_parts(part, mcap_files, stack)
        hint = not recover and (part.suffix == ".mcap" or bool(mcap_files))
        raise _damaged(part, error, recover_hint=hint) from None
    stack.callback(reader.close)
    return [storage_of(reader, part)]


def qos_profile(*, reliable: bool = True, transient_local: bool = False, depth: int = 10) -> Any:
    """Return an offered-QoS entry for a bag's metadata (a :class:`rosbags.interfaces.Qos`).

    Parameters
    ----------
    reliable : bool, optional
        Reliable (else best effort) delivery.
    transient_local : bool, optional
        Transient-local (latched) durability, as ``robot_description`` uses.
    depth : int, optional
        History depth.
    """
    from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

    zero = QosTime(0, 0)
    return Qos(
        QosHistory.KEEP_LAST,
        depth,
        QosReliability.RELIABLE if reliable else QosReliability.BEST_EFFORT,
        QosDurability.TRANSIENT_LOCAL if transient_local else QosDurability.VOLATILE,
        zero,
        zero,
        QosLiveliness.AUTOMATIC,
        zero,
        False,
    )


@dataclass(frozen=True)
class TopicQos:
    """The QoS a topic was recorded with (what a player offers again).

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


def _connection_qos(connection: Connection) -> list[TopicQos]:
    """Return the offered QoS of one connection (rosbag2 profiles, or a ROS 1 connection's latching)."""
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


def offered_qos(connections: Iterable[Connection]) -> dict[str, TopicQos]:
    """Return the QoS each topic was recorded with: reliable if every publisher was, latched if one was.

    Topics the bag records no QoS for (an old rosbag2 version) are left out; the
    caller chooses their default.
    """
    found: dict[str, list[TopicQos]] = {}
    for connection in connections:
        found.setdefault(connection.topic, []).extend(_connection_qos(connection))
    return {
        topic: TopicQos(
            reliable=all(item.reliable for item in items),
            transient_local=any(item.transient_local for item in items),
            depth=max((item.depth for item in items), default=0),
        )
        for topic, items in found.items()
        if items
    }


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

    The bytes are rewritten with rosbags' converter (what ``rosbags-convert`` uses,
    :func:`skelarm_ros.bags.rosbags_adapter.ros1_to_ros2`): the same fields written again
    as CDR (a header's ``seq`` dropped), a type whose fields differ migrated by name.

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
    jazzy = get_typestore(Stores.ROS2_JAZZY)
    target = _RENAMES.get(msgtype, msgtype)
    if target not in jazzy.fielddefs or msgtype not in bag.typestore.fielddefs:
        return None
    converter, migrated = ros1_to_ros2(bag.typestore, jazzy, msgtype, target)
    return Conversion(target, converter, migrated)
