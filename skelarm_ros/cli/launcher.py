# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""``skelarm-ros launch sim name:=value ...``: the graph of ``sim.launch.py`` without ``ros2 launch``.

The nodes come from :func:`skelarm_ros.cli.graph.describe`, the same description the
launch file turns into ``launch_ros`` actions, and start as processes:

- a node of this package as ``python -m skelarm_ros.cli run <executable>``, any other
  (robot_state_publisher, rviz2) from its ROS installation, found through the ament
  index; an optional node whose executable is not installed is reported and left out;
- each with ``--ros-args -r __node:=<name> [-r __ns:=/<namespace>] --params-file
  <file> [-r from:=to ...]``, the parameters written to a temporary YAML file;
- each process's output forwarded line by line, prefixed with ``[<node>]``;
- each with the graph's Fast DDS profile (:func:`skelarm_ros.cli.transport.graph_environment`),
  as ``sim.launch.py`` gives it too, unless the user has a profile of their own.

The launcher stops every node (SIGINT, then SIGTERM, then SIGKILL, each after a
timeout) on Ctrl-C or SIGTERM, when a node fails, and when a node that ends the
graph (the simulator with a ``duration``) exits. A Ctrl-C at any moment is a stop
request: no node starts after it, and each one started before it is stopped. It
exits 0 when every node ended cleanly, 1 when one failed, 2 on a usage error.

This module imports neither rclpy nor launch.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

import yaml

from skelarm_ros.cli.graph import ARGUMENTS, PACKAGE, GraphError, NodeSpec, describe
from skelarm_ros.cli.transport import graph_environment
from skelarm_ros.startup import STOP_SIGNALS, restore_signals, started_blocked

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import FrameType

GRAPHS: dict[str, Callable[..., list[NodeSpec]]] = {"sim": describe}
STOP_TIMEOUT = 5.0  # s a node gets for each of SIGINT and SIGTERM before the next, harder signal
_POLL = 0.05  # s between checks of the processes
_LABEL = "launch"


class LaunchError(ValueError):
    """A launch that cannot start; the message says what is wrong and what would be right."""


def parse_assignments(tokens: Sequence[str]) -> dict[str, str]:
    """Read ``name:=value`` launch arguments.

    Parameters
    ----------
    tokens : Sequence[str]
        Command-line words, each ``name:=value``.

    Returns
    -------
    dict[str, str]
        Values by name; a name given twice keeps its last value, as ``ros2 launch`` does.

    Raises
    ------
    LaunchError
        If a word is not ``name:=value``.
    """
    values: dict[str, str] = {}
    for token in tokens:
        name, sep, value = token.partition(":=")
        if not sep or not name:
            msg = f"launch argument '{token}' is not name:=value (for example mode:=lockstep)"
            raise LaunchError(msg)
        values[name] = value
    return values


def parameters_document(spec: NodeSpec) -> dict[str, object]:
    """Return the parameters YAML document for a node: ``{"/**": {"ros__parameters": ...}}``."""
    return {"/**": {"ros__parameters": dict(spec.parameters)}}


def ros_arguments(spec: NodeSpec, params_file: Path) -> list[str]:
    """Return the ``--ros-args ...`` part of a node's command line.

    Parameters
    ----------
    spec : NodeSpec
        The node.
    params_file : Path
        The YAML file holding its parameters (:func:`parameters_document`).

    Returns
    -------
    list[str]
        ``--ros-args``, the node name, the namespace when there is one, the parameters
        file and the remappings.
    """
    words = ["--ros-args", *(["-r", f"__node:={spec.name}"] if spec.name else [])]
    if spec.namespace:
        words += ["-r", f"__ns:=/{spec.namespace}"]
    words += ["--params-file", str(params_file)]
    for source, target in spec.remappings:
        words += ["-r", f"{source}:={target}"]
    return words


