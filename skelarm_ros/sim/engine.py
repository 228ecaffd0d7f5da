# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""A fast dynamics engine for a skelarm arm, built with Pinocchio.

The engine mirrors skelarm's model exactly (DESIGN.md section 3): one revolute-z
joint per movable link, the first joint at ``(base_length, 0)``, each next joint at
``(length, 0)`` of its parent link, body mass ``m`` with its centre of mass at
``(rgx, rgy, 0)`` and rotational inertia ``i`` about it. Stepping follows
:func:`skelarm.integrate_with_limits` and :func:`skelarm.simulate_controlled`:
semi-implicit Euler, joint limits as inelastic stops, an external tip force entering
as ``J^T F``, and time accumulated by ``t += dt``.

A real arm's joints add what their motors and gears do (:class:`~skelarm_ros.sim.scenario.JointDrive`,
the per-link keys ``armature``, ``viscous`` and ``coulomb`` of a scenario): the armature
enters the model (Pinocchio's ``model.armature``, so ABA, CRBA and RNEA include it) and
friction acts in each step, ``(M + diag(armature)) ddq = tau + J^T F - h - viscous*dq -
coulomb*sign(dq)``. The Coulomb torque is taken at the velocity the step ends with
(implicitly): a joint whose Coulomb torque can hold it ends the step at rest, and stays
there, instead of chattering around zero velocity. Without a drive the step is
skelarm's, bit for bit.

This module does not import rclpy.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pinocchio as pin
from skelarm import StateLog
from skelarm.kinematics import compute_forward_kinematics

from skelarm_ros.interface import check_positive, default_joint_names
from skelarm_ros.sim.scenario import JointDrive

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from numpy.typing import ArrayLike, NDArray
    from skelarm import Skeleton

_PLANE = 2  # (x, y)
_STICTION_SWEEPS = 200  # projected Gauss-Seidel sweeps at most for the Coulomb torques of one step
_STICTION_TOL = 1e-13  # rad/s: the velocity error at which they are solved


class NonFiniteStateError(RuntimeError):
    """Raised when a step would make the arm's state NaN or infinite; the state is kept."""


class _Controller(Protocol):
    """The part of :class:`skelarm.Controller` the run loop uses."""

    def reset(self, skeleton: Skeleton) -> None: ...

    def update(self, t: float, skeleton: Skeleton, dt: float) -> None: ...

    def control(self, t: float, skeleton: Skeleton) -> NDArray[np.float64]: ...

    def log_channels(self) -> dict[str, ArrayLike]: ...


def build_model(
    skeleton: Skeleton, grav_vec: ArrayLike | None = None, armature: ArrayLike | None = None
) -> tuple[pin.Model, int]:
    """Build the Pinocchio model of a skelarm skeleton.

    Parameters
    ----------
    skeleton : Skeleton
        The arm; its geometry and inertias are read, its state is not.
    grav_vec : ArrayLike | None, optional
        Planar gravity acceleration ``(gx, gy)`` in m/s^2; ``None`` is zero.
    armature : ArrayLike | None, optional
        Reflected motor inertia per joint (kg*m^2, :attr:`JointDrive.armature`), set as
        ``model.armature``: Pinocchio's ABA, CRBA and RNEA then include it. ``None`` is zero.

    Returns
    -------
    tuple[pin.Model, int]
        The model and the index of its ``tip`` frame (the endpoint of the last link).
    """
    model = pin.Model()
    model.name = "skelarm"
    parent = 0
    offset = skeleton.base_length
    for index, link in enumerate(skeleton.links[1:], start=1):
        prop = link.prop
        placement = pin.SE3(np.eye(3), np.array([offset, 0.0, 0.0]))
        joint = model.addJoint(parent, pin.JointModelRZ(), placement, f"j{index}")
        model.lowerPositionLimit[joint - 1] = prop.qmin
        model.upperPositionLimit[joint - 1] = prop.qmax
        inertia = pin.Inertia(float(prop.m), np.array([prop.rgx, prop.rgy, 0.0]), np.diag([0.0, 0.0, prop.i]))
        model.appendBodyToJoint(joint, inertia, pin.SE3.Identity())
        parent = joint
        offset = prop.length
    tip = model.addFrame(
        pin.Frame("tip", parent, pin.SE3(np.eye(3), np.array([offset, 0.0, 0.0])), pin.FrameType.OP_FRAME)
    )
    gravity = np.zeros(_PLANE) if grav_vec is None else np.asarray(grav_vec, dtype=np.float64)
    model.gravity = pin.Motion(np.array([gravity[0], gravity[1], 0.0]), np.zeros(3))
    if armature is not None:
        model.armature = np.asarray(armature, dtype=np.float64).reshape(model.nv)
    return model, tip


class ArmEngine:
    """Forward dynamics, kinematics and fixed-step integration of a skelarm arm.

    Parameters
    ----------
    skeleton : Skeleton
        The arm. Its current ``q`` / ``dq`` become the engine's state; the skeleton
        itself is not changed by the engine.
    dt : float
        Integration step (seconds).
    grav_vec : ArrayLike | None, optional
        Planar gravity acceleration ``(gx, gy)``; default zero, as in skelarm.
    enforce_limits : bool, optional
        Treat the joint limits as inelastic stops (default), as
        :func:`skelarm.simulate_controlled` does.
    drive : JointDrive | None, optional
        Armature and friction per joint (a scenario's :attr:`~skelarm_ros.sim.scenario.ArmSetup.drive`);
        ``None`` is skelarm's model.

    Attributes
    ----------
    t : float
        Simulated time (seconds), accumulated by ``t += dt`` per step.
    """

    def __init__(
        self,
        skeleton: Skeleton,
        dt: float,
        *,
        grav_vec: ArrayLike | None = None,
        enforce_limits: bool = True,
        drive: JointDrive | None = None,
    ) -> None:
        """Build the model and take the skeleton's state as the initial state."""
        self.dt = check_positive("dt", dt)
        if drive is not None and drive.num_joints != skeleton.num_joints:
            msg = f"the drive has {drive.num_joints} joints but the arm {skeleton.num_joints}"
            raise ValueError(msg)
        self.drive = drive if drive is not None and not drive.is_ideal else None
        self.model, self._tip = build_model(skeleton, grav_vec, None if self.drive is None else self.drive.armature)
        self.data = self.model.createData()
        self.num_joints: int = skeleton.num_joints
        self.enforce_limits = bool(enforce_limits)
        self.lower = np.array([link.prop.qmin for link in skeleton.links[1:]], dtype=np.float64)
        self.upper = np.array([link.prop.qmax for link in skeleton.links[1:]], dtype=np.float64)
        self._lower_list: list[float] = self.lower.tolist()
        self._upper_list: list[float] = self.upper.tolist()
        self._indices = range(self.num_joints)
        self.t = 0.0
        self._q_list: list[float] = []
        self._dq_list: list[float] = []
        self.q = np.zeros(self.num_joints)
        self.dq = np.zeros(self.num_joints)
        self.set_state(skeleton.q, skeleton.dq)

    # -- state -----------------------------------------------------------------------------------

    def set_state(self, q: ArrayLike, dq: ArrayLike, t: float | None = None) -> None:
        """Set joint angles, velocities and (optionally) the simulated time.

        Parameters
        ----------
        q, dq : ArrayLike
            Joint angles (rad) and velocities (rad/s), one per joint.
        t : float | None, optional
            Simulated time (seconds); ``None`` keeps the current time.
        """
        q_arr = np.array(q, dtype=np.float64).reshape(-1)
        dq_arr = np.array(dq, dtype=np.float64).reshape(-1)
        if q_arr.shape != (self.num_joints,) or dq_arr.shape != (self.num_joints,):
            msg = f"expected {self.num_joints} joint angles and velocities, got {q_arr.size} and {dq_arr.size}"
            raise ValueError(msg)
        self.q, self.dq = q_arr, dq_arr
        self._q_list, self._dq_list = q_arr.tolist(), dq_arr.tolist()
        if t is not None:
            self.t = float(t)

    @property
    def q_list(self) -> list[float]:
        """Joint angles (rad) as a list of floats (kept beside :attr:`q`, no conversion); do not modify it."""
        return self._q_list

    @property
    def dq_list(self) -> list[float]:
        """Joint velocities (rad/s) as a list of floats (kept beside :attr:`dq`); do not modify it."""
        return self._dq_list

    # -- dynamics and kinematics at a given state ------------------------------------------------

    def forward_dynamics(
        self,
        q: NDArray[np.float64],
        dq: NDArray[np.float64],
        tau: NDArray[np.float64],
        force: NDArray[np.float64] | None = None,
    ) -> NDArray[np.float64]:
        """Joint accelerations under joint torque ``tau`` and an optional tip force.

        Parameters
        ----------
        q, dq : NDArray[np.float64]
            Joint angles and velocities, shape ``(N,)``.
        tau : NDArray[np.float64]
            Joint torques (N*m), shape ``(N,)``.
        force : NDArray[np.float64] | None, optional
            External tip force ``(fx, fy)`` in newtons in ``base``.

        Returns
        -------
        NDArray[np.float64]
            ``ddq`` (rad/s^2), shape ``(N,)``.
        """
        if force is not None:
            tau = tau + self.jacobian(q).T @ force
        return np.array(pin.aba(self.model, self.data, q, dq, tau))

    def inverse_dynamics(
        self, q: NDArray[np.float64], dq: NDArray[np.float64], ddq: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """Joint torque ``M(q) ddq + h(q, dq)`` (N*m) by Pinocchio's RNEA, shape ``(N,)``."""
        return np.array(pin.rnea(self.model, self.data, q, dq, ddq))

    def mass_matrix(self, q: NDArray[np.float64]) -> NDArray[np.float64]:
        """Joint-space mass matrix ``M(q)``, shape ``(N, N)``, symmetric."""
        upper = np.triu(np.array(pin.crba(self.model, self.data, q)).reshape(self.num_joints, self.num_joints))
        return upper + np.triu(upper, 1).T

    def bias(self, q: NDArray[np.float64], dq: NDArray[np.float64]) -> NDArray[np.float64]:
        """Coriolis, centrifugal and gravity torques ``h(q, dq)``, shape ``(N,)``."""
        return np.array(pin.nonLinearEffects(self.model, self.data, q, dq))

    def endpoint(self, q: NDArray[np.float64]) -> NDArray[np.float64]:
        """Endpoint (tip) position ``(x, y)`` in ``base`` (m)."""
        pin.framesForwardKinematics(self.model, self.data, q)
        return np.array(self.data.oMf[self._tip].translation[:_PLANE])

    def jacobian(self, q: NDArray[np.float64]) -> NDArray[np.float64]:
        """Endpoint Jacobian ``d(x, y)/dq``, shape ``(2, N)``."""
        full = pin.computeFrameJacobian(self.model, self.data, q, self._tip, pin.LOCAL_WORLD_ALIGNED)
        # eigenpy hands a one-column matrix back as a vector; restore the shape.
        return np.array(full).reshape(6, self.num_joints)[:_PLANE, :]

    def endpoint_velocity(self, q: NDArray[np.float64], dq: NDArray[np.float64]) -> NDArray[np.float64]:
        """Endpoint velocity ``J(q) dq`` (m/s)."""
        return self.jacobian(q) @ dq

    # -- stepping --------------------------------------------------------------------------------

    def step(self, tau: NDArray[np.float64], force: NDArray[np.float64] | None = None) -> None:
        """Advance one step of ``dt`` under joint torque ``tau`` and an optional tip force.

        Semi-implicit Euler: ``dq += ddq dt``, then ``q += dq dt``; with limits
        enforced a joint past its limit is clamped and its velocity zeroed; then
        ``t += dt``.

        Parameters
        ----------
        tau : NDArray[np.float64]
            Joint torques (N*m), shape ``(N,)``, float64.
        force : NDArray[np.float64] | None, optional
            External tip force ``(fx, fy)`` (N) in ``base``, held over the step.

        Raises
        ------
        NonFiniteStateError
            If the new state would not be finite; the state is left as it was.
        """
        if force is not None and (force[0] != 0.0 or force[1] != 0.0):
            tau = tau + self.jacobian(self.q).T @ force
        if self.drive is not None and self.drive.has_friction:
            ddq = self._with_friction(tau).tolist()
        else:
            ddq = pin.aba(self.model, self.data, self.q, self.dq, tau).tolist()
        dt = self.dt
        q_new = self._q_list.copy()
        dq_new = self._dq_list.copy()
        lower, upper = self._lower_list, self._upper_list
        clamp = self.enforce_limits
        for i in self._indices:
            velocity = dq_new[i] + ddq[i] * dt
            angle = q_new[i] + velocity * dt
            if clamp:
                if angle < lower[i]:
                    angle, velocity = lower[i], 0.0
                elif angle > upper[i]:
                    angle, velocity = upper[i], 0.0
            dq_new[i] = velocity
            q_new[i] = angle
        if not math.isfinite(math.fsum(q_new) + math.fsum(dq_new)):
            msg = (
                f"the arm's state became non-finite at t={self.t + dt:.6g} s "
                f"(q={q_new}, dq={dq_new}); the step was not applied"
            )
            raise NonFiniteStateError(msg)
        self._q_list, self._dq_list = q_new, dq_new
        self.q = np.array(q_new)
        self.dq = np.array(dq_new)
        self.t += dt

    def _with_friction(self, tau: NDArray[np.float64]) -> NDArray[np.float64]:
        """Return the step's acceleration with the drive's viscous and Coulomb friction.

        Viscous friction acts at the step's start velocity. The Coulomb torques ``f``
        (``|f_i| <= coulomb_i``) are those that oppose the velocity the step ends with,
        ``v = v* - dt M^-1 f`` (``v*`` the end velocity without them): ``f_i = coulomb_i
        sign(v_i)`` where joint i moves, and whatever holds it (within its Coulomb
        torque) where it ends at rest. This is the box-constrained least-squares
        problem ``min 1/2 f^T (dt M^-1) f - f^T v*``, solved by projected Gauss-Seidel;
        a step in which no joint stops or reverses needs one linear solve.
        """
        assert self.drive is not None
        drive, dt = self.drive, self.dt
        free = np.asarray(pin.aba(self.model, self.data, self.q, self.dq, tau - drive.viscous * self.dq))
        coulomb = drive.coulomb
        if not np.any(coulomb):
            return free
        target = self.dq + dt * free  # v*: the end velocity without Coulomb friction
        inverse = np.asarray(pin.computeMinverse(self.model, self.data, self.q))
        inverse = np.triu(inverse) + np.triu(inverse, 1).T
        gain = dt * inverse
        torque = coulomb * np.sign(np.where(self.dq != 0.0, self.dq, target))  # sliding on, as it moved
        end = target - gain @ torque
        sliding = coulomb > 0.0
        if np.all(np.sign(end[sliding]) == np.sign(torque[sliding])):
            return free - inverse @ torque
        torque = np.zeros_like(coulomb)
        end = target.copy()
        diagonal = np.diag(gain)
        joints = np.flatnonzero(sliding).tolist()
        for _ in range(_STICTION_SWEEPS):
            change = 0.0
            for i in joints:
                new = min(max(torque[i] + end[i] / diagonal[i], -coulomb[i]), coulomb[i])
                delta = new - torque[i]
                if delta != 0.0:
                    end -= gain[:, i] * delta
                    torque[i] = new
                    change = max(change, abs(delta) * diagonal[i])
            if change <= _STICTION_TOL:
                break
        ddq = free - inverse @ torque
        held = sliding & (np.abs(torque) < coulomb)
        ddq[held] = -self.dq[held] / dt  # held by its friction: at rest exactly, not at a rounding's speed
        return ddq


def sync_skeleton(skeleton: Skeleton, q: ArrayLike, dq: ArrayLike) -> None:
    """Write a state onto a skelarm skeleton exactly (no limit clamping) and refresh its kinematics.

    This is how :func:`skelarm.integrate_with_limits` writes its result, so a
    controller reading the skeleton sees the same values skelarm would give it.

    Parameters
    ----------
    skeleton : Skeleton
        The skeleton to update in place.
    q, dq : ArrayLike
        Joint angles and velocities, one per joint.
    """
    set_joints(skeleton, q, dq)
    compute_forward_kinematics(skeleton)


def set_joints(skeleton: Skeleton, q: ArrayLike, dq: ArrayLike) -> None:
    """Write joint angles and velocities onto a skeleton exactly, without refreshing its kinematics.

    For controllers that read only ``skeleton.q`` and ``skeleton.dq`` (joint-space
    ones): the links' positions and velocities are left as they were, which saves
    skelarm's forward kinematics per state. Use :func:`sync_skeleton` for anything
    that reads the links' kinematics.

    Parameters
    ----------
    skeleton : Skeleton
        The skeleton to update in place.
    q, dq : ArrayLike
        Joint angles and velocities, one per joint.
    """
    angles = np.asarray(q, dtype=np.float64).tolist()
    velocities = np.asarray(dq, dtype=np.float64).tolist()
    for link, angle, velocity in zip(skeleton.links[1:], angles, velocities, strict=True):
        link.q = angle
        link.dq = velocity


def run_controlled(
    engine: ArmEngine,
    skeleton: Skeleton,
    controller: _Controller,
    *,
    duration: float,
    force: Callable[[float], NDArray[np.float64]] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> StateLog:
    """Run a skelarm controller against the engine, frame for frame as skelarm does.

    Mirrors :func:`skelarm.simulate_controlled` (``update`` then ``control`` at each
    step, ``round(duration / dt)`` steps plus a final frame) with the engine doing
    the integration. With ``force``, the tip force ``force(t)`` acts over the step
    starting at ``t`` and is recorded as the ``ext_force`` channel; the final frame,
    which no step applies, records zero force.

    Parameters
    ----------
    engine : ArmEngine
        The engine, at its initial state; it is advanced in place.
    skeleton : Skeleton
        A skeleton of the same arm for the controller to read; its state is overwritten.
    controller : _Controller
        A skelarm controller.
    duration : float
        Simulated time (seconds).
    force : Callable[[float], NDArray[np.float64]] | None, optional
        External tip force as a function of time, ``(fx, fy)`` in newtons.
    extra : Mapping[str, Any] | None, optional
        Metadata for the log's ``[extra]`` table.

    Returns
    -------
    StateLog
        ``q``, ``dq``, ``tau`` (and ``ext_force``) per frame plus the controller's channels.
    """
    joints = default_joint_names(engine.num_joints)
    channel_meta: dict[str, dict[str, Any]] = {
        "q": {"unit": "rad", "label": "joint angle", "columns": joints},
        "dq": {"unit": "rad/s", "label": "joint velocity", "columns": joints},
        "tau": {"unit": "N*m", "label": "applied joint torque", "columns": joints},
    }
    if force is not None:
        channel_meta["ext_force"] = {"unit": "N", "label": "external tip force", "columns": ["fx", "fy"]}
    log = StateLog(skeleton, producer=type(controller).__name__, channel_meta=channel_meta, extra=extra)
    dt = engine.dt
    sync_skeleton(skeleton, engine.q, engine.dq)
    controller.reset(skeleton)
    for _ in range(round(duration / dt)):
        t = engine.t
        controller.update(t, skeleton, dt)
        tau = np.asarray(controller.control(t, skeleton), dtype=np.float64)
        pushes: dict[str, ArrayLike] = {}
        applied = None
        if force is not None:
            applied = np.asarray(force(t), dtype=np.float64)
            pushes["ext_force"] = applied
        log.record(t, q=engine.q, dq=engine.dq, tau=tau, **pushes, **controller.log_channels())
        engine.step(tau, applied)
        sync_skeleton(skeleton, engine.q, engine.dq)
    tau = np.asarray(controller.control(engine.t, skeleton), dtype=np.float64)
    final = {"ext_force": np.zeros(_PLANE)} if force is not None else {}
    log.record(engine.t, q=engine.q, dq=engine.dq, tau=tau, **final, **controller.log_channels())
    return log
