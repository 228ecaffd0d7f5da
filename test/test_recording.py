"""The recording core: topic plans by rosbag2's rules, the bounded write queue, the writer thread, what the bag says."""

from __future__ import annotations

import json
import sqlite3
import struct
import threading
from pathlib import Path

import numpy as np
import pytest
from rosbags.interfaces import QosDurability, QosHistory, QosReliability
from rosbags.rosbag2 import Reader, Writer
from rosbags.typesys import Stores, get_typestore
from ruamel.yaml import YAML
from waiting import wait_until

from skelarm_ros.bags import recording
from skelarm_ros.bags.reader import open_bag
from skelarm_ros.bags.recording import (
    LOST_BY_TOPIC_KEY,
    LOST_KEY,
    OfferedQos,
    Recording,
    RecordingError,
    RecordingSummary,
    WriteQueue,
    plan_topic,
)

INFINITE = 2**63 - 1
STORE = get_typestore(Stores.ROS2_JAZZY)
JOINT_STATE = "sensor_msgs/msg/JointState"
JOINT_STATE_HASH = str(STORE.hash_rihs01(JOINT_STATE))
WAIT = 10.0  # wall seconds for the writer thread to reach the state a test waits for


def offer(*, reliable: bool = True, latched: bool = False) -> OfferedQos:
    """A profile as discovery reports it: history unknown, depth 0, infinite durations."""
    return OfferedQos(3, 0, 1 if reliable else 2, 1 if latched else 2, INFINITE, INFINITE, 1, INFINITE)


def state_bytes(k: int) -> bytes:
    """A serialized JointState of two joints, stamped k ns."""
    types = STORE.types
    message = types[JOINT_STATE](
        header=types["std_msgs/msg/Header"](stamp=types["builtin_interfaces/msg/Time"](sec=0, nanosec=k), frame_id=""),
        name=["j1", "j2"],
        position=np.array([0.1 * k, 0.2]),
        velocity=np.zeros(2),
        effort=np.zeros(2),
    )
    return bytes(STORE.serialize_cdr(message, JOINT_STATE))


def read_metadata(folder: Path) -> dict:
    return YAML(typ="safe").load((folder / "metadata.yaml").read_text())["rosbag2_bagfile_information"]


def mcap_records(path: Path) -> list[tuple[int, bytes]]:
    """The top-level records of a finished MCAP file (channels and metadata are repeated there by rosbags)."""
    data = path.read_bytes()
    offset, records = 8, []
    while offset + 9 <= len(data) - 8:
        opcode = data[offset]
        (size,) = struct.unpack_from("<Q", data, offset + 1)
        records.append((opcode, data[offset + 9 : offset + 9 + size]))
        offset += 9 + size
    return records


def _string(body: bytes, at: int) -> tuple[str, int]:
    (size,) = struct.unpack_from("<I", body, at)
    return body[at + 4 : at + 4 + size].decode(), at + 4 + size


def _map(body: bytes, at: int) -> dict[str, str]:
    (size,) = struct.unpack_from("<I", body, at)
    end, at, out = at + 4 + size, at + 4, {}
    while at < end:
        key, at = _string(body, at)
        out[key], at = _string(body, at)
    return out


def mcap_channels(path: Path) -> dict[str, dict[str, str]]:
    """Each channel's metadata by topic."""
    channels = {}
    for opcode, body in mcap_records(path):
        if opcode == 0x04:
            topic, at = _string(body, 4)
            _, at = _string(body, at)
            channels[topic] = _map(body, at)
    return channels


def mcap_stored_metadata(path: Path) -> dict:
    """The rosbag2 metadata an MCAP file keeps in its 'rosbag2' metadata record."""
    for opcode, body in mcap_records(path):
        if opcode == 0x0C:
            name, at = _string(body, 0)
            if name == "rosbag2":
                return YAML(typ="safe").load(_map(body, at)["serialized_metadata"])
    raise AssertionError("no rosbag2 metadata record")


# -- plans ------------------------------------------------------------------------------------------------


def test_a_topic_is_recorded_reliably_and_latched_only_when_every_publisher_is():
    plan = plan_topic("/a", JOINT_STATE, [offer(), offer()], [JOINT_STATE_HASH] * 2, JOINT_STATE_HASH)
    assert (plan.reliable, plan.transient_local, plan.notes) == (True, False, ())
    mixed = plan_topic("/a", JOINT_STATE, [offer(), offer(reliable=False)], [], JOINT_STATE_HASH)
    assert not mixed.reliable and "some, not all, publishers on '/a' are reliable" in mixed.notes[0]
    latched = plan_topic("/d", "std_msgs/msg/String", [offer(latched=True)], [], "RIHS01_x")
    assert latched.transient_local and latched.notes == ()
    half = plan_topic("/d", "std_msgs/msg/String", [offer(latched=True), offer()], [], "RIHS01_x")
    assert not half.transient_local and "transient local" in half.notes[0]
    assert plan.offered == (offer(), offer())  # every publisher's profile goes into the bag


