"""The wall-clock lateness of realtime steps (skelarm_ros.sim.lateness), with the times handed in."""

from __future__ import annotations

import math

import pytest

from skelarm_ros.sim.lateness import LATENESS_LINE, StepLateness


def test_steps_out_within_one_period_are_on_time_and_the_line_reads_back():
    lateness = StepLateness(0.001)
    for step, late in enumerate([0.0001, 0.0002, 0.0015, 0.0003]):
        due = 10.0 + step * 0.001
        lateness.stepped(due, due + late)
    assert lateness.total == 4 and lateness.on_time == 3
    assert max(lateness.late_ms) == pytest.approx(1.5)
    found = LATENESS_LINE.search(lateness.text())
    assert found is not None
    assert (int(found["on_time"]), int(found["total"]), float(found["share"])) == (3, 4, 75.0)
    assert float(found["max"]) == pytest.approx(1.5)


def test_steps_the_timer_skipped_count_late_and_a_restart_starts_a_new_grid():
    lateness = StepLateness(0.001)
    lateness.stepped(5.0, 5.0001)
    lateness.stepped(5.004, 5.0041)  # steps 1, 2 and 3 never came: late until step 4 went out
    assert lateness.total == 5 and lateness.on_time == 2
    assert lateness.late_ms[1:4] == pytest.approx([3.1, 2.1, 1.1])
    lateness.restart()
    lateness.stepped(7.0005, 7.0006)  # after a pause: the first step of a new time line, not 2,000 skipped
    assert lateness.total == 6 and lateness.on_time == 3


def test_no_step_gives_nan_figures():
    lateness = StepLateness(0.002)
    assert lateness.total == 0 and math.isnan(lateness.percentile(99.0))
    assert "0 of 0 steps" in lateness.text()
