# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""What keeps a real arm safe under the controller: the soft start's hold, the limits, divergence, stale states.

A real arm's effort driver holds the last command it got (ros2_control's effort
controllers do), so the controller must hold the arm from its first command and not
kick at its start (:class:`HoldingTorque`, :func:`soft_start`), must keep within the
arm's effort limits (:func:`clamp_efforts`), must not push a joint further past its
limit (:class:`JointLimitGuard`), must stop a diverging arm (:class:`DivergenceGuard`)
and must send zero torque when its joint states stop (:class:`StateWatch`)
(docs/controller.md, "Driving a real arm"). These pieces are plain functions and small
classes that take the time as an argument and return what to say
(:class:`~skelarm_ros.interface.Say`); :class:`~skelarm_ros.control.loop.ControlLoop` and
the controller node use them.

This module does not import rclpy.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from skelarm_ros.interface import ERROR, INFO, NANOSECONDS, PLAN_FROM_STATE, WARNING, Say, check_non_negative
from skelarm_ros.sim.engine import ArmEngine

if TYPE_CHECKING:
    from collections.abc import Sequence

    import skelarm
    from numpy.typing import ArrayLike, NDArray


FAR_START = 0.1
"""A first state farther than this (rad, on any joint) from the scenario's initial pose is said."""


def soft_start(torque: NDArray[np.float64], hold: NDArray[np.float64], ramp: float) -> NDArray[np.float64]:
    """Blend the controller's torque in over the holding torque: ``hold + ramp*(torque - hold)``.

    Parameters
    ----------
    torque : NDArray[np.float64]
        The controller's joint torques (N*m).
    hold : NDArray[np.float64]
        The torque that holds the arm at its state (:meth:`HoldingTorque.at`, N*m).
    ramp : float
        The soft start's progress: 0 at its start (the command is ``hold``), 1 once it is
        over (the command is ``torque`` itself, to the bit).

    Returns
    -------
    NDArray[np.float64]
        The command before the effort limits (:func:`clamp_efforts`), which do not ramp.
    """
    if ramp >= 1.0:
        return torque
    return hold + ramp * (torque - hold)


def clamp_efforts(
    torque: NDArray[np.float64], limits: NDArray[np.float64] | None
) -> tuple[NDArray[np.float64], NDArray[np.bool_] | None]:
    """Clamp a torque to the per-joint effort limits; say which joints were at their limit.

    Parameters
    ----------
    torque : NDArray[np.float64]
        Joint torques (N*m).
    limits : NDArray[np.float64] | None
        Per-joint bounds (N*m, ``inf`` for none), or ``None`` for none at all.

    Returns
    -------
    tuple[NDArray[np.float64], NDArray[np.bool_] | None]
        The clamped torque, and per joint whether the clamp acted (``None`` without limits).
    """
    if limits is None:
        return torque, None
    saturated = np.abs(torque) > limits
    if not saturated.any():
        return torque, saturated
    return np.clip(torque, -limits, limits), saturated


def ramp_at(elapsed: float, duration: float) -> float:
    """Return the soft start's progress ``elapsed / duration`` in [0, 1] (1 for no soft start)."""
    if duration <= 0.0:
        return 1.0
    return min(1.0, max(0.0, elapsed / duration))


def far_start(
    q: NDArray[np.float64], initial: NDArray[np.float64], joint_names: Sequence[str], plan_from: str
) -> list[Say]:
    """Say, in one line, a first state far from the scenario's initial pose (nothing for a near one).

    Parameters
    ----------
    q : NDArray[np.float64]
        The first state's joint angles (rad).
    initial : NDArray[np.float64]
        The scenario's initial joint angles (rad).
    joint_names : Sequence[str]
        The arm's joints.
    plan_from : str
        The ``plan_from`` in use (:data:`~skelarm_ros.interface.PLAN_FROM`).

    Returns
    -------
    list[Say]
        One info (``plan_from`` ``state``) or warning (``scenario``) when some joint is more
        than :data:`FAR_START` from its initial angle, else nothing.
    """
    offsets = q - initial
    joint = int(np.argmax(np.abs(offsets)))
    distance = float(abs(offsets[joint]))
    if not distance > FAR_START:
        return []
    where = (
        f"the arm starts {distance:.3f} rad ({math.degrees(distance):.1f} deg) from the scenario's initial pose "
        f"at {joint_names[joint]}"
    )
    if plan_from == PLAN_FROM_STATE:
        return [Say(INFO, f"{where}; the reference is planned from where it is (plan_from:=state)")]
    return [
        Say(
            WARNING,
            f"{where}; plan_from:=scenario tracks the reference from the scenario's pose, so the first commands "
            "pull the arm there (plan_from:=state plans from where it is)",
        )
    ]


