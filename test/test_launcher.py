"""skelarm-ros launch without ROS: argument parsing, planning, and stopping a graph of plain processes."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skelarm_ros.cli.graph import NodeSpec
from skelarm_ros.cli.launcher import LaunchError, Planned, Runner, main, parse_assignments, plan
from skelarm_ros.cli.transport import PROFILES_FILE_VARIABLE, USER_PROFILE_VARIABLES, graph_profile

# A stand-in node: says hello, exits with `code` after `life` seconds, and on SIGINT says so and
# exits 0 (or, with ignore, keeps running). `python -S` keeps it quick to start. With a folder, it
# leaves a file of its label there once its handler is set, and its life starts only when the files
# of the labels it waits for are there: on a busy machine a short life must not end before the other
# node can take its SIGINT.
NODE = """
import os, signal, sys, time
code, life, ignore = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3] == "ignore"
folder, label, waits = sys.argv[4], sys.argv[5], [w for w in sys.argv[6].split(",") if w]
def on_sigint(signum, frame):
    if not ignore:
        print("got SIGINT", flush=True)
        sys.exit(0)
signal.signal(signal.SIGINT, on_sigint)
print("hello", flush=True)
if folder:
    open(os.path.join(folder, label), "w").close()
    while not all(os.path.exists(os.path.join(folder, w)) for w in waits):
        time.sleep(0.01)
end = time.monotonic() + life
while time.monotonic() < end:
    time.sleep(0.01)
