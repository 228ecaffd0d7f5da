# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The CPU slice a process's threads ask Linux for under normal scheduling (``sched_setattr``).

Linux's scheduler (EEVDF, from 6.6) gives each runnable thread of normal scheduling a
slice; from Linux 6.12 a thread may ask for its own, from 0.1 ms to 100 ms, with no
rights needed (``sched_attr.sched_runtime``). :func:`request_time_slice` asks for one
for every thread of the process and says whether the kernel took it. The nodes'
``scheduler_slice`` parameter is :func:`skelarm_ros.nodes.spinning.set_time_slice`;
``bench loop``'s bare sleeping loop asks the same way; :func:`thread_slices` reads what the
threads have. :func:`lower_priority` makes
every thread nicer (the recorder's ``nice``); :func:`process_threads` lists the threads.

This module imports neither rclpy nor numpy.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform

_SCHED_ATTR_CALLS = {  # machine: (sched_setattr, sched_getattr) system call numbers
    "x86_64": (314, 315),
    "aarch64": (274, 275),
    "riscv64": (274, 275),
    "armv7l": (380, 381),
    "armv8l": (380, 381),
}
_FAIR_POLICIES = (0, 3, 5)  # SCHED_OTHER, SCHED_BATCH, SCHED_IDLE: the ones a slice applies to


class _SchedAttr(ctypes.Structure):
    """Linux's ``struct sched_attr`` (``sched_runtime`` is a fair thread's slice, in ns, from Linux 6.12)."""

    _fields_ = (
        ("size", ctypes.c_uint32),
        ("sched_policy", ctypes.c_uint32),
        ("sched_flags", ctypes.c_uint64),
        ("sched_nice", ctypes.c_int32),
        ("sched_priority", ctypes.c_uint32),
        ("sched_runtime", ctypes.c_uint64),
        ("sched_deadline", ctypes.c_uint64),
        ("sched_period", ctypes.c_uint64),
        ("sched_util_min", ctypes.c_uint32),
        ("sched_util_max", ctypes.c_uint32),
    )


def _fair_attr(libc: ctypes.CDLL, calls: tuple[int, int], thread: int) -> _SchedAttr | None:
    """Return a thread's scheduling attributes; ``None`` when it is gone or not under normal scheduling."""
    attr = _SchedAttr()
    if libc.syscall(calls[1], thread, ctypes.byref(attr), ctypes.sizeof(attr), 0) != 0:
        return None
    return attr if attr.sched_policy in _FAIR_POLICIES else None


def _slice_thread(libc: ctypes.CDLL, calls: tuple[int, int], thread: int, nanoseconds: int) -> int | None:
    """Ask for a slice for one thread, keeping its policy and nice value; return the slice it has (ns).

    ``None`` when the thread is gone or not under normal scheduling (a real-time one keeps its policy).
    """
    attr = _fair_attr(libc, calls, thread)
    if attr is None:
        return None
    attr.size, attr.sched_flags, attr.sched_runtime = ctypes.sizeof(attr), 0, nanoseconds
    if libc.syscall(calls[0], thread, ctypes.byref(attr), 0) != 0:
        error = ctypes.get_errno()
        if error == errno.ESRCH:
            return None
        raise OSError(error, os.strerror(error))
    if libc.syscall(calls[1], thread, ctypes.byref(attr), ctypes.sizeof(attr), 0) != 0:
        return None
    return int(attr.sched_runtime)


def _calls() -> tuple[int, int] | None:
    """Return this machine's ``sched_setattr`` and ``sched_getattr`` numbers; ``None`` where they are not known."""
    return _SCHED_ATTR_CALLS.get(platform.machine()) if platform.system() == "Linux" else None


def slices_known() -> bool:
    """Whether this machine's threads can ask for a slice here (Linux on a machine whose system calls are known)."""
    return _calls() is not None


def thread_slices() -> dict[int, int]:
    """Return the slice (ns) Linux reports for each thread of this process under normal scheduling.

    0 is the kernel's own slice; empty where :func:`slices_known` is false.
    """
    calls = _calls()
    if calls is None:
        return {}
    libc = ctypes.CDLL(None, use_errno=True)
    found = {thread: _fair_attr(libc, calls, thread) for thread in process_threads()}
    return {thread: int(attr.sched_runtime) for thread, attr in found.items() if attr is not None}


def request_time_slice(seconds: float) -> bool | None:
    """Ask for a slice of ``seconds`` for every thread of this process under normal scheduling.

    Threads under a real-time policy keep it. ``seconds`` 0 gives the threads the
    kernel's slice back.

    Returns
    -------
    bool | None
        Whether every such thread now has the slice (``False``: the kernel keeps its own,
        as before Linux 6.12); ``None`` where ``sched_setattr`` is not known (not Linux,
        or a machine not listed).

    Raises
    ------
    OSError
        When the kernel refuses the call for another reason than a thread having ended.
    """
    calls = _calls()
    if calls is None:
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    wanted = round(seconds * 1e9)
    got = [_slice_thread(libc, calls, thread, wanted) for thread in process_threads()]
    granted = [value for value in got if value is not None]
    return bool(granted) and (wanted == 0 or all(value == wanted for value in granted))


def lower_priority(nice: int) -> None:
    """Run every thread of this process at ``nice`` (0 normal, 19 lowest) or lower.

    Linux keeps a nice value per thread; a thread already nicer keeps its own (raising a
    priority needs rights, lowering it never does).

    Raises
    ------
    OSError
        When the kernel refuses for another reason than a thread having ended.
    """
    for thread in process_threads():
        try:
            if os.getpriority(os.PRIO_PROCESS, thread) < nice:
                os.setpriority(os.PRIO_PROCESS, thread, nice)
        except ProcessLookupError:
            continue  # a thread that ended meanwhile


def process_threads() -> list[int]:
    """Return the ids of this process's threads (``[0]``, the calling one, where ``/proc`` does not list them)."""
    if not os.path.isdir("/proc/self/task"):
        return [0]
    return [int(name) for name in os.listdir("/proc/self/task")]
