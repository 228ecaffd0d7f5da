"""The in-process twin run: lockstep's stepping without its transport, and what it predicts of an arm on another engine.

The arm the predictions are held to is simulated by MuJoCo (test/geared_arm.py) behind a
driver of this test's own: its commands act a fixed delay after the state they answer, at
MuJoCo's own 0.5 ms steps.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import skelarm
from geared_arm import reach_behind_driver, tip_errors

from skelarm_ros.cli.predict import controller_params, predict
from skelarm_ros.control.loop import build_control_loop
from skelarm_ros.control.twin_run import run_twin
from skelarm_ros.sim.scenario import load_arm, load_scenario, resolve_scenario

LINKS = ((0.3, 1.2, 0.01), (0.25, 0.6, 0.004), (0.1, 0.15, 0.0003))  # length m, mass kg, inertia kg*m^2: a light wrist
THREE_LINKS = (
    "[skeleton]\n"
    + "".join(
        f"[[skeleton.link]]\nlength = {length}\nmass = {mass}\ninertia = {inertia}\ncom = [{length / 2}, 0.0]\n"
        "limits = [-170.0, 170.0]\n"
        for length, mass, inertia in LINKS
    )
    + """
[initial]
q = [20.0, 40.0, 30.0]
[task]
type = "reaching"
target = { pos = [0.1, 0.45], tolerance = 0.01 }
duration = 2.0
[simulator]
dt = 0.002
[controller]
type = "time_varying_stiffness"
k0 = 150.0
alpha = 6.0
zeta1 = 0.2
"""
)
"""A three-link arm with a light wrist, its time-varying stiffness reach damped at the edge of a 250 Hz loop."""
REACH = 2.0  # s of each reach


def write(folder: Path, name: str, text: str, driver: str = "") -> Path:
    path = folder / f"{name}.toml"
    path.write_text(text + (f"\n[driver]\n{driver}\n" if driver else ""), encoding="utf-8")
    return path


# -- the stepping -------------------------------------------------------------------------------------------


def test_the_sims_in_process_run_equals_the_offline_skelarm_run():
    """hardware:=sim in lockstep is skelarm's own run; so is its in-process run, state by state."""
    duration = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = skelarm.run_scenario(load_scenario("reach_four_dof_robot"), duration=duration)
    run = predict({"scenario": "reach_four_dof_robot", "hardware": "sim"}, duration)
    assert not run.stopped
    np.testing.assert_allclose(run.times, reference.times, rtol=0.0, atol=1e-9)
    np.testing.assert_allclose(run.position, reference.channel("q"), rtol=0.0, atol=1e-9)
    np.testing.assert_allclose(run.velocity, reference.channel("dq"), rtol=0.0, atol=1e-9)
    np.testing.assert_allclose(run.command, reference.channel("tau"), rtol=0.0, atol=1e-9)
    np.testing.assert_array_equal(run.arm_position, run.position)  # no driver: published as the arm is


def test_without_a_driver_table_the_twin_differs_from_the_sim_only_by_the_live_arms_settings():
    sim = predict({"scenario": "reach", "hardware": "sim"}, 0.5)
    twin = predict({"scenario": "reach"}, 0.5)
    assert controller_params({"scenario": "reach"}).soft_start == 1.0
    loop, _ = build_control_loop("reach", soft_start=1.0, live_arm=True)
    by_hand = run_twin(load_arm("reach"), loop, 0.5)
    np.testing.assert_array_equal(twin.position, by_hand.position)
    np.testing.assert_array_equal(twin.command, by_hand.command)
    assert not np.array_equal(twin.command, sim.command)  # the soft start


def test_the_twin_run_is_the_same_for_the_same_seed_and_noisier_for_another(tmp_path):
    text = resolve_scenario("reach").read_text(encoding="utf-8")
    driver = "rate = 250\ncommand_delay = 0.004\nposition_noise = 1e-4\nvelocity_noise = 0.01\nseed = {}"
    runs = [
        predict({"scenario": str(write(tmp_path, f"s{seed}", text, driver.format(seed)))}, 0.3) for seed in (1, 1, 2)
    ]
    np.testing.assert_array_equal(runs[0].position, runs[1].position)
    np.testing.assert_array_equal(runs[0].command, runs[1].command)
    assert np.all(runs[0].velocity[1:] != runs[2].velocity[1:])
    assert runs[0].stamps[1] == 4_000_000  # a state a tick


@pytest.mark.parametrize(
    ("torque", "stopped", "rows"),
    [(math.nan, "the controller gave no command for the state stamped 0 ns", 1), (1e308, "non-finite", 1)],
)
def test_the_twin_run_stops_where_the_controller_gives_no_command_or_the_arm_blows_up(torque, stopped, rows):
    loop, _ = build_control_loop("reach")
    loop.controller.control = lambda t, skeleton: np.full(2, torque)  # type: ignore[method-assign]
    run = run_twin(load_arm("reach"), loop, 0.1)
    assert stopped in run.stopped
    assert len(run.stamps) == rows


# -- what it predicts: an arm on another engine ------------------------------------------------------------


@pytest.mark.parametrize(
    ("driver", "period", "delay", "holds"),
    [
        ("rate = 250\ncommand_delay = 0.004", 0.004, 0.004, False),  # its commands a tick late
        ("rate = 500", 0.002, 0.0, True),
        ("rate = 250", 0.004, 0.0, True),
    ],
    ids=["250 Hz, a tick late", "500 Hz", "250 Hz, on time"],
)
def test_a_reach_that_goes_unstable_a_tick_late_is_predicted_unstable_and_holds_on_time(
    tmp_path, driver, period, delay, holds
):
    path = write(tmp_path, "three_links", THREE_LINKS, driver)
    run = predict({"scenario": str(path)}, REACH)
    predicted = tip_errors(path, run.arm_position)
    truth, unstable_steps = reach_behind_driver(path, period, delay)
    tolerance = 0.01
    if holds:
        assert predicted[-1] < tolerance and truth[-1] < tolerance, (predicted[-1], truth[-1])
        assert unstable_steps == 0
        assert run.stopped == ""
    else:
        # The arm thrashes: far from the target, not settling (MuJoCo's gives up and resets the arm).
        assert predicted[-1] > 10 * tolerance and predicted[-len(predicted) // 4 :].mean() > 10 * tolerance
        assert unstable_steps > 0 or truth[-1] > 10 * tolerance
