"""A planar arm simulated by MuJoCo: an engine independent of the project's, for checks on arms it did not make.

:func:`~skelarm_ros.sim.mjcf.mujoco_xml` writes a skelarm arm as a MuJoCo model
(hinges about z in the x-y plane, per joint a hinge ``armature``, ``damping`` and
``frictionloss``, one motor per joint, or with :class:`Servos` one servo per joint: MuJoCo's
own position actuator, a PD ``kp (goal - q) - kv dq``, or velocity actuator ``kv (goal - dq)``,
saturated at a torque limit, as a servo's firmware runs it); :class:`MujocoArm` steps it with
RK4 at :data:`SIM_STEP` under a held torque (or goal). The geared arm of the identification tests
(``geared_arm.py``) and the stand-in driver (``standin_driver.py``) both use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import mujoco
import numpy as np

from skelarm_ros.sim.mjcf import mujoco_xml
from skelarm_ros.sim.scenario import JointDrive

if TYPE_CHECKING:  # skelarm itself is imported through the package, without its Qt (a robot has no GUI)
    import skelarm

SIM_STEP = 0.0005  # s: MuJoCo's step


@dataclass(frozen=True)
class Servos:
    """A servo per joint: its interface (``position`` or ``velocity``), gains and torque limit, per joint.

    ``kp`` (N*m/rad) and ``kd`` (N*m*s/rad, on the joint's velocity) for position, ``kv``
    (N*m*s/rad) for velocity; ``limit`` (N*m) saturates the servo's torque.
    """

    interface: str
    limit: tuple[float, ...]
    kp: tuple[float, ...] = ()
    kd: tuple[float, ...] = ()
    kv: tuple[float, ...] = ()

    def actuator(self, k: int) -> str:
        """The MuJoCo actuator of joint ``k``."""
        saturated = f'forcelimited="true" forcerange="{-self.limit[k]!r} {self.limit[k]!r}"'
        if self.interface == "position":
            return f'<position joint="j{k + 1}" kp="{self.kp[k]!r}" kv="{self.kd[k]!r}" {saturated}/>'
        return f'<velocity joint="j{k + 1}" kv="{self.kv[k]!r}" {saturated}/>'


class MujocoArm:
    """A skelarm arm in MuJoCo, at rest at the skeleton's pose; :meth:`advance` integrates it under a torque.

    Parameters
    ----------
    arm : skelarm.Skeleton
        The arm (geometry, inertias, initial pose).
    drive : JointDrive | None
        Armature and friction per joint; ``None`` for none.
    gravity : tuple[float, float]
        Planar gravity (m/s^2).
    stops : bool
        Whether the joints stop at the links' limits.
    servos : Servos | None
        A servo per joint in place of the motors: :meth:`step` takes goals.
    """

    def __init__(
        self,
        arm: skelarm.Skeleton,
        drive: JointDrive | None = None,
        gravity=(0.0, 0.0),
        *,
        stops: bool = False,
        servos: Servos | None = None,
    ) -> None:
        self.num_joints = arm.num_joints
        actuator = None if servos is None else servos.actuator
        xml = mujoco_xml(arm, drive, gravity, step=SIM_STEP, stops=stops, actuator=actuator)
        self.model = mujoco.MjModel.from_xml_string(xml)
        self.data = mujoco.MjData(self.model)
        self.t = 0.0
        self.reset(arm.q)

    def reset(self, q, dq=None) -> None:
        """Put the arm at ``q`` (rad), at rest unless ``dq`` is given; the time is kept."""
        mujoco.mj_resetData(self.model, self.data)
        self.data.qpos[:] = q
        self.data.qvel[:] = 0.0 if dq is None else dq
        mujoco.mj_forward(self.model, self.data)

    @property
    def q(self) -> np.ndarray:
        return self.data.qpos.copy()

    @property
    def dq(self) -> np.ndarray:
        return self.data.qvel.copy()

    @property
    def torque(self) -> np.ndarray:
        """The motors' (or servos') torque of the last step (N*m)."""
        return self.data.actuator_force.copy()

    def step(self, tau, steps: int = 1) -> None:
        """``steps`` MuJoCo steps of :data:`SIM_STEP` under the joint torque (or the servos' goal) ``tau``.

        ``None``: no command yet, the motors (servos) give no torque.
        """
        actuate(self.model, self.data, tau)
        mujoco.mj_step(self.model, self.data, steps)
        self.t += steps * SIM_STEP


def actuate(model, data, command) -> None:
    """Hold ``command`` on the actuators (torques or goals); ``None`` switches them off (a servo's torque off)."""
    if command is None:
        model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_ACTUATION)
        data.ctrl[:] = 0.0
        return
    model.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_ACTUATION)
    data.ctrl[:] = command
