"""Driving a real arm, the pure parts: plan_from, the live start, the soft start's hold, limits, divergence, stale
states, gravity and drive.

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
from skelarm_ros.control import skelarm_internals
from skelarm_ros.control.loop import ControlLoop, build_control_loop
from skelarm_ros.control.restarts import Restart
from skelarm_ros.control.safety import (
    FAR_START,
    DivergenceGuard,
    GuardedState,
    HoldingTorque,
    JointLimitGuard,
    StateWatch,
    clamp_efforts,
    ramp_at,
    soft_start,
)
from skelarm_ros.control.twins import FastComputedTorque, FastInverseDynamicsPD, with_fast_model
from skelarm_ros.interface import ERROR, INFO, WARNING
from skelarm_ros.sim.engine import ArmEngine
from skelarm_ros.sim.scenario import load_arm, load_scenario

SCENARIO = Path(__file__).resolve().parents[1] / "config" / "scenarios" / "reach_four_dof_robot.toml"
NAMES = ["j1", "j2", "j3", "j4"]
STATE_STEPS = 2  # a state every 2 steps of 2 ms: 250 Hz


def reach(
    folder: Path,
    name: str = "reach",
    *,
    gravity: bool = False,
    drive: bool = False,
    limits: str = "",
    duration: float = 1.0,
    controller: str = "",
) -> Path:
    """The bundled four-link reach, 1 s long; in the vertical plane, with a drive, with link limits (keys), another
    duration or another [controller] table, when asked."""
    text = SCENARIO.read_text().replace("duration = 5.0", f"duration = {duration}")
    if gravity:
        text = text.replace("[simulator]\n", "[simulator]\ngrav_vec = [0.0, -9.81]\n")
    if drive:
        text = text.replace("com = [0.05, 0.0]\n", "com = [0.05, 0.0]\narmature = 0.01\nviscous = 0.2\ncoulomb = 0.1\n")
    if limits:
        text = text.replace("limits = [", f"{limits}\nlimits = [")
    if controller:
        text = text.split("[controller]")[0] + controller
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
            said += output.said
            torque = output.torque  # a live arm's first state is answered with the hold while it prepares
            commands.append(torque)
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


def test_on_a_live_arm_a_time_line_starts_at_the_state_after_the_one_it_was_planned_on(tmp_path):
    path = reach(tmp_path)
    live, _ = build_control_loop(path, live_arm=True)
    names = live.joint_names
    q = (np.array(live.initial_q) + np.radians([-30.0, 25.0, 0.0, 0.0])).tolist()
    rest = [0.0] * len(q)
    planned = live.control(names, q, rest, 1_000_000_000)  # planned from here, the arm held meanwhile
    assert prepared(planned) and planned.said[0].text.startswith("the arm starts 0.524 rad")
    np.testing.assert_array_equal(planned.torque, np.zeros(4))  # a horizontal arm at rest needs no holding
    # Planning took 40 ms: the next state starts the time line, the reference has not run ahead of the arm.
    first = live.control(names, q, rest, 1_040_000_000)
    later = live.control(names, q, rest, 1_044_000_000)
    assert first.t == 0.0 and later.t == pytest.approx(0.004) and live.restarts == 0 and first.said == []
    offline, _ = build_control_loop(path)  # the same state answered at once, as the simulator's lockstep does
    np.testing.assert_array_equal(first.torque, offline.control(names, q, rest, 1_000_000_000).torque)
    # Each restart is prepared the same way: after a hold (replanned), for a new target, after time went back.
    live.hold()
    assert prepared(live.control(names, q, rest, 2_000_000_000))
    again = live.control(names, q, rest, 2_030_000_000)
    assert again.t == 0.0 and live.restarts == 1
    live.set_target("base", 0.1, 0.35)
    assert prepared(live.control(names, q, rest, 2_034_000_000))
    assert live.control(names, q, rest, 2_090_000_000).t == 0.0 and live.restarts == 2
    assert prepared(live.control(names, q, rest, 1_500_000_000))
    assert live.control(names, q, rest, 1_504_000_000).t == 0.0 and live.restarts == 3


def prepared(output) -> bool:
    """Whether a live arm's state only prepared a time line's start (answered with the hold, no controller ran)."""
    return output.t == 0.0 and output.channels == {}


def test_plan_from_is_checked(tmp_path):
    with pytest.raises(ValueError, match="plan_from 'here' is not one of state, scenario"):
        build_control_loop(reach(tmp_path), plan_from="here")


# -- soft start and joint limits ---------------------------------------------------------------------------


def test_the_soft_start_blends_the_torque_in_over_the_hold_and_the_effort_limits_do_not_ramp():
    torque, hold = np.array([10.0, -10.0, 4.0]), np.array([2.0, 1.0, 0.0])
    assert ramp_at(0.25, 1.0) == 0.25 and ramp_at(2.0, 1.0) == 1.0 and ramp_at(0.0, 0.0) == 1.0
    np.testing.assert_allclose(soft_start(torque, hold, 0.0), hold)
    np.testing.assert_allclose(soft_start(torque, hold, 0.25), [4.0, -1.75, 1.0])
    assert soft_start(torque, hold, 1.0) is torque  # once over, the controller's own torque, to the bit
    clamped, saturated = clamp_efforts(np.array([10.0, -10.0, 4.0]), np.array([8.0, 8.0, np.inf]))
    assert clamped.tolist() == [8.0, -8.0, 4.0] and saturated.tolist() == [True, True, False]
    unbounded, none = clamp_efforts(torque, None)
    assert unbounded is torque and none is None


@pytest.mark.parametrize("controller", ["", '[controller]\ntype = "joint_pd"\nkp = 300.0\nkd = 40.0\n'])
def test_the_first_command_holds_a_vertical_arm_for_every_controller_type(tmp_path, controller):
    path = reach(tmp_path, gravity=True, drive=True, controller=controller)
    arm = load_arm(path)
    loop, _ = build_control_loop(path, soft_start=0.5)
    bare, _ = build_control_loop(path)
    hold = HoldingTorque(arm.skeleton, arm.dt, grav_vec=arm.grav_vec)
    q, rng = arm.skeleton.q + np.radians([5.0, -10.0, 20.0, 0.0]), np.random.default_rng(1)
    for k, stamp in enumerate(range(0, 400_000_000, 4_000_000)):
        dq = 0.1 * rng.standard_normal(4)
        torque = loop.control(NAMES, q.tolist(), dq.tolist(), stamp).torque
        own = bare.control(NAMES, q.tolist(), dq.tolist(), stamp).torque
        expected = hold.at(q, dq) + (k * 0.004 / 0.5) * (own - hold.at(q, dq))
        np.testing.assert_allclose(torque, expected, rtol=1e-12, atol=1e-12)
    assert np.abs(hold.at(q, np.zeros(4))).max() > 1.0  # the arm's weight: what a scaled torque would drop
    # The effort limits bound the hold too, and do not ramp: 1 N*m from the first command.
    limited, _ = build_control_loop(path, soft_start=0.5, effort_limits=[1.0] * 4)
    first = limited.control(NAMES, q.tolist(), [0.0] * 4, 0).torque
    np.testing.assert_allclose(first, np.clip(hold.at(q, np.zeros(4)), -1.0, 1.0))


def test_a_vertical_arm_released_at_the_first_command_stays_where_it_was(tmp_path):
    path = reach(tmp_path, gravity=True, duration=5.0)  # a slow reach: its reference moves < 0.01 deg in 0.2 s
    loop, _ = build_control_loop(path, soft_start=1.0, live_arm=True)
    arm = load_arm(path)
    engine = ArmEngine(arm.skeleton, arm.dt, grav_vec=arm.grav_vec)
    start, torque, step, moved = engine.q.copy(), None, 0, 0.0
    while engine.t < 0.2:
        if step % STATE_STEPS == 0:
            output = loop.control(NAMES, engine.q.tolist(), engine.dq.tolist(), round(engine.t * 1e9))
            torque = output.torque
        if torque is not None:  # released at the first command
            engine.step(torque)
        else:
            engine.t += engine.dt
        moved = max(moved, float(np.abs(engine.q - start).max()))
        step += 1
    assert math.degrees(moved) < 0.1, math.degrees(moved)


def test_a_soft_start_ends_on_target_from_far_within_limits_that_do_not_ramp(tmp_path):
    path = reach(tmp_path)
    loop, _ = build_control_loop(path, soft_start=0.5, effort_limits=[5.0, 5.0, 5.0, 5.0])
    commands, error, _ = drive_arm(loop, path, np.radians([-30.0, 25.0, 0.0, 0.0]), seconds=2.0)
    assert not np.any(commands[0])  # a horizontal arm at rest: held by no torque
    assert np.abs(commands).max() <= 5.0
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


# -- limits from the arm's description and the divergence guard -------------------------------------------


def test_every_command_keeps_within_the_links_effort_limits_which_the_parameter_overrides(tmp_path):
    path = reach(tmp_path, gravity=True, limits="effort_limit = 0.5")
    loop, _ = build_control_loop(path)
    assert loop.effort_limits.tolist() == [0.5] * 4 and loop.unlimited_joints == []
    commands, _, _ = drive_arm(loop, path, seconds=0.2)
    assert np.abs(commands).max() == 0.5  # the arm's weight asks for more
    loop.set_effort_limits([0.2, np.inf, 0.2, 0.2])  # the parameter, in place of the links'
    assert loop.unlimited_joints == ["j2"]
    assert abs(loop.control(NAMES, load_arm(path).skeleton.q.tolist(), [0.0] * 4, 10**9).torque[0]) == 0.2
    loop.set_effort_limits([])  # back to the links'
    assert loop.effort_limits.tolist() == [0.5] * 4
    free, _ = build_control_loop(reach(tmp_path, "free"))
    assert free.effort_limits is None and free.unlimited_joints == NAMES


def guarded(stamp_ms: float, dq, torque, saturated, error=None) -> GuardedState:
    err = None if error is None else np.asarray(error, dtype=float)
    return GuardedState(round(stamp_ms * 1e6), np.asarray(dq, float), np.asarray(torque, float), saturated, err)


def test_a_joint_faster_than_its_velocity_limit_trips_the_guard_once():
    guard = DivergenceGuard(np.array([3.0, np.inf]), ["shoulder", "elbow"])
    assert guard.check(guarded(0, [2.9, 50.0], [1.0, 1.0], None)) is None  # elbow has no velocity limit
    tripped = guard.check(guarded(4, [-3.4, 0.0], [1.0, 1.0], None))
    assert tripped.level == ERROR and guard.tripped is tripped
    assert tripped.text.startswith(
        "the arm is diverging: shoulder turned at 3.4 rad/s, faster than its velocity_limit 3 rad/s;"
    )
    assert "sent zero torque" in tripped.text and "exit code 1" in tripped.text
    assert guard.check(guarded(8, [9.0, 0.0], [1.0, 1.0], None)) is None  # said once


def test_without_a_velocity_limit_a_chatter_at_the_effort_limit_trips_the_guard():
    guard = DivergenceGuard(np.full(2, np.inf), ["shoulder", "elbow"])
    said = []
    for k in range(130):  # 4 ms states: the shoulder's command at +-30 N*m, switching side every 3 states
        side = 1.0 if (k // 3) % 2 == 0 else -1.0
        said.append(guard.check(guarded(4 * k, [0.5 * side, 0.0], [30.0 * side, 1.0], np.array([True, False]))))
    first = next(k for k, item in enumerate(said) if item is not None)
    assert first >= 112  # not before the states span (nearly) 0.5 s
    assert said[first].text.startswith("the arm is diverging: shoulder has hit its effort limit (30 N*m) on alternate")
    # One acceleration and one braking at the limits, and a hold at the limit against a load, are no chatter.
    calm = DivergenceGuard(np.full(2, np.inf), ["shoulder", "elbow"])
    for k in range(300):
        side = 1.0 if k < 60 else -1.0
        held = np.array([k < 120, True])
        assert calm.check(guarded(4 * k, [0.1, 0.0], [30.0 * side, -5.0], held, [0.1, 0.1])) is None


def test_without_a_velocity_limit_an_arm_pinned_at_its_effort_limit_while_its_error_grows_trips_the_guard():
    guard = DivergenceGuard(np.full(2, np.inf), ["shoulder", "elbow"])
    falling = [
        guard.check(guarded(4 * k, [0.2, 0.0], [2.0, 0.0], np.array([True, False]), [0.01 * k, 0.0]))
        for k in range(140)
    ]
    tripped = next(item for item in falling if item is not None)
    assert "shoulder has been at its effort limit (2 N*m) for 0.5 s while its error grew from" in tripped.text
    # Held at the limit, the error not growing (a load, a stop): not stopped. No error at all: only the chatter rule.
    for error in ([0.3, 0.0], None):
        holding = DivergenceGuard(np.full(2, np.inf), ["shoulder", "elbow"])
        for k in range(300):
            assert holding.check(guarded(4 * k, [0.0, 0.0], [2.0, 0.0], np.array([True, False]), error)) is None


def test_a_live_loop_with_gains_far_too_high_is_stopped_and_sends_nothing_but_zero_after(tmp_path):
    gains = '[controller]\ntype = "computed_torque"\nkp = 20000.0\nkd = 600.0\n'
    limits = "effort_limit = 30.0\nvelocity_limit = 3.0"
    path = reach(tmp_path, gravity=True, limits=limits, duration=2.0, controller=gains)
    loop, _ = build_control_loop(path, soft_start=1.0, live_arm=True)
    arm = load_arm(path)
    engine = ArmEngine(arm.skeleton, arm.dt, grav_vec=arm.grav_vec, enforce_limits=False)
    waiting, torque, sent, fast = [np.zeros(4)], np.zeros(4), [], None
    for step in range(1500):  # 3 s of 2 ms steps; a state every 4 ms, its command acting two states later
        if step % STATE_STEPS == 0:
            if fast is None and np.abs(engine.dq).max() > 3.0:
                fast = len(sent)
            output = loop.control(NAMES, engine.q.tolist(), engine.dq.tolist(), round(engine.t * 1e9))
            waiting.append(output.torque)
            sent.append(waiting[-1])
            torque = waiting.pop(0) if len(waiting) > 2 else torque
        engine.step(torque)
    sent = np.array(sent)
    assert loop.stopped is not None and "faster than its velocity_limit 3 rad/s" in loop.stopped.text
    assert np.abs(sent).max() <= 30.0
    stop = next(k for k in range(len(sent)) if k >= fast and not sent[k:].any())
    assert stop - fast <= 1  # the state that was too fast, or the next, gets zero; nothing else after
    never, _ = build_control_loop(path, soft_start=1.0)  # beside the simulator: no guard
    assert never.stopped is None


# -- stale states ------------------------------------------------------------------------------------------


def look(watch: StateWatch, start: float, end: float) -> list:
    """The watch's on-time looks every period from ``start`` to ``end`` (s); what they said."""
    said = []
    for now in np.arange(start, end + 1e-9, watch.period):
        said += watch.check(float(now))
    return said


