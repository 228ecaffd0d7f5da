"""Bad input, fuzzed: message handlers, bag_to_log and scenario files never crash and never half-apply.

- The simulator's and the controller's handlers (in-process nodes in a private context,
  callbacks called directly) get random JointState, Float64MultiArray and WrenchStamped
  messages: wrong lengths, NaN, infinities, huge values, unknown names, empty arrays,
  stamps in the past. A rejected message changes nothing held or published, and the
  arm's state stays finite (a step that would leave it non-finite halts integration and
  keeps the last finite state).
- ``bag_to_log`` on truncated, byte-flipped and empty bags (sqlite3 and MCAP): exit 0
  with a loadable log (with ``--recover`` on a truncated MCAP: the recorded prefix), or
  exit 1 with one sentence and no output file; never a traceback.
- Scenario files with missing tables, wrong types, unknown controller types and
  zero-mass links: the loaders raise only :class:`ScenarioError` / ``ValueError`` with
  one sentence; the node mains exit 1 with it (a few cases as real processes).
"""

from __future__ import annotations

import contextlib
import copy
import io
import math
import shutil
import subprocess
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import procs
import pytest
import skelarm
from conftest import private_context
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from skelarm.recording import dump_toml

from skelarm_ros.bags.bag_to_log import main as bag_to_log_main
from skelarm_ros.bags.log_to_bag import log_to_bag
from skelarm_ros.control.loop import build_control_loop
from skelarm_ros.sim.conversions import Rejected
from skelarm_ros.sim.engine import ArmEngine, run_controlled
from skelarm_ros.sim.scenario import ScenarioError, load_arm, load_scenario, resolve_scenario
from skelarm_ros.sim.simulation import Simulation

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FILES = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ODD_FLOATS = st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308, 1e-320, 0.0])
VALUES = st.one_of(ODD_FLOATS, st.floats(allow_nan=True, allow_infinity=True), st.floats(-10.0, 10.0))
NAMES = st.lists(st.sampled_from(["j1", "j2", "j3", "shoulder", "", "j1 "]), max_size=4)
ARRAYS = st.lists(VALUES, max_size=4)
STAMP_SEC = st.integers(0, 2**31 - 1)
STAMP_NSEC = st.integers(0, 999_999_999)
FRAMES = st.sampled_from(["", "base", "world", "base "])

ARRAY_MSG = st.tuples(st.just("commands"), ARRAYS)
JOINT_MSG = st.tuples(st.just("joint_commands"), NAMES, ARRAYS, STAMP_SEC, STAMP_NSEC)
WRENCH_MSG = st.tuples(st.just("wrench"), FRAMES, st.tuples(VALUES, VALUES, VALUES), st.tuples(VALUES, VALUES, VALUES))
STEP = st.tuples(st.just("step"), st.integers(1, 20))
SIM_ITEMS = (ARRAY_MSG, JOINT_MSG, WRENCH_MSG, STEP)
SIM_INPUTS = st.lists(st.one_of(*SIM_ITEMS), min_size=1, max_size=25)
# Bytes on a raw subscription: junk, or a good message cut short.
DAMAGED = st.one_of(st.tuples(st.just("junk"), st.binary(max_size=80)), st.tuples(st.just("cut"), st.integers(0, 120)))


def finite(sim: Simulation) -> bool:
    return bool(np.isfinite(sim.engine.q).all() and np.isfinite(sim.engine.dq).all() and math.isfinite(sim.t))


# -- the simulator's core ------------------------------------------------------------------------

REACH = load_arm("reach")


