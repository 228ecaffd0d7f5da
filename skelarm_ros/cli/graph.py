# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The one description of the simulated-arm graph that both launchers start.

:func:`describe` turns launch arguments (``name:=value`` strings, as ``ros2 launch``
and ``skelarm-ros launch`` take them) into a list of :class:`NodeSpec`: which
executable of which package to start, under which name and namespace, with which
parameters, remappings and command-line arguments. ``launch/sim.launch.py`` turns
the specs into ``launch_ros`` ``Node`` actions; :mod:`skelarm_ros.cli.launcher` starts
them as processes. Both therefore start the same nodes with the same parameters.

:data:`ARGUMENTS` is the table of launch arguments, each with its default and a
description. Values are checked here, once, with one sentence per problem.

This module imports neither rclpy nor launch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skelarm_ros.bags.forces import HOLD, STEPPED
from skelarm_ros.bags.shadow import ShadowPlan, shadow_plan
from skelarm_ros.interface import (
    BASE_FRAME,
    COMMANDS,
    EFFORT,
    INTERFACES,
    JOINT_COMMANDS,
    JOINT_STATES,
    LOCKSTEP,
    MODES,
    PLAN_FROM_STATE,
    POSITION_MODES,
    REFERENCE,
    STIFFNESS,
    TARGET,
    check_choice,
    check_count,
    check_node_names,
    check_non_negative,
    check_positive,
    default_joint_names,
    split_names,
)
from skelarm_ros.nodes.params.controller import ControllerParams
from skelarm_ros.nodes.params.fields import Names
from skelarm_ros.nodes.params.force_replay import CLOCK_TIMING, TIMER_TIMING, ForceReplayParams
from skelarm_ros.nodes.params.recorder import RecorderParams
from skelarm_ros.nodes.params.simulator import SimulatorParams
from skelarm_ros.outputs import check_new
from skelarm_ros.sim.driver import check_servo_gain
from skelarm_ros.sim.scenario import load_arm, resolve_scenario, share_directory
from skelarm_ros.sim.urdf import skeleton_to_urdf

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from skelarm import Skeleton

    from skelarm_ros.sim.scenario import ArmSetup

PACKAGE = "skelarm_ros"
RVIZ_CONFIG = Path("config") / "skelarm.rviz"
REPLAY_ACK_TIMEOUT = 10.0  # s the player of a shadow run waits for its readers' acknowledgements at the end
REPLAY_DEPTH = 1000  # joint_states the shadow controller may fall behind by without dropping one
HARDWARE_SOFT_START = 1.0  # seconds the controller's torque ramps in over the arm's hold on a real arm's driver
RECORDER_NODE = "recorder"  # the recorder's executable and node name, which the others wait for by name
LOCKSTEP_RECORDER_NICE = 10  # the recorder's nice value in lockstep (docs/bags.md)
REPLAY_CLOCK_HZ = 1000  # /clock rate of a shadow run's player under use_sim_time

ParameterValue = bool | int | float | str | list[bool] | list[int] | list[float] | list[str]

# The nodes' parameter names, from their declarations (skelarm_ros.nodes.params).
SIMULATOR = Names(SimulatorParams)
CONTROLLER = Names(ControllerParams)
FORCE_REPLAY = Names(ForceReplayParams)
RECORDER = Names(RecorderParams)


class GraphError(ValueError):
    """A launch argument that cannot be used; the message names it and what would be right."""


