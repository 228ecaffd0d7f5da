"""Bags and logs: reading any bag, bag_to_log, log_to_bag, on real and self-written bags."""

from __future__ import annotations

import io
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import skelarm
from bagwriter import damage_definition
from conftest import BAGS, SCENARIOS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from skelarm_ros import cli
from skelarm_ros.bags.bag_to_log import (
    Collected,
    ConversionError,
    Samples,
    TopicPlan,
    align,
    bag_to_log,
    collect,
    log_extra,
    main,
    plan_topics,
    resolve_skeleton,
)
from skelarm_ros.bags.bag_to_log import collection as collection_stage
from skelarm_ros.bags.log_to_bag import LogError, log_to_bag
from skelarm_ros.bags.reader import Bag, BagError, open_bag, read_messages
from skelarm_ros.sim.scenario import load_arm
from skelarm_ros.sim.urdf import skeleton_to_urdf
from skelarm_ros.sim.urdf_reader import skeleton_from_urdf

STORE = get_typestore(Stores.ROS2_JAZZY)
T = STORE.types
FIXTURES = BAGS / "format_fixtures"
AERIAL = BAGS / "aerial_servo_arm"
WRENCH = "geometry_msgs/msg/WrenchStamped"
POINT = "geometry_msgs/msg/PointStamped"


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"shared bag {path} is absent (set SKELARM_ROS_SHARED_DATA)")
    return path


