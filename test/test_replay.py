"""The player's core: topic plan (selection, remaps, QoS, types), the schedule, pause and loops, bad bags."""

from __future__ import annotations

import pytest
from bagwriter import NS, START, arm_run, attitude, joint_state, recorded, string, write_bag, write_ros1_bag

from skelarm_ros.bags.reader import BagError, TopicQos, open_bag
from skelarm_ros.bags.replay import (
    VOLATILE_DEPTH,
    BagFrames,
    Pacer,
    Playback,
    PlayError,
    PlayOptions,
    Ticker,
    first_log_time,
    open_for_playing,
    parse_reader_wait,
    parse_remap,
    plan_topics,
    remapped,
)
from skelarm_ros.bags.shadow import shadow_plan
from skelarm_ros.interface import INFO, Say

MS = 1_000_000
INSTALLED = {
    "sensor_msgs/msg/JointState",
    "std_msgs/msg/String",
    "geometry_msgs/msg/PointStamped",
    "std_msgs/msg/Float64MultiArray",
}


def installed(msgtype: str) -> bool:
    return msgtype in INSTALLED


def plan_of(path, **options):
    bag = open_for_playing(str(path))
    return bag, plan_topics(bag, PlayOptions(**options), installed)


def playback_of(path, **options) -> tuple[Playback, list]:
    bag, plan = plan_of(path, **options)
    latched = [i for i, topic in enumerate(plan.topics) if topic.qos.transient_local]
    playback = Playback(BagFrames(bag, plan.topics), first_log_time(bag), PlayOptions(**options), latched, plan.total)
    return playback, plan.topics


def drain(playback: Playback, now: int, step: int = MS, until: int | None = None) -> list[tuple[int, int, bytes, int]]:
    """Advance wall time in steps, taking what is due: ``(topic index, log time, bytes, wall time taken)``."""
    out = []
    end = until if until is not None else now + 10**12
    while not playback.done and now <= end:
        out += [(*frame, now) for frame in playback.take(now)]
        now += step
    return out


# ----------------------------------------------------------------------------- the plan


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_every_topic_plays_with_the_recorded_qos_and_robot_description_latched(tmp_path, storage):
    messages = [*arm_run(5), ("/fast", START + 3, string("x"))]
    path = write_bag(tmp_path / "run", messages, storage=storage, best_effort=("/fast",), latched=())
    bag, plan = plan_of(path)
    by_name = {topic.name: topic for topic in plan.topics}
    assert set(by_name) == {"/robot_description", "/target", "/joint_states", "/joint_commands", "/fast"}
    assert by_name["/joint_states"].qos == TopicQos(reliable=True, transient_local=False, depth=VOLATILE_DEPTH)
    assert by_name["/fast"].qos.reliable is False
    # Recorded volatile here, but the contract latches robot_description.
    assert by_name["/robot_description"].qos.transient_local
    assert by_name["/joint_states"].msgtype == "sensor_msgs/msg/JointState"
    assert by_name["/joint_states"].count == 5
    assert all(topic.output == topic.name and topic.convert is None for topic in plan.topics)
    assert plan.total == 13  # description, target, 5 states, 5 commands, one on /fast
    bag.close()


def test_recorded_latching_is_kept_and_a_bag_without_qos_plays_reliable_volatile(tmp_path):
    path = write_bag(tmp_path / "a", [("/tf_static", START, string("t")), *arm_run(2)], latched=("/tf_static",))
    with open_bag(path) as bag:
        assert bag.qos["/tf_static"] == TopicQos(True, True, 10)
    bag, plan = plan_of(path)
    assert {t.name: t.qos.transient_local for t in plan.topics}["/tf_static"]
    bag.close()
    bare = write_bag(tmp_path / "b", arm_run(2), qos=False)
    bag, plan = plan_of(bare)
    qos = {t.name: t.qos for t in plan.topics}
    assert qos["/joint_states"] == TopicQos(True, False, VOLATILE_DEPTH)
    assert qos["/robot_description"].transient_local
    bag.close()