class JointLimitGuard:
    """Clamp to zero the torque that pushes a joint further past its limit, and say so once per excursion.

    Parameters
    ----------
    lower, upper : NDArray[np.float64]
        The joints' limits (rad).
    joint_names : Sequence[str]
        The arm's joints, for the sentences.

    Attributes
    ----------
    clamped : int
        Commands in which some joint's torque was clamped.
    """

    def __init__(self, lower: NDArray[np.float64], upper: NDArray[np.float64], joint_names: Sequence[str]) -> None:
        """Keep the limits; no joint is past one yet."""
        self.lower, self.upper = lower, upper
        self.joint_names = list(joint_names)
        self.clamped = 0
        self._outside: set[int] = set()

    def apply(self, q: NDArray[np.float64], torque: NDArray[np.float64]) -> tuple[NDArray[np.float64], list[Say]]:
        """Return the torque with each push further past a limit set to zero, and what to say.

        A joint strictly beyond its limit (a simulator with stops never gives one) keeps
        a torque that brings it back; a torque that pushes it further out is zero. The
        first state of each excursion is warned about; the return inside the limits is said.
        """
        above, below = q > self.upper, q < self.lower
        said: list[Say] = []
        outside = set(np.flatnonzero(above | below).tolist())
        for joint in sorted(outside - self._outside):
            side, limit = ("upper", self.upper[joint]) if above[joint] else ("lower", self.lower[joint])
            said.append(
                Say(
                    WARNING,
                    f"{self.joint_names[joint]} is at {q[joint]:.4f} rad, past its {side} limit {limit:.4f} rad; "
                    "torque that pushes it further out is clamped to zero until it is back inside",
                )
            )
        said.extend(
            Say(INFO, f"{self.joint_names[joint]} is back inside its limits")
            for joint in sorted(self._outside - outside)
        )
        self._outside = outside
        pushing = (above & (torque > 0.0)) | (below & (torque < 0.0))
        if not pushing.any():
            return torque, said
        self.clamped += 1
        return np.where(pushing, 0.0, torque), said


class HoldingTorque:
    """The torque that holds the arm at a state: the rigid arm's torque for zero acceleration there.

    ``h(q, dq)`` of the Pinocchio model with the controller model's gravity (none with
    ``controller_model:=skelarm``): gravity at the arm's pose, and at a moving state the
    Coriolis terms. The drive's friction is left out: ``viscous*dq + coulomb*sign(dq)`` of
    the measured velocities pushes a joint the way it moves, so the model's error that
    starts one creeping (a wrist a little lighter than its model) is pushed on, and at rest
    the noise of the velocities flips it; the joint's own static friction holds what the
    model misses. It does not depend on the controller, so every controller type starts
    from it (:func:`soft_start`).

    Parameters
    ----------
    skeleton : skelarm.Skeleton
        The arm (its geometry and inertias are read).
    dt : float
        The control step (s).
    grav_vec : ArrayLike | None, optional
        The model's planar gravity ``(gx, gy)`` (m/s^2); ``None`` for zero.
    """

    def __init__(self, skeleton: skelarm.Skeleton, dt: float, *, grav_vec: ArrayLike | None = None) -> None:
        """Build the model."""
        self.engine = ArmEngine(skeleton, dt, grav_vec=grav_vec)

    def at(self, q: NDArray[np.float64], dq: NDArray[np.float64]) -> NDArray[np.float64]:
        """Return the holding torque (N*m) at joint angles ``q`` (rad) and velocities ``dq`` (rad/s)."""
        return self.engine.bias(q, dq)


SATURATION_TIME = 0.5
"""Seconds a joint without a ``velocity_limit`` may stay at its effort limit while its error grows."""
SATURATED_SHARE = 0.9
"""The share of the states over :data:`SATURATION_TIME` whose command a joint's effort limit clamped."""
ERROR_GROWTH = 1.25
"""How much larger the error's peak over the second half of that time is than over the first."""
CHATTER_FLIPS = 10
"""Times a joint's command may hit its effort limit on alternate sides within :data:`SATURATION_TIME` (a chatter)."""


