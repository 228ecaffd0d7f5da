# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""How every executable of the package starts: quietly, whatever signal arrives while it imports.

The console scripts (``ros2 run skelarm_ros <name>``, ``skelarm-ros run <name>``) enter
here, not in the node or tool module itself: this module imports nothing heavy, so
before rclpy, numpy, skelarm and Pinocchio load (a second or more) it can make SIGINT
and SIGTERM end the process at once, without a traceback and without running any
half-imported library's teardown. Once started, a node hands signals to rclpy
(:func:`skelarm_ros.nodes.kit.run_node`) and a tool turns them into
``KeyboardInterrupt``, which its ``main`` ends cleanly.

Exit codes after a signal are the same everywhere: 0 for a node or a launch (a
signal is how they are stopped), 130 for a one-shot tool whose work did not finish.

This module imports neither rclpy nor numpy.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import FrameType

NODE_STOPPED = 0
"""Exit code of a node (or a launch) stopped by SIGINT or SIGTERM: stopping is what those signals ask for."""
TOOL_INTERRUPTED = 130
"""Exit code of a one-shot tool stopped by a signal before it finished (128 + SIGINT, the shell's convention)."""

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

NODES = {
    "simulator": "skelarm_ros.nodes.simulator:main",
    "controller": "skelarm_ros.nodes.controller:main",
    "force_replay": "skelarm_ros.nodes.force_replay:main",
    "recorder": "skelarm_ros.nodes.recorder:main",
    "player": "skelarm_ros.nodes.player:main",
}
"""Node executables and the ``main`` each runs."""

TOOLS = {
    "bag_to_log": "skelarm_ros.bag_to_log:main",
    "log_to_bag": "skelarm_ros.log_to_bag:main",
    "identify": "skelarm_ros.identify:main",
}
"""One-shot tool executables and the ``main`` each runs."""

EXECUTABLES = {**NODES, **TOOLS}
"""Every executable ``ros2 run skelarm_ros <name>`` starts (setup.py installs one console script each)."""


def end_quietly(code: int) -> Callable[[int, FrameType | None], None]:
    """Return a signal handler that ends the process at once with ``code``, printing nothing.

    For the time before a program can stop in order (while it imports): nothing has
    been written yet, so nothing is lost, and no library's teardown runs half-imported.
    """

    def handler(_signum: int, _frame: FrameType | None) -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to say anyway
                stream.flush()
        os._exit(code)

    return handler


@contextlib.contextmanager
def quiet_start(code: int) -> Iterator[None]:
    """Make SIGINT and SIGTERM end the process quietly with ``code`` until the program takes them over.

    The handlers in place before are back when the block ends (a test may call a
    ``main`` in its own process).
    """
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    for signum in STOP_SIGNALS:
        signal.signal(signum, end_quietly(code))
    take_signals()
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def take_signals() -> None:
    """Unblock SIGINT and SIGTERM, now that handlers are in place; one that arrived meanwhile is handled now.

    ``skelarm-ros launch`` starts the package's executables with both signals blocked
    (:func:`started_blocked`), so a stop that comes while the interpreter itself starts
    waits for this point instead of interrupting Python's own start-up.
    """
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


@contextlib.contextmanager
def started_blocked() -> Iterator[None]:
    """Block SIGINT and SIGTERM in this thread while a child process is started, so the child starts with them blocked.

    Only for the package's own executables: they unblock them once their handlers are
    in place (:func:`take_signals`); any other program would never take a signal.
    """
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def interrupt_as_keyboard_interrupt() -> None:
    """Hand SIGINT and SIGTERM to the program as ``KeyboardInterrupt`` (a tool's ``main`` ends it cleanly)."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.default_int_handler)


def run_tool(function: Callable[[], int | None], name: str) -> int:
    """Run a one-shot tool's ``main``: a signal raises ``KeyboardInterrupt``, which ends it with one line."""
    interrupt_as_keyboard_interrupt()
    try:
        return int(function() or 0)
    except KeyboardInterrupt:
        print(f"{name}: stopped by a signal before it finished", file=sys.stderr)
        return TOOL_INTERRUPTED


def load(target: str) -> Callable[[], int | None]:
    """Import ``module:function`` and return the function."""
    module_name, function_name = target.split(":")
    function: Callable[[], int | None] = getattr(importlib.import_module(module_name), function_name)
    return function


def start(name: str, argv: list[str] | None = None) -> int:
    """Start the executable ``name`` with ``argv`` (``sys.argv[1:]`` when ``None``) and return its exit code.

    Parameters
    ----------
    name : str
        A key of :data:`EXECUTABLES`.
    argv : list[str] | None, optional
        Its arguments (without the program name).
    """
    node = name in NODES
    with quiet_start(NODE_STOPPED if node else TOOL_INTERRUPTED):
        function = load(EXECUTABLES[name])
        sys.argv = [name, *(sys.argv[1:] if argv is None else argv)]
        if node:
            return int(function() or 0)  # the node kit takes the signals over at rclpy.init
        return run_tool(function, name)


def exit_quietly(code: int) -> int:
    """Make SIGINT and SIGTERM end the process with ``code`` from now on, and return ``code``.

    A console script's last step: between its program's end and the interpreter's, a
    signal (a launch stopping its graph just then) would otherwise raise a
    ``KeyboardInterrupt`` with nothing left to catch it.
    """
    for signum in STOP_SIGNALS:
        signal.signal(signum, end_quietly(code))
    return code


def _console_script(name: str) -> Callable[[], int]:
    def main() -> int:
        return exit_quietly(start(name))

    main.__name__ = main.__qualname__ = name
    main.__doc__ = f"Start ``{name}`` (the console script ``ros2 run skelarm_ros {name}`` runs)."
    return main


def __getattr__(name: str) -> Callable[[], int]:
    """Return the console script of an executable: ``skelarm_ros.startup:<name>`` (setup.py names them so)."""
    if name in EXECUTABLES:
        return _console_script(name)
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