def test_the_type_hash_is_the_one_the_publishers_announce():
    theirs = "RIHS01_" + "ab" * 32
    plan = plan_topic("/a", JOINT_STATE, [offer()], [theirs, "INVALID", ""], JOINT_STATE_HASH)
    assert plan.type_hash == theirs
    assert "not that of the sensor_msgs/msg/JointState definition" in plan.notes[0]
    same = plan_topic("/a", JOINT_STATE, [offer()], [JOINT_STATE_HASH], JOINT_STATE_HASH)
    assert same.type_hash == JOINT_STATE_HASH and same.notes == ()
    none = plan_topic("/a", JOINT_STATE, [offer()], ["INVALID"], JOINT_STATE_HASH)
    assert none.type_hash == JOINT_STATE_HASH and none.notes == ()
    conflict = plan_topic("/a", JOINT_STATE, [offer(), offer()], [theirs, JOINT_STATE_HASH], JOINT_STATE_HASH)
    assert conflict.type_hash == JOINT_STATE_HASH and "different type hashes" in conflict.notes[0]


def test_an_offered_profile_is_written_as_rmw_reports_it():
    qos = offer().for_bag()
    assert qos.history == QosHistory.UNKNOWN and qos.depth == 0
    assert qos.reliability == QosReliability.RELIABLE and qos.durability == QosDurability.VOLATILE
    assert (qos.deadline.sec, qos.deadline.nsec) == (9223372036, 854775807)  # RMW_DURATION_INFINITE
    finite = OfferedQos(1, 7, 2, 2, 1_500_000_000, 0, 1, 0).for_bag()
    assert (finite.history, finite.depth, finite.deadline.sec, finite.deadline.nsec) == (
        QosHistory.KEEP_LAST,
        7,
        1,
        5e8,
    )


# -- the write queue ------------------------------------------------------------------------------------------


def test_the_queue_makes_a_put_wait_while_full_and_hands_items_on_in_order():
    queue = WriteQueue(max_bytes=10)
    queue.put((0, 1, b"aaaaaa"), 6)
    queue.put((0, 2, b"bbbb"), 4)
    done = threading.Event()

    def put_third() -> None:
        queue.put((0, 3, b"cc"), 2)
        done.set()

    putter = threading.Thread(target=put_third)
    putter.start()
    try:
        assert wait_until(lambda: queue.waiting == 1, WAIT), "the third put did not wait for room"
        assert not done.is_set()
        items, closed = queue.take(1.0)
        assert [item[1] for item in items] == [1, 2] and not closed
        assert not done.is_set()  # taken is not yet written: still counted
        queue.done(10)
        assert done.wait(10.0)
    finally:
        queue.done(0)
        putter.join(10.0)
    assert queue.take(0.0)[0] == [(0, 3, b"cc")]
    assert queue.waited > 0.0 and queue.peak_bytes == 10


def test_an_item_larger_than_the_queue_goes_in_alone_and_a_failure_wakes_a_waiting_put():
    queue = WriteQueue(max_bytes=4)
    queue.put((0, 1, b"x" * 100), 100)  # an empty queue takes anything
    errors: list[BaseException] = []

    def put() -> None:
        try:
            queue.put((0, 2, b"y"), 1)
        except RecordingError as error:
            errors.append(error)

    putter = threading.Thread(target=put)
    putter.start()
    assert wait_until(lambda: queue.waiting == 1, WAIT)
    queue.fail(OSError(28, "No space left on device"))
    putter.join(10.0)
    assert not putter.is_alive() and "No space left on device" in str(errors[0])
    with pytest.raises(RecordingError):
        queue.put((0, 3, b"z"), 1)


def test_take_returns_after_its_timeout_or_at_once_when_closed():
    queue = WriteQueue(max_bytes=10)
    assert queue.take(0.01) == ([], False)
    queue.close()
    assert queue.take(60.0) == ([], True)


# -- the recording ------------------------------------------------------------------------------------------------