@dataclass(frozen=True)
class LaunchArgument:
    """One launch argument: its name, default and what it does.

    Attributes
    ----------
    name : str
        The argument's name (``name:=value`` on the command line).
    default : str
        The value used when the argument is not given.
    description : str
        One sentence for ``--show-args`` and the docs.
    choices : tuple[str, ...]
        The allowed values, or empty when any value of the right kind goes.
    """

    name: str
    default: str
    description: str
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeSpec:
    """One node of the graph, as both launchers start it.

    Attributes
    ----------
    package : str
        The ROS package holding the executable.
    executable : str
        The executable (``ros2 run <package> <executable>``).
    name : str
        The node's name; empty for a process whose nodes keep their own names (the
        composed simulator and controller).
    namespace : str
        The node's namespace, relative (``arm1``), or empty for the root.
    parameters : dict[str, ParameterValue]
        Parameter values, by name.
    remappings : tuple[tuple[str, str], ...]
        ``(from, to)`` topic remappings.
    arguments : tuple[str, ...]
        Command-line arguments before ``--ros-args``.
    optional : bool
        Whether a launcher reports a missing executable and goes on without the node
        (rviz and robot_state_publisher, which need a ROS 2 installation).
    ends_graph : bool
        Whether the whole graph stops when this node exits (the simulator with a
        duration).
    """

    package: str
    executable: str
    name: str
    namespace: str = ""
    parameters: dict[str, ParameterValue] = field(default_factory=dict)
    remappings: tuple[tuple[str, str], ...] = ()
    arguments: tuple[str, ...] = ()
    optional: bool = False
    ends_graph: bool = False


BOOLEAN = ("true", "false")
HARDWARE = ("sim", "none", "twin")
LIVE_ARM = ("none", "twin")  # the controller drives a real arm's driver, or the simulator standing in for it
WALL_CLOCK = (CONTROLLER.state_timeout,)  # live-arm settings that need a wall clock: left out in lockstep
RECORD_STORAGES = ("sqlite3", "mcap")

ARGUMENTS: dict[str, LaunchArgument] = {
    argument.name: argument
    for argument in (
        LaunchArgument(
            "scenario",
            "reach",
            "skelarm scenario TOML for the whole graph: a path or a bundled scenario's name",
        ),
        LaunchArgument(
            "mode",
            "realtime",
            "simulator mode: realtime (timer at the scenario's step) or lockstep (deterministic, as fast as it goes)",
            MODES,
        ),
        LaunchArgument(
            "duration",
            "0.0",
            "simulated seconds after which the simulator stops and the graph ends; 0 runs until stopped",
        ),
        LaunchArgument(
            "namespace",
            "",
            "namespace every node and topic goes under (arm1), so several arms run side by side",
        ),
        LaunchArgument(
            "hardware",
            "sim",
            "sim starts the simulator; none leaves it out for a real arm's driver "
            "that publishes joint_states and takes the commands; twin starts the simulator as that driver "
            "(the scenario's [driver] table) and the controller as on the real arm, to predict its run",
            HARDWARE,
        ),
        LaunchArgument("controller", "true", "start the controller of the scenario's [controller] table", BOOLEAN),
        LaunchArgument(
            "interface",
            EFFORT,
            "what the arm's driver takes: effort (torques), or position or velocity (a servo arm's goals, "
            "docs/servo.md); with a simulator, the scenario's [driver] interface",
            INTERFACES,
        ),
        LaunchArgument(
            "position_mode",
            REFERENCE,
            "how a servo's goal is made: reference (a tracking controller's reference) or stiffness (any "
            "controller's torque through the scenario's [driver] servo_kp or servo_kv)",
            POSITION_MODES,
        ),
        LaunchArgument(
            "compose",
            "false",
            "run the simulator and the controller in one process, the controller stepped by each simulator step "
            "with no transport between them (same topics for readers); needs hardware:=sim or twin and "
            "controller:=true",
            BOOLEAN,
        ),
        LaunchArgument(
            "force_source",
            "",
            "recorded tip force to replay on tip_wrench (.sklog.npz, .csv or a bag); empty for none",
        ),
        LaunchArgument(
            "force_topic",
            "",
            "the WrenchStamped topic to read when force_source is a bag",
        ),
        LaunchArgument("record", "", "bag path to record the arm's topics to; empty for no recording"),
        LaunchArgument("record_storage", "sqlite3", "storage of the recorded bag: sqlite3 or mcap", RECORD_STORAGES),
        LaunchArgument(
            "joint_names",
            "",
            "comma-separated joint names in the arm's joint order (a real driver's names); empty for j1..jN",
        ),
        LaunchArgument(
            "command_joints",
            "",
            "comma-separated order the driver's effort controller takes the joints in; empty for joint_names order",
        ),
        LaunchArgument(
            "extra_readers",
            "",
            "comma-separated names of nodes outside the graph that read joint_states (a plotting tool, a test "
            "probe: /plotter), waited for by name before step 0, so that they see the whole run",
        ),
        LaunchArgument(
            "thread_priority",
            "0",
            "SCHED_FIFO priority (1-99) for the simulator's and the controller's threads, where the user may; "
            "0 for normal scheduling",
        ),
        LaunchArgument(
            "publish_clock",
            "true",
            "the simulator publishes its time on /clock; false for all but one of several arms on one domain",
            BOOLEAN,
        ),
        LaunchArgument(
            "replay",
            "",
            "recorded bag whose joint states (replay_joint_topic), target and robot_description are played in place "
            "of the simulator (hardware:=none implied), so the controller runs in shadow; empty for none",
        ),
        LaunchArgument(
            "replay_joint_topic",
            JOINT_STATES,
            "the replayed bag's joint-state topic (a driver's own, /servo/out/state), played as joint_states; "
            "a relative name is looked for in every recorded namespace",
        ),
        LaunchArgument("replay_rate", "1.0", "speed factor of the replay (2 plays twice as fast as recorded)"),
        LaunchArgument("use_sim_time", "false", "run every node on the simulated time of /clock", BOOLEAN),
        LaunchArgument(
            "rviz",
            "false",
            "start robot_state_publisher and rviz2 with config/skelarm.rviz, when they are installed",
            BOOLEAN,
        ),
    )
}

