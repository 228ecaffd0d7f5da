# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""What the stages of ``bag_to_log`` hand on: rows grown in chunks, values put in joint order, a topic's samples.

This module does not import rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from skelarm_ros.interface import default_joint_names

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

_CHUNK = 65536


class ConversionError(ValueError):
    """Input that cannot be converted; the message names the problem and the fix."""


class Rows:
    """A float or int array that grows by whole chunks; rows start as NaN (or 0)."""

    def __init__(self, width: int | None, capacity: int = 0, dtype: type = np.float64) -> None:
        self.width = width
        self.dtype = dtype
        self.done: list[NDArray[Any]] = []
        self.chunk = self._new(max(capacity, 16))
        self.pos = 0

    def _new(self, rows: int) -> NDArray[Any]:
        shape = (rows,) if self.width is None else (rows, self.width)
        return np.full(shape, np.nan if self.dtype is np.float64 else 0, dtype=self.dtype)

    def take(self) -> tuple[NDArray[Any], int]:
        """Reserve the next row; return the chunk holding it and its index there."""
        if self.pos == len(self.chunk):
            self.done.append(self.chunk)
            self.chunk = self._new(_CHUNK)
            self.pos = 0
        self.pos += 1
        return self.chunk, self.pos - 1

    def put(self, value: float) -> None:
        """Append one value (a 1-D array)."""
        chunk, index = self.take()
        chunk[index] = value

    def row(self) -> NDArray[Any]:
        """Append a row (NaN-filled) and return it for writing."""
        chunk, index = self.take()
        return chunk[index]

    def array(self) -> NDArray[Any]:
        """Return the rows taken so far, as one array."""
        if not self.done:
            return self.chunk[: self.pos]
        return np.concatenate([*self.done, self.chunk[: self.pos]])

    def __len__(self) -> int:
        return sum(len(c) for c in self.done) + self.pos


class NameMap:
    """Puts a message's per-name values into the chosen joint order (cached per name list).

    A message without names carries its values in position order, named ``unnamed_as``
    when there are as many (``--joints`` naming a topic that carries no names), else
    ``j1 ... jN``.

    Attributes
    ----------
    joints : list[str]
        The chosen joints, in column order.
    unnamed_as : list[str]
        The names of values carried without names, when there are as many.
    carried : dict[str, None]
        Every name the messages carried, in the order first seen (position names for unnamed ones).
    unknown : set[str]
        Names carried that are not among :attr:`joints`.
    unnamed : int
        Values of the last message without names that had any (0 when every message was named).
    """

    def __init__(self, joints: Sequence[str], unnamed_as: Sequence[str] = ()) -> None:
        self.joints = list(joints)
        self.unnamed_as = list(unnamed_as)
        self.default = default_joint_names(len(joints)) == self.joints
        self._names: list[str] | None = None
        self._index = np.zeros(0, dtype=np.intp)
        self._complete = False
        self.carried: dict[str, None] = {}
        self.unknown: set[str] = set()
        self.unnamed = 0

    def positional(self, count: int) -> list[str]:
        """Return the names of ``count`` values carried without names: :attr:`unnamed_as`, or ``j1 ... jN``."""
        return list(self.unnamed_as) if count == len(self.unnamed_as) else default_joint_names(count)

    def _update(self, names: list[str], count: int) -> None:
        self._names = names
        if not names:  # no names: position order
            self.unnamed = count or self.unnamed
            names = self.positional(count)
        where = {name: i for i, name in enumerate(names)}
        self.carried.update(dict.fromkeys(names))
        self.unknown.update(name for name in names if name not in set(self.joints))
        self._index = np.array([where.get(name, -1) for name in self.joints], dtype=np.intp)
        self._complete = bool((self._index >= 0).all())
        self._count = len(names)
        self._identity = self._complete and self._index.tolist() == list(range(len(names)))

    @property
    def never_carried(self) -> list[str]:
        """The chosen joints no message carried, in column order."""
        return [name for name in self.joints if name not in self.carried]

    def fill(self, row: NDArray[np.float64], names: list[str], values: Any) -> None:
        """Write ``values`` (one per name in ``names``) into ``row`` by name; the rest stays NaN."""
        if names != self._names or (not names and len(values) != self._count):
            self._update(names, len(values))
        if len(values) == 0:
            return
        if self._complete and len(values) == self._count:
            row[:] = values if self._identity else np.asarray(values)[self._index]
            return
        for j, k in enumerate(self._index):
            if 0 <= k < len(values):
                row[j] = values[k]


@dataclass
class Stream:
    """Samples of one topic other than the joint states as they are read: values and their times (ns)."""

    topic: str
    msgtype: str
    values: Rows
    stamps: Rows
    logs: Rows
    names: list[str] = field(default_factory=list)
    namemap: NameMap | None = None
    carried: int = 0
    """Messages that carried values (a command's effort or goal, an array's data)."""
    kind: str = ""
    """A command topic's kind: ``effort``, or a servo's ``position`` or ``velocity`` goals (empty until known)."""

    def samples(self) -> Samples:
        """Return what was read, as arrays."""
        return Samples(
            self.topic,
            self.msgtype,
            self.values.array(),
            self.stamps.array(),
            self.logs.array(),
            self.names,
            self.kind,
        )


@dataclass(frozen=True)
class Samples:
    """The samples of one topic other than the joint states, in log order.

    Attributes
    ----------
    topic, msgtype : str
        The topic and its type.
    values : NDArray[np.float64]
        One row per message, shape ``(N, width)``: a wrench's or point's ``(x, y)``, a
        command's effort (or goal) in joint order, a Float64MultiArray's data, or a JointState
        channel's positions; what a message lacks is NaN.
    stamps : NDArray[np.int64]
        Header stamps (ns), shape ``(N,)``; empty for a type without a header (Float64MultiArray).
    logs : NDArray[np.int64]
        Log times (ns), shape ``(N,)``.
    names : list[str]
        A JointState channel's names (its columns), from its first message.
    kind : str
        A command topic's kind: ``effort``, ``position`` or ``velocity`` (empty for another topic).
    """

    topic: str
    msgtype: str
    values: NDArray[np.float64]
    stamps: NDArray[np.int64]
    logs: NDArray[np.int64]
    names: list[str] = field(default_factory=list)
    kind: str = ""
