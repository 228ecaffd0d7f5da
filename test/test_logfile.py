"""The StateLog file (skelarm_ros.bags.logfile): written and read here, checked against skelarm's own save and load."""

from __future__ import annotations

import tomllib
import warnings
from pathlib import Path

import numpy as np
import pytest
import skelarm
from conftest import SCENARIOS

from skelarm_ros.bags.logfile import LogFile, LogFileError, printable_tree, read_log, write_log


def a_run() -> skelarm.StateLog:
    """A short skelarm run with a skeleton, channel descriptors, extra metadata and an extra channel."""
    skeleton = skelarm.Skeleton.from_toml(SCENARIOS / "simple_robot.toml")
    log = skelarm.StateLog(
        skeleton,
        producer="test",
        channel_meta={"q": {"unit": "rad", "columns": ["a", "b"]}},
        extra={"note": "x", "nested": {"k": [1, 2]}},
    )
    for k in range(7):
        log.record(0.01 * k, q=[0.1 * k, -0.2 * k], dq=[1.0, 2.0], tau=[k, -k], stiffness=float(k))
    return log


def same_log(one: skelarm.StateLog, other: skelarm.StateLog) -> None:
    """Every public reading of two StateLogs agrees (values, dtypes and metadata)."""
    assert len(one) == len(other)
    assert one.producer == other.producer
    assert one.created_at == other.created_at
    assert one.channel_meta == other.channel_meta
    assert one.extra == other.extra
    assert one.channel_names == other.channel_names
    assert one.times.tobytes() == other.times.tobytes()
    for name in one.channel_names:
        assert one.channel(name).dtype == other.channel(name).dtype, name
        assert one.channel(name).tobytes() == other.channel(name).tobytes(), name
    assert one.build_skeleton().to_dict() == other.build_skeleton().to_dict()


@pytest.fixture
def need_scenarios() -> None:
    if not SCENARIOS.is_dir():
        pytest.skip(f"shared scenarios absent at {SCENARIOS}")


def test_a_log_written_here_is_read_by_skelarm_as_written(tmp_path: Path, need_scenarios) -> None:
    skeleton = skelarm.Skeleton.from_toml(SCENARIOS / "simple_robot.toml")
    arrays = {
        "q": np.arange(6.0).reshape(3, 2),
        "stiffness": np.array([1.0, np.nan, 3.0]),
        "valid_stiffness": np.array([True, False, True]),
        "time": np.array([0.0, 0.5, 1.0]),
    }
    channel_meta = {"q": {"unit": "rad", "label": "joint angle", "columns": ["a", "b"]}}
    extra = {"tool": "test", "joint_names": ["a\x00", "b"], "counts": {"frames": 3}}
    made = LogFile.made(arrays, skeleton=skeleton, producer="p", channel_meta=channel_meta, extra=extra)
    assert made.skeleton().to_dict() == skeleton.to_dict()
    write_log(tmp_path / "out.sklog.npz", made)
    log = skelarm.StateLog.load(tmp_path / "out.sklog.npz")
    assert log.producer == "p"
    assert log.channel_meta == channel_meta
    assert log.extra == {**extra, "joint_names": ["a\\x00", "b"]}  # TOML holds no raw control characters
    assert log.build_skeleton().to_dict() == skeleton.to_dict()
    assert log.channel_names == ["q", "stiffness", "valid_stiffness"]
    np.testing.assert_array_equal(log.times, arrays["time"])
    for name in log.channel_names:
        assert log.channel(name).tobytes() == arrays[name].tobytes(), name
        assert log.channel(name).dtype == arrays[name].dtype, name
    with np.load(tmp_path / "out.sklog.npz") as archive:
        meta = tomllib.loads(str(archive["__meta__"]))
    assert meta["schema_version"] == 1 and meta["created_at"]
    assert not list(tmp_path.glob(".out.sklog.npz.*"))  # the temporary file is renamed, not left


def test_a_log_saved_by_skelarm_reads_here_as_skelarm_loads_it(tmp_path: Path, need_scenarios) -> None:
    run = a_run()
    run.save(tmp_path / "run.sklog.npz")
    contents = read_log(tmp_path / "run.sklog.npz")
    loaded = skelarm.StateLog.load(tmp_path / "run.sklog.npz")
    same_log(contents.state_log(), loaded)
    assert contents.channel_names == loaded.channel_names
    assert contents.extra == loaded.extra and contents.channel_meta == loaded.channel_meta
    np.testing.assert_array_equal(contents.times, loaded.times)
    np.testing.assert_array_equal(contents.channel("stiffness"), loaded.channel("stiffness"))
    with pytest.raises(KeyError, match="unknown channel 'push'"):
        contents.channel("push")