def test_topics_remaps_and_types_without_a_package_are_chosen_and_noted(tmp_path):
    messages = [*arm_run(3), *[("/fmu/out/attitude", START + k, attitude(k)) for k in range(3)]]
    messages += [("/fmu/out/attitude2", START + 5, attitude(9))]
    path = write_bag(tmp_path / "mixed", messages)
    bag, plan = plan_of(path)
    assert "/fmu/out/attitude" not in {t.name for t in plan.topics}
    skipped = [note for note in plan.notes if "px4_msgs/msg/VehicleAttitude" in note]
    assert len(skipped) == 1, plan.notes  # one note for the type, naming both topics
    assert "/fmu/out/attitude" in skipped[0] and "/fmu/out/attitude2" in skipped[0]
    assert "no message package here" in skipped[0]
    bag.close()
    bag, plan = plan_of(
        path, topics=("joint_states", "/target", "/nothing"), remaps=(("/joint_states", "replayed/joint_states"),)
    )
    chosen = [(t.name, t.output) for t in plan.topics]
    assert chosen == [("/joint_states", "replayed/joint_states"), ("/target", "/target")]
    assert any("/nothing" in note and "not in the bag" in note for note in plan.notes)
    bag.close()
    with pytest.raises(PlayError, match="has nothing to play"):
        plan_of(path, topics=("/fmu/out/attitude",))


def test_remap_rules_and_their_mistakes():
    assert parse_remap("/a:=b") == ("/a", "b")
    assert remapped("/joint_states", [("joint_states", "/x")]) == "/x"  # a relative FROM names the root topic
    assert remapped("/arm1/joint_states", [("joint_states", "/x")]) == "/arm1/joint_states"
    for wrong in ("/a", ":=b", "/a:="):
        with pytest.raises(PlayError, match="is not FROM:=TO"):
            parse_remap(wrong)


def test_reader_waits_and_option_checks():
    wait = parse_reader_wait(["2", "joint_states:=3", "/target:=0"])
    assert wait.default == 2 and wait.topics == {"joint_states": 3, "/target": 0}
    resolved = wait.resolved(lambda name: name if name.startswith("/") else "/arm1/" + name)
    assert resolved.needed("/arm1/joint_states", latched=False) == 3
    assert resolved.needed("/target", latched=False) == 0
    assert resolved.needed("/arm1/tip", latched=False) == 2
    assert resolved.needed("/arm1/robot_description", latched=True) == 0  # latched ones only when named
    named = parse_reader_wait(["joint_states:=controller,/lab/recorder"]).resolved(lambda name: "/arm1/" + name)
    assert named.wanted("/arm1/joint_states") == ("controller", "/lab/recorder")  # node names resolve in the node
    assert named.needed("/arm1/joint_states", latched=False) == 0 and named.wanted("/arm1/tip") == ()
    for wrong in ("x", "a:=", ":=2", ":=b", "-1"):
        with pytest.raises(PlayError, match="is not a count"):
            parse_reader_wait([wrong])
    for bad, message in (({"rate": 0.0}, "rate must be a positive number"), ({"delay": -1.0}, "delay must be zero")):
        with pytest.raises(ValueError, match=message):
            PlayOptions(**bad)


# ----------------------------------------------------------------------------- the schedule


