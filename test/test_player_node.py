"""The player node in-process: recorded bytes on time, waiting for readers, services, /clock, remaps, the end."""

from __future__ import annotations

import io
import time

import pytest
import rclpy
from bagwriter import NS, START, arm_run, recorded, write_bag
from geometry_msgs.msg import PointStamped
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger
from waiting import Spinning

from skelarm_ros.bags.replay import PlayError, PlayOptions, ReaderWait
from skelarm_ros.nodes.player import PlayerNode, PlayerSettings, parse_arguments, split_arguments

pytestmark = pytest.mark.ros

MS = 1_000_000
KEEP_ALL = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
DEADLINE = 20.0  # s for in-process discovery and delivery on a loaded machine


class Rig(Spinning):
    """A player and a probe node in one private context, spun by one executor."""

    def __init__(self, context: rclpy.Context, path, *, readers: int | ReaderWait = 1, **options) -> None:
        self.out = io.StringIO()
        wait = readers if isinstance(readers, ReaderWait) else ReaderWait(default=readers)
        settings = PlayerSettings(str(path), PlayOptions(**options), wait, progress_hz=0.0)
        self.player = PlayerNode(settings, out=self.out, autostart=False, context=context)
        self.probe = rclpy.create_node("probe", context=context)
        super().__init__(SingleThreadedExecutor(context=context), period=0.02)
        self.executor.add_node(self.player)
        self.executor.add_node(self.probe)

    def listen(self, topic: str, qos=KEEP_ALL, kind=JointState) -> list[bytes]:
        got: list[bytes] = []
        self.probe.create_subscription(kind, topic, got.append, qos, raw=True)
        return got

    def call(self, name: str) -> Trigger.Response:
        client = self.probe.create_client(Trigger, f"/player/{name}")
        self.spin_until(client.service_is_ready, DEADLINE, f"service {name}")
        future = client.call_async(Trigger.Request())
        self.spin_until(future.done, DEADLINE, f"the answer of {name}")
        return future.result()

    def close(self) -> None:
        self.player.close()
        self.player.destroy_node()
        self.probe.destroy_node()
        self.executor.shutdown()


@pytest.fixture
def bag(tmp_path):
    return write_bag(tmp_path / "run", arm_run(20))


def test_it_waits_for_its_readers_then_publishes_the_recorded_bytes_in_order(context, bag):
    rig = Rig(context, bag)
    try:
        assert rig.player.step(0) is not None and not rig.player.playback.started  # no reader yet
        assert rig.player.missing_readers()[0].startswith("/joint_commands (0 of 1)")
        states = rig.listen("/joint_states")
        commands = rig.listen("/joint_commands")
        description = rig.listen("/robot_description", LATCHED, String)
        target = rig.listen("/target", kind=PointStamped)
        rig.spin_until(lambda: not rig.player.missing_readers(), DEADLINE, "the probe to match")
        rig.player.step(10 * NS)
        assert rig.player.playback.started
        # Half the run: what was recorded in its first 105 ms (the bag's first message at START).
        rig.player.step(10 * NS + 105 * MS)
        rig.spin_until(lambda: len(states) == 10, DEADLINE, "the first ten states")
        assert rig.player.playback.played == 2 + 10 + 10
        assert rig.player.step(10 * NS + NS) is None and rig.player.playback.done
        rig.spin_until(lambda: len(commands) == 20 and description and target, DEADLINE, "every message")
    finally:
        rig.close()
    assert states == [data for _, _, data in recorded(bag, ["/joint_states"])]
    assert commands == [data for _, _, data in recorded(bag, ["/joint_commands"])]
    assert description == [data for _, _, data in recorded(bag, ["/robot_description"])]


def test_named_readers_are_waited_for_and_an_outside_reader_does_not_stand_in(context, bag):
    wait = parse_arguments([str(bag), "--wait-for-subscribers", "joint_states:=controller"]).readers
    rig = Rig(context, bag, readers=wait, topics=("/joint_states",))
    outsider = rclpy.create_node("plotter", context=context)
    rig.executor.add_node(outsider)
    try:
        outsider.create_subscription(JointState, "/joint_states", lambda _: None, KEEP_ALL)
        # The outsider matches (a count of one would be met) but is not the named controller.
        publisher = rig.player.publishers_by_index[0]
        rig.spin_until(lambda: publisher.get_subscription_count() == 1, DEADLINE, "the outsider")
        assert rig.player.missing_readers() == ["a /joint_states reader of /controller"]
        assert rig.player.step(0) is not None and not rig.player.playback.started
        controller = rclpy.create_node("controller", context=context)
        rig.executor.add_node(controller)
        controller.create_subscription(JointState, "/joint_states", lambda _: None, KEEP_ALL)
        rig.spin_until(lambda: not rig.player.missing_readers(), DEADLINE, "the controller's reader")
        rig.player.step(NS)
        assert rig.player.playback.started
    finally:
        rig.close()
        outsider.destroy_node()


def test_the_play_thread_plays_on_time_and_completes_done(context, bag):
    rig = Rig(context, bag)
    try:
        states = rig.listen("/joint_states")
        rig.listen("/joint_commands")
        rig.listen("/target", kind=PointStamped)
        rig.listen("/robot_description", LATCHED, String)
        began = time.monotonic()
        rig.player.start()
        rig.spin_until(rig.player.finished.done, DEADLINE, "the end of the bag")
        took = time.monotonic() - began
        rig.spin_until(lambda: len(states) == 20, DEADLINE, "every state")
    finally:
        rig.close()
    assert took >= 0.2  # the bag spans 200 ms of log time; nothing goes out early
    assert len(rig.player.lateness) == rig.player.playback.played == 42
    assert min(rig.player.lateness) >= 0
    assert rig.player.summary() == "played 42 messages, up to 0.200 s into the bag"


