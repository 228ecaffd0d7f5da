# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Running a skelarm controller on joint states: the core of the ``controller`` node.

:func:`build_control_loop` loads the controller plugins
(:func:`~skelarm_ros.control.plugins.load_controller_plugins`) and reads a scenario with
skelarm's own parsers, so every registered ``[controller].type`` works. :class:`ControlLoop`
maps a joint state by name onto the skelarm skeleton, keeps the controller's time line
(docs/interfaces.md, "Time"), follows a new target, and returns the torque with the
controller's channels. The model-based controllers get their fast twin
(:func:`~skelarm_ros.control.twins.with_fast_model`) unless ``fast_model`` is off.

This module does not import rclpy.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import skelarm
from skelarm.reaching import EndpointController

from skelarm_ros.control.plugins import load_controller_plugins
from skelarm_ros.control.twins import reads_joints_only, with_fast_model
from skelarm_ros.interface import (
    BASE_FRAME,
    NANOSECONDS,
    POINT_CHANNELS,
    TIME_REVERSAL_MODES,
    check_choice,
    check_effort_limits,
    check_joint_names,
    check_non_negative,
    check_positive,
)
from skelarm_ros.sim.conversions import NameOrder, Rejected
from skelarm_ros.sim.engine import set_joints, sync_skeleton
from skelarm_ros.sim.scenario import ScenarioError, load_scenario

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from numpy.typing import ArrayLike, NDArray

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
        self.dt = check_positive("dt", scenario.simulator.dt if dt is None else dt)
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
        return with_fast_model(controller, self.skeleton, self.dt) if self.fast_model else controller

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
    dt = check_non_negative("dt", dt)
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
