"""The controller's progress lines, from the states it controls, with the wall time handed in."""

from __future__ import annotations

import numpy as np
import pytest

from skelarm_ros.control.loop import build_control_loop
from skelarm_ros.control.progress import TaskProgress
from skelarm_ros.interface import seconds_to_nanoseconds
from skelarm_ros.sim.engine import ArmEngine
from skelarm_ros.sim.scenario import load_arm


def drive(scenario: str, seconds: float, progress: TaskProgress | None = None):
    """The scenario's controller against the engine, as a lockstep simulator runs it; every line said."""
    loop, _ = build_control_loop(scenario)
    arm = load_arm(scenario)
    engine = ArmEngine(arm.skeleton, arm.dt, grav_vec=arm.grav_vec, enforce_limits=arm.enforce_limits)
    progress = progress or TaskProgress(loop)
    said = []
    for _ in range(round(seconds / arm.dt)):
        out = loop.control(loop.joint_names, engine.q.tolist(), engine.dq.tolist(), seconds_to_nanoseconds(engine.t))
        said += progress.controlled(out.t)
        engine.step(out.torque)
    return loop, engine, progress, [item.text for item in said]


def test_the_reach_and_the_end_of_the_task_are_said_once_each() -> None:
    loop, engine, _, said = drive("reach", 2.5)
    assert len(said) == 2, said
    reached, ended = said
    assert reached.startswith("target reached at t=") and "m from it" in reached
    t = float(reached.split("t=")[1].split(" s")[0])
    assert 0.0 < t < 2.0
    distance = float(ended.split("the tip is ")[1].split(" m")[0])
    assert ended.startswith("the task's time (2 s) ended at t=2.000 s") and "(tolerance 0.02 m)" in ended
    target = loop.followed_target()
    assert target is not None
    tip = engine.endpoint(np.array(loop.skeleton.q))
    assert distance == pytest.approx(float(np.linalg.norm(tip - target)), abs=0.01)


def test_a_new_target_starts_the_task_over() -> None:
    loop, engine, progress, _ = drive("reach", 1.0)
    assert loop.set_target("base", 0.9, 0.9)
    stamp = seconds_to_nanoseconds(engine.t) + 1
    more = []
    for k in range(round(2.2 / loop.dt)):
        out = loop.control(loop.joint_names, engine.q.tolist(), engine.dq.tolist(), stamp + k * 2_000_000)
        more += [item.text for item in progress.controlled(out.t)]
        engine.step(out.torque)
    assert [text.split(" at ")[0] for text in more] == ["target reached", "the task's time (2 s) ended"]


def test_status_lines_come_each_period_with_the_command_rate() -> None:
    _, _, progress, _ = drive("reach", 0.1)  # 50 commands
    assert progress.report(100.0) == []  # the first call starts the count
    for _ in range(50):
        progress.controlled(0.2)
    assert progress.report(103.0) == []  # not yet a period
    (line,) = progress.report(105.0)
    assert line.text.startswith("t=0.200 s: tip (")
    assert "m from the target (0.550, 1.210); 10 commands/s" in line.text
    assert progress.report(111.0) == []  # nothing controlled since: nothing to report


def test_the_summary_says_the_commands_and_where_the_tip_was_left() -> None:
    assert TaskProgress(build_control_loop("reach")[0]).summary() == "sent no command (no joint state arrived)"
    loop, engine, progress, _ = drive("reach", 2.5)
    text = progress.summary()
    assert text.startswith("sent 1250 commands, the last at t=2.498 s: tip (0.550, 1.210), ")
    target = loop.followed_target()
    assert target is not None
    tip = engine.endpoint(np.array(loop.skeleton.q))
    distance = float(text.split(", ")[-1].split(" m")[0])
    assert distance == pytest.approx(float(np.linalg.norm(tip - target)), abs=1e-4)


def test_a_task_without_a_point_target_reports_the_tip_only(shared_scenarios) -> None:
    path = str(shared_scenarios / "periodic_curve.toml")
    loop, _ = build_control_loop(path)
    progress = TaskProgress(loop, period=1.0)
    progress.report(0.0)
    for _ in range(4):
        progress.controlled(0.5)
    (line,) = progress.report(2.0)
    assert line.text.startswith("t=0.500 s: tip (") and line.text.endswith("); 2 commands/s")
    assert "target" not in line.text
