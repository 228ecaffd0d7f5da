"""The simulator node in-process: parameters, topics, services and both step loops, callbacks called directly."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rclpy
from geometry_msgs.msg import WrenchStamped
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from stand_ins import StandIn
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import SetBool, Trigger
from waiting import spin_wait, wait_until

from skelarm_ros.interface import seconds_to_stamp
from skelarm_ros.nodes import simulator
from skelarm_ros.nodes.simulator import SimulatorNode, main
from skelarm_ros.sim.engine import ArmEngine
from skelarm_ros.sim.scenario import ScenarioError, load_arm, resolve_scenario
from skelarm_ros.sim.simulation import COMMAND, STALE_COMMAND, WRENCH, Simulation

pytestmark = pytest.mark.ros


class Recorded:
    """Stand-ins for the node's state, tip and clock publishers: what it publishes is kept, not sent."""

    def __init__(self, *, states: bool = True) -> None:
        self.state = StandIn("/joint_states", readers=0, keep=_copy, msg_type=JointState)
        self.tip = StandIn("/tip", keep=lambda msg: (msg.header.stamp.sec, msg.point.x, msg.point.y))  # read: sent
        self.clock = StandIn("/clock", keep=lambda msg: (msg.clock.sec, msg.clock.nanosec))
        self.stand_ins = {"tip": self.tip, "/clock": self.clock}
        if states:
            self.stand_ins["joint_states"] = self.state

    @property
    def states(self) -> list[JointState]:
        return self.state.messages

    @property
    def tips(self) -> list[Any]:
        return self.tip.messages

    @property
    def clocks(self) -> list[Any]:
        return self.clock.messages


def _copy(msg: JointState | bytes) -> JointState:
    if isinstance(msg, bytes):  # joint_states go out serialized
        return deserialize_message(msg, JointState)
    out = JointState(name=list(msg.name), position=list(msg.position), velocity=list(msg.velocity))
    out.effort = list(msg.effort)
    out.header.stamp.sec, out.header.stamp.nanosec = msg.header.stamp.sec, msg.header.stamp.nanosec
    return out


def make(context: rclpy.Context, stand_ins: dict[str, Any] | None = None, **parameters: Any) -> SimulatorNode:
    overrides = [Parameter(name, value=value) for name, value in parameters.items()]
    return SimulatorNode(context=context, parameter_overrides=overrides, stand_ins=stand_ins)


def recorded(context: rclpy.Context, **parameters: Any) -> tuple[SimulatorNode, Recorded]:
    """A simulator whose states, tips and clock messages are kept (:class:`Recorded`)."""
    out = Recorded()
    return make(context, out.stand_ins, **parameters), out


def offline_engine() -> ArmEngine:
    arm = load_arm(None)
    return ArmEngine(arm.skeleton, arm.dt, grav_vec=arm.grav_vec, enforce_limits=arm.enforce_limits)


def command(values: list[float]) -> Float64MultiArray:
    return Float64MultiArray(data=values)


def fields(names: list[str], efforts: list[float], stamp_ns: int = 0) -> tuple[Any, ...]:
    """The fields of a joint_commands message, as the node's raw input hands them on."""
    sec, nanosec = divmod(stamp_ns, 1_000_000_000)
    return names, [], [], efforts, sec, nanosec


def wrench(frame: str = "base", force: tuple[float, float, float] = (1.0, 0.0, 0.0), tz: float = 0.0) -> WrenchStamped:
    msg = WrenchStamped()
    msg.header.frame_id = frame
    msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = force
    msg.wrench.torque.z = tz
    return msg


def test_parameters_have_descriptors_and_structural_ones_are_read_only(context: rclpy.Context) -> None:
    node = make(context)
    try:
        read_only = {"scenario", "dt", "joint_names", "mode", "command_interface", "publish_clock"}
        read_only |= {"real_time_factor", "duration", "wait_for_wrench"}
        tunable = {"command_timeout", "effort_limits", "wrench_tolerance", "lockstep_timeout"}
        for name in read_only | tunable:
            descriptor = node.describe_parameter(name)
            assert descriptor.description, name
            assert descriptor.read_only == (name in read_only), name
        result = node.set_parameters([Parameter("mode", value="lockstep")])[0]
        assert not result.successful
    finally:
        node.destroy_node()


