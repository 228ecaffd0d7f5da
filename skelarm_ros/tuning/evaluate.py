# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""One candidate's gains scored: its scenario's tables, its controller built as the graph builds it, run on each sample.

A :class:`Problem` says what is tuned, in values a worker process can be handed: the
scenario file, the keyword arguments :func:`~skelarm_ros.control.loop.build_control_loop`
takes from the graph's controller parameters for a hardware run (the caller's,
:class:`~skelarm_ros.control.settings.ControlSettings` of its parameters: the soft start, the live arm's rules and every
other setting ``hardware:=twin`` gives the controller), and the robust samples' count and
seed. An :class:`Evaluator` reads each candidate as a scenario in memory (the scenario's tables
with the new gains), builds its control loop once through ``build_control_loop``, and runs a
fresh copy of it on each robust sample with :func:`~skelarm_ros.control.twin_run.run_twin`
(the lockstep ``hardware:=twin`` run, in this process), for the task and a hold of
:data:`~skelarm_ros.tuning.objective.MIN_HOLD` seconds; each run is scored from the states
the driver published and the torque the controller asked for
(:mod:`skelarm_ros.tuning.objective`), the candidate by its worst.

This module imports neither rclpy nor Optuna.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from skelarm_ros.control.loop import build_control_loop
from skelarm_ros.control.settings import ControlSettings
from skelarm_ros.control.twin_run import TwinRun, run_twin
from skelarm_ros.interface import NANOSECONDS
from skelarm_ros.sim.engine import ArmEngine
from skelarm_ros.sim.scenario import arm_from_config, load_arm, scenario_of
from skelarm_ros.tuning.objective import MIN_HOLD, Score, error_scale, score, trace_of, worst
from skelarm_ros.tuning.samples import robust_samples
from skelarm_ros.tuning.space import TuningError, gains_of, search_space, with_gains

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from numpy.typing import NDArray

    from skelarm_ros.control.loop import ControlLoop, ControlOutput
    from skelarm_ros.sim.scenario import ArmSetup
    from skelarm_ros.tuning.samples import Sample, Samples
    from skelarm_ros.tuning.space import Dimension


@dataclass(frozen=True)
class Problem:
    """What a tuning optimises, in values a worker process is handed.

    Attributes
    ----------
    scenario : str
        The scenario file tuned.
    loop_settings : ControlSettings
        How the loop runs, as the graph gives the controller for a hardware run (``hardware:=twin``).
    twins : int
        The robust samples' twins (:func:`~skelarm_ros.tuning.samples.robust_samples`).
    seed : int
        Seeds the twins' draws.
    """

    scenario: str
    loop_settings: ControlSettings = field(default_factory=ControlSettings)
    twins: int = 1
    seed: int = 0


@dataclass(frozen=True)
class Evaluation:
    """One candidate's figures.

    Attributes
    ----------
    gains : dict[str, float | list[float]]
        Its ``[controller]`` keys.
    scores : list[Score]
        One per robust sample, in the samples' order.
    worst : Score
        The candidate's score: the worst of them.
    worst_sample : str
        The label of the sample with the highest score.
    """

    gains: dict[str, float | list[float]]
    scores: list[Score]
    worst: Score
    worst_sample: str


@dataclass(frozen=True)
class Run:
    """One run of a candidate on one sample, with the torque asked for and the arm's stop, if any.

    Attributes
    ----------
    twin : TwinRun
        The states published and the commands.
    demand : NDArray[np.float64]
        The torque the controller asked for answering each state, shape ``(K, N)``.
    stopped : str
        Why the run ended early or the controller stopped the arm (empty for neither).
    stopped_at : float
        When the controller stopped the arm (s from the first state; ``inf`` where it did not).
    """

    twin: TwinRun
    demand: NDArray[np.float64]
    stopped: str
    stopped_at: float = math.inf


def damping_scale(arm: ArmSetup, delay: float) -> float:
    """Return the arm's damping scale (N*m*s/rad): the joint damping its loop holds with commands ``delay`` late.

    A joint damping ``D`` on an inertia ``m``, its command acting ``d`` ticks of period ``T``
    after the state it answers, moves the velocity as ``v[k+1] = v[k] - (D*T/m) v[k-d]``,
    stable while ``D*T/m < 2 sin(pi / (2 (2d + 1)))``: 2 at the next tick, 1 a tick later,
    0.62 two ticks later (docs/controller.md, "Loop latency"). ``m`` is the lightest joint's:
    the smallest diagonal entry of the mass matrix (with the drive's armature) at the initial
    pose; ``d`` the ticks ``delay`` acts after (:mod:`skelarm_ros.tuning.space`).
    """
    engine = ArmEngine(arm.skeleton, arm.dt, grav_vec=arm.grav_vec, drive=arm.drive)
    period = arm.dt if arm.driver is None else arm.driver.period(arm.dt)
    ticks = math.ceil(delay / period - 1e-9)
    limit = 2.0 * math.sin(math.pi / (2.0 * (2 * ticks + 1)))
    return float(np.diag(engine.mass_matrix(arm.skeleton.q)).min()) / period * limit


