"""What skelarm_ros takes from rosbags beyond its public API, checked against the installed (locked) version.

Each test names, when it fails, the rosbags internal that moved and what in this
package relies on it (all of it is in skelarm_ros.bags.rosbags_adapter).
"""

from __future__ import annotations

import inspect
import sqlite3
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest
from conftest import BAGS, REPO
from rosbags.rosbag2 import CompressionFormat, CompressionMode, Reader, StoragePlugin, Writer
from rosbags.rosbag2 import storage_mcap as mcap
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from ruamel.yaml import YAML

from skelarm_ros.bags import rosbags_adapter as adapter

STORE = get_typestore(Stores.ROS2_JAZZY)
T = STORE.types
ROSBAGS = version("rosbags")


def moved(what: str, who: str, error: object = "") -> str:
    """The sentence a failure gives: which internal moved, in which version, and what relies on it."""
    cause = f" ({type(error).__name__}: {error})" if isinstance(error, BaseException) else ""
    return (
        f"rosbags {ROSBAGS} changed {what}{cause}; {who} relies on it: "
        "adapt skelarm_ros/bags/rosbags_adapter.py to the new version (nothing else reaches rosbags' internals)"
    )


def joint_state(k: int):
    return T["sensor_msgs/msg/JointState"](
        header=T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=1, nanosec=k), frame_id=""),
        name=["a", "b"],
        position=np.array([float(k), -float(k)]),
        velocity=np.zeros(2),
        effort=np.zeros(2),
    )


def write(path: Path, count: int, storage: str = "sqlite3", mode: CompressionMode = CompressionMode.NONE) -> Path:
    writer = Writer(path, version=9, storage_plugin=StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3)
    writer.set_compression(mode, CompressionFormat.ZSTD)
    with writer:
        conn = writer.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=STORE)
        for k in range(count):
            message = joint_state(k)
            writer.write(conn, 1000 + k, STORE.serialize_cdr(message, message.__msgtype__))
    return path


def positions(source, topics=("/joint_states",)) -> list[float]:
    return [STORE.deserialize_cdr(data, msgtype).position[0] for _, msgtype, _, data in source(set(topics))]


def test_the_installed_rosbags_is_the_locked_one() -> None:
    pins = [line for line in (REPO / "requirements.lock").read_text().splitlines() if line.startswith("rosbags==")]
    assert len(pins) == 1, "requirements.lock pins no rosbags version (a line rosbags==X.Y.Z)"
    locked = pins[0].split("==", 1)[1].strip()
    assert locked == ROSBAGS, (
        f"rosbags {ROSBAGS} is installed but requirements.lock pins {locked}; "
        "run `make env` so these checks run against the locked version"
    )


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_a_directory_reader_has_one_reader_per_storage_file(tmp_path: Path, storage: str) -> None:
    bag = write(tmp_path / "bag", 5, storage)
    who = "reading a split bag's files side by side to merge them in log time (adapter.storage_of)"
    try:
        with Reader(bag) as reader:
            storages = reader.storage.storages  # type: ignore[attr-defined]
            assert len(storages) == 1, moved("the per-file readers of Reader.storage.storages (one per file)", who)
            connections = list(storages[0].connections)
            found = list(storages[0].messages(connections))
            kind = isinstance(storages[0], mcap.McapReader)
    except AttributeError as error:
        pytest.fail(moved("Reader.storage.storages or a per-file reader's connections/messages", who, error))
    assert [conn.topic for conn in connections] == ["/joint_states"], moved("a per-file reader's connections", who)
    assert [timestamp for _, timestamp, _ in found] == [1000, 1001, 1002, 1003, 1004], moved("messages()", who)
    assert kind == (storage == "mcap"), moved("the MCAP per-file reader class (storage_mcap.McapReader)", who)
    opened = adapter.storage_of(adapter.open_reader(bag, ros2=True), bag)
    assert opened.kind == storage
    assert opened.files == [bag / "metadata.yaml", *sorted(bag.glob(f"*.{'mcap' if storage == 'mcap' else 'db3'}"))]
    assert positions(opened.sources[0]) == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_a_split_bag_gives_one_source_per_file() -> None:
    bag = BAGS / "format_fixtures" / "db3"
    if not bag.exists():
        pytest.skip(f"shared bag {bag} is absent (set SKELARM_ROS_SHARED_DATA)")
    opened = adapter.storage_of(adapter.open_reader(bag, ros2=True), bag)
    files = sorted(bag.glob("*.db3"))
    assert len(files) == 5
    assert len(opened.sources) == len(files), moved(
        "Reader.storage.storages for a split bag (one reader per file)", "adapter.storage_of"
    )
    assert opened.files == [bag / "metadata.yaml", *files]


