# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Everything this package takes from rosbags beyond its documented API, in one module.

The package reads and writes bags with rosbags' public classes (``Reader``,
``Writer``, the type stores). A few things it needs are not public, and each is
reached here only:

- the readers of a rosbag2 directory's split files (``Reader.storage.storages``),
  so that their messages can be merged in log-time order (rosbags reads the files
  one after the other), with the zstd decompression of per-message compressed bags
  that rosbags does in the step this skips;
- which storage plugin reads those files (``McapReader`` or ``Sqlite3Reader``);
- the record readers of ``rosbags.rosbag2.storage_mcap`` (``decompress``,
  ``read_string``, ``read_bytes``, ``Schema``, ``get_msgdef``, ``get_qos``), which
  :class:`RecoveredMcap` uses to read a truncated MCAP file up to its damage;
- the sqlite3 connection of a ``Writer`` (``Writer.storage.conn``), to commit what a
  recording has written so far (:func:`commit`);
- a ``Writer``'s storage objects (``Sqlite3Writer``, ``McapWriter`` and their
  channels), to write the distribution and MCAP's ``topic_type_hash`` as rosbag2
  does (:func:`rosbags_writer_as_rosbag2`);
- the layout of a type store's field definitions (``Typestore.fielddefs``:
  ``(constants, [(field, (Nodetype, detail))])``), walked by :func:`referenced_types`
  and :func:`missing_field`.

``test/test_rosbags_adapter.py`` checks each of them against the installed rosbags
(the version ``requirements.lock`` pins) and says in one sentence what moved when
one changes.

