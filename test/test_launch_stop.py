"""A stop through sim.launch.py, whatever its moment: the launch file's handlers, with stand-ins for launch.

``ros2 launch`` stops the graph with SIGINT (the terminal's Ctrl-C, or its own); a node that gets it in the
first milliseconds of its interpreter ends by it (exit code -2), which the launch file takes as the stop it
asked for; a node that starts after a Ctrl-C is sent one; a Ctrl-C while the launch file loads raises nothing
in the launch process and starts nothing; and an exit code that asyncio lost (255) is read from the process.
These run here with stand-in ``launch`` and ``launch_ros`` modules that record what the launch file builds;
test_graph.py checks the same handlers with the real launch where it is installed, and test_ros2_launch.py
stops a real ``ros2 launch`` at several moments.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from skelarm_ros.cli.graph import describe
from skelarm_ros.cli.launcher import failure
from skelarm_ros.cli.transport import PROFILES_FILE_VARIABLE, USER_PROFILE_VARIABLES, graph_profile

LAUNCH_FILE = Path(__file__).resolve().parents[1] / "launch" / "sim.launch.py"


class Recorded:
    """A stand-in for a launch class: it keeps what it was built with, and equals one built the same way."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args
        self.kwargs = kwargs

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and (other.args, other.kwargs) == (self.args, self.kwargs)

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.args}, {self.kwargs})"


def stand_ins() -> dict[str, types.ModuleType]:
    """The modules sim.launch.py imports from launch and launch_ros, as stand-ins."""
    names = {
        "launch": ["LaunchContext", "LaunchDescription"],
        "launch.actions": ["DeclareLaunchArgument", "EmitEvent", "LogInfo", "OpaqueFunction", "RegisterEventHandler"],
        "launch.event_handlers": ["OnProcessExit", "OnProcessStart", "OnShutdown"],
        "launch.events": ["Shutdown"],
        "launch.events.process": ["ProcessExited", "ProcessStarted", "SignalProcess"],
        "launch_ros": [],
        "launch_ros.actions": ["Node"],
    }
    modules = {}
    for module_name, classes in names.items():
        module = types.ModuleType(module_name)
        for class_name in classes:
            setattr(module, class_name, type(class_name, (Recorded,), {}))
        modules[module_name] = module
    modules["launch.events"].matches_action = lambda action: ("matches_action", action)
    return modules


@pytest.fixture
def launch(monkeypatch: pytest.MonkeyPatch) -> dict[str, types.ModuleType]:
    """Stand-ins for launch and launch_ros in ``sys.modules`` for the test (the real ones, if any, come back)."""
    modules = stand_ins()
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    return modules