def test_tunable_parameters_are_validated_and_applied_live(context: rclpy.Context) -> None:
    node = make(context)
    try:
        bad = node.set_parameters([Parameter("command_timeout", value=0.0)])[0]
        assert not bad.successful and "command_timeout must be a positive" in bad.reason
        assert not node.set_parameters([Parameter("command_timeout", value=-1.0)])[0].successful
        bad = node.set_parameters([Parameter("effort_limits", value=[1.0, 2.0, 3.0])])[0]
        assert not bad.successful and "one limit per joint" in bad.reason
        assert node.set_parameters([Parameter("command_timeout", value=0.25)])[0].successful
        assert node.run.command_timeout == 0.25
        assert node.set_parameters([Parameter("effort_limits", value=[1.0, 2.0])])[0].successful
        np.testing.assert_array_equal(node.sim.effort_limits, [1.0, 2.0])
        assert node.set_parameters([Parameter("wrench_tolerance", value=0.5)])[0].successful
        assert node.sim.wrench_tolerance == 0.5
        assert node.set_parameters([Parameter("lockstep_timeout", value=2.0)])[0].successful
        assert node.run.lockstep_timeout == 2.0
    finally:
        node.destroy_node()


def test_a_set_with_one_bad_parameter_changes_nothing(context: rclpy.Context) -> None:
    node = make(context)
    try:
        result = node.set_parameters_atomically(
            [Parameter("effort_limits", value=[1.0, 2.0]), Parameter("command_timeout", value=-1.0)]
        )
        assert not result.successful
        assert result.reason == "parameter command_timeout must be a positive number (s), got -1.0"
        assert node.sim.effort_limits is None and node.run.command_timeout == 0.5
        assert node.get_parameter_or("effort_limits").value is None  # not set: the set was refused whole
    finally:
        node.destroy_node()


def test_lockstep_needs_joint_commands(context: rclpy.Context) -> None:
    with pytest.raises(ValueError, match="set command_interface:=joint_commands"):
        make(context, mode="lockstep")


def test_bad_scenario_and_joint_names_raise_one_sentence(context: rclpy.Context, tmp_path) -> None:
    with pytest.raises(ScenarioError, match="does not exist"):
        make(context, scenario=str(tmp_path / "missing.toml"))
    broken = tmp_path / "broken.toml"
    broken.write_text("[skeleton\n")
    with pytest.raises(ScenarioError, match="is not valid TOML"):
        make(context, scenario=str(broken))
    with pytest.raises(ValueError, match="joint_names has 3 names"):
        make(context, joint_names=["a", "b", "c"])


def test_main_exits_1_with_the_sentence_on_a_missing_scenario(capfd: pytest.CaptureFixture[str], tmp_path) -> None:
    missing = tmp_path / "gone.toml"
    assert main(["simulator", "--ros-args", "-p", f"scenario:={missing}"]) == 1
    err = capfd.readouterr().err
    assert f"scenario file '{missing}' does not exist" in err
    assert "Traceback" not in err
    assert main(["simulator", "--ros-args", "-p", "dt:=-1.0"]) == 1
    err = capfd.readouterr().err
    assert "[simulator]: parameter dt must be zero or a positive number (s), got -1.0\n" in err
    assert "Traceback" not in err


def test_realtime_ticks_apply_the_held_command(context: rclpy.Context) -> None:
    node, out = recorded(context, effort_limits=[1.0, 10.0])
    try:
        node.watch()  # no start condition: the run starts and publishes the initial state
        assert len(out.states) == 1
        first = out.states[0]
        assert (first.header.stamp.sec, first.header.stamp.nanosec) == (0, 0)
        assert list(first.effort) == [0.0, 0.0]
        assert list(first.name) == ["j1", "j2"]
        node.on_commands(command([5.0, -2.0]))
        for _ in range(5):
            node.tick()
        engine = offline_engine()
        for k, state in enumerate(out.states[1:], start=1):
            engine.step(np.array([1.0, -2.0]))
            assert list(state.position) == engine.q.tolist()
            assert list(state.velocity) == engine.dq.tolist()
            assert list(state.effort) == [1.0, -2.0]  # clamped to the effort limit
            assert (state.header.stamp.sec, state.header.stamp.nanosec) == seconds_to_stamp(engine.t)
            assert out.clocks[k] == seconds_to_stamp(engine.t)
        tip = node.sim.tip()
        assert out.tips[-1][1:] == (tip[0], tip[1])
    finally:
        node.destroy_node()


