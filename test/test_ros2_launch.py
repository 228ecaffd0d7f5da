"""``ros2 launch skelarm_ros sim.launch.py`` for real, where ROS 2's ``ros2 launch`` and an installed skelarm_ros are.

A node that fails fails the launch (exit 1, naming the node), as ``skelarm-ros launch`` does
(test_launcher.py checks that with stand-in processes, test_faults_system.py the simulator's lockstep
timeout); an unknown argument stops it before any node starts; a run that ends with its duration
exits 0; a launch file of one's own with arguments of its own includes sim.launch.py in a group that
does not forward them; a Ctrl-C while the launch file loads, right after launch spawns the first node or the
second, as the nodes import or while the graph runs ends it with 0, no traceback and no SIGTERM, and no
process left in its session, from a terminal or without one (test_launch_stop.py checks the launch file's part
of that with stand-ins, and skelarm-ros launch's, test_startup.py and test_colcon.py the installed
executables' part).
Skipped with the reason where ``ros2 launch`` or the installed package is missing.
"""

from __future__ import annotations

import importlib.util
import os
import pty
import re
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
ROS2 = shutil.which("ros2")
if ROS2 is None or importlib.util.find_spec("ros2launch") is None:
    pytest.skip(
        "`ros2 launch` is not installed here (it comes with a ROS 2 distribution, not PyPI); "
        "test_launcher_system.py and test_launcher.py check the same through `skelarm-ros launch sim`",
        allow_module_level=True,
    )

from conftest import installed_share  # noqa: E402
from procs import catches, in_session, wait_exit  # noqa: E402
from test_launcher_system import START_DEADLINE, Launch, alive  # noqa: E402
from waiting import wait_until  # noqa: E402

from skelarm_ros.cli.graph import GraphError, resolve_arguments  # noqa: E402
from skelarm_ros.cli.launcher import failure  # noqa: E402

SHARE = installed_share()
CAUGHT = "[ERROR] [launch]: Caught exception in launch (see debug for traceback): "
STARTING = "lockstep: starting"  # the simulator's line when step 0 goes out


@pytest.fixture(scope="module", autouse=True)
def installed_is_this_checkout() -> None:
    installed = (SHARE / "launch" / "sim.launch.py").read_text()
    if installed != (REPO / "launch" / "sim.launch.py").read_text():
        pytest.fail(f"{SHARE}/launch/sim.launch.py is not this checkout's launch/sim.launch.py; run colcon build again")


class Ros2Launch(Launch):
    """``ros2 launch <launch file> name:=value ...`` as a process (by default the installed sim.launch.py)."""

    started = re.compile(r"^\[INFO\] \[(\S+)-\d+\]: process started with pid \[(\d+)\]$")

    def __init__(
        self, *arguments: str, launch_file: tuple[str, ...] = ("skelarm_ros", "sim.launch.py"), **popen: Any
    ) -> None:
        super().__init__(*arguments, command=(ROS2, "launch", *launch_file), **popen)


class TerminalLaunch(Ros2Launch):
    """``ros2 launch`` in a process group of its own, where Ctrl-C reaches every process, as in a terminal.

    With ``terminal`` its standard input is a terminal, so launch leaves the SIGINT to the terminal (interactive);
    without, launch also sends each node SIGINT itself (``--noninteractive``).
    """

    def __init__(self, *arguments: str, launch_file: tuple[str, ...], terminal: bool) -> None:
        self.terminal = pty.openpty() if terminal else None
        stdin = self.terminal[1] if self.terminal else subprocess.DEVNULL
        super().__init__(*arguments, launch_file=launch_file, stdin=stdin, start_new_session=True)

    def ctrl_c(self) -> None:
        os.killpg(self.process.pid, signal.SIGINT)

    def end(self) -> None:
        super().end()
        for fd in self.terminal or ():
            os.close(fd)
        self.terminal = None


# What `ros2 launch` says when nothing went wrong: no traceback (a node's, launch's or Python's own), no SIGTERM.
UNCLEAN = re.compile(r"Traceback|FATAL|Exception in|Exception ignored|Fatal Python|KeyboardInterrupt|escalating to")
LOADING = "[INFO] [launch.user]: loading sim.launch.py"
LOADER = """
from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription, LogInfo
from launch.launch_description_sources import PythonLaunchDescriptionSource


def generate_launch_description():
    sim = PythonLaunchDescriptionSource({sim!r})
    arguments = {{"mode": "lockstep", "duration": "600"}}.items()
    return LaunchDescription(
        [LogInfo(msg="loading sim.launch.py"), IncludeLaunchDescription(sim, launch_arguments=arguments)]
    )
"""