def test_a_gap_in_the_states_is_warned_once_and_their_return_said():
    watch = StateWatch(0.25, "/arm/joint_states", 0.02)
    assert watch.check(10.0) == []  # nothing before the first state
    watch.heard(10.0)
    assert look(watch, 10.02, 10.24) == []
    warned = look(watch, 10.26, 10.3)
    assert [item.level for item in warned] == [WARNING] and watch.stale and watch.gaps == 1
    assert warned[0].text.startswith("no joint state on /arm/joint_states for 0.260 s (state_timeout 0.25 s)")
    assert look(watch, 10.32, 11.0) == []  # one zero command per gap
    back = watch.heard(11.3)
    assert back[0].text.startswith("joint states on /arm/joint_states are back after 1.300 s") and not watch.stale
    never = StateWatch(0.0, "/arm/joint_states", 0.02)
    never.heard(0.0)
    assert look(never, 0.02, 100.0) == []
    with pytest.raises(ValueError, match="state_timeout must be zero or a positive number"):
        StateWatch(-1.0, "/arm/joint_states", 0.02)
    servo = StateWatch(0.25, "/arm/joint_states", 0.02, "the goal holding the arm where it was")
    servo.heard(0.0)
    assert "sent the goal holding the arm where it was, control resumes" in look(servo, 0.02, 0.3)[0].text


