"""identify on a geared arm under gravity, simulated by MuJoCo: gravity is never hidden in a torque offset.

The arm is the three-link lab arm of test/geared_arm.py (``THREE_LINK``): the bundled
``excitation_vertical`` arm with its masses, centres of mass and inertias off, armature,
viscous and Coulomb friction, in the vertical plane, integrated by MuJoCo (RK4) on 0.5 ms
substeps of its driver's 2 ms sample; the driver's current loop lags each command by
1.5 ms, its encoders count 16 bits, its velocity and effort are noisy, and it publishes
five joints (two gripper fingers) in its own order. Two recordings:

- the lab's own PD tracking a narrow multisine about one posture (the shoulder link
  within 37 deg): the postures cannot tell the shoulder's and elbow's offsets from gravity;
- the project's excitation for this arm (``excitation_vertical``): wide postures.

Each with and without a true 0.5 N*m bias of the published effort, with velocities and
from positions only; and the same arm moving in the horizontal plane, where the offsets
are separable by design. The twins are judged as the simulator runs them: held-out
torques (rigid body and armature by the engine's model, friction, the effort bias) and a
free fall of the engine's arm built from the twin scenario against MuJoCo's.
"""

from __future__ import annotations

import re
import tomllib
import warnings

import numpy as np
import pytest
from geared_arm import (
    HELDOUT_FREQUENCIES,
    LAB_HELDOUT_FREQUENCIES,
    THREE_LINK,
    GearedArm,
    excitation_controller,
    lab_pd,
    shared_folder,
    write_run,
)

from skelarm_ros.identification.identify import identify, main
from skelarm_ros.identification.offsets import SEPARATION
from skelarm_ros.sim.engine import ArmEngine
from skelarm_ros.sim.scenario import load_arm

JOINTS = ",".join(THREE_LINK.joints)
POSTURE = [40.0, 30.0, -20.0]  # degrees: the lab PD's posture
NARROW = [20.0, 20.0, 30.0]  # degrees: its multisine's amplitudes
BIAS = 0.5  # N*m: the torque sensor's bias on every arm joint
RELEASE = np.radians([0.0, 0.0, 0.0])  # the arm held out horizontally, then let go
FALL = 1.0  # s


def _biased(run, bias: float):
    """The run as a driver whose torque sensor reads ``bias`` N*m high publishes it."""
    from dataclasses import replace

    return replace(run, effort=run.effort + bias)


BAGS = ("narrow", "positions", "narrow_held", "narrow_biased", "wide", "wide_held")


def _simulate(folder):
    """The MuJoCo runs as the driver's bags, the prior, and the arm's free fall."""
    arm = GearedArm(THREE_LINK)
    rng = np.random.default_rng
    control, q0 = lab_pd(THREE_LINK, POSTURE, NARROW)
    narrow = arm.drive_run(control, 20.0, q0, rng=rng(0))
    control, q0 = lab_pd(THREE_LINK, POSTURE, NARROW, LAB_HELDOUT_FREQUENCIES, 8.0)
    narrow_held = arm.drive_run(control, 8.0, q0, rng=rng(1))
    control, q0 = excitation_controller(lab=THREE_LINK)
    wide = _biased(arm.drive_run(control, 20.0, q0, rng=rng(2)), BIAS)
    control, q0 = excitation_controller(HELDOUT_FREQUENCIES, 8.0, lab=THREE_LINK)
    wide_held = _biased(arm.drive_run(control, 8.0, q0, rng=rng(3)), BIAS)
    write_run(narrow, folder / "narrow_bag", lab=THREE_LINK)
    write_run(narrow, folder / "positions_bag", lab=THREE_LINK, velocity=False, commands=False)
    write_run(narrow_held, folder / "narrow_held_bag", lab=THREE_LINK)
    write_run(_biased(narrow, BIAS), folder / "narrow_biased_bag", lab=THREE_LINK)
    write_run(wide, folder / "wide_bag", lab=THREE_LINK)
    write_run(wide_held, folder / "wide_held_bag", lab=THREE_LINK)
    THREE_LINK.prior_scenario(folder / "prior.toml")
    np.save(folder / "fall.npy", arm.fall(RELEASE, FALL))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """The runs (simulated once per session), the prior, the arm's free fall, and a folder for twins."""
    shared = shared_folder(tmp_path_factory, "vertical", _simulate)
    return {
        "folder": tmp_path_factory.mktemp("vertical"),
        "bags": {name: shared / f"{name}_bag" for name in BAGS},
        "prior": shared / "prior.toml",
        "fall": np.load(shared / "fall.npy"),
    }


