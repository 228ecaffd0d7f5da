"""A position servo's gains and torque limit told from runs of a servo arm that is not our engine's.

The arm is MuJoCo's (test/mujoco_arm.py), two links in the vertical plane under gravity, each
joint MuJoCo's own position actuator (a PD saturated at a torque limit, evaluated within its
RK4 steps), driven at 250 Hz by goal steps that act one tick after they are sent, its angles
read through a 16-bit encoder. From its joint states and goals ``identify`` tells servo_kp,
servo_kd and the torque limit: from the servo's torque where the driver publishes it, from the
prior's model where it does not; what the data cannot tell it says, and writes nothing wrong.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import numpy as np
import pytest
from bagwriter import float_array, joint_state, write_bag
from mujoco_arm import SIM_STEP, MujocoArm, Servos

from skelarm_ros.identification import IdentificationError
from skelarm_ros.identification.identify import main as identify
from skelarm_ros.identification.servo import ServoRun, estimate_servo
from skelarm_ros.sim.scenario import load_arm

KP, KD, LIMIT = (60.0, 25.0), (2.0, 0.8), (9.0, 2.5)  # N*m/rad, N*m*s/rad, N*m
PERIOD = 0.004  # s: 250 Hz
ENCODER = 2.0 * math.pi / 2**16  # rad per count
ARM = """[skeleton]
[[skeleton.link]]
length = 0.3
mass = 1.2
inertia = 0.012
com = [0.15, 0.0]
limits = [-170.0, 170.0]
[[skeleton.link]]
length = 0.25
mass = 0.5
inertia = 0.004
com = [0.12, 0.0]
limits = [-170.0, 170.0]
[initial]
q = [-80.0, 20.0]
[simulator]
dt = 0.001
grav_vec = [0.0, -9.81]
"""


@pytest.fixture(scope="module")
def prior(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("servo") / "arm.toml"
    path.write_text(ARM, encoding="utf-8")
    return path


def servo_run(prior: Path, *, seconds: float = 6.0, amplitude: float = 0.25, seed: int = 1) -> ServoRun:
    """The MuJoCo servo arm under goal steps every 0.25 s (each acting a tick after it is sent), recorded at 250 Hz."""
    arm = load_arm(prior)
    plant = MujocoArm(arm.skeleton, gravity=(0.0, -9.81), servos=Servos("position", LIMIT, KP, KD))
    rng = np.random.default_rng(seed)
    ticks, sub = round(seconds / PERIOD), round(PERIOD / SIM_STEP)
    q0 = arm.skeleton.q.copy()
    rows = {key: np.zeros((ticks, 2)) for key in ("q", "dq", "effort", "goals")}
    goal, acting = q0.copy(), q0.copy()
    for k in range(ticks):
        rows["q"][k] = np.round(plant.q / ENCODER) * ENCODER
        rows["dq"][k], rows["effort"][k] = plant.dq, plant.torque
        if k % round(0.25 / PERIOD) == 0:
            goal = q0 + rng.uniform(-amplitude, amplitude, 2)
        rows["goals"][k] = goal
        plant.step(acting, sub)
        acting = goal  # sent at this tick, acting from the next
    time = np.arange(ticks) * PERIOD
    return ServoRun(prior, ["a", "b"], time, rows["q"], rows["dq"], rows["goals"], rows["effort"])


def test_the_servos_torque_tells_its_gains_within_5_percent_and_its_torque_limit_where_it_saturated(prior):
    estimate = estimate_servo([servo_run(prior)])
    np.testing.assert_allclose(estimate.kp, KP, rtol=0.05)
    np.testing.assert_allclose(estimate.kd, KD, rtol=0.05)
    np.testing.assert_allclose(estimate.limit, LIMIT, rtol=0.05)
    assert estimate.untold == [], estimate.untold
    assert estimate.driver() == {"interface": "position", "servo_kp": list(KP), "servo_kd": list(KD)}  # 4 digits


def test_without_the_servos_torque_the_priors_model_tells_its_gains(prior):
    run = servo_run(prior)
    estimate = estimate_servo([ServoRun(run.source, run.joints, run.time, run.q, run.dq, run.goals, None)])
    assert estimate.driver() == {}
    assert (
        "record the servo's torque (present current) in the joint states' effort, or pass --scenario"
        in (estimate.untold[0])
    )
    told = estimate_servo([ServoRun(run.source, run.joints, run.time, run.q, run.dq, run.goals, None)], load_arm(prior))
    np.testing.assert_allclose(told.kp, KP, rtol=0.1)


def test_a_servo_that_never_saturates_has_no_limit_told_and_says_so(prior):
    estimate = estimate_servo([servo_run(prior, amplitude=0.02)])
    assert np.isnan(estimate.limit).all()
    assert any("its torque limit cannot be told: the servo never saturated" in line for line in estimate.untold)


def bag_of(run: ServoRun, folder: Path, *, effort: bool = False) -> Path:
    """The run as a servo driver's bag: joint states (with the servo's torque), its goals as position commands."""
    messages = []
    for k, t in enumerate(run.time):
        stamp = 1_700_000_000_000_000_000 + round(t * 1e9)
        torque = run.effort[k] if effort and run.effort is not None else ()
        messages.append(("/joint_states", stamp + 1, joint_state(stamp, run.joints, run.q[k], run.dq[k], torque)))
        messages.append(("/position_controller/commands", stamp + 2, float_array(run.goals[k].tolist())))
    return write_bag(folder / "bag", messages)


def test_identify_writes_the_told_servo_into_the_twins_driver_and_refuses_without_a_prior(prior, tmp_path, capsys):
    bag = bag_of(servo_run(prior), tmp_path)
    twin = tmp_path / "twin.toml"
    assert identify([str(bag), "-o", str(twin), "--scenario", str(prior), "--no-plot"]) == 0
    out = capsys.readouterr().out
    assert "no torque recorded: the arm's dynamics are the prior's" in out and "written into the twin" in out, out
    written = tomllib.loads(twin.read_text(encoding="utf-8"))
    assert written["driver"]["interface"] == "position"
    np.testing.assert_allclose(written["driver"]["servo_kp"], KP, rtol=0.1)
    assert load_arm(twin).driver is not None  # the twin loads, its servo checked
    refused = tmp_path / "refused.toml"
    assert identify([str(bag), "-o", str(refused), "--no-plot"]) == 1
    error = capsys.readouterr().err
    assert error == (
        "identify: error: the runs record a servo's position goals but no torque, so neither the arm's dynamics nor "
        "the servo's gains in N*m/rad can be told from them alone; pass --scenario with the arm (its masses and "
        "gravity)\n"
    )
    assert not refused.exists()


def test_identify_refuses_servo_runs_it_can_tell_nothing_of(prior, tmp_path, capsys):
    bag = bag_of(servo_run(prior, seconds=0.05), tmp_path)  # 12 frames
    with pytest.raises(IdentificationError, match="nothing of the servo could be told"):
        from skelarm_ros.identification.data import BagOptions
        from skelarm_ros.identification.servo import identify_servo

        identify_servo([bag], tmp_path / "t.toml", prior=load_arm(prior), bag=BagOptions())


def test_with_the_servos_torque_identify_fits_the_arm_and_writes_the_servo_beside_it(prior, tmp_path, capsys):
    run = servo_run(prior, seconds=12.0, amplitude=0.6)
    bag = bag_of(run, tmp_path, effort=True)
    twin = tmp_path / "twin.toml"
    arguments = [str(bag), "-o", str(twin), "--scenario", str(prior), "--no-plot"]
    assert identify(arguments) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "servo (position goals): fitted on the joint states' effort (the servo's torque)" in out, out
    written = load_arm(twin)
    assert written.driver is not None and written.driver.interface == "position"
    np.testing.assert_allclose(written.driver.servo_kp, KP, rtol=0.05)
    np.testing.assert_allclose(written.limits.effort, LIMIT, rtol=0.05)
