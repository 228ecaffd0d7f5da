# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Running a skelarm controller on joint states: the core of the ``controller`` node.

:func:`build_control_loop` reads a scenario with skelarm's own parsers, so every
registered ``[controller].type`` works, including the ones a package registers through
the ``skelarm_ros.controllers`` entry-point group (:func:`load_controller_plugins`).
:class:`ControlLoop` maps a joint state by name onto the skelarm skeleton, keeps the
controller's time line (docs/interfaces.md, "Time"), follows a new target, and returns
the torque with the controller's channels.

The model-based controllers (computed torque, inverse-dynamics feed-forward PD, MPC's
prediction model) get the Pinocchio :class:`~skelarm_ros.engine.ArmEngine` in place of
skelarm's clear but slow recursive model: :func:`with_fast_model` wraps what
:func:`skelarm.build_controller` returned (same reference, gains and weights), and the
result equals skelarm's to rounding.

This module does not import rclpy.
"""

from __future__ import annotations

import bisect
import copy
import dataclasses
import importlib.metadata
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin
import skelarm
from scipy.optimize import minimize
from skelarm.control import ComputedTorque, InverseDynamicsFeedforwardPD, JointPD, SampledJointReference
from skelarm.mpc import JointSpaceMPC
from skelarm.reaching import EndpointController

from skelarm_ros.conversions import NameOrder, Rejected
from skelarm_ros.engine import ArmEngine, set_joints, sync_skeleton
from skelarm_ros.interface import NANOSECONDS, POINT_CHANNELS, check_joint_names
from skelarm_ros.scenario import ScenarioError, load_scenario

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from numpy.typing import ArrayLike, NDArray

PLUGIN_GROUP = "skelarm_ros.controllers"
TIME_REVERSAL_MODES = ("reset", "reject")
_TARGET_PLANE_TOLERANCE = 1e-9  # |z| accepted as "in the plane" for a target point (m)


# -- the fast model ----------------------------------------------------------------------------------


def inverse_dynamics(
    engine: ArmEngine, q: NDArray[np.float64], dq: NDArray[np.float64], ddq: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Joint torque ``M(q) ddq + h(q, dq)`` by Pinocchio's RNEA, shape ``(N,)``."""
    return np.array(pin.rnea(engine.model, engine.data, q, dq, ddq))


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
        self._store(q_r, error)
        return inverse_dynamics(self.engine, q, dq, commanded)


class FastInverseDynamicsPD(InverseDynamicsFeedforwardPD):
    """:class:`skelarm.InverseDynamicsFeedforwardPD` with its feed-forward from the Pinocchio engine."""

    engine: ArmEngine

    def control(self, t: float, skeleton: skelarm.Skeleton) -> NDArray[np.float64]:
        """Compute the feed-forward-plus-PD torque for the current state."""
        q_r, dq_r, ddq_r = self.reference.sample(t)
        feedforward = inverse_dynamics(self.engine, q_r, dq_r, ddq_r)
        error = q_r - skeleton.q
        self._store(q_r, error)
        return feedforward + self.kp * error + self.kd * (dq_r - skeleton.dq)


