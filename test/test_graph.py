"""The graph description: arguments, validation, node specs, and the launch file's parity with it."""

from __future__ import annotations

import importlib.util
import logging
import math
import signal
from pathlib import Path

import pytest
import yaml

from skelarm_ros.cli.graph import ARGUMENTS, PACKAGE, GraphError, describe, normalize_namespace, resolve_arguments
from skelarm_ros.cli.launcher import failure, find_executable, plan
from skelarm_ros.sim.scenario import bundled_scenarios

REPO = Path(__file__).resolve().parents[1]
LAUNCH_FILE = REPO / "launch" / "sim.launch.py"
ROBOT_ONLY = """
[skeleton]
[[skeleton.link]]
length = 1.0
mass = 1.0
inertia = 0.1
[initial]
q = [0.0]
"""

# Argument sets both launchers must turn into the same nodes.
ARGUMENT_SETS = [
    {},
    {"mode": "lockstep", "duration": "2.5", "namespace": "arm1"},
    {"hardware": "none", "namespace": "/lab/arm2/", "use_sim_time": "true"},
    {"controller": "false", "duration": "1", "rviz": "true"},
    {"scenario": "reach_four_dof_robot", "record": "/tmp/reach_bag", "mode": "lockstep"},
    {"hardware": "none", "joint_names": "shoulder,elbow", "command_joints": "elbow,shoulder", "rviz": "true"},
    {"compose": "true", "mode": "lockstep", "namespace": "arm1", "record": "/tmp/reach_bag"},
    {"hardware": "twin", "mode": "lockstep", "duration": "2", "record": "/tmp/reach_bag"},
]


def by_executable(arguments: dict[str, str]) -> dict[str, object]:
    return {spec.executable: spec for spec in describe(arguments)}


def test_every_argument_has_a_default_and_a_description():
    assert list(ARGUMENTS) == [
        "scenario",
        "mode",
        "duration",
        "namespace",
        "hardware",
        "controller",
        "interface",
        "position_mode",
        "compose",
        "force_source",
        "force_topic",
        "record",
        "record_storage",
        "joint_names",
        "command_joints",
        "extra_readers",
        "thread_priority",
        "publish_clock",
        "replay",
        "replay_joint_topic",
        "replay_rate",
        "use_sim_time",
        "rviz",
    ]
    for argument in ARGUMENTS.values():
        assert argument.description
        assert not argument.choices or argument.default in argument.choices
    # The defaults describe a valid graph: the bundled reach, simulated, with its controller.
    specs = describe()
    assert [spec.executable for spec in specs] == ["simulator", "controller"]
    assert specs[0].parameters["scenario"] == str(bundled_scenarios()["reach"].resolve())
    assert specs[0].parameters["mode"] == "realtime"
    assert not specs[0].ends_graph


def test_realtime_graph_uses_the_array_commands():
    specs = by_executable({})
    assert specs["simulator"].parameters["command_interface"] == "commands"
    assert specs["controller"].parameters["command_interface"] == "commands"
    assert specs["simulator"].parameters["wait_for_wrench"] is False


def test_lockstep_sets_joint_commands_for_simulator_and_controller():
    specs = by_executable({"mode": "lockstep", "duration": "2"})
    for name in ("simulator", "controller"):
        assert specs[name].parameters["command_interface"] == "joint_commands"
    assert specs["simulator"].parameters["duration"] == 2.0
    assert specs["simulator"].ends_graph
    assert not specs["controller"].ends_graph


def test_namespace_puts_every_node_under_it():
    specs = describe({"namespace": "/arm1/", "rviz": "true", "record": "bag"})
    assert {spec.namespace for spec in specs} == {"arm1"}
    rsp = next(spec for spec in specs if spec.executable == "robot_state_publisher")
    rviz = next(spec for spec in specs if spec.executable == "rviz2")
    assert rsp.parameters["frame_prefix"] == "arm1/"
    assert rviz.arguments[-2:] == ("-f", "arm1/base")
    assert rsp.optional and rviz.optional
    # Two arms side by side differ only in their namespace.
    one, two = describe({"namespace": "arm1"}), describe({"namespace": "arm2"})
    assert [(a.executable, a.parameters) for a in one] == [(b.executable, b.parameters) for b in two]


