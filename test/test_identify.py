"""identify: simulated exciting runs of random arms give the base parameters exactly, a consistent twin, held-out
torques; every bad input is refused with one sentence and no output."""

from __future__ import annotations

import math
import tomllib
import warnings

import numpy as np
import pytest
import skelarm
from excite import (
    HELDOUT_FREQUENCIES,
    excitation_run,
    from_arrays,
    robot_tables,
    save,
    wide_arm,
    with_torque,
    write_toml,
    wrong_prior,
)

from skelarm_ros.identification import IdentificationError
from skelarm_ros.identification.consistency import link_bounds
from skelarm_ros.identification.identify import identify, main
from skelarm_ros.identification.regressor import base_of, standard_of, structure

EXACT = 1e-8


def _relative_error(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.max(np.abs(found - truth)) / np.max(np.abs(truth)))


def _assert_consistent(result, prior: skelarm.Skeleton) -> None:
    """Every mass and inertia positive, every centre of mass in its link's box, FIGAROH's check passed."""
    bounds = link_bounds(prior)
    for link, box in zip(result.params.links, bounds, strict=True):
        assert link.mass >= box.mass_min > 0.0
        assert link.inertia >= box.inertia_min * (1.0 - 1e-6) > 0.0
        assert box.x[0] - 1e-9 <= link.com[0] <= box.x[1] + 1e-9
        assert box.y[0] - 1e-9 <= link.com[1] <= box.y[1] + 1e-9
    assert result.params.feasibility == ["feasible"] * len(bounds)


@pytest.mark.parametrize(("num_links", "gravity"), [(2, False), (3, True), (4, False), (5, True)])
def test_noise_free_runs_give_the_base_parameters_exactly(num_links, gravity, tmp_path):
    rng = np.random.default_rng(100 + num_links)
    grav_vec = np.array([0.0, -9.81]) if gravity else None
    arm = wide_arm(rng, num_links, gravity=gravity)
    prior = wrong_prior(rng, arm)
    log = save(excitation_run(arm, grav_vec=grav_vec), tmp_path / "run.sklog.npz")
    simulator = {"dt": 0.002, "grav_vec": [0.0, -9.81]} if gravity else {"dt": 0.002}
    scenario = write_toml(robot_tables(prior, simulator=simulator), tmp_path / "prior.toml")
    result = identify([log], tmp_path / "twin.toml", scenario=scenario)

    inertial = 3 * num_links if gravity else 3 * num_links - 2
    # armature, viscous and Coulomb friction per joint (a log's torque is applied, no sensor's: no offset);
    # the first armature regroups with Izz_j1
    assert len(result.fit.values) == inertial + 3 * num_links - 1
    assert result.offsets is None and "not the effort a driver publishes" in result.no_offset
    assert list(result.params.regrouped) == ["Ia_j1"]
    truth = base_of(result.fit, standard_of(arm, grav_vec))
    assert _relative_error(result.fit.values, truth) < EXACT
    assert result.params.exact
    _assert_consistent(result, prior)
    twin = skelarm.Skeleton.from_toml(tmp_path / "twin.toml")
    assert [link.prop.length for link in twin.links] == [link.prop.length for link in prior.links]
    assert _relative_error(base_of(result.fit, standard_of(twin, grav_vec)), truth) < EXACT
    assert (tmp_path / "twin.png").stat().st_size > 10_000


def test_one_percent_torque_noise_twin_predicts_held_out_torques_within_one_percent(tmp_path):
    rng = np.random.default_rng(7)
    for num_links in (2, 3, 4, 5):
        arm = wide_arm(rng, num_links)
        prior = wrong_prior(rng, arm)
        run = excitation_run(arm, duration=10.0)
        tau = run.channel("tau")
        noisy = with_torque(run, tau + 0.01 * np.std(tau, axis=0) * rng.standard_normal(tau.shape))
        heldout = excitation_run(arm, duration=6.0, frequencies=HELDOUT_FREQUENCIES)
        scenario = write_toml(robot_tables(prior), tmp_path / f"prior{num_links}.toml")
        result = identify(
            [save(noisy, tmp_path / f"noisy{num_links}.sklog.npz")],
            tmp_path / f"twin{num_links}.toml",
            scenario=scenario,
            validate=[save(heldout, tmp_path / f"heldout{num_links}.sklog.npz")],
            plot=False,
        )
        prediction = result.predictions[0]
        twin_error = prediction.error(prediction.twin, prediction.measured)
        prior_error = prediction.error(prediction.prior, prediction.measured)
        assert twin_error < 0.01, (num_links, twin_error)
        assert prior_error > 0.05, (num_links, prior_error)
        _assert_consistent(result, prior)