def record(tmp_path: Path, storage: str, count: int = 500, **options) -> tuple[Recording, RecordingSummary]:
    rec = Recording(tmp_path / "bag", storage, flush_interval=0.05, distro="jazzy", **options)
    rec.start()
    states = rec.add_topic(plan_topic("/arm1/joint_states", JOINT_STATE, [offer()], [JOINT_STATE_HASH], ""))
    string_hash = str(STORE.hash_rihs01("std_msgs/msg/String"))
    description = rec.add_topic(
        plan_topic("/arm1/robot_description", "std_msgs/msg/String", [offer(latched=True)], [string_hash], "")
    )
    text = STORE.types["std_msgs/msg/String"](data="<robot/>")
    rec.write(description, 10, bytes(STORE.serialize_cdr(text, "std_msgs/msg/String")))
    for k in range(count):
        rec.write(states, 1_000 + k, state_bytes(k))
    rec.lost("/arm1/tip", 3)
    rec.lost("/arm1/tip", 2)  # a running total: the larger stays
    return rec, rec.close()


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_a_recording_holds_every_message_in_order_and_says_what_rosbag2_says(tmp_path, storage):
    rec, summary = record(tmp_path, storage)
    assert (summary.messages, summary.topics, summary.error) == (501, 2, "")
    assert summary.lost == {"/arm1/tip": 3}
    assert summary.line().endswith("501 messages on 2 topics, 3 lost (/arm1/tip 3)")
    with open_bag(rec.path) as bag:
        times = [t for topic, _, t, _ in bag.raw_messages(["/arm1/joint_states"])]
        assert times == [1_000 + k for k in range(500)]
        positions = [m.position[0] for _, _, _, m in bag.messages(["/arm1/joint_states"])]
        assert positions == pytest.approx([0.1 * k for k in range(500)])
    meta = read_metadata(rec.path)
    assert meta["ros_distro"] == "jazzy" and meta["version"] == 9
    assert meta["custom_data"][LOST_KEY] == "3"
    assert json.loads(meta["custom_data"][LOST_BY_TOPIC_KEY]) == {"/arm1/tip": 3}
    topics = {entry["topic_metadata"]["name"]: entry["topic_metadata"] for entry in meta["topics_with_message_count"]}
    assert topics["/arm1/joint_states"]["type_description_hash"] == JOINT_STATE_HASH
    qos = topics["/arm1/robot_description"]["offered_qos_profiles"]
    assert qos[0]["history"] == "unknown" and qos[0]["durability"] == "transient_local"
    assert qos[0]["deadline"] == {"sec": 9223372036, "nsec": 854775807}
    with Reader(rec.path) as reader:  # rosbags reads it back as it wrote it
        digests = {conn.topic: conn.digest for conn in reader.connections}
        assert digests["/arm1/joint_states"] == JOINT_STATE_HASH
        assert reader.message_count == 501
    if storage == "sqlite3":
        with sqlite3.connect(rec.path / "bag.db3") as db:
            assert db.execute("SELECT ros_distro FROM schema").fetchall() == [("jazzy",)]
            stored = YAML(typ="safe").load(db.execute("SELECT metadata FROM metadata").fetchone()[0])
            assert stored["ros_distro"] == "jazzy"
    else:
        channels = mcap_channels(rec.path / "bag.mcap")
        assert channels["/arm1/joint_states"]["topic_type_hash"] == JOINT_STATE_HASH
        assert YAML(typ="safe").load(channels["/arm1/joint_states"]["offered_qos_profiles"])[0]["history"] == "unknown"
        assert mcap_stored_metadata(rec.path / "bag.mcap")["ros_distro"] == "jazzy"


def test_the_closing_line_says_what_was_lost_and_how_long_taking_waited(tmp_path):
    summary = RecordingSummary(tmp_path / "bag", "mcap", 10, 2)
    assert summary.line() == f"closed {tmp_path / 'bag'} (mcap): 10 messages on 2 topics, none lost"
    summary = RecordingSummary(tmp_path / "bag", "mcap", 10, 2, {"/b": 2, "/a": 1}, waited=0.25)
    assert summary.line().endswith(
        "10 messages on 2 topics, 3 lost (/a 1, /b 2); taking waited 0.25 s for the write queue"
    )
    broken = RecordingSummary(tmp_path / "bag", "sqlite3", 4, 1, error="disk full")
    assert broken.line() == f"bag {tmp_path / 'bag'} is incomplete: disk full; 4 messages written, none lost"


def test_the_distribution_is_ros_distro_when_set(monkeypatch, tmp_path):
    monkeypatch.setenv("ROS_DISTRO", "rolling")
    assert recording.ros_distro() == "rolling"
    monkeypatch.delenv("ROS_DISTRO")
    assert recording.ros_distro() == "jazzy"
    assert Recording(tmp_path / "x", "mcap", flush_interval=0.1).distro == "jazzy"


