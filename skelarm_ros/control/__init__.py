# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Running skelarm controllers on joint states, one module per concern.

- :mod:`~skelarm_ros.control.loop`: :class:`ControlLoop` (joint states by name, the
  controller's time line, targets, effort limits) and :func:`build_control_loop`.
- :mod:`~skelarm_ros.control.settings`: how a loop runs, one record (:class:`ControlSettings`).
- :mod:`~skelarm_ros.control.restarts`: the kinds of restart of a time line and what each
  does, one table (:data:`RESTARTS`).
- :mod:`~skelarm_ros.control.plugins`: controller types that installed packages offer in
  the ``skelarm_ros.controllers`` entry-point group.
- :mod:`~skelarm_ros.control.twins`: the fast twins of skelarm's model-based controllers
  (the Pinocchio model in place of skelarm's).
- :mod:`~skelarm_ros.control.skelarm_internals`: the one place that reads and writes
  skelarm's private controller state, for the twins.

The public names are re-exported here for scripts and plugins
(``from skelarm_ros.control import build_control_loop``); code inside skelarm_ros imports
them from the module that owns them.

This package does not import rclpy.
"""

from skelarm_ros.control.loop import ControlLoop, ControlOutput, build_control_loop, channel_columns, command_order
from skelarm_ros.control.plugins import PLUGIN_GROUP, load_controller_plugins
from skelarm_ros.control.restarts import RESTARTS, Restart
from skelarm_ros.control.settings import ControlSettings
from skelarm_ros.control.twins import (
    FastComputedTorque,
    FastInverseDynamicsPD,
    FastJointSpaceMPC,
    FastSampledJointReference,
    has_fast_model,
    reads_joints_only,
    with_fast_model,
)
from skelarm_ros.interface import TIME_REVERSAL_MODES

__all__ = [
    "PLUGIN_GROUP",
    "RESTARTS",
    "TIME_REVERSAL_MODES",
    "ControlLoop",
    "ControlOutput",
    "ControlSettings",
    "FastComputedTorque",
    "FastInverseDynamicsPD",
    "FastJointSpaceMPC",
    "FastSampledJointReference",
    "Restart",
    "build_control_loop",
    "channel_columns",
    "command_order",
    "has_fast_model",
    "load_controller_plugins",
    "reads_joints_only",
    "with_fast_model",
]
