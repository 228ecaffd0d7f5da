# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""``skelarm-ros``: the package's tools on a machine without a ROS 2 distribution.

``skelarm-ros run <executable> [args]`` does what ``ros2 run skelarm_ros <executable>
[args]`` does. Each other subcommand lives in its own module and is imported only
when used.
"""

from __future__ import annotations

import argparse
import sys

from skelarm_ros.startup import (
    EXECUTABLES,
    NODE_STOPPED,
    NODES,
    TOOL_INTERRUPTED,
    console_program,
    exit_quietly,
    load,
    quiet_start,
    run_tool,
    start,
)

# subcommand -> (module:function taking the remaining arguments, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "bench": ("skelarm_ros.bench:main", "run the benchmarks and print measured ratios"),
    "compare": (
        "skelarm_ros.cli.compare:main",
        "recorded commands beside a shadow run's (replay:=BAG): differences, plot",
    ),
    "demo": (
        "skelarm_ros.cli.demo:main",
        "run the demo: a lockstep reach with a push, recorded, converted and plotted",
    ),
    "launch": (
        "skelarm_ros.cli.launcher:main",
        "start a launch file's nodes, as `ros2 launch skelarm_ros <file>` does",
    ),
    "plot": ("skelarm_ros.cli.plot:main", "draw a recorded run (.sklog.npz) to an image, headless"),
    "tune": (
        "skelarm_ros.cli.tune:main",
        "optimise a scenario's controller gains on its twin behind its driver (Optuna), checked over ROS",
    ),
}
LONG_RUNNING = ("launch",)
"""Commands a signal is the normal way to stop (exit 0 then); the others are one-shot tools."""


def executables() -> dict[str, str]:
    """Return the package's executables (``ros2 run`` names) and the ``main`` each runs."""
    return dict(sorted(EXECUTABLES.items()))


def _call(command: str, argv: list[str]) -> int:
    """Run a subcommand as its own program, with ``sys.argv`` set; a signal ends it quietly."""
    long_running = command in LONG_RUNNING
    with quiet_start(NODE_STOPPED if long_running else TOOL_INTERRUPTED):
        function = load(COMMANDS[command][0])
        sys.argv = [f"skelarm-ros {command}", *argv]
        if long_running:
            return int(function() or 0)  # it takes the signals over itself
        return run_tool(function, f"skelarm-ros {command}")


def _stop_code(args: list[str]) -> int:
    """Return the exit code a signal leaves, from the command line alone: a node's or a launch's, else a tool's."""
    if args[:1] == ["run"] and len(args) > 1:
        return NODE_STOPPED if args[1] in NODES else TOOL_INTERRUPTED
    return NODE_STOPPED if args[:1] and args[0] in LONG_RUNNING else TOOL_INTERRUPTED


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``skelarm-ros <command> ...``; a signal before the command takes it over ends it quietly."""
    args = list(sys.argv[1:] if argv is None else argv)
    with quiet_start(_stop_code(args)):
        return _dispatch(args)


def _dispatch(args: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="skelarm-ros",
        description="skelarm_ros tools for machines without a ROS 2 distribution.",
    )
    sub = parser.add_subparsers(dest="command", metavar="command")
    run = sub.add_parser("run", help="start an executable, as `ros2 run skelarm_ros <executable>` does")
    run.add_argument("executable", help="one of: " + ", ".join(executables()))
    for name, (_, text) in COMMANDS.items():
        sub.add_parser(name, help=text, add_help=False)
    if not args or args[0] in ("-h", "--help"):
        parser.print_help()
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "run":
        if not rest or rest[0] in ("-h", "--help"):
            run.print_help()
            return 0 if rest else 2
        known = executables()
        if rest[0] not in known:
            print(
                f"skelarm-ros: no executable '{rest[0]}' in skelarm_ros; choose from {', '.join(known)}",
                file=sys.stderr,
            )
            return 2
        return start(rest[0], rest[1:])
    if command in COMMANDS:
        return _call(command, rest)
    print(f"skelarm-ros: unknown command '{command}'; choose from run, {', '.join(COMMANDS)}", file=sys.stderr)
    return 2


def console() -> int:
    """Run the ``skelarm-ros`` console script: :func:`main`, then quiet until the process ends."""
    console_program()
    return exit_quietly(main())