def nodes_take_signals(launch: Ros2Launch) -> bool:
    """Whether both nodes started and their scripts took the signals (they import from then on, a second or so).

    SIGTERM tells: Python's own start-up handles SIGINT only, the script's first lines handle both. (In the
    millisecond between Python's SIGINT handler and those lines, Python itself still says KeyboardInterrupt.)
    """
    pids = launch.node_pids()
    return len(pids) == 2 and all(catches(pid, signal.SIGTERM) for pid in pids.values())


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "noninteractive"])
@pytest.mark.parametrize("moment", ["while sim.launch.py loads", "while the nodes import", "while the graph runs"])
def test_a_ctrl_c_ends_ros2_launch_with_0_and_no_traceback(tmp_path, moment: str, terminal: bool) -> None:
    loader = tmp_path / "load.launch.py"
    loader.write_text(LOADER.format(sim=str(SHARE / "launch" / "sim.launch.py")))
    launch = TerminalLaunch(launch_file=(str(loader),), terminal=terminal)
    try:
        if moment == "while sim.launch.py loads":
            assert launch.wait_for_line(LOADING, START_DEADLINE), launch.output()
        elif moment == "while the nodes import":
            assert wait_until(lambda: nodes_take_signals(launch), START_DEADLINE), launch.output()
            assert not launch.wait_for_line(STARTING, 0.0), "the nodes were running already"
        else:
            assert launch.wait_for_line(STARTING, START_DEADLINE), launch.output()
        launch.ctrl_c()
        code = run(launch, 60.0)
    finally:
        launch.end()
    assert code == 0, launch.output()
    assert not [line for line in launch.lines if UNCLEAN.search(line)], launch.output()
    # Without a terminal launch signals each node too; one the Ctrl-C just ended has its status taken by that
    # signal, so launch reports 255 ("process has died"), and the launch file reads the real code (0) instead.
    died = [line for line in launch.lines if "process has died" in line]
    assert not [line for line in died if terminal or "exit code 255," not in line], launch.output()
    if moment == "while sim.launch.py loads":  # launch stops before the graph starts
        assert not launch.node_pids(), launch.output()
    assert not [pid for pid in launch.node_pids().values() if alive(pid)], launch.output()


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "noninteractive"])
@pytest.mark.parametrize("spawn", [1, 2], ids=["after-the-first-spawn", "after-the-second-spawn"])
def test_a_ctrl_c_right_after_ros2_launch_spawns_a_node_leaves_no_node_running(spawn: int, terminal: bool) -> None:
    # The moment launch's task for a node has spawned it; launch numbers its processes in order (simulator-1, ...).
    launch = TerminalLaunch(
        "mode:=lockstep", "duration:=600", launch_file=("skelarm_ros", "sim.launch.py"), terminal=terminal
    )
    try:
        assert launch.wait_for_line(f"-{spawn}]: process started with pid [", START_DEADLINE), launch.output()
        launch.ctrl_c()
        code = wait_exit(launch.process, 60.0)
        left = in_session(launch.process.pid)  # wherever a node was re-parented, it stays in the session
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    finally:
        launch.end()
    assert code is not None, f"ros2 launch did not end within 60 s of the Ctrl-C:\n{launch.output()}"
    assert (code, left) == (0, []), launch.output()
    assert not [line for line in launch.lines if UNCLEAN.search(line)], launch.output()


def run(launch: Ros2Launch, budget: float) -> int:
    """Wait for the launch to end by itself; return its exit code (end it and fail after ``budget`` s)."""
    try:
        return launch.wait(budget)
    except subprocess.TimeoutExpired:
        pytest.fail(f"ros2 launch did not end within {budget} s:\n{launch.output()}")
    finally:
        launch.end()


def assert_nothing_left(launch: Ros2Launch, labels: set[str]) -> None:
    pids = launch.node_pids()
    assert set(pids) == labels, launch.output()
    assert not [label for label, pid in pids.items() if alive(pid)], launch.output()


