# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""``skelarm-ros tune``: a scenario's controller gains optimised on its twin behind its driver, checked over ROS.

The controller runs with the settings the graph gives it for a hardware run
(:func:`skelarm_ros.cli.predict.controller_params` for ``hardware:=twin mode:=lockstep``:
its soft start, its limits and every live-arm rule), each candidate in this process on the
project's engine (:mod:`skelarm_ros.tuning`), the search by Optuna. The winner is written as
a scenario (the same controller type, new gains, a ``[tuning]`` table), with a picture of the
reach before and after; its score is then checked against a lockstep ``hardware:=twin`` run
of the written scenario over ROS (``skelarm-ros launch sim``, recorded, the bag read back and
scored the same way): the same numbers within :data:`CHECK_TOLERANCE`. The check's graph
runs on this machine's loopback only, under a namespace of its own, so no driver on the
network can take its commands. See docs/tuning.md.

This module does not import rclpy.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from skelarm.recording import dump_toml

from skelarm_ros import tool
from skelarm_ros.bags.reader import BagError, open_bag
from skelarm_ros.cli.graph import GraphError
from skelarm_ros.cli.predict import controller_params
from skelarm_ros.control.settings import ControlSettings
from skelarm_ros.interface import NANOSECONDS
from skelarm_ros.outputs import named_after, write_atomically
from skelarm_ros.sim.scenario import ScenarioError
from skelarm_ros.tuning.evaluate import Evaluation, Evaluator, Problem
from skelarm_ros.tuning.objective import score, trace_of
from skelarm_ros.tuning.report import TABLE, figure, gains_text, tuning_table
from skelarm_ros.tuning.space import TuningError
from skelarm_ros.tuning.study import Search, open_storage, search

if TYPE_CHECKING:
    from collections.abc import Sequence

    from optuna.trial import FrozenTrial

    from skelarm_ros.tuning.evaluate import Run

PROG = "skelarm-ros tune"
TRIALS = 100
TWINS = 3
CHECK_TOLERANCE = 1e-9
"""The largest difference allowed between the in-process score and the score of the run over ROS."""
CHECK_TIMEOUT = 600.0  # s for the checking launch on a loaded machine
_PROGRESS_EVERY = 10  # trials between progress lines when the output is not a terminal


def _parser() -> argparse.ArgumentParser:
    parser = tool.parser(
        PROG,
        "Optimise a scenario's [controller] gains on its twin behind its [driver] (as hardware:=twin runs it), "
        "robustly over drawn twins and command delays; write the tuned scenario and a plot, checked over ROS.",
    )
    parser.add_argument("scenario", help="the scenario TOML to tune (a twin with its [driver] table)")
    parser.add_argument("-o", "--output", required=True, help="the tuned scenario to write (TOML)")
    parser.add_argument("--plot", help="the picture of the reach before and after (default: the output's name, .png)")
    parser.add_argument("--trials", type=int, default=TRIALS, help=f"trials of the study in all (default {TRIALS})")
    parser.add_argument("--seed", type=int, default=0, help="the sampler's and the twins' seed (default 0)")
    parser.add_argument("--workers", type=int, default=1, help="processes running trials here (default 1)")
    parser.add_argument(
        "--storage",
        default="",
        help="an Optuna storage shared by processes on this or other machines: a journal file's path, or a "
        "database URL (sqlite:///tune.db, postgresql://...); default: in memory (one worker) or a temporary journal",
    )
    parser.add_argument("--study", default="", help="the study's name in the storage (default: from the scenario)")
    parser.add_argument(
        "--robust",
        type=int,
        default=TWINS,
        help=f"twins each candidate is scored on, each at every command delay from none to the driver's "
        f"(default {TWINS}: the scenario's arm and two drawn within its identification's deviations)",
    )
    parser.add_argument("--no-check", action="store_true", help="skip the check over ROS (no DDS on this machine)")
    return parser


def _outputs(args: argparse.Namespace) -> list[Path]:
    return [Path(args.output), _plot_path(args)]


def _plot_path(args: argparse.Namespace) -> Path:
    return Path(args.plot) if args.plot else named_after(Path(args.output), ".png", (".toml",))


def study_name(scenario: Path, twins: int) -> str:
    """Return the default study name: the scenario file's name and a digest of its text and the robust samples.

    Processes given the same scenario and ``--robust`` share a study in a storage; another
    scenario text (other gains, another driver) is another study.
    """
    digest = hashlib.sha256(scenario.read_bytes() + f"robust={twins}".encode()).hexdigest()[:12]
    return f"skelarm-ros-tune-{scenario.stem}-{digest}"


def _checked_counts(args: argparse.Namespace) -> None:
    for name in ("trials", "workers", "robust"):
        if getattr(args, name) < 1:
            msg = f"--{name} is {getattr(args, name)}; give a whole number of 1 or more"
            raise TuningError(msg)


