# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Simulated skelarm arm: simulator, controller, force replay, recorder and rviz.

    ros2 launch skelarm_ros sim.launch.py mode:=lockstep duration:=2.0
    ros2 launch skelarm_ros sim.launch.py --show-args

The nodes, their parameters and remappings come from ``skelarm_ros.graph.describe``,
the description ``skelarm-ros launch sim`` starts too (docs/launch.md).
"""

from __future__ import annotations

from ament_index_python.packages import PackageNotFoundError, get_package_prefix
from launch import LaunchContext, LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, LogInfo, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from skelarm_ros.graph import ARGUMENTS, NodeSpec, describe


def installed(package: str) -> bool:
    """Whether the ament index knows the package."""
    try:
        get_package_prefix(package)
    except (PackageNotFoundError, OSError):  # not installed, or no AMENT_PREFIX_PATH at all
        return False
    return True


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


def graph_actions(context: LaunchContext) -> list:
    """Evaluate the launch arguments and turn the described graph into actions."""
    values = {name: LaunchConfiguration(name).perform(context) for name in ARGUMENTS}
    actions: list = []
    for spec in describe(values):
        if spec.optional and not installed(spec.package):
            actions.append(LogInfo(msg=f"{spec.package} is not installed, so '{spec.name}' is not started"))
            continue
        node = node_action(spec)
        actions.append(node)
        if spec.ends_graph:
            handler = OnProcessExit(
                target_action=node,
                on_exit=[EmitEvent(event=Shutdown(reason=f"{spec.name} finished"))],
            )
            actions.append(RegisterEventHandler(handler))
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
