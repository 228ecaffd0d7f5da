"""skelarm-ros tune as a user runs it: the search's determinism, a study shared by processes, the refusals.

The scenario is ``light_wrist_reach`` (the three-link reach behind a 250 Hz driver whose commands
act a tick late) with its task shortened to 0.5 s, so a trial (its runs: the task and the 2 s
hold, on each robust sample) takes a fraction of a second.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import optuna
import pytest
from geared_arm import reach_behind_driver

from skelarm_ros.cli import tune
from skelarm_ros.cli.predict import controller_params
from skelarm_ros.control.settings import ControlSettings
from skelarm_ros.sim.scenario import load_scenario
from skelarm_ros.tuning.evaluate import Evaluator, Problem
from skelarm_ros.tuning.study import GAINS, WORKER, Search, best_of, open_storage, search

SCENARIO = Path(__file__).resolve().parents[1] / "config" / "scenarios" / "light_wrist_reach.toml"
TUNED = SCENARIO.with_name("light_wrist_reach_tuned.toml")
TRIALS = 2


@pytest.fixture
def short(tmp_path: Path) -> Path:
    """light_wrist_reach with a 0.5 s task."""
    path = tmp_path / "short_reach.toml"
    path.write_text(SCENARIO.read_text(encoding="utf-8").replace("duration = 2.0", "duration = 0.5"), encoding="utf-8")
    return path


@pytest.fixture
def fast_driver(tmp_path: Path) -> Path:
    """The tuned reach, 0.5 s long, behind a 500 Hz driver without delay: gains that hold (a winner to check)."""
    path = tmp_path / "fast_driver.toml"
    text = TUNED.read_text(encoding="utf-8").replace("duration = 2.0", "duration = 0.5")
    text = text.replace("rate = 250\n", "rate = 500\n").replace("command_delay = 0.004\n", "command_delay = 0.0\n")
    path.write_text(text, encoding="utf-8")
    return path


def _trials(path: Path, seed: int, journal: Path) -> list[tuple[dict, float | None]]:
    """Every trial of a search of ``TRIALS`` trials: its sampled values and its score."""
    params = controller_params({"scenario": str(path)})
    problem = Problem(str(params.scenario), ControlSettings.of(params), twins=1, seed=seed)
    outcome = search(problem, Search(TRIALS, seed, storage=str(journal)), lambda *_: None)
    assert outcome.trials == TRIALS
    study = optuna.load_study(study_name=Search(TRIALS).study, storage=open_storage(str(journal)))
    return [(trial.params, trial.value) for trial in study.trials]


def test_the_same_seed_gives_the_same_trials_so_the_same_gains(short: Path, tmp_path: Path) -> None:
    first, again = (_trials(short, 7, tmp_path / f"journal{k}.log") for k in range(2))
    assert first == again  # the sampler's draws and the runs on the twin alike
    assert len({tuple(sorted(params.items())) for params, _ in first}) == TRIALS  # the scenario's gains, then others


def test_the_bundled_tuned_scenario_scores_as_its_tuning_table_says() -> None:
    """light_wrist_reach_tuned is tune's output: its gains and the scenario's own score now as they did then."""
    tuned = tomllib.loads(TUNED.read_text(encoding="utf-8"))
    record = tuned["tuning"]
    params = controller_params({"scenario": str(SCENARIO)})
    problem = Problem(
        str(params.scenario), ControlSettings.of(params), twins=record["robust_twins"], seed=record["seed"]
    )
    evaluator = Evaluator(problem)
    assert evaluator.samples.labels() == record["robust_samples"]
    before = evaluator.evaluate(evaluator.gains(evaluator.start()))
    after = evaluator.evaluate({key: tuned["controller"][key] for key in record["gains_before"]})
    assert before.gains == record["gains_before"]
    assert before.worst.table() == pytest.approx({k: v for k, v in record["before"].items() if k != "worst_sample"})
    assert after.worst.table() == pytest.approx({k: v for k, v in record["after"].items() if k != "worst_sample"})
    assert not before.worst.feasible and after.worst.feasible


@pytest.mark.parametrize("delay", [0.004, 0.008, 0.012], ids=["on time", "a tick late", "two ticks late"])
def test_offline_on_a_mujoco_arm_the_tuned_gains_hold_where_the_scenarios_own_go_unstable(delay: float) -> None:
    """The controller as hardware:=none gives it, the arm in MuJoCo behind a 250 Hz driver whose commands act
    ``delay`` after their state, in this process (no ROS timing): the tuned reach ends within its tolerance."""
    tolerance = load_scenario(SCENARIO).task.tolerance
    own, _ = reach_behind_driver(SCENARIO, 0.004, delay)
    tuned, unstable = reach_behind_driver(TUNED, 0.004, delay)
    assert own[-1] > 10 * tolerance, own[-1]
    assert tuned[-125:].max() < tolerance / 5 and unstable == 0, tuned[-125:].max()  # its last 0.5 s


def _tune(*arguments: object) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "skelarm_ros.cli", "tune", *map(str, arguments)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.slow  # two tools at once, and a lockstep hardware:=twin graph over DDS
def test_two_processes_on_one_journal_finish_one_study_and_the_winner_is_checked_over_ros(
    fast_driver: Path, tmp_path: Path
) -> None:
    """As on two machines sharing a file system: each command its own seed, one study; one checks over ROS."""
    journal, trials = tmp_path / "journal.log", 4
    common = ["--storage", journal, "--study", "shared", "--trials", trials, "--robust", 1]
    first = _tune(fast_driver, "-o", tmp_path / "a.toml", "--seed", 1, *common)
    second = _tune(fast_driver, "-o", tmp_path / "b.toml", "--seed", 2, "--no-check", *common)
    try:
        outputs = [process.communicate(timeout=280.0)[0] for process in (first, second)]
    finally:
        for process in (first, second):
            process.kill()
    assert [first.returncode, second.returncode] == [0, 0], outputs
    study = optuna.load_study(study_name="shared", storage=open_storage(str(journal)))
    done = [trial for trial in study.trials if trial.state == optuna.trial.TrialState.COMPLETE]
    assert trials <= len(done) <= trials + 1  # a process may start one more while the other finishes the last
    assert len({trial.user_attrs[WORKER] for trial in done}) == 2, [trial.user_attrs for trial in done]
    tables = [tomllib.loads((tmp_path / name).read_text(encoding="utf-8")) for name in ("a.toml", "b.toml")]
    best = best_of(study.trials).user_attrs[GAINS]
    for table in tables:  # both wrote the study's winner
        assert {key: table["controller"][key] for key in best} == best
    checked = tables[0]["tuning"]["checked_over_ros"]
    assert checked.startswith("lockstep hardware:=twin scored the same (largest difference"), outputs[0]
    assert float(checked.split("largest difference ")[1].split(")")[0]) <= 1e-9
    assert tables[1]["tuning"]["checked_over_ros"] == "not checked (--no-check)"
    assert (tmp_path / "a.png").stat().st_size > 10_000
    summary = outputs[0].splitlines()
    assert any(
        line.startswith("tuned time_varying_stiffness of fast_driver.toml on 3 robust samples") for line in summary
    )


@pytest.mark.parametrize(
    ("change", "arguments", "sentence"),
    [
        (
            ('type = "time_varying_stiffness"', 'type = "mpc"'),
            [],
            "controller type 'mpc' has no tunable gains declared, so skelarm-ros tune cannot search them; tune one of",
        ),
        (None, ["--storage", "nosuchdb://user@host/db"], "the storage 'nosuchdb://user@host/db' cannot be opened ("),
        (None, ["--storage", "no/such/folder/journal.log"], "the folder of the journal file 'no/such/folder/journal"),
        (None, ["--trials", "0"], "--trials is 0; give a whole number of 1 or more"),
    ],
    ids=["no tunable keys", "bad storage URL", "journal in a missing folder", "no trials"],
)
def test_what_cannot_be_tuned_is_refused_in_one_sentence_before_any_trial(
    short: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], change, arguments, sentence
) -> None:
    if change is not None:
        short.write_text(short.read_text(encoding="utf-8").replace(*change), encoding="utf-8")
    assert tune.main([str(short), "-o", str(tmp_path / "out.toml"), *arguments]) == 1
    error = capsys.readouterr().err
    assert error.startswith(f"skelarm-ros tune: error: {sentence}"), error
    assert error.count("\n") == 1 and "Traceback" not in error
    assert not (tmp_path / "out.toml").exists() and not (tmp_path / "out.png").exists()


def test_an_existing_output_is_refused_without_force(short: Path, tmp_path: Path, capsys) -> None:
    output = tmp_path / "out.toml"
    output.write_text("kept\n", encoding="utf-8")
    assert tune.main([str(short), "-o", str(output)]) == 1
    error = capsys.readouterr().err
    assert error.startswith("skelarm-ros tune: error: ") and "--force" in error and error.count("\n") == 1, error
    assert output.read_text(encoding="utf-8") == "kept\n"
