"""``skelarm-ros demo``: the push it writes, its summary, and (slow) a whole run into a temporary folder."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from skelarm_ros.cli.demo import PUSH_FORCE, PUSH_LENGTH, PUSH_START, DemoPaths, RunSummary, write_push


def test_push_is_a_recorded_force_of_the_given_impulse(tmp_path: Path) -> None:
    record = write_push(tmp_path / "push.csv", end=3.0)
    assert record.start == 0.0 and record.end == 3.0
    np.testing.assert_allclose(record.at(PUSH_START + PUSH_LENGTH / 2), PUSH_FORCE)
    np.testing.assert_allclose(record.at(PUSH_START + PUSH_LENGTH), (0.0, 0.0))
    np.testing.assert_allclose(record.impulse(), np.array(PUSH_FORCE) * PUSH_LENGTH)


def test_push_outside_the_run_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="inside"):
        write_push(tmp_path / "push.csv", end=PUSH_START)


def test_summary_reports_the_error_against_the_tolerance() -> None:
    summary = RunSummary(
        steps=1500,
        simulated=3.0,
        wall=2.0,
        final_tip=np.array([0.56, 1.21]),
        target=np.array([0.55, 1.21]),
        tolerance=0.02,
        peak_force=5.0,
        peak_time=0.8,
        impulse=1.0,
        masked={"q": 0},
    )
    assert summary.reach_error == pytest.approx(0.01)
    assert summary.reached is True
    assert summary.real_time_factor == pytest.approx(1.5)
    text = summary.text()
    assert "10.00 mm, within the tolerance of 20.0 mm" in text
    assert "1500" in text and "5.00 N" in text


@pytest.mark.slow
def test_demo_runs_records_converts_and_plots(tmp_path: Path) -> None:
    from skelarm_ros.cli.demo import run_demo
    from skelarm_ros.cli.plot import load_log

    output = tmp_path / "out"
    summary = run_demo(output, duration=1.5, timeout=180.0)
    paths = DemoPaths(output.resolve())
    for path in (paths.push, paths.log, paths.picture, paths.graph_output):
        assert path.is_file(), path
    assert (paths.bag / "metadata.yaml").is_file()
    log = load_log(paths.log)
    assert len(log.times) == summary.steps + 1
    assert summary.steps == round(1.5 / 0.002)
    assert not any(summary.masked.values()), summary.masked
    assert math.isfinite(summary.reach_error)
    assert summary.reached is not None  # reported against the tolerance
    assert summary.peak_force == pytest.approx(math.hypot(*PUSH_FORCE))
    assert summary.real_time_factor > 0.0