def test_command_timeout_gives_zero_torque(context: rclpy.Context) -> None:
    node, out = recorded(context, command_timeout=0.01)
    clock = [50.0]
    node.now = lambda: clock[0]  # type: ignore[method-assign]
    try:
        node.watch()
        node.on_commands(command([1.0, 1.0]))
        clock[0] += 0.02  # the held command ages past the 10 ms timeout
        node.tick()
        assert list(out.states[-1].effort) == [0.0, 0.0]
        node.on_commands(command([1.0, 1.0]))
        node.tick()
        assert list(out.states[-1].effort) == [1.0, 1.0]
    finally:
        node.destroy_node()


def test_rejected_messages_are_counted_and_not_applied(context: rclpy.Context) -> None:
    node, out = recorded(context)
    try:
        node.watch()
        node.on_commands(command([0.5, 0.5]))
        node.on_commands(command([1.0]))
        node.on_commands(command([math.nan, 1.0]))
        node.on_commands(command([math.inf, 1.0]))
        node.on_wrench(wrench(frame="tool"))
        node.on_wrench(wrench(force=(1.0, 0.0, 3.0)))
        node.on_wrench(wrench(tz=0.2))
        assert node.sim.rejected[COMMAND] == 3
        assert node.sim.rejected[WRENCH] == 3
        node.tick()
        assert list(out.states[-1].effort) == [0.5, 0.5]
        np.testing.assert_array_equal(node.sim.force, [0.0, 0.0])
        node.on_wrench(wrench(force=(2.0, 3.0, 0.0)))
        np.testing.assert_array_equal(node.sim.force, [2.0, 3.0])
    finally:
        node.destroy_node()


def test_joint_commands_by_name_and_unknown_names_rejected(context: rclpy.Context) -> None:
    node, out = recorded(context, command_interface="joint_commands", joint_names=["shoulder", "elbow"])
    try:
        node.watch()
        node.on_joint_command(*fields(["elbow", "shoulder"], [2.0, 1.0]))
        node.on_joint_command(*fields(["elbow", "wrist"], [2.0, 1.0]))
        assert node.sim.rejected[COMMAND] == 1
        node.tick()
        assert list(out.states[-1].name) == ["shoulder", "elbow"]
        assert list(out.states[-1].effort) == [1.0, 2.0]
    finally:
        node.destroy_node()


def test_a_servo_arms_goals_are_taken_on_its_topic_or_from_the_position_field(
    context: rclpy.Context, tmp_path: Path
) -> None:
    servo = tmp_path / "servo.toml"
    servo.write_text(resolve_scenario("reach").read_text() + '\n[driver]\ninterface = "position"\nservo_kp = 40.0\n')
    q0 = load_arm(str(servo)).skeleton.q.tolist()
    for interface in ("commands", "joint_commands"):
        node, out = recorded(context, scenario=str(servo), command_interface=interface, joint_names=["a", "b"])
        try:
            assert node.command_sub.topic_name == (
                "/position_controller/commands" if interface == "commands" else "/joint_commands"
            )
            node.watch()
            goal = [q0[0] + 0.01, q0[1] - 0.02]
            if interface == "commands":
                node.on_commands(command(goal))
            else:
                node.on_joint_command(["b", "a"], [goal[1], goal[0]], [], [9.0, 9.0], 0, 0)  # the effort is no goal
            node.tick()
            np.testing.assert_allclose(out.states[-1].effort, [0.4, -0.8], rtol=1e-12)  # servo_kp * (goal - q)
        finally:
            node.destroy_node()


def test_pause_and_reset_services(context: rclpy.Context) -> None:
    node, out = recorded(context)
    try:
        node.watch()
        node.on_commands(command([1.0, 1.0]))
        for _ in range(3):
            node.tick()
        paused = node.on_pause(SetBool.Request(data=True), SetBool.Response())
        assert paused.success and "paused at stamp 0.006000000 s" in paused.message
        count = len(out.states)
        node.tick()
        assert len(out.states) == count
        resumed = node.on_pause(SetBool.Request(data=False), SetBool.Response())
        assert resumed.success and "resumed" in resumed.message
        node.tick()
        assert node.sim.steps == 4
        reset = node.on_reset(Trigger.Request(), Trigger.Response())
        assert reset.success
        last = out.states[-1]
        assert (last.header.stamp.sec, last.header.stamp.nanosec) == (0, 0)
        assert list(last.position) == offline_engine().q.tolist()
        assert list(last.effort) == [0.0, 0.0]
    finally:
        node.destroy_node()