def test_hardware_none_leaves_the_simulator_out():
    specs = describe({"hardware": "none"})
    assert [spec.executable for spec in specs] == ["controller"]
    assert specs[0].parameters["command_interface"] == "commands"


BASE = (  # every controller's
    "scenario",
    "command_interface",
    "interface",
    "position_mode",
    "reliable_states",
    "thread_priority",
    "use_sim_time",
)


@pytest.mark.parametrize("mode", ["realtime", "lockstep"])
@pytest.mark.parametrize("extra", [{}, {"record": "/tmp/twin_bag"}, {"compose": "true"}])
def test_hardware_twin_is_the_simulated_graph_with_the_controller_as_on_a_live_arm(mode, extra):
    """Whatever hardware:=none sets on the controller, hardware:=twin sets too (but the wall clock's in lockstep)."""
    duration = {"duration": "2"} if mode == "lockstep" else {}
    sim = by_executable({"mode": mode, **duration, **extra})
    twin = by_executable({"hardware": "twin", "mode": mode, **duration, **extra})
    live = {
        name: value
        for name, value in by_executable({"hardware": "none"})["controller"].parameters.items()
        if name not in BASE
    }
    assert live["soft_start"] == 1.0
    if mode == "lockstep":  # no state goes stale while the simulator waits for each command
        live.pop("state_timeout", None)
    assert list(twin) == list(sim)
    simulator = "composed" if extra.get("compose") else "simulator"
    assert sim[simulator].parameters["driver"] is False
    if extra.get("compose"):  # one process, both nodes' parameters
        assert twin["composed"].parameters == {**sim["composed"].parameters, **live, "driver": True}
    else:
        assert twin["controller"].parameters == {**sim["controller"].parameters, **live}
        assert twin["simulator"].parameters == {**sim["simulator"].parameters, "driver": True}


def test_hardware_twin_is_refused_with_a_replay(tmp_path):
    with pytest.raises(GraphError, match="replay plays a recorded run in place of the simulator, so hardware:=twin"):
        describe({"hardware": "twin", "replay": str(tmp_path)})


def servo_scenario(tmp_path, driver: str = 'interface = "position"\nservo_kp = 20.0\n', controller: str = ""):
    path = tmp_path / "servo.toml"
    text = bundled_scenarios()["reach"].read_text()
    if controller:
        text = text.replace('type = "computed_torque"\nkp = 200.0\nkd = 30.0', controller)
    path.write_text(text + "\n[driver]\n" + driver)
    return str(path)


@pytest.mark.parametrize("hardware", ["sim", "twin"])
def test_a_servo_arm_is_commanded_in_its_interface_in_both_modes(tmp_path, hardware):
    servo = servo_scenario(tmp_path)
    for mode, extra in (("reference", {}), ("stiffness", {"mode": "lockstep", "duration": "2"})):
        specs = by_executable(
            {"scenario": servo, "hardware": hardware, "interface": "position", "position_mode": mode, **extra}
        )
        assert specs["controller"].parameters["interface"] == "position"
        assert specs["controller"].parameters["position_mode"] == mode
        assert specs["simulator"].parameters["driver"] is (hardware == "twin")


