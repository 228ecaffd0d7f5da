# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""What playing the arm's driver costs: lockstep ``hardware:=twin`` beside ``hardware:=sim``, in one run.

The graph as the launchers start it (two processes, and composed), in lockstep on the
four-link reach, with and without the simulator playing a ``[driver]`` table. To measure the
driver model's own cost, the first twin's driver ticks at every step (as the simulator without
one) and does everything else a driver does: its commands act a tick late through a torque
lag, its states carry noise and whole encoder ticks. A 250 Hz driver (two steps a tick, a
round trip every other step) is measured beside it. The in-process twin run
(:func:`skelarm_ros.control.twin_run.run_twin`, what tuning runs) is measured the same way.
Rounds are interleaved, so each case meets the same load; the ratios are the medians of each
round's.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from skelarm_ros.bench.loop import Workspace, graph_rate
from skelarm_ros.sim.scenario import resolve_scenario

if TYPE_CHECKING:
    from collections.abc import Sequence

    from skelarm_ros.control.loop import ControlLoop, ControlOutput

SCENARIO = "reach_four_dof_robot"
EVERY_STEP = "command_delay = 0.002\ntorque_lag = 0.002\nposition_noise = 1e-4\nvelocity_noise = 0.01\n"
EVERY_STEP += "effort_noise = 0.05\nencoder_ticks = 65536\nseed = 1\n"
AT_250_HZ = EVERY_STEP + "rate = 250\n"
TARGET = 0.9  # the twin's lockstep steps/s at least this share of the sim's (within 10 %)


def _scenario(folder: Path, name: str, driver: str) -> str:
    path = folder / f"{name}.toml"
    path.write_text(resolve_scenario(SCENARIO).read_text(encoding="utf-8") + f"\n[driver]\n{driver}", encoding="utf-8")
    return str(path)


class _FromTheFirstStep:
    """A control loop whose first answer (planning from a noisy first state) is timed apart, as the graph's rate is."""

    def __init__(self, loop: ControlLoop) -> None:
        self.loop = loop
        self.first: float | None = None

    def control(
        self, names: Sequence[str], positions: Sequence[float], velocities: Sequence[float], stamp_ns: int
    ) -> ControlOutput:
        started = time.perf_counter()
        output = self.loop.control(names, positions, velocities, stamp_ns)
        if self.first is None:
            self.first = time.perf_counter() - started
        return output


def _in_process(scenario: str, hardware: str, duration: float) -> float:
    """Return the in-process run's steps per second (its building and its first state's control left out)."""
    from skelarm_ros.cli.predict import TWIN, twin_loop
    from skelarm_ros.control.twin_run import run_twin
    from skelarm_ros.sim.scenario import load_arm

    loop = _FromTheFirstStep(twin_loop({**TWIN, "scenario": scenario, "hardware": hardware})[0])
    arm = load_arm(scenario)
    started = time.perf_counter()
    run = run_twin(arm, loop, duration, driver=hardware == "twin")
    took = time.perf_counter() - started - (loop.first or 0.0)
    return round(duration / arm.dt) / took if not run.stopped else float("nan")


def run(*, quick: bool = False) -> dict[str, float]:
    """Measure and print lockstep steps/s of hardware:=twin beside hardware:=sim (graph and in-process).

    Returns
    -------
    dict[str, float]
        Steps per second per case (medians of the rounds) and ``<case> ratio`` (twin / sim, median of the rounds).
    """
    duration, rounds = (2.0, 1) if quick else (10.0, 5)
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="skelarm-ros-bench-twin-") as folder:
        work = Workspace(Path(folder))
        every, slow = _scenario(work.folder, "every_step", EVERY_STEP), _scenario(work.folder, "at_250", AT_250_HZ)
        cases = {  # label: (the graph's launch arguments, or the in-process run's scenario and hardware)
            "sim, two processes": {"scenario": every},
            "twin (driver every step), two processes": {"scenario": every, "hardware": "twin"},
            "twin (driver at 250 Hz), two processes": {"scenario": slow, "hardware": "twin"},
            "sim, composed": {"scenario": every, "compose": "true"},
            "twin (driver every step), composed": {"scenario": every, "hardware": "twin", "compose": "true"},
            "sim, in-process run": {"scenario": every, "hardware": "sim", "in_process": "true"},
            "twin (driver every step), in-process run": {"scenario": every, "hardware": "twin", "in_process": "true"},
        }
        rates: dict[str, list[float]] = {label: [] for label in cases}
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start")
        for _ in range(rounds):  # interleaved, so every case meets the same load
            for label, arguments in cases.items():
                given = dict(arguments)
                if given.pop("in_process", ""):
                    rates[label].append(_in_process(given["scenario"], given["hardware"], duration))
                else:
                    rates[label].append(graph_rate(work, given, duration))
        steps = round(duration / 0.002)
        print(
            f"lockstep, {SCENARIO} (computed torque, fast model), {duration:g} s simulated ({steps} steps) a run, "
            f"{rounds} interleaved round(s), medians; the driver every step: commands a tick late through a "
            "2 ms torque lag, noise, 65536 encoder ticks"
        )
        print(f"{'':46} {'steps/s':>9} {'vs sim':>8}   each round")
        for label in cases:
            base = label.split(", ")[-1]
            sim = rates[f"sim, {base}"]
            ratio = statistics.median(a / b for a, b in zip(rates[label], sim, strict=True))
            each = " ".join(f"{rate:.0f}" for rate in rates[label])
            print(f"{label:<46} {statistics.median(rates[label]):>9.0f} {ratio:>7.2f}x   {each}")
            results[label] = statistics.median(rates[label])
            results[f"{label} ratio"] = ratio
        ratio = results["twin (driver every step), two processes ratio"]
        verdict = "met" if ratio >= TARGET else "NOT met"
        print(f"the driver model's cost, two processes: twin at {ratio:.0%} of sim (target {TARGET:.0%}): {verdict}")
        print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return results
