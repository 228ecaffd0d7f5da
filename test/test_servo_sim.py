"""The simulator's servo: a servo arm's position and velocity goals turned into torque, against analytic answers.

A position servo gives ``servo_kp (g - q) - servo_kd dq`` and a velocity servo ``servo_kv (g - dq)``
at every integration step, so a goal step's response is the continuous second-order (first-order)
one whatever the driver's rate: within 2 % of the analytic time constant at 100 Hz and at 1000 Hz
(gz_ros2_control's position interface, a P loop on velocity scaled by the update rate, is not).
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from skelarm_ros.sim.driver_model import DriverModel
from skelarm_ros.sim.scenario import ScenarioError, arm_from_config
from skelarm_ros.sim.simulation import Simulation

LINK = {"length": 0.5, "mass": 1.0, "inertia": 0.02, "com": [0.25, 0.0], "limits": [-170.0, 170.0]}
ONE = {"skeleton": {"base_length": 0.0, "link": [dict(LINK)]}, "initial": {"q": [0.0]}, "simulator": {"dt": 0.001}}
INERTIA = 0.02 + 1.0 * 0.25**2  # kg*m^2 about the joint
KP, KD = 8.0, 2.0  # N*m/rad, N*m*s/rad: overdamped (zeta 1.23), a 63 % rise in about 0.25 s
STEP = 0.2  # rad


def one_joint(driver: dict | None, dt: float = 0.001, effort_limit: float | None = None):
    config = copy.deepcopy(ONE)
    config["simulator"]["dt"] = dt
    if effort_limit is not None:
        config["skeleton"]["link"][0]["effort_limit"] = effort_limit
    if driver is not None:
        config["driver"] = driver
    return arm_from_config(config, "scenario file 'servo.toml'")


def position_servo(**more) -> dict:
    return {"interface": "position", "servo_kp": KP, "servo_kd": KD, **more}


def response(sim: Simulation, goal: float, seconds: float) -> tuple[np.ndarray, np.ndarray]:
    """Drive the simulation as lockstep does, the goal answering every tick's state; the published times and angles."""
    times, angles = [sim.t], [sim.published_state()[0][0]]
    while sim.t < seconds - 1e-12:
        assert sim.advance(np.array([goal]))
        times.append(sim.t)
        angles.append(sim.published_state()[0][0])
    return np.array(times), np.array(angles)


def crossing(times: np.ndarray, values: np.ndarray, level: float) -> float:
    """The first time ``values`` reaches ``level``, interpolated between the samples around it."""
    k = int(np.argmax(values >= level))
    assert k > 0, "never reached"
    return float(times[k - 1] + (level - values[k - 1]) * (times[k] - times[k - 1]) / (values[k] - values[k - 1]))


def analytic_time_constant(inertia: float, kp: float, kd: float) -> float:
    """63.2 % rise time of I q'' + kd q' + kp q = kp g from rest (overdamped), found on a fine grid."""
    roots = np.roots([inertia, kd, kp]).real
    r1, r2 = roots
    t = np.linspace(0.0, 5.0, 2_000_001)
    rise = 1.0 - (r2 * np.exp(r1 * t) - r1 * np.exp(r2 * t)) / (r2 - r1)
    return crossing(t, rise, 1.0 - math.exp(-1.0))


# -- the servo's law and its rate independence ----------------------------------------------------------------


@pytest.mark.parametrize("rate", [100, 250, 1000])
def test_a_position_servos_step_response_is_the_continuous_one_within_2_percent_at_any_driver_rate(rate):
    expected = analytic_time_constant(INERTIA, KP, KD)
    sim = Simulation(one_joint(position_servo(rate=rate)), driver=True)
    times, angles = response(sim, STEP, 1.5)
    measured = crossing(times, angles / STEP, 1.0 - math.exp(-1.0))
    assert measured == pytest.approx(expected, rel=0.02), (rate, measured, expected)


def test_the_servos_response_is_the_same_at_100_and_1000_hz():
    measured, runs = {}, {}
    for rate in (100, 1000):
        sim = Simulation(one_joint(position_servo(rate=rate)), driver=True)
        times, runs[rate] = response(sim, STEP, 1.5)
        measured[rate] = crossing(times, runs[rate] / STEP, 1.0 - math.exp(-1.0))
    assert measured[100] == pytest.approx(measured[1000], rel=0.02)
    # Between the ticks the arm was integrated at dt under the law: the 100 Hz ticks lie on the 1000 Hz run.
    np.testing.assert_allclose(runs[1000][::10], runs[100], rtol=0, atol=1e-12)


def test_the_servos_law_is_evaluated_at_every_integration_step_on_the_state_of_that_step():
    driver = DriverModel(one_joint(position_servo()).driver, 1, 0.001)
    driver.take(np.array([STEP]), 0)
    q, dq = np.array([0.05]), np.array([0.3])
    np.testing.assert_allclose(driver.torque(0, True, q, dq), KP * (STEP - 0.05) - KD * 0.3, rtol=1e-15)
    np.testing.assert_allclose(driver.demand(False, q, dq), [0.0])  # the watchdog: no torque


def test_a_velocity_servo_brings_a_free_joint_to_its_goal_velocity_with_the_time_constant_inertia_over_kv():
    kv = 0.5
    sim = Simulation(one_joint({"interface": "velocity", "servo_kv": kv, "rate": 100}), driver=True)
    goal = 1.0
    times, speeds = [0.0], [0.0]
    while sim.t < 0.6:
        sim.advance(np.array([goal]))
        times.append(sim.t)
        speeds.append(sim.published_state()[1][0])
    measured = crossing(np.array(times), np.array(speeds) / goal, 1.0 - math.exp(-1.0))
    assert measured == pytest.approx(INERTIA / kv, rel=0.02)