def kill_when_running(launch: Ros2Launch, node: str, signum: int) -> None:
    """Send ``signum`` to a node once lockstep runs."""
    assert launch.wait_for_line(STARTING, START_DEADLINE), launch.output()
    os.kill(launch.node_pids()[node], signum)


def test_a_killed_controller_fails_the_launch_naming_it():
    launch = Ros2Launch("namespace:=arm1", "mode:=lockstep", "duration:=600")
    try:
        kill_when_running(launch, "controller", signal.SIGKILL)
        code = run(launch, 60.0)
    finally:
        launch.end()
    assert code == 1, launch.output()
    assert CAUGHT + failure("arm1/controller", -signal.SIGKILL) in launch.lines, launch.output()
    assert_nothing_left(launch, {"simulator", "controller"})


def test_a_simulator_that_fails_fails_the_launch_naming_it():
    # The controller stops cleanly, so the simulator waits lockstep_timeout (5 s) for a command and exits 1.
    launch = Ros2Launch("namespace:=arm1", "mode:=lockstep", "duration:=600")
    try:
        kill_when_running(launch, "controller", signal.SIGINT)
        code = run(launch, 60.0)
    finally:
        launch.end()
    assert code == 1, launch.output()
    assert "[INFO] [controller-2]: process has finished cleanly" in " ".join(launch.lines), launch.output()
    assert "arrived within lockstep_timeout=5.0 s" in launch.output()
    assert CAUGHT + failure("arm1/simulator", 1) in launch.lines, launch.output()
    assert_nothing_left(launch, {"simulator", "controller"})


def test_an_unknown_argument_stops_the_launch_before_any_node_starts():
    launch = Ros2Launch("mod:=lockstep")
    code = run(launch, START_DEADLINE)
    with pytest.raises(GraphError) as said:
        resolve_arguments({"mod": "lockstep"})  # what `skelarm-ros launch sim mod:=lockstep` says
    assert code == 1, launch.output()
    assert CAUGHT + str(said.value) in launch.lines, launch.output()
    assert not launch.node_pids(), launch.output()


@pytest.mark.parametrize("compose", [False, True], ids=["two-processes", "composed"])
def test_a_run_that_ends_with_its_duration_exits_0(compose: bool):
    launch = Ros2Launch("namespace:=arm1", "mode:=lockstep", "duration:=1.0", f"compose:={str(compose).lower()}")
    code = run(launch, START_DEADLINE + 60.0)
    assert code == 0, launch.output()
    assert "ran 500 steps (1 s simulated)" in launch.output()
    assert not [line for line in launch.lines if line.startswith("[ERROR]")], launch.output()
    if compose:  # one process, both nodes under their own names, the controller's summary at the end
        assert "[arm1.controller]: the run ended; sent 501 commands" in launch.output(), launch.output()
    assert_nothing_left(launch, {"composed"} if compose else {"simulator", "controller"})


INCLUDER = """
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration

SIM = {sim!r}


def generate_launch_description():
    include = IncludeLaunchDescription(PythonLaunchDescriptionSource(SIM))
    arguments = {{"namespace": LaunchConfiguration("arm"), "mode": "lockstep", "duration": "0.5"}}
    return LaunchDescription([
        DeclareLaunchArgument("arm", default_value="arm1"),
        {group},
    ])
"""


@pytest.mark.parametrize("forwarding", [False, True])
def test_a_launch_file_with_an_argument_of_its_own_includes_sim_launch_py_in_a_group_that_does_not_forward_it(
    tmp_path, forwarding
):
    group = f"GroupAction([include], forwarding={forwarding}, launch_configurations=arguments)"
    includer = tmp_path / "arms.launch.py"
    includer.write_text(INCLUDER.format(sim=str(SHARE / "launch" / "sim.launch.py"), group=group))
    launch = Ros2Launch("arm:=arm7", launch_file=(str(includer),))
    code = run(launch, START_DEADLINE + 60.0)
    if forwarding:  # its own argument 'arm' reaches sim.launch.py, which does not know it
        assert code == 1, launch.output()
        assert any(line.startswith(CAUGHT + "unknown launch argument 'arm'; ") for line in launch.lines)
        assert not launch.node_pids(), launch.output()
    else:
        assert code == 0, launch.output()
        assert "[arm7.simulator]" in launch.output(), launch.output()
        assert_nothing_left(launch, {"simulator", "controller"})
