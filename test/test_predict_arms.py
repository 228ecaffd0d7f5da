"""Predicting a hardware run of an arm that is not the twin's own: a MuJoCo arm behind a driver of this test's own.

The arm is the four-link reach arm in the vertical plane with its masses 5-10 % off, and
armature, viscous and Coulomb friction (test/geared_arm.py), simulated by MuJoCo (RK4 at
0.5 ms). Its driver publishes at 250 Hz with velocity and effort noise, and a command acts
4 ms after the driver's newest state when it arrives, at MuJoCo's own steps. As a lab would:

1. record an excitation run and ``identify`` the twin (as test_identify_arms.py does);
2. ``identify`` estimates the driver too (its rate, command delay, noise, encoder ticks) into the
   twin's ``[driver]`` table; predict the reach with the twin (``hardware:=twin``, lockstep), and
   with the nominal model behind the same ``[driver]`` beside it;
3. run the reach on the arm (``hardware:=none``) and ``compare --angles`` it with the predictions.

The twin's prediction must come within 10 mrad RMS of the arm's joint angles, and within 0.35
times the nominal model's. Offline (the driver as a loop in this process) and over ROS (the
stand-in driver, test/standin_driver.py with ``engine:=mujoco``, and the real graph).
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import procs
import pytest
from excite import robot_tables, write_toml
from geared_arm import FOUR_LINK, GRAVITY, GearedArm, excitation_controller, true_arm, write_run

from skelarm_ros.bags.angles import Angles, compare_angles, load_angles
from skelarm_ros.cli import compare
from skelarm_ros.cli.predict import predict, twin_loop
from skelarm_ros.identification.identify import identify as identify_twin
from skelarm_ros.identification.identify import main as identify
from skelarm_ros.sim.scenario import load_arm

REACH = 3.0  # s compared: the 2 s reach and a second held at the target
START = [16.0, 16.0, 16.0, 16.0]  # degrees: a pose that reads back exactly from the twin's TOML
STANDIN = {"rate": 250.0, "command_delay": 0.004, "velocity_noise": 0.02, "effort": True, "effort_noise": 0.02}
PRIORITY = 50  # SCHED_FIFO for the driver and the controller, as on a real arm, where the user may
ARM_JOINTS = FOUR_LINK.joints
NAMES = ",".join(ARM_JOINTS)
BOUND = 0.010  # rad RMS
BETTER = 0.35  # the twin's error at most this share of the nominal model's


@pytest.fixture(scope="module")
def arms(tmp_path_factory) -> dict[str, Any]:
    """The nominal scenario (the prior), the identified twin with its estimated [driver], the nominal one behind it."""
    folder = tmp_path_factory.mktemp("predict")
    arm = FOUR_LINK.nominal_arm()
    for link in arm.links[1:]:  # room for the arm to sag under gravity in its soft start
        link.prop.qmin, link.prop.qmax = -math.radians(170.0), math.radians(170.0)
    arm.set_state(q=np.radians(START))
    tables = {
        "simulator": {"dt": 0.002, "grav_vec": list(GRAVITY)},
        "task": {"type": "reaching", "target": {"pos": [0.0, 0.4], "tolerance": 0.02}, "duration": 2.0},
        "controller": {"type": "computed_torque", "kp": 200.0, "kd": 30.0},
    }
    files = {"folder": folder, "nominal": write_toml(robot_tables(arm, **tables), folder / "nominal.toml")}
    control, q0 = excitation_controller()
    run = GearedArm().drive_run(control, 20.0, q0, rng=np.random.default_rng(0))
    files["effort_rms"] = np.sqrt(np.mean(run.effort**2, axis=0))  # the noise is 2 % of it
    bag = write_run(run, folder / "excitation_bag")
    files["commands_bag"] = write_run(run, folder / "commands_bag", effort="none")  # no measured effort
    files["twin"] = folder / "twin.toml"
    argv = [str(bag), "--scenario", str(files["nominal"]), "--joints", NAMES, "-o", str(files["twin"])]
    assert identify(argv) == 0
    files["twin_driver"] = files["twin"]
    files["nominal_driver"] = folder / "nominal_driver.toml"
    config = tomllib.loads(files["nominal"].read_text(encoding="utf-8"))
    config["driver"] = tomllib.loads(files["twin"].read_text(encoding="utf-8"))["driver"]
    write_toml(config, files["nominal_driver"])
    return files


def test_identify_estimates_the_driver_from_the_excitation_run(arms):
    """The lab's driver: 250 Hz, commands 4 ms (one tick) late, velocity noise 0.02 rad/s, 16-bit encoders,
    effort noise 2 % of each joint's torque RMS."""
    twin = tomllib.loads(arms["twin"].read_text(encoding="utf-8"))
    driver = twin["driver"]
    assert driver["rate"] == 250.0 and driver["command_delay"] == pytest.approx(FOUR_LINK.delay)
    assert driver["encoder_ticks"] == [2**16] * 4 and driver["position_noise"] == [0.0] * 4
    np.testing.assert_allclose(driver["velocity_noise"], FOUR_LINK.velocity_noise, rtol=0.05)
    np.testing.assert_allclose(driver["effort_noise"], FOUR_LINK.effort_noise * arms["effort_rms"], rtol=0.1)
    said = twin["identification"]["driver_not_estimated"]
    assert [line.split(":")[0] for line in said] == ["torque_lag"], said


