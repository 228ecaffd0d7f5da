# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""How a control loop runs: one record of its settings (:class:`ControlSettings`).

The controller node's parameters of the same names, and every other place that builds a
:class:`~skelarm_ros.control.loop.ControlLoop` (``predict``, tuning, the benchmarks),
hand the loop one :class:`ControlSettings`, checked once where it is made.

This module does not import rclpy.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from skelarm_ros.interface import (
    CONTROLLER_MODELS,
    EFFORT,
    INTERFACES,
    MODEL_ARM,
    PLAN_FROM,
    PLAN_FROM_STATE,
    POSITION_MODES,
    REFERENCE,
    TIME_REVERSAL_MODES,
    check_choice,
    check_non_negative,
)

LIVE_SETTINGS = ("effort_limits", "time_reversal", "soft_start")
"""The settings a running loop takes anew (:meth:`~skelarm_ros.control.loop.ControlLoop.tune`); the others build it."""


@dataclass(frozen=True)
class ControlSettings:
    """How a control loop runs its scenario's controller: the controller node's parameters of the same names.

    Attributes
    ----------
    joint_names : tuple[str, ...]
        The arm's joint names; empty for ``j1 ... jN``.
    dt : float
        The control step handed to ``controller.update`` (s); 0 for the scenario's
        ``[simulator].dt``. Another step rebuilds the controller with it (MPC predicts with it).
    fast_model : bool
        Give the model-based controllers the Pinocchio engine (:func:`~skelarm_ros.control.twins.with_fast_model`).
    time_reversal : str
        ``reset``: a state stamped earlier than the previous one restarts the time line
        (:attr:`~skelarm_ros.control.restarts.Restart.TIME_REVERSAL`); ``reject``: such a state is rejected.
    effort_limits : tuple[float, ...]
        Per-joint torque bounds (N*m) in place of the links' ``effort_limit``; empty for those.
    command_joints : tuple[str, ...]
        ``joint_names`` in the order the commands carry them; empty for ``joint_names``.
    plan_from : str
        ``state``: a tracking controller's reference is planned from the first state of a
        run, where the arm is; ``scenario``: from the scenario's initial pose, as offline.
        A first state equal to the initial pose changes nothing.
    soft_start : float
        Seconds (of state stamps) over which the controller's torque ramps in over the
        torque that holds the arm (:class:`~skelarm_ros.control.safety.HoldingTorque`) from
        the start of a time line whose restart ramps (:data:`~skelarm_ros.control.restarts.RESTARTS`); 0 for none. The
        effort limits do not ramp.
    controller_model : str
        ``arm``: the model-based controllers' model has the scenario's gravity and the links'
        drive; ``skelarm``: skelarm's own gravity-free model, as :func:`skelarm.run_scenario` runs.
    live_arm : bool
        The arm is a real one behind a driver that holds the last command: a time line starts
        at the state after the one it was prepared on, and a diverging arm is stopped
        (:class:`~skelarm_ros.control.safety.DivergenceGuard`).
    interface : str
        What the arm's driver takes: ``effort`` (torques), or a servo's ``position`` or
        ``velocity`` goals (:func:`~skelarm_ros.control.servo.servo_goal`).
    position_mode : str
        How a servo's goal is made: ``reference`` (a tracking controller's reference) or
        ``stiffness`` (the torque through the servo's gains).

    Raises
    ------
    ValueError
        If a value is out of range or not one of its choices (one sentence naming it).
    """

    joint_names: tuple[str, ...] = ()
    dt: float = 0.0
    fast_model: bool = True
    time_reversal: str = TIME_REVERSAL_MODES[0]
    effort_limits: tuple[float, ...] = ()
    command_joints: tuple[str, ...] = ()
    plan_from: str = PLAN_FROM_STATE
    soft_start: float = 0.0
    controller_model: str = MODEL_ARM
    live_arm: bool = False
    interface: str = EFFORT
    position_mode: str = REFERENCE

    def __post_init__(self) -> None:
        """Check the values, and hold the lists as tuples."""
        for name in ("joint_names", "effort_limits", "command_joints"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        check_non_negative("dt", self.dt)
        check_choice("time_reversal", self.time_reversal, TIME_REVERSAL_MODES)
        check_choice("plan_from", self.plan_from, PLAN_FROM)
        check_non_negative("soft_start", self.soft_start)
        check_choice("controller_model", self.controller_model, CONTROLLER_MODELS)
        check_choice("interface", self.interface, INTERFACES)
        check_choice("position_mode", self.position_mode, POSITION_MODES)

    @classmethod
    def of(cls, values: object, **changes: Any) -> ControlSettings:
        """Return the settings read from the attributes of the same names of ``values``, with ``changes`` over them.

        Parameters
        ----------
        values : object
            Anything with an attribute per setting: the controller node's parameters
            (:class:`~skelarm_ros.nodes.params.controller.ControllerParams`), other settings.
        **changes : Any
            Settings given by name, over those of ``values``.

        Raises
        ------
        TypeError
            If a change names no setting, or ``values`` lacks one (the sentence names it and lists them).
        """
        names = [item.name for item in dataclasses.fields(cls)]
        unknown = sorted(set(changes) - set(names))
        if unknown:
            msg = f"'{unknown[0]}' is not a setting of the control loop; its settings are {', '.join(names)}"
            raise TypeError(msg)
        missing = [name for name in names if name not in changes and not hasattr(values, name)]
        if missing:
            msg = (
                f"{type(values).__name__} has no '{missing[0]}', a setting of the control loop; "
                f"its settings are {', '.join(names)}"
            )
            raise TypeError(msg)
        return cls(**{name: changes[name] if name in changes else getattr(values, name) for name in names})
