"""ament_python package definition for skelarm_ros."""

from glob import glob

from setuptools import find_packages, setup
from setuptools.command.develop import develop
from setuptools.command.install_scripts import install_scripts

package_name = "skelarm_ros"

# Executables, as `ros2 run skelarm_ros <name>` and `skelarm-ros run <name>` start them: each enters through
# skelarm_ros.startup (which imports nothing heavy, so a signal during start-up ends it quietly).
from skelarm_ros.startup import ENV, EXECUTABLES, env_blocks_signals, installed_script  # noqa: E402 - the one list

# `skelarm-ros` runs the nodes and the graph on a machine without ROS 2; pip puts it in the
# environment's bin/. A ROS 2 build (colcon: `setup.py install`, or `develop` with
# --symlink-install) writes console scripts into lib/skelarm_ros, where `ros2 run` and
# `ros2 pkg executables` find them; there it would only list a second launcher beside
# `ros2 launch` and `ros2 run`, so those two commands leave it out.
WITHOUT_ROS_ONLY = frozenset({"skelarm-ros"})
BLOCKING_ENV = ENV if env_blocks_signals() else None
"""The ``env`` the installed executables start Python through, with SIGINT and SIGTERM blocked, where it can."""


def ros_script(script_name: str, contents: str) -> str:
    """The script a ROS 2 build installs for ``script_name``, from the one setuptools wrote.

    setuptools' console script imports importlib.metadata and looks the entry point up before the
    program starts, in which time a Ctrl-C ends it with a traceback; an executable of the package
    gets a script that enters skelarm_ros.startup first instead, with setuptools' interpreter line, run
    through this machine's ``env`` with SIGINT and SIGTERM blocked where that ``env`` can
    (skelarm_ros.startup.interpreter_line).
    """
    if script_name not in EXECUTABLES:
        return contents
    return installed_script(script_name, contents.splitlines()[0], env=BLOCKING_ENV)


class InstallScripts(install_scripts):
    """``setup.py install``'s scripts (colcon build), without the ones only a machine without ROS 2 needs."""

    def write_script(self, script_name: str, contents: str, mode: str = "t", *ignored: object) -> None:
        if script_name not in WITHOUT_ROS_ONLY:
            super().write_script(script_name, ros_script(script_name, contents), mode, *ignored)


class Develop(develop):
    """``setup.py develop``'s scripts (--symlink-install), without the ones only a machine without ROS 2 needs."""

    def write_script(self, script_name: str, contents: str, mode: str = "t", blockers: tuple = ()) -> None:
        if script_name not in WITHOUT_ROS_ONLY:
            super().write_script(script_name, ros_script(script_name, contents), mode, blockers)


setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/launch", glob("launch/*.launch.py")),
        ("share/" + package_name + "/config", [f for f in glob("config/*") if not f.endswith("scenarios")]),
        ("share/" + package_name + "/config/scenarios", glob("config/scenarios/*.toml")),
    ],
    package_data={package_name: ["py.typed"]},
    install_requires=["setuptools"],
    extras_require={
        "test": ["pytest", "hypothesis", "pytest-timeout", "pytest-xdist", "urdf-parser-py"],
    },
    zip_safe=True,
    maintainer="skelarm_ros maintainers",
    maintainer_email="skelarm-ros@users.noreply.github.com",
    description="ROS 2 nodes for the skelarm planar-arm simulator.",
    license="GPL-3.0-only",
    python_requires=">=3.12",
    cmdclass={"install_scripts": InstallScripts, "develop": Develop},
    entry_points={
        "console_scripts": [
            *(f"{name} = skelarm_ros.startup:{name}" for name in EXECUTABLES),
            "skelarm-ros = skelarm_ros.cli:console",
        ],
        # Controller builders the controller node registers with skelarm (skelarm_ros.control.plugins).
        "skelarm_ros.controllers": ["excitation = skelarm_ros.identification.excitation:build_controller"],
    },
)