def test_sqlite3_storage_commits_while_recording(tmp_path):
    """What was committed is readable by another process before the bag is closed (what a SIGKILL leaves)."""
    rec = Recording(tmp_path / "bag", "sqlite3", flush_interval=0.05, distro="jazzy")
    rec.start()
    topic = rec.add_topic(plan_topic("/js", JOINT_STATE, [offer()], [], JOINT_STATE_HASH))
    for k in range(50):
        rec.write(topic, k, state_bytes(k))

    def committed() -> int:
        with sqlite3.connect(f"file:{tmp_path / 'bag' / 'bag.db3'}?mode=ro", uri=True) as db:
            return int(db.execute("SELECT count(*) FROM messages").fetchone()[0])

    try:
        assert wait_until(lambda: committed() == 50, WAIT), "the 50 messages were not committed"
        assert not (tmp_path / "bag" / "metadata.yaml").exists()
    finally:
        rec.close()
    assert (tmp_path / "bag" / "metadata.yaml").exists()


def test_a_full_queue_makes_write_wait_and_loses_nothing(tmp_path, monkeypatch):
    gate = threading.Event()

    class SlowWriter(Writer):
        def write(self, connection, timestamp, data) -> None:
            gate.wait(30.0)
            super().write(connection, timestamp, data)

    monkeypatch.setattr(recording, "Writer", SlowWriter)
    size = len(state_bytes(0))
    rec = Recording(tmp_path / "bag", "mcap", flush_interval=0.05, max_cache_size=3 * size, distro="jazzy")
    rec.start()
    topic = rec.add_topic(plan_topic("/js", JOINT_STATE, [offer()], [], JOINT_STATE_HASH))
    writes = threading.Thread(target=lambda: [rec.write(topic, k, state_bytes(k)) for k in range(20)])
    writes.start()
    try:
        assert wait_until(lambda: rec.writes_waiting == 1, WAIT), "write did not wait for the full queue"
    finally:
        gate.set()
        writes.join(30.0)
    summary = rec.close()
    assert summary.messages == 20 and summary.waited > 0.0
    assert rec.queued_bytes_peak <= 3 * size
    with open_bag(rec.path) as bag:
        assert [t for _, _, t, _ in bag.raw_messages()] == list(range(20))


def test_a_writer_that_fails_makes_write_raise_and_close_say_so(tmp_path, monkeypatch):
    class FullDisk(Writer):
        def write(self, connection, timestamp, data) -> None:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(recording, "Writer", FullDisk)
    rec = Recording(tmp_path / "bag", "sqlite3", flush_interval=0.05, distro="jazzy")
    rec.start()
    topic = rec.add_topic(plan_topic("/js", JOINT_STATE, [offer()], [], JOINT_STATE_HASH))
    rec.write(topic, 0, state_bytes(0))

    def refused() -> bool:
        try:
            rec.write(topic, 1, state_bytes(1))
        except RecordingError:
            return True
        return False

    assert wait_until(refused, WAIT)
    summary = rec.close()
    assert "No space left on device" in summary.error
    assert summary.line().startswith(f"bag {rec.path} is incomplete: ")
    assert not (rec.path / "metadata.yaml").exists()


def test_a_bag_that_cannot_be_created_is_refused_with_one_sentence(tmp_path):
    (tmp_path / "bag").mkdir()
    with pytest.raises(RecordingError, match="exists already; choose another folder"):
        Recording(tmp_path / "bag", "sqlite3", flush_interval=0.1).start()
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(RecordingError, match=r"bag '.*file/bag' cannot be created \(.*Not a directory"):
        Recording(tmp_path / "file" / "bag", "mcap", flush_interval=0.1).start()
    with pytest.raises(ValueError, match="unknown storage 'db'"):
        Recording(tmp_path / "x", "db", flush_interval=0.1)


@pytest.mark.parametrize(
    ("name", "msgtype", "namespace", "publishers", "why"),
    [
        ("/controller/equilibrium", "geometry_msgs/msg/PointStamped", "/", ["/"], None),
        ("/arm1/controller/stiffness", "sensor_msgs/msg/JointState", "/arm1", ["/arm1"], None),
        ("/arm1/controller/stiffness", "sensor_msgs/msg/JointState", "/arm1/", ["/arm1", "/x"], None),
        ("/controller/optimizer/regularization", "std_msgs/msg/Float64", "/", ["/"], "one name deep"),
        ("/controller/mode", "std_msgs/msg/String", "/", ["/"], "its type std_msgs/msg/String is not"),
        ("/controller/gains", "sensor_msgs/msg/JointState", "/", ["/other_stack"], "only in /other_stack"),
        ("/arm2/controller/gains", "sensor_msgs/msg/JointState", "/arm1", ["/arm1"], "not a /arm1/controller/"),
    ],
)
def test_graph_channel_keeps_the_recorder_s_own_controller_channels(name, msgtype, namespace, publishers, why):
    said = recording.graph_channel(name, msgtype, namespace, publishers)
    assert said is None if why is None else why in said
