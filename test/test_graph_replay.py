"""The graph description of a shadow run (replay:=BAG): the player in place of the simulator."""

from __future__ import annotations

import pytest
from bagwriter import START, arm_run, joint_state, string, write_bag

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
    assert controller["qos_depth"] == 1000 and controller["command_readers"] == ["recorder"]
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
    # The first state waits for the controller's and the recorder's readers, by name: no outside reader stands in.
    both = ("controller", "recorder")
    assert settings.readers.names == {"joint_states": both, "target": both} and settings.readers.topics == {}
    assert settings.wait_for_all_acked == 10_000 and settings.options.rate == 1.0
    assert settings.options.clock_hz == 0.0


def test_replay_rate_namespace_extra_readers_and_sim_time(bag):
    specs = describe(
        {
            "replay": str(bag),
            "replay_rate": "0.5",
            "namespace": "lab",
            "extra_readers": "/plotter,/probe",
            "use_sim_time": "true",
            "controller": "false",
        }
    )
    (player,) = specs
    assert player.namespace == "lab"
    settings = parse_arguments(list(player.arguments))
    assert settings.options.rate == 0.5 and settings.options.clock_hz == 1000.0
    assert settings.readers.names == {"joint_states": ("/plotter", "/probe")}  # no reader of the target named


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


def driver_bag(path, names=("q0", "q1"), *, topic="/servo/out/state", velocity=True):
    """A driver's recording: its states on its own topic under its own names (no target, no description)."""
    values = tuple(0.1 * (j + 1) for j in range(len(names)))
    messages = [
        (topic, START + k * 4_000_000, joint_state(k * 4_000_000, names, values, values if velocity else ()))
        for k in range(5)
    ]
    return write_bag(path, messages)


def test_replay_takes_the_bag_s_own_joint_state_topic_and_joint_names(tmp_path):
    bag = driver_bag(tmp_path / "flight")
    with pytest.raises(GraphError) as refused:
        describe({"replay": str(bag)})
    assert str(refused.value) == (
        f"bag '{bag.resolve()}' has no joint_states topic to replay; its sensor_msgs/JointState topics (messages) "
        "are /servo/out/state (5): pass replay_joint_topic:= the one of the arm's joint states"
    )
    for given in ("servo/out/state", "/servo/out/state", "out/state"):
        specs = {spec.executable: spec for spec in describe({"replay": str(bag), "replay_joint_topic": given})}
        assert specs["controller"].parameters["joint_names"] == ["q0", "q1"]  # the recording's own names
        settings = parse_arguments(list(specs["player"].arguments))
        assert settings.options.topics == ("/servo/out/state",)
        assert settings.options.remaps == (("/servo/out/state", "joint_states"),)
        assert settings.readers.names == {"joint_states": ("controller",)}


def test_a_recording_of_more_joints_than_the_arm_needs_joint_names_among_them(tmp_path):
    bag = driver_bag(
        tmp_path / "franka", ("panda_joint1", "panda_joint2", "panda_finger_joint1"), topic="/joint_states"
    )
    with pytest.raises(GraphError, match=r"name 3 joints \(panda_joint1, panda_joint2, panda_finger_joint1\) and the "):
        describe({"replay": str(bag)})
    specs = describe({"replay": str(bag), "joint_names": "panda_joint2,panda_joint1"})
    assert specs[0].parameters["joint_names"] == ["panda_joint2", "panda_joint1"]
    with pytest.raises(GraphError, match=r"joint_names \['q2'\] are not among the joints the recorded states"):
        describe({"replay": str(bag), "joint_names": "panda_joint1,q2"})


def test_recorded_states_the_controller_cannot_answer_are_refused_before_anything_starts(tmp_path):
    unnamed = driver_bag(tmp_path / "unnamed", ())
    with pytest.raises(GraphError, match="carry no joint names, and the controller takes joints by name; give them"):
        describe({"replay": str(unnamed), "replay_joint_topic": "/servo/out/state"})
    positions = driver_bag(tmp_path / "positions", velocity=False)
    with pytest.raises(GraphError, match=r"carry 0 velocity values for the 2 joints \['q0', 'q1'\]"):
        describe({"replay": str(positions), "replay_joint_topic": "/servo/out/state"})
    wrong = write_bag(tmp_path / "wrong", [("/servo/out/state", START, string("x"))])
    with pytest.raises(GraphError, match="is std_msgs/msg/String, not sensor_msgs/msg/JointState"):
        describe({"replay": str(wrong), "replay_joint_topic": "/servo/out/state"})