@FUZZ
@given(SIM_INPUTS)
def test_simulation_core_never_applies_a_rejected_message_and_stays_finite(inputs: list[tuple]) -> None:
    sim = Simulation(REACH)
    for item in inputs:
        held, force = sim.held_command(True).copy(), sim.force.copy()
        try:
            if item[0] == "commands":
                sim.hold_command(sim.command_from_array(item[1]))
            elif item[0] == "joint_commands":
                sim.hold_command(sim.command_from_joint_state(item[1], item[2]))
            elif item[0] == "wrench":
                sim.hold_force(sim.wrench_force(item[1], item[2], item[3]))
            else:
                for _ in range(item[1]):
                    before = (sim.engine.q.copy(), sim.engine.dq.copy(), sim.t)
                    if not sim.advance(sim.held_command(True)):
                        assert sim.halted  # only a non-finite step stops it
                        np.testing.assert_array_equal(sim.engine.q, before[0])  # the last finite state is kept
                        np.testing.assert_array_equal(sim.engine.dq, before[1])
                        break
        except Rejected as error:
            assert str(error) and "\n" not in str(error)
            np.testing.assert_array_equal(sim.held_command(True), held)
            np.testing.assert_array_equal(sim.force, force)
        assert np.isfinite(sim.held_command(True)).all() and np.isfinite(sim.force).all()
        assert finite(sim)


# -- the nodes, in-process -------------------------------------------------------------------------

rclpy = pytest.importorskip("rclpy")
from geometry_msgs.msg import PointStamped, WrenchStamped  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from skelarm_ros.nodes.controller import ControllerNode  # noqa: E402
from skelarm_ros.nodes.simulator import SimulatorNode  # noqa: E402


@pytest.fixture(scope="module")
def context():
    with private_context() as ctx:
        yield ctx


@pytest.fixture(scope="module", params=["commands", "joint_commands"])
def simulator(context, request):
    node = SimulatorNode(
        context=context,
        parameter_overrides=[
            Parameter("command_interface", value=request.param),
            Parameter("command_timeout", value=1e6),
            Parameter("markers_rate", value=0.0),
        ],
    )
    node.begin()  # the run starts: ticks step
    yield node
    node.destroy_node()


def joint_state(
    names: list[str], first: list[float], second: list[float], sec: int, nanosec: int, effort: list[float] | None = None
) -> JointState:
    msg = JointState(name=list(names), position=list(first), velocity=list(second))
    msg.effort = list(first if effort is None else effort)
    msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
    return msg


def wrench(frame: str, force: tuple, torque: tuple) -> WrenchStamped:
    msg = WrenchStamped()
    msg.header.frame_id = frame
    msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = force
    msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = torque
    return msg


def damaged_bytes(how: tuple) -> bytes:
    if how[0] == "junk":
        return how[1]
    return serialize_message(joint_state(["j1", "j2"], [0.5, 0.5], [0.0, 0.0], 0, 2_000_000))[: how[1]]


@FUZZ
@given(inputs=st.lists(st.one_of(*SIM_ITEMS, st.tuples(st.just("bytes"), DAMAGED)), min_size=1, max_size=25))
def test_simulator_node_handlers_survive_any_message(simulator: SimulatorNode, inputs: list[tuple]) -> None:
    simulator.on_reset(Trigger.Request(), Trigger.Response())
    sim = simulator.sim
    raw = hasattr(simulator, "command_input")  # its joint_commands subscription takes bytes
    for item in inputs:
        rejected = sum(sim.rejected.values())
        held, force = sim.held_command(True).copy(), sim.force.copy()
        if item[0] == "commands":
            simulator.on_commands(Float64MultiArray(data=item[1]))
        elif item[0] == "joint_commands":
            if raw:  # as the node's raw subscription hands it over
                simulator.command_input.take(serialize_message(joint_state(item[1], [], [], item[3], item[4], item[2])))
        elif item[0] == "bytes":
            if raw:
                simulator.command_input.take(damaged_bytes(item[1]))
        elif item[0] == "wrench":
            simulator.on_wrench(wrench(item[1], item[2], item[3]))
        else:
            for _ in range(item[1]):
                simulator.tick()
        if sum(sim.rejected.values()) > rejected:  # rejected: nothing held changed
            np.testing.assert_array_equal(sim.held_command(True), held)
            np.testing.assert_array_equal(sim.force, force)
        assert finite(sim)


