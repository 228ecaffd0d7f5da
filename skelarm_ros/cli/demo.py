# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""skelarm-ros demo (make demo): a pushed reach, recorded, converted and plotted, headless.

The graph of ``skelarm-ros launch sim`` runs in lockstep for a few simulated seconds:
the bundled ``reach`` scenario (computed torque), a recorded push replayed by
``force_replay``, and the ``recorder`` writing every topic into a bag. The bag then
goes through ``bag_to_log`` into a skelarm log and through ``skelarm-ros plot`` into a
picture, and the demo prints where each output is and a short summary: the reach
error at the end against the task's tolerance, the peak force, the steps run and the
real-time factor.

The graph is the one ``skelarm-ros launch sim mode:=lockstep duration:=3.0
force_source:=push.csv record:=demo_bag`` starts, and it makes the bag hold the whole
run by itself: the simulator's step 0 waits until the controller and the recorder read
its states, and the force replay and the controller hold their messages back, in
order, until the simulator and the recorder read them (see :func:`run_graph`).
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import shutil
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np

from skelarm_ros import tool
from skelarm_ros.bags.forces import CSV_COLUMNS, RecordedForce
from skelarm_ros.sim.run import SimulatorSummary

if TYPE_CHECKING:
    from collections.abc import Sequence

    import skelarm
    from numpy.typing import NDArray

    from skelarm_ros.cli.graph import NodeSpec

PROG = "skelarm-ros demo"
DEFAULT_OUTPUT = Path("demo_output")
DEFAULT_SCENARIO = "reach"
DEFAULT_DURATION = 3.0  # simulated seconds: the 2 s reach, the push, and the recovery
DEFAULT_TIMEOUT = 120.0  # wall seconds for the whole graph run
PUSH_START = 0.8  # s, in the middle of the reach
PUSH_LENGTH = 0.2  # s
PUSH_FORCE = (4.0, -3.0)  # N in base: 5 N

PUSH_FILE = "push.csv"
BAG_FOLDER = "demo_bag"
LOG_FILE = "demo.sklog.npz"
PICTURE_FILE = "demo.png"
GRAPH_OUTPUT_FILE = "graph.log"
ROS_LOG_FOLDER = "ros_log"


class DemoError(RuntimeError):
    """A demo step that failed; the message says which and where to look."""


@dataclass(frozen=True)
class DemoPaths:
    """Where the demo writes its outputs, all inside one folder.

    Attributes
    ----------
    folder : Path
        The output folder (``demo_output/`` by default, ignored by git).
    """

    folder: Path

    @property
    def push(self) -> Path:
        """The recorded push (CSV) that ``force_replay`` plays."""
        return self.folder / PUSH_FILE

    @property
    def bag(self) -> Path:
        """The bag the ``recorder`` writes."""
        return self.folder / BAG_FOLDER

    @property
    def log(self) -> Path:
        """The skelarm log ``bag_to_log`` makes of the bag."""
        return self.folder / LOG_FILE

    @property
    def picture(self) -> Path:
        """The picture ``skelarm-ros plot`` draws of the log."""
        return self.folder / PICTURE_FILE

    @property
    def graph_output(self) -> Path:
        """Every node's output, prefixed with its name, as ``skelarm-ros launch`` prints it."""
        return self.folder / GRAPH_OUTPUT_FILE

    @property
    def ros_log(self) -> Path:
        """The nodes' ROS log files, unless ``ROS_LOG_DIR`` says otherwise."""
        return self.folder / ROS_LOG_FOLDER