def test_the_scenario_tables_are_kept_and_the_twin_runs_as_a_scenario(tmp_path):
    rng = np.random.default_rng(3)
    arm = wide_arm(rng, 3)
    prior = wrong_prior(rng, arm)
    task = {
        "type": "joint_trajectory_tracking",
        "reference": "sum_of_sines",
        "duration": 2.0,
        "frequencies": [0.5, 1.0],
        "amplitudes": [20.0, 20.0, 20.0],
    }
    controller = {"type": "excitation", "law": "computed_torque", "kp": 100.0, "kd": 20.0}
    scenario = write_toml(
        robot_tables(prior, task=task, simulator={"dt": 0.002}, controller=controller), tmp_path / "prior.toml"
    )
    log = save(excitation_run(arm), tmp_path / "run.sklog.npz")
    identify([log], tmp_path / "twin.toml", scenario=scenario, plot=False)
    written = tomllib.loads((tmp_path / "twin.toml").read_text(encoding="utf-8"))
    original = tomllib.loads(scenario.read_text(encoding="utf-8"))
    for table in ("task", "simulator", "controller", "initial"):
        assert written[table] == original[table]
    assert [link["length"] for link in written["skeleton"]["link"]] == [
        link["length"] for link in original["skeleton"]["link"]
    ]
    assert written["identification"]["reproduces_base_parameters"] is True
    from skelarm_ros.control import build_control_loop

    loop, problems = build_control_loop(tmp_path / "twin.toml")
    assert problems == []
    assert type(loop.controller).__name__ == "ExcitationController"


def test_joint_state_effort_applied_until_the_frame_is_aligned_exactly(tmp_path):
    rng = np.random.default_rng(11)
    arm = wide_arm(rng, 3)
    run = excitation_run(arm)
    arrays = run.to_arrays()
    effort = np.vstack([np.zeros((1, 3)), arrays["tau"][:-1]])  # frame k carries the torque of step k-1
    arrays["tau"] = effort
    extra = {
        "effort": {"kind": "joint_torque", "unit": "N*m", "source": "joint_states", "timing": "applied_until_frame"}
    }
    log = save(from_arrays(run, arrays, extra), tmp_path / "effort.sklog.npz")
    result = identify([log], tmp_path / "twin.toml", plot=False)  # the log's own skeleton is the geometry
    truth = base_of(result.fit, standard_of(arm))
    assert _relative_error(result.fit.values, truth) < EXACT


def test_nan_masked_and_missing_frames_are_dropped_and_counted(tmp_path):
    rng = np.random.default_rng(12)
    arm = wide_arm(rng, 2)
    arrays = excitation_run(arm).to_arrays()
    arrays["tau"][100, 1] = np.nan
    arrays["dq"][200, 0] = np.nan
    arrays["valid_q"] = np.isfinite(arrays["q"])
    arrays["valid_q"][300, 1] = False
    keep = np.ones(len(arrays["time"]), dtype=bool)
    keep[1000:1040] = False  # messages lost by a recorder
    arrays = {name: value[keep] for name, value in arrays.items()}
    log = save(from_arrays(excitation_run(arm, duration=0.01), arrays), tmp_path / "holes.sklog.npz")
    result = identify([log], tmp_path / "twin.toml", plot=False)
    assert result.samples.dropped == 4  # tau[100]; dq[200] ends two steps; q[300] masked
    assert result.samples.gaps == 1
    assert _relative_error(result.fit.values, base_of(result.fit, standard_of(arm))) < EXACT