STATE_INPUTS = st.lists(
    st.one_of(
        st.tuples(st.just("state"), NAMES, ARRAYS, ARRAYS, STAMP_SEC, STAMP_NSEC),
        st.tuples(st.just("good"), st.integers(0, 3)),  # a valid state, a few steps after the last good one
        st.tuples(st.just("target"), FRAMES, VALUES, VALUES, VALUES),
        st.tuples(st.just("bytes"), DAMAGED),
    ),
    min_size=1,
    max_size=20,
)


class Capture:
    """Stands in for a publisher, keeping what is published."""

    def __init__(self) -> None:
        self.messages: list[Any] = []

    def publish(self, message: Any) -> None:
        # joint_commands go out as serialized bytes: keep what a subscriber would decode
        self.messages.append(deserialize_message(message, JointState) if isinstance(message, bytes) else message)

    def get_subscription_count(self) -> int:
        return 1


@pytest.fixture(scope="module", params=["commands", "joint_commands"])
def controller(context, request):
    node = ControllerNode(context=context, parameter_overrides=[Parameter("command_interface", value=request.param)])
    node.set_parameters([Parameter("publish_channels", value=False)])
    yield node
    node.destroy_node()


@FUZZ
@given(inputs=STATE_INPUTS)
def test_controller_node_answers_only_good_states_with_finite_commands(
    controller: ControllerNode, inputs: list[tuple]
) -> None:
    capture = Capture()
    controller.command_pub = capture
    good_ns = 0
    for item in inputs:
        published, rejected, failures = len(capture.messages), controller.loop.rejected, controller.failures
        if item[0] == "target":
            controller.on_target(_point(*item[1:]))
            continue
        if item[0] == "bytes":  # damaged bytes on the raw subscription: refused, or a message it decodes to
            data = damaged_bytes(item[1])
            controller.state_input.take(data)
            try:
                msg = deserialize_message(data, JointState)
            except Exception:
                msg = None
        else:
            if item[0] == "good":
                good_ns += (item[1] + 1) * 2_000_000
                msg = joint_state(["j2", "j1"], [0.9, 0.6], [0.0, 0.0], *divmod(good_ns, 1_000_000_000))
            else:
                msg = joint_state(*item[1:])
            controller.state_input.take(serialize_message(msg))  # as the node's raw subscription hands it over
        answered = len(capture.messages) - published
        refused = controller.loop.rejected - rejected + controller.failures - failures
        assert answered + refused == 1  # each state is either answered once or refused with no command
        if answered:
            command = capture.messages[-1]
            values = command.effort if isinstance(command, JointState) else command.data
            assert len(values) == 2 and np.isfinite(values).all()
            if isinstance(command, JointState):
                assert msg is not None and command.header.stamp == msg.header.stamp


def _point(frame: str, x: float, y: float, z: float) -> PointStamped:
    msg = PointStamped()
    msg.header.frame_id = frame
    msg.point.x, msg.point.y, msg.point.z = x, y, z
    return msg


# -- bag_to_log on damaged bags ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def bags(tmp_path_factory) -> dict[str, tuple[Path, np.ndarray]]:
    """One short recorded reach per storage, written by log_to_bag, with its q."""
    scenario = load_scenario("reach")
    engine = ArmEngine(scenario.skeleton, scenario.simulator.dt)
    log = run_controlled(engine, scenario.skeleton.clone(), scenario.controller, duration=0.3)
    made = {}
    for storage in ("sqlite3", "mcap"):
        folder = tmp_path_factory.mktemp(storage) / "bag"
        log_to_bag(log, folder, storage=storage)
        made[storage] = (folder, log.channel("q"))
    return made


def reference_positions(path: Path, recover: bool, joints: tuple[str, ...] = ("j1", "j2")) -> np.ndarray:
    """The joint_states positions of a bag by joint name, each message decoded by rosbags itself (no layout reader).

    A joint a (damaged) message does not name is NaN, as bag_to_log masks it.
    """
    from skelarm_ros.bags.reader import open_bag

    rows = []
    with open_bag(path, recover=recover) as bag:
        for _topic, msgtype, _log_time, data in bag.raw_messages(bag.decodable(["/joint_states"])):
            message = bag.decode("/joint_states", msgtype, data)
            if message is not None:
                where = dict(zip(message.name, message.position, strict=False))
                rows.append([where.get(name, np.nan) for name in joints])
    return np.array(rows, dtype=np.float64).reshape(-1, len(joints))


