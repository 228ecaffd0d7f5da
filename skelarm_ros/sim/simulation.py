# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The simulator's per-step logic, without ROS.

:class:`Simulation` holds the arm (an :class:`~skelarm_ros.sim.engine.ArmEngine`), the
newest effort command and tip force, and the rules the simulator node applies to
them: zero-order hold, ``effort_limits`` clamping, reset, counting rejected
messages per kind, and stopping (without crashing) when the state becomes
non-finite. With ``driver`` it plays the arm's driver the scenario's ``[driver]`` table
describes (:class:`~skelarm_ros.sim.driver_model.DriverModel`: ticks, command delay, torque
lag, noise); the links' ``effort_limit`` saturates the applied torque either way, and a
servo arm's servo (``[driver].interface`` ``position`` or ``velocity``) turns its goals into
torque either way: its commands are goals, not torques. When
the run starts, waits, lapses and ends is
:class:`skelarm_ros.sim.run.SimulatorRun`'s.
:class:`LockstepPairing` pairs the command (and tip force) with the step they
belong to by the exact stamp in nanoseconds (docs/interfaces.md, lockstep protocol).

The node hands this module plain values taken from messages; this module does not
import rclpy.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import numpy as np

from skelarm_ros.interface import (
    EFFORT,
    JOINT_STATE_FIELDS,
    check_effort_limits,
    check_joint_names,
    check_non_negative,
    seconds_to_nanoseconds,
    seconds_to_stamp,
)
from skelarm_ros.sim.conversions import NameOrder, Rejected, effort_array, planar_force
from skelarm_ros.sim.driver_model import DriverModel
from skelarm_ros.sim.engine import ArmEngine, NonFiniteStateError
from skelarm_ros.sim.run import AnswerCount

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from numpy.typing import NDArray

    from skelarm_ros.sim.scenario import ArmSetup

# Kinds of rejected or ignored messages, as counted and reported.
COMMAND = "command"
WRENCH = "tip wrench"
STALE_COMMAND = "stale command"
STALE_WRENCH = "stale tip wrench"