# A ROS name token: a letter or underscore, then letters, digits and underscores.
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def resolve_arguments(arguments: Mapping[str, str] | None = None) -> dict[str, str]:
    """Check argument names and fill in the defaults.

    Parameters
    ----------
    arguments : Mapping[str, str] | None, optional
        Given values by argument name.

    Returns
    -------
    dict[str, str]
        Every argument of :data:`ARGUMENTS`, given or default.

    Raises
    ------
    GraphError
        If a name is not a launch argument or a value is not one of its choices (the
        sentence the nodes say for the same value).
    """
    given = dict(arguments or {})
    unknown = sorted(set(given) - set(ARGUMENTS))
    if unknown:
        msg = f"unknown launch argument '{unknown[0]}'; the arguments are {', '.join(ARGUMENTS)}"
        raise GraphError(msg)
    values = {name: str(given.get(name, argument.default)) for name, argument in ARGUMENTS.items()}
    for name, argument in ARGUMENTS.items():
        if argument.choices == BOOLEAN:
            values[name] = values[name].lower()  # true, True and TRUE, as YAML and launch conditions take them
        if argument.choices:
            _checked(check_choice, name, values[name], argument.choices)
    return values


def _checked(check: Callable[..., Any], name: str, value: object, *args: Any) -> Any:
    """Run one of :mod:`skelarm_ros.interface`'s checks; its ``ValueError`` becomes a :class:`GraphError`."""
    try:
        return check(name, value, *args)
    except ValueError as error:
        raise GraphError(str(error)) from None


def _flag(values: Mapping[str, str], name: str) -> bool:
    return values[name] == "true"


def normalize_namespace(text: str) -> str:
    """Return a namespace argument as a relative ROS namespace (``/arm1/`` -> ``arm1``).

    Raises
    ------
    GraphError
        If a part of it is not a valid ROS name (letters, digits, underscores, not
        starting with a digit).
    """
    parts = [part for part in text.strip().split("/") if part]
    for part in parts:
        if not _TOKEN.fullmatch(part):
            msg = (
                f"namespace '{text}' is not a ROS namespace; use names of letters, digits and "
                "underscores that do not start with a digit, separated by '/' (arm1, lab/arm1)"
            )
            raise GraphError(msg)
    return "/".join(parts)


