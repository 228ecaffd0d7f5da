# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Why a controller's time line restarts, and what each kind of restart does: one table.

A :class:`~skelarm_ros.control.loop.ControlLoop` runs its controller on one time line at a
time. A time line (re)starts for one of four reasons (:class:`Restart`), and
:data:`RESTARTS` says, for each, what it does beyond what every restart does: whether the
tracking controller's reference is planned again (:class:`Replan`), whether the soft start
ramps in again over the holding torque, whether a start far from the scenario's pose is
said. Restarts due at the same state add up (:func:`combined`). The loop asks the table and
nothing else; a new kind of restart is a new row.

This module does not import rclpy.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable


class Restart(enum.Enum):
    """Why a controller's time line (re)starts at a state; :data:`RESTARTS` says what each kind does."""

    FIRST = "the first state"
    HOLD = "states came back after a hold"
    TIME_REVERSAL = "time went back"
    NEW_TARGET = "a new target"


class Replan(enum.IntEnum):
    """How a restart replans a tracking controller's reference; of several restarts at one state the largest wins."""

    NONE = 0
    MOVED = 1
    """From where the arm is, when ``plan_from`` is ``state`` and the arm is away from the scenario's pose."""
    ALWAYS = 2
    """From where the arm is, whatever ``plan_from`` says (the arm stood at zero torque meanwhile)."""
    TARGET = 3
    """For the new target: a reaching controller takes it; any other is rebuilt for it from where the arm is."""


@dataclass(frozen=True)
class RestartEffects:
    """What one kind of restart does besides what every restart does (see :data:`RESTARTS`).

    Attributes
    ----------
    replan : Replan
        How the reference is replanned.
    ramp : bool
        Whether the soft start ramps in again over the holding torque from the new time line's start.
    far_start : bool
        Whether a start far from the scenario's initial pose is said.
    counts : bool
        Whether it counts in :attr:`~skelarm_ros.control.loop.ControlLoop.restarts` and is said
        as a restart (the first start is not a restart of anything).
    """

    replan: Replan
    ramp: bool
    far_start: bool = False
    counts: bool = True


RESTARTS: dict[Restart, RestartEffects] = {
    Restart.FIRST: RestartEffects(Replan.MOVED, ramp=True, far_start=True, counts=False),
    Restart.HOLD: RestartEffects(Replan.ALWAYS, ramp=True),
    Restart.TIME_REVERSAL: RestartEffects(Replan.NONE, ramp=True),
    Restart.NEW_TARGET: RestartEffects(Replan.TARGET, ramp=False),
}
"""The kinds of restart and what each does, the one place a restart's effects are decided.

Every restart, whatever its kind: the controller is reset at the new time line's first
state and its time runs from 0 there, and the divergence guard starts afresh. On a live arm
(``live_arm``) every kind is made in two steps: its effects are prepared at one state, which
is answered with the torque that holds the arm, and the time line starts at the next, so
no state that waited for the preparation starts it (the time line is timed again there).
Restarts due at the same state add up (:func:`combined`)."""


def combined(kinds: Iterable[Restart]) -> RestartEffects:
    """Return what the restarts due at one state do together.

    The largest replan; a ramp, a far start if any of them has one; counted unless one is the first.

    Raises
    ------
    ValueError
        If ``kinds`` is empty (no restart is due).
    """
    effects = [RESTARTS[kind] for kind in kinds]
    if not effects:
        msg = "no restart is due at this state"
        raise ValueError(msg)
    return RestartEffects(
        max(effect.replan for effect in effects),
        ramp=any(effect.ramp for effect in effects),
        far_start=any(effect.far_start for effect in effects),
        counts=all(effect.counts for effect in effects),
    )