def test_a_state_log_in_memory_gives_what_its_file_would_hold(tmp_path: Path, need_scenarios) -> None:
    run = a_run()
    run.save(tmp_path / "run.sklog.npz")
    in_memory = LogFile.from_state_log(run)
    on_disk = read_log(tmp_path / "run.sklog.npz")
    assert in_memory.meta == on_disk.meta
    assert list(in_memory.arrays) == list(on_disk.arrays)
    for name, values in on_disk.arrays.items():
        assert in_memory.arrays[name].tobytes() == values.tobytes(), name
    bare = skelarm.StateLog()  # no skeleton, descriptors or extra: the file leaves those tables out
    bare.record(0.0, q=[1.0])
    assert set(LogFile.from_state_log(bare).meta) == {"schema_version", "created_at", "producer"}


def test_a_written_log_round_trips_through_the_reader(tmp_path: Path) -> None:
    arrays = {"q": np.ones((2, 1)), "time": np.array([0.0, 1.0])}
    write_log(
        tmp_path / "x.sklog.npz", LogFile.made(arrays, skeleton=None, producer="p", channel_meta={}, extra={"a": 1})
    )
    contents = read_log(tmp_path / "x.sklog.npz")
    assert contents.meta["extra"] == {"a": 1} and "channels" not in contents.meta and "skeleton" not in contents.meta
    assert list(contents.arrays) == ["q", "time"]
    same = contents.state_log()
    assert same.channel_names == ["q"] and len(same) == 2


def test_unreadable_logs_give_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(LogFileError, match=r"log '.*absent\.sklog\.npz' does not exist; pass a \.sklog\.npz written"):
        read_log(tmp_path / "absent.sklog.npz")
    cases = {
        "text.sklog.npz": lambda path: path.write_text("t,fx,fy\n"),
        "zip.sklog.npz": lambda path: path.write_bytes(b"PK\x03\x04 not really a zip archive"),
        "no_meta.sklog.npz": lambda path: np.savez(path, time=np.zeros(2)),
        "no_time.sklog.npz": lambda path: np.savez(path, q=np.zeros(2), __meta__=np.array("producer = 'x'\n")),
        "bad_toml.sklog.npz": lambda path: np.savez(path, time=np.zeros(2), __meta__=np.array("producer = \n")),
    }
    for name, make in cases.items():
        make(tmp_path / name)
        with pytest.raises(LogFileError) as caught:
            read_log(tmp_path / name)
        text = str(caught.value)
        assert text.startswith(f"log '{tmp_path / name}' is not a readable skelarm .sklog.npz log ("), name
        assert text.endswith("pass a .sklog.npz written by skelarm or bag_to_log") and "\n" not in text, name


def bare(arrays: dict, extra: dict) -> LogFile:
    return LogFile.made(arrays, skeleton=None, producer="", channel_meta={}, extra=extra)


def test_writing_into_a_missing_folder_is_refused_and_an_old_log_stays(tmp_path: Path) -> None:
    arrays = {"time": np.zeros(1)}
    with pytest.raises(LogFileError, match=r"output folder .*nowhere. does not exist; create it"):
        write_log(tmp_path / "nowhere" / "x.sklog.npz", bare(arrays, {}))
    old = tmp_path / "old.sklog.npz"
    old.write_bytes(b"previous")
    with pytest.raises(TypeError):  # a value TOML cannot hold fails before anything is written
        write_log(old, bare(arrays, {"bad": object()}))
    assert old.read_bytes() == b"previous"
    assert not list(tmp_path.glob(".old.sklog.npz.*"))


def test_printable_tree_escapes_control_characters_in_keys_and_values() -> None:
    tree = {"a\x01": ["b\x1b", ("c\u200b", 1.5)], "n": {"\x7f": True}, "ok": "line\nnext\ttab"}
    assert printable_tree(tree) == {
        "a\\x01": ["b\\x1b", ["c\\u200b", 1.5]],
        "n": {"\\x7f": True},
        "ok": "line\nnext\ttab",
    }


def test_the_tools_read_logs_through_the_one_reader(tmp_path: Path) -> None:
    """plot, forces and log_to_bag give the reader's sentence (each in its own error type)."""
    from skelarm_ros.bags.forces import ForceSourceError, RecordedForce
    from skelarm_ros.bags.log_to_bag import LogError, log_to_bag
    from skelarm_ros.cli.plot import PlotError, load_log

    bad = tmp_path / "bad.sklog.npz"
    bad.write_bytes(b"not a log")
    with pytest.raises(LogFileError) as caught:
        read_log(bad)
    sentence = str(caught.value)
    for error, call in (
        (PlotError, lambda: load_log(bad)),
        (ForceSourceError, lambda: RecordedForce.from_log(bad)),
        (LogError, lambda: log_to_bag(bad, tmp_path / "bag")),
    ):
        with pytest.raises(error) as raised:
            call()
        assert str(raised.value) == sentence
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reading a good log warns of nothing
        arrays = {"q": np.ones((3, 2)), "ext_force": np.ones((3, 2)), "time": np.arange(3.0)}
        write_log(tmp_path / "ok.sklog.npz", bare(arrays, {}))
        assert load_log(tmp_path / "ok.sklog.npz").channel_names == ["q", "ext_force"]
        np.testing.assert_array_equal(RecordedForce.from_log(tmp_path / "ok.sklog.npz").times, [0.0, 1.0, 2.0])