def write_push(
    path: Path,
    *,
    start: float = PUSH_START,
    length: float = PUSH_LENGTH,
    force: tuple[float, float] = PUSH_FORCE,
    end: float = DEFAULT_DURATION,
) -> RecordedForce:
    """Write a recorded push as a CSV file (``t, fx, fy``) and read it back.

    Parameters
    ----------
    path : Path
        The CSV file to write.
    start, length : float
        When the push begins and how long it lasts (s).
    force : tuple[float, float]
        The push ``(fx, fy)`` (N, in ``base``).
    end : float
        The end of the record (s): no force from there on.

    Returns
    -------
    RecordedForce
        The record as ``force_replay`` will read it.

    Raises
    ------
    ValueError
        If the push does not fit in ``(0, end)``.
    """
    if not (start > 0.0 and length > 0.0 and start + length < end):
        msg = f"the push [{start}, {start + length}) s must lie inside (0, {end}) s of the run"
        raise ValueError(msg)
    rows = [(0.0, 0.0, 0.0), (start, *force), (start + length, 0.0, 0.0), (end, 0.0, 0.0)]
    with path.open("w", encoding="utf-8", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(CSV_COLUMNS)
        writer.writerows(rows)
    return RecordedForce.from_csv(path)


@dataclass(frozen=True)
class RunSummary:
    """The numbers the demo reports about a recorded run.

    Attributes
    ----------
    steps : int
        Steps the simulator ran (frames of the log minus the initial one).
    simulated : float
        Simulated time of the run (s): steps times the scenario's step.
    wall : float
        Wall time the stepping took (s), from the resume to the last ``/clock``.
    final_tip : NDArray[np.float64]
        The tip at the end (m, in ``base``).
    target : NDArray[np.float64] | None
        The task's target, if it has one.
    tolerance : float | None
        The task's success tolerance (m), if it has one.
    peak_force : float
        Largest recorded tip force magnitude (N).
    peak_time : float
        When it acted (s); NaN without any recorded force.
    impulse : float
        Impulse of the recorded force (N*s), summed over the recorded steps.
    masked : dict[str, int]
        Missing values per channel of the log.
    """

    steps: int
    simulated: float
    wall: float
    final_tip: NDArray[np.float64]
    target: NDArray[np.float64] | None
    tolerance: float | None
    peak_force: float
    peak_time: float
    impulse: float
    masked: dict[str, int]

    @property
    def reach_error(self) -> float:
        """Distance from the final tip to the target (m); NaN without a target."""
        if self.target is None:
            return math.nan
        return float(np.linalg.norm(self.final_tip - self.target))

    @property
    def reached(self) -> bool | None:
        """Whether the final error is within the tolerance (``None`` without a target or tolerance)."""
        if self.target is None or self.tolerance is None:
            return None
        return self.reach_error <= self.tolerance

    @property
    def real_time_factor(self) -> float:
        """Simulated seconds per wall second while stepping."""
        return self.simulated / self.wall if self.wall > 0.0 else math.inf

    def text(self) -> str:
        """Return the summary as a few lines for the terminal."""
        x, y = self.final_tip.tolist()
        lines = [f"steps run:          {self.steps} ({self.simulated:.3f} s simulated)"]
        if self.target is None:
            lines.append(f"final tip:          ({x:+.4f}, {y:+.4f}) m; the task has no target")
        else:
            tx, ty = self.target.tolist()
            error = f"{self.reach_error * 1000.0:.2f} mm"
            if self.tolerance is None:
                verdict = "(the task gives no tolerance)"
            else:
                word = "within" if self.reached else "OUTSIDE"
                verdict = f"{word} the tolerance of {self.tolerance * 1000.0:.1f} mm"
            lines.append(f"final tip:          ({x:+.4f}, {y:+.4f}) m, target ({tx:+.4f}, {ty:+.4f}) m")
            lines.append(f"reach error at end: {error}, {verdict}")
        if math.isnan(self.peak_time):
            lines.append("peak tip force:     none recorded")
        else:
            lines.append(
                f"peak tip force:     {self.peak_force:.2f} N at t={self.peak_time:.3f} s "
                f"(impulse {self.impulse:.3f} N*s)"
            )
        lines.append(
            f"real-time factor:   {self.real_time_factor:.2f} "
            f"({self.simulated:.3f} s simulated in {self.wall:.2f} s of stepping, lockstep)"
        )
        missing = ", ".join(f"{name}: {count}" for name, count in self.masked.items() if count)
        if missing:
            lines.append(f"missing values:     {missing} (masked in the log)")
        return "\n".join(lines)


def summarize(
    log: skelarm.StateLog,
    scenario: str | Path,
    wall: float,
    masked: dict[str, int] | None = None,
) -> RunSummary:
    """Compute the demo's summary of a recorded run.

    Parameters
    ----------
    log : skelarm.StateLog
        The run, as ``bag_to_log`` wrote it (needs ``q``; uses ``ext_force``).
    scenario : str | Path
        The scenario that ran: its arm gives the tip, its task the target and tolerance.
    wall : float
        Wall time the stepping took (s).
    masked : dict[str, int] | None, optional
        Missing values per channel (``bag_to_log``'s summary).

    Returns
    -------
    RunSummary
        The numbers to report.
    """
    from skelarm_ros.sim.engine import ArmEngine
    from skelarm_ros.sim.markers import goals_from_config
    from skelarm_ros.sim.scenario import load_arm

    arm = load_arm(scenario)
    times = np.asarray(log.times, dtype=np.float64)
    q = np.asarray(log.channel("q"), dtype=np.float64).reshape(len(times), -1)
    final_q = q[np.isfinite(q).all(axis=1)][-1]
    final_tip = ArmEngine(arm.skeleton, arm.dt).endpoint(final_q)
    goal = next((goal for goal in goals_from_config(arm.config) if goal.active), None)
    peak_force, peak_time, impulse = 0.0, math.nan, 0.0
    if "ext_force" in log.channel_names:
        force = np.asarray(log.channel("ext_force"), dtype=np.float64).reshape(len(times), -1)
        magnitude = np.linalg.norm(force, axis=1)
        recorded = np.isfinite(magnitude)
        if recorded.any():
            index = int(np.nanargmax(np.where(recorded, magnitude, -1.0)))
            peak_force, peak_time = float(magnitude[index]), float(times[index])
            steps = np.diff(times)
            impulse = float(np.linalg.norm(np.nansum(force[:-1] * steps[:, None], axis=0)))
    return RunSummary(
        steps=len(times) - 1,
        simulated=(len(times) - 1) * arm.dt,  # the simulator's time: t += dt per step
        wall=wall,
        final_tip=final_tip,
        target=None if goal is None else goal.position,
        tolerance=None if goal is None else goal.tolerance,
        peak_force=peak_force,
        peak_time=peak_time,
        impulse=impulse,
        masked=dict(masked or {}),
    )


def run_graph(specs: Sequence[NodeSpec], out: IO[str], timeout: float = DEFAULT_TIMEOUT) -> int:
    """Run the graph with the launcher's runner until the simulator ends its duration.

    The graph itself makes the run wait until its readers listen: the simulator's
    step 0 waits for the controller and the recorder by name (``state_readers``), and the
    force replay holds its wrenches until the simulator and the recorder match, so
    the bag keeps every step.

    Parameters
    ----------
    specs : Sequence[NodeSpec]
        The graph (:func:`skelarm_ros.cli.graph.describe` with a duration).
    out : IO[str]
        Where the nodes' output goes.
    timeout : float
        Wall seconds for the whole run; the graph is stopped after it.

    Returns
    -------
    int
        The launcher's exit code (0 when the simulator finished its duration).
    """
    import tempfile

    from skelarm_ros.cli.launcher import Runner, plan

    with tempfile.TemporaryDirectory(prefix="skelarm-ros-demo-") as directory:
        runner = Runner(out=out)

        def report(line: str) -> None:
            out.write(f"[demo] {line}\n")

        planned = plan(specs, Path(directory), report=report)
        watchdog = threading.Timer(timeout, runner.request_stop)
        watchdog.start()
        try:
            return runner.run(planned)
        finally:
            watchdog.cancel()


def stepping_wall_time(output: str) -> float:
    """Read the simulator's stepping time (its first step to its last) off its last summary line.

    Raises
    ------
    DemoError
        If the output holds no such line (the simulator did not finish its run).
    """
    summary = SimulatorSummary.read("\n".join(line for line in output.splitlines() if "simulator]" in line))
    if summary is None or not summary.time_lines:
        msg = "the simulator did not report the end of its run"
        raise DemoError(msg)
    return summary.time_lines[-1].stepping


def run_demo(
    output: Path = DEFAULT_OUTPUT,
    *,
    duration: float = DEFAULT_DURATION,
    scenario: str = DEFAULT_SCENARIO,
    timeout: float = DEFAULT_TIMEOUT,
    stream: IO[str] | None = None,
) -> RunSummary:
    """Run the demo into ``output`` and return its summary.

    Parameters
    ----------
    output : Path
        The output folder (created; the demo's own files in it are replaced).
    duration : float
        Simulated seconds to run (more than the push's end).
    scenario : str
        The scenario (a bundled name or a path) with a ``[task]`` and ``[controller]``.
    timeout : float
        Wall seconds the graph may take.
    stream : IO[str] | None, optional
        Where to print progress (default standard output).

    Returns
    -------
    RunSummary
        The numbers of the recorded run.

    Raises
    ------
    DemoError
        If a step fails; the message names it and where its output is.
    """
    from skelarm_ros.bags.bag_to_log import bag_to_log
    from skelarm_ros.cli.graph import describe
    from skelarm_ros.cli.plot import draw, load_log
    from skelarm_ros.sim.scenario import resolve_scenario

    say = stream if stream is not None else sys.stdout
    paths = DemoPaths(output.expanduser().resolve())
    paths.folder.mkdir(parents=True, exist_ok=True)
    for old in (paths.bag, paths.log, paths.picture):  # a new run replaces the demo's own outputs only
        if old.is_dir():
            shutil.rmtree(old)
        elif old.exists():
            old.unlink()
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_LOG_DIR", str(paths.ros_log))
    scenario_path = resolve_scenario(scenario)

    push = write_push(paths.push, end=duration)
    fx, fy = PUSH_FORCE
    say.write(
        f"push: {math.hypot(fx, fy):.1f} N ({fx:+.1f}, {fy:+.1f}) from t={PUSH_START} s for {PUSH_LENGTH} s "
        f"(impulse {float(np.linalg.norm(push.impulse())):.3f} N*s) -> {paths.push}\n"
    )
    specs = describe(
        {
            "scenario": str(scenario_path),
            "mode": "lockstep",
            "duration": str(duration),
            "force_source": str(paths.push),
            "record": str(paths.bag),
        }
    )
    say.write(f"running '{scenario_path.name}' in lockstep for {duration} s with the push replayed and recorded ...\n")
    say.flush()
    started = time.monotonic()
    with paths.graph_output.open("w", encoding="utf-8") as out:
        code = run_graph(specs, out, timeout)
    graph_seconds = time.monotonic() - started
    try:
        if code != 0:
            msg = f"the graph ended with exit code {code}"
            raise DemoError(msg)
        wall = stepping_wall_time(paths.graph_output.read_text(encoding="utf-8"))
    except DemoError as error:
        msg = f"{error}; the nodes' output is in {paths.graph_output}"
        raise DemoError(msg) from None

    started = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        conversion = bag_to_log(paths.bag, paths.log, wrench_topic="/tip_wrench", scenario=scenario_path)
    convert_seconds = time.monotonic() - started

    started = time.monotonic()
    try:
        draw(paths.log, paths.picture, scenario=scenario_path)
    except ValueError as error:  # PlotError, ScenarioError
        msg = f"skelarm-ros plot could not draw {paths.log}: {error}"
        raise DemoError(msg) from None
    plot_seconds = time.monotonic() - started

    summary = summarize(load_log(paths.log), scenario_path, wall, conversion.masked)
    say.write(
        f"graph (start-up, run, shutdown): {graph_seconds:.1f} s; bag_to_log: {convert_seconds:.1f} s "
        f"({conversion.messages} messages -> {conversion.frames} frames); plot: {plot_seconds:.1f} s\n\n"
        f"outputs in {paths.folder}:\n"
        f"  recorded push    {paths.push}\n"
        f"  bag              {paths.bag}\n"
        f"  log              {paths.log}\n"
        f"  picture          {paths.picture}\n"
        f"  nodes' output    {paths.graph_output}\n\n"
        f"{summary.text()}\n"
    )
    say.flush()
    return summary


def _parser() -> argparse.ArgumentParser:
    parser = tool.parser(PROG, __doc__.splitlines()[0])
    parser.add_argument(
        "-o", "--output", type=Path, default=DEFAULT_OUTPUT, help=f"output folder (default {DEFAULT_OUTPUT}/)"
    )
    parser.add_argument(
        "--duration", type=_duration, default=DEFAULT_DURATION, help=f"simulated seconds (default {DEFAULT_DURATION})"
    )
    parser.add_argument("--scenario", default=DEFAULT_SCENARIO, help="scenario: a bundled name or a path")
    return parser


def _duration(text: str) -> float:
    """Read ``--duration``: simulated seconds, more than the push's end."""
    end = PUSH_START + PUSH_LENGTH
    try:
        duration = float(text)
    except ValueError:
        duration = math.nan
    if not (math.isfinite(duration) and duration > end):
        msg = f"must be more than the push's end ({end} s), got {text}"
        raise argparse.ArgumentTypeError(msg)
    return duration


def _demo(args: argparse.Namespace) -> tool.Done:
    run_demo(args.output, duration=args.duration, scenario=args.scenario)  # it prints the summary as it goes
    return tool.Done()  # a reach outside its tolerance is reported in the summary, not an error


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``skelarm-ros demo``; returns the exit code.

    With ``--force`` the demo writes into an output folder that exists, replacing its own files there.
    """
    return tool.run_main(_parser(), argv, _demo, outputs=lambda args: [args.output], errors=(DemoError, ValueError))