class _Recorded:
    """A control loop whose answers' demanded torque is kept, one row per state, and the state it stopped the arm at."""

    def __init__(self, loop: ControlLoop) -> None:
        self.loop = loop
        self.demand: list[NDArray[np.float64]] = []
        self.stopped_ns: int | None = None

    def control(
        self, names: Sequence[str], positions: Sequence[float], velocities: Sequence[float], stamp_ns: int
    ) -> ControlOutput:
        output = self.loop.control(names, positions, velocities, stamp_ns)
        self.demand.append(output.torque if output.demand is None else output.demand)
        if self.stopped_ns is None and self.loop.stopped is not None:
            self.stopped_ns = stamp_ns
        return output


class Evaluator:
    """Scores candidates of one :class:`Problem` (see the module).

    Parameters
    ----------
    problem : Problem
        What is tuned.

    Attributes
    ----------
    arm : ArmSetup
        The scenario's arm and driver.
    config : dict[str, Any]
        The scenario's tables.
    dimensions : list[Dimension]
        The gains searched.
    samples : Samples
        The robust samples.
    duration : float
        Simulated seconds of each run: the task and the hold.

    Raises
    ------
    TuningError
        If the scenario cannot be tuned (its controller type declares no gains, its task has no
        point target), in one sentence.
    """

    def __init__(self, problem: Problem) -> None:
        """Read the scenario and make its robust samples; nothing is run yet."""
        self.problem = problem
        self.arm: ArmSetup = load_arm(problem.scenario)
        self.config: dict[str, Any] = self.arm.config
        controller = self.config.get("controller")
        if not isinstance(controller, dict):
            msg = f"scenario '{problem.scenario}' has no [controller] table; tune a full scenario"
            raise TuningError(msg)
        self.samples: Samples = robust_samples(self.arm, problem.twins, problem.seed)
        self.dimensions: list[Dimension] = search_space(controller, damping_scale(self.arm, max(self.samples.delays)))
        task = scenario_of(self.arm).task  # the file read once
        if task.target is None:
            msg = (
                f"the task '{task.type}' of '{problem.scenario}' has no point target, and tune scores the tip's "
                "distance to one; tune a reaching scenario"
            )
            raise TuningError(msg)
        self.target = np.asarray(task.target, dtype=np.float64)
        self.task_duration = float(task.duration)
        self.scale = error_scale(task.tolerance)
        self.duration = self.task_duration + MIN_HOLD
        limits = self.arm.limits
        joints = self.arm.num_joints
        self.effort_limit = limits.effort.copy() if limits is not None else np.full(joints, np.inf)
        self.velocity_limit = limits.velocity.copy() if limits is not None else np.full(joints, np.inf)

    # -- candidates -------------------------------------------------------------------------------------------

    def start(self) -> dict[str, float]:
        """Return the sampled values that give the scenario's own gains (the first trial's)."""
        return {dimension.name: dimension.start() for dimension in self.dimensions}

    def gains(self, sampled: Mapping[str, float]) -> dict[str, float | list[float]]:
        """Return the ``[controller]`` keys that sampled values give."""
        return gains_of(self.dimensions, sampled)

    def tables(self, gains: Mapping[str, float | list[float]]) -> dict[str, Any]:
        """Return the scenario's tables with ``gains`` in its ``[controller]``."""
        config = copy.deepcopy(self.config)
        config["controller"] = with_gains(config["controller"], gains)
        return config

    def loop(self, gains: Mapping[str, float | list[float]]) -> ControlLoop:
        """Build the candidate's control loop as the graph's controller builds it for a hardware run."""
        candidate = arm_from_config(self.tables(gains), f"the candidate of '{self.problem.scenario}'")
        loop, _ = build_control_loop(candidate, self.problem.loop_settings)
        return loop

    # -- runs --------------------------------------------------------------------------------------------------

    def run(self, loop: ControlLoop, sample: Sample) -> Run:
        """Run a fresh copy of ``loop`` on one sample for the task and its hold."""
        recorded = _Recorded(copy.deepcopy(loop))
        twin = run_twin(sample.arm, recorded, self.duration, joint_names=recorded.loop.joint_names)
        stopped = twin.stopped or (recorded.loop.stopped.text if recorded.loop.stopped is not None else "")
        demand = np.array(recorded.demand[: len(twin.stamps)]).reshape(len(twin.stamps), -1)
        at = math.inf if recorded.stopped_ns is None else (recorded.stopped_ns - int(twin.stamps[0])) / NANOSECONDS
        return Run(twin, demand, stopped, at)

    def score_run(self, run: Run) -> Score:
        """Score one run from the states published and the torque asked for."""
        twin = run.twin
        trace = trace_of(
            self.arm.skeleton, self.target, twin.stamps, twin.position, twin.velocity, run.demand,
            self.task_duration, run.stopped, run.stopped_at,
        )  # fmt: skip
        return score(trace, self.scale, self.effort_limit, self.velocity_limit)

    def evaluate(self, gains: Mapping[str, float | list[float]]) -> Evaluation:
        """Score a candidate on every robust sample; its score is the worst."""
        loop = self.loop(gains)
        scores = [self.score_run(self.run(loop, sample)) for sample in self.samples.items]
        top = max(range(len(scores)), key=lambda index: scores[index].value)
        return Evaluation(dict(gains), scores, worst(scores), self.samples.items[top].label)
