# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""How every executable of the package starts: quietly, whatever signal arrives while it imports.

The console scripts (``ros2 run skelarm_ros <name>``, ``skelarm-ros run <name>``) enter
here, not in the node or tool module itself: this module imports nothing heavy, so
before rclpy, numpy, skelarm and Pinocchio load (a second or more) it can make SIGINT
and SIGTERM end the process at once, without a traceback and without running any
half-imported library's teardown. Once started, a node hands signals to rclpy
(:func:`skelarm_ros.nodes.running.run_node`) and a tool turns them into
``KeyboardInterrupt``, which its ``main`` ends cleanly.

Exit codes after a signal are the same everywhere: 0 for a node or a launch (a
signal is how they are stopped), 130 for a one-shot tool whose work did not finish.

This module imports neither rclpy nor numpy.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

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
    "composed": "skelarm_ros.nodes.composed:main",
    "force_replay": "skelarm_ros.nodes.force_replay:main",
    "recorder": "skelarm_ros.nodes.recorder:main",
    "player": "skelarm_ros.nodes.player:main",
}
"""Node executables and the ``main`` each runs."""

TOOLS = {
    "bag_info": "skelarm_ros.bags.info:main",
    "bag_to_log": "skelarm_ros.bags.bag_to_log:main",
    "log_to_bag": "skelarm_ros.bags.log_to_bag:main",
    "identify": "skelarm_ros.identification.identify:main",
}
"""One-shot tool executables and the ``main`` each runs."""

EXECUTABLES = {**NODES, **TOOLS}
"""Every executable ``ros2 run skelarm_ros <name>`` starts (setup.py installs one console script each)."""

_process = {"ends_after": False, "interrupted": False}
"""Whether this process ends when its program returns (:func:`console_program`) or is a test calling a
``main``, and whether a signal interrupted its tool."""


def end_quietly(code: int) -> Callable[[int, FrameType | None], None]:
    """Return a signal handler that ends the process at once with ``code``, printing nothing.

    For the time before a program can stop in order (while it imports): nothing has
    been written yet, so nothing is lost, and no library's teardown runs half-imported.
    """

    def handler(_signum: int, _frame: FrameType | None) -> None:
        _flush_and_exit(code)

    return handler


def _flush_and_exit(code: int) -> None:
    """Flush standard output and error, then end the process with ``code`` without Python's teardown."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to say anyway
            stream.flush()
    os._exit(code)


@contextlib.contextmanager
def quiet_start(code: int) -> Iterator[None]:
    """Make SIGINT and SIGTERM end the process quietly with ``code`` until the program takes them over.

    The handlers in place before are back when the block ends (a test may call a
    ``main`` in its own process), unless the process ends right after
    (:func:`console_program`): then the program's own stay until :func:`exit_quietly`.
    """
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    for signum in STOP_SIGNALS:
        signal.signal(signum, end_quietly(code))
    take_signals()
    try:
        yield
    finally:
        restore_signals(previous)


def restore_signals(previous: dict[signal.Signals, Any]) -> None:
    """Put back the signal handlers in ``previous`` (signal number to handler), unless the process ends next.

    In a process that ends when its program returns (:func:`console_program`) the
    program's own handlers stay until :func:`exit_quietly`: Python's defaults coming
    back for those last moments would turn a signal then into a traceback.
    """
    if _process["ends_after"]:
        return
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


def _held(_signum: int, _frame: FrameType | None) -> None:
    """Take a signal and do nothing: the program is already stopping (or has finished) in order."""


def hold_signals() -> None:
    """Let SIGINT and SIGTERM change nothing from now on (the program is ending in order)."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, _held)


def _interrupt_once(_signum: int, _frame: FrameType | None) -> None:
    _process["interrupted"] = True
    hold_signals()  # a second signal must not break into the clean-up the first one started
    raise KeyboardInterrupt


def interrupt_as_keyboard_interrupt() -> None:
    """Hand the first SIGINT or SIGTERM to the program as ``KeyboardInterrupt``; later ones change nothing.

    A tool's ``main`` ends the ``KeyboardInterrupt`` cleanly (removing what it had
    half-written); a launch that sends SIGINT and then SIGTERM, or a user's second
    Ctrl-C, does not break into that clean-up.
    """
    for signum in STOP_SIGNALS:
        signal.signal(signum, _interrupt_once)


