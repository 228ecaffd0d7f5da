# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""``sensor_msgs/msg/JointState`` in CDR bytes, read and written with one ``struct`` call.

A joint-state stream repeats one layout message after message: the same frame id,
joint names and array lengths put every stamp and value at the same byte offset.
:class:`JointStateLayout` learns those offsets from a message decoded the ordinary
way and then reads each message of that layout directly from its bytes;
:class:`JointStateWriter` writes messages of one layout from a template. The nodes
use them on their hot topics (a subscription with ``raw=True`` and ``publish`` of
bytes skip rclpy's conversion between Python messages and C; docs/benchmarks.md
measures what that saves), ``bag_to_log`` on a bag's joint states. Anything of another layout
(other names, big-endian CDR, a damaged message) is left to the ordinary decoder.

The layout is XCDR1 little endian as rmw_fastrtps and rosbags write it: a 4-byte
encapsulation header (``00 01 00 00``), then the fields with each primitive
aligned to its size, counted from the end of the header.

This module does not import rclpy.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

ENCAPSULATION = b"\x00\x01\x00\x00"  # CDR, little endian, no options
_HEADER = 4


def _align(offset: int, size: int) -> int:
    return (offset + size - 1) & -size


def _offsets(
    frame_id: str, names: Sequence[str], counts: Sequence[int]
) -> tuple[list[int], list[int], int, list[tuple[int, int]]]:
    """Lay a JointState out (offsets counted after the header).

    Returns each array's count offset and first-float offset, the end, and the byte
    ranges that carry data (not alignment padding) from the frame id's length to the
    position count's end.
    """
    frame = len(frame_id.encode()) + 1  # with its terminating NUL
    carried = [(8, 12 + frame)]
    at = _align(12 + frame, 4)
    carried.append((at, at + 4))
    at += 4
    for name in names:
        at = _align(at, 4)
        size = 4 + len(name.encode()) + 1
        carried.append((at, at + size))
        at += size
    count_at, float_at = [], []
    for count in counts:
        at = _align(at, 4)
        count_at.append(at)
        at += 4
        if count:
            at = _align(at, 8)
        float_at.append(at)
        at += 8 * count
    carried.append((count_at[0], count_at[0] + 4))
    return count_at, float_at, at, carried


class JointStateLayout:
    """Reads the stamp and arrays of JointState CDR messages of one learned layout.

    :meth:`learn` works the offsets out from a message decoded the ordinary way and
    keeps them only if they read that very message back bit for bit; :meth:`values`
    then reads any message whose bytes agree with the learned one in length, in
    everything up to its first float (encapsulation, frame id, names, first count)
    and in the other counts, and returns ``None`` for anything else.

    Attributes
    ----------
    names : list[str]
        The joint names of the learned layout (one list, reused).
    counts : tuple[int, int, int]
        Lengths of ``position``, ``velocity`` and ``effort``.
    """

    def __init__(self) -> None:
        self.names: list[str] = []
        self.counts: tuple[int, int, int] = (0, 0, 0)
        self._size = -1
        self._cut = 0
        self._prefix = 0
        self._mask = 0
        self._values = struct.Struct("<")
        self._check = struct.Struct("<")
        self._expected: tuple[int, ...] = ()

    def learn(self, data: bytes, message: Any) -> bool:
        """Learn the layout of ``data``, which decodes to ``message``; return whether it can be used.

        Parameters
        ----------
        data : bytes
            A serialized JointState (with its 4-byte encapsulation header).
        message : Any
            The same message decoded (an rclpy or rosbags JointState).
        """
        if len(data) < _HEADER or bytes(data[:2]) != ENCAPSULATION[:2]:
            return False
        names = [str(name) for name in message.name]
        arrays = (message.position, message.velocity, message.effort)
        counts = (len(arrays[0]), len(arrays[1]), len(arrays[2]))
        count_at, float_at, _, carried = _offsets(str(message.header.frame_id), names, counts)
        layout = f"<{_HEADER}xiI"
        end = _HEADER + 8
        for start, count in zip(float_at, counts, strict=True):
            layout += f"{_HEADER + start - end}x{count}d"
            end = _HEADER + start + 8 * count
        check = f"<{_HEADER + count_at[1]}xI{count_at[2] - count_at[1] - 4}xI"
        values, checker = struct.Struct(layout), struct.Struct(check)
        if max(values.size, checker.size) > len(data):
            return False
        read = values.unpack_from(data)
        stamp = message.header.stamp
        expected = struct.pack(f"<{sum(counts)}d", *arrays[0], *arrays[1], *arrays[2])
        if read[:2] != (stamp.sec, stamp.nanosec) or struct.pack(f"<{sum(counts)}d", *read[2:]) != expected:
            return False
        if checker.unpack_from(data) != counts[1:]:
            return False
        self.names, self.counts = names, counts
        # Everything from the frame id to the position count, as one integer with the padding masked out
        # (a publisher may leave anything in padding bytes; rmw_fastrtps leaves what its buffer held).
        self._size, self._cut = len(data), _HEADER + count_at[0] + 4
        mask = bytearray(self._cut - 12)
        for start, stop in carried:
            mask[start - 8 : stop - 8] = b"\xff" * (stop - start)
        self._mask = int.from_bytes(mask, "little")
        self._prefix = int.from_bytes(data[12 : self._cut], "little") & self._mask
        self._values, self._check, self._expected = values, checker, counts[1:]
        return True

    def values(self, data: bytes) -> tuple[Any, ...] | None:
        """Return ``(sec, nanosec, *position, *velocity, *effort)``, or ``None`` if ``data`` is of another layout."""
        if len(data) != self._size or data[0] != 0 or data[1] != 1:
            return None
        if int.from_bytes(data[12 : self._cut], "little") & self._mask != self._prefix:
            return None
        if self._check.unpack_from(data) != self._expected:
            return None
        return self._values.unpack_from(data)