def test_the_servos_torque_saturates_at_the_links_effort_limit_and_is_the_published_effort():
    sim = Simulation(one_joint(position_servo(servo_kp=50.0), effort_limit=0.5), driver=True)
    torques = []
    for _ in range(50):
        sim.advance(np.array([1.0]))
        torques.append(sim.published_state()[2][0])
    assert max(torques) == 0.5
    assert torques[0] == 0.5  # 50 N*m/rad * 1 rad asked for, 0.5 given
    np.testing.assert_array_equal(sim.effort, [torques[-1]])


def test_the_simulators_effort_limits_clamp_the_servos_torque_too():
    sim = Simulation(one_joint(position_servo(servo_kp=50.0)), effort_limits=[0.3], driver=True)
    sim.advance(np.array([1.0]))
    assert sim.published_state()[2] == [0.3]
    np.testing.assert_array_equal(sim.driver.command, [1.0])  # the goal is taken whole: it is no torque


def test_no_goal_no_torque_and_the_command_delay_holds_the_goal_while_the_lag_acts_on_the_torque():
    lag = 0.01
    sim = Simulation(one_joint(position_servo(rate=250, command_delay=0.004, torque_lag=lag)), driver=True)
    assert sim.advance(np.array([STEP])) and sim.published_state()[2] == [0.0]  # the goal acts a tick later
    assert sim.driver.goal is None
    sim.advance(np.array([STEP]))
    first = sim.published_state()[2][0]
    # Four steps of the lag toward the servo's torque at rest (about kp * STEP: the joint barely moved).
    assert first == pytest.approx(KP * STEP * (1.0 - math.exp(-0.004 / lag)), rel=0.01)


def test_a_position_goal_moves_within_its_profile_and_stops_at_the_goal():
    speed, acceleration = 0.5, 4.0
    driver = DriverModel(
        one_joint(position_servo(profile_velocity=speed, profile_acceleration=acceleration)).driver, 1, 0.001
    )
    driver.take(np.array([0.3]), 0)
    q, dq = np.zeros(1), np.zeros(1)
    goals = []
    for step in range(1500):
        driver.torque(step, True, q, dq)
        goals.append(float(driver.goal[0]))
    rates = np.diff([0.0, *goals]) / 0.001
    assert rates.max() <= speed + 1e-9
    assert np.abs(np.diff(rates)).max() / 0.001 <= acceleration * (1 + 1e-9)
    assert goals[-1] == pytest.approx(0.3, abs=1e-12)
    assert max(goals) <= 0.3 + 1e-12  # it brakes in time: never past the goal
    # The trapezoid: 0.125 s to full speed, 0.6 - 0.125 s cruising, 0.125 s braking: at 0.3 rad after 0.725 s.
    assert goals[round(0.725 / 0.001) - 10] < 0.3 < goals[round(0.725 / 0.001) + 15] + 1e-6


def test_a_velocity_goal_is_held_within_its_profile():
    servo = {"interface": "velocity", "servo_kv": 1.0, "profile_velocity": 0.4, "profile_acceleration": 2.0}
    driver = DriverModel(one_joint(servo).driver, 1, 0.001)
    driver.take(np.array([1.0]), 0)
    goals = [float(driver.torque(step, True, np.zeros(1), np.zeros(1))[0]) for step in range(400)]
    assert goals[0] == pytest.approx(0.002)  # kv * (2 rad/s^2 * 1 ms)
    assert goals[-1] == pytest.approx(0.4)  # at most profile_velocity
    assert goals[199] == pytest.approx(0.4) and goals[150] < 0.4  # reached after 0.2 s


# -- the servo is the arm's: played with or without the rest of the driver ------------------------------------


def test_without_driver_true_the_servo_is_played_but_not_the_drivers_rate_delay_or_noise():
    setup = one_joint(position_servo(rate=100, command_delay=0.01, position_noise=0.01))
    sim = Simulation(setup, driver=False)
    assert sim.interface == "position" and sim.tick_period == 0.001
    sim.advance(np.array([STEP]))
    assert sim.published_state()[2] == [pytest.approx(KP * STEP)]  # at once, no delay
    assert sim.published_state()[0] == sim.engine.q_list  # no noise
    played = Simulation(setup, driver=True)
    assert played.tick_period == pytest.approx(0.01)


def test_the_servos_keys_are_checked_against_its_interface():
    spec = one_joint(position_servo(profile_velocity=1.0, rate=100)).driver
    servo = spec.servo_only()
    assert servo.rate is None and servo.given == {"interface", "servo_kp", "servo_kd", "profile_velocity"}
    assert one_joint({"rate": 100}).driver.servo_only() is None
    with pytest.raises(ScenarioError, match=r"\[driver\].servo_kv is not a setting of a position servo"):
        one_joint(position_servo(servo_kv=1.0))
    with pytest.raises(ScenarioError, match=r"\[driver\].servo_kd is not a setting of a velocity servo"):
        one_joint({"interface": "velocity", "servo_kv": 1.0, "servo_kd": 0.1})


def test_a_joint_commands_message_carries_the_goal_in_the_field_of_the_interface():
    sim = Simulation(one_joint(position_servo()), ["shoulder"])
    np.testing.assert_array_equal(sim.command_from_fields(["shoulder"], [0.2], [], []), [0.2])
    with pytest.raises(ValueError, match=r"has 1 names but 0 position values"):
        sim.command_from_fields(["shoulder"], [], [], [1.0])  # an effort is no position goal
    with pytest.raises(ValueError, match="position goal has 2 values but the arm has 1 joints"):
        sim.command_from_array([0.1, 0.2])
