"""``colcon build`` of the package in a temporary workspace installs what ``ros2 run`` / ``ros2 launch`` need."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from skelarm_ros.startup import EXECUTABLES

REPO = Path(__file__).resolve().parents[1]
COLCON = REPO / ".venv" / "bin" / "colcon"
SOURCES = ("package.xml", "setup.py", "setup.cfg", "resource", "skelarm_ros", "config", "launch")

pytestmark = pytest.mark.slow


def test_colcon_build_installs_the_package(tmp_path: Path) -> None:
    if not COLCON.exists():
        pytest.skip(f"colcon is not installed at {COLCON}")
    package = tmp_path / "src" / "skelarm_ros"
    package.mkdir(parents=True)
    for name in SOURCES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, package / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif source.exists():
            shutil.copy2(source, package / name)
    env = dict(os.environ)
    env["PATH"] = f"{COLCON.parent}{os.pathsep}{env.get('PATH', '')}"
    result = subprocess.run(
        [str(COLCON), "build", "--base-paths", "src", "--event-handlers", "console_direct-"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    install = tmp_path / "install" / "skelarm_ros"
    share = install / "share" / "skelarm_ros"
    assert (share / "package.xml").is_file()
    assert (install / "share" / "ament_index" / "resource_index" / "packages" / "skelarm_ros").is_file()
    assert (share / "config" / "scenarios" / "reach.toml").is_file()
    launch_files = list((REPO / "launch").glob("*.launch.py"))  # whatever launch files the package has
    assert (share / "launch").is_dir() or not launch_files
    for launch_file in launch_files:
        assert (share / "launch" / launch_file.name).is_file()
    simulator = install / "lib" / "skelarm_ros" / "simulator"
    assert simulator.is_file() and os.access(simulator, os.X_OK)
    assert "'console_scripts', 'simulator'" in simulator.read_text()
    # `ros2 pkg executables skelarm_ros` lists the nodes and tools, not the launcher for machines without ROS 2.
    assert sorted(path.name for path in simulator.parent.iterdir()) == sorted(EXECUTABLES)