@dataclass(frozen=True)
class GuardedState:
    """What the divergence guard looks at in one state (the command clamped, before it is sent).

    Attributes
    ----------
    stamp_ns : int
        The state's stamp (ns).
    dq : NDArray[np.float64]
        Joint velocities (rad/s).
    torque : NDArray[np.float64]
        The command (N*m), clamped to the effort limits.
    saturated : NDArray[np.bool_] | None
        Per joint whether the effort limit clamped its command; ``None`` without limits.
    error : NDArray[np.float64] | None
        Per joint the size of the controller's error (its ``error`` channel, rad), or the tip's
        distance to the target on every joint (m); ``None`` for a controller that gives neither.
    unit : str
        The error's unit (``rad`` or ``m``).
    """

    stamp_ns: int
    dq: NDArray[np.float64]
    torque: NDArray[np.float64]
    saturated: NDArray[np.bool_] | None
    error: NDArray[np.float64] | None
    unit: str = "rad"


class DivergenceGuard:
    """Stop a diverging arm: a joint faster than its velocity limit, or pinned at its effort limit while off course.

    Two rules, each on one state at a time (docs/controller.md, "Driving a real arm"):

    - a joint with a ``velocity_limit`` that moves faster than it (the state's velocity);
    - a joint without one: within the last :data:`SATURATION_TIME` seconds its command hit
      its effort limit on alternate sides :data:`CHATTER_FLIPS` times (a loop chattering
      at its limits), or was clamped by its limit in at least :data:`SATURATED_SHARE` of
      the states while its error's peak over the second half of that time is
      :data:`ERROR_GROWTH` times its peak over the first half or more (an arm that the
      whole torque it may have cannot bring back: a loop diverging into its limits, an
      arm falling). An arm held at its limit against a load or a stop (its error not
      growing), or accelerated and braked at its limit once, is not stopped.

    The first state that meets one trips the guard, once: :attr:`tripped` holds the sentence.

    Parameters
    ----------
    velocity_limits : NDArray[np.float64]
        Per joint (rad/s, ``inf`` for none).
    joint_names : Sequence[str]
        The arm's joints, for the sentence.

    Attributes
    ----------
    tripped : Say | None
        The sentence of the state that tripped the guard, ``None`` before.
    """

    def __init__(self, velocity_limits: NDArray[np.float64], joint_names: Sequence[str]) -> None:
        """Keep the limits; nothing has been seen yet."""
        self.velocity_limits = np.asarray(velocity_limits, dtype=np.float64)
        self.joint_names = list(joint_names)
        self.tripped: Say | None = None
        self._window: deque[GuardedState] = deque()
        self._counts = np.zeros(len(self.joint_names), dtype=np.int64)  # saturated states per joint in the window
        self._unlimited = ~np.isfinite(self.velocity_limits)

    def restart(self) -> None:
        """Forget the states seen (a new time line starts from rest, its error from its own start)."""
        self._window.clear()
        self._counts[:] = 0

    def check(self, state: GuardedState) -> Say | None:
        """Look at one state; return the sentence when it trips the guard (once), else ``None``."""
        if self.tripped is not None:
            return None
        speeds = np.abs(state.dq)
        fast = speeds > self.velocity_limits
        if fast.any():
            joint = int(np.argmax(np.where(fast, speeds / self.velocity_limits, 0.0)))
            return self._trip(
                f"{self.joint_names[joint]} turned at {speeds[joint]:.3g} rad/s, faster than its velocity_limit "
                f"{self.velocity_limits[joint]:g} rad/s"
            )
        return self._saturated(state)

    def _saturated(self, state: GuardedState) -> Say | None:
        if state.saturated is None or not self._unlimited.any():
            return None
        window = self._window
        window.append(state)
        self._counts += state.saturated
        horizon = state.stamp_ns - round(SATURATION_TIME * NANOSECONDS)
        while window[0].stamp_ns < horizon:
            oldest = window.popleft().saturated
            assert oldest is not None  # only states with limits are kept
            self._counts -= oldest
        spanned = window[0].stamp_ns <= horizon + round(0.1 * SATURATION_TIME * NANOSECONDS)
        if not spanned or not (state.saturated & self._unlimited).any():
            return None  # the states kept do not span the whole time yet, or this one is inside the limits
        saturated = np.array([item.saturated for item in window])
        torques = np.array([item.torque for item in window])
        speeds = np.abs(np.array([item.dq for item in window])).max(axis=0)
        for joint in np.flatnonzero(self._unlimited & state.saturated).tolist():
            sides = np.sign(torques[saturated[:, joint], joint])
            flips = int(np.count_nonzero(np.diff(sides)))
            limit = f"its effort limit ({abs(state.torque[joint]):.3g} N*m)"
            if flips >= CHATTER_FLIPS:
                return self._trip(
                    f"{self.joint_names[joint]} has hit {limit} on alternate sides {flips} times within "
                    f"{SATURATION_TIME:g} s, up to {speeds[joint]:.3g} rad/s (it has no velocity_limit)"
                )
        if state.error is None:
            return None
        pinned = self._unlimited & (self._counts >= SATURATED_SHARE * len(window))
        errors = np.array([item.error for item in window])
        half = len(window) // 2
        before, after = errors[:half].max(axis=0), errors[half:].max(axis=0)
        growing = pinned & (after >= ERROR_GROWTH * before) & (after > 0.0)
        if not growing.any():
            return None
        joint = int(np.argmax(np.where(growing, after, -1.0)))
        unit = state.unit
        return self._trip(
            f"{self.joint_names[joint]} has been at its effort limit ({abs(state.torque[joint]):.3g} N*m) for "
            f"{SATURATION_TIME:g} s while its error grew from {before[joint]:.3g} {unit} to {after[joint]:.3g} "
            f"{unit}, up to {speeds[joint]:.3g} rad/s (it has no velocity_limit)"
        )

    def _trip(self, cause: str) -> Say:
        self.tripped = Say(
            ERROR,
            f"the arm is diverging: {cause}; sent zero torque, and the controller sends nothing but zero "
            "until it ends (exit code 1)",
        )
        return self.tripped


