# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Simulated skelarm arm: simulator, controller, force replay, recorder and rviz.

    ros2 launch skelarm_ros sim.launch.py mode:=lockstep duration:=2.0
    ros2 launch skelarm_ros sim.launch.py --show-args

The nodes, their parameters and remappings come from ``skelarm_ros.cli.graph.describe``,
the description ``skelarm-ros launch sim`` starts too (docs/launch.md). As that launcher
does, this file refuses an argument it does not know, and a node that exits non-zero
stops the graph and makes ``ros2 launch`` exit 1, naming the node; a stop the user asks
for (Ctrl-C) ends with exit code 0 whenever it comes.
"""

# The SIGINT handler goes in place before the modules are imported (take_interrupts), so imports follow code:
# ruff: noqa: E402

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable


class Interrupts:
    """Whether the launch process got a Ctrl-C: its SIGINT handler, which notes it and raises nothing.

    (A plain class: launch runs this file as a module it does not register, which dataclasses need.)
    """

    notes_ctrl_c = True
    """Marks the handler, so that a later load of this file in the same process finds it (:func:`take_interrupts`)."""

    def __init__(self) -> None:
        self.heard = False
        """A Ctrl-C came: the launch stops (launch may not have heard it yet)."""

    def __call__(self, _signum: int, _frame: object) -> None:
        self.heard = True


def take_interrupts() -> Interrupts | None:
    """Make a Ctrl-C in this launch process a note instead of Python's KeyboardInterrupt, for the rest of its life.

    launch hears a Ctrl-C through Python's signal wake-up descriptor and stops the graph in order, whatever Python's
    own SIGINT handler does. Python's default one also raises KeyboardInterrupt in whatever the launch process runs
    at that moment: inside an import while this file loads (it imports launch_ros, rclpy and the package, most of a
    second), and inside the asyncio task in which launch spawns a node, which then dies half-way (``Task exception
    was never retrieved``): the node starts but launch never watches it, so ``ros2 launch`` waits for it for ever,
    or exits 0 and leaves it running. launch catches and ignores the KeyboardInterrupt wherever it reaches launch's
    own loop, so replacing the handler changes nothing else: the wake-up descriptor is written either way.

    Only Python's default handler is replaced, and only in the main thread; a later load of this file in the same
    process (launch loads an included file more than once; two arms) finds the handler this one put in place and
    shares it, so a Ctrl-C between two loads is heard by the later one.

    Returns
    -------
    Interrupts | None
        The handler in place, or ``None`` where another handler is left alone.
    """
    if threading.current_thread() is not threading.main_thread():
        return None
    handler = signal.getsignal(signal.SIGINT)
    if getattr(handler, "notes_ctrl_c", False):
        return handler  # type: ignore[return-value]
    if handler is not signal.default_int_handler:
        return None
    interrupts = Interrupts()
    signal.signal(signal.SIGINT, interrupts)
    return interrupts


INTERRUPTS = take_interrupts()

from ament_index_python.packages import PackageNotFoundError, get_package_prefix
from launch import LaunchContext, LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, LogInfo, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit, OnProcessStart, OnShutdown
from launch.events import Shutdown, matches_action
from launch.events.process import ProcessExited, ProcessStarted, SignalProcess
from launch_ros.actions import Node

from skelarm_ros.cli.graph import ARGUMENTS, NodeSpec, describe
from skelarm_ros.cli.launcher import failure, node_label
from skelarm_ros.cli.transport import graph_environment


def interrupted() -> bool:
    """Whether the launch process got a Ctrl-C since a load of this file took its SIGINT (launch may not know yet)."""
    return INTERRUPTS is not None and INTERRUPTS.heard


class Stops:
    """Whether launch stops for a Ctrl-C (its ``Shutdown`` event says ``due_to_sigint``), for :func:`on_start`."""

    def __init__(self) -> None:
        self.by_interrupt = False


# Launch configurations that launch and launch_ros keep for themselves (PushRosNamespace, SetRemap,
# SetParameter, emulate_tty) and those ros2 launch's --launch-prefix options add: not arguments.
OWN_CONFIGURATIONS = frozenset(
    {"ros_namespace", "ros_remaps", "global_params", "emulate_tty", "launch-prefix", "launch-prefix-filter"}
)


class NodeFailed(RuntimeError):
    """A node of the graph exited non-zero: raised from its exit handler, it ends the launch with exit code 1."""


def installed(package: str) -> bool:
    """Whether the ament index knows the package."""
    try:
        get_package_prefix(package)
    except (PackageNotFoundError, OSError):  # not installed, or no AMENT_PREFIX_PATH at all
        return False
    return True


def given_arguments(context: LaunchContext) -> dict[str, str]:
    """Every launch argument in scope, declared or not: the launch configurations but launch's own."""
    return {name: value for name, value in context.launch_configurations.items() if name not in OWN_CONFIGURATIONS}


