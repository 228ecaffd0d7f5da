# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Simulated skelarm arm: simulator, controller, force replay, recorder and rviz.

    ros2 launch skelarm_ros sim.launch.py mode:=lockstep duration:=2.0
    ros2 launch skelarm_ros sim.launch.py --show-args

The nodes, their parameters and remappings come from ``skelarm_ros.cli.graph.describe``,
the description ``skelarm-ros launch sim`` starts too (docs/launch.md). As that launcher
does, this file refuses an argument it does not know, and a node that exits non-zero
stops the graph and makes ``ros2 launch`` exit 1, naming the node.
"""

from __future__ import annotations

from collections.abc import Callable

from ament_index_python.packages import PackageNotFoundError, get_package_prefix
from launch import LaunchContext, LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, LogInfo, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.events.process import ProcessExited
from launch_ros.actions import Node

from skelarm_ros.cli.graph import ARGUMENTS, NodeSpec, describe
from skelarm_ros.cli.launcher import failure, node_label

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
        name=spec.name,
        namespace=spec.namespace or None,
        parameters=[dict(spec.parameters)],
        remappings=list(spec.remappings),
        arguments=list(spec.arguments),
        output="screen",
    )


def on_exit(spec: NodeSpec) -> Callable[[ProcessExited, LaunchContext], list | None]:
    """What happens when a node's process exits.

    Non-zero: raise :class:`NodeFailed`, which launch reports ("Caught exception in launch ...:
    arm1/simulator failed with exit code 1; stopping the graph"), then it stops the graph and
    exits 1. Zero, from a node that ends the graph (the simulator with a duration): shut down.
    """
    name = node_label(spec)

    def handle(event: ProcessExited, context: LaunchContext) -> list | None:
        if event.returncode != 0:
            raise NodeFailed(failure(name, event.returncode, running=not context.is_shutdown))
        if spec.ends_graph:
            return [EmitEvent(event=Shutdown(reason=f"{name} finished"))]
        return None

    return handle


def graph_actions(context: LaunchContext) -> list:
    """Evaluate the launch arguments and turn the described graph into actions.

    Raises
    ------
    skelarm_ros.cli.graph.GraphError
        For an unknown argument or a bad value, with the sentence ``skelarm-ros launch`` says;
        launch reports it and exits 1 before any node starts.
    """
    actions: list = []
    for spec in describe(given_arguments(context)):
        if spec.optional and not installed(spec.package):
            actions.append(LogInfo(msg=f"{spec.package} is not installed, so '{spec.name}' is not started"))
            continue
        node = node_action(spec)
        actions.append(node)
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
