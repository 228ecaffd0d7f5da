"""launch_testing test of sim.launch.py, where a ROS 2 distribution provides launch_testing.

It starts the launch file for real (with ``colcon test`` or ``launch_test``) and checks that joint
states arrive, the controller closes the loop, the reach ends at its target, and every process
exits cleanly. test_launcher_system.py checks the same through ``skelarm-ros launch sim``, which
runs where launch_testing is not installed.
"""

from __future__ import annotations

import math
import sys
import unittest
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

pytest.importorskip(
    "launch_testing",
    reason="launch_testing is not importable (it comes with a ROS 2 distribution, not PyPI); "
    "test_launcher_system.py checks the same behaviour through `skelarm-ros launch sim`",
)
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
from launch import LaunchDescription  # noqa: E402
from launch.actions import IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402

# pytest puts test/ on the import path; `launch_test test/test_launch_file.py` loads this file alone.
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import installed_share  # noqa: E402
from test_launcher_system import Probe, reach_target  # noqa: E402

SHARE = installed_share()

DEADLINE = 90.0  # s for the graph to start and the reach to finish on a loaded machine


@pytest.mark.launch_test
def generate_test_description() -> LaunchDescription:
    sim = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(SHARE / "launch" / "sim.launch.py")),
        launch_arguments={"namespace": "arm1"}.items(),
    )
    return LaunchDescription([sim, launch_testing.actions.ReadyToTest()])


class TestReach(unittest.TestCase):
    def test_joint_states_arrive_and_the_controller_reaches_the_target(self) -> None:
        x, y, tolerance = reach_target()
        probe = Probe("arm1")

        def reached() -> bool:
            if len(probe.states) < 100 or not probe.commands or not probe.tips:
                return False
            tip = probe.tips[-1].point
            return math.hypot(tip.x - x, tip.y - y) < tolerance and max(map(abs, probe.states[-1].velocity)) < 0.01

        try:
            done = probe.wait_for(reached, DEADLINE)
            self.assertTrue(probe.states, "no joint_states arrived")
            self.assertTrue(probe.commands, "the controller published no effort commands")
            self.assertTrue(done, f"the tip did not come to rest at ({x}, {y}) within {tolerance} m")
        finally:
            probe.close()


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_every_process_exits_cleanly(self, proc_info) -> None:
        launch_testing.asserts.assertExitCodes(proc_info)