def _names(values: Mapping[str, str], argument: str, num_joints: int) -> list[str]:
    """Split a comma-separated list of joint names; empty when not given."""
    names = split_names(values[argument])
    if names and (len(names) != num_joints or len(set(names)) != len(names)):
        msg = f"{argument} '{values[argument]}' must name each of the arm's {num_joints} joints once, comma-separated"
        raise GraphError(msg)
    return names


def _existing_path(text: str, argument: str, what: str) -> str:
    path = Path(text).expanduser()
    if not path.exists():
        msg = f"{argument} '{text}' does not exist; give the path of {what}"
        raise GraphError(msg)
    return str(path.resolve())


def _new_path(text: str, argument: str, what: str) -> str:
    """Check before anything starts that an output can be made: it does not exist, its folder does."""
    path = Path(text).expanduser().resolve()
    if path.exists():  # a launch has no --force: a recording never replaces one
        msg = f"{argument} '{text}' exists already; give {what} that does not exist yet (nothing is overwritten)"
        raise GraphError(msg)
    try:
        check_new(path)
    except ValueError as error:
        raise GraphError(f"{argument}: {error}") from None
    return str(path)


def rviz_config() -> Path:
    """Return the path of the rviz configuration the graph opens (``config/skelarm.rviz``)."""
    return share_directory() / RVIZ_CONFIG


@dataclass(frozen=True)
class _Graph:
    """The launch arguments, checked and turned into what the node specs need."""

    values: dict[str, str]
    arm: ArmSetup
    scenario: str
    namespace: str
    simulate: bool
    hardware: str
    lockstep: bool
    duration: float
    controller: bool
    compose: bool
    force_source: str
    record: str
    joint_names: list[str]
    command_joints: list[str]
    priority: int
    use_sim_time: bool
    shadow: ShadowPlan | None = None  # what a shadow run replays (replay:=), or None
    replay: str = ""  # the bag a shadow run replays
    extra_readers: tuple[str, ...] = ()  # joint_states readers outside the graph, by name

    @property
    def recorders(self) -> list[str]:
        """The recorder's name when the graph records (it reads every arm topic), else nothing."""
        return [RECORDER_NODE] if self.record else []

    @property
    def live_arm(self) -> bool:
        """Whether the controller runs as on a real arm: on its driver (``none``) or on the twin (``twin``)."""
        return self.hardware in LIVE_ARM and not self.shadow

    @property
    def command_interface(self) -> str:
        """Lockstep and shadow runs pair a command with its state by stamp: only ``joint_commands`` carries one."""
        return JOINT_COMMANDS if self.lockstep or self.shadow else COMMANDS

    @property
    def naming(self) -> dict[str, ParameterValue]:
        """The ``joint_names`` parameter (the simulator's, the controller's), when the arguments rename the joints."""
        return {SIMULATOR.joint_names: self.joint_names} if self.joint_names else {}

    def node(self, executable: str, parameters: dict[str, ParameterValue], *, ends_graph: bool = False) -> NodeSpec:
        """Return the spec of one of this package's nodes in the graph's namespace."""
        return NodeSpec(
            package=PACKAGE,
            executable=executable,
            name=executable,
            namespace=self.namespace,
            parameters={**parameters, "use_sim_time": self.use_sim_time},
            ends_graph=ends_graph,
        )