class _Progress:
    """The progress line on standard error: rewritten in place on a terminal, every few trials elsewhere."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.shown = 0

    def __call__(self, done: int, total: int, best: FrozenTrial | None, seconds: float) -> None:
        if done == self.shown or (not self.tty and done < total and done - self.shown < _PROGRESS_EVERY):
            return
        self.shown = done
        rate = done / seconds if seconds > 0.0 else 0.0
        left = f", about {max(total - done, 0) / rate:.0f} s left" if rate > 0.0 and done < total else ""
        found = "none completed yet"
        if best is not None:
            feasible = all(value <= 0.0 for value in best.user_attrs.get("constraints", [1.0]))
            found = f"best {best.value:.4g} (trial {best.number}, {'feasible' if feasible else 'infeasible'})"
        line = f"{PROG}: {done}/{total} trials, {found}, {rate:.2f} trials/s{left}"
        sys.stderr.write(("\r" + line + ("\n" if done >= total else "")) if self.tty else line + "\n")
        sys.stderr.flush()


def _work(args: argparse.Namespace) -> tool.Done:
    _checked_counts(args)
    if args.storage:
        open_storage(args.storage)  # a storage that cannot be opened is said before any trial runs
    scenario = Path(args.scenario)
    params = controller_params({"scenario": str(scenario)})  # hardware:=twin mode:=lockstep, as the graph gives it
    problem = Problem(str(params.scenario), ControlSettings.of(params), args.robust, args.seed)
    name = args.study or study_name(Path(str(params.scenario)), args.robust)
    evaluator = Evaluator(problem)
    before = evaluator.evaluate(evaluator.gains(evaluator.start()))
    plan = Search(args.trials, args.seed, args.workers, args.storage, name)
    outcome = search(problem, plan, _Progress())
    after = evaluator.evaluate(outcome.gains)
    if after.worst.value != outcome.best.value:
        outcome.notes.append(
            f"the winner scored {after.worst.value!r} here and {outcome.best.value!r} in its trial; "
            "its runs are not deterministic"
        )
    runs = _runs(evaluator, before, after)
    checked = "not checked (--no-check)"
    output, plot = Path(args.output), _plot_path(args)
    tables = evaluator.tables(after.gains)
    if not after.worst.feasible:
        checked = "not checked: no trial kept every constraint (the graph's controller would stop the arm)"
        outcome.notes.append(
            f"no gains of the {outcome.trials} trials keep every constraint on every robust sample; the least "
            "infeasible are written: run more trials (--trials), or fewer robust samples (--robust 1)"
        )
    elif not args.no_check:
        checked = check_over_ros(evaluator, tables, after)
    tables[TABLE] = tuning_table(
        before=before, after=after, evaluator=evaluator, source=args.scenario, trials=outcome.trials,
        seed=args.seed, workers=args.workers, storage=args.storage, study=name, seconds=outcome.seconds,
        checked=checked,
    )  # fmt: skip
    fig = figure(evaluator, runs, f"{scenario.name}: {evaluator.config['controller']['type']} before and after")
    write_atomically(output, lambda path: path.write_text(dump_toml(tables), encoding="utf-8"))
    write_atomically(plot, lambda path: fig.savefig(path, dpi=120))
    verdict = "feasible" if after.worst.feasible else "NOT feasible: " + ", ".join(after.worst.violated())
    report = [
        f"tuned {evaluator.config['controller']['type']} of {scenario.name} on {len(evaluator.samples.items)} "
        f"robust samples: score {before.worst.value:.4g} -> {after.worst.value:.4g} ({verdict}), "
        f"{outcome.trials} trials in {outcome.seconds:.0f} s (seed {args.seed}); wrote {output}, {plot}",
        f"  gains: {gains_text(before.gains, after.gains)}",
        f"  before, worst on {before.worst_sample}: {before.worst.text()}",
        f"  after, worst on {after.worst_sample}: {after.worst.text()}",
        f"  checked over ROS: {checked}",
    ]
    return tool.Done(report=report, notes=[*evaluator.samples.notes, *outcome.notes])


def _runs(evaluator: Evaluator, before: Evaluation, after: Evaluation) -> dict[str, list[tuple[str, Run]]]:
    """Return the runs drawn: before and after, on the twin at its driver's delay and at the longest sampled."""
    own, *others = evaluator.samples.items[: len(evaluator.samples.delays)]  # the scenario's twin, its own delay first
    delay = lambda sample: sample.arm.driver.command_delay if sample.arm.driver is not None else 0.0  # noqa: E731
    chosen = [own] + ([max(others, key=delay)] if others else [])
    out: dict[str, list[tuple[str, Run]]] = {}
    for name, evaluation in (("before", before), ("after", after)):
        loop = evaluator.loop(evaluation.gains)
        out[name] = [(sample.label, evaluator.run(loop, sample)) for sample in chosen]
    return out