def test_services_pause_resume_and_play_the_next_message(context, bag):
    rig = Rig(context, bag, readers=0, start_paused=True, topics=("/joint_states",))
    try:
        states = rig.listen("/joint_states")
        rig.spin_until(lambda: rig.player.publishers_by_index[0].get_subscription_count() == 1, DEADLINE, "the probe")
        rig.player.start()
        answer = rig.call("is_paused")
        assert answer.success and answer.message.startswith("paused")
        for _ in range(3):
            assert rig.call("play_next").success
        rig.spin_until(lambda: len(states) == 3, DEADLINE, "three states played one by one")
        assert rig.player.playback.bag_time(time.monotonic_ns()) == START + 3 * 10 * MS
        assert not rig.call("pause").success  # already paused
        assert rig.call("toggle_paused").success and not rig.player.playback.paused
        assert not rig.call("play_next").success  # only while paused
        assert not rig.call("resume").success  # not paused
        rig.spin_until(rig.player.finished.done, DEADLINE, "the end of the bag")
        rig.spin_until(lambda: len(states) == 20, DEADLINE, "the other states")
    finally:
        rig.close()
    assert states == [data for _, _, data in recorded(bag, ["/joint_states"])]


def test_stop_ends_the_playback(context, tmp_path):
    long = write_bag(tmp_path / "long", arm_run(500, period_ns=100 * MS))  # 50 s
    rig = Rig(context, long, readers=0)
    try:
        rig.player.start()
        rig.spin_until(lambda: rig.player.playback.played > 0, DEADLINE, "the first message")
        assert rig.call("stop").success
        rig.spin_until(rig.player.finished.done, DEADLINE, "the stop")
    finally:
        rig.close()
    assert rig.player.playback.played < 20


def test_clock_follows_the_bags_time_and_remaps_rename(context, bag):
    rig = Rig(
        context,
        bag,
        readers=0,
        rate=0.5,
        clock_hz=200.0,
        topics=("joint_states",),
        remaps=(("/joint_states", "replayed/joint_states"),),
    )
    try:
        assert rig.player.publishers_by_index[0].topic_name == "/replayed/joint_states"
        ticks: list[Clock] = []
        rig.probe.create_subscription(Clock, "/clock", ticks.append, 100)
        states = rig.listen("/replayed/joint_states")
        rig.spin_until(
            lambda: (
                rig.player.publishers_by_index[0].get_subscription_count() == 1
                and rig.player.clock_pub.get_subscription_count() == 1
            ),
            DEADLINE,
            "the probe",
        )
        rig.player.start()
        rig.spin_until(rig.player.finished.done, DEADLINE, "the end of the bag")
        rig.spin_until(lambda: len(states) == 20, DEADLINE, "every state")
    finally:
        rig.close()
    times = [tick.clock.sec * NS + tick.clock.nanosec for tick in ticks]
    # From the first message on, never back, and no further than the last message (the clock stops at the end).
    assert times == sorted(times) and times[0] >= START and times[-1] <= START + 200 * MS + 500, times
    # At half speed the bag's 200 ms take 400 ms: about 80 ticks at 200 Hz (fewer on a loaded machine).
    assert len(times) > 20


def test_nothing_to_play_and_a_bad_bag_fail_at_construction(context, tmp_path, bag):
    (tmp_path / "junk.db3").write_bytes(b"junk" * 100)
    for path, words in ((tmp_path / "junk.db3", "cannot be read"), (bag, "has nothing to play")):
        settings = PlayerSettings(str(path), PlayOptions(topics=("/none",)))
        with pytest.raises(PlayError, match=words):
            PlayerNode(settings, context=context)


def test_command_line_options_as_ros2_bag_plays(capsys):
    own, ros = split_arguments(
        ["player", "b", "--remap", "/a:=b", "--ros-args", "-r", "__ns:=/x", "--", "--loop", "--clock"]
    )
    assert own == ["b", "--remap", "/a:=b", "--loop", "--clock"] and ros == ["--ros-args", "-r", "__ns:=/x"]
    settings = parse_arguments(own)
    assert settings.options.remaps == (("/a", "b"),) and settings.options.loop
    assert settings.options.clock_hz == 40.0  # ros2 bag play's default rate for --clock
    assert settings.wait_for_all_acked is None
    settings = parse_arguments(["b", "--wait-for-all-acked", "--rate", "2", "--start-offset", "1.5", "-d", "0.5"])
    assert settings.wait_for_all_acked == 0 and settings.options.rate == 2.0
    assert (settings.options.start_offset, settings.options.delay) == (1.5, 0.5)
    named = parse_arguments(["b", "--wait-for-subscribers", "1", "target:=2", "joint_states:=controller,/recorder"])
    assert named.readers.names == {"joint_states": ("controller", "/recorder")} and named.readers.topics == {
        "target": 2
    }
    assert named.readers.needed("joint_states", False) == 0 and named.readers.needed("other", False) == 1
    wrongs = ((["b", "--rate", "0"], "rate must be a positive number"), (["b", "-m", "x"], "FROM:=TO"))
    for wrong, words in (*wrongs, (["b", "--wait-for-subscribers", ":=x"], "TOPIC:=NODE[,NODE...]")):
        with pytest.raises(SystemExit) as caught:
            parse_arguments(wrong)
        assert caught.value.code == 2
        assert words in capsys.readouterr().err
