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
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rosbags.interfaces import Connection, ConnectionExtRosbag2, MessageDefinitionFormat
from rosbags.rosbag1 import Reader as Reader1
from rosbags.rosbag1 import ReaderError as ReaderError1
from rosbags.rosbag2 import Reader as Reader2
from rosbags.rosbag2 import ReaderError as ReaderError2
from rosbags.serde import SerdeError
from rosbags.typesys import Stores, TypesysError, get_types_from_idl, get_types_from_msg, get_typestore

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterator

    from rosbags.typesys.store import Typestore

try:  # pragma: no cover - which one exists depends on the Python version
    from compression import zstd
except ImportError:  # pragma: no cover
    from backports import zstd

STORAGE_SUFFIXES = (".db3", ".mcap")
_MCAP_MAGIC = b"\x89MCAP0\r\n"
# What rosbags' readers raise on damaged bytes: their own errors, and plain Python errors from
# parsing garbage (a truncated MCAP header, say, gives TypeError or IndexError).
_READ_ERRORS: tuple[type[Exception], ...] = (
    ReaderError1,
    ReaderError2,
    OSError,
    struct.error,
    EOFError,
    TypeError,
    IndexError,
    UnicodeDecodeError,
    OverflowError,
)
try:
    import apsw

    _READ_ERRORS = (*_READ_ERRORS, apsw.Error)
except ImportError:  # pragma: no cover - apsw comes with rosbags
    pass
if hasattr(zstd, "ZstdError"):
    _READ_ERRORS = (*_READ_ERRORS, zstd.ZstdError)

RawMessage = tuple[str, str, int, bytes]
"""``(topic, msgtype, log_time_ns, serialized bytes)``."""


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
            yield from merged
        except _READ_ERRORS as error:
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
            stack: list[Any] = [fdef for _, fdef in jazzy[name][1]]
            while stack:
                node, detail = stack.pop()
                if node.name == "NAME":
                    pending.append(detail)
                elif node.name in ("ARRAY", "SEQUENCE"):
                    stack.append(detail[0])
        return True

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


def _connection_stream(
    messages: Callable[[list[Connection]], Iterator[tuple[Connection, int, bytes]]],
    connections: list[Connection],
    decompress: bool,
) -> Callable[[set[str]], Iterator[RawMessage]]:
    """Make a source: the messages of one storage for a set of topics."""

    def source(wanted: set[str]) -> Iterator[RawMessage]:
        chosen = [conn for conn in connections if conn.topic in wanted]
        if not chosen:
            return
        if decompress:
            for conn, timestamp, data in messages(chosen):
                yield conn.topic, conn.msgtype, timestamp, zstd.decompress(data)
        else:
            for conn, timestamp, data in messages(chosen):
                yield conn.topic, conn.msgtype, timestamp, data

    return source