def test_two_runs_and_a_filter_stay_exact_and_the_bag_path_reads_a_bag(tmp_path):
    from skelarm_ros.bags.log_to_bag import log_to_bag

    rng = np.random.default_rng(13)
    arm = wide_arm(rng, 2)
    first = save(excitation_run(arm, duration=3.0), tmp_path / "one.sklog.npz")
    second = save(excitation_run(arm, duration=3.0, frequencies=HELDOUT_FREQUENCIES), tmp_path / "two.sklog.npz")
    bag = tmp_path / "two_bag"
    log_to_bag(second, bag)
    result = identify([first, bag], tmp_path / "twin.toml", cutoff=20.0, plot=False)
    assert result.efforts[1].startswith("effort of /joint_states")  # measured, beside the commands
    assert result.fit.samples == 2 * (1500 - 2 * 26)  # the filter leaves out 1 / (20 Hz) = 26 steps at each end
    assert _relative_error(result.fit.values, base_of(result.fit, standard_of(arm))) < EXACT


def test_friction_is_identified_and_carried_by_the_twin(tmp_path):
    rng = np.random.default_rng(14)
    arm = wide_arm(rng, 3)
    friction = [(0.3, 0.2), (0.1, 0.05), (0.05, 0.02)]
    log = save(excitation_run(arm, friction=friction), tmp_path / "friction.sklog.npz")
    heldout = save(
        excitation_run(arm, friction=friction, frequencies=HELDOUT_FREQUENCIES), tmp_path / "heldout.sklog.npz"
    )
    result = identify([log], tmp_path / "twin.toml", validate=[heldout], plot=False)
    found = np.array(list(result.params.friction.values()))
    np.testing.assert_allclose(found, friction, rtol=1e-8)
    inertial = [k for k, name in enumerate(result.fit.names) if name.split("_")[0] not in ("fv", "fs", "Ia", "off")]
    truth = base_of(result.fit, standard_of(arm))
    assert _relative_error(result.fit.values[inertial], truth[inertial]) < 1e-6
    prediction = result.predictions[0]
    assert prediction.error(prediction.twin, prediction.measured) < 1e-8
    links = tomllib.loads((tmp_path / "twin.toml").read_text(encoding="utf-8"))["skeleton"]["link"]
    np.testing.assert_allclose([link["viscous"] for link in links], [value[0] for value in friction], rtol=1e-8)
    np.testing.assert_allclose([link["coulomb"] for link in links], [value[1] for value in friction], rtol=1e-8)
    assert max(abs(link["armature"]) for link in links) < 1e-8  # the arm has none
    from skelarm_ros.sim.scenario import load_arm

    twin = load_arm(tmp_path / "twin.toml")
    assert twin.drive is not None and twin.drive.has_friction  # the simulator runs it with its friction


def test_the_structure_has_3n_minus_2_base_parameters_without_gravity_and_3n_with():
    rng = np.random.default_rng(5)
    for n in (2, 3, 4, 5):
        arm = wide_arm(rng, n)
        assert structure(arm).rank == 3 * n - 2
        assert structure(arm, [0.0, -9.81]).rank == 3 * n
        assert structure(arm, terms=("viscous", "coulomb")).rank == 5 * n - 2
        assert structure(arm, [0.0, -9.81], terms=("armature", "viscous", "coulomb", "offset")).rank == 7 * n - 1


# -- bad input -------------------------------------------------------------------------------------------


@pytest.fixture
def good(tmp_path):
    rng = np.random.default_rng(21)
    arm = wide_arm(rng, 2)
    run = excitation_run(arm, duration=2.0)
    return arm, run, save(run, tmp_path / "good.sklog.npz")


