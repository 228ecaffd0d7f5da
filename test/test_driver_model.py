"""The arm's driver as the simulator plays it: analytic answers for its ticks, delay, lag, limit and noise."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from skelarm_ros.sim.driver_model import DriverModel
from skelarm_ros.sim.scenario import ScenarioError, arm_from_config, load_arm
from skelarm_ros.sim.simulation import Simulation

LINK = {"length": 0.5, "mass": 1.0, "inertia": 0.02, "com": [0.25, 0.0], "limits": [-170.0, 170.0]}
ROBOT = {
    "skeleton": {"base_length": 0.0, "link": [dict(LINK), dict(LINK)]},
    "initial": {"q": [10.0, 20.0]},
    "simulator": {"dt": 0.001},
}


def arm(driver: dict | None = None, dt: float = 0.001, **second_link):
    """A two-link arm in the horizontal plane with a 1 ms step, and the [driver] table given."""
    config = copy.deepcopy(ROBOT)
    config["simulator"]["dt"] = dt
    config["skeleton"]["link"][1].update(second_link)
    if driver is not None:
        config["driver"] = driver
    return arm_from_config(config, "scenario file 'arm.toml'")


def model(driver: dict, dt: float = 0.001, effort_limit=None) -> DriverModel:
    spec = arm(driver, dt).driver
    return DriverModel(spec, 2, dt, None if effort_limit is None else np.asarray(effort_limit, dtype=float))


def efforts(sim: Simulation, commands: list[list[float]]) -> list[list[float]]:
    """Drive the simulation as lockstep does (each command answering a tick's state); the published efforts."""
    out = []
    for command in commands:
        assert sim.advance(np.array(command, dtype=float))
        out.append(sim.published_state()[2])
    return out


# -- the torque: lag, saturation -----------------------------------------------------------------------


def test_the_torque_lag_reaches_63_2_percent_of_a_step_after_its_time_constant():
    lag = 0.02
    sim = Simulation(arm({"torque_lag": lag}), driver=True)
    published = efforts(sim, [[1.0, -2.0]] * 60)
    at = round(lag / sim.dt)  # the state 20 steps after the command acts
    np.testing.assert_allclose(published[at - 1], [1.0 - math.exp(-1.0), -2.0 * (1.0 - math.exp(-1.0))], rtol=1e-12)
    assert published[at - 1][0] == pytest.approx(0.632, abs=5e-4)
    for k, row in enumerate(published, start=1):  # a first-order lag sampled every step: 1 - exp(-t / lag)
        assert row[0] == pytest.approx(1.0 - math.exp(-k * sim.dt / lag), rel=1e-12)


def test_the_links_effort_limit_saturates_the_applied_torque_with_or_without_a_driver():
    for driver in (True, False):
        sim = Simulation(arm(None, effort_limit=2.0), driver=driver)
        assert efforts(sim, [[5.0, -5.0], [1.0, -3.0]]) == [[5.0, -2.0], [1.0, -2.0]]
        np.testing.assert_array_equal(sim.effort, [1.0, -2.0])  # the torque the arm got
    lagged = Simulation(arm({"torque_lag": 0.005}, effort_limit=2.0), driver=True)
    assert max(abs(row[1]) for row in efforts(lagged, [[0.0, -5.0]] * 50)) == 2.0


def test_the_effort_bias_shifts_only_the_published_effort():
    plain = Simulation(arm({}), driver=True)
    biased = Simulation(arm({"effort_bias": [0.5, -0.25]}), driver=True)
    for command in ([1.0, 1.0], [0.5, -1.0], [2.0, 0.0]):
        plain.advance(np.array(command))
        biased.advance(np.array(command))
        np.testing.assert_array_equal(biased.engine.q, plain.engine.q)
        np.testing.assert_array_equal(biased.effort, plain.effort)
        np.testing.assert_allclose(biased.published_state()[2], np.add(command, [0.5, -0.25]), rtol=1e-15)


# -- ticks and the command delay ---------------------------------------------------------------------------


def test_states_are_published_at_the_drivers_ticks_with_the_arm_integrated_at_dt_between():
    sim = Simulation(arm({"rate": 250}), driver=True)  # 4 ms ticks of four 1 ms steps
    reference = Simulation(arm(None))
    assert sim.tick_period == pytest.approx(0.004) and reference.tick_period == 0.001
    for k in range(1, 6):
        command = np.array([0.1 * k, -0.2])
        assert sim.advance(command)
        for _ in range(4):  # the driver holds the command over its tick
            reference.advance(command)
        assert sim.steps == 4 * k
        assert sim.stamp_ns() == 4_000_000 * k
        np.testing.assert_array_equal(sim.engine.q, reference.engine.q)
        assert sim.published_state()[0] == reference.engine.q_list


@pytest.mark.parametrize(
    ("delay", "from_tick", "between_ticks"),
    [(0.0, 0, 4), (0.001, 4, 4), (0.003, 4, 4), (0.004, 4, 8), (0.0041, 8, 8), (0.008, 8, 12), (0.0081, 12, 12)],
)
def test_a_command_acts_from_the_first_tick_at_or_after_its_arrival_plus_the_delay(delay, from_tick, between_ticks):
    driver = model({"rate": 250, "command_delay": delay})  # ticks every 4 steps of 1 ms
    assert driver.acts_from(0) == from_tick  # taken at the tick at 0 ms
    assert driver.acts_from(4) == from_tick + 4
    assert driver.acts_from(1) == between_ticks  # taken 1 ms after it
    driver.take(np.array([1.0, 2.0]), 0)
    applied = [driver.torque(step).tolist() for step in range(16)]
    assert applied == [[0.0, 0.0]] * from_tick + [[1.0, 2.0]] * (16 - from_tick)


def test_lockstep_commands_a_tick_late_reach_the_arm_one_tick_later():
    sim = Simulation(arm({"rate": 500, "command_delay": 0.002}), driver=True)  # delay = one 2 ms tick
    commands = [[float(k), -float(k)] for k in range(1, 8)]
    published = efforts(sim, commands)
    assert published[0] == [0.0, 0.0]  # the first tick holds nothing yet
    assert published[1:] == commands[:-1]


def test_realtime_commands_taken_between_ticks_act_from_a_tick():
    sim = Simulation(arm({"rate": 250, "command_delay": 0.003}), driver=True)
    sim.hold_command(np.array([1.0, 1.0]))  # arrives with the state at 0: acts from the tick at 4 ms
    assert sim.advance() and sim.published_state()[2] == [0.0, 0.0]
    assert sim.advance() and sim.published_state()[2] == [1.0, 1.0]
    sim.hold_command(np.array([3.0, 3.0]))
    assert sim.advance(live=False) and sim.published_state()[2] == [0.0, 0.0]  # the watchdog's zero
    assert sim.advance() and sim.published_state()[2] == [3.0, 3.0]


def test_a_rate_that_is_not_a_whole_number_of_steps_is_refused_with_the_rates_that_are():
    with pytest.raises(ScenarioError, match=r"\[driver\].rate 300 Hz is not a whole number of integration steps"):
        arm({"rate": 300})
    with pytest.raises(ValueError, match=r"dt=0.003 s \(a tick every 1.333 steps\); .* \(333.333, 166.667, 111.111"):
        Simulation(arm({"rate": 250}), dt=0.003, driver=True)


# -- what it publishes ----------------------------------------------------------------------------------------


def test_published_positions_are_on_whole_encoder_ticks():
    ticks = [4096, 1000]
    sim = Simulation(arm({"encoder_ticks": ticks}), driver=True)
    steps = 2.0 * math.pi / np.array(ticks)
    for _ in range(50):
        sim.advance(np.array([3.0, -1.0]))
        published = np.array(sim.published_state()[0])
        counts = published / steps
        np.testing.assert_allclose(counts, np.round(counts), rtol=0.0, atol=1e-9)
        assert np.all(np.abs(published - sim.engine.q) <= steps / 2.0 + 1e-15)
        assert sim.published_state()[1] == sim.engine.dq_list  # velocities are not quantised


def test_the_noise_has_the_standard_deviations_of_the_driver_table():
    sigma = {"position_noise": [1e-3, 2e-3], "velocity_noise": 0.02, "effort_noise": [0.05, 0.5]}
    driver = model({**sigma, "seed": 3})
    state = np.array([0.3, -0.7])
    samples = np.array([driver.observe(state, state, state) for _ in range(20000)])  # (draws, 3, joints)
    expected = np.array([[1e-3, 2e-3], [0.02, 0.02], [0.05, 0.5]])
    np.testing.assert_allclose(samples.std(axis=0), expected, rtol=0.05)
    np.testing.assert_allclose(samples.mean(axis=0), np.broadcast_to(state, (3, 2)), atol=0.05 * expected.max())


def test_the_same_seed_gives_the_same_noise_and_another_seed_other_noise():
    def published(seed: int) -> list:
        sim = Simulation(arm({"rate": 500, "position_noise": 1e-3, "velocity_noise": 0.01, "seed": seed}), driver=True)
        return [sim.published_state()] + [
            (sim.advance(np.array([1.0, 0.0])), sim.published_state())[1] for _ in range(20)
        ]

    assert published(1) == published(1)
    other = published(2)
    assert all(a[0] != b[0] for a, b in zip(published(1), other, strict=True))


def test_a_reset_starts_the_driver_and_its_noise_afresh():
    sim = Simulation(arm({"rate": 500, "command_delay": 0.002, "velocity_noise": 0.01, "seed": 5}), driver=True)
    first = [sim.published_state()] + [(sim.advance(np.array([1.0, 1.0])), sim.published_state())[1] for _ in range(5)]
    sim.reset()
    again = [sim.published_state()] + [(sim.advance(np.array([1.0, 1.0])), sim.published_state())[1] for _ in range(5)]
    assert again == first


# -- without a driver: as before -----------------------------------------------------------------------------


def test_a_driver_that_adds_nothing_steps_bit_for_bit_as_the_simulator_without_one():
    commands = [np.array([math.sin(k), math.cos(0.3 * k)]) for k in range(200)]
    runs = {}
    for name, setup, driver in (
        ("none", arm(None), False),
        ("no table", arm(None), True),
        ("empty table", arm({}), True),
        ("table not played", arm({"rate": 250, "velocity_noise": 0.1}), False),
    ):
        sim = Simulation(setup, driver=driver)
        rows = [sim.published_state()]
        for command in commands:
            sim.advance(command)
            rows.append(sim.published_state())
        runs[name] = rows
    assert runs["no table"] == runs["none"]
    assert runs["empty table"] == runs["none"]
    assert runs["table not played"] == runs["none"]


def test_the_bundled_scenarios_have_no_driver_to_play():
    assert Simulation(load_arm("reach"), driver=True).driver is None
