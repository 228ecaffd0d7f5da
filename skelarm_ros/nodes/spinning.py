# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""How a node process spins: rclpy's EventsExecutor, in bounded slices, ending in order on a signal.

The EventsExecutor dispatches a message to its callback without rebuilding a wait
set in Python, so a node answers a message in a fraction of the single-threaded
executor's time (docs/benchmarks.md). It is spun in slices of at most
:data:`SPIN_SLICE` seconds: its unbounded ``spin_until_future_complete`` can miss a
future that callbacks complete back to back, and between slices the loop sees a
stop request.

Signals: :func:`skelarm_ros.nodes.running.run_node` starts rclpy without its signal
handlers and lets SIGINT and SIGTERM only :func:`request_stop`. The spin then ends
between two callbacks, with the context still up, so the node can say its last
words and be destroyed in order; nothing is raised inside a callback.
"""

from __future__ import annotations

import gc
import math
import os
import threading
import time
from typing import TYPE_CHECKING

from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.task import Future

from skelarm_ros.nodes.scheduling import lower_priority, process_threads, request_time_slice

if TYPE_CHECKING:
    from collections.abc import Callable

    from rclpy.context import Context
    from rclpy.executors import Executor
    from rclpy.node import Node

SPIN_SLICE = 0.1  # s, the longest one spin call lasts before the loop checks for a stop request
SHUTDOWN_GRACE = 1.0  # s an executor error may precede the signal's shutdown of the context


def events_executor(context: Context | None = None) -> Executor:
    """Return a new :class:`rclpy.experimental.EventsExecutor` (typed as an rclpy executor)."""
    from rclpy.experimental import EventsExecutor

    return EventsExecutor(context=context)


class Beat:
    """Wall-clock deadlines ``period`` apart, kept by the thread that spins (:func:`spin_until`).

    A node that steps on a steady period (the realtime simulator) gives its spin a beat
    instead of an rclpy timer. The spin then sleeps to each deadline in the thread that
    runs the callbacks and wakes once a step; an rclpy timer wakes the executor's timer
    thread first, which then wakes the spinning thread: two wake-ups to wait for on a
    busy machine (docs/benchmarks.md, "The composed graph"). A deadline missed by a whole
    period or more is skipped, as rclpy's timers skip it: the next one is the first still
    ahead.

    Parameters
    ----------
    period : float
        Wall seconds between two deadlines; the first is one period after the beat is made.
    action : Callable[[float], None]
        Called at each deadline with the deadline (steady seconds, :func:`time.monotonic`).
    """

    def __init__(self, period: float, action: Callable[[float], None]) -> None:
        """Make the beat; its first deadline is one ``period`` from now."""
        self.period = period
        self._action = action
        self.due = time.monotonic() + period

    def fire(self) -> None:
        """Run the action for the deadline due, then set the next one (skipping those already past)."""
        due = self.due
        self._action(due)
        following = due + self.period
        now = time.monotonic()
        if following <= now:
            following += (math.floor((now - following) / self.period) + 1) * self.period
        self.due = following


_STOP = threading.Event()


def request_stop() -> None:
    """Ask the process's spin to end at its next slice (what SIGINT and SIGTERM do in a node)."""
    _STOP.set()


def stop_requested() -> bool:
    """Whether a stop was requested (a signal arrived)."""
    return _STOP.is_set()


def clear_stop() -> None:
    """Forget a stop request, so a node run after it in the same process spins (tests run several)."""
    _STOP.clear()


def try_shutdown() -> None:
    """Shut rclpy's default context down unless a signal's shutdown got there first.

    rclpy's ``try_shutdown`` checks and shuts down in two steps; SIGINT's handler can
    shut the context down in between, and the second shutdown then raises. A node's
    exit must not turn that race into a traceback and exit code 1.
    """
    import rclpy

    try:
        rclpy.try_shutdown()
    except RuntimeError:
        if rclpy.ok():
            raise


def set_thread_priority(node: Node, priority: int) -> bool:
    """Run every thread of this process (Python's, the executor's, DDS's) under SCHED_FIFO at ``priority``.

    The ``thread_priority`` parameter of the simulator and the controller, as
    ros2_control's controller manager offers it: 0 leaves the scheduler alone; 1-99
    needs the right to real-time priorities (``rtprio`` in
    ``/etc/security/limits.conf``, or ``CAP_SYS_NICE``). Without it the node says so
    once and runs with normal scheduling. Call it after the executor is built, so
    its threads exist.

    Returns
    -------
    bool
        Whether the priority was set.
    """
    if priority == 0:
        return False
    logger = node.get_logger()
    if not hasattr(os, "sched_setscheduler"):
        logger.warning(f"thread_priority:={priority} asks for SCHED_FIFO, which this system does not offer; ignored")
        return False
    try:
        for thread in process_threads():
            try:
                os.sched_setscheduler(thread, os.SCHED_FIFO, os.sched_param(priority))
            except ProcessLookupError:
                continue  # a thread that ended meanwhile
    except PermissionError as error:
        logger.warning(
            f"thread_priority:={priority} could not be set ({error.strerror}); give this user real-time "
            "priorities (rtprio in /etc/security/limits.conf, or CAP_SYS_NICE) or leave thread_priority at 0; "
            "running with normal scheduling"
        )
        return False
    logger.info(f"every thread of this process runs under SCHED_FIFO priority {priority}")
    return True


