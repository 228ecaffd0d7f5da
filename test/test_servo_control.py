"""The controller on a servo arm: its answers as position or velocity goals (``interface``, ``position_mode``).

``stiffness`` makes a goal the servo turns back into the controller's own torque at the state it
answers; ``reference`` streams a tracking controller's reference. Both reach the target on the
simulated servo, in lockstep as ``hardware:=sim`` and ``hardware:=twin`` run them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from skelarm_ros.control.loop import build_control_loop
from skelarm_ros.control.servo import servo_goal
from skelarm_ros.control.twin_run import run_twin
from skelarm_ros.sim.engine import ArmEngine
from skelarm_ros.sim.scenario import bundled_scenarios, load_arm, load_scenario

REACH = bundled_scenarios()["reach"].read_text(encoding="utf-8")
TRACKING = 'type = "computed_torque"\nkp = 200.0\nkd = 30.0'
TARGET = np.array([0.55, 1.21])
TOLERANCE = 0.02  # m, the reach task's
POSITION = 'interface = "position"\nservo_kp = [60.0, 30.0]\nservo_kd = [3.0, 1.5]\nrate = 250\ncommand_delay = 0.004\n'
VELOCITY = 'interface = "velocity"\nservo_kv = [20.0, 10.0]\nrate = 250\n'


def scenario(folder: Path, driver: str = POSITION, controller: str = TRACKING, name: str = "servo") -> str:
    path = folder / f"{name}.toml"
    path.write_text(REACH.replace(TRACKING, controller) + "\n[driver]\n" + driver, encoding="utf-8")
    return str(path)


def tip_error(path: str, run) -> float:
    arm = load_arm(path)
    return float(np.linalg.norm(ArmEngine(arm.skeleton, arm.dt).endpoint(run.arm_position[-1]) - TARGET))


# -- the goals --------------------------------------------------------------------------------------------------


def test_a_stiffness_goal_is_one_the_servo_turns_back_into_the_controllers_torque(tmp_path):
    spec = load_arm(scenario(tmp_path)).driver
    goal = servo_goal("position", "stiffness", object(), spec)
    q, dq, tau = np.array([0.3, -0.2]), np.array([1.5, -0.7]), np.array([4.0, -2.5])
    g = goal.goal(None, 0.0, q, dq, tau)
    np.testing.assert_allclose(spec.servo_kp * (g - q) - spec.servo_kd * dq, tau, rtol=1e-14)
    np.testing.assert_array_equal(goal.rest(q), q)


def test_a_velocity_stiffness_goal_is_one_the_servo_turns_back_into_the_controllers_torque(tmp_path):
    spec = load_arm(scenario(tmp_path, VELOCITY)).driver
    goal = servo_goal("velocity", "stiffness", object(), spec)
    dq, tau = np.array([1.5, -0.7]), np.array([4.0, -2.5])
    np.testing.assert_allclose(spec.servo_kv * (goal.goal(None, 0.0, np.zeros(2), dq, tau) - dq), tau, rtol=1e-14)
    np.testing.assert_array_equal(goal.rest(np.ones(2)), [0.0, 0.0])


@pytest.mark.parametrize(("interface", "index"), [("position", 0), ("velocity", 1)])
def test_a_reference_goal_is_the_tracking_controllers_reference_at_the_states_time(tmp_path, interface, index):
    path = scenario(tmp_path, POSITION if interface == "position" else VELOCITY)
    loop, _ = build_control_loop(path, interface=interface, position_mode="reference")
    reference = load_scenario(path).controller.reference
    q0 = loop.initial_q
    for k in range(5):
        output = loop.control(["j1", "j2"], q0.tolist(), [0.0, 0.0], k * 2_000_000)
        np.testing.assert_allclose(output.command, reference.sample(output.t)[index], rtol=1e-12, atol=1e-15)
    assert output.goal is output.command and output.torque.shape == (2,)  # the torque is still computed


def test_an_effort_loop_sends_its_torque_and_rests_at_zero():
    loop, _ = build_control_loop("reach")
    output = loop.control(["j1", "j2"], loop.initial_q.tolist(), [0.0, 0.0], 0)
    assert output.goal is None and output.command is output.torque
    np.testing.assert_array_equal(loop.rest_command(), [0.0, 0.0])


def test_a_servo_loop_rests_where_the_last_state_was_and_not_before_a_state(tmp_path):
    loop, _ = build_control_loop(scenario(tmp_path), interface="position", position_mode="stiffness")
    assert loop.rest_command() is None  # a position servo cannot be told where to rest before a state
    loop.control(["j2", "j1"], [0.4, 0.1], [0.0, 0.0], 0)
    np.testing.assert_array_equal(loop.rest_command(), [0.1, 0.4])


def test_a_diverging_live_servo_arm_is_held_where_it_is(tmp_path):
    path = scenario(tmp_path, POSITION)
    loop, _ = build_control_loop(path, interface="position", position_mode="stiffness", live_arm=True)
    loop.velocity_limits[:] = 1.0  # any speed above it is a divergence
    q = loop.initial_q.tolist()
    for k in range(3):
        loop.control(["j1", "j2"], q, [0.0, 0.0], k * 2_000_000)
    stopped = None
    for k in range(3, 20):
        output = loop.control(["j1", "j2"], q, [5.0, 0.0], k * 2_000_000)
        if loop.stopped is not None:
            stopped = output
            break
    assert stopped is not None
    np.testing.assert_array_equal(stopped.command, q)  # the goal is where the arm is, not a torque of zero
    again = loop.control(["j1", "j2"], q, [5.0, 0.0], 40_000_000)
    np.testing.assert_array_equal(again.command, q)


# -- refusals -----------------------------------------------------------------------------------------------


def test_a_reference_from_a_reaching_law_is_refused_in_one_sentence(tmp_path):
    path = scenario(tmp_path, controller='type = "virtual_spring_damper"')
    with pytest.raises(
        ValueError, match="'virtual_spring_damper' has none \\(a reaching law\\); set position_mode:=stiffness"
    ) as refused:
        build_control_loop(path, interface="position", position_mode="reference")
    assert "\n" not in str(refused.value)


def test_stiffness_without_the_servos_gain_is_refused_in_one_sentence(tmp_path):
    with pytest.raises(ValueError, match="gives none for a position servo; add \\[driver\\] interface") as refused:
        build_control_loop("reach", interface="position", position_mode="stiffness")
    assert "\n" not in str(refused.value)
    with pytest.raises(ValueError, match="servo_kv"):
        build_control_loop(scenario(tmp_path), interface="velocity", position_mode="stiffness")
    with pytest.raises(ValueError, match="position_mode 'stiff' is not one of reference, stiffness"):
        build_control_loop("reach", interface="position", position_mode="stiff")


# -- reaches on the simulated servo ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("driver", "interface", "controller", "mode"),
    [
        (POSITION, "position", TRACKING, "reference"),
        (POSITION, "position", TRACKING, "stiffness"),
        (POSITION, "position", 'type = "virtual_spring_damper"', "stiffness"),
        (VELOCITY, "velocity", TRACKING, "reference"),
        (VELOCITY, "velocity", 'type = "time_varying_stiffness"', "stiffness"),
    ],
    ids=["position-reference", "position-stiffness", "reaching-law-stiffness", "velocity-reference", "velocity-law"],
)
@pytest.mark.parametrize("driver_played", [False, True], ids=["sim", "twin"])
def test_every_way_of_making_goals_reaches_the_target_within_the_tasks_tolerance(
    tmp_path, driver, interface, controller, mode, driver_played
):
    path = scenario(tmp_path, driver, controller)
    loop, _ = build_control_loop(path, interface=interface, position_mode=mode, live_arm=driver_played)
    run = run_twin(load_arm(path), loop, 3.0, driver=driver_played)
    assert not run.stopped
    assert tip_error(path, run) < TOLERANCE