This module does not import rclpy.
"""

from __future__ import annotations

import contextlib
import io
import struct
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rosbags.interfaces import Connection, ConnectionExtRosbag2, Nodetype
from rosbags.rosbag1 import Reader as Reader1
from rosbags.rosbag1 import ReaderError as ReaderError1
from rosbags.rosbag2 import Reader as Reader2
from rosbags.rosbag2 import ReaderError as ReaderError2
from rosbags.rosbag2 import Writer
from rosbags.rosbag2 import storage_mcap as mcap

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from rosbags.typesys.store import Typestore

try:  # pragma: no cover - which one exists depends on the Python version
    from compression import zstd
except ImportError:  # pragma: no cover
    from backports import zstd

RawMessage = tuple[str, str, int, bytes]
"""``(topic, msgtype, log_time_ns, serialized bytes)``."""

# What rosbags' readers raise on damaged bytes: their own errors, and plain Python errors from
# parsing garbage (a truncated MCAP header, say, gives TypeError or IndexError).
READ_ERRORS: tuple[type[Exception], ...] = (
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

    READ_ERRORS = (*READ_ERRORS, apsw.Error)
except ImportError:  # pragma: no cover - apsw comes with rosbags
    pass
if hasattr(zstd, "ZstdError"):
    READ_ERRORS = (*READ_ERRORS, zstd.ZstdError)

MCAP_MAGIC = b"\x89MCAP0\r\n"


@dataclass
class Storage:
    """One opened storage (a rosbag2 directory, a bare storage file or a ROS 1 bag).

    Attributes
    ----------
    kind : str
        ``sqlite3``, ``mcap`` or ``rosbag1``.
    files : list[Path]
        The files read (a directory's ``metadata.yaml`` and its storage files).
    connections : list[Connection]
        Its topics, with their message counts.
    sources : list[Callable[[set[str]], Iterator[RawMessage]]]
        One message stream per storage file, each in log-time order, for a set of topics.
    notes : list[str]
        Things a user should know (compression, recovered data).
    """

    kind: str
    files: list[Path]
    connections: list[Connection]
    sources: list[Callable[[set[str]], Iterator[RawMessage]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def open_reader(path: Path, *, ros2: bool) -> Reader1 | Reader2:
    """Open rosbags' reader for a rosbag2 directory or storage file (``ros2``) or a ROS 1 bag.

    Raises
    ------
    KeyError, READ_ERRORS
        As rosbags raises them on a damaged or foreign file.
    """
    reader = Reader2(path) if ros2 else Reader1(path)
    reader.open()
    return reader


def storage_of(reader: Reader1 | Reader2, path: Path) -> Storage:
    """Describe an open reader of ``path``: its kind, files, connections and one source per storage file."""
    if isinstance(reader, Reader1):
        return Storage("rosbag1", [path], list(reader.connections), [_stream(reader.messages, reader.connections)])
    storages = getattr(reader.storage, "storages", None)
    if storages is None:  # a bare storage file
        kind = "mcap" if path.suffix == ".mcap" else "sqlite3"
        return Storage(kind, [path], list(reader.connections), [_stream(reader.messages, reader.connections)])
    # A rosbag2 directory: one source per split file (Bag.raw_messages merges them in time).
    files = [path / "metadata.yaml", *(path / Path(name).name for name in _listed_files(path))]
    kind = "mcap" if storages and isinstance(storages[0], mcap.McapReader) else "sqlite3"
    mode = reader.compression_mode
    notes = [f"zstd compression per {mode}"] if mode else []
    per_message = mode == "message"
    sources = [_stream(sub.messages, sub.connections, decompress=per_message) for sub in storages]
    return Storage(kind, files, list(reader.connections), sources, notes)


def _listed_files(directory: Path) -> list[str]:
    """Return the storage files a rosbag2 directory's ``metadata.yaml`` lists, in order."""
    from ruamel.yaml import YAML

    meta = YAML(typ="safe").load((directory / "metadata.yaml").read_text())
    return list(meta["rosbag2_bagfile_information"]["relative_file_paths"])


def _stream(
    messages: Callable[[list[Connection]], Iterator[tuple[Connection, int, bytes]]],
    connections: list[Connection],
    *,
    decompress: bool = False,
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


def recover_mcap(path: Path) -> Storage:
    """Open the complete records of a truncated MCAP file (see :class:`RecoveredMcap`)."""
    recovered = RecoveredMcap(path)
    return Storage(
        "mcap", [path], recovered.connections, [_stream(recovered.messages, recovered.connections)], recovered.notes
    )


def commit(writer: Writer) -> None:
    """Commit what a sqlite3 ``Writer`` has written so far (MCAP writes whole chunks by itself)."""
    connection = getattr(writer.storage, "conn", None)
    if connection is not None:
        connection.commit()


def referenced_types(fielddefs: Mapping[str, Any], msgtype: str) -> list[str]:
    """Return the message types the fields of ``msgtype`` use (inside arrays and sequences too), once each.

    Parameters
    ----------
    fielddefs : Mapping[str, Any]
        A type store's ``fielddefs``; ``msgtype`` must be in it.
    msgtype : str
        The message type (``sensor_msgs/msg/JointState``).
    """
    found: list[str] = []
    stack: list[Any] = [fdef for _, fdef in fielddefs[msgtype][1]]
    while stack:
        node, detail = stack.pop()
        if node == Nodetype.NAME:
            if detail not in found:
                found.append(detail)
        elif node in (Nodetype.ARRAY, Nodetype.SEQUENCE):
            stack.append(detail[0])
    return found


def missing_field(fielddefs: Mapping[str, Any], msgtype: str, path: str) -> str | None:
    """Return the part of the dotted field ``path`` (``header.stamp.sec``) that ``msgtype`` lacks, or ``None``.

    Parameters
    ----------
    fielddefs : Mapping[str, Any]
        A type store's ``fielddefs``.
    msgtype : str
        The message type the path starts in.
    path : str
        Field names joined by dots; every one but the last must be a message field.

    Returns
    -------
    str | None
        The path up to and including the first field that is not there (or is not a
        message where the path goes on), or ``None`` when the whole path is there.
    """
    current = msgtype
    walked: list[str] = []
    for name in path.split("."):
        walked.append(name)
        fields = dict(fielddefs[current][1]) if current in fielddefs else {}
        if name not in fields:
            return ".".join(walked)
        node, detail = fields[name]
        current = detail if node == Nodetype.NAME else ""  # not a message: nothing further down
    return None


class RecoveredMcap:
    """The complete records of a truncated MCAP file, found by scanning it from the start.

    Attributes
    ----------
    connections : list[Connection]
        One per channel found, with the count of its complete messages.
    notes : list[str]
        What was recovered, and a damaged chunk when one ends the data.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.notes: list[str] = []
        self.connections: list[Connection] = []
        self._data = path.read_bytes()
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
        for opcode, body in self._records_of(view, len(MCAP_MAGIC)):
            if opcode == 0x06:
                try:
                    _, _, size, crc = struct.unpack_from("<QQQI", body, 0)
                    (name_len,) = struct.unpack_from("<I", body, 28)
                    compression = bytes(body[32 : 32 + name_len]).decode()
                    (csize,) = struct.unpack_from("<Q", body, 32 + name_len)
                    payload = bytes(body[40 + name_len : 40 + name_len + csize])
                    raw = mcap.decompress(payload, compression, size, crc)
                except (ValueError, *READ_ERRORS):  # type: ignore[misc]
                    self.notes.append(f"a damaged chunk in '{self.path}' ends the recovered data")
                    return
                yield from self._records_of(memoryview(raw), 0)
            elif opcode in (0x03, 0x04, 0x05):
                yield opcode, body

    def _channel(self, rec: BytesIO) -> tuple[int, Connection]:
        """Read a channel record into a connection (no messages counted yet)."""
        key, schema_id = struct.unpack("<HH", rec.read(4))
        topic = mcap.read_string(rec)
        encoding = mcap.read_string(rec)
        metadata = mcap.read_bytes(rec)
        name, fmt, text = self._schemas.get(schema_id, ("", "", ""))
        schema = mcap.Schema(schema_id, name, fmt, text) if name else None
        ext = ConnectionExtRosbag2(encoding, mcap.get_qos(metadata))
        return key, Connection(key, topic, name, mcap.get_msgdef(schema), "", 0, ext, self)

    def _scan_meta(self) -> None:
        count = 0
        for opcode, body in self._walk():
            if opcode == 0x03:
                rec = BytesIO(bytes(body))
                (key,) = struct.unpack("<H", rec.read(2))
                self._schemas[key] = tuple(mcap.read_string(rec) for _ in range(3))  # type: ignore[assignment]
            elif opcode == 0x04:
                key, conn = self._channel(BytesIO(bytes(body)))
                self._channels[key] = conn
            elif opcode == 0x05:
                count += 1
                (channel,) = struct.unpack_from("<H", body, 0)
                known = self._channels.get(channel)
                if known is not None:
                    self._channels[channel] = known._replace(msgcount=known.msgcount + 1)
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


def ros1_to_ros2(
    source: Typestore, target: Typestore, msgtype: str, target_type: str
) -> tuple[Callable[[bytes], bytes], bool]:
    """Return a converter of ``msgtype``'s ROS 1 bytes into ``target_type``'s CDR bytes, and whether it migrates.

    rosbags' ``generate_message_converter`` (not documented API; what
    ``rosbags-convert`` uses) builds it, and prints a line when the two definitions
    differ (a migration): that line is caught here and returned as the flag.
    """
    from rosbags.convert.converter import generate_message_converter

    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        converter = generate_message_converter(source, target, msgtype, target_type, {}, src_is2=False, dst_is2=True)

    def convert(data: bytes) -> bytes:
        return bytes(converter(data))

    return convert, bool(said.getvalue())


class RosbagsMoved(RuntimeError):
    """The installed rosbags is not built as this module expects (a release moved an internal it uses)."""


def rosbags_writer_as_rosbag2(writer: Writer, distro: str) -> None:
    """Make an open rosbags ``Writer`` write what rosbag2 writes.

    rosbags 0.11 writes ``ros_distro: rosbags`` (in ``metadata.yaml``, in the metadata
    it stores inside the bag file, and in the sqlite3 ``schema`` table) and MCAP
    channels without ``topic_type_hash``. This is the one place that reaches into
    rosbags' writer for it (its storage objects are not public API):

    - sqlite3 (``Sqlite3Writer``): the ``schema`` row gets ``distro`` (through its
      connection, ``storage.conn``);
    - MCAP (``McapWriter``): each channel gets ``topic_type_hash`` (the connection's
      digest) beside ``offered_qos_profiles``, as rosbag2_storage_mcap writes them;
    - both: the serialized metadata the storage keeps, and ``metadata.yaml`` when the
      writer closes, say ``ros_distro: <distro>``.

    test/test_rosbags_adapter.py checks every internal used against the installed rosbags.

    Parameters
    ----------
    writer : Writer
        A rosbags writer just opened (no connection added yet).
    distro : str
        The ROS distribution to write (``jazzy``).

    Raises
    ------
    RosbagsMoved
        If rosbags' writer is not built as this expects (a rosbags release moved it).
    """
    from rosbags.rosbag2.storage_sqlite3 import Sqlite3Writer
    from ruamel.yaml import YAML

    storage = writer.storage
    original_close = getattr(storage, "close", None)
    if original_close is None:
        msg = "rosbags' Writer has no open storage with close(); the installed rosbags is not the one pinned"
        raise RosbagsMoved(msg)

    def with_distro(text: str) -> str:
        yaml = YAML(typ="safe")
        yaml.default_flow_style = False
        data = yaml.load(text)
        info = data.get("rosbag2_bagfile_information", data)
        info["ros_distro"] = distro
        out = io.StringIO()
        yaml.dump(data, out)
        return out.getvalue()

    def close_storage(version: int, metadata: str) -> None:
        original_close(version, with_distro(metadata).strip())

    def close_writer() -> None:
        original_writer_close()
        written = writer.metapath.read_text(encoding="utf-8")
        temporary = writer.metapath.with_suffix(".yaml.tmp")
        temporary.write_text(with_distro(written), encoding="utf-8")
        temporary.replace(writer.metapath)

    if isinstance(storage, Sqlite3Writer):
        storage.conn.execute("UPDATE schema SET ros_distro = ?", (distro,))
    elif isinstance(storage, mcap.McapWriter):

        def add_channel(connection: Connection, offered_qos_profiles: str) -> None:
            metadata = BytesIO()
            for key, value in (("offered_qos_profiles", offered_qos_profiles), ("topic_type_hash", connection.digest)):
                mcap.write_string(metadata, key)
                mcap.write_string(metadata, value)
            encoding = connection.ext.serialization_format  # type: ignore[union-attr]
            channel = mcap.Channel(connection.id, connection.msgtype, connection.topic, encoding, metadata.getvalue())
            storage.channels.append(channel)
            storage.channel_stats[connection.id] = 0
            mcap.write_channel(storage.chunk.bio, channel, storage.schemas)

        storage.add_connection = add_channel  # type: ignore[method-assign]
    else:
        msg = f"rosbags' Writer opened a {type(storage).__name__}, which this does not know; use the pinned rosbags"
        raise RosbagsMoved(msg)
    original_writer_close = writer.close
    storage.close = close_storage  # type: ignore[method-assign]
    writer.close = close_writer  # type: ignore[method-assign]