class StateWatch:
    """Notice joint states that stop coming (a hung bus, a stopped driver) and their return.

    The watch is looked at on a steady timer every ``period`` seconds (:meth:`check`). The
    quiet time it judges is measured over those looks only as far as they came on time:
    each look adds the time since the one before (or since the last state), but never more
    than one ``period``. A look that comes late found the process itself held up (a state
    may be waiting behind it, not missing), so that pause does not count as the states'
    silence; a bus that is really quiet is still found, after ``timeout / period`` looks.

    Parameters
    ----------
    timeout : float
        Seconds of quiet after which control stops with one zero command; 0 for never.
    topic : str
        The joint-state topic, named in the warning.
    period : float
        Seconds between two looks (:meth:`check`) as the timer sets them.
    rest : str, optional
        What the stopped arm is sent, as the warning says it (a servo arm: the goal that holds it).

    Attributes
    ----------
    stale : bool
        Whether the states are stale now (a zero command went out and no state came since).
    gaps : int
        Gaps noticed so far.
    """

    def __init__(self, timeout: float, topic: str, period: float, rest: str = "zero torque") -> None:
        """Wait for the first state; nothing is stale before it."""
        self.timeout = check_non_negative("state_timeout", timeout)
        self.topic = topic
        self.rest = rest
        self.period = period
        self.stale = False
        self.gaps = 0
        self._last: float | None = None  # when the last state came
        self._looked: float | None = None  # when the quiet time was last counted (a look, or the last state)
        self._quiet = 0.0  # quiet time counted since the last state

    def heard(self, now: float) -> list[Say]:
        """Take the arrival of a state at ``now`` (s, a monotonic clock); say a return after a gap."""
        said: list[Say] = []
        if self.stale and self._last is not None:
            said.append(
                Say(
                    INFO,
                    f"joint states on {self.topic} are back after {now - self._last:.3f} s; control resumes, "
                    "restarting from this state",
                )
            )
        self.stale = False
        self._last = self._looked = now
        self._quiet = 0.0
        return said

    def check(self, now: float) -> list[Say]:
        """Count the quiet time up to ``now``; return a warning once when it passes the timeout, else nothing.

        The caller sends one zero command when a warning comes back.
        """
        if self._looked is None or self.stale:
            return []
        self._quiet += min(max(now - self._looked, 0.0), self.period)
        self._looked = now
        if self.timeout <= 0.0 or self._quiet <= self.timeout:
            return []
        self.stale = True
        self.gaps += 1
        assert self._last is not None  # set with _looked
        return [
            Say(
                WARNING,
                f"no joint state on {self.topic} for {now - self._last:.3f} s (state_timeout {self.timeout:g} s); "
                f"sent {self.rest}, control resumes when states return",
            )
        ]