class Simulation:
    """The arm being simulated, its held inputs and its run state.

    Parameters
    ----------
    arm : ArmSetup
        Robot, initial state, step and limits (from :func:`skelarm_ros.sim.scenario.load_arm`).
    joint_names : Sequence[str], optional
        The joints' names; empty for ``j1 ... jN``.
    dt : float, optional
        Integration step (seconds); 0 takes the scenario's.
    effort_limits : Sequence[float], optional
        One positive limit per joint (N*m) that the torque asked of the motors is clamped to (an
        effort command, a servo's torque); empty for none.
    wrench_tolerance : float, optional
        Largest out-of-plane wrench component accepted as zero.
    driver : bool, optional
        Play the arm's driver as the scenario's ``[driver]`` table describes it (none without
        the table): states at its ticks, commands acting after its delay, its torque lag and
        noise. False: every step published exactly, each command applied at once (a servo
        arm's servo still turning goals into torque).

    Attributes
    ----------
    engine : ArmEngine
        The arm's dynamics and state (``engine.q``, ``engine.dq``, ``engine.t``).
    effort : NDArray[np.float64]
        The torque applied over the step that ended at the present state (zero at the
        initial state).
    driver : DriverModel | None
        The driver between the arm and the commands (``None``: each command applied at once,
        unclamped but for ``effort_limits``).
    steps : int
        Steps since the start or the last reset.
    halted : str
        Empty while the state is finite; else why integration stopped.
    rejected : collections.Counter[str]
        Rejected or ignored messages per kind since the start.
    answered : AnswerCount
        Realtime steps whose held command answered the state before the step (by its
        stamp), since the first stamped command was held (:meth:`held_command`).
    """

    def __init__(
        self,
        arm: ArmSetup,
        joint_names: Sequence[str] = (),
        *,
        dt: float = 0.0,
        effort_limits: Sequence[float] = (),
        wrench_tolerance: float = 1e-6,
        driver: bool = False,
    ) -> None:
        """Build the engine at the arm's initial state and check the settings."""
        num_joints = arm.skeleton.num_joints
        self.joint_names = check_joint_names(list(joint_names), num_joints)
        self._command_order = NameOrder(self.joint_names, "joint_commands message")
        step = arm.dt if check_non_negative("dt", dt) == 0.0 else float(dt)
        self.engine = ArmEngine(
            arm.skeleton, step, grav_vec=arm.grav_vec, enforce_limits=arm.enforce_limits, drive=arm.drive
        )
        self._q0 = self.engine.q.copy()
        self._dq0 = self.engine.dq.copy()
        self.num_joints = num_joints
        self.effort_limits: NDArray[np.float64] | None = None
        self.set_effort_limits(effort_limits)
        self.wrench_tolerance = check_non_negative("wrench_tolerance", wrench_tolerance, "N or N*m")
        self.rejected: Counter[str] = Counter()
        self.halted = ""
        self.steps = 0
        self.effort = np.zeros(num_joints)
        self._zero = np.zeros(num_joints)
        self._command: NDArray[np.float64] | None = None
        self._command_stamp: int | None = None
        self.answered = AnswerCount()  # the run's figure (skelarm_ros.sim.run), counted where a step takes its command
        self.force = np.zeros(2)
        self.applied_force = self.force
        motors = arm.limits.effort if arm.limits is not None and arm.limits.has_effort else None
        spec = arm.driver if driver or arm.driver is None else arm.driver.servo_only()
        self.driver = None if spec is None and motors is None else DriverModel(spec, num_joints, step, motors)
        self.interface = EFFORT if self.driver is None else self.driver.interface
        """What the commands are: ``effort`` (torques), ``position`` or ``velocity`` (a servo's goals)."""
        self._servo = self.interface != EFFORT  # its commands are goals, its torque made at each step
        self._what = f"{self.interface} goal" if self._servo else "effort command"
        self._field = JOINT_STATE_FIELDS.index(self.interface)  # the JointState field a joint_commands carries it in
        self._published: tuple[list[float], list[float], list[float]] | None = None
        self._observe()

    # -- time ------------------------------------------------------------------------------------

    @property
    def dt(self) -> float:
        """Integration step (seconds)."""
        return self.engine.dt

    @property
    def t(self) -> float:
        """Simulated time (seconds) of the present state."""
        return self.engine.t

    @property
    def tick_period(self) -> float:
        """Simulated seconds from one published state to the next: the driver's tick (``dt`` without a rate)."""
        return self.dt * (1 if self.driver is None else self.driver.steps_per_tick)

    def stamp(self) -> tuple[int, int]:
        """``(sec, nanosec)`` of the present state, as published."""
        return seconds_to_stamp(self.engine.t)

    def stamp_ns(self) -> int:
        """Stamp of the present state in integer nanoseconds."""
        return seconds_to_nanoseconds(self.engine.t)

    def tip(self) -> NDArray[np.float64]:
        """Tip position ``(x, y)`` in ``base`` (m) at the present state."""
        return self.engine.endpoint(self.engine.q)

    def published_state(self) -> tuple[list[float], list[float], list[float]]:
        """Return the present state as published: angles (rad), velocities (rad/s), effort (N*m), as lists.

        The arm's own state and :attr:`effort`, or, with a driver that alters it, what the
        driver reads at its tick (noise, encoder ticks, effort bias: drawn once per state).
        Do not modify the lists.
        """
        if self._published is not None:
            return self._published
        return self.engine.q_list, self.engine.dq_list, self.effort.tolist()

    def _observe(self) -> None:
        """Read the present state as the driver publishes it, when it alters it (noise drawn here, once)."""
        driver = self.driver
        if driver is None or not driver.alters_state:
            self._published = None
            return
        self._published = driver.observe(self.engine.q, self.engine.dq, self.effort)

    # -- inputs ----------------------------------------------------------------------------------

    def _checked(self, kind: str, check: Callable[[], NDArray[np.float64]]) -> NDArray[np.float64]:
        try:
            return check()
        except Rejected:
            self.rejected[kind] += 1
            raise

    def command_from_array(self, values: Sequence[float]) -> NDArray[np.float64]:
        """Check a ``Float64MultiArray`` command (values in ``joint_names`` order).

        Raises
        ------
        Rejected
            On a wrong count or a non-finite value; the rejection is counted.
        """
        return self._checked(COMMAND, lambda: effort_array(values, self.num_joints, self._what))

    def command_from_joint_state(self, names: Sequence[str], values: Sequence[float]) -> NDArray[np.float64]:
        """Check a ``joint_commands`` message's ``name`` and the values of the field of :attr:`interface`.

        Raises
        ------
        Rejected
            On unknown, repeated or missing joints, mismatched lengths or non-finite values.
        """
        return self._checked(COMMAND, lambda: self._command_order.pick(names, values, self.interface))

    def command_from_fields(
        self, names: Sequence[str], position: Sequence[float], velocity: Sequence[float], effort: Sequence[float]
    ) -> NDArray[np.float64]:
        """Check a ``joint_commands`` message: its ``name`` and the field of :attr:`interface` (docs/interfaces.md).

        Raises
        ------
        Rejected
            As :meth:`command_from_joint_state`.
        """
        return self.command_from_joint_state(names, (position, velocity, effort)[self._field])

    def wrench_force(self, frame_id: str, force: Sequence[float], torque: Sequence[float]) -> NDArray[np.float64]:
        """Check a ``tip_wrench`` message and return its planar force ``(fx, fy)``.

        Raises
        ------
        Rejected
            On another frame, non-finite values or out-of-plane parts beyond ``wrench_tolerance``.
        """
        return self._checked(WRENCH, lambda: planar_force(frame_id, force, torque, self.wrench_tolerance))

    def hold_command(self, tau: NDArray[np.float64], stamp_ns: int | None = None) -> None:
        """Hold a checked command until the next one replaces it.

        Parameters
        ----------
        tau : NDArray[np.float64]
            The checked torque (N*m), one per joint.
        stamp_ns : int | None, optional
            The stamp of the state it answers (``joint_commands``), in nanoseconds;
            ``None`` for an unstamped command. Stamped commands are counted in
            :attr:`answered` by :meth:`held_command`.

        With a driver, the driver takes it now: it acts from the first tick at or after now
        plus the command delay.
        """
        self._command = tau
        self._command_stamp = stamp_ns
        if self.driver is not None:
            self.driver.take(self._taken(tau), self.steps)

    def hold_force(self, force: NDArray[np.float64]) -> None:
        """Hold a checked tip force until the next one replaces it."""
        self.force = force

    def held_command(self, live: bool) -> NDArray[np.float64]:
        """Return the command to apply now: the newest while ``live``, else zero.

        ``live`` is the watchdog's word (:meth:`skelarm_ros.sim.run.SimulatorRun.command_live`).
        Once a stamped command has been held, each call also counts in :attr:`answered`
        whether the held command answers the present state (its stamp is the present
        state's): the share of steps that applied a command computed from the state
        right before them.
        """
        if self._command is None:
            return self._zero
        if self._command_stamp is not None:
            self.answered.count(live and self._command_stamp == self.stamp_ns())
        return self._command if live else self._zero

    def set_effort_limits(self, limits: Sequence[float] | None) -> None:
        """Clamp commands to ``limits`` (N*m, one per joint) from now on; ``None`` or empty for none.

        Raises
        ------
        ValueError
            On a wrong count or a limit that is not positive.
        """
        checked = check_effort_limits(limits or [], self.num_joints)
        self.effort_limits = None if checked is None else np.array(checked)

    def clamp(self, tau: NDArray[np.float64]) -> NDArray[np.float64]:
        """Clamp a torque to ``effort_limits`` (unchanged when there are none)."""
        if self.effort_limits is None:
            return tau
        return np.clip(tau, -self.effort_limits, self.effort_limits)

    def _taken(self, command: NDArray[np.float64]) -> NDArray[np.float64]:
        """Return a command as the driver takes it: a torque clamped to ``effort_limits``, a servo's goal as it is."""
        return command if self._servo else self.clamp(command)

    # -- stepping --------------------------------------------------------------------------------

    def advance(
        self, tau: NDArray[np.float64] | None = None, force: NDArray[np.float64] | None = None, *, live: bool = True
    ) -> bool:
        """Step the arm to the next published state, unless halted: once, or to the driver's next tick.

        Parameters
        ----------
        tau : NDArray[np.float64] | None, optional
            The command answering the present state (lockstep; N*m, clamped here, or a servo's
            goal), arriving now; ``None`` steps under the command held (realtime, :meth:`hold_command`).
        force : NDArray[np.float64] | None, optional
            Tip force ``(fx, fy)`` (N) over the steps; ``None`` takes the held force.
        live : bool, optional
            With ``tau`` ``None``: whether the held command still applies (the watchdog's
            word, :meth:`held_command`); zero torque if not.

        Returns
        -------
        bool
            Whether the steps were made. When the state would become non-finite that step
            is not made, :attr:`halted` says why, and later calls do nothing until :meth:`reset`.
        """
        if self.halted:
            return False
        pushed = self.force if force is None else force
        driver = self.driver
        try:
            if driver is None:
                applied = self.clamp(self.held_command(live) if tau is None else tau)
                self.engine.step(applied, pushed)
                self.effort = applied
                self.steps += 1
            else:
                self._drive(driver, tau, pushed, live)
        except NonFiniteStateError as error:
            self.halted = f"{error}; integration stopped, call simulator/reset to start again"
            return False
        self.applied_force = pushed
        return True

    def _drive(
        self, driver: DriverModel, tau: NDArray[np.float64] | None, force: NDArray[np.float64], live: bool
    ) -> None:
        """Step to the driver's next tick under the torque it gives at each step; read the state it publishes."""
        if tau is None:
            self.held_command(live)  # counts whether the newest command answers the state before the tick
        else:
            driver.take(self._taken(tau), self.steps)
        engine = self.engine
        while True:
            applied = driver.torque(self.steps, live, engine.q, engine.dq)
            if self._servo:  # the servo's torque within effort_limits, as an effort command is clamped
                applied = self.clamp(applied)
            engine.step(applied, force)
            self.effort = applied
            self.steps += 1
            if driver.at_tick(self.steps):
                break
        self._observe()

    def reset(self) -> None:
        """Go back to the initial state; time restarts at 0, the effort is zero again, the driver starts afresh."""
        self.engine.set_state(self._q0, self._dq0, 0.0)
        self.effort = self._zero
        self.applied_force = np.zeros(2)
        self.steps = 0
        self.halted = ""
        if self.driver is not None:
            self.driver.reset()
        self._observe()