DAMAGE = st.one_of(
    st.tuples(st.just("truncate"), st.floats(0.0, 0.999)),
    st.tuples(st.just("flip"), st.lists(st.tuples(st.floats(0.0, 0.999), st.integers(1, 255)), min_size=1, max_size=8)),
    st.tuples(st.just("empty")),
)


def damage(path: Path, how: tuple) -> None:
    data = bytearray(path.read_bytes())
    if how[0] == "truncate":
        data = data[: int(len(data) * how[1])]
    elif how[0] == "flip":
        for where, mask in how[1]:
            data[int(len(data) * where)] ^= mask
    else:
        data = bytearray()
    path.write_bytes(bytes(data))


@FILES
@given(how=DAMAGE, storage=st.sampled_from(["sqlite3", "mcap"]), bare=st.booleans(), recover=st.booleans())
@example(how=("truncate", 0.0001), storage="mcap", bare=False, recover=False)  # rosbags raised a bare TypeError
@example(how=("flip", [(0.25, 128)]), storage="mcap", bare=False, recover=False)  # ... and an OverflowError
@example(how=("truncate", 0.999), storage="sqlite3", bare=False, recover=False)  # a page from the middle lost
@example(how=("flip", [(0.0078125, 128)]), storage="mcap", bare=True, recover=True)  # garbage in a channel record
@example(how=("flip", [(0.9822170403834642, 32)]), storage="mcap", bare=False, recover=False)  # NUL in a definition
@example(how=("flip", [(0.982070229295343, 1)]), storage="mcap", bare=False, recover=False)  # a field renamed
@example(how=("flip", [(0.20754327086157434, 2)]), storage="sqlite3", bare=False, recover=False)  # Time's field renamed
def test_bag_to_log_on_damaged_bags_gives_a_sentence_or_a_correct_log(bags, how, storage, bare, recover) -> None:
    source, q = bags[storage]
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work) / "bag"
        shutil.copytree(source, folder)
        (storage_file,) = [p for p in folder.iterdir() if p.suffix in (".db3", ".mcap")]
        damage(storage_file, how)
        out = Path(work) / "out.sklog.npz"
        args = [str(storage_file if bare else folder), "-o", str(out), *(["--recover"] if recover else [])]
        stderr, stdout = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
            code = bag_to_log_main(args)  # any exception here is a traceback: the test fails
        if code != 0:
            assert code == 1
            lines = [line for line in stderr.getvalue().splitlines() if line.startswith("bag_to_log: error:")]
            assert len(lines) == 1, stderr.getvalue()
            assert not out.exists()
            assert not [p for p in Path(work).iterdir() if p.name.startswith(".out")]  # no temporary left
            return
        log = skelarm.StateLog.load(out)
        assert log.channel("q").shape[1] == 2
        got = log.channel("q")
        if how[0] == "flip":  # every row is what rosbags' own decoder reads from the (damaged) message
            np.testing.assert_array_equal(got, reference_positions(storage_file if bare else folder, recover))
        if how[0] == "truncate" and storage == "mcap":  # what was read is the recording's beginning, exactly
            assert len(got) <= len(q)
            np.testing.assert_array_equal(got, q[: len(got)])
        elif how[0] == "truncate":  # sqlite3 keeps rows in pages: a cut loses some, the rest are exact, in order
            rows = iter(q.tolist())
            assert all(any(row == kept for kept in rows) for row in got.tolist())


# -- scenario files ---------------------------------------------------------------------------------

