"""The simulator's pure per-step logic: holding, clamping, wrench, reset, lockstep pairing."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skelarm_ros.interface import check_effort_limits, check_mode, seconds_to_nanoseconds
from skelarm_ros.sim.conversions import Rejected
from skelarm_ros.sim.engine import ArmEngine
from skelarm_ros.sim.scenario import load_arm
from skelarm_ros.sim.simulation import COMMAND, STALE_COMMAND, STALE_WRENCH, WRENCH, LockstepPairing, Simulation


@pytest.fixture
def sim() -> Simulation:
    return Simulation(load_arm(None))


def offline(arm_name: str | None, torques: list[np.ndarray], forces: list[np.ndarray] | None = None) -> ArmEngine:
    arm = load_arm(arm_name)
    engine = ArmEngine(arm.skeleton, arm.dt, grav_vec=arm.grav_vec, enforce_limits=arm.enforce_limits)
    for k, tau in enumerate(torques):
        engine.step(tau, None if forces is None else forces[k])
    return engine


def test_defaults_come_from_the_scenario(sim: Simulation) -> None:
    arm = load_arm(None)
    assert sim.dt == arm.dt
    assert sim.joint_names == ["j1", "j2"]
    assert sim.t == 0.0 and sim.steps == 0
    np.testing.assert_array_equal(sim.effort, np.zeros(2))
    np.testing.assert_array_equal(sim.engine.q, arm.skeleton.q)


def test_dt_override_and_bad_settings() -> None:
    arm = load_arm(None)
    assert Simulation(arm, dt=0.001).dt == 0.001
    with pytest.raises(ValueError, match="dt must be"):
        Simulation(arm, dt=-1.0)
    with pytest.raises(ValueError, match="joint_names has 1 names"):
        Simulation(arm, ["a"])
    with pytest.raises(ValueError, match="effort_limits has 3 values"):
        Simulation(arm, effort_limits=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="wrench_tolerance"):
        Simulation(arm, wrench_tolerance=math.nan)


def test_check_mode() -> None:
    check_mode("realtime", "commands")
    check_mode("lockstep", "joint_commands")
    with pytest.raises(ValueError, match="set command_interface:=joint_commands"):
        check_mode("lockstep", "commands")
    with pytest.raises(ValueError, match="mode 'fast' is not one of realtime, lockstep"):
        check_mode("fast", "commands")
    with pytest.raises(ValueError, match="command_interface 'x' is not one of commands, joint_commands"):
        check_mode("realtime", "x")


def test_effort_limits_check() -> None:
    assert check_effort_limits([], 2) is None
    np.testing.assert_array_equal(check_effort_limits([1.0, math.inf], 2), [1.0, math.inf])
    for bad in ([0.0, 1.0], [-1.0, 1.0], [math.nan, 1.0]):
        with pytest.raises(ValueError, match="effort_limits must be positive"):
            check_effort_limits(bad, 2)


def test_steps_equal_the_engine_with_held_command(sim: Simulation) -> None:
    sim.hold_command(sim.command_from_array([1.5, -0.5]))
    for _ in range(20):
        assert sim.advance(sim.held_command(True))
    expected = offline(None, [np.array([1.5, -0.5])] * 20)
    np.testing.assert_array_equal(sim.engine.q, expected.q)
    np.testing.assert_array_equal(sim.engine.dq, expected.dq)
    np.testing.assert_array_equal(sim.effort, [1.5, -0.5])
    assert sim.steps == 20
    assert sim.stamp_ns() == seconds_to_nanoseconds(expected.t)


def test_a_command_that_is_not_live_gives_zero(sim: Simulation) -> None:
    np.testing.assert_array_equal(sim.held_command(True), np.zeros(2))  # nothing received yet
    sim.hold_command(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(sim.held_command(True), [1.0, 2.0])
    np.testing.assert_array_equal(sim.held_command(False), np.zeros(2))  # the watchdog's lapse


def test_effort_limits_clamp_and_effort_is_the_applied_torque() -> None:
    sim = Simulation(load_arm(None), effort_limits=[1.0, 2.0])
    assert sim.advance(np.array([5.0, -5.0]))
    np.testing.assert_array_equal(sim.effort, [1.0, -2.0])
    expected = offline(None, [np.array([1.0, -2.0])])
    np.testing.assert_array_equal(sim.engine.q, expected.q)
    sim.set_effort_limits([])
    np.testing.assert_array_equal(sim.clamp(np.array([5.0, -5.0])), [5.0, -5.0])
    with pytest.raises(ValueError, match="effort_limits has 1 values"):
        sim.set_effort_limits([1.0])


def test_held_wrench_acts_on_every_step(sim: Simulation) -> None:
    force = sim.wrench_force("base", (2.0, -1.0, 0.0), (0.0, 0.0, 0.0))
    sim.hold_force(force)
    for _ in range(10):
        sim.advance(np.zeros(2))
    expected = offline(None, [np.zeros(2)] * 10, [np.array([2.0, -1.0])] * 10)
    np.testing.assert_array_equal(sim.engine.q, expected.q)
    assert sim.wrench_force("", (1.0, 1.0, 0.0), (0.0, 0.0, 0.0)).tolist() == [1.0, 1.0]


@pytest.mark.parametrize(
    ("call", "kind", "match"),
    [
        (lambda s: s.command_from_array([1.0]), COMMAND, "has 1 values but the arm has 2"),
        (lambda s: s.command_from_array([1.0, math.nan]), COMMAND, "NaN or infinite"),
        (lambda s: s.command_from_array([math.inf, 0.0]), COMMAND, "NaN or infinite"),
        (lambda s: s.command_from_joint_state(["j1", "jx"], [1.0, 2.0]), COMMAND, "unknown joint"),
        (lambda s: s.command_from_joint_state(["j1"], [1.0]), COMMAND, "lacks joint"),
        (lambda s: s.command_from_joint_state(["j1", "j2"], [1.0, math.nan]), COMMAND, "NaN or infinite"),
        (lambda s: s.wrench_force("world", (1.0, 0.0, 0.0), (0.0, 0.0, 0.0)), WRENCH, "frame 'world'"),
        (lambda s: s.wrench_force("base", (1.0, 0.0, 0.5), (0.0, 0.0, 0.0)), WRENCH, "out-of-plane"),
        (lambda s: s.wrench_force("base", (1.0, 0.0, 0.0), (0.0, 0.0, 0.1)), WRENCH, "out-of-plane"),
        (lambda s: s.wrench_force("base", (math.nan, 0.0, 0.0), (0.0, 0.0, 0.0)), WRENCH, "NaN"),
    ],
)
def test_rejections_are_counted_per_kind(sim: Simulation, call, kind: str, match: str) -> None:
    with pytest.raises(Rejected, match=match):
        call(sim)
    assert sim.rejected[kind] == 1
    assert sum(sim.rejected.values()) == 1


def test_joint_commands_are_matched_by_name() -> None:
    sim = Simulation(load_arm(None), ["shoulder", "elbow"])
    np.testing.assert_array_equal(sim.command_from_joint_state(["elbow", "shoulder"], [2.0, 1.0]), [1.0, 2.0])


def test_wrench_tolerance_is_live(sim: Simulation) -> None:
    with pytest.raises(Rejected):
        sim.wrench_force("base", (0.0, 0.0, 1e-3), (0.0, 0.0, 0.0))
    sim.wrench_tolerance = 1e-2
    assert sim.wrench_force("base", (0.0, 0.0, 1e-3), (0.0, 0.0, 0.0)).tolist() == [0.0, 0.0]


def test_reset(sim: Simulation) -> None:
    sim.advance(np.array([1.0, 1.0]))
    assert sim.advance(np.array([1.0, 1.0]))
    sim.reset()
    assert sim.t == 0.0 and sim.steps == 0 and sim.stamp_ns() == 0
    np.testing.assert_array_equal(sim.engine.q, load_arm(None).skeleton.q)
    np.testing.assert_array_equal(sim.effort, np.zeros(2))


def test_non_finite_state_stops_integration_and_reset_recovers(sim: Simulation) -> None:
    sim.advance(np.array([0.1, 0.1]))
    q, t = sim.engine.q.copy(), sim.t
    assert not sim.advance(np.array([1e308, 1e308]))
    assert "non-finite" in sim.halted and "simulator/reset" in sim.halted
    np.testing.assert_array_equal(sim.engine.q, q)
    assert sim.t == t
    assert not sim.advance(np.zeros(2))  # stays stopped
    sim.reset()
    assert not sim.halted
    assert sim.advance(np.zeros(2))


def test_lockstep_pairs_by_exact_stamp() -> None:
    sim = Simulation(load_arm(None))
    pairing = LockstepPairing(False, sim.rejected)
    stamp = sim.stamp_ns()
    pairing.expect(stamp)
    assert not pairing.ready() and pairing.missing() == ["joint_commands"]
    assert not pairing.offer_command(stamp + 1, np.ones(2))  # one nanosecond off: stale
    assert sim.rejected[STALE_COMMAND] == 1
    assert pairing.offer_command(stamp, np.ones(2))
    assert pairing.ready()
    command, force = pairing.take()
    np.testing.assert_array_equal(command, np.ones(2))
    assert force is None
    assert not pairing.ready()
    assert not pairing.offer_command(stamp, np.ones(2))  # already taken: a duplicate is stale
    with pytest.raises(RuntimeError, match="still waiting"):
        pairing.take()


def test_lockstep_waits_for_the_wrench_when_asked() -> None:
    sim = Simulation(load_arm(None))
    pairing = LockstepPairing(True, sim.rejected)
    pairing.expect(2_000_000)
    assert pairing.offer_command(2_000_000, np.zeros(2))
    assert not pairing.ready() and pairing.missing() == ["tip_wrench"]
    assert not pairing.offer_force(4_000_000, np.ones(2))
    assert sim.rejected[STALE_WRENCH] == 1
    assert pairing.offer_force(2_000_000, np.ones(2))
    assert pairing.ready()
    np.testing.assert_array_equal(pairing.take()[1], np.ones(2))


def test_stamps_follow_accumulated_time() -> None:
    sim = Simulation(load_arm(None), dt=0.001)
    for _ in range(1000):
        sim.advance(np.zeros(2))
    assert sim.stamp_ns() == round(sim.t * 1e9)
    assert abs(sim.stamp_ns() - 1_000_000_000) <= 1


def test_held_command_counts_whether_it_answers_the_state_before_the_step(sim: Simulation) -> None:
    sim.hold_command(np.array([1.0, 0.0]))  # unstamped (effort_controller/commands): not counted
    sim.held_command(True)
    assert sim.answered.total == 0
    for k in range(4):
        stamp = sim.stamp_ns() if k != 2 else sim.stamp_ns() - 1  # step 2 gets an older command
        sim.hold_command(np.array([1.0, 0.0]), stamp_ns=stamp)
        sim.advance(sim.held_command(True))
    sim.held_command(True)  # nothing new since the last step: late
    sim.hold_command(np.array([1.0, 0.0]), stamp_ns=sim.stamp_ns())
    sim.held_command(False)  # the answering command, but lapsed: zero torque applied, late
    assert (sim.answered.on_time, sim.answered.late) == (3, 3)
    assert sim.answered.summary().startswith("3 of 6 steps (50.00%) applied the command answering")