def set_time_slice(node: Node, seconds: float) -> bool:
    """Ask Linux for a CPU slice of ``seconds`` for every thread of this process under normal scheduling.

    The ``scheduler_slice`` parameter of the simulator and the controller. Linux's
    scheduler (EEVDF, from 6.6) gives each runnable thread a slice, a base slice
    times a factor that grows with the cores (1.4 ms on two cores with Linux 6.18),
    and a thread that wakes for its tick can wait for a CPU-bound one to end its
    slice. From Linux 6.12 a thread may ask for a shorter slice (0.1 ms to 100 ms),
    with no rights needed (:func:`~skelarm_ros.nodes.scheduling.request_time_slice`);
    it then preempts longer-sliced work when it wakes, and its share of the CPU stays
    as fair as before. A periodic loop that works for a fraction of a period each tick is
    what that is for. Threads under a real-time policy (``thread_priority``) keep it;
    an older kernel, which keeps its own slice, is said once. Call it after the
    executor is built, so its threads exist.

    Returns
    -------
    bool
        Whether every thread of normal scheduling now has the slice.
    """
    if seconds <= 0.0:
        return False
    logger = node.get_logger()
    try:
        granted = request_time_slice(seconds)
    except OSError as error:
        logger.warning(f"scheduler_slice:={seconds:g} could not be set ({error.strerror}); the kernel's slice")
        return False
    if granted is None:
        logger.info(f"scheduler_slice:={seconds:g} needs Linux's sched_setattr, not known here; the kernel's slice")
        return False
    if not granted:
        logger.info(
            f"scheduler_slice:={seconds:g}: this kernel keeps its own slice for normal scheduling (Linux 6.12 or "
            "later takes one per thread); set thread_priority for real-time scheduling, or scheduler_slice:=0"
        )
        return False
    logger.info(f"every thread of this process asks for a {seconds * 1e3:g} ms CPU slice (normal scheduling)")
    return True


def set_nice(node: Node, nice: int) -> bool:
    """Run every thread of this process at ``nice`` (:func:`~skelarm_ros.nodes.scheduling.lower_priority`).

    The recorder's ``nice`` parameter: 0 leaves the threads alone. Call it after the
    executor is built, so its threads exist. Returns whether it was set.
    """
    if nice <= 0:
        return False
    try:
        lower_priority(nice)
    except OSError as error:
        node.get_logger().warning(f"nice:={nice} could not be set ({error.strerror}); running at normal priority")
        return False
    node.get_logger().info(f"every thread of this process runs at nice {nice}")
    return True


def freeze_heap() -> None:
    """Collect once, then keep every object alive after start-up out of the cyclic garbage collector's walks.

    A node's start-up heap (rclpy, numpy, skelarm, Pinocchio: tens of thousands of
    objects) takes a full collection many milliseconds (docs/benchmarks.md), which
    Python starts now and then on its own: late steps at 1 kHz. After
    :func:`gc.freeze` a collection walks only what the run itself allocates. Call it
    once, after the node is built.
    """
    gc.collect()
    gc.freeze()


def node_executor(
    node: Node, thread_priority: int = 0, *, events: bool = True, time_slice: float = 0.0, nice: int = 0
) -> Executor:
    """Get a node's process ready to spin: freeze the heap, build its EventsExecutor, set the priority or slice.

    Parameters
    ----------
    node : Node
        The node, fully built.
    thread_priority : int, optional
        The node's ``thread_priority`` (see :func:`set_thread_priority`); 0 leaves the scheduler alone.
    events : bool, optional
        Build an EventsExecutor (else a single-threaded executor).
    time_slice : float, optional
        The CPU slice (s) its threads ask for under normal scheduling (see :func:`set_time_slice`),
        when no real-time priority was set; 0 leaves the kernel's.
    nice : int, optional
        The nice value its threads run at (see :func:`set_nice`); 0 leaves them alone.

    Returns
    -------
    Executor
        An EventsExecutor with the node added, for :func:`spin_until`.
    """
    freeze_heap()  # no full collection of the start-up heap in the middle of the run
    executor = events_executor(node.context) if events else SingleThreadedExecutor(context=node.context)
    executor.add_node(node)
    if not set_thread_priority(node, thread_priority):  # after the executor, so its threads exist
        set_time_slice(node, time_slice)
    set_nice(node, nice)
    return executor


def spin_until(node: Node, executor: Executor, done: Future | None = None, beat: Beat | None = None) -> bool:
    """Spin ``node`` until ``done`` completes, a stop is requested (SIGINT, SIGTERM) or its context shuts down.

    Parameters
    ----------
    node : Node
        A node already added to ``executor``; its context is watched.
    executor : Executor
        The executor to spin.
    done : Future | None, optional
        Ends the spin when complete; ``None`` spins until the context shuts down.
    beat : Beat | None, optional
        Deadlines to keep: the spin waits for callbacks until the next one is due, then fires it.

    Returns
    -------
    bool
        Whether ``done`` completed (``False`` when a signal or a shutdown ended the spin).
    """
    until = Future() if done is None else done
    context = node.context
    try:
        while context.ok() and not until.done() and not _STOP.is_set():
            if beat is None:
                executor.spin_until_future_complete(until, timeout_sec=SPIN_SLICE)
                continue
            rest = beat.due - time.monotonic()
            if rest > 0.0:
                executor.spin_once(timeout_sec=min(rest, SPIN_SLICE))
            else:
                beat.fire()
    except (KeyboardInterrupt, ExternalShutdownException):
        return False
    except RuntimeError:
        # An executor can fail to convert a message taken while a signal shuts the context down;
        # the shutdown may land a moment after the error, so give it that moment.
        deadline = time.monotonic() + SHUTDOWN_GRACE
        while context.ok() and time.monotonic() < deadline:
            time.sleep(0.01)
        if context.ok():
            raise
        return False
    return until.done()
