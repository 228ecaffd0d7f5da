"""hardware:=twin as the launcher starts it: real processes over real DDS, the simulator as the arm's driver.

Lockstep is the in-process twin run (skelarm_ros.control.twin_run) bit for bit, two processes or
composed, and so the same seed gives the same bag; realtime publishes at the driver's rate, its
angles on whole encoder ticks.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import procs
import pytest

from skelarm_ros.bags.reader import open_bag
from skelarm_ros.cli.predict import predict
from skelarm_ros.sim.scenario import resolve_scenario

pytestmark = pytest.mark.slow

DRIVER = """
[driver]
rate = 250
command_delay = 0.004
torque_lag = 0.002
position_noise = 2e-4
velocity_noise = 0.02
effort_noise = 0.05
encoder_ticks = 16384
seed = 3
"""
DURATION = 1.0
TIMEOUT = 180.0  # s for a launch of a short run on a loaded machine


def twin_scenario(folder: Path) -> Path:
    """The four-link reach in the vertical plane behind a 250 Hz driver with delay, lag and noise."""
    text = resolve_scenario("reach_four_dof_robot").read_text(encoding="utf-8")
    text = text.replace("[simulator]\n", "[simulator]\ngrav_vec = [0.0, -9.81]\n").replace("limits = [-20.0, 30.0]", "")
    path = folder / "twin.toml"
    path.write_text(text + DRIVER, encoding="utf-8")
    return path


def launch(*arguments: str) -> str:
    """Run ``skelarm-ros launch sim`` to its end; return its output."""
    return procs.run_launch(arguments, TIMEOUT)


def recorded(bag: Path, topic: str, field: str) -> tuple[np.ndarray, np.ndarray]:
    """A JointState topic's stamps (ns) and one field, in the order recorded."""
    stamps, rows = [], []
    with open_bag(bag) as opened:
        for _, _, _, message in opened.messages([topic]):
            stamps.append(message.header.stamp.sec * 1_000_000_000 + message.header.stamp.nanosec)
            rows.append(list(getattr(message, field)))
    return np.array(stamps, dtype=np.int64), np.array(rows)


def test_lockstep_twin_is_the_in_process_run_bit_for_bit_composed_or_not(tmp_path):
    path = twin_scenario(tmp_path)
    expected = predict({"scenario": str(path)}, DURATION)
    assert not expected.stopped
    bags = {}
    for compose in ("false", "true"):
        bags[compose] = tmp_path / f"bag_{compose}"
        launch(
            f"scenario:={path}",
            "hardware:=twin",
            "mode:=lockstep",
            f"duration:={DURATION}",
            f"compose:={compose}",
            f"record:={bags[compose]}",
        )
    for bag in bags.values():
        stamps, position = recorded(bag, "/joint_states", "position")
        _, velocity = recorded(bag, "/joint_states", "velocity")
        _, effort = recorded(bag, "/joint_states", "effort")
        np.testing.assert_array_equal(stamps, expected.stamps)
        np.testing.assert_array_equal(position, expected.position)
        np.testing.assert_array_equal(velocity, expected.velocity)
        np.testing.assert_array_equal(effort, expected.effort)
        answered, command = recorded(bag, "/joint_commands", "effort")
        np.testing.assert_array_equal(answered, expected.stamps)
        np.testing.assert_array_equal(command, expected.command)


def test_realtime_twin_publishes_at_the_drivers_rate_on_whole_encoder_ticks(tmp_path):
    path = twin_scenario(tmp_path)
    bag = tmp_path / "bag"
    output = launch(f"scenario:={path}", "hardware:=twin", f"duration:={DURATION}", f"record:={bag}")
    assert "as the arm's driver: 250 Hz (2 steps a tick)" in output
    stamps, position = recorded(bag, "/joint_states", "position")
    assert np.all(stamps % 4_000_000 == 0) and np.all(np.diff(stamps) > 0)  # a state a tick, each once
    assert stamps[-1] == round(DURATION * 1e9) and len(stamps) > 0.9 * DURATION * 250
    counts = position / (2.0 * math.pi / 16384)
    np.testing.assert_allclose(counts, np.round(counts), rtol=0.0, atol=1e-6)
