# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The search: an Optuna study of one :class:`~skelarm_ros.tuning.evaluate.Problem`, in one process or several.

Each trial samples the problem's gains (:mod:`skelarm_ros.tuning.space`: a factor of the
scenario's value on a log scale, or a ratio), scores them (:class:`~skelarm_ros.tuning.evaluate.Evaluator`)
and reports the worst score as the trial's value and its constraints as the trial's
``constraints`` (Optuna's constrained search: feasible trials are preferred). The first trial
is the scenario's own gains. The sampler is Optuna's TPE, multivariate, seeded: with one
worker the same seed gives the same trials, so the same gains.

Where the study lives (:func:`open_storage`): in memory (one worker, no ``--storage``); in a
journal file (a path: several processes on one machine, or on machines sharing the file
system); or in a database (a URL such as ``sqlite:///tune.db`` or
``postgresql://user@host/db``, through Optuna's ``RDBStorage``: machines that reach one
database). ``workers`` processes are started here, each running trials of the one study
until it has ``trials`` (the study's total, whoever ran them: a second command on another
machine with the same storage and study name joins it); the study's best is read once no
trial is running any more.

This module does not import rclpy; it is the one that imports Optuna.
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import os
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import optuna
from optuna.storages import JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import FrozenTrial, TrialState

from skelarm_ros.sim.conversions import Rejected
from skelarm_ros.tuning.evaluate import Evaluator, Problem
from skelarm_ros.tuning.objective import CONSTRAINTS, STOPPED_VALUE
from skelarm_ros.tuning.space import TuningError

if TYPE_CHECKING:
    from collections.abc import Callable

    from optuna.storages import BaseStorage

VIOLATIONS = "constraints"  # the trial's user attribute: its constraints, in objective.CONSTRAINTS order
SCORE = "score"  # the worst score's figures
WORST = "worst_sample"  # the label of the sample it came from
GAINS = "gains"
WORKER = "worker"  # the host and process that ran the trial
CAP = 1e6  # a constraint or value beyond this (or not finite) is stored as this
FINISHED = (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)
_POLL = 0.5  # s between looks at a shared study


@dataclass(frozen=True)
class Search:
    """How to search: trials, seed, processes and where the study lives.

    Attributes
    ----------
    trials : int
        The study's trials in all.
    seed : int
        The sampler's seed (worker ``k`` of this command: ``seed + k``).
    workers : int
        Processes running trials here.
    storage : str
        An Optuna storage: a journal file's path or a database URL; empty for in memory
        (with one worker) or a temporary journal file (with several).
    study : str
        The study's name (processes sharing a storage and a name share the study).
    """

    trials: int
    seed: int = 0
    workers: int = 1
    storage: str = ""
    study: str = "skelarm-ros-tune"


@dataclass(frozen=True)
class Outcome:
    """What a search found.

    Attributes
    ----------
    best : FrozenTrial
        The best trial: the lowest score among the feasible ones, else the least infeasible.
    trials : int
        Trials finished in the study.
    seconds : float
        Wall time of the search (s).
    notes : list[str]
        What the user should know (trials left running by another process).
    """

    best: FrozenTrial
    trials: int
    seconds: float
    notes: list[str]

    @property
    def gains(self) -> dict[str, Any]:
        """The best trial's ``[controller]`` keys."""
        return dict(self.best.user_attrs[GAINS])

    @property
    def feasible(self) -> bool:
        """Whether the best trial keeps every constraint."""
        return _feasible(self.best)


def open_storage(url: str) -> BaseStorage:
    """Return the Optuna storage a ``--storage`` value names: a database URL, else a journal file's path.

    Raises
    ------
    TuningError
        If the storage cannot be opened (its folder is missing, the database refuses, its driver
        is not installed), in one sentence.
    """
    try:
        if "://" in url:
            return RDBStorage(url)
        path = Path(url)
        if not path.resolve().parent.is_dir():
            msg = f"the folder of the journal file '{url}' does not exist; create it or choose another path"
            raise TuningError(msg)
        return JournalStorage(JournalFileBackend(str(path)))
    except TuningError:
        raise
    except Exception as error:  # SQLAlchemy's and the database drivers' errors alike
        msg = (
            f"the storage '{url}' cannot be opened ({type(error).__name__}: {error}); give a journal file's path, "
            "or a database URL (sqlite:///tune.db, postgresql://user@host/db with its driver installed)"
        )
        raise TuningError(msg) from None


def _sampler(seed: int) -> optuna.samplers.TPESampler:
    return optuna.samplers.TPESampler(seed=seed, multivariate=True)


def _constraints(trial: FrozenTrial) -> list[float]:
    return list(trial.user_attrs.get(VIOLATIONS, [CAP]))


def _capped(value: float) -> float:
    if math.isnan(value):
        return CAP
    return value if math.isfinite(value) and abs(value) < CAP else math.copysign(CAP, value)


def _feasible(trial: FrozenTrial) -> bool:
    return trial.state == TrialState.COMPLETE and all(value <= 0.0 for value in _constraints(trial))


def _objective(evaluator: Evaluator) -> Callable[[optuna.Trial], float]:
    def objective(trial: optuna.Trial) -> float:
        sampled = {
            dimension.name: trial.suggest_float(dimension.name, dimension.low, dimension.high, log=dimension.gain.log)
            for dimension in evaluator.dimensions
        }
        gains = evaluator.gains(sampled)
        trial.set_user_attr(GAINS, gains)
        trial.set_user_attr(WORKER, f"{socket.gethostname()}:{os.getpid()}")
        try:
            evaluation = evaluator.evaluate(gains)
        except (Rejected, ValueError) as error:  # a candidate skelarm refuses, or whose controller fails
            for name in CONSTRAINTS:
                trial.set_constraint(name, CAP)
            trial.set_user_attr(VIOLATIONS, [CAP])
            trial.set_user_attr(WORST, f"not run: {error}")
            return STOPPED_VALUE
        found = evaluation.worst
        constraints = [_capped(value) for value in found.constraints]
        for name, value in zip(CONSTRAINTS, constraints, strict=True):
            trial.set_constraint(name, value)  # what the sampler prefers feasible trials by
        trial.set_user_attr(VIOLATIONS, constraints)
        trial.set_user_attr(SCORE, {name: _capped(value) for name, value in found.table().items()})
        trial.set_user_attr(WORST, evaluation.worst_sample)
        return _capped(found.value)

    return objective


def _study(storage: BaseStorage, name: str, seed: int) -> optuna.Study:
    return optuna.create_study(
        storage=storage, study_name=name, sampler=_sampler(seed), direction="minimize", load_if_exists=True
    )


def _run(problem: Problem, search: Search, storage: BaseStorage, seed: int, progress: Any = None) -> None:
    """Run trials of the study until it has ``search.trials`` (one process's share of the work)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    evaluator = Evaluator(problem)
    study = _study(storage, search.study, seed)
    study.enqueue_trial(evaluator.start(), skip_if_exists=True)  # the scenario's own gains, once
    callbacks: list[Any] = [optuna.study.MaxTrialsCallback(search.trials, states=None)]
    if progress is not None:
        callbacks.append(progress)
    if len(study.get_trials(deepcopy=False)) < search.trials:
        study.optimize(_objective(evaluator), n_trials=None, callbacks=callbacks)


def _worker(problem: Problem, search: Search, url: str, seed: int) -> None:
    """Run one worker process's share of the trials, in the shared storage."""
    logging.getLogger("optuna").setLevel(logging.WARNING)
    _run(problem, search, open_storage(url), seed)


def best_of(trials: list[FrozenTrial]) -> FrozenTrial:
    """Return the best of finished trials: the lowest value among the feasible, else the least infeasible.

    Raises
    ------
    TuningError
        If no trial completed.
    """
    complete = [trial for trial in trials if trial.state == TrialState.COMPLETE and trial.value is not None]
    if not complete:
        msg = "no trial of the study completed; see the notes above"
        raise TuningError(msg)
    feasible = [trial for trial in complete if _feasible(trial)]
    if feasible:
        return min(feasible, key=lambda trial: (trial.value, trial.number))
    return min(
        complete,
        key=lambda trial: (sum(max(value, 0.0) for value in _constraints(trial)), trial.value, trial.number),
    )


def search(problem: Problem, plan: Search, progress: Callable[[int, int, FrozenTrial | None, float], None]) -> Outcome:
    """Run the study of ``problem`` as ``plan`` says; return its best trial.

    Parameters
    ----------
    problem : Problem
        What is tuned.
    plan : Search
        How: trials, seed, workers, storage, study name.
    progress : Callable[[int, int, FrozenTrial | None, float], None]
        Told trials finished, the total, the best so far and the seconds since the start,
        after each trial (one worker) or every half second (several).

    Raises
    ------
    TuningError
        If the storage cannot be opened, a worker fails, or no trial completes.
    """
    started = time.monotonic()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="skelarm-ros-tune-") as folder:
        url = plan.storage or (str(Path(folder) / "journal.log") if plan.workers > 1 else "")
        storage = open_storage(url) if url else optuna.storages.InMemoryStorage()
        if plan.workers <= 1:

            def told(study: optuna.Study, _trial: FrozenTrial) -> None:
                trials = study.get_trials(deepcopy=False, states=FINISHED)
                progress(len(trials), plan.trials, _best_or_none(trials), time.monotonic() - started)

            _run(problem, plan, storage, plan.seed, told)
        else:
            _in_processes(problem, plan, url, started, progress)
        trials = _wait_for_running(optuna.load_study(study_name=plan.study, storage=storage), notes)
        finished = [trial for trial in trials if trial.state in FINISHED]
        return Outcome(best_of(trials), len(finished), time.monotonic() - started, notes)