def test_non_finite_state_stops_integrating_and_stays_up(context: rclpy.Context) -> None:
    node, out = recorded(context)
    try:
        node.watch()
        node.on_commands(command([1e308, 1e308]))
        node.tick()
        node.tick()
        assert node.sim.halted
        assert len(out.states) == 1
        assert not node.finished.done()
        node.on_reset(Trigger.Request(), Trigger.Response())
        node.on_commands(command([0.0, 0.0]))
        node.tick()
        assert node.sim.steps == 1
    finally:
        node.destroy_node()


def lockstep(context: rclpy.Context, **parameters: Any) -> tuple[SimulatorNode, Recorded]:
    return recorded(context, mode="lockstep", command_interface="joint_commands", **parameters)


def test_lockstep_waits_for_a_controller(context: rclpy.Context) -> None:
    node, out = lockstep(context)
    try:
        node.watch()
        assert not node.run.started and not out.states
    finally:
        node.destroy_node()


def test_lockstep_starts_despite_a_reader_that_can_never_match(context: rclpy.Context) -> None:
    """A transient-local joint_states reader is never matched; it must not hold the start back."""
    out = Recorded(states=False)  # the real joint_states publisher: its QoS decides who can match
    node = make(context, out.stand_ins, mode="lockstep", command_interface="joint_commands")
    other = rclpy.create_node("other_nodes", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(other)
    try:
        latched = QoSProfile(
            depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
        )
        other.create_subscription(JointState, "joint_states", lambda _: None, latched)
        controller = rclpy.create_node("controller", context=context)
        executor.add_node(controller)
        states: list[JointState] = []
        controller.create_subscription(JointState, "joint_states", states.append, 10)
        controller.create_publisher(JointState, "joint_commands", 10)
        deadline = time.monotonic() + 20.0
        while not node.run.started and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.02)
            node.watch()
        assert node.run.started, node.start_missing()
        while not states and time.monotonic() < deadline:  # step 0's state, on its way to the controller
            executor.spin_once(timeout_sec=0.02)
        assert len(states) == 1
    finally:
        executor.shutdown()
        node.destroy_node()
        other.destroy_node()


def test_lockstep_steps_on_the_command_stamped_with_the_state(context: rclpy.Context) -> None:
    node, out = lockstep(context, duration=0.01)
    try:
        node.begin()
        engine = offline_engine()
        for k in range(5):
            state = out.states[-1]
            stamp = state.header.stamp.sec * 1_000_000_000 + state.header.stamp.nanosec
            assert list(state.position) == engine.q.tolist()
            node.on_joint_command(*fields(["j1", "j2"], [9.0, 9.0], stamp + 1))  # stale: ignored
            assert len(out.states) == k + 1
            tau = [-float(k), 0.5]
            node.on_joint_command(*fields(["j1", "j2"], tau, stamp))
            engine.step(np.array(tau))
        assert node.sim.rejected[STALE_COMMAND] == 5
        assert node.finished.done() and node.finished.result() == 0
        assert len(out.states) == 6
        assert list(out.states[-1].position) == engine.q.tolist()
        assert list(out.states[-1].effort) == [-4.0, 0.5]
    finally:
        node.destroy_node()


DRIVER = "rate = 250\ncommand_delay = 0.004\nencoder_ticks = 4096\nvelocity_noise = 0.01\nseed = 4\n"


def driven(tmp_path: Path, table: str = DRIVER) -> Path:
    """The bundled reach with a [driver] table: 250 Hz (two 2 ms steps a tick), commands a tick late, noise."""
    path = tmp_path / "twin.toml"
    path.write_text(resolve_scenario("reach").read_text() + "\n[driver]\n" + table)
    return path


def test_lockstep_as_the_arms_driver_publishes_its_ticks_and_steps_the_arm_between(
    context: rclpy.Context, tmp_path: Path
) -> None:
    path = driven(tmp_path)
    node, out = lockstep(context, scenario=str(path), driver=True, duration=0.02)
    try:
        node.begin()
        expected = Simulation(load_arm(path), driver=True)
        for k in range(5):
            state = out.states[-1]
            stamp = state.header.stamp.sec * 1_000_000_000 + state.header.stamp.nanosec
            assert stamp == 4_000_000 * k  # one state a tick
            published = expected.published_state()
            assert (list(state.position), list(state.velocity), list(state.effort)) == published
            tau = [0.5 * k, -1.0]
            node.on_joint_command(*fields(["j1", "j2"], tau, stamp))
            expected.advance(np.array(tau))
        assert node.finished.done() and node.finished.result() == 0
        assert len(out.states) == 6 and node.sim.steps == 10
        assert list(out.states[-1].effort) == [1.5, -1.0]  # the command of the tick before: one tick late
    finally:
        node.destroy_node()


