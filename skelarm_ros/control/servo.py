# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""A controller's answer as a servo's goal: the commands of a position- or velocity-commanded arm.

Most lab arms are servo arms: their firmware runs a PD on position (or a P on velocity) and
takes goals, not torques. :class:`ServoGoal` turns what a
:class:`~skelarm_ros.control.loop.ControlLoop` computed for a state into the goal such a
servo takes (``interface`` ``position`` or ``velocity``), in one of two ways
(``position_mode``, docs/servo.md):

- ``reference``: a tracking controller's reference at the state's time, as the trajectory a
  servo follows: its angles (``position``) or its velocities (``velocity``);
- ``stiffness``: any controller's torque ``tau`` through the servo's own law, so that the
  servo gives ``tau`` at the state the goal answers: a position servo
  ``servo_kp (g - q) - servo_kd dq`` takes ``g = q + (tau + servo_kd dq) / servo_kp``
  (``q + tau / servo_kp`` without damping); a velocity servo ``servo_kv (g - dq)`` takes
  ``g = dq + tau / servo_kv``.

The servo's gains are the scenario's ``[driver]`` (``servo_kp``, ``servo_kd``, ``servo_kv``).
:meth:`ServoGoal.rest` is what leaves a servo arm at rest where it is (the effort interface's
zero torque): its angles as the goal, or zero velocity. :func:`servo_goal` builds one, and
refuses a mode that cannot apply in one sentence.

This module does not import rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from skelarm_ros.interface import (
    EFFORT,
    INTERFACES,
    POSITION,
    POSITION_MODES,
    REFERENCE,
    STIFFNESS,
    check_choice,
)
from skelarm_ros.sim.driver import check_servo_gain

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from skelarm_ros.sim.driver import DriverSpec


def joint_reference(controller: Any) -> Any | None:
    """Return a controller's joint reference (its ``reference`` with ``sample(t)``), or ``None`` for none.

    skelarm's tracking controllers (joint PD, inverse-dynamics PD, computed torque, MPC) and
    their fast twins keep it as ``reference``; a reaching law has none.
    """
    reference = getattr(controller, "reference", None)
    return reference if callable(getattr(reference, "sample", None)) else None


@dataclass(frozen=True)
class ServoGoal:
    """How a controller's answer becomes a servo's goal (see the module).

    Attributes
    ----------
    interface : str
        ``position`` or ``velocity``: what the servo takes.
    mode : str
        ``reference`` or ``stiffness``.
    kp, kd, kv : NDArray[np.float64]
        The servo's gains per joint, in the arm's order (``servo_kp`` N*m/rad, ``servo_kd`` and
        ``servo_kv`` N*m*s/rad), as the scenario's ``[driver]`` gives them; empty without (``reference``).
    """

    interface: str
    mode: str
    kp: NDArray[np.float64]
    kd: NDArray[np.float64]
    kv: NDArray[np.float64]

    def goal(
        self,
        controller: Any,
        t: float,
        q: NDArray[np.float64],
        dq: NDArray[np.float64],
        torque: NDArray[np.float64],
    ) -> NDArray[np.float64]:
        """Return the goal answering the state ``(q, dq)`` at the controller's time ``t``, in the arm's order.

        Parameters
        ----------
        controller : Any
            The controller that answered (its reference, in ``reference`` mode).
        t : float
            Its time for the state (s).
        q, dq : NDArray[np.float64]
            The state's angles (rad) and velocities (rad/s).
        torque : NDArray[np.float64]
            The torque the controller answered with (N*m), within the arm's limits.

        Returns
        -------
        NDArray[np.float64]
            Angles (rad) for a position servo, velocities (rad/s) for a velocity servo.
        """
        if self.mode == REFERENCE:
            reference = joint_reference(controller)
            assert reference is not None  # checked by servo_goal
            angles, speeds, _ = reference.sample(t)
            return np.array(angles if self.interface == POSITION else speeds, dtype=np.float64).reshape(-1)
        if self.interface == POSITION:
            return q + (torque + self.kd * dq) / self.kp
        return dq + torque / self.kv

    def rest(self, q: NDArray[np.float64]) -> NDArray[np.float64]:
        """Return the goal that leaves the arm at rest where it is: its angles ``q``, or zero velocity."""
        return np.array(q, dtype=np.float64) if self.interface == POSITION else np.zeros(len(q))

    def describe(self) -> str:
        """Return one phrase on the goals, for the controller's first log line."""
        if self.mode == REFERENCE:
            kind = "angles" if self.interface == POSITION else "velocities"
            return f"{self.interface} goals: the controller's reference ({kind})"
        if self.interface == POSITION:
            return f"position goals through the servo's stiffness (servo_kp {self.kp.tolist()} N*m/rad)"
        return f"velocity goals through the servo's gain (servo_kv {self.kv.tolist()} N*m*s/rad)"


def servo_goal(
    interface: str, position_mode: str, controller: Any, driver: DriverSpec | None, *, controller_type: str = ""
) -> ServoGoal | None:
    """Return how the controller's answers become the goals of a servo taking ``interface``; ``None`` for effort.

    Parameters
    ----------
    interface : str
        ``effort``, ``position`` or ``velocity`` (the controller's ``interface``).
    position_mode : str
        ``reference`` or ``stiffness``.
    controller : Any
        The controller (a tracking controller has a joint reference).
    driver : DriverSpec | None
        The scenario's ``[driver]``: the servo's gains (``None`` without the table).
    controller_type : str, optional
        The controller's type, for the sentences.

    Raises
    ------
    ValueError
        In one sentence, for a mode that cannot apply: ``reference`` for a controller without a
        joint reference (a reaching law), ``stiffness`` without the servo's gain in ``[driver]``.
    """
    check_choice("interface", interface, INTERFACES)
    check_choice("position_mode", position_mode, POSITION_MODES)
    if interface == EFFORT:
        return None
    if position_mode == STIFFNESS:
        check_servo_gain(interface, driver)
        assert driver is not None  # checked: it gives the gain
        return ServoGoal(interface, position_mode, driver.servo_kp, driver.servo_kd, driver.servo_kv)
    if joint_reference(controller) is None:
        named = f"'{controller_type}'" if controller_type else type(controller).__name__
        msg = (
            f"position_mode:={REFERENCE} streams a tracking controller's joint reference, but the controller "
            f"{named} has none (a reaching law); set position_mode:={STIFFNESS} to send its torque through the "
            "servo's stiffness"
        )
        raise ValueError(msg)
    return ServoGoal(interface, position_mode, np.zeros(0), np.zeros(0), np.zeros(0))  # the reference needs no gain