def run_tool(function: Callable[[], int | None], name: str) -> int:
    """Run a one-shot tool's ``main``: a signal raises ``KeyboardInterrupt``, which ends it with one line.

    Once the tool has ended, either way, signals change nothing more: its exit code
    is the one it ended with.
    """
    _process["interrupted"] = False
    interrupt_as_keyboard_interrupt()
    try:
        code = int(function() or 0)
        hold_signals()
    except KeyboardInterrupt:
        hold_signals()
        print(f"{name}: stopped by a signal before it finished", file=sys.stderr)
        code = TOOL_INTERRUPTED
    return code


def load(target: str) -> Callable[[], int | None]:
    """Import ``module:function`` and return the function."""
    module_name, function_name = target.split(":")
    function: Callable[[], int | None] = getattr(importlib.import_module(module_name), function_name)
    return function


NUMPY_NEEDED = 2
"""The numpy major version skelarm needs at least (its metadata asks for ``numpy>=2.0.0``)."""


def numpy_found() -> tuple[str, str] | None:
    """Return the version and folder of the numpy that ``import numpy`` would load, without importing it.

    The version is read from the distribution's metadata folder beside the package folder
    (``numpy-2.2.4.dist-info`` as pip installs it, ``numpy-1.26.4.egg-info`` as Debian and
    Ubuntu do); ``None`` where there is no numpy, no such folder, or more than one version.
    """
    spec = importlib.util.find_spec("numpy")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = next(iter(spec.submodule_search_locations))
    versions = set()
    with contextlib.suppress(OSError):
        for entry in os.listdir(os.path.dirname(folder)):
            name, _, rest = entry.partition("-")
            if name.lower() == "numpy" and rest.endswith((".dist-info", ".egg-info")):
                versions.add(rest.rsplit(".", 1)[0].split("-")[0])
    return (versions.pop(), folder) if len(versions) == 1 else None


def numpy_refusal() -> str | None:
    """Return the sentence that refuses to start with a numpy older than skelarm needs, or ``None``.

    Checked before any program of the package imports numpy: with an older one, skelarm fails
    somewhere inside its own import instead.
    """
    found = numpy_found()
    if found is None:
        return None
    version, folder = found
    major = version.split(".")[0]
    if not major.isdigit() or int(major) >= NUMPY_NEEDED:
        return None
    fix = f"{sys.executable} -m pip install 'numpy>={NUMPY_NEEDED}'"
    return (
        f"numpy {version} (in {folder}) is older than the numpy {NUMPY_NEEDED} skelarm needs; install numpy>="
        f"{NUMPY_NEEDED} where this Python finds it first ({fix} in a virtual environment; a ROS 2 distribution's "
        "own numpy stays as it is, see the README)"
    )


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
        refusal = numpy_refusal()
        if refusal is not None:
            print(f"{name}: {refusal}", file=sys.stderr)
            return 1
        function = load(EXECUTABLES[name])
        sys.argv = [name, *(sys.argv[1:] if argv is None else argv)]
        if node:
            return int(function() or 0)  # the node kit takes the signals over at rclpy.init
        return run_tool(function, name)


def console_program() -> None:
    """Note that this process is the program and ends when it returns (a console script's first step).

    The handlers a program put in place then stay until :func:`exit_quietly`, instead of
    Python's defaults coming back for the last moments: a signal then (a launch stopping
    its graph just as a tool finished) changes nothing.
    """
    _process["ends_after"] = True


def exit_quietly(code: int) -> int:
    """Ignore SIGINT and SIGTERM from now on, so the process ends with ``code``, and return ``code``.

    A console script's last step. Between its program's end and the process's there
    is the interpreter's own teardown (tens of milliseconds), in which Python puts the
    default actions back for signals it handled: a signal then (a launch stopping its
    graph just as a tool finished) would kill the process instead of leaving its exit
    code. Python leaves ignored signals ignored.

    A tool a signal interrupted ends here at once: it has cleaned up, and under
    ``python -m`` (how ``skelarm-ros launch`` starts it) Python would otherwise end it
    by SIGINT instead of with ``code`` when the interrupt came while a library ran
    ``exec`` on source text (Python notes that as unhandled even though the tool
    handled it).
    """
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    if _process["interrupted"]:
        _flush_and_exit(code)
    return code


