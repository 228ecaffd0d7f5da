# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Identification time for 10,000 samples of a 4-joint arm, end to end, beside FIGAROH's own solve.

The run is the bundled ``excitation`` scenario's arm with armature and viscous and
Coulomb friction per joint (:data:`DRIVE`), simulated by the engine for 20 s at 2 ms
(10,000 steps), saved as a log; identify fits armature and friction (its default; a
log's torque is the applied one, so no sensor's offset). ``identify`` goes from that log to the twin's TOML (read,
align, FIGAROH regressor, base parameters, consistent set, write) with the
``excitation_cad_guess`` prior. Beside it, FIGAROH's ``BaseIdentification.solve``
(no decimation, no plot, its report captured) runs on the very regressor and torques
``identify`` built; both give the same base parameters.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from skelarm_ros.control import build_control_loop
from skelarm_ros.identification import consistency, data, regressor
from skelarm_ros.identification.identify import identify
from skelarm_ros.sim.engine import ArmEngine, run_controlled
from skelarm_ros.sim.scenario import JointDrive, load_arm

TARGET_SECONDS = 1.0
DRIVE = JointDrive.of(
    4, armature=[0.02, 0.02, 0.01, 0.002], viscous=[0.1, 0.08, 0.04, 0.01], coulomb=[0.1, 0.08, 0.04, 0.01]
)
SCENARIO = "excitation"
PRIOR = "excitation_cad_guess"
TERMS = ("armature", "viscous", "coulomb")  # what identify fits on a log (no offset: no published effort)


def _simulate(folder: Path) -> Path:
    arm = load_arm(SCENARIO)
    loop, _ = build_control_loop(arm)
    engine = ArmEngine(arm.skeleton, arm.dt, grav_vec=arm.grav_vec, drive=DRIVE)
    log = run_controlled(engine, arm.skeleton.clone(), loop.controller, duration=loop.task.duration)
    path = folder / "excitation.sklog.npz"
    log.save(path)
    return path


def _figaroh_solve(arm: regressor.Structure, samples: data.Samples, matrix: np.ndarray) -> tuple[float, np.ndarray]:
    """FIGAROH's BaseIdentification.solve on a regressor built here; its seconds and base parameters."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from figaroh.identification.base_identification import BaseIdentification

    class Planar(BaseIdentification):
        """FIGAROH's identification with the settings given here instead of its YAML file."""

        def load_param(self, config_file: Any, setting_type: str = "identification") -> None:
            self.identif_config = dict(arm.config, active_joints=[f"j{k + 1}" for k in range(arm.num_joints)])

        def load_trajectory_data(self, data_source: Any = None) -> Any:
            raise NotImplementedError  # the data are given directly

    robot = type("Robot", (), {"model": arm.model, "data": arm.model.createData()})()
    solver = Planar(robot, config_file=None)
    solver.dynamic_regressor = matrix
    solver.standard_parameter = dict(arm.standard)
    solver.processed_data = {
        "torques": samples.tau,
        "positions": samples.q,
        "velocities": samples.dq,
        "accelerations": samples.ddq,
    }
    solver.num_samples = len(samples)
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        phi = solver.solve(decimate=False, plotting=False)
    return time.perf_counter() - start, np.asarray(phi, dtype=np.float64)


def _stages(log: Path) -> dict[str, float]:
    """Seconds of each stage of identify, run one after the other."""
    times: dict[str, float] = {}
    start = time.perf_counter()
    prior = load_arm(PRIOR)
    samples = data.align(data.read_recording(log))
    times["read and align the log"] = time.perf_counter() - start
    start = time.perf_counter()
    arm = regressor.structure(prior.skeleton, prior.grav_vec, terms=TERMS)
    times["regressor structure (random states)"] = time.perf_counter() - start
    start = time.perf_counter()
    arm.regressor(samples.q, samples.dq, samples.ddq)
    times["FIGAROH regressor of the samples"] = time.perf_counter() - start
    start = time.perf_counter()
    fit = regressor.fit(arm, samples, prior.skeleton)
    times["regressor + FIGAROH QR fit"] = time.perf_counter() - start
    start = time.perf_counter()
    joints = [f"j{k + 1}" for k in range(arm.num_joints)]
    consistency.consistent_set(fit, prior.skeleton, joints, terms=arm.terms)
    times["consistent set (cone QP)"] = time.perf_counter() - start
    return times


def run(*, quick: bool = False) -> dict[str, float]:
    """Print the end-to-end time, its stages and FIGAROH's solve on the same regressor; return the seconds."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-W", "ignore", "-c", "import figaroh"], check=True, capture_output=True, timeout=300
    )
    imported = time.perf_counter() - start
    regressor.structure(load_arm(PRIOR).skeleton)  # import FIGAROH here too, outside every timing
    rounds = 1 if quick else 3
    with tempfile.TemporaryDirectory(prefix="skelarm-bench-identify-") as name:
        folder = Path(name)
        log = _simulate(folder)
        end_to_end = plotted = solve = float("inf")
        for _ in range(rounds):  # interleaved, so that both meet the same machine load
            start = time.perf_counter()
            result = identify([log], folder / "twin.toml", scenario=PRIOR, plot=False, cutoff=0.0)
            end_to_end = min(end_to_end, time.perf_counter() - start)
            arm = regressor.structure(result.prior.skeleton, result.grav_vec, terms=result.params.terms)
            matrix = arm.regressor(result.samples.q, result.samples.dq, result.samples.ddq)
            seconds, phi = _figaroh_solve(arm, result.samples, matrix)
            solve = min(solve, seconds)
        start = time.perf_counter()
        identify([log], folder / "twin.toml", scenario=PRIOR, cutoff=0.0)
        plotted = time.perf_counter() - start
        stages = _stages(log)
    samples = result.fit.samples
    difference = float(np.max(np.abs(phi - result.fit.values)) / np.max(np.abs(result.fit.values)))
    verdict = "met" if end_to_end < TARGET_SECONDS else "NOT met"
    print(f"python -c 'import figaroh': {imported:.2f} s wall (FIGAROH imports its whole tree; once per process)")
    print(f"{samples} samples of {len(result.joints)} joints, best of {rounds}:")
    target = f"target < {TARGET_SECONDS:g} s: {verdict}"
    print(f"  identify, log to twin TOML (no plot)          {end_to_end:7.3f} s   {target}")
    for stage, seconds in stages.items():
        print(f"    {stage:<42} {seconds:7.3f} s")
    print(f"  identify with the torque plot (one run)       {plotted:7.3f} s")
    print(f"  FIGAROH BaseIdentification.solve, same W      {solve:7.3f} s   (no decimation, no plot)")
    print(f"  ratio identify / FIGAROH solve                {end_to_end / solve:7.2f}")
    print(f"  base parameters, identify vs FIGAROH solve: max relative difference {difference:.1e}")
    return {"end_to_end": end_to_end, "plotted": plotted, "figaroh_solve": solve, "import": imported}