def _graph(arguments: Mapping[str, str] | None) -> _Graph:
    """Check every launch argument (one sentence per problem) and load the scenario."""
    values = resolve_arguments(arguments)
    replay = _check_replay(values)
    simulate = values["hardware"] != "none" and not replay
    lockstep = values["mode"] == LOCKSTEP
    duration = _checked(check_non_negative, "duration", values["duration"])
    if not simulate and lockstep:
        msg = "mode 'lockstep' needs hardware:=sim or twin; a real arm's driver runs in realtime"
        raise GraphError(msg)
    if not simulate and duration > 0.0:
        msg = "duration needs hardware:=sim or twin; without the simulator nothing ends the run (stop it with Ctrl-C)"
        raise GraphError(msg)
    try:
        scenario = resolve_scenario(values["scenario"])
        arm = load_arm(scenario)
    except ValueError as error:
        raise GraphError(str(error)) from None
    controller = _flag(values, "controller")
    _check_interface(values, arm, simulate=simulate, controller=controller)
    compose = _flag(values, "compose")
    if compose and not (simulate and controller):
        msg = (
            "compose:=true runs the simulator and its controller in one process, so it needs hardware:=sim or twin and "
            "controller:=true (and no replay); beside a real driver run the controller alone"
        )
        raise GraphError(msg)
    if controller and not arm.has_controller:
        msg = (
            f"scenario '{scenario}' has no [task] and [controller] tables, so controller:=true has nothing to run; "
            "pass a full scenario or controller:=false"
        )
        raise GraphError(msg)
    force_source = values["force_source"]
    if force_source:
        force_source = _existing_path(force_source, "force_source", "a .sklog.npz log, a .csv file or a bag")
    joint_names = _names(values, "joint_names", arm.num_joints)
    shadow = _shadow(replay, values, arm.num_joints, joint_names) if replay else None
    if shadow is not None and not joint_names:
        joint_names = shadow.joint_names  # the recorded arm's own names, in its order
    command_joints = _names(values, "command_joints", arm.num_joints)
    if command_joints and sorted(command_joints) != sorted(joint_names or default_joint_names(arm.num_joints)):
        msg = f"command_joints {command_joints} must list the same joints as joint_names, in the driver's order"
        raise GraphError(msg)
    extra_readers = _checked(check_node_names, "extra_readers", split_names(values["extra_readers"]))
    return _Graph(
        values=values,
        arm=arm,
        scenario=str(scenario.resolve()),
        namespace=normalize_namespace(values["namespace"]),
        simulate=simulate,
        hardware=values["hardware"],
        lockstep=lockstep,
        duration=duration,
        controller=controller,
        compose=compose,
        force_source=force_source,
        record=_new_path(values["record"], "record", "a bag folder to create") if values["record"] else "",
        joint_names=joint_names,
        command_joints=command_joints,
        priority=_checked(check_count, "thread_priority", values["thread_priority"], 99),
        use_sim_time=_flag(values, "use_sim_time"),
        shadow=shadow,
        replay=replay,
        extra_readers=extra_readers,
    )


def describe(arguments: Mapping[str, str] | None = None) -> list[NodeSpec]:
    """Describe the graph that the launch arguments ask for.

    Parameters
    ----------
    arguments : Mapping[str, str] | None, optional
        Launch argument values by name (strings, as given on a command line); the
        others take their defaults from :data:`ARGUMENTS`.

    Returns
    -------
    list[NodeSpec]
        The nodes to start, in start order: simulator, controller, force replay,
        recorder, player (``replay``), robot_state_publisher, rviz2 (each only when
        asked for).

    Raises
    ------
    GraphError
        With one sentence naming the argument and what would be right, also when the
        scenario cannot be read or cannot run the controller.
    """
    graph = _graph(arguments)
    specs: list[NodeSpec] = []
    if graph.compose:
        specs.append(_composed(graph))
    if graph.simulate and not graph.compose:
        specs.append(_simulator(graph))
    if graph.controller and not graph.compose:
        specs.append(_controller(graph))
    if graph.force_source:
        specs.append(_force_replay(graph))
    if graph.record:
        # The recorder's own topic list (both command interfaces, robot_description, ...) is kept.
        recorder: dict[str, ParameterValue] = {
            RECORDER.output: graph.record,
            RECORDER.storage: graph.values["record_storage"],
        }
        if graph.lockstep:  # it takes its messages when the loop leaves a core free; keep-all loses none
            recorder[RECORDER.nice] = LOCKSTEP_RECORDER_NICE
        specs.append(graph.node(RECORDER_NODE, recorder))
    if graph.shadow:
        specs.append(_player(graph))
    if _flag(graph.values, "rviz"):
        names = graph.joint_names or default_joint_names(graph.arm.num_joints)
        remap = graph.simulate or bool(graph.shadow)  # the simulator or the player publishes robot_description
        specs.extend(
            _visualisation(graph.arm.skeleton, names, graph.namespace, graph.use_sim_time, remap_description=remap)
        )
    return specs