def load() -> types.ModuleType:
    """sim.launch.py as ``ros2 launch`` loads it: a module run from its file."""
    spec = importlib.util.spec_from_file_location("sim_launch", LAUNCH_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def context(*, stopping: bool = False, noninteractive: bool = False, **arguments: str) -> types.SimpleNamespace:
    """A launch context: the launch configurations, whether launch stops, whether it has a terminal."""
    return types.SimpleNamespace(
        launch_configurations=dict(arguments), is_shutdown=stopping, noninteractive=noninteractive
    )


class Process:
    """What launch's action holds of a started process: its asyncio transport, which holds the ``Popen``."""

    def __init__(self, returncode: int | None) -> None:
        popen = types.SimpleNamespace(returncode=returncode)
        self._subprocess_transport = types.SimpleNamespace(
            get_extra_info=lambda key: popen if key == "subprocess" else None
        )


def exited(launch: dict[str, types.ModuleType], returncode: int, *, action: object = None) -> Any:
    """A ProcessExited event as launch makes it (its fields are attributes)."""
    event = launch["launch.events.process"].ProcessExited()
    event.returncode = returncode
    event.action = action
    return event


def exit_handler(module: types.ModuleType, node: str, **arguments: str) -> Callable[..., Any]:
    (spec,) = [spec for spec in describe(arguments) if spec.name == node]
    return module.on_exit(spec)


@pytest.mark.parametrize("node", ["simulator", "controller"])
def test_a_node_that_ends_by_the_stop_signal_once_the_graph_stops_ended_cleanly(launch, node: str) -> None:
    handle = exit_handler(load(), node, duration="2.0", mode="lockstep")
    assert handle(exited(launch, -signal.SIGINT), context(stopping=True)) is None


def test_a_node_that_ends_otherwise_fails_the_launch_naming_it(launch) -> None:
    module = load()
    handle = exit_handler(module, "controller", namespace="arm1")
    cases = [
        (-signal.SIGINT, False, failure("arm1/controller", -signal.SIGINT)),  # a SIGINT launch did not send
        (-signal.SIGTERM, True, failure("arm1/controller", -signal.SIGTERM, running=False)),  # needed launch's SIGTERM
        (1, False, failure("arm1/controller", 1)),
        (1, True, failure("arm1/controller", 1, running=False)),
    ]
    for code, stopping, sentence in cases:
        with pytest.raises(module.NodeFailed) as raised:
            handle(exited(launch, code), context(stopping=stopping))
        assert str(raised.value) == sentence


def test_the_simulators_clean_end_stops_the_graph(launch) -> None:
    module = load()
    events = launch["launch.events"]
    actions = launch["launch.actions"]
    simulator = exit_handler(module, "simulator", namespace="arm1", duration="2.0", mode="lockstep")
    assert simulator(exited(launch, 0), context()) == [
        actions.EmitEvent(event=events.Shutdown(reason="arm1/simulator finished"))
    ]
    assert exit_handler(module, "controller")(exited(launch, 0), context()) is None


def test_an_exit_code_asyncio_lost_is_read_from_the_process(launch) -> None:
    # launch signalling a node that was just ending takes its status first; asyncio then reports 255
    module = load()
    handle = exit_handler(module, "controller")
    assert module.exit_code(exited(launch, 255, action=Process(-signal.SIGINT))) == -signal.SIGINT
    assert handle(exited(launch, 255, action=Process(-signal.SIGINT)), context(stopping=True)) is None
    assert handle(exited(launch, 255, action=Process(0)), context(stopping=True)) is None
    assert module.exit_code(exited(launch, 255, action=Process(255))) == 255  # a node that did exit 255
    assert module.exit_code(exited(launch, 3, action=object())) == 3  # no transport: launch's code
    with pytest.raises(module.NodeFailed, match="controller ended with exit code 255"):
        handle(exited(launch, 255, action=Process(255)), context(stopping=True))


def registered(action: Recorded) -> Recorded:
    """The event handler a RegisterEventHandler stand-in was built with."""
    return action.args[0] if action.args else action.kwargs["event_handler"]


def test_a_node_that_starts_after_a_ctrl_c_is_sent_the_signal_the_terminal_sent_before_it_was_there(launch) -> None:
    module = load()
    events = launch["launch.events"]
    process = launch["launch.events.process"]
    actions = module.graph_actions(context())
    handlers = [registered(action) for action in actions if type(action).__name__ == "RegisterEventHandler"]
    (on_shutdown,) = [h.kwargs["on_shutdown"] for h in handlers if type(h).__name__ == "OnShutdown"]
    starts = [
        (h.kwargs["target_action"], h.kwargs["on_start"]) for h in handlers if type(h).__name__ == "OnProcessStart"
    ]
    nodes = [action for action in actions if type(action).__name__ == "Node"]
    assert [node for node, _ in starts] == nodes == nodes[:2]  # the simulator and the controller, one handler each

    def started(node: Recorded) -> Any:
        event = process.ProcessStarted()
        event.action = node
        return event

    for node, on_start in starts:  # before any stop: nothing to send
        assert on_start(started(node), context()) is None
    on_shutdown(types.SimpleNamespace(due_to_sigint=True), context(stopping=True))
    for node, on_start in starts:
        signal_it = process.SignalProcess(signal_number=signal.SIGINT, process_matcher=events.matches_action(node))
        assert on_start(started(node), context(stopping=True)) == [launch["launch.actions"].EmitEvent(event=signal_it)]
        # without a terminal launch sends each node SIGINT itself
        assert on_start(started(node), context(stopping=True, noninteractive=True)) is None


def test_a_stop_for_another_reason_sends_a_starting_node_nothing_more(launch) -> None:
    module = load()
    actions = module.graph_actions(context(duration="1.0", mode="lockstep"))
    handlers = [registered(action) for action in actions if type(action).__name__ == "RegisterEventHandler"]
    (on_shutdown,) = [h.kwargs["on_shutdown"] for h in handlers if type(h).__name__ == "OnShutdown"]
    on_shutdown(types.SimpleNamespace(due_to_sigint=False), context(stopping=True))  # the simulator finished
    for handler in handlers:
        if type(handler).__name__ == "OnProcessStart":
            event = launch["launch.events.process"].ProcessStarted()
            event.action = handler.kwargs["target_action"]
            assert handler.kwargs["on_start"](event, context(stopping=True)) is None  # launch sends SIGINT itself


def test_nothing_starts_once_the_launch_stops(launch) -> None:
    assert load().graph_actions(context(stopping=True)) == []


def ctrl_c_on_first_use(module: types.ModuleType, attribute: str) -> None:
    """Make the first ``from <module> import <attribute>`` send this process SIGINT, as a Ctrl-C arriving then."""
    value = getattr(module, attribute)
    delattr(module, attribute)

    def module_getattr(name: str) -> Any:
        if name != attribute:
            raise AttributeError(name)
        os.kill(os.getpid(), signal.SIGINT)
        return value

    module.__getattr__ = module_getattr  # type: ignore[method-assign]


def test_a_ctrl_c_while_the_launch_file_loads_raises_nothing_in_launch_and_starts_nothing(launch) -> None:
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    ctrl_c_on_first_use(launch["launch_ros.actions"], "Node")  # while importing launch_ros (and rclpy with it)
    module = load()  # no KeyboardInterrupt: launch hears the signal through its wake-up descriptor instead
    assert module.LOADING.interrupted
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert module.graph_actions(context()) == []


def test_a_ctrl_c_while_the_graph_is_described_raises_nothing_and_starts_nothing(launch, monkeypatch) -> None:
    module = load()
    describing = module.describe

    def describe_interrupted(arguments: dict[str, str]) -> list:
        os.kill(os.getpid(), signal.SIGINT)
        return describing(arguments)

    monkeypatch.setattr(module, "describe", describe_interrupted)
    assert module.graph_actions(context()) == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_another_sigint_handler_is_left_alone(launch) -> None:
    module = load()
    heard: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: heard.append(signum))
    try:
        noted = module.Stops()
        with module.interrupts_held(noted):
            os.kill(os.getpid(), signal.SIGINT)
        assert (heard, noted.interrupted) == ([signal.SIGINT], False)
    finally:
        signal.signal(signal.SIGINT, previous)


def test_every_node_gets_the_graphs_fast_dds_profile_as_skelarm_ros_launch_gives_it(launch, monkeypatch) -> None:
    for variable in (*USER_PROFILE_VARIABLES, "RMW_IMPLEMENTATION"):
        monkeypatch.delenv(variable, raising=False)
    module = load()
    nodes = [action for action in module.graph_actions(context()) if type(action).__name__ == "Node"]
    assert nodes
    assert all(node.kwargs["additional_env"] == {PROFILES_FILE_VARIABLE: str(graph_profile())} for node in nodes)
    monkeypatch.setenv(USER_PROFILE_VARIABLES[0], "/home/me/my_profile.xml")  # a user's own: left alone
    nodes = [action for action in module.graph_actions(context()) if type(action).__name__ == "Node"]
    assert all(node.kwargs["additional_env"] == {} for node in nodes)