def check_over_ros(evaluator: Evaluator, tables: dict[str, Any], after: Evaluation) -> str:
    """Run the tuned scenario as lockstep ``hardware:=twin`` over ROS, recorded, and score its bag.

    The graph is ``skelarm-ros launch sim`` in a process of its own, on the loopback only and
    under a namespace of its own. Its recorded joint states and commands are scored as the
    in-process run is (the commands as the torque asked for: the same where no effort limit
    clamped them); the score's every figure must be within :data:`CHECK_TOLERANCE` of the
    in-process score on the same sample (the scenario's own: its arm, its driver's delay and seed).

    Returns
    -------
    str
        What the check found, in one phrase.

    Raises
    ------
    TuningError
        If the launch fails, or the scores differ by more than the tolerance.
    """
    expected = after.scores[0]
    namespace = f"skelarm_ros_tune_check_{os.getpid()}"
    with tempfile.TemporaryDirectory(prefix="skelarm-ros-tune-check-") as folder:
        path = Path(folder) / "tuned.toml"
        path.write_text(dump_toml(tables), encoding="utf-8")
        bag = Path(folder) / "bag"
        arguments = [
            f"scenario:={path}", "hardware:=twin", "mode:=lockstep", f"duration:={evaluator.duration!r}",
            f"namespace:={namespace}", f"record:={bag}",
        ]  # fmt: skip
        environment = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
        command = [sys.executable, "-m", "skelarm_ros.cli", "launch", "sim", *arguments]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=CHECK_TIMEOUT, check=False, env=environment
            )
        except subprocess.TimeoutExpired:
            msg = f"the check over ROS did not end within {CHECK_TIMEOUT:g} s; run with --no-check, or check DDS"
            raise TuningError(msg) from None
        if done.returncode != 0:
            tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-3:])
            msg = f"the check over ROS failed (skelarm-ros launch sim exited {done.returncode}: {tail})"
            raise TuningError(msg)
        stamps, position, velocity, command_stamps, commands = _recorded(bag, namespace)
    run = evaluator.run(evaluator.loop(after.gains), evaluator.samples.items[0])
    if not np.array_equal(command_stamps, stamps):
        msg = "the check over ROS found commands not answering every recorded state once; the graph was disturbed"
        raise TuningError(msg)
    trace = trace_of(
        evaluator.arm.skeleton, evaluator.target, stamps, position, velocity, commands, evaluator.task_duration
    )
    found = score(trace, evaluator.scale, evaluator.effort_limit, evaluator.velocity_limit)
    difference = found.difference(expected)
    same = len(stamps) == len(run.twin.stamps) and np.array_equal(position, run.twin.position)
    states = f"{len(stamps)} states and commands {'equal to' if same else 'NOT equal to'} the in-process run's"
    if difference > CHECK_TOLERANCE:
        msg = (
            f"the check over ROS scored {found.value!r} where the in-process run scored {expected.value!r} "
            f"(largest difference {difference:.3g}; {states}); the in-process run does not predict the graph's"
        )
        raise TuningError(msg)
    return f"lockstep hardware:=twin scored the same (largest difference {difference:.3g}); {states}"


def _recorded(bag: Path, namespace: str) -> tuple[np.ndarray, ...]:
    """Return a check's recorded states (stamps, angles, velocities) and commands (stamps, torques)."""
    states, commands = f"/{namespace}/joint_states", f"/{namespace}/joint_commands"
    rows: dict[str, list[Any]] = {"stamps": [], "position": [], "velocity": [], "answered": [], "effort": []}
    try:
        with open_bag(bag) as opened:
            for topic, _, _, message in opened.messages([states, commands]):
                stamp = message.header.stamp.sec * NANOSECONDS + message.header.stamp.nanosec
                if topic == states:
                    rows["stamps"].append(stamp)
                    rows["position"].append(list(message.position))
                    rows["velocity"].append(list(message.velocity))
                else:
                    rows["answered"].append(stamp)
                    rows["effort"].append(list(message.effort))
    except BagError as error:
        msg = f"the check over ROS recorded no readable bag ({error})"
        raise TuningError(msg) from None
    return (
        np.array(rows["stamps"], dtype=np.int64),
        np.array(rows["position"]),
        np.array(rows["velocity"]),
        np.array(rows["answered"], dtype=np.int64),
        np.array(rows["effort"]),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``skelarm-ros tune``; returns the exit code."""
    return tool.run_main(
        _parser(), argv, _work, outputs=_outputs, errors=(TuningError, ScenarioError, GraphError, ValueError)
    )


if __name__ == "__main__":
    sys.exit(main())