def test_an_interface_the_simulated_arm_does_not_take_is_refused_in_one_sentence(tmp_path):
    servo = servo_scenario(tmp_path)
    with pytest.raises(GraphError, match="interface:=effort but the scenario's arm takes position commands"):
        describe({"scenario": servo, "hardware": "twin"})
    with pytest.raises(GraphError, match="interface:=velocity but the scenario's arm takes position commands"):
        describe({"scenario": servo, "interface": "velocity"})
    with pytest.raises(GraphError, match="interface:=position but the scenario's arm takes effort commands"):
        describe({"interface": "position"})
    describe({"scenario": servo, "controller": "false"})  # no controller: nothing to command
    describe({"hardware": "none", "interface": "velocity"})  # a real arm's driver: the user's word


def test_stiffness_without_the_servos_gain_is_refused_in_one_sentence(tmp_path):
    with pytest.raises(GraphError, match="position_mode:=stiffness turns the controller's torque into a velocity goal"):
        describe({"hardware": "none", "interface": "velocity", "position_mode": "stiffness"})
    with pytest.raises(GraphError, match=r"add \[driver\] interface = \"velocity\" and servo_kv"):
        describe(
            {
                "hardware": "none",
                "scenario": servo_scenario(tmp_path),
                "interface": "velocity",
                "position_mode": "stiffness",
            }
        )


def test_rviz_robot_description_matches_the_scenario_and_is_set_aside_beside_the_simulator():
    sim = by_executable({"rviz": "true"})["robot_state_publisher"]
    assert '<joint name="j1" type="revolute">' in sim.parameters["robot_description"]
    assert '<joint name="j3"' not in sim.parameters["robot_description"]
    assert sim.remappings == (("robot_description", "robot_state_publisher/robot_description"),)
    driver = by_executable({"rviz": "true", "hardware": "none"})["robot_state_publisher"]
    assert driver.remappings == ()


def test_force_replay_is_stepped_in_lockstep_and_the_simulator_waits_for_it(tmp_path):
    source = tmp_path / "push.csv"
    source.write_text("t,fx,fy\n0,1,0\n1,0,0\n")
    specs = by_executable({"mode": "lockstep", "force_source": str(source)})
    assert specs["force_replay"].parameters["mode"] == "stepped"
    assert specs["force_replay"].parameters["source"] == str(source.resolve())
    assert "topic" not in specs["force_replay"].parameters
    assert specs["simulator"].parameters["wait_for_wrench"] is True
    realtime = by_executable({"force_source": str(source), "force_topic": "/push"})
    assert realtime["force_replay"].parameters["mode"] == "hold"
    assert realtime["force_replay"].parameters["topic"] == "/push"
    assert realtime["simulator"].parameters["wait_for_wrench"] is False


def test_record_starts_the_recorder_with_its_own_topic_list(tmp_path):
    recorder = by_executable({"record": str(tmp_path / "bag")})["recorder"]
    assert recorder.parameters == {"output": str(tmp_path / "bag"), "storage": "sqlite3", "use_sim_time": False}
    lockstep = by_executable({"record": str(tmp_path / "bag"), "mode": "lockstep"})["recorder"]
    assert lockstep.parameters["nice"] == 10  # it yields a core to the loop; keep-all loses nothing


def test_every_node_names_its_readers_and_a_recorder_is_named_where_it_reads(tmp_path):
    push = tmp_path / "push.csv"
    push.write_text("t,fx,fy\n0,0,0\n1,1,0\n", encoding="utf-8")
    recorded = by_executable({"record": str(tmp_path / "bag"), "force_source": str(push)})
    simulator, controller = recorded["simulator"].parameters, recorded["controller"].parameters
    assert simulator["state_readers"] == ["controller", "recorder"] and simulator["tip_readers"] == ["recorder"]
    assert controller["command_readers"] == ["simulator", "recorder"] and controller["channel_readers"] == ["recorder"]
    assert recorded["force_replay"].parameters["wrench_readers"] == ["simulator", "recorder"]
    plain = by_executable({"force_source": str(push)})
    assert plain["simulator"].parameters["state_readers"] == ["controller"]
    assert (
        "tip_readers" not in plain["simulator"].parameters and "channel_readers" not in plain["controller"].parameters
    )
    assert plain["controller"].parameters["command_readers"] == ["simulator"]
    assert plain["force_replay"].parameters["wrench_readers"] == ["simulator"]
    # A real arm's driver: its effort controller's name cannot be known (live_arm: any one reader), and the
    # recorder does not hold the arm's commands back.
    driver = by_executable({"hardware": "none", "record": str(tmp_path / "bag2")})["controller"].parameters
    assert "command_readers" not in driver and "channel_readers" not in driver and driver["live_arm"] is True
    # No count is left for an outside reader to meet.
    for spec in describe({"record": str(tmp_path / "bag3"), "force_source": str(push), "extra_readers": "/plotter"}):
        assert not {"min_subscribers", "min_tip_subscribers", "min_channel_subscribers", "recorder_node"} & set(
            spec.parameters
        ), spec.executable


