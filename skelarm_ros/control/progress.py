# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""How the controller's task is going, said in a few lines: its progress, the reach, the end of its time.

:class:`TaskProgress` watches a :class:`~skelarm_ros.control.loop.ControlLoop` from the
states it controls and returns :class:`~skelarm_ros.interface.Say` items for the node
to log: a status line each :data:`STATUS_PERIOD` seconds (the controller's time, the
tip, its distance to the target and the commands sent per second), one line when the
tip first comes within the task's tolerance of its target, and one when the task's
time ends (with the distance then). A new time line (a reset, a new target) starts it
over. Times are handed in; nothing here reads a clock.

This module does not import rclpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from skelarm_ros.interface import INFO, Say
from skelarm_ros.sim.engine import ArmEngine

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from skelarm_ros.control.loop import ControlLoop

STATUS_PERIOD = 5.0  # s (wall) between two status lines
REACH_CHECK = 0.01  # s of controller time between two looks at the tip's distance (forward kinematics)


class TaskProgress:
    """The task's progress, from the states the loop controls.

    Parameters
    ----------
    loop : ControlLoop
        The control loop watched (its skeleton holds each controlled state).
    period : float, optional
        Wall seconds between two status lines.
    """

    def __init__(self, loop: ControlLoop, period: float = STATUS_PERIOD) -> None:
        """Start with nothing seen."""
        self._loop = loop
        self._engine = ArmEngine(loop.skeleton, loop.dt)
        self.period = period
        self.commands = 0
        self._counted = 0
        self._reported: float | None = None
        self._restarts = -1
        self._t = 0.0
        self._checked = -float("inf")
        self._reached = False
        self._ended = False

    def _tip(self) -> NDArray[np.float64]:
        return self._engine.endpoint(np.asarray(self._loop.skeleton.q, dtype=np.float64))

    def _distance(self) -> float | None:
        target = self._loop.followed_target()
        return None if target is None else float(np.linalg.norm(self._tip() - target))

    def controlled(self, t: float) -> list[Say]:
        """Note a controlled state at controller time ``t`` (s) whose command went out.

        Returns
        -------
        list[Say]
            The reach (once per time line) and the end of the task's time (once).
        """
        self.commands += 1
        if self._loop.restarts != self._restarts:  # a new time line: the task starts over
            self._restarts = self._loop.restarts
            self._reached = self._ended = False
            self._checked = -float("inf")
        self._t = t
        task = self._loop.task
        said = []
        tolerance = task.tolerance
        if not self._reached and tolerance is not None and t - self._checked >= REACH_CHECK:
            self._checked = t
            distance = self._distance()
            if distance is not None and distance <= tolerance:
                self._reached = True
                said.append(Say(INFO, f"target reached at t={t:.3f} s: the tip is {distance:.4f} m from it"))
        if not self._ended and t >= task.duration:
            self._ended = True
            distance = self._distance()
            where = "" if distance is None else f"; the tip is {distance:.4f} m from the target"
            within = "" if distance is None or tolerance is None else f" (tolerance {tolerance:g} m)"
            said.append(Say(INFO, f"the task's time ({task.duration:g} s) ended at t={t:.3f} s{where}{within}"))
        return said

    def summary(self) -> str:
        """One sentence on the whole run: the commands sent and, after the last, the tip and the target."""
        if not self.commands:
            return "sent no command (no joint state arrived)"
        x, y = self._tip().tolist()
        text = f"sent {self.commands} commands, the last at t={self._t:.3f} s: tip ({x:.3f}, {y:.3f})"
        distance = self._distance()
        return text if distance is None else f"{text}, {distance:.4f} m from the target"

    def report(self, now: float) -> list[Say]:
        """Return the status line when :attr:`period` wall seconds passed since the last one (``now`` in s)."""
        if self._reported is None:
            self._reported, self._counted = now, self.commands
            return []
        elapsed = now - self._reported
        if elapsed < self.period or self.commands == self._counted:
            return []
        rate = (self.commands - self._counted) / elapsed
        self._reported, self._counted = now, self.commands
        x, y = self._tip().tolist()
        text = f"t={self._t:.3f} s: tip ({x:.3f}, {y:.3f})"
        distance = self._distance()
        if distance is not None:
            target = self._loop.followed_target()
            assert target is not None  # a distance needs one
            text += f", {distance:.4f} m from the target ({target[0]:.3f}, {target[1]:.3f})"
        return [Say(INFO, f"{text}; {rate:.0f} commands/s")]