def stamp(ns: int):
    return T["builtin_interfaces/msg/Time"](sec=ns // 10**9, nanosec=ns % 10**9)


def joint_state(ns: int, names, position, velocity=(), effort=()):
    return T["sensor_msgs/msg/JointState"](
        header=T["std_msgs/msg/Header"](stamp=stamp(ns), frame_id=""),
        name=list(names),
        position=np.asarray(position, dtype=np.float64),
        velocity=np.asarray(velocity, dtype=np.float64),
        effort=np.asarray(effort, dtype=np.float64),
    )


def wrench(ns: int, fx: float, fy: float):
    vec = T["geometry_msgs/msg/Vector3"]
    return T["geometry_msgs/msg/WrenchStamped"](
        header=T["std_msgs/msg/Header"](stamp=stamp(ns), frame_id="base"),
        wrench=T["geometry_msgs/msg/Wrench"](force=vec(x=fx, y=fy, z=0.0), torque=vec(x=0.0, y=0.0, z=0.0)),
    )


def float_array(values):
    return T["std_msgs/msg/Float64MultiArray"](
        layout=T["std_msgs/msg/MultiArrayLayout"](dim=[], data_offset=0), data=np.asarray(values, dtype=np.float64)
    )


def write_bag(path: Path, messages, *, storage="sqlite3") -> Path:
    """Write ``(topic, log_ns, message)`` into an uncompressed rosbag2 bag with rosbags."""
    return write_compressed(path, messages, storage, CompressionMode.NONE)


def write_compressed(path: Path, messages, storage: str, mode: CompressionMode) -> Path:
    plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
    writer = Writer(path, version=9, storage_plugin=plugin)
    writer.set_compression(mode, CompressionFormat.ZSTD)
    with writer:
        conns = {}
        for topic, log_ns, message in messages:
            if topic not in conns:
                conns[topic] = writer.add_connection(topic, message.__msgtype__, typestore=STORE)
            writer.write(conns[topic], log_ns, STORE.serialize_cdr(message, message.__msgtype__))
    return path


def arm_messages(frames: int = 50, names=("a", "b", "c")):
    """States every 10 ms, commands stamped with their state, a wrench every other state."""
    out = []
    for k in range(frames):
        ns = 1_000_000_000 + k * 10_000_000
        q = [0.1 * k + j for j in range(len(names))]
        out.append(("/joint_states", ns + 100, joint_state(ns, names, q, [1.0] * len(names), [0.0] * len(names))))
        out.append(("/joint_commands", ns + 200, joint_state(ns, names, [], [], [k + 0.5 * j for j in range(3)])))
        if k % 2 == 0:
            out.append(("/tip_wrench", ns + 50, wrench(ns, float(k), -float(k))))
    return out


# ----------------------------------------------------------------------------- storage


@pytest.mark.parametrize("name", ["db3", "db3_zstd", "mcap", "mcap_zstd"])
def test_reader_reads_every_message_of_the_format_fixtures(name):
    path = need(FIXTURES / name)
    with open_bag(path) as bag:
        times = [log for _, _, log, _ in bag.messages()]
        assert len(times) == bag.message_count > 0
        assert times == sorted(times)
    with pytest.raises(ConversionError, match="no sensor_msgs/msg/JointState topic"):
        bag_to_log(path, path.name + ".sklog.npz")


def test_split_bag_is_merged_in_time_order_over_its_five_files():
    path = need(FIXTURES / "db3")
    with open_bag(path) as bag:
        assert sum(f.suffix == ".db3" for f in bag.files) == 5
        times = [log for _, _, log, _ in bag.raw_messages()]
    assert len(times) == 6074 and times == sorted(times)


def test_bare_storage_files_open(tmp_path):
    db3 = need(FIXTURES / "db3" / "part_0.db3")
    mcap = need(FIXTURES / "mcap" / "part_0.mcap")
    for path in (db3, mcap):
        assert sum(1 for _ in read_messages(path)) > 0


@pytest.mark.parametrize(
    ("storage", "mode"),
    [
        ("sqlite3", CompressionMode.NONE),
        ("sqlite3", CompressionMode.FILE),
        ("sqlite3", CompressionMode.MESSAGE),
        ("mcap", CompressionMode.NONE),
        ("mcap", CompressionMode.MESSAGE),
        ("mcap", CompressionMode.STORAGE),
    ],
)
def test_self_written_bags_convert_in_every_storage_and_compression(tmp_path, storage, mode):
    bag = write_compressed(tmp_path / "bag", arm_messages(), storage, mode)
    summary = bag_to_log(bag, tmp_path / "out.sklog.npz")
    log = skelarm.StateLog.load(tmp_path / "out.sklog.npz")
    assert summary.frames == len(log) == 50
    assert log.extra["joint_names"] == ["a", "b", "c"]
    np.testing.assert_array_equal(log.channel("q")[:, 1], 0.1 * np.arange(50) + 1)
    np.testing.assert_array_equal(log.channel("tau")[:, 0], np.arange(50))  # commands, stamped per state
    force = log.channel("ext_force")  # held from the even frames
    np.testing.assert_array_equal(force[:, 0], np.arange(50) // 2 * 2)
    assert log.extra["effort"]["source"] == "commands"
    assert log.extra["effort"]["timing"] == "applied_from_frame"
    assert {Path(s["path"]).name for s in log.extra["sources"]} >= {"metadata.yaml"}
    assert all(len(s["sha256"]) == 64 for s in log.extra["sources"])


def test_stored_definitions_and_default_store_give_the_same_values(tmp_path):
    bag = write_bag(tmp_path / "bag", arm_messages(5))
    # rosbags writes definitions; a bag without them (the aerial bags) uses the Jazzy store.
    with open_bag(bag) as opened:
        assert opened.topics["/joint_states"].decodable
        first = next(opened.messages(["/joint_states"]))[3]
    np.testing.assert_array_equal(first.position, [0.0, 1.0, 2.0])


# ----------------------------------------------------------------------------- the joint states' fast reader

FLOATS = st.floats(allow_nan=True, allow_infinity=True)
LAYOUTS = st.tuples(
    st.sampled_from(["", "base", "b\u00e4se_link", "x" * 7]),  # frame ids of every length modulo 4, one not ASCII
    st.lists(st.sampled_from(["a", "b", "joint_1", "\u00e9lbow", "wrist_roll"]), min_size=1, max_size=4, unique=True),
)
SHAPED = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def shaped_state(ns: int, frame: str, names, counts, data) -> object:
    """A JointState with ``counts`` values in position, velocity and effort, drawn from ``data``."""
    arrays = [data.draw(st.lists(FLOATS, min_size=n, max_size=n)) for n in counts]
    message = joint_state(ns, names, *arrays)
    message.header.frame_id = frame
    return message


@SHAPED
@given(layouts=st.lists(LAYOUTS, min_size=1, max_size=3), data=st.data())
def test_bag_to_log_gives_the_same_log_with_and_without_the_layout_reader(tmp_path_factory, layouts, data):
    folder = tmp_path_factory.mktemp("layouts")
    messages = []
    for k in range(data.draw(st.integers(1, 12))):
        frame, names = data.draw(st.sampled_from(layouts))
        n = len(names)
        counts = data.draw(st.sampled_from([(n, n, n), (n, n, n), (n, 0, 0), (n, n, 0)]))
        messages.append(("/joint_states", 10 + k, shaped_state(10 + k, frame, names, counts, data)))
    bag = write_bag(folder / "bag", messages, storage=data.draw(st.sampled_from(["sqlite3", "mcap"])))
    fast = bag_to_log(bag, folder / "fast.sklog.npz")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Bag, "standard", lambda self, msgtype: False)
        slow = bag_to_log(bag, folder / "slow.sklog.npz")
    assert fast.extra["counts"] == slow.extra["counts"]
    with np.load(folder / "fast.sklog.npz") as one, np.load(folder / "slow.sklog.npz") as other:
        assert sorted(one.files) == sorted(other.files)
        for key in one.files:
            if key != "__meta__":
                assert one[key].tobytes() == other[key].tobytes(), key


def test_only_standard_joint_states_take_the_layout_reader(tmp_path):
    bag = write_bag(tmp_path / "bag", arm_messages(3))
    with open_bag(bag) as opened:
        assert opened.standard("sensor_msgs/msg/JointState")
        opened.typestore.fielddefs["std_msgs/msg/Header"] = ([], [])  # a bag that defines Header its own way
        assert not opened.standard("sensor_msgs/msg/JointState")


@pytest.mark.parametrize("clock", ["header", "log"])
def test_a_command_logged_before_the_first_state_still_applies_to_it(tmp_path, clock):
    msgs = arm_messages(4)
    first_command = next(i for i, (topic, _, _) in enumerate(msgs) if topic == "/joint_commands")
    topic, _, message = msgs.pop(first_command)
    msgs.insert(0, (topic, 1_000_000_000 - 50, message))  # a recorder took it before the state it answers
    bag = write_bag(tmp_path / "bag", msgs)
    summary = bag_to_log(bag, tmp_path / "out.sklog.npz", clock=clock)
    assert summary.masked["tau"] == 0
    log = skelarm.StateLog.load(tmp_path / "out.sklog.npz")
    np.testing.assert_array_equal(log.channel("tau")[:, 0], np.arange(4))


def test_control_characters_from_a_bag_reach_the_log_written_out(tmp_path):
    names = ["a\x00", "b\r"]  # a damaged or odd recording: joint names TOML cannot hold as they are
    msgs = [("/joint_states", 10 + k, joint_state(10 + k, names, [1.0, 2.0], [0.0, 0.0], [0.0, 0.0])) for k in range(3)]
    bag = write_bag(tmp_path / "bag", msgs)
    bag_to_log(bag, tmp_path / "out.sklog.npz")
    log = skelarm.StateLog.load(tmp_path / "out.sklog.npz")
    assert log.extra["joint_names"] == ["a\\x00", "b\\x0d"]
    np.testing.assert_array_equal(log.channel("q")[0], [1.0, 2.0])


# ----------------------------------------------------------------------------- content rules


def test_names_change_between_messages_are_mapped_by_name_and_a_missing_joint_is_masked(tmp_path):
    msgs = [
        ("/joint_states", 10, joint_state(10, ["a", "b"], [1, 2], [3, 4], [5, 6])),
        ("/joint_states", 20, joint_state(20, ["b", "a"], [20, 10], [], [])),  # reordered, no velocity/effort
        ("/joint_states", 30, joint_state(30, ["b", "x"], [200, 7], [1, 1], [1, 1])),  # 'a' disappeared
        ("/joint_states", 40, joint_state(40, ["a", "b"], [np.nan, 4], [3, 4], [5, 6])),  # NaN
    ]
    bag = write_bag(tmp_path / "bag", msgs)
    summary = bag_to_log(bag, tmp_path / "out.sklog.npz")
    log = skelarm.StateLog.load(tmp_path / "out.sklog.npz")
    q = log.channel("q")
    np.testing.assert_array_equal(q[:3], [[1, 2], [10, 20], [np.nan, 200]])
    np.testing.assert_array_equal(log.channel("valid_q"), [[1, 1], [1, 1], [0, 1], [0, 1]])
    np.testing.assert_array_equal(log.channel("valid_dq")[1], [0, 0])
    assert summary.masked == {"q": 2, "dq": 3, "tau": 3}
    assert log.extra["counts"]["unknown_joint_names"] == ["x"]
    assert log.extra["effort"]["source"] == "joint_states"
    assert log.extra["effort"]["timing"] == "applied_until_frame"


def test_out_of_order_and_duplicate_stamps_are_kept_in_log_order_and_reported(tmp_path):
    stamps = [10, 30, 20, 20, 40]
    msgs = [("/joint_states", 100 + i, joint_state(s, ["a"], [float(i)])) for i, s in enumerate(stamps)]
    bag = write_bag(tmp_path / "bag", msgs)
    bag_to_log(bag, tmp_path / "out.sklog.npz")
    log = skelarm.StateLog.load(tmp_path / "out.sklog.npz")
    np.testing.assert_array_equal(log.channel("q"), np.arange(5.0).reshape(5, 1))
    np.testing.assert_allclose(log.times, (np.array(stamps) - 10) * 1e-9)
    assert log.extra["counts"]["out_of_order"] == 1
    assert log.extra["counts"]["duplicate_stamps"] == 1


def test_clock_log_and_zero_stamps_fall_back_to_log_time(tmp_path):
    wall = 1_700_000_000_000_000_000  # a driver stamping with the wall clock, one stamp left unset
    msgs = [("/joint_states", 1000 * (i + 1), joint_state(0 if i == 1 else wall + i, ["a"], [i])) for i in range(3)]
    bag = write_bag(tmp_path / "bag", msgs)
    header = bag_to_log(bag, tmp_path / "h.sklog.npz")
    assert header.extra["counts"]["stamp_fallbacks"] == 1
    log = bag_to_log(bag, tmp_path / "l.sklog.npz", clock="log")
    assert log.extra["clock"] == "log"
    np.testing.assert_allclose(skelarm.StateLog.load(tmp_path / "l.sklog.npz").times, [0, 1e-6, 2e-6])


def test_float_array_commands_are_held_until_the_next_state(tmp_path):
    msgs = []
    for k in range(4):
        msgs.append(("/joint_states", 100 * k, joint_state(100 * k, ["j1", "j2"], [k, k])))
        msgs.append(("/effort_controller/commands", 100 * k + 50, float_array([k, -k])))
    bag = write_bag(tmp_path / "bag", msgs)
    summary = bag_to_log(bag, tmp_path / "out.sklog.npz")
    log = skelarm.StateLog.load(tmp_path / "out.sklog.npz")
    np.testing.assert_array_equal(log.channel("tau"), [[0, 0], [1, -1], [2, -2], [3, -3]])
    assert summary.extra["topics"]["commands"]["type"] == "std_msgs/msg/Float64MultiArray"


def test_joints_option_orders_the_columns(tmp_path):
    bag = write_bag(tmp_path / "bag", arm_messages(3))
    assert main([str(bag), "-o", str(tmp_path / "o.sklog.npz"), "--joints", "c,a"]) == 0
    log = skelarm.StateLog.load(tmp_path / "o.sklog.npz")
    np.testing.assert_array_equal(log.channel("q")[0], [2.0, 0.0])
    assert log.extra["joint_names"] == ["c", "a"]


def test_an_empty_joints_option_is_a_usage_error(tmp_path, capsys):
    bag = write_bag(tmp_path / "bag", arm_messages(3))
    assert main([str(bag), "-o", str(tmp_path / "o.sklog.npz"), "--joints", " , "]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: bag_to_log ")
    assert err.endswith("bag_to_log: error: argument --joints: empty; give joint names separated by commas\n")
    assert not (tmp_path / "o.sklog.npz").exists()


def test_the_package_runs_as_a_module_too(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "skelarm_ros.bags.bag_to_log", str(tmp_path / "missing"), "-o", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1 and done.stderr.startswith("bag_to_log: error: bag "), done.stderr


def test_the_command_line_says_a_warning_and_the_log_s_notes_as_notes_once_each(tmp_path, capsys):
    messages = [("/joint_states", k, joint_state(k, [], [float(k), 0.0])) for k in range(1, 4)]  # no names
    messages.append(("/robot_description", 4, text("<robot name='not an arm'/>")))
    bag = write_bag(tmp_path / "bag", messages)
    assert main([str(bag), "-o", str(tmp_path / "o.sklog.npz")]) == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert lines[0] == (
        "bag_to_log: note: joint states on '/joint_states' have an empty name list; "
        "naming the joints ['j1', 'j2'] in position order (pass --joints to name them)"
    )
    assert len(lines) == 2 and lines[1].startswith("bag_to_log: note: robot_description could not be read"), lines
    assert captured.out.startswith("wrote ")


def test_skeleton_round_trips_through_the_urdf():
    arm = skelarm.Skeleton.from_toml(SCENARIOS / "base_offset_robot.toml") if SCENARIOS.is_dir() else None
    if arm is None:
        pytest.skip(f"shared scenarios absent at {SCENARIOS}")
    back, names = skeleton_from_urdf(skeleton_to_urdf(arm, ["s", "e", "w"][: arm.num_joints]))
    assert names == ["s", "e", "w"][: arm.num_joints]
    assert back.to_dict() == arm.to_dict()


# ----------------------------------------------------------------------------- log_to_bag round trip


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_log_to_bag_then_bag_to_log_gives_back_the_arrays(tmp_path, storage):
    if not SCENARIOS.is_dir():
        pytest.skip(f"shared scenarios absent at {SCENARIOS}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log = skelarm.run_scenario(skelarm.load_scenario(SCENARIOS / "reach.toml"))
    force = np.column_stack([np.sin(log.times), np.cos(log.times)])
    arrays = log.to_arrays()
    with_force = skelarm.StateLog(log.build_skeleton(), producer="test")
    for k, t in enumerate(arrays["time"]):
        with_force.record(
            t, **{name: arrays[name][k] for name in log.channel_names}, ext_force=force[k], stiffness=float(k)
        )
    log_to_bag(with_force, tmp_path / "bag", storage=storage)
    bag_to_log(tmp_path / "bag", tmp_path / "back.sklog.npz")
    back = skelarm.StateLog.load(tmp_path / "back.sklog.npz")
    for name in ("q", "dq", "tau", "ext_force", "q_ref", "error", "stiffness"):
        np.testing.assert_array_equal(back.channel(name), with_force.channel(name), err_msg=name)
    np.testing.assert_allclose(back.times, with_force.times, atol=1e-9)
    assert back.build_skeleton().to_dict() == log.build_skeleton().to_dict()
    with open_bag(tmp_path / "bag") as bag:  # effort convention: frame k carries tau[k-1], zero at k=0
        efforts = [m.effort for _, _, _, m in bag.messages(["/joint_states"])]
    np.testing.assert_array_equal(efforts[0], [0.0, 0.0])
    np.testing.assert_array_equal(efforts[5], log.channel("tau")[4])


def test_log_to_bag_refuses_an_existing_output(tmp_path):
    (tmp_path / "bag").mkdir()
    log = skelarm.StateLog()
    log.record(0.0, q=[0.0], dq=[0.0], tau=[0.0])
    with pytest.raises(LogError, match="exists already"):
        log_to_bag(log, tmp_path / "bag")


# ----------------------------------------------------------------------------- real bags


def test_aerial_bag_with_several_joint_state_topics_asks_which(tmp_path, capsys):
    path = need(AERIAL / "ros2bag_killed_on_contact")
    out = tmp_path / "out.sklog.npz"
    assert main([str(path), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "3 sensor_msgs/msg/JointState topics" in err and "/servo/out/state (277 messages)" in err
    assert "--joint-topic" in err and "Traceback" not in err
    assert not out.exists()


def test_aerial_bag_converts_with_empty_names_skipped_px4_types_and_masks(tmp_path):
    path = need(AERIAL / "ros2bag_killed_on_contact")
    summary = bag_to_log(path, tmp_path / "out.sklog.npz", joint_topic="/servo/out/state")
    assert len(summary.conversion.said) == 1 and "empty name list" in summary.conversion.said[0]  # said, not warned
    log = skelarm.StateLog.load(tmp_path / "out.sklog.npz")
    assert log.extra["joint_names"] == ["j1", "j2", "j3"]
    assert len(log) == 277 and np.isfinite(log.channel("q")).all()
    assert any("px4_msgs/msg/VehicleStatus" in note for note in log.extra["notes"])
    assert summary.masked["tau"] == 277 * 3  # effort arrays are empty: NaN and masked, not deleted


def test_aerial_bag_zero_stamps_fall_back_to_log_time(tmp_path):
    path = need(AERIAL / "ros2bag_servo_serial_log")
    summary = bag_to_log(path, tmp_path / "o.sklog.npz", joint_topic="/servo/in/references/joint_references")
    assert "empty name list" in summary.conversion.notes[0]
    assert summary.extra["counts"]["stamp_fallbacks"] == summary.frames == 21
    assert summary.masked["dq"] == 21 * 3


# ----------------------------------------------------------------------------- bad input


def test_bad_inputs_give_one_sentence_and_leave_no_output(tmp_path, capsys):
    out = tmp_path / "out.sklog.npz"
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    garbage = tmp_path / "bad.db3"
    garbage.write_bytes(b"not a database at all" * 100)
    empty = tmp_path / "empty.mcap"
    empty.write_bytes(b"")
    folder = tmp_path / "folder"
    folder.mkdir()
    cases = {
        str(tmp_path / "missing"): "does not exist",
        str(text): "is not a bag",
        str(garbage): "truncated or not a bag",
        str(empty): "is empty",
        str(folder): "is not a bag",
    }
    for path, phrase in cases.items():
        assert main([path, "-o", str(out)]) == 1
        err = capsys.readouterr().err
        assert phrase in err and "Traceback" not in err, (path, err)
        assert err.count("\n") == 1
        assert not out.exists()
        assert not list(tmp_path.glob(".out.sklog.npz.*"))


def test_a_chosen_topic_of_the_wrong_type_is_named(tmp_path):
    bag = write_bag(tmp_path / "bag", arm_messages(3))
    with pytest.raises(ConversionError, match=r"'/tip_wrench' \(--joint-topic\) is geometry_msgs/msg/WrenchStamped"):
        bag_to_log(bag, tmp_path / "o.sklog.npz", joint_topic="/tip_wrench")
    with pytest.raises(ConversionError, match="has no topic '/nope'"):
        bag_to_log(bag, tmp_path / "o.sklog.npz", command_topic="nope")


def test_a_missing_optional_topic_says_it_is_optional_and_what_to_drop(tmp_path):
    messages = [item for item in arm_messages(3) if item[0] != "/tip_wrench"]
    bag = write_bag(tmp_path / "bag", messages)
    with pytest.raises(ConversionError) as wrench:
        bag_to_log(bag, tmp_path / "o.sklog.npz", wrench_topic="tip_wrench")
    assert "has no topic '/tip_wrench' (--wrench-topic); the tip force is optional: drop --wrench-topic" in str(
        wrench.value
    )
    with pytest.raises(ConversionError, match=r"the commands are optional: drop --command-topic"):
        bag_to_log(bag, tmp_path / "o.sklog.npz", command_topic="/effort_controller/commands")
    with pytest.raises(ConversionError) as joints:
        bag_to_log(bag, tmp_path / "o.sklog.npz", joint_topic="/arm/joint_states")
    assert "are optional" not in str(joints.value) and "is optional" not in str(joints.value)  # joint states are not
    assert not (tmp_path / "o.sklog.npz").exists()
    bag_to_log(bag, tmp_path / "o.sklog.npz")  # dropped, it converts


def test_truncated_mcap_fails_unless_recover_is_asked(tmp_path):
    msgs = [
        ("/joint_states", k * 1000, joint_state(k * 1000, ["a"], [float(k)] * 1, [0.0], [0.0])) for k in range(30000)
    ]
    bag = write_bag(tmp_path / "bag", msgs, storage="mcap")
    mcap = next(bag.glob("*.mcap"))
    cut = tmp_path / "cut.mcap"
    cut.write_bytes(mcap.read_bytes()[: mcap.stat().st_size // 2])
    out = tmp_path / "o.sklog.npz"
    out.write_bytes(b"previous")
    with pytest.raises(BagError, match="pass --recover"):
        bag_to_log(cut, out)
    assert out.read_bytes() == b"previous"  # a failure leaves the old output untouched
    summary = bag_to_log(cut, out, recover=True)
    log = skelarm.StateLog.load(out)
    assert 0 < summary.frames < 30000
    np.testing.assert_array_equal(log.channel("q")[:, 0], np.arange(summary.frames))
    assert any("recovered" in note for note in log.extra["notes"])


def test_a_truncated_mcap_inside_its_bag_folder_is_recovered_and_its_refusal_names_recover(tmp_path, capsys):
    msgs = [
        ("/joint_states", k * 1000, joint_state(k * 1000, ["a"], [float(k)] * 1, [0.0], [0.0])) for k in range(30000)
    ]
    bag = write_bag(tmp_path / "bag", msgs, storage="mcap")  # metadata.yaml stays: it describes the whole run
    mcap = next(bag.glob("*.mcap"))
    mcap.write_bytes(mcap.read_bytes()[: mcap.stat().st_size // 2])
    out = tmp_path / "o.sklog.npz"
    assert main([str(bag), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pass --recover to read the messages written before the damage" in err, err
    assert not out.exists()
    assert main([str(bag), "-o", str(out), "--recover"]) == 0
    log = skelarm.StateLog.load(out)
    frames = len(log)
    assert 0 < frames < 30000
    np.testing.assert_array_equal(log.channel("q")[:, 0], np.arange(frames))
    assert any(f"recovered {frames} complete messages" in note for note in log.extra["notes"])
    assert any(source["path"].endswith("metadata.yaml") for source in log.extra["sources"])


def test_recover_reads_a_complete_file_of_a_split_mcap_folder_whole_and_the_truncated_one_to_its_damage(tmp_path):
    first = write_bag(
        tmp_path / "first", [("/joint_states", k, joint_state(k, ["a"], [float(k)])) for k in range(50)], storage="mcap"
    )
    rest = [("/joint_states", k, joint_state(k, ["a"], [float(k)])) for k in range(50, 30000)]
    second = write_bag(tmp_path / "second", rest, storage="mcap")
    folder = tmp_path / "split"
    folder.mkdir()
    next(first.glob("*.mcap")).rename(folder / "split_0.mcap")
    data = next(second.glob("*.mcap")).read_bytes()
    (folder / "split_1.mcap").write_bytes(data[: len(data) // 2])
    meta = (second / "metadata.yaml").read_text().replace("- second.mcap", "- split_0.mcap\n  - split_1.mcap")
    (folder / "metadata.yaml").write_text(meta)
    with pytest.raises(BagError, match="pass --recover"):
        open_bag(folder)
    with open_bag(folder, recover=True) as opened:
        values = [message.position[0] for *_, message in opened.messages()]
        notes = opened.notes
    assert values[:50] == [float(k) for k in range(50)] and values == [float(k) for k in range(len(values))]
    assert 50 < len(values) < 30000
    assert [note for note in notes if "recovered" in note] == [
        f"recovered {len(values) - 50} complete messages from truncated MCAP '{folder / 'split_1.mcap'}'"
    ]


def test_progress_bar_and_skelarm_ros_run(tmp_path, capsys):
    bag = write_bag(tmp_path / "bag", arm_messages(2500))
    stream = io.StringIO()
    bag_to_log(bag, tmp_path / "p.sklog.npz", progress=stream)
    assert "100%" in stream.getvalue()
    if "bag_to_log" not in cli.executables():
        pytest.skip("the package is not installed with its console scripts")
    assert cli.main(["run", "bag_to_log", str(bag), "-o", str(tmp_path / "r.sklog.npz")]) == 0
    assert "frames of joints ['a', 'b', 'c']" in capsys.readouterr().out


def test_ros1_bag_converts(tmp_path):
    from rosbags.rosbag1 import Writer as Writer1
    from rosbags.typesys import Stores, get_typestore

    ros1 = get_typestore(Stores.ROS1_NOETIC)
    header = ros1.types["std_msgs/msg/Header"]
    time = ros1.types["builtin_interfaces/msg/Time"]
    path = tmp_path / "arm.bag"
    with Writer1(path) as writer:
        states = writer.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=ros1)
        for k in range(20):
            ns = 2_000_000_000 + k * 5_000_000
            message = ros1.types["sensor_msgs/msg/JointState"](
                header=header(seq=k, stamp=time(sec=ns // 10**9, nanosec=ns % 10**9), frame_id=""),
                name=["b", "a"],
                position=np.array([0.5 * k, float(k)]),
                velocity=np.array([1.0, 2.0]),
                effort=np.array([3.0, 4.0]),
            )
            writer.write(states, ns + 1000, ros1.serialize_ros1(message, "sensor_msgs/msg/JointState"))
    out = tmp_path / "arm.sklog.npz"
    summary = bag_to_log(path, out, joints=["a", "b"])
    log = skelarm.StateLog.load(out)
    assert summary.frames == len(log) == 20
    np.testing.assert_array_equal(log.channel("q")[:, 0], np.arange(20.0))
    np.testing.assert_array_equal(log.channel("q")[:, 1], 0.5 * np.arange(20.0))
    np.testing.assert_array_equal(log.channel("dq")[0], [2.0, 1.0])
    np.testing.assert_allclose(log.times, 0.005 * np.arange(20), atol=1e-12)


def test_simulated_time_starting_at_zero_keeps_its_zero_stamp(tmp_path):
    """A simulator's bag starts at stamp 0: that is its first instant, not a missing stamp."""
    messages = []
    for k in range(10):
        ns = k * 2_000_000  # simulated time 0, 2 ms, ...
        log = 1_800_000_000_000_000_000 + k * 5_000_000  # wall clock when logged
        messages.append(("/joint_states", log + 10, joint_state(ns, ["a"], [0.1 * k], [0.0], [0.0])))
        messages.append(("/joint_commands", log + 20, joint_state(ns, ["a"], [], [], [float(k)])))
        messages.append(("/tip_wrench", log + 5, wrench(ns, float(k), 0.0)))
    bag = write_bag(tmp_path / "bag", messages)
    summary = bag_to_log(bag, tmp_path / "out.sklog.npz", wrench_topic="/tip_wrench")
    log = skelarm.StateLog.load(tmp_path / "out.sklog.npz")
    assert summary.frames == 10
    np.testing.assert_allclose(log.times, 0.002 * np.arange(10), atol=1e-12)
    np.testing.assert_array_equal(log.channel("tau")[:, 0], np.arange(10.0))
    np.testing.assert_array_equal(log.channel("ext_force")[:, 0], np.arange(10.0))
    assert log.extra["counts"]["stamp_fallbacks"] == 0


# ----------------------------------------------------------------------------- the stages, one at a time


def point(ns: int, x: float, y: float):
    return T["geometry_msgs/msg/PointStamped"](
        header=T["std_msgs/msg/Header"](stamp=stamp(ns), frame_id="base"),
        point=T["geometry_msgs/msg/Point"](x=x, y=y, z=0.0),
    )


def text(data: str):
    return T["std_msgs/msg/String"](data=data)


def two_arm_bag(path: Path) -> Path:
    """Two arms under /arm1 and /arm2, with commands of both kinds, controller channels and a description."""
    messages = [("/robot_description", 1, text("<robot name='arm'/>"))]
    for arm in ("/arm1", "/arm2"):
        messages += [
            (f"{arm}/joint_states", 10, joint_state(10, ["a"], [1.0])),
            (f"{arm}/effort_controller/commands", 11, float_array([1.0])),
            (f"{arm}/tip_wrench", 12, wrench(10, 1.0, 2.0)),
            (f"{arm}/controller/equilibrium", 13, point(10, 0.5, 0.5)),
            (f"{arm}/controller/stiffness", 14, joint_state(10, ["stiffness"], [3.0])),
            (f"{arm}/controller/bad-name", 15, joint_state(10, ["x"], [0.0])),  # not a channel name
            (f"{arm}/controller/note", 16, text("hello")),  # not a channel type
        ]
    messages.append(("/arm1/joint_commands", 17, joint_state(10, ["a"], [], [], [5.0])))
    return write_bag(path, messages)


def test_plan_finds_the_topics_beside_the_chosen_joint_states(tmp_path):
    with open_bag(two_arm_bag(tmp_path / "bag")) as bag:
        with pytest.raises(ConversionError, match="has 2 sensor_msgs/msg/JointState topics"):
            plan_topics(bag)  # controller/stiffness is a JointState too, but never a joint-state candidate
        one = plan_topics(bag, joint_topic="arm1/joint_states")
        two = plan_topics(bag, joint_topic="/arm2/joint_states", read_description=False)
        given = plan_topics(bag, joint_topic="/arm2/joint_states", command_topic="/arm1/joint_commands")
    assert one == TopicPlan(
        joint_topic="/arm1/joint_states",
        joint_type="sensor_msgs/msg/JointState",
        command_topic="/arm1/joint_commands",  # joint_commands before effort_controller/commands
        command_type="sensor_msgs/msg/JointState",
        command_auto=True,
        wrench_topic="/arm1/tip_wrench",
        wrench_auto=True,
        controller={"equilibrium": "/arm1/controller/equilibrium", "stiffness": "/arm1/controller/stiffness"},
        description="/robot_description",
    )
    assert one.wanted == [
        "/arm1/joint_states",
        "/arm1/joint_commands",
        "/arm1/tip_wrench",
        "/arm1/controller/equilibrium",
        "/arm1/controller/stiffness",
        "/robot_description",
    ]
    assert (two.command_topic, two.command_type) == (
        "/arm2/effort_controller/commands",
        "std_msgs/msg/Float64MultiArray",
    )
    assert two.description is None and "/robot_description" not in two.wanted  # a scenario gives the arm
    assert set(two.controller.values()) == {"/arm2/controller/equilibrium", "/arm2/controller/stiffness"}
    assert (given.command_topic, given.command_auto) == ("/arm1/joint_commands", False)


def test_plan_without_commands_or_wrench_leaves_them_out(tmp_path):
    bag = write_bag(tmp_path / "bag", [("/joint_states", 10, joint_state(10, ["a"], [1.0]))])
    with open_bag(bag) as opened:
        plan = plan_topics(opened)
    assert plan == TopicPlan("/joint_states", "sensor_msgs/msg/JointState")
    assert plan.wanted == ["/joint_states"]


def test_collect_reads_states_by_name_and_keeps_early_commands_for_the_first_state(tmp_path, monkeypatch):
    monkeypatch.setattr(collection_stage, "EARLY_COMMANDS", 2)  # keep the newest two
    messages = [("/joint_commands", k, joint_state(k, ["b", "a"], [], [], [10.0 * k, k])) for k in range(3)]
    messages += [
        ("/robot_description", 4, text("<robot/>")),
        ("/joint_states", 5, joint_state(5, ["a", "b"], [1.0, 2.0], [3.0, 4.0], [5.0, 6.0])),
        ("/joint_states", 6, joint_state(6, ["b", "z"], [20.0, 9.0])),  # 'a' missing, 'z' unknown
        ("/joint_states", 7, joint_state(7, [], [7.0, 8.0])),  # no names: read as j1, j2, not these joints
        ("/joint_commands", 8, joint_state(8, ["a"], [], [], [-1.0])),
        ("/controller/stiffness", 9, joint_state(7, ["stiffness"], [3.0])),
    ]
    bag = write_bag(tmp_path / "bag", messages)
    with open_bag(bag) as opened:
        plan = plan_topics(opened)
        got = collect(opened, plan, joints=["a", "b"])
    assert got.joints == ["a", "b"]
    np.testing.assert_array_equal(
        got.state,
        [[1, 2, 3, 4, 5, 6], [np.nan, 20, np.nan, np.nan, np.nan, np.nan], [np.nan] * 6],
    )
    np.testing.assert_array_equal(got.state_times, [[5, 5], [6, 6], [7, 7]])
    commands = got.streams["/joint_commands"]
    np.testing.assert_array_equal(commands.values, [[1, 10], [2, 20], [-1, np.nan]])  # the newest two early ones
    np.testing.assert_array_equal(commands.stamps, [1, 2, 8])
    np.testing.assert_array_equal(commands.logs, [1, 2, 8])
    stiffness = got.streams["/controller/stiffness"]
    assert stiffness.names == ["stiffness"] and stiffness.values.tolist() == [[3.0]]
    assert got.urdf == "<robot/>"
    assert (got.messages, got.empty_name_lists, got.unknown_names) == (9, 1, ["j1", "j2", "z"])
    assert set(got.streams) == {"/joint_commands", "/controller/stiffness"}


def test_collect_refuses_a_first_state_without_joints(tmp_path):
    bag = write_bag(tmp_path / "bag", [("/joint_states", 1, joint_state(1, [], []))])
    refused = pytest.raises(ConversionError, match="the first message on '/joint_states' has no")
    with open_bag(bag) as opened, refused:
        collect(opened, plan_topics(opened))


def samples(topic: str, msgtype: str, values, stamps=(), logs=(), names=()) -> Samples:
    return Samples(
        topic,
        msgtype,
        np.asarray(values, dtype=np.float64),
        np.asarray(stamps, dtype=np.int64),
        np.asarray(logs, dtype=np.int64),
        list(names),
    )


def collected(streams: dict[str, Samples], stamps=(10, 20, 30, 40), logs=(11, 21, 31, 41)) -> Collected:
    """Four frames of one joint 'a' (q = 0, 1, 2, 3; dq = 10 * q; effort = -q), and the given streams."""
    q = np.arange(4.0)
    return Collected(
        joints=["a"],
        state=np.column_stack([q, 10 * q, -q]),
        state_times=np.column_stack([stamps, logs]).astype(np.int64),
        streams=streams,
        urdf=None,
        messages=4 + sum(len(s.logs) for s in streams.values()),
        empty_name_lists=0,
        unknown_names=[],
        notes=[],
        said=[],
        skipped={},
        files=[],
    )


JS = "sensor_msgs/msg/JointState"


def test_align_holds_stamped_commands_at_each_state_stamp_or_by_log_time():
    commands = samples("/c", JS, [[1.0], [3.0]], stamps=[10, 30], logs=[12, 32])
    plan = TopicPlan("/s", JS, command_topic="/c", command_type=JS, command_auto=True)
    data = collected({"/c": commands})
    header = align(data, plan, header=True)
    log = align(data, plan, header=False)
    np.testing.assert_array_equal(header.arrays["tau"], [[1], [1], [3], [3]])  # stamped at or before the frame
    np.testing.assert_array_equal(log.arrays["tau"], [[1], [1], [3], [3]])  # logged before the next state
    assert header.effort["alignment"].startswith("command stamped with the state")
    assert log.effort["alignment"] == "latest command logged before the next state was logged"
    assert header.effort["source"] == "commands" and header.effort["timing"] == "applied_from_frame"
    np.testing.assert_array_equal(header.arrays["q"], [[0], [1], [2], [3]])
    np.testing.assert_array_equal(header.arrays["dq"], [[0], [10], [20], [30]])
    np.testing.assert_allclose(header.arrays["time"], [0, 1e-8, 2e-8, 3e-8])
    assert (header.origin, log.origin) == (10, 11)
    late = samples("/c", JS, [[5.0]], stamps=[25], logs=[26])  # no command yet for the first two frames
    aligned = align(collected({"/c": late}), plan, header=True)
    np.testing.assert_array_equal(aligned.arrays["valid_tau"], [[False], [False], [True], [True]])
    assert aligned.masked == {"q": 0, "dq": 0, "tau": 2, "measured_effort": 0}  # the states' own effort kept beside


def test_align_without_commands_keeps_the_joint_states_effort():
    aligned = align(collected({}), TopicPlan("/s", JS), header=True)
    np.testing.assert_array_equal(aligned.arrays["tau"], [[0], [-1], [-2], [-3]])
    assert aligned.effort["source"] == "joint_states" and aligned.effort["timing"] == "applied_until_frame"
    assert list(aligned.arrays) == ["q", "dq", "tau", "valid_q", "valid_dq", "valid_tau", "time"]


def test_align_holds_float_array_commands_by_log_time_even_on_the_header_clock():
    commands = samples("/c", "std_msgs/msg/Float64MultiArray", [[1.0], [2.0], [3.0]], logs=[15, 25, 45])
    plan = TopicPlan("/s", JS, command_topic="/c", command_type="std_msgs/msg/Float64MultiArray")
    aligned = align(collected({"/c": commands}), plan, header=True)
    np.testing.assert_array_equal(aligned.arrays["tau"], [[1], [2], [2], [3]])


def test_align_holds_the_wrench_and_controller_channels_with_their_names():
    wrench_samples = samples("/w", WRENCH, [[1.0, 2.0], [3.0, 4.0]], stamps=[15, 30], logs=[16, 31])
    point = samples("/controller/equilibrium", POINT, [[0.5, 0.6]], stamps=[10], logs=[12])
    single = samples("/controller/stiffness", JS, [[7.0]], stamps=[20], logs=[22], names=["stiffness"])
    clash = samples("/controller/q", JS, [[8.0], [9.0]], stamps=[10, 40], logs=[12, 42], names=["a"])
    streams = {s.topic: s for s in (wrench_samples, point, single, clash)}
    plan = TopicPlan(
        "/s",
        JS,
        wrench_topic="/w",
        controller={
            "equilibrium": "/controller/equilibrium",
            "stiffness": "/controller/stiffness",
            "q": "/controller/q",
        },
    )
    aligned = align(collected(streams), plan, header=True)
    np.testing.assert_array_equal(aligned.arrays["ext_force"], [[np.nan, np.nan], [1, 2], [3, 4], [3, 4]])
    np.testing.assert_array_equal(aligned.arrays["equilibrium"], [[0.5, 0.6]] * 4)
    np.testing.assert_array_equal(aligned.arrays["stiffness"], [np.nan, 7, 7, 7])  # one name, the channel's: (N,)
    np.testing.assert_array_equal(aligned.arrays["controller_q"], [[8], [8], [8], [9]])  # 'q' is the log's own
    assert aligned.controller == {
        "equilibrium": "/controller/equilibrium",
        "stiffness": "/controller/stiffness",
        "controller_q": "/controller/q",
    }
    assert aligned.channel_meta["equilibrium"] == {"label": "controller equilibrium", "columns": ["x", "y"]}
    assert aligned.channel_meta["controller_q"] == {"label": "controller q", "columns": ["a"]}
    assert aligned.channel_meta["ext_force"]["columns"] == ["fx", "fy"]
    assert aligned.masked["ext_force"] == 2 and aligned.masked["stiffness"] == 1


def test_align_falls_back_to_log_time_for_unset_wall_clock_stamps():
    wall = 1_700_000_000_000_000_000
    data = collected({}, stamps=(wall, 0, wall + 20, wall + 30), logs=(wall + 1, wall + 11, wall + 21, wall + 31))
    aligned = align(data, TopicPlan("/s", JS), header=True)
    np.testing.assert_array_equal(aligned.stamps, [wall, wall + 11, wall + 20, wall + 30])
    assert aligned.fallbacks == 1


def test_resolve_skeleton_takes_the_scenario_else_a_fitting_description():
    if not SCENARIOS.is_dir():
        pytest.skip(f"shared scenarios absent at {SCENARIOS}")
    arm = load_arm(SCENARIOS / "simple_robot.toml")
    joints = [f"j{k + 1}" for k in range(arm.num_joints)]
    skeleton, source, notes = resolve_skeleton(joints, arm=arm, urdf="ignored", description="/robot_description")
    assert skeleton is arm.skeleton and source == f"scenario {arm.path}" and notes == []
    with pytest.raises(ConversionError, match=f"has {arm.num_joints} joints but the bag has 1"):
        resolve_skeleton(["a"], arm=arm, urdf=None, description=None)
    urdf = skeleton_to_urdf(arm.skeleton, joints)
    skeleton, source, notes = resolve_skeleton(joints, arm=None, urdf=urdf, description="/robot_description")
    assert skeleton is not None and skeleton.to_dict() == arm.skeleton.to_dict()
    assert source == "robot_description on /robot_description" and notes == []
    skeleton, source, notes = resolve_skeleton(["a"], arm=None, urdf=urdf, description="/robot_description")
    assert (skeleton, source) == (None, "none") and "not embedded" in notes[0]
    skeleton, source, notes = resolve_skeleton(["a"], arm=None, urdf="<robot/>", description="/robot_description")
    assert (skeleton, source) == (None, "none") and "could not be read as a skelarm arm" in notes[0]
    assert resolve_skeleton(["a"], arm=None, urdf=None, description=None) == (None, "none", [])


def test_log_extra_records_the_topics_counts_and_order_of_stamps(tmp_path):
    source = tmp_path / "part.db3"
    source.write_bytes(b"data")
    data = collected({}, stamps=(10, 30, 20, 20))
    data.files.append(source)
    data.notes.append("a note from the bag")
    plan = TopicPlan("/s", JS, wrench_topic="/w", wrench_auto=False)
    aligned = align(data, plan, header=True)
    extra = log_extra(plan, data, aligned, clock="header", skeleton_source="none", notes=data.notes)
    assert extra["topics"] == {
        "joint_states": {"name": "/s", "type": JS},
        "wrench": {"name": "/w", "type": WRENCH, "auto_detected": False},
    }
    assert extra["counts"] == {
        "messages_read": 4,
        "stamp_fallbacks": 0,
        "empty_name_lists": 0,
        "frames": 4,
        "out_of_order": 1,
        "duplicate_stamps": 1,
        "skipped_undecodable": {},
        "unknown_joint_names": [],
        "masked": {"q": 0, "dq": 0, "tau": 0},
    }
    assert extra["sources"] == [
        {"path": str(source.resolve()), "sha256": "3a6eb0790f39ac87c94f3856b2dd2c5d110e6811602261a9a923d3bb23adc8b7"}
    ]
    assert extra["time_origin_ns"] == 10 and extra["notes"] == ["a note from the bag"]
    assert extra["effort"]["source"] == "joint_states" and extra["joint_names"] == ["a"]


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_a_damaged_stored_definition_is_named_not_decoded_into_a_traceback(tmp_path, storage):
    bag = write_bag(tmp_path / "bag", arm_messages(5), storage=storage)
    damage_definition(bag, b"string[] name", b"string[] nale")  # JointState's: states and commands both
    output = tmp_path / "o.sklog.npz"
    with pytest.raises(ConversionError) as error:
        bag_to_log(bag, output)
    assert str(error.value).startswith(
        f"bag '{bag}' defines sensor_msgs/msg/JointState (topic '/joint_states') without the field 'name' "
        "(its fields: header, nale, position, velocity, effort), so its stored definition is damaged"
    )
    assert str(error.value).endswith("; record it again, or choose another topic with --joint-topic")
    assert not output.exists()


def test_a_found_topic_with_a_damaged_definition_is_left_out_with_a_note(tmp_path):
    bag = write_bag(tmp_path / "bag", arm_messages(5))
    damage_definition(bag, b"Wrench wrench", b"Wrench wrenkh")
    summary = bag_to_log(bag, tmp_path / "o.sklog.npz")
    assert "ext_force" not in np.load(tmp_path / "o.sklog.npz").files
    notes = summary.extra["notes"]
    left_out = [note for note in notes if note.endswith("; left out")]
    assert len(left_out) == 1 and "(topic '/tip_wrench') without the field 'wrench'" in left_out[0]
    with pytest.raises(ConversionError, match=r"; record it again, or drop --wrench-topic to convert without it$"):
        bag_to_log(bag, tmp_path / "p.sklog.npz", wrench_topic="/tip_wrench")
