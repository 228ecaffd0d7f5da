"""What skelarm-ros tune searches and how it judges a run: the table of tunable gains and the score."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import skelarm

from skelarm_ros.sim.driver import DriverSpec
from skelarm_ros.sim.scenario import load_arm
from skelarm_ros.tuning.objective import HOLD_GROWTH, STOPPED_FLOOR, STOPPED_VALUE, Trace, score, worst
from skelarm_ros.tuning.samples import delays
from skelarm_ros.tuning.space import (
    SKELARM_DEFAULTS,
    TUNABLE,
    TuningError,
    gains_of,
    markdown_table,
    search_space,
    with_gains,
)

SCALE = 0.5  # an arm's damping scale (N*m*s/rad)
# How each tuned key reads back from the controller skelarm builds (an attribute, or one derived from them).
_READ_BACK = {"zeta1": lambda c: c.d_task / c.k0}


@pytest.mark.parametrize("kind", sorted(TUNABLE))
def test_the_defaults_are_skelarms_own(kind):
    """skelarm's builders give these values to a [controller] that leaves the keys out (if this fails, a
    skelarm release changed a default: update SKELARM_DEFAULTS)."""
    arm = load_arm("reach")
    task = skelarm.Task.from_dict({"type": "reaching", "target": [0.3, 0.4], "duration": 1.0})
    built = skelarm.build_controller({"type": kind}, skeleton=arm.skeleton, task=task, dt=0.002)
    for key, default in SKELARM_DEFAULTS[kind].items():
        value = _READ_BACK[key](built) if key in _READ_BACK else getattr(built, key)
        assert np.all(np.asarray(value) == pytest.approx(default)), key
    assert [gain.key for gain in TUNABLE[kind]] == list(SKELARM_DEFAULTS[kind])


def test_a_scenario_gain_is_searched_around_its_own_value_and_the_first_trial_keeps_it():
    dimensions = search_space({"type": "time_varying_stiffness", "k0": 300.0, "zeta1": 0.3}, SCALE)
    assert [d.name for d in dimensions] == ["k0_scale", "alpha_scale", "zeta1", "c_joint"]
    start = {d.name: d.start() for d in dimensions}
    assert gains_of(dimensions, start) == {"k0": 300.0, "alpha": 6.0, "zeta1": 0.3, "c_joint": 0.0}
    twice = gains_of(dimensions, {**start, "k0_scale": 2.0})
    assert twice["k0"] == 600.0
    table = with_gains({"type": "time_varying_stiffness", "k0": 300.0}, twice)
    assert table["type"] == "time_varying_stiffness" and table["k0"] == 600.0


def test_a_per_joint_gain_keeps_its_shape():
    (kp, _) = search_space({"type": "computed_torque", "kp": [400.0, 100.0]}, SCALE)
    assert kp.apply(0.5) == [200.0, 50.0]


@pytest.mark.parametrize(
    ("table", "sentence"),
    [
        ({"type": "mpc"}, "controller type 'mpc' has no tunable gains declared, so skelarm-ros tune cannot search"),
        ({"type": "joint_pd", "kp": "stiff"}, "[controller].kp is 'stiff'; give a number (or one number per joint)"),
        ({"type": "virtual_spring_damper", "c_joint": [1.0, 2.0]}, "[controller].c_joint is a list [1.0, 2.0]; give"),
    ],
)
def test_what_cannot_be_tuned_is_refused_in_one_sentence(table, sentence):
    with pytest.raises(TuningError) as refused:
        search_space(table, SCALE)
    assert sentence in str(refused.value)


def _trace(error, *, task_end=1.0, demand=1.0, speed=0.5, dt=0.01, stopped="", stopped_at=math.inf):
    time = np.arange(len(error)) * dt
    return Trace(
        time,
        np.asarray(error, dtype=float),
        np.full((len(error), 2), demand),
        np.full((len(error), 2), speed),
        task_end,
        stopped,
        stopped_at,
    )


LIMITS = (np.array([10.0, np.inf]), np.array([1.0, np.inf]))


def test_a_run_at_the_tolerance_all_along_scores_one_for_itae_and_final_error_and_settles_at_once():
    run = score(_trace(np.full(301, 0.02)), 0.02, *LIMITS)
    assert run.itae / (0.02 * 3.0**2 / 2.0) == pytest.approx(1.0)
    assert run.final_error == pytest.approx(0.02)
    assert run.overshoot == 0.0 and run.settling_time == 0.0
    assert run.value == pytest.approx(2.0)
    assert run.feasible


def test_a_reach_that_overshoots_and_settles_late_scores_worse_than_one_that_does_not():
    t = np.arange(301) * 0.01
    smooth = 0.3 * np.exp(-4.0 * t)
    ringing = 0.3 * np.exp(-1.5 * t) * np.abs(np.cos(6.0 * t))
    a, b = score(_trace(smooth), 0.02, *LIMITS), score(_trace(ringing), 0.02, *LIMITS)
    assert b.overshoot > 0.0 and a.overshoot == 0.0
    assert b.settling_time > a.settling_time
    assert b.value > a.value


def test_the_constraints_name_a_demand_over_the_limit_a_joint_too_fast_and_a_growing_hold():
    assert score(_trace(np.full(301, 0.01), demand=12.0), 0.02, *LIMITS).effort == pytest.approx(0.2)
    assert score(_trace(np.full(301, 0.01), speed=1.5), 0.02, *LIMITS).speed == pytest.approx(0.5)
    t = np.arange(301) * 0.01
    growing = 0.01 + 0.005 * np.exp(1.5 * (t - 1.0)) * np.sin(40.0 * t) * (t >= 1.0)
    run = score(_trace(growing), 0.02, *LIMITS)
    assert run.hold > 0.0 and not run.feasible
    assert "hold" in run.text()
    settled = 0.01 + 1e-4 * np.sin(40.0 * t)  # a swing under the floor: noise, not an oscillation
    assert score(_trace(settled), 0.02, *LIMITS).hold == pytest.approx(1.0 - HOLD_GROWTH)


def test_an_arm_stopped_is_infeasible_by_the_share_of_its_run_left_and_a_run_cut_short_or_non_finite_scores_worst():
    """The later a run is stopped, the less infeasible (the search is led towards stable gains), never feasible."""
    why = "j1 at 4 rad/s over its 3 rad/s limit"
    stopped = score(_trace(np.full(301, 0.01), stopped=why, stopped_at=1.5), 0.02, *LIMITS)
    assert stopped.stopped == pytest.approx(0.5) and not stopped.feasible and "stopped +0.5" in stopped.text()
    later = score(_trace(np.full(301, 0.01), stopped=why, stopped_at=2.4), 0.02, *LIMITS)
    at_the_end = score(_trace(np.full(301, 0.01), stopped=why, stopped_at=3.0), 0.02, *LIMITS)
    assert later.stopped == pytest.approx(0.2) and at_the_end.stopped == STOPPED_FLOOR and not at_the_end.feasible
    nan = score(_trace(np.r_[np.full(300, 0.01), math.nan]), 0.02, *LIMITS)
    short = score(_trace(np.full(101, 0.01), stopped="the arm's state became non-finite"), 0.02, *LIMITS)
    assert nan.stopped == 1.0 and short.stopped == pytest.approx(2.0 / 3.0)  # cut short at 1 s of 3
    for run in (nan, short):
        assert run.value == STOPPED_VALUE and not run.feasible


def test_a_run_without_its_hold_is_refused():
    with pytest.raises(ValueError, match=r"score runs with a hold of 2\.0 s"):
        score(_trace(np.full(201, 0.01), task_end=1.5), 0.02, *LIMITS)


def test_a_candidate_is_as_good_as_its_worst_run():
    good = score(_trace(np.full(301, 0.005)), 0.02, *LIMITS)
    bad = score(_trace(np.full(301, 0.01), speed=2.0), 0.02, *LIMITS)
    both = worst([good, bad])
    assert both.value == bad.value and both.speed == bad.speed and both.effort == max(good.effort, bad.effort)


def test_the_docs_table_of_tunable_keys_is_the_declared_one():
    page = (Path(__file__).resolve().parents[1] / "docs" / "tuning.md").read_text(encoding="utf-8")
    assert markdown_table() in page, "docs/tuning.md's table differs: paste skelarm_ros.tuning.space.markdown_table()"


@pytest.mark.parametrize(
    ("command_delay", "expected"),
    [
        (0.004, [0.0, 0.004, 0.008, 0.012]),  # a tick late in lockstep; on the arm two, three when an answer is late
        (0.006, [0.0, 0.004, 0.006, 0.012]),  # 6 ms acts two ticks after its state in lockstep and on the arm alike
        (0.0, [0.0, 0.004, 0.008]),
        (0.001, [0.0, 0.001, 0.008]),
    ],
)
def test_the_robust_delays_are_every_one_that_acts_differently_to_two_ticks_past_the_drivers(command_delay, expected):
    driver = DriverSpec(num_joints=3, rate=250.0, command_delay=command_delay)
    assert delays(driver, 0.002) == pytest.approx(expected)
    assert delays(None, 0.002) == [0.0]