def _simulator(graph: _Graph, *, controller: bool = True) -> NodeSpec:
    """Return the simulator; ``controller``: its controller reads ``joint_states`` over DDS (not composed)."""
    # Step 0 waits for the graph's joint_states and tip readers by name, so none misses the start.
    states = [*(["controller"] if graph.controller and controller else []), *graph.recorders, *graph.extra_readers]
    parameters: dict[str, ParameterValue] = {
        SIMULATOR.scenario: graph.scenario,
        SIMULATOR.mode: graph.values["mode"],
        SIMULATOR.duration: graph.duration,
        SIMULATOR.command_interface: graph.command_interface,
        SIMULATOR.publish_clock: _flag(graph.values, "publish_clock"),
        SIMULATOR.wait_for_wrench: graph.lockstep and bool(graph.force_source),
        SIMULATOR.wait_for_controller: graph.controller and controller,
        SIMULATOR.thread_priority: graph.priority,
        SIMULATOR.driver: graph.hardware == "twin",  # it stands in for the arm's driver
    }
    if states:
        parameters[SIMULATOR.state_readers] = states
    if graph.record:
        parameters[SIMULATOR.tip_readers] = graph.recorders
    return graph.node("simulator", {**parameters, **graph.naming}, ends_graph=graph.duration > 0.0)


def _controller(graph: _Graph) -> NodeSpec:
    parameters: dict[str, ParameterValue] = {
        CONTROLLER.scenario: graph.scenario,
        CONTROLLER.command_interface: graph.command_interface,
        CONTROLLER.interface: graph.values["interface"],
        CONTROLLER.position_mode: graph.values["position_mode"],
        CONTROLLER.reliable_states: graph.lockstep,  # lockstep answers every state; realtime takes any driver's
        CONTROLLER.thread_priority: graph.priority,
    }
    if graph.simulate:
        # Its first command waits for the simulator and the recorder by name, its channels for the recorder,
        # so a recording keeps the whole run. (A real arm's driver is not kept waiting for a recorder.)
        parameters[CONTROLLER.command_readers] = ["simulator", *graph.recorders]
        if graph.lockstep:  # the simulator waits for each command: states pause with it, nothing holds torque
            parameters[CONTROLLER.state_timeout] = 0.0
            parameters[CONTROLLER.zero_on_stop] = False  # a recording ends with the run's own last command
    elif graph.shadow:  # every recorded state is answered (none dropped), and the recorder keeps every answer
        parameters[CONTROLLER.reliable_states] = True
        parameters[CONTROLLER.qos_depth] = REPLAY_DEPTH
        if graph.record:
            parameters[CONTROLLER.command_readers] = graph.recorders
        # It starts from the bag's first state, as the recorded controller started where the arm was.
        parameters[CONTROLLER.plan_from] = PLAN_FROM_STATE
        parameters[CONTROLLER.state_timeout] = 0.0  # a bag's gap drives nothing
        parameters[CONTROLLER.zero_on_stop] = False
    if graph.live_arm:  # on a real arm's driver, or on the simulator standing in for it: the same settings
        parameters.update(_live_arm_settings(graph))
    if graph.record and (graph.simulate or graph.shadow):
        parameters[CONTROLLER.channel_readers] = graph.recorders
    if graph.command_joints:
        parameters[CONTROLLER.command_joints] = graph.command_joints
    return graph.node("controller", {**parameters, **graph.naming})