def test_per_message_compression_is_left_to_the_adapter(tmp_path: Path) -> None:
    bag = write(tmp_path / "bag", 3, "sqlite3", CompressionMode.MESSAGE)
    who = "decompressing each message of a per-message compressed bag (adapter.storage_of)"
    with Reader(bag) as reader:
        assert reader.compression_mode == "message"
        sub = reader.storage.storages[0]  # type: ignore[attr-defined]
        raw = [data for _, _, data in sub.messages(sub.connections)]
    assert all(data[:4] == b"\x28\xb5\x2f\xfd" for data in raw), moved(
        "what a per-file reader yields for a per-message compressed bag (no longer zstd frames)", who
    )
    opened = adapter.storage_of(adapter.open_reader(bag, ros2=True), bag)
    assert opened.notes == ["zstd compression per message"]
    assert positions(opened.sources[0]) == [0.0, 1.0, 2.0]


def test_the_mcap_record_readers_still_have_their_signatures(tmp_path: Path) -> None:
    who = "reading a truncated MCAP up to its damage (adapter.RecoveredMcap)"
    expected = {
        "decompress": ["data", "compression", "size", "crc"],
        "read_string": ["bio"],
        "read_bytes": ["bio"],
        "get_msgdef": ["schema"],
        "get_qos": ["metadata"],
    }
    for name, parameters in expected.items():
        function = getattr(mcap, name, None)
        assert function is not None, moved(f"rosbags.rosbag2.storage_mcap.{name} (gone)", who)
        assert list(inspect.signature(function).parameters) == parameters, moved(
            f"the parameters of rosbags.rosbag2.storage_mcap.{name}", who
        )
    assert mcap.Schema._fields == ("id", "name", "encoding", "data"), moved("storage_mcap.Schema's fields", who)


def test_a_truncated_mcap_is_recovered_up_to_its_damage(tmp_path: Path) -> None:
    bag = write(tmp_path / "bag", 20000, "mcap")
    whole = next(bag.glob("*.mcap"))
    cut = tmp_path / "cut.mcap"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    try:
        opened = adapter.recover_mcap(cut)
    except Exception as error:  # any failure here means rosbags moved
        pytest.fail(moved("the MCAP record readers", "adapter.RecoveredMcap", error))
    (conn,) = opened.connections
    values = positions(opened.sources[0])
    assert 0 < len(values) < 20000 and conn.msgcount == len(values)
    assert values == [float(k) for k in range(len(values))]
    assert conn.msgdef.data and conn.ext.serialization_format == "cdr"  # the stored definition and QoS came through
    assert opened.notes[-1] == f"recovered {len(values)} complete messages from truncated MCAP '{cut}'"


def test_commit_makes_a_recording_readable_before_it_is_closed(tmp_path: Path) -> None:
    who = "the recorder's periodic commit (adapter.commit)"
    writer = Writer(tmp_path / "bag", version=9, storage_plugin=StoragePlugin.SQLITE3)
    writer.open()
    conn = writer.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=STORE)
    for k in range(4):
        writer.write(conn, k, STORE.serialize_cdr(joint_state(k), "sensor_msgs/msg/JointState"))
    assert isinstance(getattr(writer.storage, "conn", None), sqlite3.Connection), moved(
        "Writer.storage.conn (the sqlite3 connection of a sqlite3 writer)", who
    )
    adapter.commit(writer)
    (db,) = (tmp_path / "bag").glob("*.db3")
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as other:
        assert other.execute("SELECT count(*) FROM messages").fetchone()[0] == 4, moved("what commit() commits", who)
    writer.close()
    mcap_writer = Writer(tmp_path / "mcap", version=9, storage_plugin=StoragePlugin.MCAP)
    with mcap_writer:
        adapter.commit(mcap_writer)  # MCAP writes its chunks by itself: nothing to commit, nothing raised