def find_executable(package: str, executable: str) -> list[str] | None:
    """Return how to run a package's executable, or ``None`` when it is not installed.

    Parameters
    ----------
    package : str
        The ROS package.
    executable : str
        The executable's name.

    Returns
    -------
    list[str] | None
        The command's first words: this package's executables through this Python's
        ``skelarm_ros.cli run``; others from ``<prefix>/lib/<package>/`` of the ament index.
    """
    if package == PACKAGE:
        return [sys.executable, "-m", "skelarm_ros.cli", "run", executable]
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_prefix

        prefix = Path(get_package_prefix(package))
    except (ImportError, PackageNotFoundError, ValueError, OSError):
        return None
    path = prefix / "lib" / package / executable
    return [str(path)] if path.is_file() and os.access(path, os.X_OK) else None


def node_label(spec: NodeSpec) -> str:
    """Return the name both launchers give a node in what they say: ``<namespace>/<name>`` (``arm1/simulator``)."""
    name = spec.name or spec.executable
    return f"{spec.namespace}/{name}" if spec.namespace else name


def failure(name: str, code: int, *, running: bool = True) -> str:
    """Return the sentence both launchers say when a node of the graph exits non-zero.

    Parameters
    ----------
    name : str
        The node's :func:`node_label`.
    code : int
        Its exit code (negative: the signal that ended it).
    running : bool, optional
        Whether the graph was running (the failure stops it) or already stopping.

    Returns
    -------
    str
        ``arm1/simulator failed with exit code 1; stopping the graph``, or, while
        stopping, ``arm1/simulator ended with exit code -15``.
    """
    if running:
        return f"{name} failed with exit code {code}; stopping the graph"
    return f"{name} ended with exit code {code}"


@dataclass
class Planned:
    """One process to start: a label for its output, its command, and whether its exit ends the graph.

    ``own`` marks this package's executables: they start with SIGINT and SIGTERM
    blocked until their handlers are in place (:func:`skelarm_ros.startup.take_signals`).
    """

    label: str
    command: list[str]
    ends_graph: bool = False
    own: bool = False


def plan(
    specs: Sequence[NodeSpec],
    directory: Path,
    *,
    report: Callable[[str], None],
    locate: Callable[[str, str], list[str] | None] = find_executable,
) -> list[Planned]:
    """Turn node specs into commands, writing each node's parameters file into ``directory``.

    Parameters
    ----------
    specs : Sequence[NodeSpec]
        The graph (:func:`skelarm_ros.cli.graph.describe`).
    directory : Path
        Where the parameter files go; it must outlive the processes.
    report : Callable[[str], None]
        Told about each optional node left out.
    locate : Callable[[str, str], list[str] | None], optional
        Finds an executable (:func:`find_executable`).

    Returns
    -------
    list[Planned]
        The processes to start, in order.

    Raises
    ------
    LaunchError
        If a node that is not optional has no executable.
    """
    planned: list[Planned] = []
    for spec in specs:
        start = locate(spec.package, spec.executable)
        name = node_label(spec)
        if start is None:
            if spec.optional:
                report(f"{spec.package} is not installed, so '{name}' is not started; the rest of the graph goes on")
                continue
            msg = f"executable '{spec.executable}' of package '{spec.package}' was not found; install {spec.package}"
            raise LaunchError(msg)
        params_file = directory / f"{len(planned):02d}_{spec.name or spec.executable}.yaml"
        with params_file.open("w", encoding="utf-8") as stream:
            yaml.safe_dump(parameters_document(spec), stream, default_flow_style=False)
        command = [*start, *spec.arguments, *ros_arguments(spec, params_file)]
        planned.append(Planned(name, command, spec.ends_graph, own=spec.package == PACKAGE))
    return planned


@dataclass
class _Process:
    planned: Planned
    popen: subprocess.Popen[bytes]
    reader: threading.Thread
    code: int | None = None
    forced: bool = False  # needed SIGTERM or SIGKILL