def test_force_replay_follows_the_clock_of_the_simulator_or_its_own_timer(tmp_path):
    source = tmp_path / "push.csv"
    source.write_text("t,fx,fy\n0,1,0\n1,0,0\n")
    simulated = by_executable({"force_source": str(source)})["force_replay"]
    assert simulated.parameters["timing"] == "clock"
    assert simulated.parameters["scenario"] == str(bundled_scenarios()["reach"].resolve())
    driver = by_executable({"force_source": str(source), "hardware": "none"})["force_replay"]
    assert driver.parameters["timing"] == "timer"


def test_joint_names_reach_every_node_that_names_joints_and_command_joints_the_controller():
    nodes = by_executable({"joint_names": "shoulder, elbow", "command_joints": "elbow,shoulder", "rviz": "true"})
    assert nodes["simulator"].parameters["joint_names"] == ["shoulder", "elbow"]
    assert nodes["controller"].parameters["joint_names"] == ["shoulder", "elbow"]
    assert nodes["controller"].parameters["command_joints"] == ["elbow", "shoulder"]
    assert 'joint name="shoulder"' in nodes["robot_state_publisher"].parameters["robot_description"]
    defaults = by_executable({})
    assert "joint_names" not in defaults["simulator"].parameters
    assert "command_joints" not in defaults["controller"].parameters


def test_the_simulator_waits_for_the_graphs_own_readers_by_name(tmp_path):
    assert by_executable({})["simulator"].parameters["state_readers"] == ["controller"]
    assert by_executable({})["simulator"].parameters["wait_for_controller"] is True
    assert "state_readers" not in by_executable({"controller": "false"})["simulator"].parameters
    assert by_executable({"controller": "false"})["simulator"].parameters["wait_for_controller"] is False
    recorded = by_executable({"record": str(tmp_path / "bag"), "mode": "lockstep"})
    assert recorded["simulator"].parameters["state_readers"] == ["controller", "recorder"]
    outside = by_executable({"extra_readers": "/plotter, probe"})["simulator"].parameters
    assert outside["state_readers"] == ["controller", "/plotter", "probe"]
    assert "start_settle" not in outside
    prioritised = by_executable({"thread_priority": "50"})
    assert prioritised["simulator"].parameters["thread_priority"] == 50
    assert prioritised["controller"].parameters["thread_priority"] == 50


def test_compose_runs_simulator_and_controller_as_one_process_keeping_their_names(tmp_path):
    specs = by_executable({"compose": "true", "record": str(tmp_path / "bag"), "extra_readers": "/plotter"})
    assert set(specs) == {"composed", "recorder"}
    composed = specs["composed"]
    assert composed.name == "" and composed.ends_graph is False
    separate = by_executable({"record": str(tmp_path / "bag"), "extra_readers": "/plotter"})
    shared = {**separate["controller"].parameters, **separate["simulator"].parameters}
    assert composed.parameters.keys() == shared.keys()
    # The simulator waits for the recorder and the outside reader; the controller's commands and channels for
    # the recorder (its simulator is handed each command by a call).
    assert composed.parameters["state_readers"] == ["recorder", "/plotter"]
    assert composed.parameters["command_readers"] == ["recorder"]
    assert composed.parameters["channel_readers"] == ["recorder"]
    assert composed.parameters["wait_for_controller"] is False
    alone = by_executable({"compose": "true", "duration": "2"})["composed"]
    assert alone.ends_graph is True
    assert not {"state_readers", "command_readers", "channel_readers"} & set(alone.parameters)


