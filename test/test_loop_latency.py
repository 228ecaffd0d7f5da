"""The controller's answers timed against the driver's state period (skelarm_ros.control.latency)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from skelarm_ros.control.latency import LATE_WINDOW, LoopLatency
from skelarm_ros.interface import WARNING

PERIOD_NS = 4_000_000  # a 250 Hz driver


def answer_all(latency: LoopLatency, took: list[float], *, jitter: float = 0.0) -> list:
    """States every 4 ms (stamps with ``jitter`` s of noise), each answered after its entry of ``took`` (s)."""
    rng = np.random.default_rng(0)
    said = []
    for k, seconds in enumerate(took):
        latency.state(10**9 + k * PERIOD_NS + round(jitter * 1e9 * rng.standard_normal()))
        arrived = 5.0 + k * 0.004
        said += latency.answered(arrived, arrived + seconds)
    return said


def test_the_period_comes_from_the_stamps_and_the_figures_from_the_answers():
    latency = LoopLatency()
    assert math.isnan(latency.period) and latency.text() == "answered no state"
    took = [0.0004] * 990 + [0.0015] * 9 + [0.006]
    said = answer_all(latency, took, jitter=0.0002)
    assert said == []  # not one answer in a hundred late
    assert latency.period == pytest.approx(0.004, abs=5e-5)  # the median of the stamps' steps
    assert latency.answers == 1000 and latency.late == 1 and latency.worst == pytest.approx(0.006)
    assert abs(latency.percentile(50.0) - 0.0004) <= 0.012 * 0.0004
    assert abs(latency.percentile(99.0) - 0.0004) <= 0.012 * 0.0004
    assert latency.percentile(100.0) == pytest.approx(latency.worst, rel=0.012)
    assert latency.text().startswith("answers took 0.40 ms (median), 0.40 ms (p99), 6.00 ms at most")
    assert re.search(r"1 of 1000 later than half the state period \(4\.0\d ms\)$", latency.text())


def test_answers_later_than_half_a_period_are_warned_about_once():
    latency = LoopLatency()
    took = [0.0005] * 300 + [0.0005, 0.0005, 0.0025] * 100
    said = answer_all(latency, took)
    assert [item.level for item in said] == [WARNING]
    assert said[0].text.startswith("3 of the last 250 answers came later than half the driver's state period (4.00 ms")
    assert "acts a period late" in said[0].text
    assert latency.late == 100
    assert f"the last {LATE_WINDOW} answers" in said[0].text
