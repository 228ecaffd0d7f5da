# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""What keeps a real arm safe under the controller: soft start, joint limits, a far start, stale states.

A real arm's effort driver holds the last command it got (ros2_control's effort
controllers do), so the controller must not kick at its start, must not push a joint
further past its limit, and must send zero torque when its joint states stop
(docs/controller.md, "Driving a real arm"). These pieces are plain functions and small
classes that take the time as an argument and return what to say
(:class:`~skelarm_ros.interface.Say`); :class:`~skelarm_ros.control.loop.ControlLoop` and
the controller node use them.

This module does not import rclpy.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from skelarm_ros.interface import INFO, PLAN_FROM_STATE, WARNING, Say, check_non_negative

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

FAR_START = 0.1
"""A first state farther than this (rad, on any joint) from the scenario's initial pose is said."""


def soft_start_bound(
    torque: NDArray[np.float64], limits: NDArray[np.float64] | None, ramp: float
) -> NDArray[np.float64]:
    """Bound a torque by effort limits scaled by ``ramp`` (0 to 1).

    Parameters
    ----------
    torque : NDArray[np.float64]
        Joint torques (N*m).
    limits : NDArray[np.float64] | None
        Per-joint bounds (N*m, ``inf`` for none), or ``None`` for none at all.
    ramp : float
        The soft start's progress: 0 at its start, 1 once it is over.

    Returns
    -------
    NDArray[np.float64]
        ``torque`` clipped to ``±ramp*limit`` where a joint has a finite limit, and scaled
        by ``ramp`` where it has none (the ramp then bounds the controller's own torque).
    """
    if limits is None:
        return torque if ramp >= 1.0 else torque * ramp
    finite = np.isfinite(limits)
    bound = np.where(finite, limits * ramp, np.inf)
    clipped = np.clip(torque, -bound, bound)
    return clipped if ramp >= 1.0 else np.where(finite, clipped, torque * ramp)


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


class StateWatch:
    """Notice joint states that stop coming (a hung bus, a stopped driver) and their return.

    Parameters
    ----------
    timeout : float
        Seconds without a new state after which control stops with one zero command; 0 for never.
    topic : str
        The joint-state topic, named in the warning.

    Attributes
    ----------
    stale : bool
        Whether the states are stale now (a zero command went out and no state came since).
    gaps : int
        Gaps noticed so far.
    """

    def __init__(self, timeout: float, topic: str) -> None:
        """Wait for the first state; nothing is stale before it."""
        self.timeout = check_non_negative("state_timeout", timeout)
        self.topic = topic
        self.stale = False
        self.gaps = 0
        self._last: float | None = None
        self._checked: float | None = None  # when the last check ran
        self._deferred = False  # the last check came late and left its judgement to the next

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
        self._last = now
        return said

    def check(self, now: float) -> list[Say]:
        """Return a warning once when the gap since the last state passes the timeout, else nothing.

        The caller sends one zero command when a warning comes back. A check that itself
        comes more than half the timeout after the one before found the process held up
        (a state may be waiting behind it, not missing): it leaves the judgement to the next
        check, once, so a stalled controller does not take its own pause for stale states.
        """
        late = self._checked is not None and now - self._checked > 0.5 * self.timeout
        self._checked = now
        if self.timeout <= 0.0 or self.stale or self._last is None:
            return []
        if late and not self._deferred:
            self._deferred = True
            return []
        self._deferred = False
        gap = now - self._last
        if gap <= self.timeout:
            return []
        self.stale = True
        self.gaps += 1
        return [
            Say(
                WARNING,
                f"no joint state on {self.topic} for {gap:.3f} s (state_timeout {self.timeout:g} s); "
                "sent zero torque, control resumes when states return",
            )
        ]