def test_realtime_as_the_arms_driver_steps_a_tick_a_beat(context: rclpy.Context, tmp_path: Path) -> None:
    node, out = recorded(context, scenario=str(driven(tmp_path)), driver=True)
    try:
        assert node.beat.period == pytest.approx(0.004)
        node.watch()
        node.on_commands(command([2.0, 1.0]))  # acts from the next tick (the delay)
        node.tick()
        node.tick()
        assert [state.header.stamp.nanosec for state in out.states] == [0, 4_000_000, 8_000_000]
        assert [list(state.effort) for state in out.states] == [[0.0, 0.0], [0.0, 0.0], [2.0, 1.0]]
        assert node.sim.steps == 4
    finally:
        node.destroy_node()


def test_lockstep_waits_for_the_wrench_stamped_with_the_step(context: rclpy.Context) -> None:
    node, out = lockstep(context, wait_for_wrench=True)
    try:
        node.begin()
        node.on_joint_command(*fields(["j1", "j2"], [0.0, 0.0], 0))
        assert len(out.states) == 1
        node.on_wrench(wrench(force=(3.0, -1.0, 0.0)))  # stamped 0: the step's wrench
        assert len(out.states) == 2
        engine = offline_engine()
        engine.step(np.zeros(2), np.array([3.0, -1.0]))
        assert list(out.states[-1].position) == engine.q.tolist()
    finally:
        node.destroy_node()


def test_lockstep_timeout_names_the_missing_message(context: rclpy.Context, capfd: pytest.CaptureFixture[str]) -> None:
    node, _ = lockstep(context, lockstep_timeout=0.01, wait_for_wrench=True)
    clock = [10.0]
    node.now = lambda: clock[0]  # type: ignore[method-assign]
    try:
        node.begin()
        node.watch()
        assert not node.finished.done()
        clock[0] += 0.02
        node.watch()
        assert node.finished.done() and node.finished.result() == 1
        err = capfd.readouterr().err
        assert "no joint_commands and tip_wrench stamped 0.000000000 s (step 0) arrived within" in err
        assert "lockstep_timeout=0.01 s" in err
    finally:
        node.destroy_node()


def test_robot_description_is_latched(context: rclpy.Context) -> None:
    node = make(context)
    probe = rclpy.create_node("probe", context=context)
    got: list[str] = []
    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    probe.create_subscription(String, "robot_description", lambda msg: got.append(msg.data), qos)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(probe)
    try:
        spin_wait(executor, lambda: bool(got), 10.0, period=0.1)
        assert got and '<joint name="j1" type="revolute">' in got[0]
    finally:
        executor.shutdown()
        probe.destroy_node()
        node.destroy_node()


def test_markers_show_the_arm_target_and_applied_force(context: rclpy.Context) -> None:
    markers = StandIn("/markers")
    node = make(context, {"markers": markers}, markers_rate=30.0)
    sent = markers.messages
    assert node.markers is not None
    try:
        force = np.array([3.0, -1.0])
        node.sim.hold_force(force)
        node.watch()  # publishes the initial state
        node.tick()
        node.markers.publish()
        spaces = {marker.ns: marker for marker in sent[-1].markers}
        assert {"tip_force", "tip_path", "target"} <= set(spaces)
        arrows = [m for m in sent[-1].markers if m.type == m.ARROW and m.action == m.ADD]
        assert len(arrows) == 1
        start, end = arrows[0].points
        tip = node.sim.tip()
        assert (start.x, start.y) == pytest.approx(tuple(tip))
        direction = np.array([end.x - start.x, end.y - start.y])
        assert direction / np.linalg.norm(direction) == pytest.approx(force / np.linalg.norm(force))
        assert all(marker.header.frame_id == "base" for marker in sent[-1].markers)
    finally:
        node.destroy_node()


