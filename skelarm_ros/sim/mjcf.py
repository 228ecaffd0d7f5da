# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""MuJoCo models (MJCF) of skelarm arms, written from a Skeleton, as :mod:`skelarm_ros.sim.urdf` writes URDF.

MuJoCo is an engine independent of the project's: ``skelarm-ros bench tune`` steps this model
beside the project's engine, and the tests' MuJoCo arms (``test/mujoco_arm.py``,
``test/geared_arm.py``) hold the project's results to it. The module only writes text; it does
not import MuJoCo.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import numpy as np
    import skelarm
    from numpy.typing import NDArray

    from skelarm_ros.sim.scenario import JointDrive


def _motor(k: int) -> str:
    return f'<motor joint="j{k + 1}" gear="1"/>'


def mujoco_xml(
    arm: skelarm.Skeleton,
    drive: JointDrive | None = None,
    gravity: Sequence[float] | NDArray[np.float64] = (0.0, 0.0),
    *,
    step: float,
    integrator: str = "RK4",
    stops: bool = False,
    actuator: Callable[[int], str] | None = None,
) -> str:
    """Return the arm as a MuJoCo model: hinges about z in the x-y plane, one actuator per joint.

    Parameters
    ----------
    arm : skelarm.Skeleton
        The arm: its links' lengths, masses, centres of mass and inertias (joints ``j1``, ``j2``, ...).
    drive : JointDrive | None, optional
        Per joint the hinge's ``armature`` (reflected motor inertia), ``damping`` (viscous friction)
        and ``frictionloss`` (Coulomb friction); ``None`` for none.
    gravity : Sequence[float] | NDArray[np.float64], optional
        Planar gravity ``(gx, gy)`` (m/s^2).
    step : float
        MuJoCo's time step (s).
    integrator : str, optional
        MuJoCo's integrator: ``RK4``, or ``Euler`` (its default, semi-implicit).
    stops : bool, optional
        Whether each hinge stops at the link's joint limits (a real arm's mechanical stops).
    actuator : Callable[[int], str] | None, optional
        The actuator element of joint ``k`` (from 0); ``None`` for a motor taking the joint torque (N*m) as control.

    Returns
    -------
    str
        The MJCF text.
    """

    def n(value: float) -> str:
        return repr(float(value))

    bodies = []
    offset = arm.base_length
    for k, link in enumerate(arm.links[1:]):
        p = link.prop
        inertia = max(p.i, 1e-9)
        limits = f'limited="true" range="{n(p.qmin)} {n(p.qmax)}" ' if stops else ""
        friction = (
            f'armature="{n(drive.armature[k])}" damping="{n(drive.viscous[k])}" '
            f'frictionloss="{n(drive.coulomb[k])}" solreffriction="0.002 1"'
            if drive is not None
            else ""
        )
        bodies.append(
            f'<body name="l{k + 1}" pos="{n(offset)} 0 0">'
            f'<joint name="j{k + 1}" type="hinge" axis="0 0 1" {limits}{friction}/>'
            f'<inertial pos="{n(p.rgx)} {n(p.rgy)} 0" mass="{n(p.m)}" '
            f'diaginertia="{n(inertia)} {n(inertia)} {n(inertia)}"/>'
        )
        offset = p.length
    actuators = "".join((actuator or _motor)(k) for k in range(arm.num_joints))
    return (
        '<mujoco model="planar_arm"><compiler angle="radian"/>'
        f'<option timestep="{n(step)}" gravity="{n(gravity[0])} {n(gravity[1])} 0" integrator="{integrator}"/>'
        "<worldbody>" + "".join(bodies) + "</body>" * arm.num_joints + "</worldbody>"
        f"<actuator>{actuators}</actuator></mujoco>"
    )
