"""Driving a real arm, the pure parts: plan_from, soft start, joint limits, stale states, gravity and drive.

The plant here is the Pinocchio engine stepped at the scenario's step with the command
held between states that come at 250 Hz, as a driver's are (test_real_arm_system.py runs
the same over DDS with a stand-in driver).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import skelarm
from bagwriter import arm_run, write_bag

from skelarm_ros.cli.graph import HARDWARE_SOFT_START, describe
from skelarm_ros.control.loop import ControlLoop, build_control_loop
from skelarm_ros.control.safety import FAR_START, JointLimitGuard, StateWatch, ramp_at, soft_start_bound
from skelarm_ros.control.twins import FastComputedTorque, FastInverseDynamicsPD, with_fast_model
from skelarm_ros.interface import INFO, WARNING
from skelarm_ros.sim.engine import ArmEngine
from skelarm_ros.sim.scenario import load_arm, load_scenario

SCENARIO = Path(__file__).resolve().parents[1] / "config" / "scenarios" / "reach_four_dof_robot.toml"
NAMES = ["j1", "j2", "j3", "j4"]
STATE_STEPS = 2  # a state every 2 steps of 2 ms: 250 Hz


def reach(folder: Path, name: str = "reach", *, gravity: bool = False, drive: bool = False) -> Path:
    """The bundled four-link reach, 1 s long; in the vertical plane, or with a drive, when asked."""
    text = SCENARIO.read_text().replace("duration = 5.0", "duration = 1.0")
    if gravity:
        text = text.replace("[simulator]\n", "[simulator]\ngrav_vec = [0.0, -9.81]\n")
    if drive:
        text = text.replace("com = [0.05, 0.0]\n", "com = [0.05, 0.0]\narmature = 0.01\nviscous = 0.2\ncoulomb = 0.1\n")
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


def drive_arm(loop: ControlLoop, path: Path, offset: np.ndarray | None = None, seconds: float = 1.5):
    """Run the loop on the scenario's arm (its gravity and drive) at 250 Hz, holding each command; return
    the commands and the final tip error (m)."""
    arm = load_arm(path)
    engine = ArmEngine(arm.skeleton, arm.dt, grav_vec=arm.grav_vec, drive=arm.drive)
    if offset is not None:
        engine.set_state(engine.q + offset, engine.dq)
    torque, commands, step, said = np.zeros(4), [], 0, []
    while engine.t < seconds:
        if step % STATE_STEPS == 0:
            output = loop.control(NAMES, engine.q.tolist(), engine.dq.tolist(), round(engine.t * 1e9))
            torque = output.torque
            commands.append(torque)
            said += output.said
        engine.step(torque)
        step += 1
    target = load_scenario(path).task.target
    return np.array(commands), math.dist(engine.endpoint(engine.q), target), said


# -- plan_from ---------------------------------------------------------------------------------------------


def test_at_the_scenario_s_pose_plan_from_state_is_the_scenario_s_plan(tmp_path):
    path = reach(tmp_path)
    state, _ = build_control_loop(path, plan_from="state")
    scenario, _ = build_control_loop(path, plan_from="scenario")
    first, _, said = drive_arm(state, path)
    second, _, _ = drive_arm(scenario, path)
    assert np.array_equal(first, second)  # to the bit: lockstep still equals offline
    assert said == []


def test_a_far_start_is_planned_from_the_state_and_said_once(tmp_path):
    path = reach(tmp_path)
    offset = np.radians([-30.0, 25.0, 0.0, 0.0])
    loop, _ = build_control_loop(path)
    commands, error, said = drive_arm(loop, path, offset)
    from_scenario, _ = build_control_loop(path, plan_from="scenario")
    pulled, _, warned = drive_arm(from_scenario, path, offset)
    assert error < load_scenario(path).task.tolerance
    assert np.abs(commands).max() < 0.5 * np.abs(pulled).max()  # the scenario's plan pulls the arm back first
    assert [item.level for item in said if item.text.startswith("the arm starts")] == [INFO]
    assert said[0].text.startswith("the arm starts 0.524 rad (30.0 deg) from the scenario's initial pose at j1;")
    assert warned[0].level == WARNING and "pull the arm there" in warned[0].text
    assert loop.restarts == 0
    near, _ = build_control_loop(path)
    _, _, quiet = drive_arm(near, path, np.full(4, FAR_START / 2), seconds=0.1)
    assert quiet == []


def test_restart_time_starts_the_time_line_at_the_next_state_without_replanning(tmp_path):
    path = reach(tmp_path)
    loop, _ = build_control_loop(path)
    names = loop.joint_names
    q = (np.array(loop.initial_q) + np.radians([30.0, 0.0, 0.0, 0.0])).tolist()
    rest = [0.0] * len(q)
    first = loop.control(names, q, rest, 1_000_000_000)
    loop.restart_time()  # the first state took long: 40 ms of states came meanwhile, the arm at rest
    again = loop.control(names, q, rest, 1_040_000_000)
    later = loop.control(names, q, rest, 1_044_000_000)
    assert first.t == again.t == 0.0 and later.t == pytest.approx(0.004)
    assert np.allclose(again.torque, first.torque)  # the reference has not run ahead of the arm
    assert loop.restarts == 0 and again.said == []
    unmoved, _ = build_control_loop(path)
    unmoved.control(names, q, rest, 1_000_000_000)
    ahead = unmoved.control(names, q, rest, 1_040_000_000)
    assert ahead.t == pytest.approx(0.04) and np.abs(ahead.torque).max() > np.abs(first.torque).max()


def test_plan_from_is_checked(tmp_path):
    with pytest.raises(ValueError, match="plan_from 'here' is not one of state, scenario"):
        build_control_loop(reach(tmp_path), plan_from="here")


# -- soft start and joint limits ---------------------------------------------------------------------------


def test_the_soft_start_ramps_the_limits_in_and_scales_joints_without_one():
    torque = np.array([10.0, -10.0, 4.0])
    limits = np.array([8.0, 8.0, np.inf])
    assert ramp_at(0.25, 1.0) == 0.25 and ramp_at(2.0, 1.0) == 1.0 and ramp_at(0.0, 0.0) == 1.0
    np.testing.assert_allclose(soft_start_bound(torque, limits, 0.25), [2.0, -2.0, 1.0])
    np.testing.assert_allclose(soft_start_bound(torque, limits, 1.0), [8.0, -8.0, 4.0])
    np.testing.assert_allclose(soft_start_bound(torque, None, 0.5), [5.0, -5.0, 2.0])
    np.testing.assert_allclose(soft_start_bound(torque, None, 0.0), [0.0, 0.0, 0.0])


def test_a_soft_start_begins_at_zero_and_the_reach_still_ends_on_target(tmp_path):
    path = reach(tmp_path)
    loop, _ = build_control_loop(path, soft_start=0.5, effort_limits=[5.0, 5.0, 5.0, 5.0])
    commands, error, _ = drive_arm(loop, path, np.radians([-30.0, 25.0, 0.0, 0.0]), seconds=2.0)
    assert not np.any(commands[0])
    ramp = np.arange(len(commands)) * STATE_STEPS * 0.002 / 0.5
    assert np.all(np.abs(commands) <= 5.0 * np.minimum(ramp, 1.0)[:, None] + 1e-12)
    assert error < load_scenario(path).task.tolerance


def test_a_push_further_past_a_limit_is_clamped_to_zero_and_said_once():
    guard = JointLimitGuard(np.array([-1.0, -1.0]), np.array([1.0, 1.0]), ["shoulder", "elbow"])
    torque, said = guard.apply(np.array([1.2, 0.0]), np.array([3.0, 2.0]))
    assert torque.tolist() == [0.0, 2.0] and guard.clamped == 1
    assert [item.level for item in said] == [WARNING]
    assert said[0].text.startswith("shoulder is at 1.2000 rad, past its upper limit 1.0000 rad")
    back, again = guard.apply(np.array([1.1, 0.0]), np.array([-3.0, 2.0]))  # pulled back: applied
    assert back.tolist() == [-3.0, 2.0] and again == []
    _, inside = guard.apply(np.array([0.9, -1.5]), np.array([0.0, -1.0]))
    assert [item.text for item in inside] == [
        "elbow is at -1.5000 rad, past its lower limit -1.0000 rad; torque that pushes it further out is clamped "
        "to zero until it is back inside",
        "shoulder is back inside its limits",
    ]


def test_the_loop_clamps_at_the_scenario_s_limits_only_where_they_are_stops(tmp_path):
    path = reach(tmp_path)
    loop, _ = build_control_loop(path, plan_from="scenario")
    beyond = np.radians([45.0, 15.0, 15.0, 15.0])  # j1's upper limit is 30 degrees
    output = loop.control(NAMES, beyond.tolist(), [0.0] * 4, 1)
    assert output.torque[0] <= 0.0
    assert any("j1 is at 0.7854 rad, past its upper limit" in item.text for item in output.said)
    loose = tmp_path / "loose.toml"
    loose.write_text(path.read_text().replace("[simulator]\n", "[simulator]\nenforce_limits = false\n"))
    free, _ = build_control_loop(loose, plan_from="scenario")
    assert not any("limit" in item.text for item in free.control(NAMES, beyond.tolist(), [0.0] * 4, 1).said)


# -- stale states ------------------------------------------------------------------------------------------


def test_a_gap_in_the_states_is_warned_once_and_their_return_said():
    watch = StateWatch(0.25, "/arm/joint_states")
    assert watch.check(10.0) == []  # nothing before the first state
    watch.heard(10.0)
    assert watch.check(10.2) == []
    warned = watch.check(10.3)
    assert [item.level for item in warned] == [WARNING] and watch.stale and watch.gaps == 1
    assert warned[0].text.startswith("no joint state on /arm/joint_states for 0.300 s (state_timeout 0.25 s)")
    assert watch.check(11.0) == []  # one zero command per gap
    back = watch.heard(11.3)
    assert back[0].text.startswith("joint states on /arm/joint_states are back after 1.300 s") and not watch.stale
    never = StateWatch(0.0, "/arm/joint_states")
    never.heard(0.0)
    assert never.check(100.0) == []
    with pytest.raises(ValueError, match="state_timeout must be zero or a positive number"):
        StateWatch(-1.0, "/arm/joint_states")


def test_a_controller_held_up_does_not_take_its_own_pause_for_stale_states():
    watch = StateWatch(0.25, "/arm/joint_states")
    watch.heard(10.0)
    assert watch.check(10.02) == []
    # The process stalled for 0.33 s: the check that comes first after it looks again next time, when the
    # state waiting behind it has been taken; no zero command, no restart.
    assert watch.check(10.35) == [] and not watch.stale
    assert watch.heard(10.351) == []
    assert watch.check(10.37) == [] and watch.gaps == 0
    # Checks that keep coming late defer once: a dead bus is still noticed.
    assert watch.check(10.8) == []
    assert [item.level for item in watch.check(11.3)] == [WARNING] and watch.stale


def test_after_a_hold_the_controller_restarts_replanned_from_the_returning_state(tmp_path):
    path = reach(tmp_path)
    loop, _ = build_control_loop(path, soft_start=0.2)
    arm = load_arm(path)
    engine = ArmEngine(arm.skeleton, arm.dt)
    for _ in range(150):  # 0.3 s of the reach
        torque = loop.control(NAMES, engine.q.tolist(), engine.dq.tolist(), round(engine.t * 1e9)).torque
        engine.step(torque)
    loop.hold()
    for _ in range(250):  # 0.5 s at zero torque: the arm drifts on
        engine.step(np.zeros(4))
    resumed = loop.control(NAMES, engine.q.tolist(), engine.dq.tolist(), round(engine.t * 1e9))
    assert resumed.t == 0.0 and loop.restarts == 1 and not np.any(resumed.torque)  # the soft start again
    np.testing.assert_array_equal(resumed.channels["q_ref"], engine.q)  # the reference starts where the arm is
    engine.step(resumed.torque)
    for _ in range(800):
        torque = loop.control(NAMES, engine.q.tolist(), engine.dq.tolist(), round(engine.t * 1e9)).torque
        engine.step(torque)
    assert math.dist(engine.endpoint(engine.q), load_scenario(path).task.target) < load_scenario(path).task.tolerance


# -- gravity and drive in the model ------------------------------------------------------------------------


def test_computed_torque_on_a_vertical_arm_reaches_only_with_the_arm_s_model(tmp_path):
    path = reach(tmp_path, gravity=True)
    loop, _ = build_control_loop(path)
    assert loop.model_terms == ["gravity"]
    _, error, _ = drive_arm(loop, path)
    tolerance = load_scenario(path).task.tolerance
    assert error < tolerance
    skelarm_model, _ = build_control_loop(path, controller_model="skelarm")
    assert skelarm_model.model_terms == []
    _, off, _ = drive_arm(skelarm_model, path)
    assert off > 2 * tolerance  # skelarm's own model has no gravity


def test_the_twins_model_has_gravity_armature_and_friction(tmp_path):
    path = reach(tmp_path, gravity=True, drive=True)
    arm = load_arm(path)
    assert arm.drive is not None
    scenario = load_scenario(path)
    engine = ArmEngine(arm.skeleton, arm.dt, grav_vec=arm.grav_vec, drive=arm.drive)
    q, dq = arm.skeleton.q, np.array([0.3, -0.2, 0.0, 0.1])
    friction = arm.drive.viscous * dq + arm.drive.coulomb * np.sign(dq)
    twin = with_fast_model(scenario.controller, arm.skeleton, arm.dt, grav_vec=arm.grav_vec, drive=arm.drive)
    assert isinstance(twin, FastComputedTorque)
    skeleton = arm.skeleton.clone()
    skeleton.dq = dq
    torque = twin.control(0.3, skeleton)
    q_r, dq_r, ddq_r = twin.reference.sample(0.3)
    commanded = ddq_r + twin.kd * (dq_r - dq) + twin.kp * (q_r - q)
    expected = engine.mass_matrix(q) @ commanded + engine.bias(q, dq) + friction
    np.testing.assert_allclose(torque, expected, atol=1e-10)
    armature = np.diag(engine.mass_matrix(q)) - np.diag(ArmEngine(arm.skeleton, arm.dt).mass_matrix(q))
    np.testing.assert_allclose(armature, arm.drive.armature, atol=1e-12)
    # inverse-dynamics PD: the feed-forward at the reference, with the friction there
    config = dict(scenario.source_config["controller"], type="inverse_dynamics_pd")
    built = skelarm.build_controller(config, skeleton=arm.skeleton, task=scenario.task, dt=arm.dt)
    pd = with_fast_model(built, arm.skeleton, arm.dt, grav_vec=arm.grav_vec, drive=arm.drive)
    assert isinstance(pd, FastInverseDynamicsPD)
    q_r, dq_r, ddq_r = pd.reference.sample(0.3)
    feedforward = (
        engine.inverse_dynamics(q_r, dq_r, ddq_r) + arm.drive.viscous * dq_r + arm.drive.coulomb * np.sign(dq_r)
    )
    expected = feedforward + pd.kp * (q_r - q) + pd.kd * (dq_r - dq)
    np.testing.assert_allclose(pd.control(0.3, skeleton), expected, atol=1e-10)


def test_a_model_with_gravity_needs_the_fast_model(tmp_path):
    path = reach(tmp_path, gravity=True)
    with pytest.raises(ValueError, match="fast_model:=false runs skelarm's own model, which has no gravity"):
        build_control_loop(path, fast_model=False)
    loop, _ = build_control_loop(path, fast_model=False, controller_model="skelarm")
    assert type(loop.controller) is skelarm.ComputedTorque
    plain, _ = build_control_loop(reach(tmp_path, "plain"), fast_model=False)  # nothing to model: fine
    assert type(plain.controller) is skelarm.ComputedTorque


def test_mpc_predicts_with_the_drive_s_friction(tmp_path):
    path = reach(tmp_path, drive=True)
    text = path.read_text().replace('type = "computed_torque"', 'type = "mpc"\nhorizon = 3\nmax_iter = 2')
    path.write_text(text)
    arm = load_arm(path)
    loop, _ = build_control_loop(path)
    assert loop.model_terms == ["drive"]
    q, dq, tau = arm.skeleton.q, np.array([0.5, 0.0, -0.5, 0.2]), np.ones(4)
    engine = ArmEngine(arm.skeleton, arm.dt, drive=arm.drive)
    friction = arm.drive.viscous * dq + arm.drive.coulomb * np.sign(dq)
    np.testing.assert_allclose(loop.controller._predict(q, dq, tau), engine.forward_dynamics(q, dq, tau - friction))


# -- the graph ---------------------------------------------------------------------------------------------


def test_the_graph_sets_what_each_way_of_running_needs(tmp_path):
    def controller(arguments: dict[str, str]) -> dict[str, object]:
        return next(spec for spec in describe(arguments) if spec.executable == "controller").parameters

    driver = controller({"hardware": "none"})
    assert driver["soft_start"] == HARDWARE_SOFT_START and "state_timeout" not in driver
    lockstep = controller({"mode": "lockstep"})
    assert lockstep["state_timeout"] == 0.0 and lockstep["zero_on_stop"] is False
    assert "soft_start" not in controller({}) and "state_timeout" not in controller({})
    shadow = controller({"replay": str(write_bag(tmp_path / "run", arm_run(3, namespace="/arm1")))})
    assert shadow["plan_from"] == "state" and shadow["state_timeout"] == 0.0 and shadow["wait_for_reader"] is False
    assert shadow["zero_on_stop"] is False
