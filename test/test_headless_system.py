"""On a robot's computer: the lockstep and composed graphs, bag_to_log, plot, player and identify with no GUI library.

Every command runs with OpenGL, EGL, X11, xkbcommon and fontconfig hidden in a mount
namespace (test/without_gui.py), as on a headless board or a ROS 2 base image. The
graph's processes are watched while they run: none maps Qt, the launcher, recorder,
force replay and player map neither Pinocchio nor SciPy, and each stays within its
peak-memory limit (skelarm_ros.memory).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import without_gui

from skelarm_ros.memory import Watched, limit_mb, run_watched

pytestmark = pytest.mark.slow

LIGHT = ("launch", "recorder", "force_replay", "player")
"""Processes that neither simulate nor control: no dynamics, no Pinocchio, no SciPy."""
NOISE = ("Traceback", "FATAL", "Segmentation fault", "core dumped")


@pytest.fixture
def hidden() -> list[str]:
    """The prefix that hides the GUI libraries; skips where a mount namespace cannot be made."""
    problem = without_gui.problem()
    if problem is not None:
        pytest.skip(problem)
    return without_gui.prefix()


def cli(*words: str) -> list[str]:
    return [sys.executable, "-m", "skelarm_ros.cli", *words]


def check_clean(done, what: str) -> None:
    assert done.returncode == 0, f"{what} exited {done.returncode}:\n{done.stdout}"
    for noise in NOISE:
        assert noise not in done.stdout, f"{what} said {noise}:\n{done.stdout}"


def check_processes(watched: dict[str, Watched], expected: set[str]) -> None:
    assert expected <= set(watched), f"watched {sorted(watched)}, expected {sorted(expected)}"
    for name in expected:
        entry = watched[name]
        assert "Qt" not in entry.libraries, f"{name} mapped Qt"
        if name in LIGHT:
            assert not entry.libraries & {"Pinocchio", "SciPy"}, f"{name} mapped {sorted(entry.libraries)}"
        assert entry.peak_mb <= limit_mb(name), f"{name} peaked at {entry.peak_mb:.1f} MB (limit {limit_mb(name):g})"


def test_the_graph_and_the_tools_run_without_gui_libraries_and_stay_light(hidden: list[str], tmp_path: Path) -> None:
    push = tmp_path / "push.csv"
    push.write_text("t,fx,fy\n0.0,0,0\n0.8,4,-3\n1.0,0,0\n3.0,0,0\n", encoding="utf-8")
    bag, log, picture = tmp_path / "run", tmp_path / "run.sklog.npz", tmp_path / "run.png"
    arguments = ["mode:=lockstep", "duration:=2.0", f"force_source:={push}", f"record:={bag}"]
    done, watched = run_watched([*hidden, *cli("launch", "sim", *arguments)], cwd=tmp_path, timeout=180)
    check_clean(done, "the launch")
    assert "recorder]: closed" in done.stdout and "none lost" in done.stdout
    check_processes(watched, {"launch", "simulator", "controller", "force_replay", "recorder"})

    composed = tmp_path / "composed"  # the composed graph, in realtime: one process for both nodes
    arguments = ["compose:=true", "duration:=1.0", f"record:={composed}"]
    done, watched = run_watched([*hidden, *cli("launch", "sim", *arguments)], cwd=tmp_path, timeout=180)
    check_clean(done, "the composed launch")
    assert "recorder]: closed" in done.stdout and "none lost" in done.stdout
    assert "step lateness:" in done.stdout
    check_processes(watched, {"launch", "composed", "recorder"})

    done, _ = run_watched([*hidden, *cli("run", "bag_to_log", str(bag), "-o", str(log), "--scenario", "reach")])
    check_clean(done, "bag_to_log")
    done, _ = run_watched([*hidden, *cli("plot", str(log), "-o", str(picture))])
    check_clean(done, "plot")
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    done, watched = run_watched([*hidden, *cli("run", "player", str(bag))], timeout=120)
    check_clean(done, "player")
    check_processes(watched, {"player"})

    done, _ = run_watched([*hidden, *cli("run", "identify", "--help")])
    check_clean(done, "identify --help")
    assert "usage: identify" in done.stdout
