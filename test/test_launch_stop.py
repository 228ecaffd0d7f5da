"""A stop whatever its moment: sim.launch.py's handlers with stand-ins for launch, and skelarm-ros launch.

``ros2 launch`` stops the graph with SIGINT (the terminal's Ctrl-C, or its own); a node that gets it in the
first millisecond of its start ends by it (exit code -2), which the launch file takes as the stop it asked
for; a node that starts after a Ctrl-C is sent one; a Ctrl-C raises nothing in the launch process, whenever it
comes (while the launch file loads, while it describes the graph, right after launch spawns a node: asyncio's
task that watches the node goes on, as launch runs it), and one before the graph is handed to launch (while the
file loads, between two loads of it, while it describes the graph) starts nothing; and an
exit code that asyncio lost (255) is read from the process. These run here with stand-in ``launch`` and
``launch_ros`` modules that record what the launch file builds; test_graph.py checks the same handlers with
the real launch where it is installed, and test_ros2_launch.py stops a real ``ros2 launch`` at several
moments, right after each node's spawn among them. ``skelarm-ros launch`` is stopped here right after it
starts its first node and right after its second, deterministically (the Ctrl-C comes from its own output
line): no node starts after it, each started one ends, exit code 0, nothing said but the stop.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import signal
import sys
import types
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_launcher_system import STARTED, alive

from skelarm_ros.cli import launcher
from skelarm_ros.cli.graph import describe
from skelarm_ros.cli.launcher import failure
from skelarm_ros.cli.transport import PROFILES_FILE_VARIABLE, USER_PROFILE_VARIABLES, graph_profile

LAUNCH_FILE = Path(__file__).resolve().parents[1] / "launch" / "sim.launch.py"
NOISE = re.compile(r"Traceback|FATAL|Exception in|Exception ignored|Fatal Python|KeyboardInterrupt|exit code")


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
def launch(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, types.ModuleType]]:
    """Stand-ins for launch and launch_ros in ``sys.modules`` for the test (the real ones, if any, come back).

    The launch file takes the process's SIGINT for good; this test process gets its own handler back after.
    """
    modules = stand_ins()
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    previous = signal.getsignal(signal.SIGINT)
    yield modules
    signal.signal(signal.SIGINT, previous)


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


def ctrl_c() -> None:
    """A Ctrl-C to this process, as the launch process gets it: it must raise nothing once the launch file loaded."""
    try:
        os.kill(os.getpid(), signal.SIGINT)
    except KeyboardInterrupt:
        pytest.fail("a Ctrl-C raised KeyboardInterrupt in the launch process")


def ctrl_c_on_first_use(module: types.ModuleType, attribute: str) -> None:
    """Make the first ``from <module> import <attribute>`` send this process SIGINT, as a Ctrl-C arriving then."""
    value = getattr(module, attribute)
    delattr(module, attribute)

    def module_getattr(name: str) -> Any:
        if name != attribute:
            raise AttributeError(name)
        ctrl_c()
        return value

    module.__getattr__ = module_getattr  # type: ignore[method-assign]


def test_a_ctrl_c_while_the_launch_file_loads_raises_nothing_in_launch_and_starts_nothing(launch) -> None:
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    ctrl_c_on_first_use(launch["launch_ros.actions"], "Node")  # while importing launch_ros (and rclpy with it)
    module = load()  # no KeyboardInterrupt: launch hears the signal through its wake-up descriptor instead
    assert module.interrupted()
    assert signal.getsignal(signal.SIGINT) is module.INTERRUPTS
    assert module.graph_actions(context()) == []


def test_a_ctrl_c_while_the_graph_is_described_raises_nothing_and_starts_nothing(launch, monkeypatch) -> None:
    module = load()
    describing = module.describe

    def describe_interrupted(arguments: dict[str, str]) -> list:
        ctrl_c()
        return describing(arguments)

    monkeypatch.setattr(module, "describe", describe_interrupted)
    assert module.graph_actions(context()) == []
    assert signal.getsignal(signal.SIGINT) is module.INTERRUPTS


def test_a_ctrl_c_once_the_nodes_are_handed_to_launch_raises_nothing_for_the_rest_of_the_launch(launch) -> None:
    module = load()
    assert [type(action).__name__ for action in module.graph_actions(context())].count("Node") == 2
    for _ in range(2):  # a Ctrl-C as launch spawns the nodes, a second one while it stops them
        ctrl_c()
    assert module.interrupted()
    assert signal.getsignal(signal.SIGINT) is module.INTERRUPTS


def test_a_later_load_in_the_same_process_shares_the_handler_and_starts_nothing_after_a_ctrl_c_before_it(
    launch,
) -> None:
    # launch loads an included file more than once (its arguments first), and a launch file may include it twice
    first = load()
    assert first.graph_actions(context(namespace="arm1"))
    ctrl_c()  # between the loads: launch may not have heard it when the later load's graph is asked for
    second = load()
    assert second.INTERRUPTS is first.INTERRUPTS
    assert second.interrupted()
    assert second.graph_actions(context(namespace="arm2")) == []


def test_another_sigint_handler_is_left_alone(launch) -> None:
    heard: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, _frame: heard.append(signum))
    module = load()
    assert module.INTERRUPTS is None
    os.kill(os.getpid(), signal.SIGINT)
    assert heard == [signal.SIGINT]
    assert not module.interrupted()


async def spawn_a_node_with_a_ctrl_c_right_after(pids: list[int]) -> int:
    """What launch's task for a node does, with a Ctrl-C right after the spawn: start it, go on, end it, reap it."""
    process = await asyncio.create_subprocess_exec(sys.executable, "-S", "-c", "import time; time.sleep(60)")
    pids.append(process.pid)
    os.kill(os.getpid(), signal.SIGINT)  # the Ctrl-C, right after the spawn
    await asyncio.sleep(0)  # launch goes on: the node's ProcessStarted event, the wake-up descriptor read
    process.terminate()  # launch stopping the node
    return await process.wait()