class JointStateWriter:
    """Writes JointState CDR messages of one layout: fixed frame id, names and array lengths.

    Parameters
    ----------
    names : Sequence[str]
        The joint names every message carries.
    counts : Sequence[int]
        Lengths of ``position``, ``velocity`` and ``effort`` (0 leaves a field empty).
    frame_id : str, optional
        The header's frame id.
    """

    def __init__(self, names: Sequence[str], counts: Sequence[int], frame_id: str = "") -> None:
        """Build the constant pieces between the stamp and the arrays, and the struct that joins them."""
        self.names = [str(name) for name in names]
        self.counts = (int(counts[0]), int(counts[1]), int(counts[2]))
        count_at, float_at, end, _ = _offsets(frame_id, self.names, self.counts)
        body = bytearray(_align(end, 4))  # the message after the header, floats and stamp left zero
        frame = frame_id.encode()
        struct.pack_into(f"<I{len(frame)}s", body, 8, len(frame) + 1, frame)
        at = _align(8 + 4 + len(frame) + 1, 4)
        struct.pack_into("<I", body, at, len(self.names))
        at += 4
        for name in self.names:
            encoded = name.encode()
            at = _align(at, 4)
            struct.pack_into(f"<I{len(encoded)}s", body, at, len(encoded) + 1, encoded)
            at += 4 + len(encoded) + 1
        for where, count in zip(count_at, self.counts, strict=True):
            struct.pack_into("<I", body, where, count)
        # Constant pieces: after the stamp up to the position floats, between the arrays, and after them.
        bounds = [
            8,
            *[x for start, count in zip(float_at, self.counts, strict=True) for x in (start, start + 8 * count)],
        ]
        bounds.append(len(body))
        pieces = [bytes(body[bounds[i] : bounds[i + 1]]) for i in range(0, len(bounds), 2)]
        self._c1, self._c2, self._c3, self._c4 = pieces
        n1, n2, n3 = self.counts
        self._struct = struct.Struct(
            f"<4siI{len(self._c1)}s{n1}d{len(self._c2)}s{n2}d{len(self._c3)}s{n3}d{len(self._c4)}s"
        )

    def pack(
        self, sec: int, nanosec: int, position: Sequence[float], velocity: Sequence[float], effort: Sequence[float]
    ) -> bytes:
        """Return the serialized message with this stamp and these arrays (of the writer's lengths).

        Raises
        ------
        struct.error
            If an array's length is not the writer's, or the stamp is out of range.
        """
        return self._struct.pack(
            ENCAPSULATION, sec, nanosec, self._c1, *position, self._c2, *velocity, self._c3, *effort, self._c4
        )