BASE = tomllib.loads(resolve_scenario("reach").read_text(encoding="utf-8"))
WRONG = st.sampled_from(["heavy", True, [1, 2, 3], {"a": 1}, -1.0, 0.0, 0, math.nan, 1e308])
PLACES = [
    ("skeleton",),
    ("skeleton", "link"),
    ("skeleton", "link", 0, "mass"),
    ("skeleton", "link", 1, "length"),
    ("skeleton", "link", 0, "inertia"),
    ("skeleton", "link", 0, "com"),
    ("skeleton", "link", 1, "limits"),
    ("skeleton", "base_length"),
    ("initial",),
    ("initial", "q"),
    ("task",),
    ("task", "target"),
    ("task", "duration"),
    ("task", "type"),
    ("simulator",),
    ("simulator", "dt"),
    ("simulator", "enforce_limits"),
    ("controller",),
    ("controller", "type"),
    ("controller", "kp"),
]
SHARED = {"a": 1}  # one object drawn twice, as sampled_from draws its values
EDITS = st.lists(
    st.one_of(
        st.tuples(st.just("drop"), st.sampled_from(PLACES)),
        st.tuples(st.just("set"), st.sampled_from(PLACES), WRONG),
        st.tuples(st.just("controller"), st.sampled_from(["nonexistent", "", "JOINT_PD", "mpc"])),
        st.tuples(st.just("zero_mass"), st.integers(0, 1)),
    ),
    min_size=1,
    max_size=3,
)


def edited(edits: list[tuple]) -> dict[str, Any]:
    config = copy.deepcopy(BASE)
    for edit in edits:
        if edit[0] == "controller":
            if isinstance(config.setdefault("controller", {}), dict):  # an earlier edit may have made it a value
                config["controller"]["type"] = edit[1]
            continue
        if edit[0] == "zero_mass":
            with contextlib.suppress(KeyError, IndexError, TypeError):
                config["skeleton"]["link"][edit[1]]["mass"] = 0.0
            continue
        *path, last = edit[1]
        parent: Any = config
        try:
            for key in path:
                parent = parent[key]
            if edit[0] == "drop":
                del parent[last]
            else:  # a copy: hypothesis hands the same list or table to every edit and example that draws it
                parent[last] = copy.deepcopy(edit[2])
        except (KeyError, IndexError, TypeError):
            continue
    return config


def write_scenario(folder: Path, config: dict[str, Any]) -> Path | None:
    try:
        text = dump_toml(config)
    except (TypeError, ValueError):
        return None
    path = folder / "scenario.toml"
    path.write_text(text, encoding="utf-8")
    return path


def check_sentence(error: Exception, path: Path) -> None:
    """One line that names the scenario file it is about."""
    text = str(error)
    assert text and "\n" not in text.strip(), text
    assert str(path) in text, text


@FILES
@given(EDITS)
@example(edits=[("set", ("task", "duration"), 1e308)])  # skelarm raised a bare OverflowError planning it
@example(edits=[("set", ("controller",), "heavy"), ("controller", "nonexistent")])  # the table made a value first
@example(edits=[("set", ("task",), SHARED), ("set", ("task", "target"), SHARED)])  # one table set inside itself
def test_scenario_loaders_fail_with_one_sentence(edits: list[tuple]) -> None:
    config = edited(edits)
    with tempfile.TemporaryDirectory() as work:
        path = write_scenario(Path(work), config)
        if path is None:
            return
        try:
            arm = load_arm(path)
        except ScenarioError as error:
            check_sentence(error, path)
        else:
            links = config["skeleton"]["link"]
            assert all(link["mass"] > 0.0 for link in links)  # a zero-mass link never loads
            Simulation(arm)  # what loads, simulates
        try:
            build_control_loop(path)
        except (ScenarioError, ValueError) as error:  # the controller node's start-up errors
            check_sentence(error, path)


REPRESENTATIVE = {
    "no-controller-table": ({"drop": ("controller",)}, "no [controller] table"),
    "unknown-controller": ({"type": "nonexistent"}, "nonexistent"),
    "zero-mass": ({"mass": 0.0}, "positive mass"),
    "mass-is-text": ({"mass": "heavy"}, "must be a number"),
}