def test_use_sim_time_reaches_every_node():
    for value, expected in (("true", True), ("False", False)):
        specs = describe({"use_sim_time": value, "rviz": "true"})
        assert {spec.parameters["use_sim_time"] for spec in specs} == {expected}


@pytest.mark.parametrize(
    ("arguments", "sentence"),
    [
        ({"mod": "lockstep"}, "unknown launch argument 'mod'; the arguments are scenario, mode, duration"),
        ({"mode": "fast"}, "mode 'fast' is not one of realtime, lockstep"),
        ({"hardware": "real"}, "hardware 'real' is not one of sim, none, twin"),
        ({"controller": "yes"}, "controller 'yes' is not one of true, false"),
        ({"duration": "-1"}, "duration must be zero or a positive number (s), got '-1'"),
        ({"duration": "nan"}, "duration must be zero or a positive number (s), got 'nan'"),
        ({"duration": "two"}, "duration must be zero or a positive number (s), got 'two'"),
        ({"mode": "Lockstep"}, "mode 'Lockstep' is not one of realtime, lockstep"),  # as the node says
        ({"namespace": "arm-1"}, "namespace 'arm-1' is not a ROS namespace"),
        ({"namespace": "1arm"}, "namespace '1arm' is not a ROS namespace"),
        ({"scenario": "no_such_scenario"}, "scenario file 'no_such_scenario' does not exist"),
        ({"force_source": "/no/such/force.csv"}, "force_source '/no/such/force.csv' does not exist"),
        ({"hardware": "none", "mode": "lockstep"}, "mode 'lockstep' needs hardware:=sim"),
        ({"hardware": "none", "duration": "3"}, "duration needs hardware:=sim"),
        ({"extra_readers": "1"}, "extra_readers must name nodes (/plotter, recorder), not count them: '1'"),
        ({"thread_priority": "100"}, "thread_priority must be a whole number from 0 to 99, got '100'"),
        ({"joint_names": "a"}, "joint_names 'a' must name each of the arm's 2 joints once"),
        ({"joint_names": "a,a"}, "joint_names 'a,a' must name each of the arm's 2 joints once"),
        ({"joint_names": "a,b", "command_joints": "b,c"}, "command_joints ['b', 'c'] must list the same joints"),
        ({"record": "/"}, "record '/' exists already; give a bag folder to create that does not exist yet"),
        ({"compose": "true", "hardware": "none"}, "compose:=true runs the simulator and its controller in one"),
        ({"compose": "true", "controller": "false"}, "compose:=true runs the simulator and its controller in one"),
        ({"record": "/no/such/dir/bag"}, "record: the folder '/no/such/dir' of '/no/such/dir/bag' does not exist"),
    ],
)
def test_bad_values_give_one_sentence(arguments, sentence):
    with pytest.raises(GraphError) as raised:
        describe(arguments)
    assert str(raised.value).startswith(sentence)
    assert "\n" not in str(raised.value)


def test_publish_clock_can_be_turned_off_for_all_but_one_arm():
    (simulator,) = [spec for spec in describe({"publish_clock": "false"}) if spec.executable == "simulator"]
    assert simulator.parameters["publish_clock"] is False
    (simulator,) = [spec for spec in describe() if spec.executable == "simulator"]
    assert simulator.parameters["publish_clock"] is True


