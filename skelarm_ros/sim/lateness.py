# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""How late a realtime run's steps came by the wall clock: each step's lateness against its deadline.

A realtime simulator steps on a steady timer: step ``k`` of a time line is due at
``first + k * period``. Its lateness is the wall-clock time from then until its state
went out; the step is on time when that is less than one period (its state went out
before the next step was due). A step the timer skipped (it came so late that a whole
period passed without one) is counted as late with the lateness it would have had.
:class:`StepLateness` keeps the figures; :meth:`StepLateness.text` says them in one
sentence, which :data:`LATENESS_LINE` reads back (``bench loop``).

This module does not import rclpy.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

LATENESS_LINE = re.compile(
    r"step lateness: (?P<on_time>\d+) of (?P<total>\d+) steps on time \((?P<share>[0-9.]+)%\) "
    r"by the wall clock; p99 (?P<p99>[0-9.]+) ms, max (?P<max>[0-9.]+) ms"
)
"""What :meth:`StepLateness.text` says, read back by ``bench loop``."""


@dataclass
class StepLateness:
    """The wall-clock lateness of a realtime run's steps (see the module's docstring).

    Parameters
    ----------
    period : float
        Wall seconds between two steps (``dt / real_time_factor``).

    Attributes
    ----------
    late_ms : list[float]
        Each counted step's lateness in milliseconds, skipped steps included.
    """

    period: float
    late_ms: list[float] = field(default_factory=list)
    _first: float | None = None
    _next: int = 0

    def restart(self) -> None:
        """Start a new time line: the next step is the first one, due when it comes (after a pause or reset)."""
        self._first = None

    def stepped(self, due: float, done: float) -> None:
        """Count a step that was due at ``due`` and whose state went out at ``done`` (steady seconds).

        ``due`` is when the timer was set to fire; steps between the last one counted
        and this one that never came (the timer skipped them) count as late.
        """
        if self._first is None:
            self._first, self._next = due, 0
        index = round((due - self._first) / self.period)
        for skipped in range(self._next, index):  # due, never made: late by at least until this one went out
            self.late_ms.append((done - (self._first + skipped * self.period)) * 1e3)
        self.late_ms.append((done - due) * 1e3)
        self._next = max(self._next, index + 1)

    @property
    def total(self) -> int:
        """Steps counted."""
        return len(self.late_ms)

    @property
    def on_time(self) -> int:
        """Steps whose state went out less than one period after they were due."""
        return int(np.count_nonzero(np.asarray(self.late_ms) < self.period * 1e3))

    def percentile(self, share: float) -> float:
        """Return the lateness (ms) below which ``share`` percent of the steps came; NaN before any step."""
        return float(np.percentile(self.late_ms, share)) if self.late_ms else math.nan

    def text(self) -> str:
        """One sentence: ``step lateness: 4995 of 5000 steps on time (99.90%) by the wall clock; p99 0.210 ms, ...``."""
        total = self.total
        share = 100.0 * self.on_time / total if total else 0.0
        worst = max(self.late_ms) if self.late_ms else math.nan
        return (
            f"step lateness: {self.on_time} of {total} steps on time ({share:.2f}%) by the wall clock; "
            f"p99 {self.percentile(99.0):.3f} ms, max {worst:.3f} ms (on time: out within one period, "
            f"{self.period * 1e3:g} ms, of when it was due)"
        )
