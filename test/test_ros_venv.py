"""The README's path "With ROS 2 installed", emulated: a virtual environment made with system-site-packages.

On Ubuntu 24.04 the system Python refuses ``pip install`` (PEP 668), so the pip-only packages go into a
virtual environment made with ``--system-site-packages`` from the distribution's Python; colcon runs from it
(``python -m colcon``), so the executables it installs run that environment's Python, whose own numpy 2 comes
before the distribution's numpy 1.26; ROS 2's own Python packages come from the ``PYTHONPATH`` sourcing its
setup file gives. No Ubuntu or ROS 2 installation is here, so this builds the same layers from what is:

- the distribution's Python: the interpreter the project's ``.venv`` was made from;
- ROS 2 on ``PYTHONPATH`` and ``LD_LIBRARY_PATH``, as ``source /opt/ros/jazzy/setup.bash`` gives: a folder
  of links to the ROS 2 Jazzy packages (the ``ros-*`` wheels of ``.venv``) and their libraries;
- ``pip install`` into the new environment: a ``.pth`` file adding, as a site folder, a folder of links to
  every other package of ``.venv`` (skelarm, Pinocchio, numpy 2, colcon, ...), which the README's pip line
  installs from PyPI.

Then colcon builds from the new environment, and the installed simulator runs from a shell where that
environment is not active, and stops on Ctrl-C; a numpy older than 2 first on the path is refused in one
sentence.
"""

from __future__ import annotations

import importlib.metadata
import os
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from test_colcon import BLOCKING_ENV, colcon_build
from test_launcher_system import START_DEADLINE, Launch

from skelarm_ros.startup import interpreter_line

pytestmark = pytest.mark.slow

SITE = Path(sysconfig.get_path("purelib"))  # the project's .venv site-packages


def ros_distribution_names() -> set[str]:
    """What the ROS 2 Jazzy wheels install at the top of site-packages (packages, their metadata, libraries)."""
    names = {path.name for path in SITE.glob("ros_*")}  # ros_*.libs, the bootstrapper, ros_*.dist-info
    for module, distributions in importlib.metadata.packages_distributions().items():
        if any(name.lower().startswith("ros-") for name in distributions):
            names.add(module)
    return names


def links(folder: Path, names: set[str]) -> Path:
    """A folder of links to the named entries of the project's site-packages."""
    folder.mkdir(parents=True)
    for name in sorted(names):
        (folder / name).symlink_to(SITE / name)
    return folder


@pytest.fixture(scope="module")
def layers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("ros_venv")
    ros = ros_distribution_names()
    everything = {path.name for path in SITE.iterdir()}
    distribution = links(root / "opt" / "ros" / "jazzy" / "site-packages", ros & everything)
    others = {name for name in everything - ros if not name.startswith("__editable__")} - {"skelarm_ros", "__pycache__"}
    pip_installed = links(root / "pip", others)
    venv = root / "venv"
    subprocess.run(
        [sys._base_executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
        check=True,
        timeout=120,
    )
    (venv_site,) = (venv / "lib").glob("python3*/site-packages")
    # A site folder of its own, as the environment's site-packages is: its .pth files run (Pinocchio's adds its prefix).
    (venv_site / "pip_installed.pth").write_text(f"import site; site.addsitedir({str(pip_installed)!r})\n")
    (venv / "COLCON_IGNORE").touch()
    return {"root": root, "distribution": distribution, "venv": venv}


def sourced_ros(layers: dict[str, Path], *first: Path) -> dict[str, str]:
    """A shell where ROS 2's setup file was sourced and no virtual environment is active."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(["/usr/local/bin", "/usr/bin", "/bin"])
    env["PYTHONPATH"] = os.pathsep.join(map(str, [*first, layers["distribution"]]))
    libraries = [str(path) for path in sorted(SITE.glob("ros_*.libs"))] + [str(Path(sys.prefix) / "lib")]
    env["LD_LIBRARY_PATH"] = os.pathsep.join(libraries)
    env["_ROS_WHEELS_BOOTSTRAP_COMPLETE"] = "1"  # the library path is set, as a ROS 2 installation's setup file sets it
    return env


def test_the_environment_sees_ros_from_the_path_and_its_own_packages_first(layers) -> None:
    python = layers["venv"] / "bin" / "python"
    where = subprocess.run(
        [str(python), "-c", "import numpy, rclpy, skelarm; print(numpy.__version__, rclpy.__file__, skelarm.__file__)"],
        env=sourced_ros(layers),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert where.returncode == 0, where.stderr
    numpy_version, rclpy_file, skelarm_file = where.stdout.split()
    assert int(numpy_version.split(".")[0]) >= 2
    assert rclpy_file.startswith(str(layers["distribution"]))
    assert skelarm_file.startswith(str(layers["root"] / "pip"))


def test_colcon_from_the_environment_installs_nodes_that_run_with_it(layers) -> None:
    python = layers["venv"] / "bin" / "python"
    install = colcon_build(layers["root"] / "ws", colcon=(str(python), "-m", "colcon"), env=sourced_ros(layers))
    simulator = install / "lib" / "skelarm_ros" / "simulator"
    assert simulator.read_text().splitlines()[0] == interpreter_line(f"#!{python}", env=BLOCKING_ENV)  # its Python
    (site,) = (install / "lib").glob("python3*/site-packages")
    env = sourced_ros(layers, site)
    env["AMENT_PREFIX_PATH"] = str(install)
    node = Launch("--ros-args", "-p", "scenario:=reach_four_dof_robot", command=(str(simulator),), env=env)
    try:
        assert node.wait_for_line("simulating 4 joints", START_DEADLINE), node.output()
        node.process.send_signal(signal.SIGINT)
        code = node.wait(60.0)
    finally:
        node.end()
    assert code == 0, node.output()
    assert "stopped by a signal; ran " in node.output(), node.output()
    assert "Traceback" not in node.output(), node.output()

    # A numpy older than 2 first on the path (a distribution's) is refused before anything imports it.
    old = layers["root"] / "old"
    (old / "numpy").mkdir(parents=True)
    (old / "numpy" / "__init__.py").write_text("raise ImportError('the stand-in numpy was imported')\n")
    (old / "numpy-1.26.4.egg-info").mkdir()
    done = subprocess.run(
        [str(simulator)], env=sourced_ros(layers, old, site), capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"simulator: numpy 1.26.4 (in {old / 'numpy'}) is older than the numpy 2 "), (
        done.stderr
    )
    assert len(done.stderr.splitlines()) == 1, done.stderr