def test_a_robot_only_scenario_runs_without_the_controller(tmp_path):
    robot = tmp_path / "robot.toml"
    robot.write_text(ROBOT_ONLY)
    with pytest.raises(GraphError, match=r"has no \[task\] and \[controller\] tables.*controller:=false"):
        describe({"scenario": str(robot)})
    specs = describe({"scenario": str(robot), "controller": "false"})
    assert [spec.executable for spec in specs] == ["simulator"]


def test_resolve_arguments_fills_defaults_and_normalize_namespace():
    values = resolve_arguments({"mode": "lockstep"})
    assert values["mode"] == "lockstep"
    assert values["scenario"] == ARGUMENTS["scenario"].default
    assert normalize_namespace("") == ""
    assert normalize_namespace("/lab//arm_1/") == "lab/arm_1"
    assert math.isfinite(float(values["duration"]))


# --- the launch file gives the same nodes as the launcher ------------------------------------


def launcher_nodes(arguments, tmp_path):
    """What the launcher starts: per node, (package, executable, full name, parameters, remappings, arguments)."""
    found = []
    for item in plan(describe(arguments), tmp_path, report=lambda _line: None):
        words = item.command
        ros = words.index("--ros-args")
        rules = [words[i + 1] for i in range(ros, len(words)) if words[i] == "-r"]
        name = next((rule.split(":=")[1] for rule in rules if rule.startswith("__node:=")), "")
        namespace = next((rule.split(":=")[1] for rule in rules if rule.startswith("__ns:=")), "")
        document = yaml.safe_load(Path(words[words.index("--params-file") + 1]).read_text())
        remaps = [tuple(rule.split(":=")) for rule in rules if not rule.startswith("__")]
        if words[:4] == [find_executable(PACKAGE, "x")[0], "-m", "skelarm_ros.cli", "run"]:
            package, executable, extra = PACKAGE, words[4], words[5:ros]
        else:
            package, executable, extra = Path(words[0]).parent.name, Path(words[0]).name, words[1:ros]
        name = name or executable  # a process whose nodes keep their own names (the composed graph)
        found.append(
            (
                package,
                executable,
                f"{namespace.rstrip('/')}/{name}",
                document["/**"]["ros__parameters"],
                remaps,
                extra,
                item.ends_graph,
            )
        )
    return found


class _ParamsLoader(yaml.SafeLoader):
    """Reads launch_ros's parameter files, which write arrays as ``!!python/tuple`` (rcl reads them as arrays)."""


_ParamsLoader.add_constructor("tag:yaml.org,2002:python/tuple", lambda loader, node: loader.construct_sequence(node))


@pytest.fixture(autouse=True)
def _sigint_back():
    """Put this process's SIGINT handler back after each test: sim.launch.py takes the launch process's for good."""
    previous = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, previous)