class FastJointSpaceMPC(JointSpaceMPC):
    """:class:`skelarm.JointSpaceMPC` with the Pinocchio engine as its model and its rollouts batched.

    The optimisation is skelarm's: the same cost (stages, weights, soft limits,
    semi-implicit Euler over the horizon), L-BFGS-B with the same options and scipy's
    own forward-difference gradient (its steps, signs at the bounds and differences).
    Only the evaluation changes: scipy hands every perturbed torque sequence of a
    gradient to its ``workers`` map at once, and :meth:`_costs` rolls them out side by
    side, one Pinocchio forward dynamics per sequence and step, instead of one Python
    rollout each.
    """

    engine: ArmEngine

    def _predict(
        self, q: NDArray[np.float64], dq: NDArray[np.float64], tau: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """Forward dynamics at the unclamped state ``(q, dq)`` under torque ``tau``."""
        return self.engine.forward_dynamics(q, dq, tau)

    def control(self, t: float, skeleton: skelarm.Skeleton) -> NDArray[np.float64]:
        """Optimize the horizon torque sequence as skelarm does and return only the first torque."""
        if self._model is None or self._warm is None:
            self.reset(skeleton)
        assert self._warm is not None  # set by reset
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

        result = minimize(
            self._rollout_cost,
            self._warm.flatten(),
            args=args,
            method="L-BFGS-B",
            bounds=bounds,
            options={"maxiter": self.max_iter, "workers": batched},
        )
        torques = result.x.reshape(self.horizon, num_joints)
        self._warm = np.vstack([torques[1:], torques[-1:]])  # warm start: shifted, the last torque repeated
        self._q_ref = q_ref[0]
        self._error = q_ref[0] - q0
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
        lower, upper = self._lower, self._upper
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
            for row in range(count):
                ddq[row] = pin.aba(model, data, q[row], dq[row], tau[row])
            dq = dq + self.dt * ddq
            q = q + self.dt * dq
        terminal = q - q_ref[self.horizon]
        cost += np.einsum("ij,ij->i", self.terminal_weight * terminal, terminal)
        return cost


# Exact skelarm type -> its fast twin. A subclass of these (a user's own controller) is left
# alone, because it may change the control law the twin re-implements.
_FAST_TWINS: dict[type[skelarm.Controller], type[skelarm.Controller]] = {
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


def with_fast_model(controller: skelarm.Controller, skeleton: skelarm.Skeleton, dt: float) -> skelarm.Controller:
    """Return the controller with the Pinocchio engine as its model, or the controller itself.

    Only skelarm's own computed torque, inverse-dynamics feed-forward PD and MPC have a
    fast twin; the twin takes over the built controller's state (reference, gains,
    weights), so the registry path that built it stays skelarm's. The model has zero
    gravity, as skelarm's controllers' models do.

    Parameters
    ----------
    controller : skelarm.Controller
        What :func:`skelarm.build_controller` returned.
    skeleton : skelarm.Skeleton
        The arm (its geometry and inertias are read).
    dt : float
        Control step (seconds).

    Returns
    -------
    skelarm.Controller
        The fast twin, or ``controller`` unchanged when it has none.
    """
    twin = _FAST_TWINS.get(type(controller))
    if twin is None:
        return controller
    fast = object.__new__(twin)
    fast.__dict__.update(vars(controller))
    fast.__dict__["engine"] = ArmEngine(skeleton, dt)
    if type(fast.__dict__.get("reference")) is SampledJointReference:
        fast.__dict__["reference"] = FastSampledJointReference(fast.__dict__["reference"])
    return fast


# -- plugins ------------------------------------------------------------------------------------------


def load_controller_plugins() -> list[str]:
    """Register the controller builders that installed packages offer as entry points.

    Each entry point of the group ``skelarm_ros.controllers`` loads a builder
    ``(params, skeleton, task) -> skelarm.Controller``, registered with
    :func:`skelarm.register_controller` under the entry point's name. A plugin that
    fails to load, or whose name is one of skelarm's built-in types, is skipped.

    Returns
    -------
    list[str]
        One sentence per skipped plugin, for the caller to log as a warning.
    """
    problems: list[str] = []
    builtin = set(skelarm.controller_types()) - _PLUGIN_NAMES
    for entry in importlib.metadata.entry_points(group=PLUGIN_GROUP):
        where = f"controller plugin '{entry.name}' ({entry.value})"
        if entry.name in builtin:
            problems.append(f"{where} would replace skelarm's built-in type '{entry.name}'; rename the entry point")
            continue
        try:
            builder = entry.load()
        except Exception as error:  # any error a third-party plugin raises on import
            problems.append(f"{where} failed to load ({type(error).__name__}: {error}); fix or uninstall it")
            continue
        if not callable(builder):
            problems.append(f"{where} is not callable; it must name a builder (params, skeleton, task) -> Controller")
            continue
        skelarm.register_controller(entry.name, builder)
        _PLUGIN_NAMES.add(entry.name)
    return problems


_PLUGIN_NAMES: set[str] = set()  # the types registered from entry points


# -- the control loop ---------------------------------------------------------------------------------


def command_order(joint_names: Sequence[str], command_joints: Sequence[str]) -> list[int]:
    """Where each command joint sits in ``joint_names``: the permutation that puts a torque in command order.

    A driver takes ``effort_controller/commands`` in the order of its own ``joints``
    parameter, which need not be the arm's order; ``torque[order]`` is the torque in
    that order.

    Parameters
    ----------
    joint_names : Sequence[str]
        The arm's joints, in arm order.
    command_joints : Sequence[str]
        The same names in the order the commands carry them; empty for ``joint_names``.

    Returns
    -------
    list[int]
        One index into ``joint_names`` per command joint.

    Raises
    ------
    ValueError
        If ``command_joints`` is not a reordering of ``joint_names``.
    """
    if len(command_joints) == 0:
        return list(range(len(joint_names)))
    if sorted(command_joints) != sorted(joint_names) or len(set(command_joints)) != len(command_joints):
        msg = (
            f"command_joints {list(command_joints)} must name each of joint_names {list(joint_names)} once, "
            "in the order the driver takes its commands (its joints parameter)"
        )
        raise ValueError(msg)
    return [list(joint_names).index(name) for name in command_joints]


def channel_columns(name: str, value: ArrayLike, joint_names: Sequence[str]) -> list[str] | None:
    """Column names of a controller channel as published, or ``None`` for a point channel.

    Parameters
    ----------
    name : str
        The channel's name (a key of ``controller.log_channels()``).
    value : ArrayLike
        Its current value.
    joint_names : Sequence[str]
        The arm's joints.

    Returns
    -------
    list[str] | None
        ``None`` for the point channels (:data:`POINT_CHANNELS`); the joint names for a
        per-joint channel; ``[name]`` for a scalar; else ``name1 ... nameK``.
    """
    if name in POINT_CHANNELS:
        return None
    size = np.asarray(value).size
    if np.ndim(value) == 0:
        return [name]
    if size == len(joint_names):
        return list(joint_names)
    return [f"{name}{i + 1}" for i in range(size)]


@dataclass
class ControlOutput:
    """What one controlled state gives.

    Attributes
    ----------
    torque : NDArray[np.float64]
        Joint torques (N*m) in ``joint_names`` order, clamped to the effort limits.
    channels : dict[str, NDArray[np.float64]]
        The controller's channels (``controller.log_channels()``) as arrays.
    t : float
        The controller's time (seconds) for this state.
    """

    torque: NDArray[np.float64]
    channels: dict[str, NDArray[np.float64]]
    t: float


class ControlLoop:
    """A skelarm controller driven by time-stamped joint states.

    Parameters
    ----------
    scenario : skelarm.Scenario
        The scenario; its controller, skeleton (a working copy is used) and task are taken.
    joint_names : Sequence[str], optional
        The arm's joint names; empty for ``j1 ... jN``.
    dt : float | None, optional
        The control step handed to ``controller.update``; ``None`` for the scenario's.
    fast_model : bool, optional
        Give the model-based controllers the Pinocchio engine (:func:`with_fast_model`).
    time_reversal : str, optional
        ``reset``: a state stamped earlier than the previous one resets the controller
        and restarts its time; ``reject``: such a state is rejected.
    effort_limits : Sequence[float], optional
        Per-joint torque bounds (N*m); empty for none.
    command_joints : Sequence[str], optional
        ``joint_names`` in the order the commands carry them; empty for ``joint_names``.

    Attributes
    ----------
    command_joints : list[str]
        The joints in command order (:meth:`command_torque`).
    rejected : int
        States (and targets) rejected so far.
    restarts : int
        Times the controller's time line restarted (reset after time reversal or a new target).
    """

    def __init__(
        self,
        scenario: skelarm.Scenario,
        *,
        joint_names: Sequence[str] = (),
        dt: float | None = None,
        fast_model: bool = True,
        time_reversal: str = "reset",
        effort_limits: Sequence[float] = (),
        command_joints: Sequence[str] = (),
    ) -> None:
        """Take the scenario's controller and set the loop up; no state is controlled yet."""
        self.skeleton = scenario.skeleton.clone()
        self.num_joints: int = self.skeleton.num_joints
        self.joint_names = check_joint_names(list(joint_names), self.num_joints)
        self._order = NameOrder(self.joint_names, "joint state", allow_extra=True)
        self._command_order = command_order(self.joint_names, list(command_joints))
        self.command_joints = [self.joint_names[index] for index in self._command_order]
        self.dt = float(scenario.simulator.dt if dt is None else dt)
        if not (math.isfinite(self.dt) and self.dt > 0.0):
            msg = f"the control step dt must be a positive number of seconds, got {self.dt!r}"
            raise ValueError(msg)
        self.task = scenario.task
        self.fast_model = bool(fast_model)
        source = scenario.source_config or {}
        self._controller_config: Mapping[str, Any] | None = source.get("controller")
        self.controller = self._fast(scenario.controller)
        self.time_reversal = "reset"
        self.set_time_reversal(time_reversal)
        self.effort_limits: NDArray[np.float64] | None = None
        self.set_effort_limits(effort_limits)
        self.rejected = 0
        self.restarts = 0
        self._origin: int | None = None  # stamp (ns) of the first state of the time line
        self._last_stamp: int | None = None
        self._t = 0.0
        self._pending_target: NDArray[np.float64] | None = None

    def expected_channels(self) -> dict[str, NDArray[np.float64]]:
        """Return the channels the controller will log, from a trial step on a copy at the initial state.

        A node creates the channel publishers from these at start-up, so a recorder
        finds them before the first state arrives. The controller itself is untouched.

        Returns
        -------
        dict[str, NDArray[np.float64]]
            Channel name to an example value (its shape tells the message type).
        """
        trial = copy.deepcopy(self.controller)
        skeleton = self.skeleton.clone()
        try:
            trial.reset(skeleton)
            trial.update(0.0, skeleton, self.dt)
            trial.control(0.0, skeleton)
            channels = trial.log_channels()
        except Exception:  # a user's controller may not run detached: its channels then appear with the first state
            return {}
        return {name: np.asarray(value, dtype=np.float64) for name, value in channels.items()}

    def _fast(self, controller: skelarm.Controller) -> skelarm.Controller:
        return with_fast_model(controller, self.skeleton, self.dt) if self.fast_model else controller

    # -- tunables ---------------------------------------------------------------------------------

    def set_time_reversal(self, mode: str) -> None:
        """Choose what a state stamped earlier than the previous one does (``reset`` or ``reject``).

        Raises
        ------
        ValueError
            For any other value.
        """
        if mode not in TIME_REVERSAL_MODES:
            msg = f"time_reversal must be one of {list(TIME_REVERSAL_MODES)}, got {mode!r}"
            raise ValueError(msg)
        self.time_reversal = mode

    def set_effort_limits(self, limits: Sequence[float]) -> None:
        """Set the per-joint torque bounds (N*m): empty for none, else one positive value per joint.

        Raises
        ------
        ValueError
            On a wrong count or a value that is not positive (``inf`` is allowed: no bound).
        """
        values = [float(value) for value in limits]
        if not values:
            self.effort_limits = None
            return
        if len(values) != self.num_joints:
            msg = (
                f"effort_limits has {len(values)} values but the arm has {self.num_joints} joints; "
                "give one positive bound per joint, or none"
            )
            raise ValueError(msg)
        if not all(value > 0.0 for value in values):  # also false for NaN
            msg = f"effort_limits must all be positive (N*m; inf for no bound), got {values}"
            raise ValueError(msg)
        self.effort_limits = np.array(values)

    def command_torque(self, torque: NDArray[np.float64]) -> NDArray[np.float64]:
        """Return a torque given in ``joint_names`` order in :attr:`command_joints` order."""
        return torque[self._command_order]

    # -- target -----------------------------------------------------------------------------------

    def set_target(self, frame_id: str, x: float, y: float, z: float = 0.0, frame: str = "base") -> None:
        """Take a new reaching target; it applies from the next controlled state.

        A reaching controller (:class:`skelarm.reaching.EndpointController`) gets the target
        assigned; any other controller of a task with a point target is rebuilt by
        :func:`skelarm.build_controller` from the state it is applied at (its reference is
        replanned). Either way the controller is reset there and its time restarts.

        Raises
        ------
        Rejected
            On another frame, a non-finite or out-of-plane point, or a task without a point target.
        """
        try:
            if frame_id not in ("", frame):
                msg = f"target is in frame '{frame_id}'; send it in '{frame}' (x, y in the arm's plane)"
                raise Rejected(msg)
            if not all(math.isfinite(value) for value in (x, y, z)):
                msg = f"target holds a NaN or infinite value ({[x, y, z]}); send a finite point"
                raise Rejected(msg)
            if abs(z) > _TARGET_PLANE_TOLERANCE:
                msg = f"target has z={z}; the arm moves in the plane z=0, send z as 0"
                raise Rejected(msg)
            if self.task.target is None and not isinstance(self.controller, EndpointController):
                msg = (
                    f"the scenario's task '{self.task.type}' has no point target, so its controller cannot "
                    "follow one; use a reaching scenario"
                )
                raise Rejected(msg)
        except Rejected:
            self.rejected += 1
            raise
        self._pending_target = np.array([x, y], dtype=np.float64)

    def _apply_target(self, target: NDArray[np.float64]) -> None:
        if isinstance(self.controller, EndpointController):
            self.controller.target = target
            return
        if self._controller_config is None:
            msg = "the scenario has no [controller] table to rebuild the controller for a new target"
            raise Rejected(msg)
        task = dataclasses.replace(self.task, target=target)
        built = skelarm.build_controller(self._controller_config, skeleton=self.skeleton, task=task, dt=self.dt)
        self.task = task
        self.controller = self._fast(built)

    # -- control ----------------------------------------------------------------------------------

    def control(
        self,
        names: Sequence[str],
        positions: Sequence[float],
        velocities: Sequence[float],
        stamp_ns: int,
    ) -> ControlOutput:
        """Control one joint state.

        Parameters
        ----------
        names : Sequence[str]
            Joint names of the state (any order; joints that are not the arm's are ignored).
        positions, velocities : Sequence[float]
            Joint angles (rad) and velocities (rad/s), one per name.
        stamp_ns : int
            The state's stamp in nanoseconds.

        Returns
        -------
        ControlOutput
            The torque in ``joint_names`` order and the controller's channels.

        Raises
        ------
        Rejected
            For a missing joint, a length mismatch, a NaN or infinite value, a duplicate
            stamp, an earlier stamp with ``time_reversal`` ``reject``, or a non-finite
            torque from the controller. Counted in :attr:`rejected`; no torque is returned.
        """
        try:
            return self._control(names, positions, velocities, stamp_ns)
        except Rejected:
            self.rejected += 1
            raise

    def _control(
        self, names: Sequence[str], positions: Sequence[float], velocities: Sequence[float], stamp_ns: int
    ) -> ControlOutput:
        q = self._order.pick(names, positions, "position")
        dq = self._order.pick(names, velocities, "velocity")
        last = self._last_stamp
        if last is not None and stamp_ns == last:
            msg = f"joint state stamped {stamp_ns} ns repeats the previous stamp; each state once"
            raise Rejected(msg)
        if last is not None and stamp_ns < last:
            if self.time_reversal == "reject":
                msg = (
                    f"joint state stamped {stamp_ns} ns is earlier than the previous one ({last} ns); "
                    "set time_reversal:=reset to follow a restarted time line"
                )
                raise Rejected(msg)
            self._origin = None
        if self._origin is None or self._pending_target is not None or not reads_joints_only(self.controller):
            sync_skeleton(self.skeleton, q, dq)
        else:
            set_joints(self.skeleton, q, dq)  # a joint-space controller between resets: no kinematics needed
        if self._pending_target is not None:
            target, self._pending_target = self._pending_target, None
            self._apply_target(target)
            self._origin = None
        if self._origin is None:
            if last is not None:
                self.restarts += 1
            self.controller.reset(self.skeleton)
            self._origin = stamp_ns
            t = 0.0
        else:
            t = self._time(stamp_ns - self._origin)
        self._last_stamp = stamp_ns
        self._t = t
        self.controller.update(t, self.skeleton, self.dt)
        torque = np.asarray(self.controller.control(t, self.skeleton), dtype=np.float64).reshape(-1)
        if torque.shape != (self.num_joints,) or not np.isfinite(torque).all():
            msg = (
                f"the controller gave the torque {torque.tolist()} at t={t:.6g} s, not {self.num_joints} "
                "finite values; no command was sent"
            )
            raise Rejected(msg)
        if self.effort_limits is not None:
            torque = np.clip(torque, -self.effort_limits, self.effort_limits)
        channels = {name: np.asarray(value, dtype=np.float64) for name, value in self.controller.log_channels().items()}
        return ControlOutput(torque, channels, t)

    def _time(self, elapsed_ns: int) -> float:
        """Return the controller's time for a state ``elapsed_ns`` after the first of its time line.

        A state exactly one step after the previous one (to the nanosecond) gets the
        previous time plus ``dt``, accumulated as skelarm and the simulator accumulate it,
        so a lockstep run sees the very times of the offline run; any other gets its stamp.
        """
        candidate = self._t + self.dt
        if round(candidate * NANOSECONDS) == elapsed_ns:
            return candidate
        return elapsed_ns / NANOSECONDS


def build_control_loop(
    scenario: str | Path | None,
    *,
    joint_names: Sequence[str] = (),
    dt: float = 0.0,
    fast_model: bool = True,
    time_reversal: str = "reset",
    effort_limits: Sequence[float] = (),
    command_joints: Sequence[str] = (),
) -> tuple[ControlLoop, list[str]]:
    """Load the controller plugins and a scenario, and build its :class:`ControlLoop`.

    Parameters
    ----------
    scenario : str | Path | None
        A scenario path or bundled name; ``None`` / ``""`` for the default.
    joint_names, fast_model, time_reversal, effort_limits, command_joints
        As for :class:`ControlLoop`.
    dt : float, optional
        The control step; ``0`` for the scenario's ``[simulator].dt``. Another step
        rebuilds the controller with it (MPC predicts with the control step).

    Returns
    -------
    tuple[ControlLoop, list[str]]
        The loop and one sentence per controller plugin that was skipped.

    Raises
    ------
    ScenarioError
        If the scenario cannot be used (an unknown controller type names skelarm's known types).
    ValueError
        If a parameter is out of range (the message names it).
    """
    problems = load_controller_plugins()
    if not (math.isfinite(dt) and dt >= 0.0):
        msg = f"dt must be 0 (the scenario's step) or a positive number of seconds, got {dt!r}"
        raise ValueError(msg)
    loaded = load_scenario(scenario)
    if dt > 0.0 and dt != loaded.simulator.dt:
        assert loaded.source_config is not None  # set by scenario_from_config
        try:
            controller = skelarm.build_controller(
                loaded.source_config["controller"], skeleton=loaded.skeleton, task=loaded.task, dt=dt
            )
        except (ValueError, TypeError, KeyError) as error:
            msg = f"the scenario's controller cannot be built with dt={dt}: {error}"
            raise ScenarioError(msg) from None
        loaded = dataclasses.replace(loaded, controller=controller)
    loop = ControlLoop(
        loaded,
        joint_names=joint_names,
        dt=dt if dt > 0.0 else None,
        fast_model=fast_model,
        time_reversal=time_reversal,
        effort_limits=effort_limits,
        command_joints=command_joints,
    )
    return loop, problems