def test_without_a_measured_effort_the_delay_is_read_from_the_motion(arms):
    output = arms["folder"] / "commands_twin.toml"
    result = identify_twin([arms["commands_bag"]], output, scenario=arms["nominal"], joints=ARM_JOINTS, end=8.0)
    assert result.driver.table["command_delay"] == pytest.approx(FOUR_LINK.delay)
    assert any(line.startswith("command_delay") and "fit the motion best" in line for line in result.driver.found)
    said = [line.split(":")[0] for line in result.driver.missing]
    assert said == ["effort_noise", "torque_lag"], result.driver.missing


def prediction(path: Path) -> Angles:
    """The lockstep hardware:=twin run of a scenario in this process (the graph's, bit for bit: test_twin_system.py)."""
    run = predict({"scenario": str(path), "joint_names": NAMES}, REACH)
    assert not run.stopped
    return Angles(path, "q", run.joint_names, run.stamps, run.position, 0, True)


def errors(hardware: Angles, twin: Angles, nominal_model: Angles) -> tuple[float, float]:
    return compare_angles(hardware, twin).rms, compare_angles(hardware, nominal_model).rms


def test_offline_the_twin_predicts_the_arms_reach_within_10_mrad_and_far_better_than_the_nominal_model(arms):
    loop, _ = twin_loop({"scenario": str(arms["twin"]), "hardware": "none", "mode": "realtime", "joint_names": NAMES})
    driver = GearedArm(FOUR_LINK, true_arm(4, load_arm(arms["nominal"]).skeleton))  # its commands 4 ms late

    def control(t: float, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        return loop.control(ARM_JOINTS, q.tolist(), dq.tolist(), round(t * 1e9)).torque

    run = driver.drive_run(control, REACH, np.radians(START), rng=np.random.default_rng(2))
    stamps = np.round(run.time * 1e9).astype(np.int64)
    hardware = Angles(Path("arm"), "q", list(ARM_JOINTS), stamps, run.q, 0, True)
    twin, nominal_model = errors(hardware, prediction(arms["twin_driver"]), prediction(arms["nominal_driver"]))
    assert twin < BOUND, (twin, nominal_model)
    assert twin < BETTER * nominal_model, (twin, nominal_model)


@pytest.mark.slow
@pytest.mark.serial  # the arm's driver runs in real time at 250 Hz
def test_over_ros_the_twins_lockstep_run_predicts_the_arms_hardware_none_reach(arms, tmp_path):
    folder = arms["folder"]
    hardware_bag, twin_bag = tmp_path / "hardware_bag", tmp_path / "twin_bag"
    run_on_the_arm(arms, hardware_bag, tmp_path)
    arguments = [f"scenario:={arms['twin_driver']}", "hardware:=twin", "mode:=lockstep", f"duration:={REACH}"]
    procs.run_launch([*arguments, f"joint_names:={NAMES}", f"record:={twin_bag}"])
    hardware, twin = load_angles(hardware_bag), load_angles(twin_bag)
    assert hardware.commanded and twin.commanded  # both timed from the state their first command answers
    measured, nominal_model = errors(hardware, twin, prediction(arms["nominal_driver"]))
    assert measured < BOUND, (measured, nominal_model)
    assert measured < BETTER * nominal_model, (measured, nominal_model)
    plot = folder / "compare.png"
    assert compare.main(["--angles", str(hardware_bag), str(twin_bag), "-o", str(plot), "--force"]) == 0
    assert plot.is_file()


def run_on_the_arm(arms: dict[str, Any], bag: Path, folder: Path) -> None:
    """The reach on the MuJoCo arm over ROS: the stand-in driver, and the graph of hardware:=none, recorded."""
    parameters = {
        "scenario": str(arms["nominal"]),  # the arm MuJoCo makes real, from its nominal model
        "arm_joints": list(ARM_JOINTS),
        "joints": list(ARM_JOINTS),
        "plant": "mujoco",
        "arm_seed": 4,
        "brake": True,
        "thread_priority": PRIORITY,
        **STANDIN,
    }
    arguments = [f"scenario:={arms['twin']}", "hardware:=none", f"joint_names:={NAMES}", f"record:={bag}"]
    procs.run_on_the_standin(parameters, [*arguments, f"thread_priority:={PRIORITY}"], folder, REACH + 0.5)
