# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The ``force_replay`` node's parameters (docs/force_replay.md's table is made from them).

This module does not import rclpy.
"""

from dataclasses import dataclass
from typing import Annotated, ClassVar

from skelarm_ros.bags.forces import HOLD, MODES
from skelarm_ros.interface import TIP_WRENCH
from skelarm_ros.nodes.params.fields import choice, number, param, readers

CLOCK_TIMING = "clock"
TIMER_TIMING = "timer"
TIMINGS = (CLOCK_TIMING, TIMER_TIMING)


@dataclass(frozen=True)
class ForceReplayParams:
    """The force replay's parameters, all read-only."""

    retired: ClassVar[dict[str, str]] = {
        "min_subscribers": "name the tip_wrench readers in wrench_readers",
        "recorder_node": "name the recorder in wrench_readers",
    }

    source: Annotated[
        str,
        param(
            "recorded tip force: a .sklog.npz log (ext_force), a .csv or a bag",
            details="Required; see [Sources](#sources-source).",
        ),
    ] = ""
    topic: Annotated[str, param("the WrenchStamped topic to read from a bag")] = TIP_WRENCH
    time_offset: Annotated[
        float,
        param("seconds added to the record's times before playing (s)", details="The record starts that much later."),
    ] = 0.0
    mode: Annotated[
        str,
        choice(
            MODES,
            "hold: the record's value at each step's time; stepped: the mean over the step",
            details="The step is `[t, t+dt)`.",
        ),
    ] = HOLD
    timing: Annotated[
        str,
        choice(
            TIMINGS,
            "clock: one wrench per new /clock time, stamped with it; timer: own timer at the step",
            details="See [Timing](#timing).",
        ),
    ] = CLOCK_TIMING
    dt: Annotated[
        float, number("the step; 0 takes the scenario's", zero=True, details="`stepped` and `timer` need a step.")
    ] = 0.0
    scenario: Annotated[
        str,
        param("scenario whose step is used when dt is 0 (path or bundled name)", details="Empty: the bundled `reach`."),
    ] = ""
    wrench_readers: Annotated[
        tuple[str, ...],
        readers(
            "the nodes that read tip_wrench, waited for by name before the first wrench (held back in order); "
            "empty: none",
            details="As the simulator's `state_readers` ([simulator.md](simulator.md)). The launch names its "
            "simulator and its recorder, so a recording keeps every wrench.",
        ),
    ] = ()
