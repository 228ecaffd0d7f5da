"""``make test``'s pytest in a shell where ROS 2 is sourced, with stand-ins for ROS 2's launch_testing pytest plugins.

Sourcing a ROS 2 Jazzy setup file puts launch_testing and launch_testing_ros on ``PYTHONPATH``; their
``pytest11`` entry points (``launch_testing``, ``launch_ros``) declare ``pytest_pycollect_makemodule(path,
parent)``, with the ``path`` argument pytest 9 removed, so pytest refuses to start with them. The stand-ins
here are that hook in a tiny distribution with the same entry points, put on ``PYTHONPATH`` as sourcing does;
the project's pytest configuration keeps them out, and a launch_testing module is skipped with the reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

STANDIN = '''\
"""Stand-in for a ROS 2 Jazzy launch_testing pytest plugin: its collection hook, as it is declared there."""

import os


def pytest_pycollect_makemodule(path, parent):
    with open(os.environ["STANDIN_CALLS"], "a") as calls:
        calls.write(f"{{__name__}} {{path}}\\n")
'''

LAUNCH_TEST_MODULE = """\
import unittest

import pytest


@pytest.mark.launch_test
def generate_test_description():
    raise AssertionError("pytest ran a launch description")


class TestDuringLaunch(unittest.TestCase):
    def test_needs_the_launch(self):
        raise AssertionError("pytest ran a launch test without its launch")
"""


def sourced(folder: Path) -> dict[str, str]:
    """The environment of a shell where a ROS 2 setup file put the stand-in plugins on ``PYTHONPATH``."""
    site = folder / "ros" / "lib" / "python3.12" / "site-packages"
    entry_points = {"launch_testing": "standin_launch_testing", "launch_ros": "standin_launch_testing_ros"}
    for name, module in entry_points.items():
        (site / f"{module}.py").parent.mkdir(parents=True, exist_ok=True)
        (site / f"{module}.py").write_text(STANDIN)
        info = site / f"{module}-3.4.3.dist-info"
        info.mkdir(exist_ok=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 3.4.3\n")
        (info / "entry_points.txt").write_text(f"[pytest11]\n{name} = {module}\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    env["STANDIN_CALLS"] = str(folder / "calls")
    return env


def pytest_run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The project's pytest (its pytest.ini, from the clone's folder), as ``make test`` runs it."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def test_the_stand_in_plugins_stop_pytest_as_rosss_own_do(tmp_path: Path) -> None:
    # Let in despite the configuration, a stand-in is refused the way ROS 2's plugin is: the stand-in is faithful.
    done = pytest_run(sourced(tmp_path), "-p", "launch_testing", "-q", "test/test_startup.py", "-k", "handlers_before")
    assert done.returncode != 0, done.stdout
    said = done.stdout + done.stderr
    assert "PluginValidationError: Plugin 'launch_testing' for hook 'pytest_pycollect_makemodule'" in said, said
    assert "{'path'}" in said, said


def test_the_projects_pytest_runs_with_the_ros_plugins_on_the_path_and_keeps_them_out(tmp_path: Path) -> None:
    done = pytest_run(sourced(tmp_path), "-q", "test/test_startup.py", "-k", "handlers_before")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("1 passed, "), done.stdout
    assert not (tmp_path / "calls").exists()  # neither stand-in's hook ran


def test_the_projects_own_plugins_are_active_beside_them(tmp_path: Path) -> None:
    done = pytest_run(sourced(tmp_path), "--co", "-q", "test/test_startup.py", "-k", "handlers_before")
    assert done.returncode == 0, done.stdout + done.stderr
    done = pytest_run(sourced(tmp_path), "--version", "--version")
    plugins = done.stdout + done.stderr
    for name in ("pytest-timeout", "pytest-rerunfailures", "pytest-cov", "pytest-repeat", "hypothesis"):
        assert name in plugins, plugins
    assert "standin" not in plugins, plugins


def test_a_launch_testing_module_is_skipped_with_the_reason_under_the_projects_pytest(tmp_path: Path) -> None:
    module = tmp_path / "test_reach_launch.py"
    module.write_text(textwrap.dedent(LAUNCH_TEST_MODULE))
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    pass\n")
    env = sourced(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "test"), env["PYTHONPATH"]])
    # The project's conftest, loaded as a plugin, rules this module outside test/ as it rules test/test_launch_file.py.
    done = pytest_run(
        env, "-q", "-c", str(REPO / "pytest.ini"), "-p", "conftest", str(module), str(tmp_path / "test_plain.py")
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 1 skipped" in done.stdout.splitlines()[-1], done.stdout
    assert "a launch_testing test: it runs under launch_test" in done.stdout, done.stdout
    assert not (tmp_path / "calls").exists()