def _refused(tmp_path, capsys, argv: list[str], *words: str) -> str:
    output = tmp_path / "out" / "twin.toml"
    output.parent.mkdir(exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main([*argv, "-o", str(output)])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("identify: error: "), captured.err
    for word in words:
        assert word in lines[0], lines[0]
    assert list(output.parent.iterdir()) == []
    return lines[0]


def test_a_run_without_torque_is_refused(good, tmp_path, capsys):
    _, run, _ = good
    log = save(with_torque(run, np.full(run.channel("tau").shape, np.nan)), tmp_path / "notau.sklog.npz")
    _refused(tmp_path, capsys, [str(log)], "no joint torque")


def test_too_few_samples_are_refused(good, tmp_path, capsys):
    _, run, _ = good
    arrays = {name: value[:6] for name, value in run.to_arrays().items()}
    log = save(from_arrays(run, arrays), tmp_path / "short.sklog.npz")
    _refused(tmp_path, capsys, [str(log)], "too few samples")


def test_a_run_that_does_not_excite_a_parameter_names_it_and_the_rank(good, tmp_path, capsys):
    _, run, _ = good
    arrays = run.to_arrays()
    arrays["q"][:, 1] = 0.3  # the second joint held still: its inertia never shows
    arrays["dq"][:, 1] = 0.0
    log = save(from_arrays(run, arrays), tmp_path / "still.sklog.npz")
    line = _refused(tmp_path, capsys, [str(log)], "do not move joint j2 sweeps 0 deg", "record a run that moves")
    assert "j1" not in line


def test_times_that_do_not_increase_are_refused(good, tmp_path, capsys):
    _, run, _ = good
    arrays = run.to_arrays()
    arrays["time"][50] = arrays["time"][49]
    log = save(from_arrays(run, arrays), tmp_path / "time.sklog.npz")
    _refused(tmp_path, capsys, [str(log)], "times do not increase at frame 50")


def test_masked_everywhere_is_too_few_samples(good, tmp_path, capsys):
    _, run, _ = good
    arrays = run.to_arrays()
    arrays["valid_tau"] = np.zeros(arrays["tau"].shape, dtype=bool)
    arrays["valid_tau"][::200] = True  # most torque masked: dropped and counted, not used
    log = save(from_arrays(run, arrays), tmp_path / "masked.sklog.npz")
    _refused(tmp_path, capsys, [str(log)], "too few samples", "dropped as NaN or masked")


@pytest.mark.parametrize(
    ("setup", "words"),
    [
        (lambda tmp, log: [str(tmp / "missing_bag")], ("does not exist",)),
        (
            lambda tmp, log: [str((tmp / "junk.sklog.npz").write_bytes(b"junk") and tmp / "junk.sklog.npz")],
            ("not a readable",),
        ),
        (lambda tmp, log: [str((tmp / "junk_bag").mkdir() or tmp / "junk_bag")], ("is not a bag",)),
        (lambda tmp, log: [str(log), "--scenario", str(tmp / "none.toml")], ("does not exist",)),
        (lambda tmp, log: [str(log), "--filter", "1000"], ("Nyquist",)),
        (lambda tmp, log: [str(log), "--validate", str(tmp / "gone.sklog.npz")], ("does not exist",)),
        (
            lambda tmp, log: [str(log), "--offset"],
            ("--offset asks for the bias of the published effort, but the torque of", "logged torque"),
        ),
        (lambda tmp, log: [str(log), "--offset", "--without", "offset"], ("--without offset leaves out",)),
    ],
    ids=[
        "missing",
        "corrupt log",
        "not a bag",
        "missing prior",
        "filter above Nyquist",
        "missing held-out run",
        "offset of a torque no driver published",
        "offset asked for and left out",
    ],
)
def test_other_bad_inputs_are_refused(good, tmp_path, capsys, setup, words):
    _, _, log = good
    _refused(tmp_path, capsys, setup(tmp_path, log), *words)


def test_a_log_without_an_arm_needs_a_scenario(good, tmp_path, capsys):
    _, run, _ = good
    plain = skelarm.StateLog(None, channel_meta=run.channel_meta)
    for k, t in enumerate(run.times):
        plain.record(float(t), q=run.channel("q")[k], dq=run.channel("dq")[k], tau=run.channel("tau")[k])
    log = save(plain, tmp_path / "noarm.sklog.npz")
    _refused(tmp_path, capsys, [str(log)], "--scenario")


def test_an_output_in_a_missing_folder_is_refused_before_anything_is_read(good, tmp_path):
    _, _, log = good
    with pytest.raises(IdentificationError, match="does not exist"):
        identify([log], tmp_path / "nowhere" / "twin.toml")
    with pytest.raises(IdentificationError, match=r"\.toml"):
        identify([log], tmp_path / "twin.yaml")


def test_the_command_line_prints_the_report(good, tmp_path, capsys):
    _, _, log = good
    assert main([str(log), "-o", str(tmp_path / "twin.toml")]) == 0
    out = capsys.readouterr().out
    for words in (
        "base parameters (9, FIGAROH double QR), condition number",  # 4 inertial, armature, friction; no offset
        "fit residual RMS",
        "twin: physically",
        "offsets: no torque offset: the torque of",
    ):
        assert words in out
    assert math.isfinite(
        tomllib.loads((tmp_path / "twin.toml").read_text(encoding="utf-8"))["identification"]["condition_number"]
    )


def test_a_twin_no_better_than_its_prior_on_held_out_runs_is_refused_with_the_figures(tmp_path, capsys):
    """The prior is the true arm; the twin, fitted to noisy torques, can only be worse on a clean held-out run."""
    rng = np.random.default_rng(31)
    arm = wide_arm(rng, 2)
    run = excitation_run(arm, duration=4.0)
    tau = run.channel("tau")
    noisy = save(
        with_torque(run, tau + 0.02 * np.std(tau, axis=0) * rng.standard_normal(tau.shape)), tmp_path / "n.sklog.npz"
    )
    heldout = save(excitation_run(arm, duration=3.0, frequencies=HELDOUT_FREQUENCIES), tmp_path / "h.sklog.npz")
    prior = write_toml(robot_tables(arm, simulator={"dt": 0.002}), tmp_path / "truth.toml")
    output = tmp_path / "out" / "twin.toml"
    output.parent.mkdir()
    code = main([str(noisy), "--scenario", str(prior), "--validate", str(heldout), "-o", str(output)])
    captured = capsys.readouterr()
    assert code == 1
    assert "the twin is NOT better than its prior" in captured.out  # the report, with the figures
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("identify: error: the twin is not better than its prior"), lines
    assert "nothing is written: keep the prior" in lines[0]
    assert list(output.parent.iterdir()) == []


def test_the_driver_table_keeps_the_prior_s_keys_and_takes_the_estimates():
    from skelarm_ros.identification.twin import driver_table

    prior = {"rate": 500.0, "effort_noise": 0.1, "effort_bias": [0.1, 0.2], "seed": 3}
    table = driver_table(prior, 2, {"effort_bias": np.array([0.4, -0.3]), "command_delay": None})
    assert table == {"rate": 500.0, "effort_noise": [0.1, 0.1], "effort_bias": [0.4, -0.3], "seed": 3}
    assert driver_table(None, 2, {"effort_bias": None}) == {}
    assert driver_table(None, 2, {"effort_bias": 0.5}) == {"effort_bias": [0.5, 0.5]}
    with pytest.raises(IdentificationError, match=r"the twin: \[driver\].effort_bias has 3 values"):
        driver_table(None, 2, {"effort_bias": [0.1, 0.2, 0.3]})


def test_an_offset_is_as_separate_from_a_link_s_gravity_as_the_link_sweeps_evenly():
    from skelarm_ros.identification.offsets import SEPARATION, SWEEP, even_sweep_separation

    sweeps = np.radians([10.0, 37.0, 91.0, 140.0, 270.0, 360.0])
    figures = [even_sweep_separation(float(sweep)) for sweep in sweeps]
    assert figures == sorted(figures) and figures[0] < 2e-3
    assert figures[-1] == pytest.approx(1.0)
    # the constant's residual after fitting cos and sin over an even sweep, by least squares
    angles = np.linspace(-np.radians(20.0), np.radians(20.0), 20001)
    columns = np.column_stack([np.cos(angles), np.sin(angles)])
    residual = 1.0 - columns @ np.linalg.lstsq(columns, np.ones_like(angles), rcond=None)[0]
    assert even_sweep_separation(np.radians(40.0)) == pytest.approx(
        np.linalg.norm(residual) / np.sqrt(angles.size), rel=1e-3
    )
    assert even_sweep_separation(SWEEP) == pytest.approx(SEPARATION)
    assert np.degrees(SWEEP) == pytest.approx(91.2, abs=0.05)
