"""package.xml names what rosdep installs, and the README's pip line installs the rest, at the pinned versions.

A ROS 2 package the code imports (``rclpy``, a message package, ``launch``) is an ``exec_depend``, so
``rosdep install`` brings it; a Python package that rosdep cannot give at a version skelarm runs with comes
from pip, by the README's line, constrained by requirements.lock.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = ET.parse(REPO / "package.xml").getroot()
RUNTIME = [*sorted((REPO / "skelarm_ros").rglob("*.py")), *sorted((REPO / "launch").glob("*.py"))]
ROS_NOT_ON_PYPI = {"launch", "launch_ros"}  # ROS 2 packages the PyPI wheels do not provide


def depends(kind: str) -> set[str]:
    return {element.text or "" for element in PACKAGE.iter(kind)}


def imported(files: list[Path]) -> set[str]:
    """The top-level modules the files import, anywhere in them."""
    names = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names


def ros_packages(modules: set[str]) -> set[str]:
    """Those of ``modules`` that are ROS 2 packages (a ``ros-*`` wheel here, or ROS 2's launch)."""
    providers = importlib.metadata.packages_distributions()
    return {
        module
        for module in modules
        if module in ROS_NOT_ON_PYPI or any(name.lower().startswith("ros-") for name in providers.get(module, []))
    }


def test_every_ros_package_the_code_imports_is_an_exec_depend() -> None:
    used = ros_packages(imported(RUNTIME))
    assert {"rclpy", "rcl_interfaces", "sensor_msgs", "launch", "launch_ros"} <= used  # the check sees them
    assert used - depends("exec_depend") == set()


def test_the_readmes_pip_line_installs_the_pip_only_packages_at_the_locked_versions() -> None:
    readme = (REPO / "README.md").read_text()
    (line,) = [
        line for line in readme.splitlines() if "pip install -c src/skelarm_ros/requirements.lock skelarm" in line
    ]
    packages = line.split("#")[0].split("requirements.lock")[1].split()
    locked = {
        re.split(r"==", row)[0].lower()
        for row in (REPO / "requirements.lock").read_text().splitlines()
        if row and not row.startswith("#")
    }
    assert packages == ["skelarm", "pin", "rosbags", "figaroh"]
    assert set(packages) <= locked
    # package.xml says the same packages are pip's, and why numpy, scipy and matplotlib are too
    text = (REPO / "package.xml").read_text()
    comments = " ".join(" ".join(re.findall(r"<!--(.*?)-->", text, flags=re.DOTALL)).split())
    for name in packages:
        assert re.search(rf"\b{name}\b", comments), name
    for name in ("numpy >= 2", "scipy >= 1.16.3", "matplotlib >= 3.10.7"):
        assert re.search(rf"\b{name}\b", comments), name
    assert not {"python3-numpy", "python3-scipy", "python3-matplotlib"} & depends("exec_depend")


def test_the_minimums_package_xml_names_are_skelarms() -> None:
    wanted = {re.split(r"[ ;]", requirement)[0] for requirement in importlib.metadata.requires("skelarm") or []}
    assert {"numpy>=2.0.0", "scipy>=1.16.3", "matplotlib>=3.10.7"} <= wanted