sys.exit(code)
"""


def node(label, code=0, life=60.0, *, ignore=False, ends_graph=False, folder=None, waits=()):
    """Plan a stand-in node; with a folder, its life starts once the nodes labelled in ``waits`` are ready."""
    ready = (str(folder), label, ",".join(waits)) if folder is not None else ("", label, "")
    command = [sys.executable, "-S", "-c", NODE, str(code), str(life), "ignore" if ignore else "stop", *ready]
    return Planned(label, command, ends_graph)


def run(planned, stop_timeout=5.0):
    out = io.StringIO()
    code = Runner(out=out, stop_timeout=stop_timeout).run(planned)
    return code, out.getvalue().splitlines()


def test_parse_assignments():
    assert parse_assignments(["mode:=lockstep", "namespace:=", "mode:=realtime"]) == {
        "mode": "realtime",
        "namespace": "",
    }
    with pytest.raises(LaunchError, match="launch argument 'mode=lockstep' is not name:=value"):
        parse_assignments(["mode=lockstep"])


def test_a_node_that_ends_the_graph_stops_the_others_cleanly(tmp_path):
    simulator = node("simulator", life=0.5, ends_graph=True, folder=tmp_path, waits=("controller",))
    code, lines = run([simulator, node("controller", folder=tmp_path)])
    assert code == 0
    assert "[simulator] hello" in lines
    assert "[controller] got SIGINT" in lines
    assert "[launch] simulator finished; stopping the graph" in lines


def test_a_failing_node_stops_the_graph_with_a_non_zero_exit(tmp_path):
    simulator = node("simulator", code=3, life=0.3, folder=tmp_path, waits=("controller",))
    code, lines = run([simulator, node("controller", folder=tmp_path)])
    assert code == 1
    assert "[launch] simulator failed with exit code 3; stopping the graph" in lines
    assert "[controller] got SIGINT" in lines


def test_a_node_that_ignores_sigint_gets_sigterm_and_counts_as_unclean(tmp_path):
    runner_out = io.StringIO()
    runner = Runner(out=runner_out, stop_timeout=0.5)
    simulator = node("simulator", life=0.3, ends_graph=True, folder=tmp_path, waits=("stubborn",))
    code = runner.run([simulator, node("stubborn", ignore=True, folder=tmp_path)])
    lines = runner_out.getvalue().splitlines()
    assert code == 1
    assert "[launch] stubborn did not stop after SIGINT" in lines
    assert any(line.startswith("[launch] stubborn ended with exit code -15") for line in lines)


def test_a_node_that_exits_cleanly_leaves_the_rest_running_until_all_are_done():
    code, lines = run([node("once", life=0.1), node("later", life=0.6)])
    assert code == 0
    assert lines.index("[launch] once exited") < lines.index("[launch] later exited")


def test_missing_executables(tmp_path):
    def nothing(_package, _executable):
        return None

    reports = []
    optional = NodeSpec("rviz2", "rviz2", "rviz2", "arm1", optional=True)
    assert plan([optional], tmp_path, report=reports.append, locate=nothing) == []
    assert reports == ["rviz2 is not installed, so 'arm1/rviz2' is not started; the rest of the graph goes on"]
    with pytest.raises(LaunchError, match="executable 'simulator' of package 'skelarm_ros' was not found"):
        plan([NodeSpec("skelarm_ros", "simulator", "simulator")], tmp_path, report=reports.append, locate=nothing)


def test_main_reports_bad_arguments_in_one_sentence(capsys):
    assert main(["sim", "mode:=fast"]) == 2
    assert capsys.readouterr().err == "skelarm-ros launch: mode 'fast' is not one of realtime, lockstep\n"
    assert main(["other"]) == 2
    assert "no launch file 'other'; choose from sim" in capsys.readouterr().err
    assert main(["sim.launch.py", "--show-args"]) == 0
    assert "'hardware':" in capsys.readouterr().out


def test_dry_run_prints_each_command_and_keeps_its_parameter_file(capsys):
    assert main(["sim", "namespace:=arm1", "mode:=lockstep", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "run simulator --ros-args -r __node:=simulator -r __ns:=/arm1 --params-file" in out
    assert "run controller --ros-args -r __node:=controller -r __ns:=/arm1 --params-file" in out
    files = [Path(line.split("--params-file ")[1].split()[0]) for line in out.splitlines() if "--params-file" in line]
    try:
        assert len(files) == 2 and all(path.is_file() for path in files)  # the printed commands run as printed
        assert "command_interface: joint_commands" in files[1].read_text()
    finally:
        shutil.rmtree(files[0].parent, ignore_errors=True)


def test_options_may_stand_anywhere_among_the_arguments(capsys):
    assert main(["sim", "--show-args", "mode:=lockstep"]) == 0
    assert "'hardware':" in capsys.readouterr().out
    assert main(["sim", "mode:=lockstep", "--dry-run", "namespace:=arm1"]) == 0
    out = capsys.readouterr().out
    assert "-r __ns:=/arm1" in out
    files = {Path(line.split("--params-file ")[1].split()[0]) for line in out.splitlines() if "--params-file" in line}
    for folder in {path.parent for path in files}:
        shutil.rmtree(folder, ignore_errors=True)


def test_dry_run_into_a_pipe_that_closes_early_ends_quietly(tmp_path):
    script = "import sys; from skelarm_ros.cli.launcher import main; sys.exit(main(['sim', 'rviz:=true', '--dry-run']))"
    result = subprocess.run(
        f"'{sys.executable}' -c \"{script}\" | head -c 10",
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr, result.stderr


def test_a_bare_launch_says_what_to_name(capsys):
    assert main([]) == 2
    assert capsys.readouterr().err == (
        "skelarm-ros launch: name the launch file (sim), for example: "
        "skelarm-ros launch sim mode:=lockstep duration:=2.0\n"
    )


def test_every_node_gets_the_graphs_fast_dds_profile(monkeypatch, tmp_path):
    for variable in (*USER_PROFILE_VARIABLES, "RMW_IMPLEMENTATION"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(tmp_path)  # no DEFAULT_FASTRTPS_PROFILES.xml here
    show = f"import os; print('profile', os.environ.get('{PROFILES_FILE_VARIABLE}'), flush=True)"
    code, lines = run([Planned("simulator", [sys.executable, "-S", "-c", show], ends_graph=True)])
    assert code == 0
    assert f"[simulator] profile {graph_profile()}" in lines
