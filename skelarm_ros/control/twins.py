# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Fast twins of skelarm's model-based controllers: the same control laws on the Pinocchio model.

skelarm's computed torque, inverse-dynamics feed-forward PD and MPC compute their
model with skelarm's clear but slow recursive dynamics. :func:`with_fast_model` wraps
what :func:`skelarm.build_controller` returned (same reference, gains and weights) in a
twin that takes its model from the Pinocchio :class:`~skelarm_ros.sim.engine.ArmEngine`; the
result equals skelarm's to rounding, and the twins' joint reference samples equal
skelarm's to the bit. The twins reach skelarm's private controller state only through
:mod:`skelarm_ros.control.skelarm_internals`.

The twin's model may have more than skelarm's: the scenario's gravity and a real joint's
armature, viscous and Coulomb friction (:class:`~skelarm_ros.sim.scenario.JointDrive`).
Computed torque and the inverse-dynamics feed-forward then add the friction torque
``viscous*dq + coulomb*sign(dq)`` (at the state, or at the reference) to Pinocchio's RNEA
(which includes gravity and the armature), and MPC predicts with the same friction.

This module does not import rclpy.
"""

from __future__ import annotations

import bisect
import math
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin
from skelarm.control import ComputedTorque, InverseDynamicsFeedforwardPD, JointPD, SampledJointReference
from skelarm.mpc import JointSpaceMPC

from skelarm_ros.control.skelarm_internals import (
    mpc_joint_limits,
    mpc_keep,
    mpc_warm_start,
    state_changes,
    store_tracking,
    take_over,
)
from skelarm_ros.sim.engine import ArmEngine

if TYPE_CHECKING:
    import skelarm
    from numpy.typing import ArrayLike, NDArray

    from skelarm_ros.sim.scenario import JointDrive


def friction_torque(engine: ArmEngine, dq: NDArray[np.float64]) -> NDArray[np.float64] | float:
    """Return the torque (N*m) that cancels the engine's drive friction at joint velocities ``dq``.

    ``viscous*dq + coulomb*sign(dq)`` per joint (``dq`` may hold one row per state); ``0.0``
    for a model without friction.
    """
    drive = engine.drive
    if drive is None or not drive.has_friction:
        return 0.0
    return drive.viscous * dq + drive.coulomb * np.sign(dq)


class FastSampledJointReference(SampledJointReference):
    """:class:`skelarm.control.SampledJointReference` sampled with one search and one vector expression.

    skelarm interpolates every column of ``q``, ``dq`` and ``ddq`` with its own
    :func:`numpy.interp` call; this finds the interval once and applies ``np.interp``'s
    arithmetic (``slope * (t - t_j) + y_j``, endpoints held, a sample time returns its
    sample) to all columns at once, so the result is the same to the bit. A ``t`` or a
    result that is not a number is left to skelarm's own sampling.
    """

    def __init__(self, reference: SampledJointReference) -> None:
        """Take over ``reference``'s arrays and prepare the stacked samples and slopes."""
        super().__init__(reference.times, reference.q, reference.dq, reference.ddq)
        self._times: list[float] = self.times.tolist()
        self._stack = np.hstack([self.q, self.dq, self.ddq])
        with np.errstate(divide="ignore", invalid="ignore"):
            steps = (self.times[1:] - self.times[:-1])[:, None]
            self._slopes = (self._stack[1:] - self._stack[:-1]) / steps
        self._split = (self.q.shape[1], self.q.shape[1] + self.dq.shape[1])

    def sample(self, t: float) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Return ``(q_r, dq_r, ddq_r)`` at ``t``, as skelarm's linear interpolation does."""
        times = self._times
        if math.isnan(t) or not times:  # nothing to interpolate
            return super().sample(t)
        j = bisect.bisect_right(times, t) - 1
        if j < 0:
            row = self._stack[0].copy()
        elif j >= len(times) - 1 or times[j] == t:
            row = self._stack[min(j, len(times) - 1)].copy()
        else:
            row = self._slopes[j] * (t - times[j]) + self._stack[j]
            if np.isnan(row).any():
                return super().sample(t)
        first, second = self._split
        return row[:first], row[first:second], row[second:]


class FastComputedTorque(ComputedTorque):
    """:class:`skelarm.ComputedTorque` with ``M(q) u + h(q, dq)`` from the Pinocchio engine.

    Build it with :func:`with_fast_model`; it keeps the wrapped controller's reference and gains.
    """

    engine: ArmEngine

    def control(self, t: float, skeleton: skelarm.Skeleton) -> NDArray[np.float64]:
        """Compute the model-cancelling torque for the current state."""
        q_r, dq_r, ddq_r = self.reference.sample(t)
        q, dq = skeleton.q, skeleton.dq
        error = q_r - q
        commanded = ddq_r + self.kd * (dq_r - dq) + self.kp * error
        store_tracking(self, q_r, error)
        return self.engine.inverse_dynamics(q, dq, commanded) + friction_torque(self.engine, dq)


