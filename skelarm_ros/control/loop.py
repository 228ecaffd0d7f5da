# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Running a skelarm controller on joint states: the core of the ``controller`` node.

:func:`build_control_loop` loads the controller plugins
(:func:`~skelarm_ros.control.plugins.load_controller_plugins`) and reads a scenario with
skelarm's own parsers, so every registered ``[controller].type`` works. :class:`ControlLoop`
maps a joint state by name onto the skelarm skeleton, keeps the controller's time line
(docs/interfaces.md, "Time"), follows a new target, and returns the torque with the
controller's channels. The model-based controllers get their fast twin
(:func:`~skelarm_ros.control.twins.with_fast_model`) unless ``fast_model`` is off, with the
scenario's gravity and the twin's armature and friction unless ``controller_model`` is
``skelarm``. For a real arm (docs/controller.md, "Driving a real arm") a tracking
controller plans its reference from the first state it controls (``plan_from``), the effort
limits can ramp in (``soft_start``), a push further past a joint limit is clamped to zero
(:mod:`~skelarm_ros.control.safety`), and :meth:`ControlLoop.hold` restarts control from the
next state after the joint states went stale.

This module does not import rclpy.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import skelarm
from skelarm.reaching import EndpointController

from skelarm_ros.control.plugins import load_controller_plugins
from skelarm_ros.control.safety import JointLimitGuard, far_start, ramp_at, soft_start_bound
from skelarm_ros.control.twins import has_fast_model, reads_joints_only, with_fast_model
from skelarm_ros.interface import (
    BASE_FRAME,
    CONTROLLER_MODELS,
    MODEL_ARM,
    NANOSECONDS,
    PLAN_FROM,
    PLAN_FROM_STATE,
    POINT_CHANNELS,
    TIME_REVERSAL_MODES,
    Say,
    check_choice,
    check_effort_limits,
    check_joint_names,
    check_non_negative,
    check_positive,
)
from skelarm_ros.sim.conversions import NameOrder, Rejected
from skelarm_ros.sim.engine import set_joints, sync_skeleton
from skelarm_ros.sim.scenario import ScenarioError, load_arm, load_scenario

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from numpy.typing import ArrayLike, NDArray

    from skelarm_ros.sim.scenario import JointDrive

