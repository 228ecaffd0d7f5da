"""The Pinocchio engine against skelarm's own dynamics, kinematics and whole runs."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import skelarm
from conftest import SCENARIOS, full_scenarios, reference_run
from skelarm.kinematics import compute_endpoint_velocity, compute_jacobian

from skelarm_ros.sim.engine import ArmEngine, NonFiniteStateError, build_model, run_controlled, sync_skeleton
from skelarm_ros.sim.scenario import JointDrive, load_arm

FULL_SCENARIOS = full_scenarios()


def random_skeleton(rng: np.random.Generator, num_links: int) -> skelarm.Skeleton:
    props = [
        skelarm.LinkProp(
            length=rng.uniform(0.1, 1.2),
            m=rng.uniform(0.2, 3.0),
            i=rng.uniform(0.001, 0.3),
            rgx=rng.uniform(-0.2, 0.8),
            rgy=rng.uniform(-0.2, 0.2),
            qmin=-np.pi,
            qmax=np.pi,
        )
        for _ in range(num_links)
    ]
    skeleton = skelarm.Skeleton(props, base_length=rng.uniform(0.0, 0.5))
    sync_skeleton(skeleton, rng.uniform(-np.pi, np.pi, num_links), rng.uniform(-3, 3, num_links))
    return skeleton


def close(actual: np.ndarray, expected: np.ndarray, rel: float = 1e-10) -> bool:
    scale = max(1.0, float(np.max(np.abs(expected))))
    return float(np.max(np.abs(np.asarray(actual) - np.asarray(expected)))) <= rel * scale


@pytest.mark.parametrize("num_links", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("gravity", [None, (0.0, -9.81), (3.0, 1.5)])
def test_dynamics_and_kinematics_match_skelarm(num_links: int, gravity: tuple[float, float] | None) -> None:
    rng = np.random.default_rng(1000 * num_links + (0 if gravity is None else 1))
    grav = None if gravity is None else np.array(gravity)
    for _ in range(10):
        skeleton = random_skeleton(rng, num_links)
        engine = ArmEngine(skeleton, 0.001, grav_vec=grav)
        q, dq = skeleton.q, skeleton.dq
        tau = rng.uniform(-10, 10, num_links)
        assert close(engine.mass_matrix(q), skelarm.compute_mass_matrix(skeleton))
        assert close(engine.bias(q, dq), skelarm.compute_coriolis_gravity_vector(skeleton, grav))
        assert close(engine.forward_dynamics(q, dq, tau), skelarm.compute_forward_dynamics(skeleton, tau, grav))
        ddq = rng.uniform(-20, 20, num_links)
        expected = skelarm.compute_mass_matrix(skeleton) @ ddq + skelarm.compute_coriolis_gravity_vector(skeleton, grav)
        assert close(engine.inverse_dynamics(q, dq, ddq), expected)
        tip = skeleton.links[-1]
        assert close(engine.endpoint(q), np.array([tip.xe, tip.ye]))
        assert close(engine.jacobian(q), compute_jacobian(skeleton))
        assert close(engine.endpoint_velocity(q, dq), compute_endpoint_velocity(skeleton))


@pytest.mark.parametrize("num_links", [1, 2, 4, 6])
def test_step_matches_integrate_with_limits(num_links: int) -> None:
    rng = np.random.default_rng(num_links)
    skeleton = random_skeleton(rng, num_links)
    # Tight limits so that the stops engage during the run.
    for link in skeleton.links[1:]:
        link.prop.qmin, link.prop.qmax = -0.6, 0.7
    sync_skeleton(skeleton, np.clip(skeleton.q, -0.5, 0.5), skeleton.dq)
    engine = ArmEngine(skeleton, 0.002)
    lower, upper = engine.lower, engine.upper
    stops = 0
    for step in range(300):
        tau = 80.0 * np.sin(0.05 * step + np.arange(num_links))
        force = np.array([np.cos(0.1 * step), np.sin(0.07 * step)]) * 5.0
        total = tau + compute_jacobian(skeleton).T @ force
        skelarm.integrate_with_limits(skeleton, total, 0.002, lower, upper)
        engine.step(tau, force)
        stops += int(np.sum(skeleton.dq == 0.0))
        assert close(engine.q, skeleton.q, 1e-10)
        assert close(engine.dq, skeleton.dq, 1e-10)
    assert stops > 0, "the joint stops were never reached; the test would not check them"
    assert engine.t == pytest.approx(300 * 0.002)


def test_time_accumulates_like_skelarm() -> None:
    skeleton = random_skeleton(np.random.default_rng(0), 2)
    engine = ArmEngine(skeleton, 0.002)
    t = 0.0
    for _ in range(1000):
        engine.step(np.zeros(2))
        t += 0.002
    assert engine.t == t  # the same float sums, bit for bit


def test_limits_can_be_off() -> None:
    skeleton = random_skeleton(np.random.default_rng(3), 2)
    for link in skeleton.links[1:]:
        link.prop.qmin, link.prop.qmax = -0.1, 0.1
    sync_skeleton(skeleton, [0.0, 0.0], [0.0, 0.0])
    engine = ArmEngine(skeleton, 0.01, enforce_limits=False)
    for _ in range(100):
        engine.step(np.array([5.0, 5.0]))
    assert np.max(np.abs(engine.q)) > 0.1


def test_non_finite_state_is_refused_and_state_kept() -> None:
    skeleton = random_skeleton(np.random.default_rng(4), 3)
    engine = ArmEngine(skeleton, 0.001)
    q, dq, t = engine.q.copy(), engine.dq.copy(), engine.t
    with pytest.raises(NonFiniteStateError, match="non-finite"):
        engine.step(np.array([np.inf, 0.0, 0.0]))
    assert np.array_equal(engine.q, q)
    assert np.array_equal(engine.dq, dq)
    assert engine.t == t


def test_bad_dt_is_refused() -> None:
    skeleton = random_skeleton(np.random.default_rng(5), 2)
    for dt in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match=r"^dt must be a positive number \(s\), got"):
            ArmEngine(skeleton, dt)


@pytest.mark.skipif(not FULL_SCENARIOS, reason=f"no skelarm scenarios in {SCENARIOS}")
@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=pytest.mark.slow) if "periodic_curve_four" in p.stem else p for p in FULL_SCENARIOS],
    ids=lambda path: path.stem,
)
def test_whole_runs_match_run_scenario(path: Path) -> None:
    reference = reference_run(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scenario = skelarm.load_scenario(path)
    arm = load_arm(path)
    engine = ArmEngine(
        scenario.skeleton, scenario.simulator.dt, grav_vec=arm.grav_vec, enforce_limits=arm.enforce_limits
    )
    log = run_controlled(engine, scenario.skeleton.clone(), scenario.controller, duration=scenario.task.duration)
    assert len(log) == len(reference)
    np.testing.assert_array_equal(log.times, reference.times)
    for channel in ("q", "dq", "tau"):
        np.testing.assert_allclose(log.channel(channel), reference.channel(channel), rtol=0, atol=1e-9)
    assert log.channel_names == reference.channel_names


# -- armature and friction (the per-link keys armature, viscous, coulomb) --------------------------------


def _drive_arm() -> tuple[skelarm.Skeleton, JointDrive]:
    skeleton = load_arm("reach_four_dof_robot").skeleton
    drive = JointDrive.of(
        4, armature=[0.05, 0.03, 0.01, 0.004], viscous=[0.2, 0.1, 0.05, 0.02], coulomb=[0.3, 0.2, 0.1, 0.05]
    )
    return skeleton, drive


def test_a_moving_arm_with_a_drive_follows_armature_and_friction_exactly() -> None:
    skeleton, drive = _drive_arm()
    grav = np.array([0.0, -9.81])
    engine = ArmEngine(skeleton, 0.002, grav_vec=grav, drive=drive, enforce_limits=False)
    plain = ArmEngine(skeleton, 0.002, grav_vec=grav, enforce_limits=False)
    rng = np.random.default_rng(9)
    for _ in range(20):
        q, dq = rng.uniform(-2, 2, 4), rng.choice([-1.0, 1.0], 4) * rng.uniform(1.0, 3.0, 4)
        tau = rng.uniform(-3, 3, 4)
        engine.set_state(q, dq)
        mass = plain.mass_matrix(q) + np.diag(drive.armature)
        ddq = np.linalg.solve(mass, tau - plain.bias(q, dq) - drive.friction_torque(dq))
        engine.step(tau)
        np.testing.assert_allclose(engine.dq, dq + 0.002 * ddq, rtol=0, atol=1e-12)
        np.testing.assert_allclose(engine.q, q + 0.002 * (dq + 0.002 * ddq), rtol=0, atol=1e-12)
    # the model a controller twin reuses: Pinocchio's RNEA with the armature, plus the friction torque
    model, _ = build_model(skeleton, grav, drive.armature)
    q, dq, ddq = rng.uniform(-2, 2, 4), rng.uniform(-2, 2, 4), rng.uniform(-5, 5, 4)
    expected = plain.mass_matrix(q) @ ddq + drive.armature * ddq + plain.bias(q, dq)
    np.testing.assert_allclose(pin.rnea(model, model.createData(), q, dq, ddq), expected, atol=1e-10)


def test_an_arm_held_by_its_friction_stays_still_and_one_pushed_harder_moves() -> None:
    skeleton, drive = _drive_arm()
    engine = ArmEngine(skeleton, 0.002, grav_vec=[0.0, -0.05], drive=drive, enforce_limits=False)
    q0 = engine.q.copy()
    for _ in range(1000):
        engine.step(np.array([0.25, -0.15, 0.05, 0.0]))  # every torque below its joint's Coulomb torque
    np.testing.assert_array_equal(engine.dq, np.zeros(4))
    assert np.max(np.abs(engine.q - q0)) < 1e-12
    velocities = []
    for _ in range(500):  # a push past the Coulomb torque on joint 1, then none: it slides, then stops and stays
        engine.step(np.array([0.6 if len(velocities) < 250 else 0.0, 0.0, 0.0, 0.0]))
        velocities.append(engine.dq.copy())
    assert max(v[0] for v in velocities) > 0.05
    assert np.all(velocities[-1] == 0.0) and np.all(velocities[-50] == 0.0)


def test_a_falling_arm_with_friction_loses_energy_and_without_a_drive_steps_as_before() -> None:
    skeleton, drive = _drive_arm()
    grav = np.array([0.0, -9.81])
    plain = ArmEngine(skeleton, 0.002, grav_vec=grav, enforce_limits=False)
    ideal = ArmEngine(skeleton, 0.002, grav_vec=grav, enforce_limits=False, drive=JointDrive.ideal(4))
    geared = ArmEngine(skeleton, 0.002, grav_vec=grav, enforce_limits=False, drive=drive)
    for _ in range(500):
        for engine in (plain, ideal, geared):
            engine.step(np.zeros(4))
    np.testing.assert_array_equal(plain.q, ideal.q)  # an ideal drive is no drive, bit for bit
    assert ideal.drive is None and geared.drive is drive
    assert np.max(np.abs(geared.q - plain.q)) > 0.05  # armature and friction slow the fall