def _run(lab, name: str, capsys, *, bag: str, heldout: str | None, extra=()) -> tuple[int, str, str]:
    output = lab["folder"] / f"{name}.toml"
    argv = [str(lab["bags"][bag]), "--scenario", str(lab["prior"]), "--joints", JOINTS, "-o", str(output)]
    if heldout:
        argv += ["--validate", str(lab["bags"][heldout])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main([*argv, *extra, "--no-plot", "--force"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _errors(out: str) -> tuple[float, float]:
    line = next(line for line in out.splitlines() if line.startswith("held-out"))
    return float(line.split("twin ")[1].split(" %")[0]), float(line.split("prior ")[1].split(" %")[0])


def _fall(lab, scenario) -> float:
    """The largest angle (deg) between the engine's arm of ``scenario`` (its drive too) and MuJoCo's in the fall."""
    setup = load_arm(scenario)
    skeleton = setup.skeleton.clone()
    for link in skeleton.links[1:]:  # released where the real arm is, limits or not
        link.prop.qmin, link.prop.qmax = -np.pi, np.pi
    skeleton.set_state(q=RELEASE)
    engine = ArmEngine(skeleton, 0.0005, grav_vec=setup.grav_vec, enforce_limits=False, drive=setup.drive)
    truth = lab["fall"]
    angles = [engine.q.copy()]
    for _ in range(len(truth) - 1):
        for _ in range(round(THREE_LINK.period / engine.dt)):
            engine.step(np.zeros(3))
        angles.append(engine.q.copy())
    return float(np.degrees(np.max(np.abs(np.array(angles) - truth))))


def _table(lab, name: str) -> dict:
    return tomllib.loads((lab["folder"] / f"{name}.toml").read_text(encoding="utf-8"))


def test_the_arm_falls_far(lab):
    assert np.degrees(np.ptp(lab["fall"][:, 0])) > 120.0  # the shoulder swings down and past


def test_narrow_postures_leave_the_offsets_out_and_the_twin_holds_and_falls_like_the_arm(lab, capsys):
    code, out, err = _run(lab, "narrow", capsys, bag="narrow", heldout="narrow_held")
    assert code == 0, err
    # the shoulder's and elbow's offsets cannot be told from gravity: left out, with the figures and the fix
    assert "offsets (the bias of the published effort" in out
    line = next(line for line in out.splitlines() if line.startswith("offsets"))
    figures = {part.split()[0]: float(part.split()[1]) for part in line.split("): ")[1].split(", ")}
    assert figures["shoulder"] < SEPARATION and figures["elbow"] < SEPARATION < figures["wrist"], line
    assert "shoulder 0.011 left out, elbow" in line and "wrist 0.33 identified" in line
    notes = [line for line in err.splitlines() if "leaves out the torque offset" in line]
    assert len(notes) == 1, err
    for words in (
        "of shoulder, elbow, which the runs cannot tell apart",
        "link 1 (shoulder) between 20 and 57 deg from the base's x axis (a 37 deg sweep)",
        "sweeping each over 91 deg or more would separate them",
        "the twin keeps the prior's effort bias for them (0, 0 N*m)",
    ):
        assert words in notes[0], notes[0]
    twin, prior = _errors(out)
    assert twin < 2.0 and prior > 5.0 * twin, out
    assert "the twin is better than its prior" in out
    # no gravity in an offset: the twin's links carry it, and its [driver] has only the wrist's small bias
    tables = _table(lab, "narrow")
    bias = tables["driver"]["effort_bias"]
    assert bias[:2] == [0.0, 0.0] and abs(bias[2]) < 0.05, bias
    assert tables["identification"]["torque_offset"]["identified"] == [False, False, True]
    assert _fall(lab, lab["folder"] / "narrow.toml") < 3.0
    assert _fall(lab, lab["prior"]) > 20.0


def test_from_positions_only_the_twin_predicts_within_three_percent_and_falls_like_the_arm(lab, capsys):
    code, out, err = _run(lab, "positions", capsys, bag="positions", heldout="narrow_held")
    assert code == 0, err
    assert "velocity: differentiated from the positions" in out
    twin, prior = _errors(out)
    assert twin < 3.0 and prior > 3.0 * twin, out
    assert _fall(lab, lab["folder"] / "positions.toml") < 3.0


def test_offset_asked_for_on_narrow_postures_is_refused_with_the_reason(lab, capsys, tmp_path):
    output = tmp_path / "twin.toml"
    argv = [str(lab["bags"]["narrow"]), "--scenario", str(lab["prior"]), "--joints", JOINTS, "-o", str(output)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main([*argv, "--offset", "--end", "10"])  # half the run: as narrow
    captured = capsys.readouterr()
    assert code == 1 and captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("identify: error: --offset asks for the torque offset of shoulder")
    assert re.search(r"\(separation shoulder 0\.0\d+, elbow 0\.0\d+, below 0\.1\)", lines[0]), lines[0]
    assert "over 91 deg or more" in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_a_biased_sensor_on_narrow_postures_is_named_joint_by_joint(lab, capsys):
    code, _, err = _run(lab, "narrow_biased", capsys, bag="narrow_biased", heldout=None)
    assert code == 0, err
    assert "leaves out the torque offset of shoulder, elbow, which the runs cannot tell apart" in err
    assert "link 1 (shoulder) between 20 and 57 deg" in err
    bias = _table(lab, "narrow_biased")["driver"]["effort_bias"]
    assert bias[:2] == [0.0, 0.0] and abs(bias[2] - BIAS) < 0.1, bias  # the wrist's, separated


def test_on_the_projects_wide_excitation_a_biased_sensor_is_found_and_the_twin_is_as_good(lab, capsys):
    bag = "wide"
    code, out, err = _run(lab, bag, capsys, bag=bag, heldout="wide_held")
    assert code == 0, err
    assert "leaves out" not in err
    line = next(line for line in out.splitlines() if line.startswith("offsets"))
    assert line.count("identified") == 3, line
    bias = np.array(_table(lab, bag)["driver"]["effort_bias"])
    np.testing.assert_allclose(bias, BIAS, atol=0.05)
    twin, prior = _errors(out)
    assert twin < 2.0 and prior > 5.0 * twin, out
    assert _fall(lab, lab["folder"] / f"{bag}.toml") < 3.0


@pytest.fixture(scope="module")
def horizontal(tmp_path_factory):
    """The same arm moving in the horizontal plane under the lab PD's narrow multisine, its sensor biased."""
    folder = tmp_path_factory.mktemp("horizontal")
    flat = THREE_LINK.horizontal()
    control, q0 = lab_pd(flat, POSTURE, NARROW, duration=8.0)
    run = GearedArm(flat).drive_run(control, 8.0, q0, rng=np.random.default_rng(4))
    return {
        "effort_rms": np.sqrt(np.mean(run.effort**2, axis=0)),
        "bag": write_run(_biased(run, BIAS), folder / "flat_bag", lab=flat),
        "prior": flat.prior_scenario(folder / "prior.toml", driver={"effort_noise": 0.1, "seed": 3}),
        "folder": folder,
    }


def test_without_gravity_the_offsets_are_separable_by_design(horizontal):
    result = identify(
        [horizontal["bag"]],
        horizontal["folder"] / "twin.toml",
        scenario=horizontal["prior"],
        joints=THREE_LINK.joints,
        plot=False,
    )
    assert result.notes == ()  # no offset left out, nothing else to say
    assert result.offsets is not None
    assert np.all(result.offsets.separation > 0.5), result.offsets.separation
    np.testing.assert_allclose(result.effort_bias, BIAS, atol=0.05)
    driver = tomllib.loads((horizontal["folder"] / "twin.toml").read_text(encoding="utf-8"))["driver"]
    assert driver["seed"] == 3  # the prior's key kept; the lab's driver: 500 Hz, no delay, a 1.5 ms current loop
    assert driver["rate"] == 500.0 and driver["command_delay"] == 0.0 and driver["encoder_ticks"] == [2**16] * 3
    np.testing.assert_allclose(driver["velocity_noise"], THREE_LINK.velocity_noise, rtol=0.05)
    truth = THREE_LINK.effort_noise * horizontal["effort_rms"]
    assert np.all(np.asarray(driver["effort_noise"]) >= truth), (driver["effort_noise"], truth)
    assert "an upper bound" in next(line for line in result.driver.found if line.startswith("effort_noise"))
    np.testing.assert_allclose(driver["effort_bias"], result.effort_bias)