_TARGET_PLANE_TOLERANCE = 1e-9  # |z| accepted as "in the plane" for a target point (m)
TARGET_TOLERANCE = 1e-6
"""A target within this distance (m) of the one being followed is the same target, not a new one.

Target publishers repeat their message (``ros2 topic pub`` once a second, lab tools at
a rate); only a target that moves restarts the controller."""


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
    said : list[Say]
        What this state gives to say (a far start, a joint past its limit), for the caller to log.
    """

    torque: NDArray[np.float64]
    channels: dict[str, NDArray[np.float64]]
    t: float
    said: list[Say] = field(default_factory=list)


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
    plan_from : str, optional
        ``state``: a tracking controller's reference is planned from the first state of a
        run (and after :meth:`hold`), where the arm is; ``scenario``: from the scenario's
        initial pose, as offline. A first state equal to the initial pose changes nothing.
    soft_start : float, optional
        Seconds (of state stamps) over which the effort limits ramp in from zero at the
        start of control (and after :meth:`hold`); 0 for none
        (:func:`~skelarm_ros.control.safety.soft_start_bound`).
    controller_model : str, optional
        ``arm``: the model-based controllers' model has ``grav_vec`` and ``drive``;
        ``skelarm``: skelarm's own gravity-free model, as :func:`skelarm.run_scenario` runs.
    grav_vec : ArrayLike | None, optional
        The arm's planar gravity ``(gx, gy)`` (m/s^2); ``None`` for zero.
    drive : JointDrive | None, optional
        The joints' armature and friction; ``None`` for none.

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
        plan_from: str = PLAN_FROM_STATE,
        soft_start: float = 0.0,
        controller_model: str = MODEL_ARM,
        grav_vec: ArrayLike | None = None,
        drive: JointDrive | None = None,
    ) -> None:
        """Take the scenario's controller and set the loop up; no state is controlled yet."""
        self.skeleton = scenario.skeleton.clone()
        self.initial_q: NDArray[np.float64] = np.array(self.skeleton.q, dtype=np.float64)
        self.num_joints: int = self.skeleton.num_joints
        self.joint_names = check_joint_names(list(joint_names), self.num_joints)
        self._order = NameOrder(self.joint_names, "joint state", allow_extra=True)
        self._command_order = command_order(self.joint_names, list(command_joints))
        self.command_joints = [self.joint_names[index] for index in self._command_order]
        self.dt = check_positive("dt", scenario.simulator.dt if dt is None else dt)
        self.task = scenario.task
        self.fast_model = bool(fast_model)
        self.plan_from = check_choice("plan_from", plan_from, PLAN_FROM)
        self.soft_start = check_non_negative("soft_start", soft_start)
        self.controller_model = check_choice("controller_model", controller_model, CONTROLLER_MODELS)
        self._model_terms = self._arm_model(grav_vec, drive, has_fast_model(scenario.controller))
        self._guard = (
            JointLimitGuard(*self._joint_limits(), self.joint_names) if scenario.simulator.enforce_limits else None
        )
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
        self._ramp_origin: int | None = None  # stamp (ns) the soft start counts from
        self._held = False  # control stopped (stale states): the next state starts afresh
        self._retime = False  # the next state starts the time line again, the controller as it is

    def _arm_model(self, grav_vec: ArrayLike | None, drive: JointDrive | None, modelled: bool) -> dict[str, Any]:
        """Return the twin's model terms (``grav_vec``, ``drive``) for ``controller_model`` ``arm``, checked."""
        gravity = np.zeros(2) if grav_vec is None else np.asarray(grav_vec, dtype=np.float64).reshape(2)
        ideal = drive is None or drive.is_ideal
        if self.controller_model != MODEL_ARM or (not gravity.any() and ideal):
            return {}
        if modelled and not self.fast_model:
            msg = (
                "fast_model:=false runs skelarm's own model, which has no gravity, armature or friction, but the "
                "scenario has them; set fast_model:=true for a model with them, or controller_model:=skelarm "
                "to run skelarm's model without them"
            )
            raise ValueError(msg)
        return {"grav_vec": gravity if gravity.any() else None, "drive": None if ideal else drive}

    def _joint_limits(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        links = self.skeleton.links[1:]
        lower = np.array([link.prop.qmin for link in links], dtype=np.float64)
        upper = np.array([link.prop.qmax for link in links], dtype=np.float64)
        return lower, upper

    @property
    def last_stamp(self) -> int | None:
        """The stamp (ns) of the last joint state controlled, ``None`` before the first."""
        return self._last_stamp

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
        if not self.fast_model:
            return controller
        return with_fast_model(controller, self.skeleton, self.dt, **self._model_terms)

    @property
    def model_terms(self) -> list[str]:
        """What the model-based controllers' model has beyond skelarm's: ``gravity``, ``drive``; empty for none."""
        return [
            name
            for name, key in (("gravity", "grav_vec"), ("drive", "drive"))
            if self._model_terms.get(key) is not None
        ]

    def hold(self) -> None:
        """Stop control (the joint states went stale): the next state restarts it as a first state.

        That state gets the controller reset there with its time from 0, a tracking
        controller's reference replanned from it (whatever ``plan_from`` says: the arm
        stood at zero torque meanwhile), and the soft start again.
        """
        self._held = True
        self._origin = None

    # -- tunables ---------------------------------------------------------------------------------

    def set_time_reversal(self, mode: str) -> None:
        """Choose what a state stamped earlier than the previous one does (``reset`` or ``reject``).

        Raises
        ------
        ValueError
            For any other value.
        """
        self.time_reversal = check_choice("time_reversal", mode, TIME_REVERSAL_MODES)

    def set_effort_limits(self, limits: Sequence[float]) -> None:
        """Set the per-joint torque bounds (N*m): empty for none, else one positive value per joint.

        Raises
        ------
        ValueError
            On a wrong count or a value that is not positive (``inf`` is allowed: no bound), in
            the words of :func:`~skelarm_ros.interface.check_effort_limits`.
        """
        values = check_effort_limits(limits, self.num_joints)
        self.effort_limits = None if values is None else np.array(values)

    def command_torque(self, torque: NDArray[np.float64]) -> NDArray[np.float64]:
        """Return a torque given in ``joint_names`` order in :attr:`command_joints` order."""
        return torque[self._command_order]

    # -- target -----------------------------------------------------------------------------------

    def set_target(self, frame_id: str, x: float, y: float, z: float = 0.0, frame: str = BASE_FRAME) -> bool:
        """Take a reaching target; a new one applies from the next controlled state.

        A target within :data:`TARGET_TOLERANCE` of the one being followed (or already
        waiting to apply) changes nothing. A new one: a reaching controller
        (:class:`skelarm.reaching.EndpointController`) gets it assigned; any other
        controller of a task with a point target is rebuilt by
        :func:`skelarm.build_controller` from the state it is applied at (its reference is
        replanned). Either way the controller is reset there and its time restarts.

        Returns
        -------
        bool
            Whether the target is new.

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
        target = np.array([x, y], dtype=np.float64)
        followed = self.followed_target()
        if followed is not None and float(np.linalg.norm(target - followed)) <= TARGET_TOLERANCE:
            return False
        self._pending_target = target
        return True

    def followed_target(self) -> NDArray[np.float64] | None:
        """Return the target being followed (or waiting to apply), ``(x, y)`` in m, or ``None`` without one."""
        if self._pending_target is not None:
            return self._pending_target
        if isinstance(self.controller, EndpointController):
            return np.asarray(self.controller.target, dtype=np.float64)
        return None if self.task.target is None else np.asarray(self.task.target, dtype=np.float64)

    def _apply_target(self, target: NDArray[np.float64]) -> None:
        if isinstance(self.controller, EndpointController):
            self.controller.target = target
            return
        if self._controller_config is None:
            msg = "the scenario has no [controller] table to rebuild the controller for a new target"
            raise Rejected(msg)
        self._replan(dataclasses.replace(self.task, target=target))

    def _replan(self, task: skelarm.Task) -> None:
        """Rebuild the controller by :func:`skelarm.build_controller` from the skeleton's state, for ``task``."""
        assert self._controller_config is not None
        built = skelarm.build_controller(self._controller_config, skeleton=self.skeleton, task=task, dt=self.dt)
        self.task = task
        self.controller = self._fast(built)

    def _start_here(self, q: NDArray[np.float64], replanned: bool) -> list[Say]:
        """Start control at a run's first state (or after :meth:`hold`): plan from it if asked; say a far start."""
        first, held = self._ramp_origin is None, self._held
        if not (first or held):
            return []
        self._held = False
        plans = not isinstance(self.controller, EndpointController) and self._controller_config is not None
        # From the scenario's very pose the plan is the scenario's: nothing to replan (offline equality).
        moved = held or (self.plan_from == PLAN_FROM_STATE and not np.array_equal(q, self.initial_q))
        if plans and not replanned and moved:
            self._replan(self.task)
        return far_start(q, self.initial_q, self.joint_names, self.plan_from) if first else []

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
            msg = (
                f"joint state stamped {stamp_ns} ns repeats the previous stamp; each state once "
                "(a driver that does not stamp its states: state_stamps:=arrival)"
            )
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
        replanned = self._pending_target is not None
        if self._pending_target is not None:
            target, self._pending_target = self._pending_target, None
            self._apply_target(target)
            self._origin = None
        t, said = self._clock(q, stamp_ns, last, replanned)
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
        assert self._ramp_origin is not None  # set at the first state
        ramp = ramp_at((stamp_ns - self._ramp_origin) / NANOSECONDS, self.soft_start)
        torque = soft_start_bound(torque, self.effort_limits, ramp)
        if self._guard is not None:
            torque, limited = self._guard.apply(q, torque)
            said += limited
        channels = {name: np.asarray(value, dtype=np.float64) for name, value in self.controller.log_channels().items()}
        return ControlOutput(torque, channels, t, said)

    def _clock(
        self, q: NDArray[np.float64], stamp_ns: int, last: int | None, replanned: bool
    ) -> tuple[float, list[Say]]:
        """Return the controller's time for a state (starting the time line where it starts) and what to say."""
        said: list[Say] = []
        if self._origin is None:
            if last is not None:
                self.restarts += 1
            if self._held or self._ramp_origin is None or (last is not None and stamp_ns < last):
                said += self._start_here(q, replanned)
                self._ramp_origin = stamp_ns
            self.controller.reset(self.skeleton)
            self._origin = stamp_ns
            return 0.0, said
        if self._retime:
            self._retime = False
            self._origin = stamp_ns
            return 0.0, said
        return self._time(stamp_ns - self._origin), said

    def restart_time(self) -> None:
        """Start the time line again at the next state, with the controller as it is (nothing replanned).

        For a live arm after a slow first state (planning the reference from it): the
        states that came meanwhile are newer by the planning's time, which the arm, held at
        rest, did not move through; without this the reference would start that far ahead.
        """
        self._retime = True

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
    plan_from: str = PLAN_FROM_STATE,
    soft_start: float = 0.0,
    controller_model: str = MODEL_ARM,
) -> tuple[ControlLoop, list[str]]:
    """Load the controller plugins and a scenario, and build its :class:`ControlLoop`.

    Parameters
    ----------
    scenario : str | Path | None
        A scenario path or bundled name; ``None`` / ``""`` for the default.
    joint_names, fast_model, time_reversal, effort_limits, command_joints, plan_from, soft_start, controller_model
        As for :class:`ControlLoop`; the arm's gravity and drive come from the scenario
        (``[simulator].grav_vec``, the links' ``armature``, ``viscous``, ``coulomb``).
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
    dt = check_non_negative("dt", dt)
    loaded = load_scenario(scenario)
    arm = load_arm(scenario)
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
        plan_from=plan_from,
        soft_start=soft_start,
        controller_model=controller_model,
        grav_vec=arm.grav_vec,
        drive=arm.drive,
    )
    return loop, problems
