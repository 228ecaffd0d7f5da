# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Peak resident memory and loaded libraries of a running graph, read from ``/proc`` while it runs.

:class:`TreeWatch` follows a process and every process below it (a launcher and its
nodes) on a thread of its own: every :data:`PERIOD` it reads each process's peak
resident memory (``VmHWM`` in ``/proc/<pid>/status``), and now and then which of the
libraries in :data:`LIBRARIES` it has mapped. ``VmHWM`` only grows, so the last value
read before a process ends is its peak over the run up to that moment. ``bench
startup`` prints these figures; the headless system test holds the limits with them.

Linux only. This module imports only the standard library.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

PERIOD = 0.02  # s between two readings of every process's VmHWM
MAPS_PERIOD = 0.25  # s between two readings of a process's mapped libraries
LIBRARIES: dict[str, str] = {"Qt": "/libQt6", "Pinocchio": "/libpinocchio", "SciPy": "/scipy"}
"""What :class:`TreeWatch` looks for in a process's mapped files: a name and a part of the file's path."""

LIMITS_MB: dict[str, float] = {"simulator": 160.0, "controller": 160.0, "composed": 200.0}
"""Peak resident memory a process of the package stays within (MB), by name; every other one: :data:`LIMIT_MB`."""
LIMIT_MB = 100.0
"""Peak resident memory of the launcher, recorder, player, force replay (MB): no dynamics, no Pinocchio, no SciPy."""

_RUN = re.compile(r"\brun\s+(\w+)")
_HWM = re.compile(r"^VmHWM:\s+(\d+) kB", re.MULTILINE)


def label(command: list[str]) -> str:
    """Name a process by its command line: this package's executable (``run simulator``), ``launch``, or the program.

    Parameters
    ----------
    command : list[str]
        ``/proc/<pid>/cmdline`` split at its NUL bytes.
    """
    text = " ".join(command)
    found = _RUN.search(text)
    if found:
        return found.group(1)
    if "launch" in command[1:5]:  # skelarm-ros launch ..., python -m skelarm_ros.cli launch ...
        return "launch"
    return Path(command[0]).name if command else "?"


@dataclass
class Watched:
    """What was read of one process.

    Attributes
    ----------
    pid : int
        Its process id.
    name : str
        Its :func:`label`.
    peak_mb : float
        Its ``VmHWM`` in MB (2**20 bytes), as last read.
    libraries : set[str]
        The names of :data:`LIBRARIES` it had mapped when read.
    """

    pid: int
    name: str
    peak_mb: float = 0.0
    libraries: set[str] = field(default_factory=set)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.read()
    except OSError:  # it ended in between
        return None


def descendants(root: int) -> list[int]:
    """Return ``root`` and every process below it (children, their children, ...)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = _read(f"/proc/{entry}/stat")
        if stat is None:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])  # the name in () may hold spaces
        children.setdefault(parent, []).append(int(entry))
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children.get(pid, ()))
    return found


class TreeWatch:
    """Reads the peak memory and mapped libraries of a process tree until stopped (a context manager).

    Parameters
    ----------
    root : int
        The process whose tree is watched (a launcher's pid).
    libraries : Mapping[str, str], optional
        Names and path parts of the libraries to look for (:data:`LIBRARIES`).
    """

    def __init__(self, root: int, libraries: Mapping[str, str] = LIBRARIES) -> None:
        """Prepare to watch ``root``'s tree (:meth:`start` begins)."""
        self.root = root
        self._libraries = dict(libraries)
        self.watched: dict[int, Watched] = {}
        self._maps_read: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tree-watch", daemon=True)

    def __enter__(self) -> TreeWatch:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Start reading, every :data:`PERIOD`, on a thread of its own."""
        self._thread.start()

    def stop(self) -> None:
        """Read once more and stop."""
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.read()
            self._stop.wait(PERIOD)
        self.read()

    def read(self) -> None:
        """Read every process of the tree now."""
        now = time.monotonic()
        for pid in descendants(self.root):
            status = _read(f"/proc/{pid}/status")
            command = _read(f"/proc/{pid}/cmdline")
            peak = _HWM.search(status or "")
            if peak is None or not command:  # ended, or a zombie without memory
                continue
            entry = self.watched.setdefault(pid, Watched(pid, ""))
            entry.name = label(command.rstrip("\0").split("\0"))  # a re-exec changes the command line
            entry.peak_mb = max(entry.peak_mb, int(peak.group(1)) / 1024.0)
            if now - self._maps_read.get(pid, -MAPS_PERIOD) >= MAPS_PERIOD:
                self._maps_read[pid] = now
                maps = _read(f"/proc/{pid}/maps") or ""
                entry.libraries |= {name for name, part in self._libraries.items() if part in maps}

    def by_name(self) -> dict[str, Watched]:
        """Return what was read per process name (the largest peak where a name ran more than once)."""
        named: dict[str, Watched] = {}
        for entry in self.watched.values():
            have = named.get(entry.name)
            if have is None or entry.peak_mb > have.peak_mb:
                named[entry.name] = entry
        return named


def limit_mb(name: str) -> float:
    """Return the peak memory (MB) the package's process ``name`` stays within (:data:`LIMITS_MB`)."""
    return LIMITS_MB.get(name, LIMIT_MB)


def run_watched(
    command: list[str], *, env: Mapping[str, str] | None = None, cwd: str | Path | None = None, timeout: float = 120.0
) -> tuple[subprocess.CompletedProcess[str], dict[str, Watched]]:
    """Run ``command`` to its end, watching its process tree; return how it ended and what was read per name.

    Raises
    ------
    subprocess.TimeoutExpired
        If it runs longer than ``timeout`` seconds (it is killed first).
    """
    process = subprocess.Popen(
        command,
        env=None if env is None else dict(env),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    with process, TreeWatch(process.pid) as watch:
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise
    return subprocess.CompletedProcess(command, process.returncode, output, ""), watch.by_name()
