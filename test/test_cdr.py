"""JointState CDR read and written directly (skelarm_ros.bags.cdr), against rclpy's and rosbags' own serialization."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rclpy.serialization import deserialize_message, serialize_message
from rosbags.typesys import Stores, get_typestore
from sensor_msgs.msg import JointState

from skelarm_ros.bags.cdr import JointStateLayout, JointStateWriter

STORE = get_typestore(Stores.ROS2_JAZZY)
FLOATS = st.floats(allow_nan=True, allow_infinity=True)
FRAMES = st.sampled_from(["", "base", "b\u00e4se_link", "x" * 7])  # every length modulo 4, one not ASCII
NAMES = st.lists(
    st.sampled_from(["a", "b", "joint_1", "\u00e9lbow", "wrist_roll"]), min_size=0, max_size=4, unique=True
)
COUNTS = st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 4))
CASES = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def message(sec: int, nanosec: int, frame: str, names: list[str], arrays: list[list[float]]) -> JointState:
    msg = JointState(name=names, position=arrays[0], velocity=arrays[1], effort=arrays[2])
    msg.header.frame_id = frame
    msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
    return msg


def flat(msg) -> bytes:
    """Stamp and arrays of a decoded message, bit for bit."""
    stamp = msg.header.stamp
    values = [stamp.sec, stamp.nanosec, *msg.position, *msg.velocity, *msg.effort]
    return np.array(values, dtype=np.float64).tobytes()


def same(a, b) -> bool:
    return list(a.name) == list(b.name) and a.header.frame_id == b.header.frame_id and flat(a) == flat(b)


STAMPS = st.tuples(st.integers(-(2**31), 2**31 - 1), st.integers(0, 2**32 - 1))


@st.composite
def states(draw, frame=FRAMES, names=NAMES, counts=COUNTS):
    arrays = [draw(st.lists(FLOATS, min_size=n, max_size=n)) for n in draw(counts)]
    return message(*draw(STAMPS), draw(frame), draw(names), arrays)


@CASES
@given(msg=states())
def test_the_writer_writes_what_rclpy_and_rosbags_decode_to_the_same_message(msg):
    counts = (len(msg.position), len(msg.velocity), len(msg.effort))
    writer = JointStateWriter(list(msg.name), counts, msg.header.frame_id)
    stamp = msg.header.stamp
    data = writer.pack(stamp.sec, stamp.nanosec, msg.position, msg.velocity, msg.effort)
    assert same(deserialize_message(data, JointState), msg)
    decoded = STORE.deserialize_cdr(data, "sensor_msgs/msg/JointState")  # rosbags allows no stray bytes
    assert same(decoded, msg)
    assert data == STORE.serialize_cdr(decoded, "sensor_msgs/msg/JointState")  # zero padding, as rosbags writes


@CASES
@given(first=states(), other=states(), data=st.data())
def test_the_layout_reader_reads_what_rclpy_reads_or_declines(first, other, data):
    layout = JointStateLayout()
    raw = serialize_message(first)  # rmw_fastrtps leaves whatever its buffer held in padding bytes
    assert layout.learn(raw, first)
    assert layout.names == list(first.name)
    assert layout.values(raw) is not None
    # The same layout with other values is read; anything else is declined or read exactly.
    again = message(
        *data.draw(STAMPS),
        first.header.frame_id,
        list(first.name),
        [
            data.draw(st.lists(FLOATS, min_size=len(a), max_size=len(a)))
            for a in (first.position, first.velocity, first.effort)
        ],
    )
    for candidate, must_read in ((again, True), (other, False)):
        wire = serialize_message(candidate)
        values = layout.values(wire)
        if must_read:
            assert values is not None
        if values is not None:
            assert np.array(values, dtype=np.float64).tobytes() == flat(deserialize_message(wire, JointState))
            assert list(candidate.name) == layout.names


def test_the_layout_reader_declines_other_counts_of_the_same_length_and_big_endian():
    names = ["a", "b", "c"]
    first = message(0, 5, "", names, [[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    rosbags_first = STORE.deserialize_cdr(serialize_message(first), "sensor_msgs/msg/JointState")
    layout = JointStateLayout()
    assert layout.learn(serialize_message(first), first)
    same_length = message(0, 5, "", names, [[1, 2, 3], [4, 5, 6, 7], [8, 9]])  # 3+4+2 floats: as long as 3+3+3
    wire = JointStateWriter(names, (3, 4, 2)).pack(0, 5, [1, 2, 3], [4, 5, 6, 7], [8, 9])
    assert len(wire) == len(JointStateWriter(names, (3, 3, 3)).pack(0, 5, *[[0.0] * 3] * 3))
    assert same(deserialize_message(wire, JointState), same_length)
    assert layout.values(wire) is None
    big_endian = STORE.serialize_cdr(rosbags_first, "sensor_msgs/msg/JointState", little_endian=False)
    assert layout.values(big_endian) is None
    assert not JointStateLayout().learn(big_endian, first)
    assert layout.values(b"") is None and layout.values(b"\x00\x01\x00\x00") is None


def test_a_layout_that_does_not_read_its_message_back_is_not_learned():
    msg = message(1, 2, "", ["a"], [[1.0], [], []])
    other = message(1, 2, "", ["a"], [[2.0], [], []])
    assert not JointStateLayout().learn(serialize_message(other), msg)


def test_renamed_joints_of_the_same_length_are_declined():
    layout = JointStateLayout()
    first = message(1, 2, "", ["ab", "c"], [[1.0, 2.0], [], []])
    assert layout.learn(serialize_message(first), first)
    renamed = message(1, 2, "", ["ac", "c"], [[1.0, 2.0], [], []])
    assert layout.values(serialize_message(renamed)) is None