def run_as_launch_does(coroutine: Coroutine[Any, Any, int]) -> int:
    """Run a coroutine as launch runs its service: in a loop of its own, ``run_until_complete`` (no asyncio.run)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


def test_a_ctrl_c_right_after_launch_spawns_a_node_leaves_the_task_watching_it_whole(launch) -> None:
    # Python's default handler raises KeyboardInterrupt in the task: it dies with the node running and unwatched
    # (under the real launch: `Task exception was never retrieved`, and `ros2 launch` waiting for ever).
    pids: list[int] = []
    with pytest.raises(KeyboardInterrupt):
        run_as_launch_does(spawn_a_node_with_a_ctrl_c_right_after(pids))
    os.kill(pids[0], signal.SIGKILL)
    os.waitpid(pids[0], 0)
    load()  # the launch file's handler: the task goes on, ends the node and reaps it
    try:
        code = run_as_launch_does(spawn_a_node_with_a_ctrl_c_right_after(pids))
    except KeyboardInterrupt:
        os.kill(pids[1], signal.SIGKILL)
        pytest.fail("the Ctrl-C raised KeyboardInterrupt in launch's task, which left the node running")
    assert code == -signal.SIGTERM
    with pytest.raises(ChildProcessError):  # reaped
        os.waitpid(pids[1], os.WNOHANG)


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


class CtrlCOnStart:
    """``skelarm-ros launch``'s output, when it runs in this process: a Ctrl-C right after its ``count``-th node starts.

    The launcher says ``started <node> (pid N)`` in its own thread right after starting the node, so the Ctrl-C
    comes there, before anything else the launcher does.
    """

    def __init__(self, count: int) -> None:
        self.count = count
        self.lines: list[str] = []
        self.pids: list[int] = []

    def write(self, text: str) -> int:
        for line in text.splitlines():
            self.lines.append(line)
            started = STARTED.match(line)
            if started:
                self.pids.append(int(started[2]))
                if len(self.pids) == self.count:
                    os.kill(os.getpid(), signal.SIGINT)
        return len(text)

    def flush(self) -> None:
        pass


@pytest.mark.slow
@pytest.mark.parametrize("count", [1, 2], ids=["after-the-first", "after-the-second"])
def test_skelarm_ros_launch_stopped_right_after_a_node_starts_starts_no_other_and_stops_the_started_cleanly(
    monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    out = CtrlCOnStart(count)
    monkeypatch.setattr(sys, "stdout", out)
    code = launcher.main(["sim", "mode:=lockstep", "duration:=600"])
    said = "\n".join(out.lines)
    assert code == 0, said
    assert len(out.pids) == count, said  # the simulator and the controller start in turn: none after the Ctrl-C
    assert "[launch] stop requested; stopping the graph" in out.lines, said
    assert not [line for line in out.lines if NOISE.search(line)], said
    assert not [pid for pid in out.pids if alive(pid)], said
