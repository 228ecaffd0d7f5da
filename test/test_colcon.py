"""``colcon build`` of the package in a temporary workspace installs what ``ros2 run`` / ``ros2 launch`` need.

The executables it installs in ``lib/skelarm_ros`` are the package's own scripts (skelarm_ros.startup.installed_script),
which start Python through ``env`` with SIGINT and SIGTERM blocked (where this machine's ``env`` can) and take them
before anything else runs, with ``setup.py install`` and with ``--symlink-install``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from skelarm_ros.startup import ENV, EXECUTABLES, env_blocks_signals, installed_script

REPO = Path(__file__).resolve().parents[1]
COLCON = REPO / ".venv" / "bin" / "colcon"
BLOCKING_ENV = ENV if env_blocks_signals() else None  # as setup.py decides
SOURCES = ("package.xml", "setup.py", "setup.cfg", "resource", "skelarm_ros", "config", "launch")

pytestmark = pytest.mark.slow


def colcon_build(
    workspace: Path, *options: str, colcon: Sequence[str] = (str(COLCON),), env: dict[str, str] | None = None
) -> Path:
    """Build the package from a copy of the checkout in ``workspace`` and return its install prefix.

    ``colcon`` is the command that runs colcon (``python -m colcon`` runs it, and so ``setup.py``, with that
    Python), ``env`` its environment (this process's, with colcon's folder first on ``PATH``, when ``None``).
    """
    if not COLCON.exists():
        pytest.skip(f"colcon is not installed at {COLCON}")
    package = workspace / "src" / "skelarm_ros"
    package.mkdir(parents=True)
    for name in SOURCES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, package / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif source.exists():
            shutil.copy2(source, package / name)
    if env is None:
        env = dict(os.environ)
        env["PATH"] = f"{COLCON.parent}{os.pathsep}{env.get('PATH', '')}"
    result = subprocess.run(
        [*colcon, "build", "--base-paths", "src", "--event-handlers", "console_direct-", *options],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return workspace / "install" / "skelarm_ros"


def sourced(install: Path, *first: Path) -> dict[str, str]:
    """The environment ``source install/setup.bash`` gives (the package's folders first on the paths)."""
    env = dict(os.environ)
    (site,) = (install / "lib").glob("python3*/site-packages")
    env["PYTHONPATH"] = os.pathsep.join(map(str, [*first, site, *filter(None, [env.get("PYTHONPATH")])]))
    env["AMENT_PREFIX_PATH"] = os.pathsep.join(filter(None, [str(install), env.get("AMENT_PREFIX_PATH")]))
    return env


def test_colcon_build_installs_the_package(tmp_path: Path) -> None:
    install = colcon_build(tmp_path)
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
    # `ros2 pkg executables skelarm_ros` lists the nodes and tools, not the launcher for machines without ROS 2.
    assert sorted(path.name for path in simulator.parent.iterdir()) == sorted(EXECUTABLES)


@pytest.mark.parametrize("options", [(), ("--symlink-install",)], ids=["install", "symlink-install"])
def test_the_installed_executables_enter_the_startup_first(tmp_path: Path, options: tuple[str, ...]) -> None:
    install = colcon_build(tmp_path / "ws", *options)
    for name in EXECUTABLES:
        script = install / "lib" / "skelarm_ros" / name
        text = script.read_text()
        interpreter = text.splitlines()[0].removesuffix(" -S").split()[-1]  # after `env -S --block-signal=...`
        assert os.access(interpreter, os.X_OK), text  # the Python colcon built with, run without its site step
        assert text == installed_script(name, f"#!{interpreter}", env=BLOCKING_ENV), text
    # They run from the install space as a sourced workspace finds them, arguments and all ...
    tools = install / "lib" / "skelarm_ros"
    done = subprocess.run(
        [str(tools / "bag_to_log"), "--help"],
        env=sourced(install),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout.split(" ")[:2]) == (0, ["usage:", "bag_to_log"]), done.stderr
    # ... and a Ctrl-C in Python's site step (a sitecustomize module sends it) ends a node at once and quietly.
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGINT)\n")
    done = subprocess.run(
        [str(tools / "simulator")], env=sourced(install, site), capture_output=True, text=True, timeout=120, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