def test_messages_come_out_as_recorded_in_payload_and_order_at_their_log_times(tmp_path):
    path = write_bag(tmp_path / "run", arm_run(20))
    playback, topics = playback_of(path)
    playback.start(5 * NS)
    taken = drain(playback, 5 * NS, step=MS // 2)
    expected = recorded(path)
    assert [(topics[i].name, log, data) for i, log, data, _ in taken] == expected
    # Each goes out when the clock reaches its log time: at the first wall step at or after it.
    for _, log, _, wall in taken:
        due = 5 * NS + (log - START)
        assert due <= wall < due + MS // 2
    assert playback.done and playback.played == len(expected)
    assert playback.bag_time(10**15) == expected[-1][1]  # the clock stops at the last message
    assert playback.ending() == f"played {len(expected)} messages, up to 0.200 s into the bag"


def test_rate_scales_the_schedule_and_delay_and_offset_shift_it(tmp_path):
    path = write_bag(tmp_path / "run", arm_run(20))
    fast, _ = playback_of(path, rate=2.0)
    fast.start(0)
    taken = drain(fast, 0, step=1000)
    assert len(taken) == 42
    assert all(-(-(log - START) // 2) <= wall < -(-(log - START) // 2) + 1000 for _, log, _, wall in taken)
    delayed, topics = playback_of(path, delay=0.5, start_offset=0.1)
    delayed.start(0)
    taken = drain(delayed, 0, step=1000)
    # The latched description (before the offset) goes out first, when the delay is over; then from 0.1 s on.
    assert topics[taken[0][0]].name == "/robot_description" and taken[0][3] == NS // 2
    rest = taken[1:]
    assert min(log for _, log, _, _ in rest) >= START + NS // 10
    assert all(0 <= wall - (NS // 2 + (log - START - NS // 10)) < 1000 for _, log, _, wall in rest)
    assert "/target" not in {topics[i].name for i, *_ in taken}  # volatile and before the offset: skipped


def test_pause_stops_the_clock_and_play_next_steps_it(tmp_path):
    path = write_bag(tmp_path / "run", arm_run(5))
    playback, _ = playback_of(path, start_paused=True)
    playback.start(0)
    assert playback.status(0) == "P" and playback.next_due() is None and playback.take(10 * NS) == []
    first = playback.play_next(NS)
    assert first is not None and first[1] == START
    assert playback.bag_time(5 * NS) == START  # paused: the clock stays at the message played
    second = playback.play_next(NS)
    assert second is not None and playback.bag_time(NS) == second[1]
    assert playback.resume(2 * NS) and not playback.resume(2 * NS)
    # Running again from the second message's time at 2 s wall time.
    assert playback.bag_time(2 * NS + 3 * MS) == second[1] + 3 * MS
    playback.take(2 * NS + 15 * MS)
    assert playback.pause(2 * NS + 15 * MS)
    held = playback.bag_time(2 * NS + 15 * MS)
    assert playback.bag_time(9 * NS) == held and playback.take(9 * NS) == []
    playback.resume(9 * NS)
    assert playback.bag_time(9 * NS + MS) == held + MS
    assert playback.play_next(9 * NS) is None  # not paused: nothing
    drain(playback, 9 * NS)
    assert playback.done and playback.played == 12


def test_loop_plays_the_bag_again_each_pass_after_the_delay(tmp_path):
    path = write_bag(tmp_path / "run", arm_run(3))
    playback, _ = playback_of(path, loop=True, delay=0.25)
    playback.start(0)
    taken = drain(playback, 0, step=MS, until=3 * NS)
    one_pass = len(recorded(path))
    assert not playback.done and playback.loops >= 2
    first, second = taken[:one_pass], taken[one_pass : 2 * one_pass]
    assert [item[:3] for item in first] == [item[:3] for item in second]
    gap = second[0][3] - first[-1][3]
    assert NS // 4 <= gap <= NS // 4 + MS  # the next pass starts after the delay
    assert "loop" in playback.progress(3 * NS)


def test_a_bag_that_stops_reading_plays_what_it_read_and_says_where(tmp_path):
    path = write_bag(tmp_path / "run", arm_run(10))
    good = recorded(path)

    def damaged():
        for k, (_, log, data) in enumerate(good):
            if k == 7:
                msg = "bag 'run' is damaged after some messages (database disk image is malformed)"
                raise BagError(msg)
            yield 0, log, data

    playback = Playback(damaged, START, PlayOptions(loop=True))
    playback.start(0)
    taken = drain(playback, 0)
    assert len(taken) == 7 and playback.done  # no loop over a damaged bag
    ending = playback.ending()
    assert ending.startswith("played 7 messages; the bag stops reading at 0.030 s into the bag")
    assert "malformed" in ending


def test_truncated_mcap_plays_its_complete_chunks(tmp_path):
    from bagwriter import STORE
    from rosbags.rosbag2 import StoragePlugin, Writer

    count = 30_000  # about three 1 MiB chunks
    path = tmp_path / "cut"
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conn = writer.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=STORE)
        for k in range(count):
            message = joint_state(k * MS, position=(0.001 * k, 0.0))
            writer.write(conn, START + k * MS, STORE.serialize_cdr(message, "sensor_msgs/msg/JointState"))
    mcap = next(path.glob("*.mcap"))
    data = mcap.read_bytes()
    mcap.write_bytes(data[: len(data) * 2 // 3])
    (path / "metadata.yaml").unlink()
    with pytest.raises(BagError):
        open_bag(mcap)
    bag = open_for_playing(str(mcap))
    assert any("recovered" in note for note in bag.notes), bag.notes
    plan = plan_topics(bag, PlayOptions(), installed)
    playback = Playback(BagFrames(bag, plan.topics), first_log_time(bag), PlayOptions(), (), plan.total)
    playback.start(0)
    taken = drain(playback, 0, step=10 * MS)
    assert 0 < len(taken) < count
    assert [log for _, log, _, _ in taken] == [START + k * MS for k in range(len(taken))]
    bag.close()


def test_bad_bags_give_one_sentence(tmp_path):
    (tmp_path / "empty.db3").write_bytes(b"")
    (tmp_path / "junk.mcap").write_bytes(b"not a bag at all" * 10)
    (tmp_path / "notes.txt").write_text("x")
    cases = {
        tmp_path / "missing": "does not exist",
        tmp_path / "empty.db3": "is empty",
        tmp_path / "junk.mcap": "MCAP",
        tmp_path / "notes.txt": "is not a bag",
    }
    for path, words in cases.items():
        with pytest.raises(PlayError) as caught:
            open_for_playing(str(path))
        text = str(caught.value)
        assert words in text and str(path.name) in text and "\n" not in text


# ----------------------------------------------------------------------------- ROS 1


def test_ros1_bag_plays_its_ros2_types_with_stamps_and_values_kept(tmp_path):
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String

    path = write_ros1_bag(tmp_path / "arm.bag")
    bag, plan = plan_of(path)
    by_name = {t.name: t for t in plan.topics}
    assert set(by_name) == {"/joint_states", "/robot_description"}
    assert by_name["/robot_description"].qos.transient_local  # latched in ROS 1
    assert any("rosgraph_msgs/msg/Log" in note and "ROS 2 does not have" in note for note in plan.notes)
    playback = Playback(BagFrames(bag, plan.topics), first_log_time(bag), PlayOptions(), (), plan.total)
    playback.start(0)
    taken = drain(playback, 0)
    states = [deserialize_message(d, JointState) for i, _, d, _ in taken if plan.topics[i].name == "/joint_states"]
    assert len(states) == 10
    for k, state in enumerate(states):
        ns = START + (k + 1) * 5_000_000
        assert (state.header.stamp.sec, state.header.stamp.nanosec) == (ns // NS, ns % NS)
        assert state.header.frame_id == "f" and list(state.name) == ["j1", "j2"]
        assert list(state.position) == [0.5 * k, float(k)] and list(state.effort) == [3.0, 4.0]
    description = [data for i, _, data, _ in taken if plan.topics[i].name == "/robot_description"]
    assert deserialize_message(description[0], String).data == "<robot/>"
    bag.close()


# ----------------------------------------------------------------------------- shadow runs, ticks


def test_shadow_plan_picks_the_recorded_arm(tmp_path):
    one = write_bag(tmp_path / "one", arm_run(2, namespace="/lab/arm1"))
    plan = shadow_plan(str(one))
    assert plan.topics == [
        ("/lab/arm1/joint_states", "joint_states"),
        ("/lab/arm1/target", "target"),
        ("/lab/arm1/robot_description", "robot_description"),
    ]
    assert plan.joint_names == ["j1", "j2"] and plan.states == 2 and plan.joint_topic == "/lab/arm1/joint_states"
    two = write_bag(tmp_path / "two", [*arm_run(2, namespace="/arm1"), *arm_run(2, namespace="/arm2")])
    assert shadow_plan(str(two), "arm2").topics[0] == ("/arm2/joint_states", "joint_states")
    with pytest.raises(PlayError, match=r"several arms \(/arm1, /arm2\); pass namespace:="):
        shadow_plan(str(two))
    none = write_bag(tmp_path / "none", [("/robot_description", START, string("x"))])
    with pytest.raises(PlayError, match="has no joint_states topic to replay; its sensor_msgs/JointState topics"):
        shadow_plan(str(none))


def test_ticker_ticks_at_its_rate_and_does_not_make_up_missed_ticks():
    ticker = Ticker(100.0)
    assert ticker.due(0) and not ticker.due(5 * MS) and ticker.due(10 * MS) and ticker.due(21 * MS)
    assert ticker.next == 30 * MS
    assert ticker.due(95 * MS) and ticker.next == 105 * MS  # late by more than a period: restart from now
    assert not Ticker(0.0).due(0)


# ----------------------------------------------------------------------------- the play thread's pacing


def test_the_pacer_waits_for_its_readers_saying_so_every_two_seconds(tmp_path):
    playback, _ = playback_of(write_bag(tmp_path / "run", arm_run(5)))
    pacer = Pacer(playback, wait_slice=0.05, wait_report=2.0)
    sent: list = []
    missing = ["/joint_states (0 of 1)"]
    step = pacer.step(0, lambda: missing, sent.append)
    assert step.said == [Say(INFO, "waiting for readers: /joint_states (0 of 1)")]
    assert step.wake == 50 * MS and step.clock is None and step.progress is None
    assert pacer.step(NS, lambda: missing, sent.append).said == []  # once per two seconds
    assert pacer.step(2 * NS, lambda: missing, sent.append).said == step.said
    assert not playback.started and sent == [] and pacer.started_at == 0


def test_the_pacer_hands_out_what_is_due_in_batches_and_measures_lateness(tmp_path):
    path = write_bag(tmp_path / "run", arm_run(20))
    bag, plan = plan_of(path)
    frames = BagFrames(bag, plan.topics)
    playback = Playback(frames, first_log_time(bag), PlayOptions(), [0], plan.total)
    pacer = Pacer(playback, clock_hz=100.0, progress_hz=0.0, batch=5)
    sent: list = []
    start = 3 * NS
    step = pacer.step(start, list, sent.append, clock=lambda: start + 7)
    assert playback.started and pacer.started_at == start
    assert [plan.topics[i].name for i, _, _ in sent] == ["/robot_description"]  # due at once, 7 ns late
    assert step.clock == START and step.progress is None and step.said == []  # the first /clock tick: the bag's start
    assert step.wake == start + 1000  # the target, 1 us later in the bag
    end = start + NS
    step = pacer.step(end, list, sent.append, clock=lambda: end)
    assert len(sent) == 1 + 5 and step.wake is not None and step.wake <= end  # a batch; then look again at once
    while step.wake is not None:
        step = pacer.step(end, list, sent.append, clock=lambda: end)
    expected = recorded(path)
    assert [(plan.topics[i].name, log, data) for i, log, data in sent] == expected
    assert step.progress == playback.progress(end) and step.progress.startswith("[F]")  # the last line, always
    assert pacer.finished_at == end and playback.done
    assert list(pacer.lateness) == [7] + [end - (start + log - START) for _, log, _ in sent[1:]]
    assert pacer.ending(frames) == f"played {len(expected)} messages, up to 0.200 s into the bag"
