"""The graph description of a shadow run (replay:=BAG): the player in place of the simulator."""

from __future__ import annotations

import pytest
from bagwriter import arm_run, write_bag

from skelarm_ros.cli.graph import GraphError, describe
from skelarm_ros.nodes.player import parse_arguments


@pytest.fixture
def bag(tmp_path):
    return write_bag(tmp_path / "run", arm_run(3, namespace="/arm1"))


def test_replay_leaves_the_simulator_out_and_the_player_ends_the_graph(bag, tmp_path):
    specs = {spec.executable: spec for spec in describe({"replay": str(bag), "record": str(tmp_path / "shadow")})}
    assert list(specs) == ["controller", "recorder", "player"]
    controller = specs["controller"].parameters
    assert controller["command_interface"] == "joint_commands"  # each command stamped with its state
    assert controller["qos_depth"] == 1000 and controller["min_subscribers"] == 1
    player = specs["player"]
    assert player.ends_graph and not specs["controller"].ends_graph
    settings = parse_arguments(list(player.arguments))
    assert settings.bag == str(bag.resolve())
    assert settings.options.topics == ("/arm1/joint_states", "/arm1/target", "/arm1/robot_description")
    assert settings.options.remaps == (
        ("/arm1/joint_states", "joint_states"),
        ("/arm1/target", "target"),
        ("/arm1/robot_description", "robot_description"),
    )
    assert settings.readers.topics == {"joint_states": 2, "target": 2}  # controller and recorder
    assert settings.wait_for_all_acked == 10_000 and settings.options.rate == 1.0
    assert settings.options.clock_hz == 0.0


def test_replay_rate_namespace_extra_readers_and_sim_time(bag):
    specs = describe(
        {
            "replay": str(bag),
            "replay_rate": "0.5",
            "namespace": "lab",
            "extra_readers": "2",
            "use_sim_time": "true",
            "controller": "false",
        }
    )
    (player,) = specs
    assert player.namespace == "lab"
    settings = parse_arguments(list(player.arguments))
    assert settings.options.rate == 0.5 and settings.options.clock_hz == 1000.0
    assert settings.readers.topics == {"joint_states": 2, "target": 0}


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"mode": "lockstep"}, "so mode:=lockstep does not apply"),
        ({"duration": "2"}, "duration:=2 does not apply"),
        ({"replay_rate": "0"}, "replay_rate must be a positive number"),
        ({"replay_rate": "fast"}, "replay_rate must be a positive number"),
    ],
)
def test_replay_refuses_what_does_not_apply(bag, arguments, words):
    with pytest.raises(GraphError, match=words):
        describe({"replay": str(bag), **arguments})


def test_a_missing_or_armless_bag_is_named(tmp_path):
    with pytest.raises(GraphError, match=r"replay '.*nothing' does not exist; give the path of a recorded bag"):
        describe({"replay": str(tmp_path / "nothing")})
    two = write_bag(tmp_path / "two", [*arm_run(2, namespace="/a"), *arm_run(2, namespace="/b")])
    with pytest.raises(GraphError, match="several arms"):
        describe({"replay": str(two)})
    assert describe({"replay": str(two), "namespace": "b"})[-1].arguments[2] == "/b/joint_states"