class FastInverseDynamicsPD(InverseDynamicsFeedforwardPD):
    """:class:`skelarm.InverseDynamicsFeedforwardPD` with its feed-forward from the Pinocchio engine."""

    engine: ArmEngine

    def control(self, t: float, skeleton: skelarm.Skeleton) -> NDArray[np.float64]:
        """Compute the feed-forward-plus-PD torque for the current state."""
        q_r, dq_r, ddq_r = self.reference.sample(t)
        feedforward = self.engine.inverse_dynamics(q_r, dq_r, ddq_r) + friction_torque(self.engine, dq_r)
        error = q_r - skeleton.q
        store_tracking(self, q_r, error)
        return feedforward + self.kp * error + self.kd * (dq_r - skeleton.dq)


class FastJointSpaceMPC(JointSpaceMPC):
    """:class:`skelarm.JointSpaceMPC` with the Pinocchio engine as its model and its rollouts batched.

    The optimisation is skelarm's: the same cost (stages, weights, soft limits,
    semi-implicit Euler over the horizon), L-BFGS-B with the same options and scipy's
    own forward-difference gradient (its steps, signs at the bounds and differences).
    Only the evaluation changes: scipy hands every perturbed torque sequence of a
    gradient to its ``workers`` map at once, and :meth:`_costs` rolls them out side by
    side, one Pinocchio forward dynamics per sequence and step, instead of one Python
    rollout each. ``_predict`` and ``_rollout_cost`` override skelarm's own (listed in
    :data:`~skelarm_ros.control.skelarm_internals.EXPECTED`), so skelarm's code paths
    that call them use the engine too.
    """

    engine: ArmEngine

    def _predict(
        self, q: NDArray[np.float64], dq: NDArray[np.float64], tau: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """Forward dynamics at the unclamped state ``(q, dq)`` under torque ``tau`` (less the drive's friction)."""
        return self.engine.forward_dynamics(q, dq, tau - friction_torque(self.engine, dq))

    def control(self, t: float, skeleton: skelarm.Skeleton) -> NDArray[np.float64]:
        """Optimize the horizon torque sequence as skelarm does and return only the first torque."""
        warm = mpc_warm_start(self, skeleton)
        num_joints = skeleton.num_joints
        q0, dq0 = skeleton.q, skeleton.dq
        samples = [self.reference.sample(t + k * self.dt) for k in range(self.horizon + 1)]
        q_ref = np.array([sample[0] for sample in samples])
        dq_ref = np.array([sample[1] for sample in samples])
        bounds = None
        if self.tau_max is not None:
            bounds = [(-self.tau_max, self.tau_max)] * (self.horizon * num_joints)
        args = (q0, dq0, q_ref, dq_ref)

        def batched(_fun: Any, points: Any) -> list[float]:
            """``map(fun, points)`` for scipy's gradient: every point's cost from one batched rollout."""
            return self._costs(np.array(list(points)), *args).tolist()

        from scipy.optimize import minimize  # SciPy loads with the first MPC step, not with every controller

        result = minimize(
            self._rollout_cost,
            warm.flatten(),
            args=args,
            method="L-BFGS-B",
            bounds=bounds,
            options={"maxiter": self.max_iter, "workers": batched},
        )
        torques = result.x.reshape(self.horizon, num_joints)
        # warm start: shifted, the last torque repeated
        mpc_keep(self, np.vstack([torques[1:], torques[-1:]]), q_ref[0], q_ref[0] - q0)
        return torques[0].copy()

    def _rollout_cost(self, tau_flat: NDArray[np.float64], *state: NDArray[np.float64]) -> float:
        """Return the cost of one torque sequence; ``state`` is ``(q0, dq0, q_ref, dq_ref)`` (see :meth:`_costs`)."""
        return float(self._costs(tau_flat[np.newaxis, :], *state)[0])

    def _costs(
        self,
        taus: NDArray[np.float64],
        q0: NDArray[np.float64],
        dq0: NDArray[np.float64],
        q_ref: NDArray[np.float64],
        dq_ref: NDArray[np.float64],
    ) -> NDArray[np.float64]:
        """Roll out each torque sequence (a row of ``taus``) and return its tracking-plus-effort cost."""
        count, num_joints = taus.shape[0], q0.shape[0]
        torques = taus.reshape(count, self.horizon, num_joints)
        q = np.repeat(q0[np.newaxis, :], count, axis=0)
        dq = np.repeat(dq0[np.newaxis, :], count, axis=0)
        cost = np.zeros(count)
        ddq = np.empty((count, num_joints))
        lower, upper = mpc_joint_limits(self)
        limits = bool(self.limit_weight) and lower is not None and upper is not None
        model, data = self.engine.model, self.engine.data
        for k in range(self.horizon):
            error_q = q - q_ref[k]
            error_dq = dq - dq_ref[k]
            tau = np.ascontiguousarray(torques[:, k])
            cost += np.einsum("ij,ij->i", self.q_weight * error_q, error_q)
            cost += np.einsum("ij,ij->i", self.dq_weight * error_dq, error_dq)
            cost += np.einsum("ij,ij->i", self.tau_weight * tau, tau)
            if limits and lower is not None and upper is not None:
                overshoot = np.maximum(q - upper, 0.0) + np.maximum(lower - q, 0.0)
                cost += np.einsum("ij,ij->i", self.limit_weight * overshoot, overshoot)
            tau = tau - friction_torque(self.engine, dq)
            for row in range(count):
                ddq[row] = pin.aba(model, data, q[row], dq[row], tau[row])
            dq = dq + self.dt * ddq
            q = q + self.dt * dq
        terminal = q - q_ref[self.horizon]
        cost += np.einsum("ij,ij->i", self.terminal_weight * terminal, terminal)
        return cost


_Twin = FastComputedTorque | FastInverseDynamicsPD | FastJointSpaceMPC

# Exact skelarm type -> its fast twin. A subclass of these (a user's own controller) is left
# alone, because it may change the control law the twin re-implements.
_FAST_TWINS: dict[type[skelarm.Controller], type[_Twin]] = {
    ComputedTorque: FastComputedTorque,
    InverseDynamicsFeedforwardPD: FastInverseDynamicsPD,
    JointSpaceMPC: FastJointSpaceMPC,
}


# Exact types whose update, control and channels read only skeleton.q and skeleton.dq, so a state
# needs no forward kinematics of the skeleton (their reset may read more: it gets a full sync).
_JOINT_SPACE_ONLY: frozenset[type] = frozenset({JointPD, *_FAST_TWINS.values()})


def reads_joints_only(controller: skelarm.Controller) -> bool:
    """Tell whether the controller reads only the skeleton's joint angles and velocities between resets."""
    return type(controller) in _JOINT_SPACE_ONLY


def has_fast_model(controller: skelarm.Controller) -> bool:
    """Tell whether :func:`with_fast_model` would swap in the Pinocchio model for this controller."""
    return type(controller) in _FAST_TWINS


def with_fast_model(
    controller: skelarm.Controller,
    skeleton: skelarm.Skeleton,
    dt: float,
    *,
    grav_vec: ArrayLike | None = None,
    drive: JointDrive | None = None,
) -> skelarm.Controller:
    """Return the controller with the Pinocchio engine as its model, or the controller itself.

    Only skelarm's own computed torque, inverse-dynamics feed-forward PD and MPC have a
    fast twin; the twin takes over the built controller's state (reference, gains,
    weights), so the registry path that built it stays skelarm's. Without ``grav_vec``
    and ``drive`` the model has zero gravity and no drive, as skelarm's controllers'
    models do. A controller whose state is not the one its twin was written for
    (another skelarm version moved its internals) keeps skelarm's model, with a
    warning naming what changed.

    Parameters
    ----------
    controller : skelarm.Controller
        What :func:`skelarm.build_controller` returned.
    skeleton : skelarm.Skeleton
        The arm (its geometry and inertias are read).
    dt : float
        Control step (seconds).
    grav_vec : ArrayLike | None, optional
        Planar gravity ``(gx, gy)`` of the model (m/s^2); ``None`` for zero.
    drive : JointDrive | None, optional
        Armature and friction of the model's joints; ``None`` for none.

    Returns
    -------
    skelarm.Controller
        The fast twin, or ``controller`` unchanged when it has none.
    """
    twin = _FAST_TWINS.get(type(controller))
    if twin is None:
        return controller
    changes = state_changes(controller)
    if changes:
        warnings.warn(
            f"{'; '.join(changes)}: {type(controller).__name__} keeps skelarm's own model; "
            "update skelarm_ros/control/skelarm_internals.py and the twins for this skelarm",
            stacklevel=2,
        )
        return controller
    fast = take_over(controller, twin)
    fast.engine = ArmEngine(skeleton, dt, grav_vec=grav_vec, drive=drive)
    if type(fast.reference) is SampledJointReference:
        fast.reference = FastSampledJointReference(fast.reference)
    return fast
