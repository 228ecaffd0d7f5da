# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""A lockstep ``hardware:=twin`` run without the graph: its controller as the launch gives it, in one process.

:func:`twin_loop` builds the :class:`~skelarm_ros.control.loop.ControlLoop` the controller
node builds from the parameters :func:`skelarm_ros.cli.graph.describe` gives it for the
launch arguments (``hardware:=twin mode:=lockstep`` unless they say otherwise), so every
setting the graph gives a controller on a live arm (its soft start, and whatever else
``hardware:=none`` sets) is the in-process run's too; :func:`predict` runs it with
:func:`~skelarm_ros.control.twin_run.run_twin`, which equals the graph's lockstep run bit
for bit. See docs/predict.md.

This module does not import rclpy.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from skelarm_ros.cli.graph import CONTROLLER, SIMULATOR, GraphError, NodeSpec, describe
from skelarm_ros.control.loop import build_control_loop
from skelarm_ros.control.settings import ControlSettings
from skelarm_ros.control.twin_run import TwinRun, run_twin
from skelarm_ros.nodes.params.controller import ControllerParams
from skelarm_ros.sim.scenario import load_arm

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from skelarm_ros.control.loop import ControlLoop

TWIN = {"hardware": "twin", "mode": "lockstep"}
"""The launch arguments a prediction starts from: the twin in lockstep."""


def controller_params(arguments: Mapping[str, str]) -> ControllerParams:
    """Return the controller's parameters the graph gives it for ``arguments`` (over :data:`TWIN`).

    Raises
    ------
    GraphError
        If the arguments are refused (the launch's sentence), or they start no controller.
    """
    return _controller_params(describe({**TWIN, **arguments}))


def _controller_params(specs: Sequence[NodeSpec]) -> ControllerParams:
    fields = {field.name for field in dataclasses.fields(ControllerParams)}
    for spec in specs:
        if CONTROLLER.scenario in spec.parameters and spec.executable in ("controller", "composed"):
            given = {name: value for name, value in spec.parameters.items() if name in fields}
            return ControllerParams(**{name: _value(value) for name, value in given.items()})
    msg = "the launch arguments start no controller (controller:=false); a prediction runs the scenario's controller"
    raise GraphError(msg)


def _value(value: object) -> Any:
    return tuple(value) if isinstance(value, list) else value


def twin_loop(arguments: Mapping[str, str]) -> tuple[ControlLoop, list[str]]:
    """Build the control loop the graph's controller runs for ``arguments`` (over :data:`TWIN`).

    Every setting of the loop (:class:`~skelarm_ros.control.settings.ControlSettings`) is taken from
    :func:`controller_params`, as the controller node takes it, so a setting the graph gives the
    controller reaches the loop.

    Returns
    -------
    tuple[ControlLoop, list[str]]
        The loop, and one sentence per controller plugin that was skipped.
    """
    params = controller_params(arguments)
    return build_control_loop(params.scenario, ControlSettings.of(params))


def predict(arguments: Mapping[str, str], duration: float) -> TwinRun:
    """Run the prediction of ``arguments`` (over :data:`TWIN`) for ``duration`` simulated seconds, in this process.

    The arm, its driver (``hardware:=twin``) and the controller the graph gives it, stepped
    as the lockstep graph steps them.
    """
    specs = describe({**TWIN, **arguments})
    params = _controller_params(specs)
    simulator = next((spec for spec in specs if spec.executable in ("simulator", "composed")), None)
    if simulator is None:
        msg = "the launch arguments start no simulator (hardware:=none); a prediction runs hardware:=twin or sim"
        raise GraphError(msg)
    parameters = simulator.parameters
    names = parameters.get(SIMULATOR.joint_names, [])
    arm = load_arm(str(parameters[SIMULATOR.scenario]))  # the controller's too (the graph's one scenario): read once
    loop, _ = build_control_loop(arm, ControlSettings.of(params))
    joint_names = [str(name) for name in names] if isinstance(names, list) else []
    return run_twin(arm, loop, duration, joint_names=joint_names, driver=bool(parameters[SIMULATOR.driver]))
