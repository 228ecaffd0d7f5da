# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The StateLog file (``.sklog.npz``): skelarm's format, written by :func:`write_log` and read by :func:`read_log`.

A log is a numpy ``.npz`` archive with one array per channel, ``time`` among them,
and a ``__meta__`` member holding TOML metadata (``schema_version``, ``created_at``,
``producer``, and the optional ``skeleton``, ``channels`` and ``extra`` tables), as
:meth:`skelarm.StateLog.save` writes it and :meth:`skelarm.StateLog.load` reads it.
This module is the one place in the package that knows that layout; every tool
writes and reads logs through these two functions, and a test checks both against
skelarm's own ``save`` and ``load``. In memory a log is a :class:`LogFile` (its
metadata table and its arrays, as the file holds them): :meth:`LogFile.made` makes one
from a tool's arrays (``bag_to_log``'s conversion, which ``identify`` takes without a
file), :func:`read_log` reads one, :func:`write_log` writes one.

This module imports neither rclpy nor rosbags.
"""

from __future__ import annotations

import contextlib
import tomllib
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import skelarm
from skelarm.recording import dump_toml

from skelarm_ros.outputs import write_atomically

if TYPE_CHECKING:
    from numpy.typing import NDArray

SCHEMA_VERSION = 1
META_KEY = "__meta__"
TIME = "time"
_UNREADABLE = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile)  # tomllib.TOMLDecodeError is a ValueError


class LogFileError(ValueError):
    """A log file that cannot be read or written; the message names the file and the fix."""


@dataclass
class LogFile:
    """A log's contents: its metadata table and its arrays, as in the file.

    Attributes
    ----------
    meta : dict[str, Any]
        The ``__meta__`` table (``schema_version``, ``producer``, ``skeleton``, ``channels``, ``extra``...).
    arrays : dict[str, NDArray]
        ``time`` (seconds, shape ``(N,)``) and one array per channel, first axis over frames, in file order.
    """

    meta: dict[str, Any]
    arrays: dict[str, NDArray[Any]]

    @classmethod
    def made(
        cls,
        arrays: dict[str, NDArray[Any]],
        *,
        skeleton: skelarm.Skeleton | None,
        producer: str,
        channel_meta: dict[str, dict[str, Any]],
        extra: dict[str, Any],
    ) -> LogFile:
        """Return a log made now from a tool's arrays, its metadata as :func:`write_log` writes it.

        Parameters
        ----------
        arrays : dict[str, NDArray]
            ``time`` (seconds, shape ``(N,)``) and one array per channel, first axis over frames.
        skeleton : skelarm.Skeleton | None
            The arm to embed.
        producer : str
            What made the log.
        channel_meta : dict[str, dict[str, Any]]
            Per-channel descriptors (``unit``, ``label``, ``columns``); left out when empty.
        extra : dict[str, Any]
            The ``[extra]`` table (always there).
        """
        meta: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "created_at": datetime.now(UTC).isoformat(),
            "producer": producer,
        }
        if skeleton is not None:
            meta["skeleton"] = skeleton.to_dict()
        if channel_meta:
            meta["channels"] = channel_meta
        meta["extra"] = extra
        return cls(meta, arrays)

    @classmethod
    def from_state_log(cls, log: skelarm.StateLog) -> LogFile:
        """Return what :meth:`skelarm.StateLog.save` would write for ``log``."""
        meta: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "created_at": log.created_at,
            "producer": log.producer,
        }
        with contextlib.suppress(ValueError):  # no skeleton embedded
            meta["skeleton"] = log.build_skeleton().to_dict()
        if log.channel_meta:
            meta["channels"] = log.channel_meta
        if log.extra:
            meta["extra"] = log.extra
        return cls(meta, log.to_arrays())

    @property
    def extra(self) -> dict[str, Any]:
        """The ``[extra]`` table (empty when absent)."""
        return dict(self.meta.get("extra", {}))

    @property
    def channel_meta(self) -> dict[str, dict[str, Any]]:
        """Per-channel descriptors (``unit``, ``label``, ``columns``; empty when absent)."""
        return dict(self.meta.get("channels", {}))

    @property
    def channel_names(self) -> list[str]:
        """The channels (every array but ``time``), in file order, as :attr:`skelarm.StateLog.channel_names`."""
        return [name for name in self.arrays if name != TIME]

    @property
    def times(self) -> NDArray[np.float64]:
        """Frame times (seconds), shape ``(N,)``."""
        return np.asarray(self.arrays[TIME], dtype=np.float64)

    def channel(self, name: str) -> NDArray[Any]:
        """Return channel ``name`` (shape ``(N,)`` or ``(N, k)``).

        Raises
        ------
        KeyError
            If the log has no such channel.
        """
        if name not in self.arrays:
            msg = f"unknown channel {name!r}; available: {self.channel_names}"
            raise KeyError(msg)
        return self.arrays[name]

    def skeleton(self) -> skelarm.Skeleton | None:
        """Return the embedded arm (:meth:`skelarm.StateLog.build_skeleton`), ``None`` when none is or it is not one."""
        table = self.meta.get("skeleton")
        if not isinstance(table, dict):
            return None
        try:
            return skelarm.Skeleton.from_dict(table)
        except (ValueError, TypeError, KeyError):
            return None

    def state_log(self) -> skelarm.StateLog:
        """Return the log as the :class:`skelarm.StateLog` that :meth:`skelarm.StateLog.load` gives for the file."""
        log = skelarm.StateLog()
        log._populate(self.meta, self.arrays)  # what StateLog.load does after reading the file
        return log


def read_log(path: str | Path) -> LogFile:
    """Read a ``.sklog.npz`` log's metadata and arrays (no per-frame records are built).

    Parameters
    ----------
    path : str | Path
        The log file.

    Returns
    -------
    LogFile
        Its metadata and arrays.

    Raises
    ------
    LogFileError
        If the file does not exist or is not a skelarm log (damaged, another format,
        no ``__meta__`` or no ``time``).
    """
    path = Path(path)
    if not path.exists():
        msg = f"log '{path}' does not exist; pass a .sklog.npz written by skelarm or bag_to_log"
        raise LogFileError(msg)
    try:
        with np.load(path, allow_pickle=False) as archive:
            meta = tomllib.loads(str(archive[META_KEY]))
            arrays = {name: archive[name] for name in archive.files if name != META_KEY}
        if TIME not in arrays:
            msg = f"it has no '{TIME}' array"
            raise KeyError(msg)
    except _UNREADABLE as error:
        msg = (
            f"log '{path}' is not a readable skelarm .sklog.npz log ({type(error).__name__}: {error}); "
            "pass a .sklog.npz written by skelarm or bag_to_log"
        )
        raise LogFileError(msg) from None
    return LogFile(meta, arrays)


def write_log(path: str | Path, log: LogFile) -> None:
    """Write a ``.sklog.npz`` atomically: a temporary file in the same folder, renamed at the end.

    The archive is uncompressed (``np.savez``); strings in the metadata have their
    control characters written out (:func:`printable`), since TOML cannot hold them.

    Parameters
    ----------
    path : str | Path
        The log to write (replaced if it exists; left untouched on any failure).
    log : LogFile
        Its metadata and arrays (:meth:`LogFile.made`).

    Raises
    ------
    LogFileError
        If the output folder does not exist.
    """
    path = Path(path)
    payload: dict[str, Any] = {**log.arrays, META_KEY: np.array(dump_toml(printable_tree(log.meta)))}
    folder = path.resolve().parent
    if not folder.is_dir():
        msg = f"output folder '{folder}' does not exist; create it or choose another output path"
        raise LogFileError(msg)

    def save(temporary: Path) -> None:
        with temporary.open("wb") as stream:
            np.savez(stream, **payload)

    write_atomically(path, save, durable=True)


def printable(text: str) -> str:
    """Return ``text`` with its control characters written out as escapes, as a damaged bag may hold them."""
    return "".join(char if char.isprintable() or char in "\n\t" else _escape(char) for char in text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 256 else f"\\u{code:04x}"


def printable_tree(value: Any) -> Any:
    """Return ``value`` (nested dicts and lists) with every string passed through :func:`printable`.

    Names, topics and notes can come from a damaged bag; TOML (and so the log's
    metadata) cannot hold raw control characters.
    """
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(str(key)): printable_tree(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable_tree(item) for item in value]
    return value