def test_the_quiet_time_counts_only_on_time_looks():
    watch = StateWatch(0.25, "/arm/joint_states", 0.02)
    watch.heard(10.0)
    assert watch.check(10.02) == []
    # The process stalled for 0.33 s (the watch's own look came that late): one period of it counts; the state
    # waiting behind the look is taken next. No zero command, no restart.
    assert watch.check(10.35) == [] and not watch.stale
    assert watch.heard(10.351) == []
    assert look(watch, 10.37, 10.45) == [] and watch.gaps == 0
    # Looks that keep coming late count a period each: a dead bus is still found, after 13 of them.
    watch.heard(10.46)
    said = [watch.check(11.0 + 0.3 * k) for k in range(13)]
    assert [bool(item) for item in said] == [False] * 12 + [True] and watch.stale


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
    assert resumed.t == 0.0 and loop.restarts == 1
    # The soft start again: the command holds the drifting arm's motion (no gravity here: its Coriolis terms).
    holding = HoldingTorque(arm.skeleton, arm.dt).at(engine.q, engine.dq)
    np.testing.assert_allclose(resumed.torque, holding, atol=1e-12)
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
    predicted = skelarm_internals.mpc_predict(loop.controller, q, dq, tau)
    np.testing.assert_allclose(predicted, engine.forward_dynamics(q, dq, tau - friction))