def _live_arm_settings(graph: _Graph) -> dict[str, ParameterValue]:
    """Return the controller's settings for a live arm: ``hardware:=none`` and ``hardware:=twin`` alike.

    The twin's prediction holds only if the controller runs there as it runs on the arm, so
    both take them from here; in lockstep those that need a wall clock (:data:`WALL_CLOCK`)
    are left out (the simulator waits for each command: no state goes stale).
    """
    settings: dict[str, ParameterValue] = {
        CONTROLLER.live_arm: True,  # the arm held from the start, guarded to the end
        CONTROLLER.soft_start: HARDWARE_SOFT_START,  # a driver holds the last command: no kick at the start
    }
    if graph.lockstep:
        return {name: value for name, value in settings.items() if name not in WALL_CLOCK}
    return settings


def _check_interface(values: Mapping[str, str], arm: ArmSetup, *, simulate: bool, controller: bool) -> None:
    """Refuse a controller's ``interface`` the simulated arm does not take, and a goal mode that cannot apply."""
    interface = values["interface"]
    if not controller:
        return
    takes = EFFORT if arm.driver is None else arm.driver.interface
    if simulate and interface != takes:
        msg = (
            f"interface:={interface} but the scenario's arm takes {takes} commands ([driver] interface = "
            f'"{takes}"); pass interface:={takes}, or give the scenario the [driver] of a {interface} servo '
            "(docs/servo.md)"
        )
        raise GraphError(msg)
    if interface != EFFORT and values["position_mode"] == STIFFNESS:
        try:
            check_servo_gain(interface, arm.driver)
        except ValueError as error:
            raise GraphError(str(error)) from None


def _composed(graph: _Graph) -> NodeSpec:
    """Return the simulator and the controller as one process (skelarm_ros.nodes.composed), named as they are.

    Both nodes get one parameter set, each its own names: the simulator's readers are those
    outside the process (the controller is handed each state), the controller's the recorder
    (its commands go to the simulator by a call).
    """
    simulator, controller = _simulator(graph, controller=False), _controller(graph)
    own = {name: value for name, value in controller.parameters.items() if name not in simulator.parameters}
    if graph.record:
        own[CONTROLLER.command_readers] = graph.recorders
    else:
        own.pop(CONTROLLER.command_readers, None)
    return replace(simulator, executable="composed", name="", parameters={**own, **simulator.parameters})


def _force_replay(graph: _Graph) -> NodeSpec:
    parameters: dict[str, ParameterValue] = {
        FORCE_REPLAY.source: graph.force_source,
        FORCE_REPLAY.scenario: graph.scenario,  # its step is the replay's
        FORCE_REPLAY.mode: STEPPED if graph.lockstep else HOLD,
        # One wrench per /clock time from the simulator; on a real arm, the replay's own timer.
        FORCE_REPLAY.timing: CLOCK_TIMING if graph.simulate else TIMER_TIMING,
    }
    readers = [*(["simulator"] if graph.simulate else []), *graph.recorders]
    if readers:  # its first wrench waits for the simulator and the recorder by name
        parameters[FORCE_REPLAY.wrench_readers] = readers
    if graph.values["force_topic"]:
        parameters[FORCE_REPLAY.topic] = graph.values["force_topic"]
    return graph.node("force_replay", parameters)


def _check_replay(values: Mapping[str, str]) -> str:
    """Return the bag a shadow run replays (empty for none), checking that no simulator argument comes with it."""
    if not values["replay"]:
        return ""
    clashing = [f"mode:={values['mode']}"] if values["mode"] != "realtime" else []
    if _checked(check_non_negative, "duration", values["duration"]) > 0.0:
        clashing.append(f"duration:={values['duration']}")
    if values["force_source"]:
        clashing.append(f"force_source:={values['force_source']}")
    if values["hardware"] == "twin":
        clashing.append("hardware:=twin")
    if clashing:
        msg = (
            f"replay plays a recorded run in place of the simulator, so {', '.join(clashing)} does not apply; "
            "leave it out (the graph ends when the bag is played out)"
        )
        raise GraphError(msg)
    _checked(check_positive, "replay_rate", values["replay_rate"], "a speed factor")
    return _existing_path(values["replay"], "replay", "a recorded bag")