class LockstepPairing:
    """Pairs the command (and, optionally, the tip force) with the step they answer.

    Parameters
    ----------
    wait_for_wrench : bool
        Also wait for the ``tip_wrench`` stamped with the step's time.
    rejected : collections.Counter[str]
        Where stale messages are counted (the simulation's counter).
    """

    def __init__(self, wait_for_wrench: bool, rejected: Counter[str]) -> None:
        """Start with nothing expected."""
        self.wait_for_wrench = wait_for_wrench
        self.rejected = rejected
        self.expected: int | None = None
        self.command: NDArray[np.float64] | None = None
        self.force: NDArray[np.float64] | None = None

    def expect(self, stamp_ns: int) -> None:
        """Wait for the messages stamped ``stamp_ns`` (a new step); earlier arrivals are dropped."""
        self.expected = stamp_ns
        self.command = None
        self.force = None

    def offer_command(self, stamp_ns: int, tau: NDArray[np.float64]) -> bool:
        """Take the command if it is stamped with the expected step, else count it as stale.

        Returns
        -------
        bool
            Whether the command was taken.
        """
        if stamp_ns != self.expected:
            self.rejected[STALE_COMMAND] += 1
            return False
        self.command = tau
        return True

    def offer_force(self, stamp_ns: int, force: NDArray[np.float64]) -> bool:
        """Take the tip force if it is stamped with the expected step, else count it as stale.

        Returns
        -------
        bool
            Whether the force was taken.
        """
        if stamp_ns != self.expected:
            self.rejected[STALE_WRENCH] += 1
            return False
        self.force = force
        return True

    def take(self) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
        """Take the paired command and force (``None`` unless waiting for the wrench); nothing pairs after.

        Raises
        ------
        RuntimeError
            If the step is not :meth:`ready`.
        """
        if self.command is None or not self.ready():
            msg = f"the lockstep step is still waiting for {self.missing()}"
            raise RuntimeError(msg)
        taken = self.command, self.force
        self.expect(-1)
        return taken

    def ready(self) -> bool:
        """Whether everything the step waits for has arrived."""
        return self.command is not None and (self.force is not None or not self.wait_for_wrench)

    def missing(self) -> list[str]:
        """Return what the step is still waiting for, as topic names."""
        missing = [] if self.command is not None else ["joint_commands"]
        if self.wait_for_wrench and self.force is None:
            missing.append("tip_wrench")
        return missing