def test_field_definitions_still_name_the_nested_types() -> None:
    who = "checking that a type and every type in it are defined (adapter.referenced_types)"
    jazzy = STORE.fielddefs
    assert adapter.referenced_types(jazzy, "sensor_msgs/msg/JointState") == ["std_msgs/msg/Header"], moved(
        "Typestore.fielddefs' layout ((constants, [(field, (Nodetype, detail))]))", who
    )
    assert adapter.referenced_types(jazzy, "std_msgs/msg/Header") == ["builtin_interfaces/msg/Time"]
    custom = get_types_from_msg(
        "std_msgs/Header header\ngeometry_msgs/Point[3] corners\ngeometry_msgs/Point[] path\nfloat64[] x\n"
        "std_msgs/Header again",
        "test_msgs/msg/Shape",
    )
    assert adapter.referenced_types(custom, "test_msgs/msg/Shape") == [
        "std_msgs/msg/Header",
        "geometry_msgs/msg/Point",
    ], moved("how arrays and sequences of messages are laid out in Typestore.fielddefs", who)


def test_ros1_bytes_become_the_cdr_of_the_ros2_type() -> None:
    noetic = get_typestore(Stores.ROS1_NOETIC)
    message = noetic.types["std_msgs/msg/String"](data="hello")
    try:
        convert, migrated = adapter.ros1_to_ros2(noetic, STORE, "std_msgs/msg/String", "std_msgs/msg/String")
        cdr = convert(bytes(noetic.serialize_ros1(message, "std_msgs/msg/String")))
    except (ImportError, TypeError, AttributeError) as error:
        pytest.fail(moved("rosbags.convert.converter.generate_message_converter", "the player's ROS 1 bags", error))
    assert STORE.deserialize_cdr(cdr, "std_msgs/msg/String").data == "hello"
    assert migrated is False


def test_rosbags_writer_internals_are_where_the_adapter_reaches_for_them(tmp_path):
    """Fails when a rosbags release moves what rosbags_writer_as_rosbag2 changes; the message says what moved."""
    from rosbags.rosbag2.storage_sqlite3 import Sqlite3Writer

    for name in ("Channel", "write_string", "write_channel", "McapWriter"):
        assert hasattr(mcap, name), f"rosbags.rosbag2.storage_mcap has no {name} any more"
    assert mcap.Channel._fields == ("id", "schema", "topic", "message_encoding", "metadata"), (
        "rosbags' MCAP Channel record changed its fields"
    )
    assert "ros_distro" in Sqlite3Writer.SQLITE_SCHEMA, "rosbags' sqlite3 schema table has no ros_distro column"
    plugins = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}
    for storage, attributes in (("sqlite3", ("conn", "close")), ("mcap", ("channels", "channel_stats", "chunk"))):
        writer = Writer(tmp_path / storage, version=9, storage_plugin=plugins[storage])
        writer.open()
        for attribute in attributes:
            assert hasattr(writer.storage, attribute), f"rosbags' {storage} storage writer has no {attribute}"
        writer.close()
        # Unchanged, rosbags still writes its own name as the distribution: the adapter is still needed.
        metadata = YAML(typ="safe").load((tmp_path / storage / "metadata.yaml").read_text())
        assert metadata["rosbag2_bagfile_information"]["ros_distro"] == "rosbags", (
            "rosbags now writes the distribution itself; rosbags_writer_as_rosbag2 may go"
        )
    with pytest.raises(adapter.RosbagsMoved, match="not the one pinned"):
        unopened = Writer(tmp_path / "unopened", version=9)
        adapter.rosbags_writer_as_rosbag2(unopened, "jazzy")


def test_missing_field_walks_the_field_definitions_of_nested_messages():
    fielddefs = STORE.fielddefs
    state = "sensor_msgs/msg/JointState"
    assert adapter.missing_field(fielddefs, state, "header.stamp.nanosec") is None, moved(
        "Typestore.fielddefs", "Bag.lacking (a bag's definitions checked before reading)"
    )
    assert adapter.missing_field(fielddefs, state, "header.stamp.nsec") == "header.stamp.nsec"
    assert adapter.missing_field(fielddefs, state, "nale") == "nale"
    assert adapter.missing_field(fielddefs, state, "name.first") == "name.first"  # not a message
    assert adapter.missing_field(fielddefs, "no/msg/Such", "data") == "data"