def representative(folder: Path, case: str) -> Path:
    config = copy.deepcopy(BASE)
    change = REPRESENTATIVE[case][0]
    if "drop" in change:
        del config[change["drop"][0]]
    if "type" in change:
        config["controller"]["type"] = change["type"]
    if "mass" in change:
        config["skeleton"]["link"][0]["mass"] = change["mass"]
    path = write_scenario(folder, config)
    assert path is not None
    return path


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(REPRESENTATIVE))
@pytest.mark.parametrize("executable", ["simulator", "controller"])
def test_nodes_exit_1_with_one_sentence_on_a_bad_scenario(tmp_path: Path, case: str, executable: str) -> None:
    path = representative(tmp_path, case)
    words = REPRESENTATIVE[case][1]
    if executable == "simulator" and case in ("no-controller-table", "unknown-controller"):
        words = None  # the simulator needs only the robot: it starts (and is ended here)
    log = tmp_path / "node.log"
    process = procs.start_node(executable, log, {"scenario": path})
    try:
        started = "simulating 2 joints"
        deadline = time.monotonic() + 60.0
        while process.poll() is None and started not in log.read_text(errors="replace"):
            assert time.monotonic() < deadline, log.read_text(errors="replace")
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=0.1)  # ends early when the node exits
    finally:
        code = procs.end(process)
    output = log.read_text(errors="replace")
    if words is None:
        assert started in output, output  # the robot part is fine: it starts
        return
    assert code == 1, output
    assert words in output and str(path) in output, output
    assert "Traceback" not in output


@pytest.mark.slow
@pytest.mark.parametrize(
    ("executable", "parameter"),
    [("simulator", "dt"), ("controller", "dt"), ("force_replay", "dt"), ("recorder", "flush_interval")],
)
def test_nodes_exit_1_with_the_fix_for_an_integer_given_to_a_double(
    tmp_path: Path, executable: str, parameter: str
) -> None:
    log = tmp_path / "node.log"
    process = procs.start_node(executable, log, {parameter: 1})
    try:
        code = process.wait(timeout=60.0)
    finally:
        procs.end(process)
    output = log.read_text(errors="replace")
    assert code == 1, output
    assert (
        f"[{executable}]: parameter {parameter} is a floating-point number; write 1.0 instead of 1 (see docs/" in output
    )
    assert "Traceback" not in output and "FATAL" not in output
    assert "Traceback" not in output


def test_parameter_problem_names_the_parameter_and_the_fix() -> None:
    from rclpy.exceptions import InvalidParameterTypeException, ParameterException
    from rclpy.parameter import Parameter as RclpyParameter

    from skelarm_ros.nodes.parameters import parameter_problem

    wrong = InvalidParameterTypeException(RclpyParameter("mode", value=3), RclpyParameter.Type.STRING)
    assert parameter_problem(wrong, "docs/simulator.md") == (
        "parameter mode must be of type STRING, got INTEGER '3'; see docs/simulator.md for the accepted values"
    )
    other = ParameterException("something else", "x")
    assert parameter_problem(other, "docs/x.md").startswith("a parameter is not valid (")


def test_a_shutdown_a_signal_already_made_is_not_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import rclpy

    from skelarm_ros.nodes import spinning

    def raced() -> None:
        raise RuntimeError("failed to shutdown: rcl_shutdown already called on the given context")

    monkeypatch.setattr(rclpy, "try_shutdown", raced)
    monkeypatch.setattr(rclpy, "ok", lambda: False)  # the signal handler's shutdown landed in between
    spinning.try_shutdown()
    monkeypatch.setattr(rclpy, "ok", lambda: True)  # a context still up that cannot shut down is an error
    with pytest.raises(RuntimeError, match="rcl_shutdown"):
        spinning.try_shutdown()


def test_damage_changes_the_file(tmp_path: Path) -> None:
    path = tmp_path / "x.bin"
    path.write_bytes(bytes(range(200)))
    damage(path, ("flip", [(0.5, 1)]))
    assert path.read_bytes()[100] == 101
    damage(path, ("truncate", 0.25))
    assert len(path.read_bytes()) == 50
    damage(path, ("empty",))
    assert path.read_bytes() == b""