def _shadow(replay: str, values: Mapping[str, str], num_joints: int, joint_names: list[str]) -> ShadowPlan:
    """Return what a shadow run replays, checked: the recorded states name the arm's joints.

    Without ``joint_names`` the recorded names are the arm's, in their order, so the
    recorded states must name as many joints as the arm has; with it, they must name
    each of them (a driver may publish more joints than the arm's, a gripper's say).
    """
    try:
        plan = shadow_plan(replay, normalize_namespace(values["namespace"]), values["replay_joint_topic"])
    except ValueError as error:
        raise GraphError(str(error)) from None
    recorded, topic = plan.joint_names, plan.joint_topic
    missing = [name for name in joint_names if name not in recorded]
    if missing:
        msg = (
            f"joint_names {missing} are not among the joints the recorded states on '{topic}' name ({recorded}); "
            "give the names the recording uses"
        )
        raise GraphError(msg)
    if not joint_names and len(recorded) != num_joints:
        msg = (
            f"the recorded states on '{topic}' name {len(recorded)} joints ({', '.join(recorded)}) and the "
            f"scenario's arm has {num_joints}: pass joint_names:= the arm's {num_joints} joints among them, "
            "in the arm's order"
        )
        raise GraphError(msg)
    return plan


def _player(graph: _Graph) -> NodeSpec:
    """Return the player of a shadow run: the recorded arm topics into the graph's namespace; it ends the graph."""
    assert graph.shadow is not None  # a replay's graph
    topics = graph.shadow.topics
    # The first state waits for the graph's readers of each replayed topic, by name (as the simulator's step 0).
    readers_of_target = [*(["controller"] if graph.controller else []), *graph.recorders]
    wanted = {JOINT_STATES: [*readers_of_target, *graph.extra_readers], TARGET: readers_of_target}
    readers = {relative: wanted[relative] for _, relative in topics if wanted.get(relative)}
    arguments = [graph.replay, "--topics", *(name for name, _ in topics), "--remap"]
    arguments += [f"{name}:={relative}" for name, relative in topics]
    arguments += ["--rate", graph.values["replay_rate"], "--wait-for-subscribers"]
    arguments += [f"{topic}:={','.join(names)}" for topic, names in readers.items()]
    # Every state reaches its readers before the player exits and the graph ends.
    arguments += ["--wait-for-all-acked", str(round(REPLAY_ACK_TIMEOUT * 1000)), "--progress-bar-update-rate", "1"]
    if graph.use_sim_time:
        arguments += ["--clock", str(REPLAY_CLOCK_HZ)]
    return replace(graph.node("player", {}, ends_graph=True), arguments=tuple(arguments))


def _visualisation(
    skeleton: Skeleton, joint_names: list[str], namespace: str, use_sim_time: bool, *, remap_description: bool
) -> list[NodeSpec]:
    """robot_state_publisher (TF from joint_states) and rviz2 with the package's configuration."""
    prefix = f"{namespace}/" if namespace else ""
    urdf = skeleton_to_urdf(skeleton, joint_names)
    # The simulator publishes robot_description itself; robot_state_publisher's copy goes aside.
    remappings = (("robot_description", "robot_state_publisher/robot_description"),) if remap_description else ()
    arguments = ["-f", prefix + BASE_FRAME]
    config = rviz_config()
    if config.is_file():
        arguments[:0] = ["-d", str(config)]
    return [
        NodeSpec(
            package="robot_state_publisher",
            executable="robot_state_publisher",
            name="robot_state_publisher",
            namespace=namespace,
            parameters={"robot_description": urdf, "frame_prefix": prefix, "use_sim_time": use_sim_time},
            remappings=remappings,
            optional=True,
        ),
        NodeSpec(
            package="rviz2",
            executable="rviz2",
            name="rviz2",
            namespace=namespace,
            parameters={"use_sim_time": use_sim_time},
            arguments=tuple(arguments),
            optional=True,
        ),
    ]