# -- the graph ---------------------------------------------------------------------------------------------


def test_the_graph_sets_what_each_way_of_running_needs(tmp_path):
    def controller(arguments: dict[str, str]) -> dict[str, object]:
        return next(spec for spec in describe(arguments) if spec.executable == "controller").parameters

    driver = controller({"hardware": "none"})
    assert driver["soft_start"] == HARDWARE_SOFT_START and "state_timeout" not in driver
    assert driver["live_arm"] is True  # declared: the arm is a real one, nothing inferred
    lockstep = controller({"mode": "lockstep"})
    assert lockstep["state_timeout"] == 0.0 and lockstep["zero_on_stop"] is False
    assert "soft_start" not in controller({}) and "state_timeout" not in controller({})
    shadow = controller({"replay": str(write_bag(tmp_path / "run", arm_run(3, namespace="/arm1")))})
    assert shadow["plan_from"] == "state" and shadow["state_timeout"] == 0.0 and "command_readers" not in shadow
    assert shadow["zero_on_stop"] is False
    assert not any("live_arm" in parameters for parameters in (lockstep, shadow, controller({})))


def test_a_start_prepared_again_for_a_new_target_still_ramps_in(tmp_path):
    path = reach(tmp_path)
    loop, _ = build_control_loop(path, soft_start=1.0, live_arm=True)
    q, dq = load_arm(path).skeleton.q.tolist(), [0.0] * 4
    holding = loop.control(NAMES, q, dq, 10**9).torque  # the first state: prepared, the arm held
    assert loop.set_target("", 0.3, 0.4)
    assert loop.control(NAMES, q, dq, 10**9 + 2_000_000).restart == {Restart.NEW_TARGET}  # prepared again
    started = loop.control(NAMES, q, dq, 10**9 + 4_000_000)
    assert started.t == 0.0
    np.testing.assert_allclose(started.torque, holding, rtol=0.0, atol=1e-12)  # the soft start's first command