def node_action(spec: NodeSpec) -> Node:
    """The launch_ros action that starts one node of the description."""
    return Node(
        package=spec.package,
        executable=spec.executable,
        name=spec.name or None,  # none: the nodes keep their own names (the composed process runs two)
        namespace=spec.namespace or None,
        parameters=[dict(spec.parameters)],
        remappings=list(spec.remappings),
        arguments=list(spec.arguments),
        additional_env=graph_environment(os.environ),  # the graph's Fast DDS profile, as skelarm-ros launch gives it
        output="screen",
    )


STOP_SIGNAL = signal.SIGINT
"""The signal that stops a node when the graph stops: Ctrl-C's, which the terminal sends every process of the
launch, and the one launch sends each node itself when it stops the graph (SIGTERM follows only after
``sigterm_timeout``, for a node that did not end)."""


def exit_code(event: ProcessExited) -> int:
    """The code the node's process ended with: negative, the signal that ended it.

    launch reports what asyncio's child watcher read, which is 255 when the process's status was already
    taken: launch sending a signal to a node that was just ending (its ``send_signal`` asks the operating
    system whether the process still runs, and so takes the status first). The ``subprocess.Popen`` behind
    the process's transport keeps the status that was taken, so that is the code read here.
    """
    transport = getattr(event.action, "_subprocess_transport", None)
    process = transport.get_extra_info("subprocess") if transport is not None else None
    code = getattr(process, "returncode", None)
    return event.returncode if code is None else code


def ended_cleanly(code: int, *, stopping: bool) -> bool:
    """Whether a node that exited with ``code`` ended as it should.

    0 always; and, once the graph is stopping, an end by :data:`STOP_SIGNAL`: a node takes the signal from its
    first lines on and ends with 0, but one that gets it in the milliseconds before (while its interpreter
    starts) ends by it, and that too is the stop that was asked for.
    """
    return code == 0 or (stopping and code == -STOP_SIGNAL)


def on_exit(spec: NodeSpec) -> Callable[[ProcessExited, LaunchContext], list | None]:
    """What happens when a node's process exits.

    Not clean (:func:`ended_cleanly`): raise :class:`NodeFailed`, which launch reports ("Caught exception in
    launch ...: arm1/simulator failed with exit code 1; stopping the graph"), then it stops the graph and
    exits 1. Zero, from a node that ends the graph (the simulator with a duration): shut down.
    """
    name = node_label(spec)

    def handle(event: ProcessExited, context: LaunchContext) -> list | None:
        code = exit_code(event)
        if not ended_cleanly(code, stopping=context.is_shutdown):
            raise NodeFailed(failure(name, code, running=not context.is_shutdown))
        if code == 0 and spec.ends_graph:
            return [EmitEvent(event=Shutdown(reason=f"{name} finished"))]
        return None

    return handle


def on_start(stops: Stops) -> Callable[[ProcessStarted, LaunchContext], list | None]:
    """What happens when a node's process starts: one that starts after a Ctrl-C gets its SIGINT now.

    On a Ctrl-C in a terminal, ``ros2 launch`` leaves the SIGINT to the terminal, which sends it to every
    process of the launch, and sends SIGTERM only ``sigterm_timeout`` (5 s) later; a node whose start was
    already under way then starts after the terminal's SIGINT, so it is sent one here. (A launch without a
    terminal, ``--noninteractive``, sends it SIGINT itself.)
    """

    def handle(event: ProcessStarted, context: LaunchContext) -> list | None:
        if stops.by_interrupt and not context.noninteractive:
            signal_it = SignalProcess(signal_number=STOP_SIGNAL, process_matcher=matches_action(event.action))
            return [EmitEvent(event=signal_it)]
        return None

    return handle


def on_shutdown(stops: Stops) -> Callable[[Shutdown, LaunchContext], None]:
    """Note whether launch stops for a Ctrl-C, for :func:`on_start`."""

    def handle(event: Shutdown, _context: LaunchContext) -> None:
        stops.by_interrupt = stops.by_interrupt or event.due_to_sigint

    return handle


def graph_actions(context: LaunchContext) -> list:
    """Evaluate the launch arguments and turn the described graph into actions.

    Nothing starts when a Ctrl-C came while this file loaded or the graph was described: launch stops.

    Raises
    ------
    skelarm_ros.cli.graph.GraphError
        For an unknown argument or a bad value, with the sentence ``skelarm-ros launch`` says;
        launch reports it and exits 1 before any node starts.
    """
    specs = describe(given_arguments(context))  # it reads the scenario, with the modules that takes
    if interrupted() or context.is_shutdown:
        return []
    stops = Stops()
    actions: list = [RegisterEventHandler(OnShutdown(on_shutdown=on_shutdown(stops)))]
    for spec in specs:
        if spec.optional and not installed(spec.package):
            actions.append(LogInfo(msg=f"{spec.package} is not installed, so '{spec.name}' is not started"))
            continue
        node = node_action(spec)
        actions.append(node)
        actions.append(RegisterEventHandler(OnProcessStart(target_action=node, on_start=on_start(stops))))
        actions.append(RegisterEventHandler(OnProcessExit(target_action=node, on_exit=on_exit(spec))))
    return actions


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [
            *(
                DeclareLaunchArgument(argument.name, default_value=argument.default, description=argument.description)
                for argument in ARGUMENTS.values()
            ),
            OpaqueFunction(function=graph_actions),
        ]
    )
