"""System test: an "unknown" arm excited and recorded over real DDS, identified from the bag, its twin run in lockstep.

The launcher runs the excitation scenario of a random arm in lockstep with the recorder
on; identify reads the bag with a wrong prior whose other tables describe a held-out
run; the launcher then runs the twin scenario in lockstep while a probe records every
joint state. The twin must follow the held-out reference as the true arm does (its
offline run by the engine, which the lockstep simulator reproduces), the prior must not.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import procs
import pytest
from excite import HELDOUT_FREQUENCIES, robot_tables, wide_arm, write_toml, wrong_prior
from sensor_msgs.msg import JointState

from skelarm_ros.identification import excitation
from skelarm_ros.identification.identify import identify
from skelarm_ros.sim.engine import ArmEngine, run_controlled

pytestmark = pytest.mark.slow

DT = 0.002
EXCITATION = 8.0  # s
HELDOUT = 4.0  # s
CONTROLLER = {"type": "excitation", "law": "pd", "kp": 60.0, "kd": 4.0}


def _task(num_joints: int, duration: float, frequencies: list[float]) -> dict:
    return {
        "type": "joint_trajectory_tracking",
        "reference": "sum_of_sines",
        "duration": duration,
        "frequencies": frequencies,
        "amplitudes": [60.0] * num_joints,
    }


def _launch(tmp_path, name: str, *arguments: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "skelarm_ros.cli", "launch", "sim", "mode:=lockstep", *arguments]
    return procs.start(command, tmp_path / f"{name}.log")


def _offline(arm, task: dict) -> np.ndarray:
    """The held-out run of an arm by the engine (the lockstep simulator reproduces it frame for frame)."""
    import skelarm

    controller = excitation.build_controller(CONTROLLER, arm, skelarm.Task.from_dict(task))
    return run_controlled(ArmEngine(arm, DT), arm.clone(), controller, duration=task["duration"]).channel("q")


def test_the_twin_identified_from_a_bag_follows_the_held_out_reference_like_the_true_arm(tmp_path):
    rng = np.random.default_rng(2026)
    arm = wide_arm(rng, 3)
    prior = wrong_prior(rng, arm)
    simulator = {"dt": DT}
    excite = write_toml(
        robot_tables(arm, task=_task(3, EXCITATION, [0.2, 0.45, 0.8, 1.3]), simulator=simulator, controller=CONTROLLER),
        tmp_path / "unknown_arm_excitation.toml",
    )
    heldout_task = _task(3, HELDOUT, HELDOUT_FREQUENCIES)
    guess = write_toml(
        robot_tables(prior, task=heldout_task, simulator=simulator, controller=CONTROLLER), tmp_path / "guess.toml"
    )

    bag = tmp_path / "excitation_bag"
    recording = _launch(tmp_path, "excitation", f"scenario:={excite}", f"duration:={EXCITATION}", f"record:={bag}")
    try:
        code = procs.wait_exit(recording, procs.START_TIMEOUT + 120.0)
    finally:
        procs.end(recording)
    assert code == 0, procs.logs(tmp_path)

    twin_path = tmp_path / "twin.toml"
    result = identify([bag], twin_path, scenario=guess, plot=False)
    assert result.params.exact
    assert result.efforts == ["effort of /joint_states (applied until its frame)"]  # measured, beside the commands
    assert result.lags and abs(result.lags[0][1]) < 1e-5  # the simulator applies each command at once

    probe = procs.Probe()
    states = probe.record(JointState, "joint_states")
    frames = round(HELDOUT / DT) + 1
    twin_run = _launch(tmp_path, "twin", f"scenario:={twin_path}", f"duration:={HELDOUT}", "extra_readers:=/probe")
    try:
        probe.spin_until(lambda: twin_run.poll() is not None, procs.START_TIMEOUT + 120.0, "the twin's run to end")
        probe.spin_until(lambda: len(states) >= frames, 10.0, f"{frames} joint states")
        code = procs.wait_exit(twin_run, 30.0)
    finally:
        probe.close()
        procs.end(twin_run)
    assert code == 0, procs.logs(tmp_path)

    twin_q = np.array([list(message.position) for message in states[:frames]])
    true_q = _offline(arm, heldout_task)
    prior_q = _offline(prior, heldout_task)
    twin_gap = float(np.max(np.abs(twin_q - true_q)))
    prior_gap = float(np.max(np.abs(prior_q - true_q)))
    assert twin_gap < 1e-6, (twin_gap, prior_gap)
    assert prior_gap > 1e-2, prior_gap