@dataclass
class Runner:
    """Start planned processes, forward their output and stop them all together.

    Parameters
    ----------
    out : IO[str]
        Where the prefixed output goes.
    stop_timeout : float
        Seconds each process gets after SIGINT, and again after SIGTERM.
    """

    out: IO[str] = field(default_factory=lambda: sys.stdout)
    stop_timeout: float = STOP_TIMEOUT
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopping: bool = False

    def say(self, label: str, line: str) -> None:
        """Write one line, prefixed with ``[label]``."""
        with self._lock:
            self.out.write(f"[{label}] {line}\n")
            self.out.flush()

    def request_stop(self, signum: int = signal.SIGINT, frame: FrameType | None = None) -> None:
        """Ask the graph to stop: no process starts after this, and the running ones are stopped.

        A signal handler (and a watchdog thread's call): it takes no lock, since the main thread
        it interrupts may be holding any.
        """
        self._stopping = True

    def _forward(self, label: str, stream: IO[bytes]) -> None:
        for raw in iter(stream.readline, b""):
            self.say(label, raw.decode(errors="replace").rstrip("\n"))
        stream.close()

    def _start(self, planned: Planned) -> _Process:
        env = dict(os.environ, PYTHONUNBUFFERED="1", **graph_environment(os.environ))
        with started_blocked() if planned.own else contextlib.nullcontext():
            popen = self._popen(planned, env)
        assert popen.stdout is not None
        reader = threading.Thread(target=self._forward, args=(planned.label, popen.stdout), daemon=True)
        reader.start()
        self.say(_LABEL, f"started {planned.label} (pid {popen.pid})")
        return _Process(planned, popen, reader)

    @staticmethod
    def _popen(planned: Planned, env: dict[str, str]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            planned.command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            process_group=0,  # Ctrl-C reaches the launcher only, which then stops each node once
        )

    def run(self, planned: Sequence[Planned]) -> int:
        """Run the processes until one ends the graph, one fails, all exit, or a stop is requested.

        A process whose turn to start comes after a stop was requested is not started.

        Returns
        -------
        int
            0 when every process ended cleanly (exit code 0, no SIGTERM or SIGKILL
            needed), else 1.
        """
        processes: list[_Process] = []
        failed = False
        try:
            for item in planned:
                if self._stopping:
                    break
                processes.append(self._start(item))
            failed = self._watch(processes)
        finally:
            failed = self._stop_all(processes) or failed
        return 1 if failed else 0

    def _watch(self, processes: list[_Process]) -> bool:
        """Wait for the graph to end; return whether a process failed."""
        while not self._stopping:
            for process in processes:
                if process.code is not None:
                    continue
                code = process.popen.poll()
                if code is None:
                    continue
                process.code = code
                name = process.planned.label
                if code != 0:
                    self.say(_LABEL, failure(name, code))
                    return True
                if process.planned.ends_graph:
                    self.say(_LABEL, f"{name} finished; stopping the graph")
                    return False
                self.say(_LABEL, f"{name} exited")
            if all(process.code is not None for process in processes):
                return False
            time.sleep(_POLL)  # a signal's handler runs in it, and it sleeps on
        self.say(_LABEL, "stop requested; stopping the graph")
        return False

    def _stop_all(self, processes: list[_Process]) -> bool:
        """SIGINT, SIGTERM, then SIGKILL to what still runs; return whether one did not end cleanly."""
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            running = [p for p in processes if p.code is None and p.popen.poll() is None]
            if not running:
                break
            for process in running:
                process.forced = process.forced or signum != signal.SIGINT
                process.popen.send_signal(signum)
            deadline = time.monotonic() + self.stop_timeout
            for process in running:
                try:
                    process.popen.wait(max(deadline - time.monotonic(), 0.0))
                except subprocess.TimeoutExpired:
                    if signum != signal.SIGKILL:
                        name = signal.Signals(signum).name
                        self.say(_LABEL, f"{process.planned.label} did not stop after {name}")
        unclean = False
        for process in processes:
            if process.code is None:
                process.code = process.popen.wait()
                if process.code != 0 or process.forced:
                    self.say(_LABEL, failure(process.planned.label, process.code, running=False))
                    unclean = True
            process.reader.join(self.stop_timeout)
        return unclean