INSTALLED_SCRIPT = """\
{shebang}
# `ros2 run skelarm_ros {name}`, written by skelarm_ros's setup.py: it enters skelarm_ros.startup before
# anything else runs. Where the first line starts the interpreter through `env --block-signal`, SIGINT and
# SIGTERM wait, blocked, until the start-up has its handlers in place; until then, these lines end the process
# at once with exit code {code} on either. Python runs this file without its site step (-S on the first line)
# so that no library starts before these lines, which then add the site folders themselves.
import _signal
import posix

_signal.signal(_signal.SIGINT, lambda _signum, _frame: posix._exit({code}))
_signal.signal(_signal.SIGTERM, lambda _signum, _frame: posix._exit({code}))
import sys

if sys.flags.no_site:
    import site

    site.main()
from skelarm_ros.startup import {name}

sys.exit({name}())
"""

ENV = "/usr/bin/env"
"""The ``env`` an installed executable's interpreter line runs to start Python with the stop signals blocked."""
BLOCK_SIGNALS = "--block-signal=INT,TERM"
"""``env``'s option (GNU coreutils 8.31 or later) that starts its program with SIGINT and SIGTERM blocked."""
INTERPRETER_LINE_MAX = 255
"""The longest interpreter line Linux reads whole (after ``#!``)."""


def env_blocks_signals(env: str = ENV) -> bool:
    """Whether ``env`` starts a program with signals blocked (``--block-signal``), asked by running it once.

    For the build (setup.py), never at a program's start: it runs a process.
    """
    import subprocess  # only the build asks; executables start without it

    try:
        done = subprocess.run([env, BLOCK_SIGNALS, "true"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def interpreter_line(shebang: str, *, env: str | None) -> str:
    """Return the interpreter line of an installed executable, from the one setuptools wrote.

    Where the line names the interpreter alone (``#!/usr/bin/python3``, or ``#!/usr/bin/env python3``),
    Python gets ``-S`` (no site step before the script's first lines) and, given ``env`` (an ``env`` that
    can: :func:`env_blocks_signals`), starts through ``env -S --block-signal=INT,TERM``: SIGINT and SIGTERM
    then stay blocked through the interpreter's own start-up, in which Python answers them with
    ``KeyboardInterrupt`` or ``Fatal Python error: init_sys_streams``, until :func:`take_signals` unblocks
    them with the handlers in place, and a signal that came meanwhile is handled then. A line with options of
    its own is kept as it is.
    """
    line = shebang.strip()
    words = line.removeprefix("#!").split()
    through_env = len(words) == 2 and os.path.basename(words[0]) == "env"
    if not line.startswith("#!") or not (len(words) == 1 or through_env):
        return line
    plain = line if through_env else f"{line} -S"  # `env` takes one argument on Linux: no -S for it
    if env is None:
        return plain
    blocking = f"#!{env} -S {BLOCK_SIGNALS} {words[-1]} -S"
    return blocking if len(blocking) - len("#!") <= INTERPRETER_LINE_MAX else plain


def installed_script(name: str, shebang: str, *, env: str | None = None) -> str:
    """Return the text of the executable ``name`` that a ROS 2 build installs in ``lib/skelarm_ros/``.

    setuptools' own console scripts import ``importlib.metadata`` and search every folder of the
    Python path for the package's entry points first (a tenth of a second and more, in which a
    signal ends the process with a traceback); this one takes SIGINT and SIGTERM on its first
    lines and then enters this module, and its interpreter line (:func:`interpreter_line`) starts
    Python without its site step and, given ``env``, with those signals blocked until the start-up
    takes them.

    Parameters
    ----------
    name : str
        A key of :data:`EXECUTABLES`.
    shebang : str
        The interpreter line setuptools wrote (``#!/usr/bin/python3``).
    env : str | None, optional
        An ``env`` that can start a program with signals blocked (:func:`env_blocks_signals`), or ``None``.

    Returns
    -------
    str
        The script's text.
    """
    if name not in EXECUTABLES:
        msg = f"unknown executable {name!r}; the executables are {', '.join(EXECUTABLES)}"
        raise ValueError(msg)
    code = NODE_STOPPED if name in NODES else TOOL_INTERRUPTED
    return INSTALLED_SCRIPT.format(shebang=interpreter_line(shebang, env=env), name=name, code=code)


def _console_script(name: str) -> Callable[[], int]:
    def main() -> int:
        console_program()
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