def printable(text: str) -> str:
    """Return ``text`` with its control characters written out as escapes, as a damaged bag may hold them."""
    return "".join(char if char.isprintable() or char in "\n\t" else _escape(char) for char in text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 256 else f"\\u{code:04x}"


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
    default = get_typestore(Stores.ROS2_JAZZY if is_ros2 else Stores.ROS1_NOETIC)
    merged = {**default.fielddefs, **typs}
    store = get_typestore(Stores.EMPTY)
    store.register(merged)
    return store


def _decodable(store: Typestore, msgtype: str, seen: set[str] | None = None) -> bool:
    """Whether ``msgtype`` and every type nested in it are defined in ``store``."""
    if msgtype not in store.fielddefs:
        return False
    seen = seen if seen is not None else set()
    seen.add(msgtype)
    stack: list[Any] = [fdef for _, fdef in store.fielddefs[msgtype][1]]
    while stack:
        node, detail = stack.pop()
        if getattr(node, "name", "") == "NAME":
            if detail not in seen and not _decodable(store, detail, seen):
                return False
        elif getattr(node, "name", "") in ("ARRAY", "SEQUENCE"):
            stack.append(detail[0])
    return True


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
    sources: list[Callable[[set[str]], Iterator[RawMessage]]] = []
    connections: list[Connection] = []
    files: list[Path] = []
    storage = ""
    is_ros2 = path.suffix != ".bag"
    for part in parts:
        if recover and part.suffix == ".mcap":
            try:
                recovered = _RecoveredMcap(part)
            except BagError:
                raise
            except (ValueError, KeyError, *_READ_ERRORS) as error:  # type: ignore[misc]
                raise _damaged(part, error, recover_hint=False) from None
            notes.extend(recovered.notes)
            connections.extend(recovered.connections)
            sources.append(_connection_stream(recovered.messages, recovered.connections, decompress=False))
            files.append(part)
            storage = "mcap"
            continue
        reader: Reader1 | Reader2
        try:
            reader = Reader2(part) if is_ros2 else Reader1(part)
            reader.open()
        except (KeyError, *_READ_ERRORS) as error:  # type: ignore[misc]
            raise _damaged(part, error, recover_hint=part.suffix == ".mcap" and not recover) from None
        stack.callback(reader.close)
        connections.extend(reader.connections)
        if isinstance(reader, Reader1):
            storage = "rosbag1"
            files.append(part)
            sources.append(_connection_stream(reader.messages, reader.connections, decompress=False))
            continue
        inner = reader.storage
        storages = getattr(inner, "storages", None)
        if storages is None:  # a bare storage file
            storage = "mcap" if part.suffix == ".mcap" else "sqlite3"
            files.append(part)
            sources.append(_connection_stream(inner.messages, inner.connections, decompress=False))
            continue
        # A rosbag2 directory: one source per split file, merged in time by Bag.raw_messages.
        files.append(part / "metadata.yaml")
        files.extend(part / Path(name).name for name in inner_files(part))
        storage = "mcap" if storages and type(storages[0]).__name__ == "McapReader" else "sqlite3"
        per_message = inner.metadata.compression_mode == "message"
        if inner.metadata.compression_mode:
            notes.append(f"zstd compression per {inner.metadata.compression_mode}")
        for sub in storages:
            sources.append(_connection_stream(sub.messages, sub.connections, decompress=per_message))
    typestore = _build_typestore(connections, is_ros2, notes)
    topics: dict[str, TopicSummary] = {}
    for conn in connections:
        known = topics.get(conn.topic)
        count = conn.msgcount + (known.count if known else 0)
        topics[conn.topic] = TopicSummary(conn.msgtype, count, _decodable(typestore, conn.msgtype))
    undecodable = sorted({t.msgtype for t in topics.values() if not t.decodable})
    if undecodable:
        notes.append(f"skipped topics of types with no definition in the bag or in ROS 2 Jazzy: {undecodable}")
    return Bag(
        path=path,
        files=files,
        storage=storage,
        topics=dict(sorted(topics.items())),
        notes=notes,
        message_count=sum(t.count for t in topics.values()),
        typestore=typestore,
        is_ros2=is_ros2,
        _sources=sources,
        _stack=stack,
    )


def inner_files(directory: Path) -> list[str]:
    """Return the storage files a rosbag2 directory's ``metadata.yaml`` lists, in order."""
    from ruamel.yaml import YAML

    meta = YAML(typ="safe").load((directory / "metadata.yaml").read_text())
    return list(meta["rosbag2_bagfile_information"]["relative_file_paths"])


class _RecoveredMcap:
    """The complete records of a truncated MCAP file, found by scanning it from the start."""

    def __init__(self, path: Path) -> None:
        from rosbags.rosbag2 import storage_mcap as mcap

        self.path = path
        self.notes: list[str] = []
        self.connections: list[Connection] = []
        data = path.read_bytes()
        if not data.startswith(_MCAP_MAGIC):
            msg = f"'{path}' is not an MCAP file (no MCAP magic at its start); --recover only repairs truncated MCAP"
            raise BagError(msg)
        self._data = data
        self._mcap = mcap
        self._schemas: dict[int, tuple[str, str, str]] = {}
        self._channels: dict[int, Connection] = {}
        self._scan_meta()

    def _records_of(self, view: memoryview, start: int) -> Iterator[tuple[int, memoryview]]:
        """Yield ``(opcode, body)`` of each complete record, stopping at the first incomplete one."""
        offset = start
        while offset + 9 <= len(view):
            opcode = view[offset]
            (size,) = struct.unpack_from("<Q", view, offset + 1)
            end = offset + 9 + size
            if end > len(view):
                return
            yield opcode, view[offset + 9 : end]
            offset = end

    def _walk(self) -> Iterator[tuple[int, memoryview]]:
        """Top-level records and those inside chunks; a damaged chunk ends the walk."""
        view = memoryview(self._data)
        for opcode, body in self._records_of(view, len(_MCAP_MAGIC)):
            if opcode == 0x06:
                try:
                    _, _, size, crc = struct.unpack_from("<QQQI", body, 0)
                    (name_len,) = struct.unpack_from("<I", body, 28)
                    compression = bytes(body[32 : 32 + name_len]).decode()
                    (csize,) = struct.unpack_from("<Q", body, 32 + name_len)
                    payload = bytes(body[40 + name_len : 40 + name_len + csize])
                    raw = self._mcap.decompress(payload, compression, size, crc)
                except (ValueError, *_READ_ERRORS):  # type: ignore[misc]
                    self.notes.append(f"a damaged chunk in '{self.path}' ends the recovered data")
                    return
                yield from self._records_of(memoryview(raw), 0)
            elif opcode in (0x03, 0x04, 0x05):
                yield opcode, body

    def _scan_meta(self) -> None:
        count = 0
        last = 0
        for opcode, body in self._walk():
            rec = BytesIO(bytes(body)) if opcode != 0x05 else None
            if rec is not None and opcode == 0x03:
                (key,) = struct.unpack("<H", rec.read(2))
                self._schemas[key] = tuple(self._mcap.read_string(rec) for _ in range(3))  # type: ignore[assignment]
            elif rec is not None and opcode == 0x04:
                key, schema_id = struct.unpack("<HH", rec.read(4))
                topic = self._mcap.read_string(rec)
                encoding = self._mcap.read_string(rec)
                metadata = self._mcap.read_bytes(rec)
                name, fmt, text = self._schemas.get(schema_id, ("", "", ""))
                schema = self._mcap.Schema(schema_id, name, fmt, text) if name else None
                self._channels[key] = Connection(
                    key,
                    topic,
                    name,
                    self._mcap.get_msgdef(schema),
                    "",
                    0,
                    ConnectionExtRosbag2(encoding, self._mcap.get_qos(metadata)),
                    self,
                )
            elif opcode == 0x05:
                count += 1
                (channel,) = struct.unpack_from("<H", body, 0)
                conn = self._channels.get(channel)
                if conn is not None:
                    self._channels[channel] = conn._replace(msgcount=conn.msgcount + 1)
                last = max(last, struct.unpack_from("<Q", body, 6)[0])
        self.connections = list(self._channels.values())
        self.notes.append(f"recovered {count} complete messages from truncated MCAP '{self.path}'")

    def messages(self, connections: list[Connection]) -> Iterator[tuple[Connection, int, bytes]]:
        """Yield the recovered messages of ``connections`` in log-time order."""
        wanted = {conn.id: conn for conn in connections}
        found = []
        for opcode, body in self._walk():
            if opcode == 0x05:
                (channel,) = struct.unpack_from("<H", body, 0)
                if channel in wanted:
                    (log_time,) = struct.unpack_from("<Q", body, 6)
                    found.append((log_time, channel, bytes(body[22:])))
        found.sort(key=lambda item: item[0])
        for log_time, channel, data in found:
            yield wanted[channel], log_time, data


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
