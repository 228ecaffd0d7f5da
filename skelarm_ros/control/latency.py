# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""How late the controller answers: each answer's latency against the driver's state period.

A driver takes the newest command at its ticks. An answer that comes later than the
next tick acts one period later than planned, and a loop tuned at the edge for one
period of lag can go unstable with two (docs/controller.md, "Loop latency").
:class:`LoopLatency` keeps each answer's latency (from the state's arrival in the
controller's callback to its command published) and the period of the states (from
their stamps), warns once when answers come later than half a period, and says its
figures in one sentence for the controller's summary. Times are handed in; nothing here
reads a clock.

This module does not import rclpy.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from skelarm_ros.interface import NANOSECONDS, WARNING, Say

LATE_SHARE = 0.5
"""An answer is late when its latency is more than this share of the state period."""
LATE_WINDOW = 250
"""The answers over which late ones are counted for the warning."""
LATE_ALLOWED = 0.01
"""The share of late answers over :data:`LATE_WINDOW` that is warned about (once)."""
PERIOD_WINDOW = 101
"""The stamp differences whose median is the state period."""
PERIOD_EVERY = 16  # states between two updates of the period (each of the first ones updates it)
_EDGES = 10.0 ** np.arange(-6.0, 1.0 + 1e-9, 0.01)  # s: latency histogram bins, 2.3 % wide, 1 us to 10 s


class LoopLatency:
    """The answers' latencies and the states' period (see the module).

    Parameters
    ----------
    warn : bool, optional
        Warn about late answers (on a live arm; beside the lockstep simulator, which waits for
        each answer, a late one costs nothing).

    Attributes
    ----------
    answers : int
        Answers counted.
    late : int
        Answers later than :data:`LATE_SHARE` of the state period known when they came.
    worst : float
        The longest latency (s), 0 before any answer.
    """

    def __init__(self, *, warn: bool = True) -> None:
        """Start with nothing seen."""
        self._warned = not warn
        self.answers = 0
        self.late = 0
        self.worst = 0.0
        self._counts = np.zeros(_EDGES.size + 1, dtype=np.int64)
        self._last_stamp: int | None = None
        self._stamps = 0
        self._steps: deque[int] = deque(maxlen=PERIOD_WINDOW)
        self._period = math.nan
        self._recent: deque[bool] = deque(maxlen=LATE_WINDOW)
        self._recent_late = 0

    @property
    def period(self) -> float:
        """The driver's state period (s): the median of the last stamp differences; NaN before two states."""
        return self._period

    def state(self, stamp_ns: int) -> None:
        """Take the stamp (ns) of a state that arrived (answered or not)."""
        last, self._last_stamp = self._last_stamp, stamp_ns
        if last is None or stamp_ns <= last:
            return
        self._steps.append(stamp_ns - last)
        self._stamps += 1
        if len(self._steps) <= PERIOD_EVERY or self._stamps % PERIOD_EVERY == 0:
            self._period = float(np.median(self._steps)) / NANOSECONDS

    def answered(self, arrived: float, sent: float) -> list[Say]:
        """Count an answer to a state that arrived at ``arrived`` and whose command went out at ``sent`` (s).

        Returns
        -------
        list[Say]
            One warning, the first time more than :data:`LATE_SHARE` of the period was
            taken by more than :data:`LATE_ALLOWED` of the last :data:`LATE_WINDOW` answers
            (never with ``warn`` false).
        """
        latency = max(sent - arrived, 0.0)
        self.answers += 1
        self.worst = max(self.worst, latency)
        self._counts[int(np.searchsorted(_EDGES, latency))] += 1
        late = latency > LATE_SHARE * self._period  # False while the period is unknown (NaN)
        self.late += late
        if len(self._recent) == LATE_WINDOW:
            self._recent_late -= self._recent[0]
        self._recent.append(late)
        self._recent_late += late
        if self._warned or len(self._recent) < LATE_WINDOW or self._recent_late <= LATE_ALLOWED * LATE_WINDOW:
            return []
        self._warned = True
        return [
            Say(
                WARNING,
                f"{self._recent_late} of the last {LATE_WINDOW} answers came later than half the driver's state "
                f"period ({self._period * 1e3:.2f} ms; the slowest so far took {self.worst * 1e3:.2f} ms): a command "
                "that misses the driver's next tick acts a period late, which can make a stable loop unstable "
                '(docs/controller.md, "Loop latency"); said once, the summary counts them',
            )
        ]

    def percentile(self, share: float) -> float:
        """Return the latency (s) under which ``share`` percent of the answers came (within 1.2 %); NaN before any."""
        if not self.answers:
            return math.nan
        index = int(np.searchsorted(np.cumsum(self._counts), share / 100.0 * self.answers))
        if index == 0 or index >= _EDGES.size:  # below 1 us, or over 10 s
            return self.worst if index else float(_EDGES[0])
        return min(math.sqrt(_EDGES[index - 1] * _EDGES[index]), self.worst)  # the bin's middle

    def text(self) -> str:
        """One sentence: the answers' latency (median, p99, worst), how many were late, the state period."""
        if not self.answers:
            return "answered no state"
        period = "unknown" if math.isnan(self._period) else f"{self._period * 1e3:.2f} ms"
        return (
            f"answers took {self.percentile(50.0) * 1e3:.2f} ms (median), {self.percentile(99.0) * 1e3:.2f} ms (p99), "
            f"{self.worst * 1e3:.2f} ms at most from a state's arrival to its command; {self.late} of "
            f"{self.answers} later than half the state period ({period})"
        )