def load_launch_file():
    """sim.launch.py as a module (its functions are tested without ros2 launch)."""
    spec = importlib.util.spec_from_file_location("sim_launch", LAUNCH_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def launch_context(arguments):
    """A launch context holding the declared defaults and the given arguments, as ros2 launch sets them."""
    from launch import LaunchContext

    context = LaunchContext()
    context.launch_configurations.update({name: argument.default for name, argument in ARGUMENTS.items()} | arguments)
    return context


def launch_file_nodes(arguments):
    """What sim.launch.py starts, evaluated with launch_ros but without starting anything."""
    from launch.actions import EmitEvent, RegisterEventHandler
    from launch.events import Shutdown
    from launch.events.process import ProcessExited
    from launch_ros.actions import Node

    module = load_launch_file()
    context = launch_context(arguments)
    actions = module.graph_actions(context)
    handlers = [action.event_handler for action in actions if isinstance(action, RegisterEventHandler)]
    found = []
    for node in (action for action in actions if isinstance(action, Node)):
        node._perform_substitutions(context)
        parameters = {}
        for path, is_file in node._Node__expanded_parameter_arguments:
            assert is_file
            for rules in yaml.load(Path(path).read_text(), Loader=_ParamsLoader).values():
                parameters |= rules["ros__parameters"]
        namespace = node.expanded_node_namespace if node.expanded_node_namespace.startswith("/") else ""
        name = node._Node__expanded_node_name
        if name == Node.UNSPECIFIED_NODE_NAME:  # the composed process: its nodes keep their own names
            name = node.node_executable
        full_name = f"{namespace.rstrip('/')}/{name}"

        def exited(code, node=node):
            return ProcessExited(action=node, name=node.name, cmd=[], cwd=None, env=None, pid=1, returncode=code)

        # Every node has one exit handler: a clean exit ends the graph only for a node that ends it...
        (handler,) = [handler for handler in handlers if handler.matches(exited(0))]
        on_success = handler.handle(exited(0), context)
        if on_success:
            (emit,) = on_success
            assert isinstance(emit, EmitEvent)
            assert isinstance(emit.event, Shutdown)
        # ... and a failure ends the launch with the launcher's sentence, whichever node it is.
        with pytest.raises(module.NodeFailed) as raised:
            handler.handle(exited(1), context)
        assert str(raised.value) == failure(full_name.lstrip("/"), 1)
        found.append(
            (
                node.node_package,
                node.node_executable,
                full_name,
                parameters,
                [tuple(rule) for rule in node.expanded_remapping_rules or []],
                list(node._Node__arguments or []),
                bool(on_success),
            )
        )
    return found


@pytest.mark.parametrize(
    "arguments", ARGUMENT_SETS, ids=lambda a: " ".join(f"{k}:={v}" for k, v in a.items()) or "defaults"
)
def test_launcher_command_lines_carry_exactly_the_description(arguments, tmp_path):
    specs = describe(arguments)

    def everything(package, executable):
        return [f"/opt/ros/lib/{package}/{executable}"] if package != PACKAGE else find_executable(package, executable)

    planned = plan(specs, tmp_path, report=lambda _line: None, locate=everything)
    assert len(planned) == len(specs)
    for spec, item in zip(specs, planned, strict=True):
        words = item.command
        ros = words.index("--ros-args")
        start = everything(spec.package, spec.executable)
        assert words[: len(start)] == start
        assert words[len(start) : ros] == list(spec.arguments)
        rules = [words[i + 1] for i in range(ros, len(words)) if words[i] == "-r"]
        assert [rule for rule in rules if rule.startswith("__node:=")] == [f"__node:={spec.name}"] * bool(spec.name)
        assert (f"__ns:=/{spec.namespace}" in rules) == bool(spec.namespace)
        assert [tuple(rule.split(":=")) for rule in rules if not rule.startswith("__")] == list(spec.remappings)
        document = yaml.safe_load(Path(words[words.index("--params-file") + 1]).read_text())
        assert document == {"/**": {"ros__parameters": spec.parameters}}
        assert item.ends_graph == spec.ends_graph


def require(module: str, instead: str) -> None:
    """Skip unless a ROS 2 tool's Python package is importable, saying which test checks the behaviour here."""
    pytest.importorskip(
        module, reason=f"{module} is not importable here (it comes with a ROS 2 distribution, not PyPI); {instead}"
    )


@pytest.mark.parametrize(
    "arguments", ARGUMENT_SETS, ids=lambda a: " ".join(f"{k}:={v}" for k, v in a.items()) or "defaults"
)
def test_launch_file_and_launcher_start_the_same_nodes(arguments, tmp_path):
    require(
        "launch_ros",
        "test_launcher_command_lines_carry_exactly_the_description checks the launcher against the description",
    )
    assert launch_file_nodes(arguments) == launcher_nodes(arguments, tmp_path)


def test_launch_file_refuses_an_unknown_argument_with_the_launchers_sentence():
    require("launch_ros", "test_bad_values_give_one_sentence checks the sentence the launcher says")
    module = load_launch_file()
    with pytest.raises(GraphError) as raised:
        module.graph_actions(launch_context({"mod": "lockstep"}))
    with pytest.raises(GraphError) as said:
        resolve_arguments({"mod": "lockstep"})
    assert str(raised.value) == str(said.value)
    assert str(raised.value).startswith("unknown launch argument 'mod'; the arguments are scenario, mode, ")
    # What launch and launch_ros keep in the launch configurations themselves is no argument.
    own = {"ros_namespace": "/lab", "ros_remaps": "", "global_params": "", "emulate_tty": "true", "launch-prefix": ""}
    assert [type(action).__name__ for action in module.graph_actions(launch_context(own))] == [
        "RegisterEventHandler",  # on shutdown
        *["Node", "RegisterEventHandler", "RegisterEventHandler"] * 2,  # each node, its start and exit handlers
    ]


class _Records(logging.Handler):
    """Keeps what a logger says (launch's loggers do not propagate to the root logger pytest watches)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_ros2_launch_of_an_unknown_argument_exits_1_with_the_launchers_sentence():
    require("ros2launch", "test_launcher.py checks that skelarm-ros launch refuses bad arguments")
    from ros2launch.api import launch_a_launch_file

    heard = _Records()
    logging.getLogger("launch").addHandler(heard)
    try:
        # What `ros2 launch skelarm_ros sim.launch.py mod:=lockstep` runs, with this checkout's launch file.
        code = launch_a_launch_file(
            launch_file_path=str(LAUNCH_FILE), launch_file_arguments=["mod:=lockstep"], noninteractive=True
        )
    finally:
        logging.getLogger("launch").removeHandler(heard)
    assert code == 1
    with pytest.raises(GraphError) as said:
        resolve_arguments({"mod": "lockstep"})
    said_by_launch = [(record.name, record.levelname, record.getMessage()) for record in heard.records]
    assert ("launch", "ERROR", f"Caught exception in launch (see debug for traceback): {said.value}") in said_by_launch


def test_launch_file_takes_a_stop_asked_for_as_clean_with_launchs_own_events():
    require("launch_ros", "test_launch_stop.py checks the same handlers with stand-ins for launch")
    from launch.actions import RegisterEventHandler
    from launch.events import Shutdown
    from launch.events.process import ProcessExited, ProcessStarted, SignalProcess
    from launch_ros.actions import Node

    module = load_launch_file()
    context = launch_context({"mode": "lockstep", "duration": "2.0"})
    actions = module.graph_actions(context)
    handlers = [action.event_handler for action in actions if isinstance(action, RegisterEventHandler)]
    nodes = [action for action in actions if isinstance(action, Node)]
    assert len(nodes) == 2
    ctrl_c = Shutdown(reason="ctrl-c (SIGINT)", due_to_sigint=True)  # what launch emits on a Ctrl-C
    (on_shutdown,) = [handler for handler in handlers if handler.matches(ctrl_c)]
    on_shutdown.handle(ctrl_c, context)
    context._set_is_shutdown(True)  # as launch does then
    for node in nodes:
        process = {"action": node, "name": node.name, "cmd": [], "cwd": None, "env": None, "pid": 1}
        started = ProcessStarted(**process)  # a node whose start was under way: it gets the SIGINT now
        (on_start,) = [handler for handler in handlers if handler.matches(started)]
        (emit,) = on_start.handle(started, context)
        assert isinstance(emit.event, SignalProcess)
        assert emit.event.signal == signal.SIGINT
        assert emit.event.process_matcher(node)
        assert not emit.event.process_matcher(next(other for other in nodes if other is not node))
        exited = ProcessExited(returncode=-signal.SIGINT, **process)  # ended by it before it could take it
        (on_exit,) = [handler for handler in handlers if handler.matches(exited)]
        assert on_exit.handle(exited, context) is None
