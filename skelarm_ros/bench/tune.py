# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""How fast tuning tries gains: trials per second on the project's engine beside MuJoCo stepping the same arm.

A trial here is what tuning does with one candidate on one robust sample: build the candidate's
control loop (its scenario's tables in memory, ``build_control_loop`` as the graph's controller builds it
for a hardware run), run the 2 s reach at 2 ms behind the 250 Hz driver, each command acting a
tick after the state it answers, and compute the tip's distance to the target at every state.
Beside it the same trial with the arm in MuJoCo (the same links, hinges about z, its default
semi-implicit Euler at the same 2 ms), stepped from Python as a MuJoCo-based tuner steps it,
the same controller answering each 250 Hz state. The scenario is ``light_wrist_reach_tuned``
(the three-link reach with gains that hold a tick late). Rounds are interleaved, so both meet
the same load, and are timed in this process's CPU time (the machine is shared; a trial is one
thread's work); the ratio is the median of each round's. A whole default trial of ``skelarm-ros
tune`` on ``light_wrist_reach`` (every robust sample, each the task and its 2 s hold) is timed
too, for the tool's own rate.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from skelarm_ros.sim.mjcf import mujoco_xml

if TYPE_CHECKING:
    from skelarm_ros.sim.scenario import ArmSetup

SCENARIO = "light_wrist_reach_tuned"
TUNED_FROM = "light_wrist_reach"
REACH = 2.0  # s simulated a trial
TARGET = 1.0  # trials/s on the project's engine at least MuJoCo's


class _MujocoTrial:
    """The trial with the arm in MuJoCo: fresh data each time, the controller answering each tick of the driver."""

    def __init__(self, arm: ArmSetup) -> None:
        import mujoco

        self.mujoco = mujoco
        self.arm = arm
        xml = mujoco_xml(arm.skeleton, arm.drive, arm.grav_vec, step=arm.dt, integrator="Euler")
        self.model = mujoco.MjModel.from_xml_string(xml)
        assert arm.driver is not None
        self.steps_per_tick = round(arm.driver.period(arm.dt) / arm.dt)

    def __call__(self, loop: Any, names: list[str], target: np.ndarray) -> np.ndarray:
        from skelarm_ros.tuning.objective import tip_positions

        mujoco = self.mujoco
        data = mujoco.MjData(self.model)
        data.qpos[:] = self.arm.skeleton.q
        mujoco.mj_forward(self.model, data)
        ticks = round(REACH / self.arm.dt) // self.steps_per_tick
        angles = np.zeros((ticks + 1, self.arm.num_joints))
        acting = np.zeros(self.arm.num_joints)
        period_ns = round(self.steps_per_tick * self.arm.dt * 1e9)
        for tick in range(ticks + 1):
            angles[tick] = data.qpos
            answer = loop.control(names, data.qpos.tolist(), data.qvel.tolist(), tick * period_ns).torque
            if tick == ticks:
                break
            for _ in range(self.steps_per_tick):  # the command answering this state acts from the next tick
                data.ctrl[:] = acting
                mujoco.mj_step(self.model, data)
            acting = answer
        tips = tip_positions(self.arm.skeleton, angles)
        return np.hypot(tips[:, 0] - target[0], tips[:, 1] - target[1])


def run(*, quick: bool = False) -> dict[str, float]:
    """Measure and print trials per second of a 2 s reach at 2 ms: the project's engine beside MuJoCo.

    Returns
    -------
    dict[str, float]
        ``engine`` and ``mujoco`` trials/s and ``tune`` default trials/s (medians of the rounds), ``ratio``
        (engine / MuJoCo, the median of the rounds').
    """
    import copy

    from skelarm_ros.cli.predict import controller_params
    from skelarm_ros.control.settings import ControlSettings
    from skelarm_ros.control.twin_run import run_twin
    from skelarm_ros.tuning.evaluate import Evaluator, Problem
    from skelarm_ros.tuning.objective import tip_positions

    rounds, trials = (1, 3) if quick else (5, 10)
    params = controller_params({"scenario": SCENARIO})
    default = controller_params({"scenario": TUNED_FROM})
    rates: dict[str, list[float]] = {"engine": [], "mujoco": [], "tune": []}
    evaluator = Evaluator(Problem(str(params.scenario), ControlSettings.of(params)))
    full = Evaluator(Problem(str(default.scenario), ControlSettings.of(default), twins=3))
    arm = evaluator.arm  # its [driver]: 250 Hz, each command acting a tick after its state, as MuJoCo's here
    gains = evaluator.gains(evaluator.start())
    mujoco_trial = _MujocoTrial(arm)
    names = list(evaluator.loop(gains).joint_names)

    def engine_trial() -> None:
        run = run_twin(arm, copy.deepcopy(evaluator.loop(gains)), REACH, joint_names=names)
        tips = tip_positions(arm.skeleton, run.position)
        np.hypot(tips[:, 0] - evaluator.target[0], tips[:, 1] - evaluator.target[1])

    def timed(work: Any, count: int) -> float:  # this process's CPU time: the machine is shared
        started = time.process_time()
        for _ in range(count):
            work()
        return count / (time.process_time() - started)

    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start")
    final: dict[str, np.ndarray] = {}
    for _ in range(rounds):  # interleaved, so both meet the same load
        rates["engine"].append(timed(engine_trial, trials))
        rates["mujoco"].append(
            timed(lambda: final.update(e=mujoco_trial(evaluator.loop(gains), names, evaluator.target)), trials)
        )
        rates["tune"].append(timed(lambda: full.evaluate(full.gains(full.start())), max(1, trials // 5)))
    ratio = statistics.median(a / b for a, b in zip(rates["engine"], rates["mujoco"], strict=True))
    steps = round(REACH / arm.dt)
    print(
        f"a trial: {SCENARIO}'s control loop built, its {REACH:g} s reach at {1e3 * arm.dt:g} ms ({steps} steps) "
        "behind a 250 Hz driver (commands acting a tick after their state), the tip's distance to the target; "
        f"{rounds} interleaved round(s) of {trials}, medians, per second of this process's CPU time"
    )
    print(f"{'':44} {'trials/s':>9}   each round")
    for label, key in (("the project's engine (run_twin)", "engine"), ("MuJoCo stepped from Python", "mujoco")):
        each = " ".join(f"{rate:.1f}" for rate in rates[key])
        print(f"{label:<44} {statistics.median(rates[key]):>9.1f}   {each}")
    verdict = "met" if ratio >= TARGET else "NOT met"
    print(f"the project's engine at {ratio:.2f}x MuJoCo's trials/s (goal: at least MuJoCo's rate): {verdict}")
    print(f"MuJoCo's arm ended {1e3 * final['e'][-1]:.2f} mm from the target (the reach holds on it too)")
    samples = len(full.samples.items)
    print(
        f"skelarm-ros tune's default trial on {TUNED_FROM} ({samples} robust samples of {full.duration:g} s): "
        f"{statistics.median(rates['tune']):.2f} trials/s in one process"
    )
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return {
        "engine": statistics.median(rates["engine"]),
        "mujoco": statistics.median(rates["mujoco"]),
        "tune": statistics.median(rates["tune"]),
        "ratio": ratio,
    }