def test_a_task_type_only_a_plugin_knows_does_not_stop_the_simulator(context: rclpy.Context, tmp_path) -> None:
    """The simulator needs the robot; the [task] is the controller's (whose plugins may register its type)."""
    text = resolve_scenario("reach").read_text(encoding="utf-8").replace('type = "reaching"', 'type = "my_own_task"')
    scenario = tmp_path / "plugin_task.toml"
    scenario.write_text(text, encoding="utf-8")
    node = make(context, scenario=str(scenario), markers_rate=30.0)
    try:
        assert node.markers is not None  # the arm is drawn, without a goal
        node.watch()
        assert node.run.started
    finally:
        node.destroy_node()


def test_markers_can_be_turned_off(context: rclpy.Context) -> None:
    node = make(context, markers_rate=0.0)
    try:
        assert node.markers is None
    finally:
        node.destroy_node()


def watched_before_start(context: rclpy.Context, **parameters: Any) -> tuple[SimulatorNode, Recorded]:
    """A realtime simulator with a start condition, watched twice while it is not met."""
    node, out = recorded(context, **parameters)
    try:
        node.watch()
        node.watch()
    except BaseException:
        node.destroy_node()
        raise
    return node, out


def test_realtime_waits_for_its_named_readers_before_step_zero(context: rclpy.Context) -> None:
    node, recorded = watched_before_start(context, state_readers=["probe"])
    probe = None
    try:
        recorded.state.readers = 1  # a reader from outside the graph is matched: a count of one would be met
        node.watch()
        assert recorded.states == [] and node.start_missing() == ["a /joint_states reader of /probe"]
        probe = rclpy.create_node("probe", context=context)
        probe.create_subscription(JointState, "joint_states", lambda _: None, 10)
        assert wait_until(lambda: not node.start_missing(), 20.0), node.start_missing()
        recorded.state.readers = 2  # the outside reader and the probe, both matched
        node.watch()  # ready: step 0 goes out
        node.tick()
        assert [state.header.stamp.nanosec for state in recorded.states] == [0, 2_000_000]
    finally:
        node.destroy_node()
        if probe is not None:
            probe.destroy_node()


def test_realtime_can_wait_for_a_controller_before_step_zero(context: rclpy.Context) -> None:
    node, recorded = watched_before_start(context, wait_for_controller=True)
    try:
        assert recorded.states == []  # no command publisher yet
        node.start_missing = lambda: []  # type: ignore[method-assign]  # a controller appeared in the graph
        node.watch()
        assert len(recorded.states) == 1
    finally:
        node.destroy_node()


NODE_FILES = sorted(Path(simulator.__file__).parent.glob("*.py"))


@pytest.mark.parametrize("path", NODE_FILES, ids=[path.stem for path in NODE_FILES])
def test_the_node_stays_a_thin_shell(path: Path) -> None:
    # A node's logic belongs to its core (the simulator's run to sim.run.SimulatorRun, the arm to
    # sim.simulation.Simulation, the player's pacing to bags.replay.Pacer): a node module keeps parameters,
    # topics, services and timers (docs/architecture.md).
    lines = len(path.read_text().splitlines())
    assert lines <= 450, f"nodes/{path.name} has {lines} lines; move what is not wiring into the core"


def test_step_0_waits_for_the_recorder_by_name_whatever_other_readers_came_first(context: rclpy.Context) -> None:
    """A reader from outside the graph (an echo, a plotter) matched first does not stand in for the recorder."""
    from geometry_msgs.msg import PointStamped

    node = make(context, state_readers=["recorder"], tip_readers=["recorder"])
    echo = rclpy.create_node("echo", context=context)
    executor = SingleThreadedExecutor(context=context)
    for each in (node, echo):
        executor.add_node(each)
    recorder = None
    try:
        echo.create_subscription(JointState, "joint_states", lambda _: None, 10)
        assert spin_wait(executor, lambda: node.state_pub.get_subscription_count() >= 1, 20.0)
        node.watch()
        missing = node.start_missing()
        assert "a /joint_states reader of /recorder" in missing and "a /tip reader of /recorder" in missing
        assert not node.run.started  # a count of one would be met by the echo alone: not a name
        recorder = rclpy.create_node("recorder", context=context)
        executor.add_node(recorder)
        recorder.create_subscription(JointState, "joint_states", lambda _: None, 10)
        recorder.create_subscription(PointStamped, "tip", lambda _: None, 10)

        def started() -> bool:
            node.watch()
            return node.run.started

        assert spin_wait(executor, started, 20.0), node.start_missing()
        assert node.state_pub.get_subscription_count() == 2  # both readers matched when step 0 went out
    finally:
        executor.shutdown()
        for each in (node, echo, recorder):
            if each is not None:
                each.destroy_node()
