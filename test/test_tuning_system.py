"""Gains tuned on the twin hold on an arm that is not the twin: a stand-in driver whose arm is MuJoCo.

The arm is the three-link arm with a light wrist of ``light_wrist_reach`` (its time-varying
stiffness reach), simulated by MuJoCo (RK4 at 0.5 ms) behind the stand-in driver
(test/standin_driver.py): 250 Hz, its commands acting from its first tick ``command_delay``
after they arrive (0: the tick after the state they answer, on time; 4 ms: a tick late),
positions read by a 16-bit encoder, velocities with noise, brakes released at the first
command. The controller runs as ``hardware:=none`` runs it; both under SCHED_FIFO, as on a real arm
(the machine is shared with CPU-bound tests). With the scenario's own gains
and commands a tick late, the reach goes unstable (the controller stops the diverging arm,
or the tip ends far from the target); the gains ``skelarm-ros tune`` found for it
(``light_wrist_reach_tuned``, its ``[tuning]`` table says how) end the reach within its
tolerance and hold there, on time and a tick late.

``SKELARM_ROS_TUNED_RUNS`` sets how many runs of the tuned gains (1 in ``make test``; docs/tuning.md
reports 10), ``SKELARM_ROS_TUNED_DELAY`` the driver's ``command_delay`` (0.004; 0 for on time).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

from skelarm_ros.sim.engine import ArmEngine
from skelarm_ros.sim.scenario import load_arm, load_scenario

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # a 250 Hz driver and wall-time deadlines: alone

pytest.importorskip("rclpy")
from test_real_arm_system import Driver, launch  # noqa: E402

SCENARIOS = Path(__file__).resolve().parents[1] / "config" / "scenarios"
OWN, TUNED = SCENARIOS / "light_wrist_reach.toml", SCENARIOS / "light_wrist_reach_tuned.toml"
ARM_JOINTS = ("shoulder", "elbow", "wrist")
DRIVER_JOINTS = ("wrist", "shoulder", "elbow")  # the order its effort controller takes them in
HOLD = 2.0  # s of states after the task's time, the last half of which is judged
PRIORITY = 50  # SCHED_FIFO for the driver and the controller, as on a real arm, where the user may
RUNS = int(os.environ.get("SKELARM_ROS_TUNED_RUNS", "1"))
DELAY = float(os.environ.get("SKELARM_ROS_TUNED_DELAY", "0.004"))  # s: a tick late (0: on time)


def reach(driver: Driver, path: Path) -> tuple[np.ndarray, str, int | None]:
    """Run the reach of ``path`` on the driver's arm (from its first pose: reset after a run).

    Returns the tip's distance to the target (m) at each state of the last second of the hold,
    the launch's output, and its exit code where it ended by itself (the controller stopped a
    diverging arm) before the hold was over, else ``None``.
    """
    launched = launch(driver, path, (), f"thread_priority:={PRIORITY}")
    try:
        ended = lambda: launched.process.poll() is not None  # noqa: E731
        said = lambda: any("the task's time" in line for line in list(launched.lines))  # noqa: E731
        assert driver.probe.wait_for(lambda: said() or ended(), 120.0), f"{launched.output()}\n{driver.logs()}"
        if not ended():
            driver.probe.wait_for(ended, HOLD)  # the hold, unless the controller stops the arm in it
        code = launched.wait(30.0) if ended() else None
    finally:
        launched.end()
    states = driver.states()
    arm = load_arm(OWN)
    engine = ArmEngine(arm.skeleton, arm.dt)
    target = load_scenario(OWN).task.target
    last = states[states[:, 0] >= states[-1, 0] - HOLD / 2.0]
    errors = np.array([math.dist(engine.endpoint(row[2 : 2 + len(ARM_JOINTS)]), target) for row in last])
    return errors, launched.output(), code


def test_the_tuned_gains_hold_a_tick_late_where_the_scenarios_own_go_unstable(tmp_path: Path) -> None:
    tolerance = load_scenario(OWN).task.tolerance
    driver = Driver(
        tmp_path / "arm",
        OWN,
        arm_joints=ARM_JOINTS,
        joints=DRIVER_JOINTS,
        command_delay=DELAY,
        thread_priority=PRIORITY,
    )
    try:
        if DELAY > 0.0:  # on time, the scenario's own gains hold (docs/predict.md)
            errors, output, code = reach(driver, OWN)
            print(f"own gains, delay {DELAY * 1e3:g} ms: exit {code}, tip {1e3 * errors.max():.1f} mm at most")
            assert (code == 1 and "the arm is diverging:" in output) or errors.max() > tolerance, output
        for index in range(RUNS):
            driver.reset()
            errors, output, code = reach(driver, TUNED)
            print(f"tuned gains, delay {DELAY * 1e3:g} ms, run {index + 1}: tip {1e3 * errors.max():.2f} mm at most")
            assert code is None, f"{output}\n{driver.logs()}"
            assert errors.max() < tolerance, (errors.max(), output)
    finally:
        driver.close()