def _show_arguments(out: IO[str]) -> None:
    for argument in ARGUMENTS.values():
        default = f"'{argument.default}'"
        out.write(f"    '{argument.name}':\n        {argument.description}\n        (default: {default})\n\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``skelarm-ros launch <graph> [name:=value ...]``.

    Returns
    -------
    int
        0 when the graph ended cleanly (also when stopped by SIGINT or SIGTERM), 1 when
        a node failed, 2 on a usage error.
    """
    parser = argparse.ArgumentParser(
        prog="skelarm-ros launch",
        description="Start the nodes of sim.launch.py as processes, as `ros2 launch skelarm_ros sim.launch.py` does.",
    )
    parser.add_argument("graph", nargs="?", help=f"the launch file: {', '.join(GRAPHS)} (or sim.launch.py)")
    parser.add_argument("arguments", nargs="*", metavar="name:=value", help="launch arguments")
    parser.add_argument("-s", "--show-args", action="store_true", help="list the launch arguments and exit")
    parser.add_argument(
        "--dry-run", action="store_true", help="print each node's command (its parameter file kept), start none"
    )
    options = parser.parse_intermixed_args(sys.argv[1:] if argv is None else list(argv))
    if options.graph is None:
        print(
            f"skelarm-ros launch: name the launch file ({', '.join(GRAPHS)}), for example: "
            "skelarm-ros launch sim mode:=lockstep duration:=2.0",
            file=sys.stderr,
        )
        return 2
    graph = options.graph.removesuffix(".launch.py")
    if graph not in GRAPHS:
        print(f"skelarm-ros launch: no launch file '{options.graph}'; choose from {', '.join(GRAPHS)}", file=sys.stderr)
        return 2
    if options.show_args:
        print("Arguments (pass arguments as '<name>:=<value>'):\n")
        _show_arguments(sys.stdout)
        return 0
    if options.dry_run:
        return _dry_run(GRAPHS[graph], options.arguments)
    runner = Runner()
    # From here on a Ctrl-C or SIGTERM is a stop request, whatever the moment: the graph is still described
    # and its parameter files removed at the end, but no node starts after it.
    previous = {signum: signal.signal(signum, runner.request_stop) for signum in STOP_SIGNALS}
    try:
        with tempfile.TemporaryDirectory(prefix="skelarm-ros-launch-") as directory:
            try:
                specs = GRAPHS[graph](parse_assignments(options.arguments))
                planned = plan(specs, Path(directory), report=lambda line: runner.say(_LABEL, line))
            except (GraphError, LaunchError) as error:
                print(f"skelarm-ros launch: {error}", file=sys.stderr)
                return 2
            return runner.run(planned)
    finally:
        restore_signals(previous)


def _dry_run(describe: Callable[[dict[str, str]], list[NodeSpec]], arguments: Sequence[str]) -> int:
    """Print each node's command line; its parameter file stays where it is, so the command runs as printed."""
    directory = Path(tempfile.mkdtemp(prefix="skelarm-ros-launch-"))
    notes: list[str] = []
    try:
        planned = plan(describe(parse_assignments(arguments)), directory, report=notes.append)
    except (GraphError, LaunchError) as error:
        shutil.rmtree(directory, ignore_errors=True)
        print(f"skelarm-ros launch: {error}", file=sys.stderr)
        return 2
    try:
        for note in notes:
            print(f"# {note}")
        print(f"# the parameter files are kept in {directory}")
        for item in planned:
            print(" ".join(shlex.quote(word) for word in item.command))
        sys.stdout.flush()  # here, where a closed pipe is caught, not at exit
    except BrokenPipeError:  # the reader (head, a pager) stopped reading: nothing more to say
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