def _best_or_none(trials: list[FrozenTrial]) -> FrozenTrial | None:
    try:
        return best_of(trials)
    except TuningError:
        return None


def _in_processes(
    problem: Problem,
    plan: Search,
    url: str,
    started: float,
    progress: Callable[[int, int, FrozenTrial | None, float], None],
) -> None:
    """Run ``plan.workers`` processes on the storage at ``url``; tell the progress until they are done."""
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no threads or locks inherited
    storage = open_storage(url)
    _study(storage, plan.study, plan.seed)  # created once, before the workers race to it
    processes = [
        context.Process(target=_worker, args=(problem, plan, url, plan.seed + k), name=f"tune worker {k}")
        for k in range(plan.workers)
    ]
    for process in processes:
        process.start()
    try:
        while any(process.is_alive() for process in processes):
            for process in processes:
                process.join(_POLL / len(processes))
            study = optuna.load_study(study_name=plan.study, storage=storage)
            trials = study.get_trials(deepcopy=False, states=FINISHED)
            progress(len(trials), plan.trials, _best_or_none(trials), time.monotonic() - started)
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
                process.join()
    failed = [process.name for process in processes if process.exitcode != 0]
    if failed:
        msg = f"{', '.join(failed)} ended with an error (exit code {processes[0].exitcode}); see its output above"
        raise TuningError(msg)


def _wait_for_running(study: optuna.Study, notes: list[str]) -> list[FrozenTrial]:
    """Return the study's trials once none is running (another process's), or after a while with a note."""
    deadline: float | None = None
    while True:
        trials = study.get_trials(deepcopy=False)
        running = [trial for trial in trials if trial.state == TrialState.RUNNING]
        if not running:
            return trials
        finished = [trial for trial in trials if trial.state == TrialState.COMPLETE and trial.duration is not None]
        if deadline is None:
            longest = max((trial.duration.total_seconds() for trial in finished if trial.duration), default=60.0)
            deadline = time.monotonic() + 3.0 * longest + 10.0
        if time.monotonic() > deadline:
            notes.append(
                f"{len(running)} trial(s) of the study were still running in another process (or one that ended "
                "without finishing them); the best is of the finished ones"
            )
            return trials
        time.sleep(_POLL)
