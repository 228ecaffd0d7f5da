"""The controller's answers timed against the driver's state period (skelarm_ros.control.latency), and why it
matters: a command one tick late turns a reach that is stable on time unstable (on a MuJoCo arm)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from mujoco_arm import SIM_STEP, MujocoArm

from skelarm_ros.control.latency import LATE_WINDOW, LoopLatency
from skelarm_ros.control.loop import build_control_loop
from skelarm_ros.interface import WARNING
from skelarm_ros.sim.engine import ArmEngine
from skelarm_ros.sim.scenario import load_arm, load_scenario

PERIOD_NS = 4_000_000  # a 250 Hz driver


def answer_all(latency: LoopLatency, took: list[float], *, jitter: float = 0.0) -> list:
    """States every 4 ms (stamps with ``jitter`` s of noise), each answered after its entry of ``took`` (s)."""
    rng = np.random.default_rng(0)
    said = []
    for k, seconds in enumerate(took):
        latency.state(10**9 + k * PERIOD_NS + round(jitter * 1e9 * rng.standard_normal()))
        arrived = 5.0 + k * 0.004
        said += latency.answered(arrived, arrived + seconds)
    return said


def test_the_period_comes_from_the_stamps_and_the_figures_from_the_answers():
    latency = LoopLatency()
    assert math.isnan(latency.period) and latency.text() == "answered no state"
    took = [0.0004] * 990 + [0.0015] * 9 + [0.006]
    said = answer_all(latency, took, jitter=0.0002)
    assert said == []  # not one answer in a hundred late
    assert latency.period == pytest.approx(0.004, abs=5e-5)  # the median of the stamps' steps
    assert latency.answers == 1000 and latency.late == 1 and latency.worst == pytest.approx(0.006)
    assert abs(latency.percentile(50.0) - 0.0004) <= 0.012 * 0.0004
    assert abs(latency.percentile(99.0) - 0.0004) <= 0.012 * 0.0004
    assert latency.percentile(100.0) == pytest.approx(latency.worst, rel=0.012)
    assert latency.text().startswith("answers took 0.40 ms (median), 0.40 ms (p99), 6.00 ms at most")
    assert re.search(r"1 of 1000 later than half the state period \(4\.0\d ms\)$", latency.text())


def test_answers_later_than_half_a_period_are_warned_about_once():
    latency = LoopLatency()
    took = [0.0005] * 300 + [0.0005, 0.0005, 0.0025] * 100
    said = answer_all(latency, took)
    assert [item.level for item in said] == [WARNING]
    assert said[0].text.startswith("3 of the last 250 answers came later than half the driver's state period (4.00 ms")
    assert "acts a period late" in said[0].text
    assert latency.late == 100
    assert f"the last {LATE_WINDOW} answers" in said[0].text
    quiet = LoopLatency(warn=False)  # beside the lockstep simulator, which waits for each answer
    assert answer_all(quiet, took) == [] and quiet.late == 100


# A three-link arm whose last link is light: under skelarm's time-varying stiffness reach (its default gains, the
# task-space damping 22.5 N*s/m) the smallest task-space inertia at the start is 0.075 kg, so the damping's
# discrete gain D*T/m over a 4 ms period is 1.2: inside 2, where a command acting at the next tick is stable,
# outside 1, where one acting a tick later is (docs/controller.md, "Loop latency").
THREE_LINKS = """
[skeleton]
base_length = 0.0
{links}
[initial]
q = [30.0, 60.0, 30.0]

[task]
type = "reaching"
target = {{ pos = [0.25, 0.35], tolerance = 0.01 }}
duration = 2.0

[simulator]
dt = 0.002

[controller]
type = "time_varying_stiffness"
"""
LINKS = [(0.3, 1.0, 0.01), (0.25, 0.6, 0.004), (0.15, 0.2, 0.0006)]  # length (m), mass (kg), inertia (kg*m^2)


def reach_on_mujoco(path, ticks_late: int) -> tuple[float, float]:
    """Run the reach on the MuJoCo arm at 250 Hz, each command acting ``ticks_late`` ticks after the next one;
    return the largest command (N*m, stopping past 1000) and the tip's distance from the target after 3 s (m)."""
    loop, _ = build_control_loop(path)
    arm = load_arm(path)
    plant = MujocoArm(arm.skeleton)
    waiting, torque, peak = [], np.zeros(3), 0.0
    for k in range(750):
        waiting.append(loop.control(loop.joint_names, plant.q.tolist(), plant.dq.tolist(), k * PERIOD_NS).torque)
        peak = max(peak, float(np.abs(waiting[-1]).max()))
        if len(waiting) > ticks_late:
            torque = waiting.pop(0)
        plant.step(torque, round(0.004 / SIM_STEP))
        if peak > 1000.0:
            break
    tip = ArmEngine(arm.skeleton, arm.dt).endpoint(plant.q)
    return peak, math.dist(tip, load_scenario(path).task.target)


def test_a_command_one_tick_late_turns_a_stable_reach_unstable(tmp_path):
    links = "".join(
        f"[[skeleton.link]]\nlength = {length}\nmass = {mass}\ninertia = {inertia}\ncom = [{length / 2}, 0.0]\n"
        for length, mass, inertia in LINKS
    )
    path = tmp_path / "three_links.toml"
    path.write_text(THREE_LINKS.format(links=links))
    arm = load_arm(path)
    engine = ArmEngine(arm.skeleton, arm.dt)
    q = arm.skeleton.q
    jacobian = engine.jacobian(q)
    smallest = np.linalg.eigvalsh(np.linalg.inv(jacobian @ np.linalg.inv(engine.mass_matrix(q)) @ jacobian.T)).min()
    assert 1.0 < 22.5 * 0.004 / smallest < 2.0
    on_time, reached = reach_on_mujoco(path, 0)
    assert on_time < 1.0 and reached < 0.002
    late, _ = reach_on_mujoco(path, 1)
    assert late > 1000.0
