"""The bundled rviz2 config: valid YAML, the arm's displays, the plane in view."""

from __future__ import annotations

import numpy as np
import yaml

from skelarm_ros.interface import BASE_FRAME
from skelarm_ros.sim.markers import ArmGeometry, scene
from skelarm_ros.sim.scenario import share_directory

RVIZ = share_directory() / "config" / "skelarm.rviz"


def load() -> dict:
    return yaml.safe_load(RVIZ.read_text(encoding="utf-8"))


def displays_by_class(config: dict) -> dict[str, dict]:
    return {display["Class"]: display for display in config["Visualization Manager"]["Displays"]}


def test_fixed_frame_is_the_plane_frame() -> None:
    assert load()["Visualization Manager"]["Global Options"]["Fixed Frame"] == BASE_FRAME == "base"


def test_robot_model_reads_the_latched_description_topic() -> None:
    model = displays_by_class(load())["rviz_default_plugins/RobotModel"]
    assert model["Enabled"] is True
    assert model["Description Source"] == "Topic"
    topic = model["Description Topic"]
    assert topic["Value"] == "robot_description"  # relative: follows the graph's namespace
    assert topic["Durability Policy"] == "Transient Local"  # the simulator publishes it once, latched


def test_marker_array_shows_every_marker_namespace() -> None:
    markers = displays_by_class(load())["rviz_default_plugins/MarkerArray"]
    assert markers["Enabled"] is True
    assert markers["Topic"]["Value"] == "markers"
    published = {shape.namespace for shape in scene(ArmGeometry(0.0, np.ones(2)), [0.0, 0.0])}
    assert markers["Namespaces"] == dict.fromkeys(published, True)


def test_view_looks_down_on_the_plane_and_fits_a_two_metre_arm() -> None:
    config = load()
    view = config["Visualization Manager"]["Views"]["Current"]
    assert view["Class"] == "rviz_default_plugins/TopDownOrtho"
    assert view["Target Frame"] == "<Fixed Frame>"
    height = config["Window Geometry"]["Height"] - 100  # menus and status bar
    metres_shown = height / view["Scale"]
    assert metres_shown <= 8.0  # the arm is not shrunk to a dot
    reach = 2.3  # m, a 2 m arm on a base offset, in any direction
    assert view["Y"] - metres_shown / 2 <= -reach and view["Y"] + metres_shown / 2 >= reach
    assert abs(view["X"]) <= 0.5
