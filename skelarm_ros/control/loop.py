# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Running a skelarm controller on joint states: the core of the ``controller`` node.

:func:`build_control_loop` loads the controller plugins
(:func:`~skelarm_ros.control.plugins.load_controller_plugins`) and reads a scenario once,
with skelarm's own parsers, so every registered ``[controller].type`` works. How the loop
runs is one record, :class:`~skelarm_ros.control.settings.ControlSettings` (the controller
node's parameters of the same names). :class:`ControlLoop` maps a joint state by name onto
the skelarm skeleton, keeps the controller's time line (docs/interfaces.md, "Time"), follows
a new target, and returns the torque with the controller's channels. The model-based
controllers get their fast twin (:func:`~skelarm_ros.control.twins.with_fast_model`) unless
``fast_model`` is off, with the scenario's gravity and the twin's armature and friction
unless ``controller_model`` is ``skelarm``.

A time line restarts for one of four reasons (the first state, states back after a hold,
time going back, a new target), and :data:`~skelarm_ros.control.restarts.RESTARTS` is the
one table of what each does (replan, ramp the soft start in again, say a far start); every
restart resets the controller at the new time line's first state. For a real arm
(docs/controller.md, "Driving a real arm") a tracking controller plans its reference from
the first state it controls (``plan_from``), the first command holds the arm and the
controller's torque ramps in over it (``soft_start``), every command keeps within the
arm's effort limits, a push further past a joint limit is clamped to zero, and a live arm
that diverges is stopped (:mod:`~skelarm_ros.control.safety`). On a live arm
(``live_arm``) a restart is prepared at one state, which is answered with the torque
that holds the arm, and its time line starts at the next, so no state that waited for
the preparation starts it. For a servo arm (``interface``, :mod:`~skelarm_ros.control.servo`)
each answer's command is the servo's goal made from it, and a stopped arm is held where it is.

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
from skelarm_ros.control.restarts import Replan, Restart, combined
from skelarm_ros.control.safety import (
    DivergenceGuard,
    GuardedState,
    HoldingTorque,
    JointLimitGuard,
    clamp_efforts,
    far_start,
    ramp_at,
    soft_start,
)
from skelarm_ros.control.servo import ServoGoal, servo_goal
from skelarm_ros.control.settings import LIVE_SETTINGS, ControlSettings
from skelarm_ros.control.twins import has_fast_model, reads_joints_only, with_fast_model
from skelarm_ros.interface import (
    BASE_FRAME,
    MODEL_ARM,
    NANOSECONDS,
    PLAN_FROM_STATE,
    POINT_CHANNELS,
    Say,
    check_effort_limits,
    check_joint_names,
    check_positive,
)
from skelarm_ros.sim.conversions import NameOrder, Rejected
from skelarm_ros.sim.engine import set_joints, sync_skeleton
from skelarm_ros.sim.scenario import ArmSetup, ScenarioError, load_arm, scenario_of

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from numpy.typing import ArrayLike, NDArray

    from skelarm_ros.sim.scenario import JointDrive, JointLimits

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
        Joint torques (N*m) in ``joint_names`` order, clamped to the effort limits; for the state
        a live arm's time line was only prepared on, the torque that holds the arm there.
    channels : dict[str, NDArray[np.float64]]
        The controller's channels (``controller.log_channels()``) as arrays.
    t : float
        The controller's time (seconds) for this state.
    said : list[Say]
        What this state gives to say (a far start, a joint past its limit), for the caller to log.
    demand : NDArray[np.float64] | None
        The torque asked for before the effort limits clamped it (N*m, ``joint_names`` order): the
        controller's through the soft start, or the holding torque; ``torque`` itself where no limit
        acted; zero for the states after a diverging arm was stopped. ``None`` only where a caller built the output.
    restart : frozenset[Restart]
        The restarts prepared at this state (:data:`~skelarm_ros.control.restarts.RESTARTS`); empty
        on a running time line.
    goal : NDArray[np.float64] | None
        A servo's goal (rad or rad/s, ``joint_names`` order, :mod:`~skelarm_ros.control.servo`); ``None``: torques.
    """

    torque: NDArray[np.float64]
    channels: dict[str, NDArray[np.float64]]
    t: float
    said: list[Say] = field(default_factory=list)
    demand: NDArray[np.float64] | None = None
    restart: frozenset[Restart] = frozenset()
    goal: NDArray[np.float64] | None = None

    @property
    def command(self) -> NDArray[np.float64]:
        """What the driver is sent (``joint_names`` order): the servo's goal, else the torque."""
        return self.torque if self.goal is None else self.goal


class ControlLoop:
    """A skelarm controller driven by time-stamped joint states.

    Parameters
    ----------
    scenario : skelarm.Scenario
        The scenario; its controller, skeleton (a working copy is used) and task are taken.
    settings : ControlSettings, optional
        How it runs (the controller node's parameters); the defaults run the scenario as offline.
    grav_vec : ArrayLike | None, optional
        The arm's planar gravity ``(gx, gy)`` (m/s^2); ``None`` for zero.
    drive : JointDrive | None, optional
        The joints' armature and friction; ``None`` for none.
    limits : JointLimits | None, optional
        The arm's effort and velocity limits (its description's); ``None`` for none.
    servo : ServoGoal | None, optional
        A servo arm's goals made of the answers (:attr:`ControlOutput.command`); ``None``: torques.

    Attributes
    ----------
    settings : ControlSettings
        The settings in use (the live ones changed by :meth:`tune`).
    command_joints : list[str]
        The joints in command order (:meth:`command_torque`).
    rejected : int
        States (and targets) rejected so far.
    restarts : int
        Time lines started after the first (:data:`~skelarm_ros.control.restarts.RESTARTS`).
    effort_limits : NDArray[np.float64] | None
        The per-joint torque bounds in use (N*m, ``inf`` for none), ``None`` for none at all.
    velocity_limits : NDArray[np.float64]
        The arm's per-joint speed limits (rad/s, ``inf`` for none).
    """

    def __init__(
        self,
        scenario: skelarm.Scenario,
        settings: ControlSettings | None = None,
        *,
        grav_vec: ArrayLike | None = None,
        drive: JointDrive | None = None,
        limits: JointLimits | None = None,
        servo: ServoGoal | None = None,
    ) -> None:
        """Take the scenario's controller and set the loop up; no state is controlled yet."""
        settings = self.settings = ControlSettings() if settings is None else settings
        self.skeleton = scenario.skeleton.clone()
        self.initial_q: NDArray[np.float64] = np.array(self.skeleton.q, dtype=np.float64)
        self.num_joints: int = self.skeleton.num_joints
        self.joint_names = check_joint_names(list(settings.joint_names), self.num_joints)
        self._order = NameOrder(self.joint_names, "joint state", allow_extra=True)
        self._command_order = command_order(self.joint_names, list(settings.command_joints))
        self.command_joints = [self.joint_names[index] for index in self._command_order]
        self.dt = check_positive("dt", settings.dt or scenario.simulator.dt)
        self.task = scenario.task
        self._model_terms = self._arm_model(grav_vec, drive, has_fast_model(scenario.controller))
        self._guard = (
            JointLimitGuard(*self._joint_limits(), self.joint_names) if scenario.simulator.enforce_limits else None
        )
        source = scenario.source_config or {}
        self._controller_config: Mapping[str, Any] | None = source.get("controller")
        self.controller = self._fast(scenario.controller)
        self._described_efforts = None if limits is None or not limits.has_effort else limits.effort.copy()
        self.velocity_limits = np.full(self.num_joints, np.inf) if limits is None else limits.velocity.copy()
        self.effort_limits: NDArray[np.float64] | None = None
        self.set_effort_limits(settings.effort_limits)
        self._divergence = DivergenceGuard(self.velocity_limits, self.joint_names) if settings.live_arm else None
        self._holding = HoldingTorque(self.skeleton, self.dt, grav_vec=self._model_terms.get("grav_vec"))
        self.rejected = 0
        self.restarts = 0
        # The time line: the restarts due at the next state (RESTARTS), and once started, where it started.
        self._due: set[Restart] = {Restart.FIRST}
        self._origin: int | None = None  # stamp (ns) of the time line's first state; None until it starts
        self._ramps = False  # whether the time line about to start ramps the soft start in again (RESTARTS)
        self._ramp_from = 0  # stamp (ns) the soft start counts from: the start of the last time line that ramped
        self._last_stamp: int | None = None
        self._t = 0.0
        self.servo = servo
        self._last_q: NDArray[np.float64] | None = None  # the angles of the last state controlled
        self._pending_target: NDArray[np.float64] | None = None

    def _arm_model(self, grav_vec: ArrayLike | None, drive: JointDrive | None, modelled: bool) -> dict[str, Any]:
        """Return the twin's model terms (``grav_vec``, ``drive``) for ``controller_model`` ``arm``, checked."""
        gravity = np.zeros(2) if grav_vec is None else np.asarray(grav_vec, dtype=np.float64).reshape(2)
        ideal = drive is None or drive.is_ideal
        if self.settings.controller_model != MODEL_ARM or (not gravity.any() and ideal):
            return {}
        if modelled and not self.settings.fast_model:
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
        if not self.settings.fast_model:
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

    @property
    def stopped(self) -> Say | None:
        """The sentence of a live arm's divergence that stopped control (zero torque from then on); ``None``."""
        return None if self._divergence is None else self._divergence.tripped

    @property
    def unlimited_joints(self) -> list[str]:
        """The joints whose commands no effort limit bounds."""
        if self.effort_limits is None:
            return list(self.joint_names)
        return [name for name, limit in zip(self.joint_names, self.effort_limits, strict=True) if np.isinf(limit)]

    def hold(self) -> None:
        """Stop control (the joint states went stale): the next state restarts it (``Restart.HOLD``).

        That state gets the controller reset there with its time from 0 (on a live arm: the
        state after it), a tracking controller's reference replanned from it (whatever
        ``plan_from`` says: the arm stood at zero torque meanwhile), and the soft start again.
        """
        self._restart(Restart.HOLD)

    def _restart(self, kind: Restart) -> None:
        """Make a restart of ``kind`` due at the next state: the running time line ends here."""
        self._due.add(kind)
        self._origin = None

    # -- tunables ---------------------------------------------------------------------------------

    def tune(self, settings: ControlSettings) -> None:
        """Take new settings while running: the live ones (:data:`~skelarm_ros.control.settings.LIVE_SETTINGS`).

        Raises
        ------
        ValueError
            If a setting that builds the loop differs (it needs a new loop), or the effort
            limits are not one per joint (as :meth:`set_effort_limits`).
        """
        changed = [
            name
            for name in dataclasses.asdict(settings)
            if name not in LIVE_SETTINGS and getattr(settings, name) != getattr(self.settings, name)
        ]
        if changed:
            msg = f"{changed[0]} cannot change on a running control loop; only {', '.join(LIVE_SETTINGS)} can"
            raise ValueError(msg)
        self.set_effort_limits(settings.effort_limits)
        self.settings = settings

    def set_time_reversal(self, mode: str) -> None:
        """Choose what a state stamped earlier than the previous one does (``reset`` or ``reject``).

        Raises
        ------
        ValueError
            For any other value.
        """
        self.settings = dataclasses.replace(self.settings, time_reversal=mode)  # checked as every setting is

    @property
    def soft_start(self) -> float:
        """Seconds over which the controller's torque ramps in (the setting ``soft_start``)."""
        return self.settings.soft_start

    @property
    def live_arm(self) -> bool:
        """Whether the arm is a live one (the setting ``live_arm``)."""
        return self.settings.live_arm

    def set_effort_limits(self, limits: Sequence[float]) -> None:
        """Set the per-joint torque bounds (N*m): empty for the arm's own, else one positive value per joint.

        Given values replace the effort limits of the arm's description (``inf`` for a joint
        without a bound); empty keeps the description's (none where it has none).

        Raises
        ------
        ValueError
            On a wrong count or a value that is not positive (``inf`` is allowed: no bound), in
            the words of :func:`~skelarm_ros.interface.check_effort_limits`.
        """
        values = check_effort_limits(limits, self.num_joints)
        self.effort_limits = self._described_efforts if values is None else np.array(values)

    def command_torque(self, torque: NDArray[np.float64]) -> NDArray[np.float64]:
        """Return a command (a torque or a goal) given in ``joint_names`` order in :attr:`command_joints` order."""
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

    def _prepare(self, q: NDArray[np.float64], said: list[Say]) -> frozenset[Restart]:
        """Prepare the restarts due at this state, as the table says (``RESTARTS``): a target, the plan, the ramp.

        Returns the restarts prepared; what they give to say is added to ``said``.
        """
        kinds, self._due = frozenset(self._due), set()
        effects = combined(kinds)
        if effects.counts:
            self.restarts += 1
        self._ramps = self._ramps or effects.ramp  # a restart prepared again before it started still ramps
        replan, plan_from = effects.replan, self.settings.plan_from
        if replan == Replan.TARGET:
            assert self._pending_target is not None  # the target made the restart due
            target, self._pending_target = self._pending_target, None
            self._apply_target(target)
        elif self._plans and (
            replan == Replan.ALWAYS
            # From the scenario's very pose the plan is the scenario's: nothing to replan (offline equality).
            or (replan == Replan.MOVED and plan_from == PLAN_FROM_STATE and not np.array_equal(q, self.initial_q))
        ):
            self._replan(self.task)
        if effects.far_start:
            said += far_start(q, self.initial_q, self.joint_names, plan_from)
        return kinds

    @property
    def _plans(self) -> bool:
        """Whether the controller plans a reference from a state (a tracking controller of a known table)."""
        return not isinstance(self.controller, EndpointController) and self._controller_config is not None

    def _start(self, stamp_ns: int) -> float:
        """Start the time line at this state: the controller reset here, the soft start from here if it ramps; 0."""
        if self._ramps:
            self._ramp_from, self._ramps = stamp_ns, False
        self.controller.reset(self.skeleton)
        self._origin = stamp_ns
        if self._divergence is not None:
            self._divergence.restart()
        return 0.0

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
            The torque in ``joint_names`` order and the controller's channels. On a live arm
            the state a time line's start is prepared on gets the torque that holds the arm
            there (no channels): the time line starts at the next state, which the
            preparation did not keep waiting.

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
            if self.settings.time_reversal == "reject":
                msg = (
                    f"joint state stamped {stamp_ns} ns is earlier than the previous one ({last} ns); "
                    "set time_reversal:=reset to follow a restarted time line"
                )
                raise Rejected(msg)
            self._restart(Restart.TIME_REVERSAL)
        self._last_q = q
        if self.stopped is not None:  # a live arm diverged: nothing but zero torque (a servo: rest) from then on
            self._last_stamp = stamp_ns
            zero = np.zeros(self.num_joints)
            return ControlOutput(zero, {}, self._t, demand=zero, goal=self.rest_command())
        if self._pending_target is not None:
            self._restart(Restart.NEW_TARGET)
        if self._origin is None or not reads_joints_only(self.controller):
            sync_skeleton(self.skeleton, q, dq)
        else:
            set_joints(self.skeleton, q, dq)  # a joint-space controller between resets: no kinematics needed
        said: list[Say] = []
        restart = self._prepare(q, said) if self._due else frozenset()
        if restart and self.live_arm:  # preparing took its time: the time line starts at the next state, held here
            self._last_stamp = stamp_ns
            hold = self._holding.at(q, dq)
            holding = self._holding_command(hold, q, said)
            return ControlOutput(holding, {}, 0.0, said, hold, restart, self._servo_command(holding, 0.0, q, dq))
        t = self._start(stamp_ns) if self._origin is None else self._time(stamp_ns - self._origin)
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
        channels = {name: np.asarray(value, dtype=np.float64) for name, value in self.controller.log_channels().items()}
        demand = self._demand(torque, q, dq, stamp_ns)
        torque = self._bounded(demand, q, dq, stamp_ns, channels, said)
        return ControlOutput(torque, channels, t, said, demand, restart, self._servo_command(torque, t, q, dq))

    def _servo_command(
        self, torque: NDArray[np.float64], t: float, q: NDArray[np.float64], dq: NDArray[np.float64]
    ) -> NDArray[np.float64] | None:
        """Return a servo's goal for this answer (at rest once stopped); ``None`` for an effort driver."""
        if self.servo is None:
            return None
        if self.stopped is not None:
            return self.servo.rest(q)
        return self.servo.goal(self.controller, t, q, dq, torque)

    def rest_command(self) -> NDArray[np.float64] | None:
        """Return the command that leaves the arm at rest (``joint_names`` order): zero torque, or a servo's goal.

        A servo's holds the arm where the last state had it (``None`` before any state).
        """
        if self.servo is None:
            return np.zeros(self.num_joints)
        return None if self._last_q is None else self.servo.rest(self._last_q)

    def _holding_command(
        self, hold: NDArray[np.float64], q: NDArray[np.float64], said: list[Say]
    ) -> NDArray[np.float64]:
        """Return the command that holds the arm at this state (``hold``), within the effort and joint limits.

        A live arm's answer to the state its time line's start was prepared on: every state gets
        an answer (a lockstep simulator waits for one), and the arm is held while the plan is made.
        """
        torque, _ = clamp_efforts(hold, self.effort_limits)
        if self._guard is not None:
            torque, limited = self._guard.apply(q, torque)
            said += limited
        return torque

    def _demand(
        self, torque: NDArray[np.float64], q: NDArray[np.float64], dq: NDArray[np.float64], stamp_ns: int
    ) -> NDArray[np.float64]:
        """Return the torque asked for: the controller's, through the soft start over the holding torque."""
        ramp = ramp_at((stamp_ns - self._ramp_from) / NANOSECONDS, self.settings.soft_start)
        if ramp < 1.0:
            return soft_start(torque, self._holding.at(q, dq), ramp)
        return torque

    def _bounded(  # noqa: PLR0917 - one state's values, handed on
        self,
        demand: NDArray[np.float64],
        q: NDArray[np.float64],
        dq: NDArray[np.float64],
        stamp_ns: int,
        channels: Mapping[str, NDArray[np.float64]],
        said: list[Say],
    ) -> NDArray[np.float64]:
        """Return the command for the torque asked for: the effort limits, the joint limits, the guard.

        Appends what the limits and the guard say to ``said``.
        """
        torque, saturated = clamp_efforts(demand, self.effort_limits)
        if self._guard is not None:
            torque, limited = self._guard.apply(q, torque)
            said += limited
        if self._divergence is not None:
            state = GuardedState(stamp_ns, dq, torque, saturated, *self._off_course(channels))
            tripped = self._divergence.check(state)
            if tripped is not None:
                said.append(tripped)
                return np.zeros(self.num_joints)
        return torque

    def _off_course(self, channels: Mapping[str, NDArray[np.float64]]) -> tuple[NDArray[np.float64] | None, str]:
        """Return the size of the controller's error per joint and its unit, for the divergence guard.

        The ``error`` channel of a tracking controller (rad); else the distance of the
        ``endpoint`` channel (a reaching controller's tip) to the target followed, on every
        joint (m); else ``None``.
        """
        error = channels.get("error")
        if error is not None and error.size == self.num_joints:
            return np.abs(error.reshape(-1)), "rad"
        endpoint, target = channels.get("endpoint"), self.followed_target()
        if endpoint is not None and endpoint.size == 2 and target is not None:
            return np.full(self.num_joints, float(np.linalg.norm(endpoint.reshape(-1) - target))), "m"
        return None, "rad"

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
    scenario: str | Path | ArmSetup | None, settings: ControlSettings | None = None, **changes: Any
) -> tuple[ControlLoop, list[str]]:
    """Load the controller plugins and a scenario, and build its :class:`ControlLoop`.

    Parameters
    ----------
    scenario : str | Path | ArmSetup | None
        A scenario path or bundled name (``None`` / ``""`` for the default), or a scenario
        file already read (:func:`~skelarm_ros.sim.scenario.load_arm`): it is read once. The
        arm's gravity, drive and limits come from it (``[simulator].grav_vec``, the links'
        ``armature``, ``viscous``, ``coulomb``, ``effort_limit``, ``velocity_limit``).
    settings : ControlSettings | None, optional
        How the loop runs; ``None`` for the defaults.
    **changes : Any
        Settings given by name (``live_arm=True``), over ``settings``.

    Returns
    -------
    tuple[ControlLoop, list[str]]
        The loop and one sentence per controller plugin that was skipped.

    Raises
    ------
    ScenarioError
        If the scenario cannot be used (an unknown controller type names skelarm's known types).
    ValueError
        If a setting is out of range, or ``position_mode`` cannot apply (the message names it).
    TypeError
        If a change names no setting.
    """
    settings = ControlSettings.of(ControlSettings() if settings is None else settings, **changes)
    problems = load_controller_plugins()
    arm = scenario if isinstance(scenario, ArmSetup) else load_arm(scenario)
    loaded = scenario_of(arm)
    dt = settings.dt
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
    kind = str((loaded.source_config or {}).get("controller", {}).get("type", ""))
    servo = servo_goal(settings.interface, settings.position_mode, loaded.controller, arm.driver, controller_type=kind)
    loop = ControlLoop(loaded, settings, grav_vec=arm.grav_vec, drive=arm.drive, limits=arm.limits, servo=servo)
    return loop, problems
