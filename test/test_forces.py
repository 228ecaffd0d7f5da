"""Recorded tip forces: hold, means over steps, spans, and reading logs, CSV files and bags."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from skelarm import StateLog

from skelarm_ros.bags.forces import ForcePlayer, ForceSourceError, RecordedForce, load_force
from skelarm_ros.interface import seconds_to_stamp, stamp_to_seconds
from skelarm_ros.sim.engine import ArmEngine, run_controlled
from skelarm_ros.sim.scenario import load_arm, load_scenario

# Two scripted pushes on the reach scenario: (begin, end, (fx, fy)).
PUSHES = ((0.3, 0.5, (3.0, -2.0)), (0.9, 1.0, (-1.5, 4.0)))
PUSH_DURATION = 1.2


def scripted_push(t: float) -> np.ndarray:
    """The scripted tip force at time ``t`` (N)."""
    for begin, end, force in PUSHES:
        if begin <= t < end:
            return np.array(force)
    return np.zeros(2)


def run_reach(
    force=None, scenario: str | Path = "reach", duration: float = PUSH_DURATION, dt: float | None = None
) -> StateLog:
    """Run a bundled (or given) scenario's controller on the engine, as the simulator would."""
    arm = load_arm(scenario)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = load_scenario(scenario)
    engine = ArmEngine(
        loaded.skeleton, arm.dt if dt is None else dt, grav_vec=arm.grav_vec, enforce_limits=arm.enforce_limits
    )
    return run_controlled(engine, loaded.skeleton.clone(), loaded.controller, duration=duration, force=force)


RECORD = RecordedForce([0.0, 0.1, 0.3, 0.4], [[1.0, 2.0], [-3.0, 0.5], [0.0, 0.0], [9.0, 9.0]])


# -- construction ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("times", "forces", "message"),
    [
        ([0.0, 0.2, 0.1], np.zeros((3, 2)), "the sample times must increase"),
        ([0.0, 0.2, 0.2], np.zeros((3, 2)), "the sample times must increase"),
        ([0.0, 0.1], np.zeros((3, 2)), r"one \(fx, fy\) per sample time, shape \(2, 2\), got \(3, 2\)"),
        ([0.0, 0.1], np.zeros((2, 3)), r"one \(fx, fy\) per sample time, shape \(2, 2\), got \(2, 3\)"),
        ([0.0, 0.1], np.zeros(2), r"got \(2,\)"),
        ([0.0], np.zeros((1, 2)), "at least two sample times"),
        ([[0.0, 0.1]], np.zeros((2, 2)), "at least two sample times"),
        ([0.0, np.nan], np.zeros((2, 2)), "NaN or infinite"),
        ([0.0, 0.1], [[0.0, np.inf], [0.0, 0.0]], "not finite"),
    ],
)
def test_bad_samples_are_refused(times, forces, message: str) -> None:
    with pytest.raises(ForceSourceError, match=message):
        RecordedForce(times, forces)


# -- zero-order hold ---------------------------------------------------------------------------


def test_hold_reads_the_latest_sample_and_nothing_outside_the_record() -> None:
    assert np.array_equal(RECORD.at(-0.01), [0.0, 0.0])
    assert np.array_equal(RECORD.at(0.0), [1.0, 2.0])
    assert np.array_equal(RECORD.at(0.0999), [1.0, 2.0])
    assert np.array_equal(RECORD.at(0.1), [-3.0, 0.5])
    assert np.array_equal(RECORD.at(0.35), [0.0, 0.0])
    # The last sample marks the end: its value never acts.
    assert np.array_equal(RECORD.at(0.4), [0.0, 0.0])
    assert np.array_equal(RECORD.at(5.0), [0.0, 0.0])
    assert (RECORD.start, RECORD.end, len(RECORD)) == (0.0, 0.4, 4)


def test_hold_tolerates_clock_rounding() -> None:
    assert np.array_equal(RECORD.at(0.1 - 4e-10), [-3.0, 0.5])
    assert np.array_equal(RECORD.at(-4e-10), [1.0, 2.0])
    assert np.array_equal(RECORD.at(0.4 - 4e-10), [0.0, 0.0])
    assert np.array_equal(RECORD.at(0.1 - 1e-6), [1.0, 2.0])


def test_reads_cannot_change_the_record() -> None:
    with pytest.raises(ValueError, match="read-only"):
        RECORD.at(0.0)[0] = 5.0
    RECORD.mean(0.0, 0.05)[0] = 5.0
    assert np.array_equal(RECORD.at(0.0), [1.0, 2.0])


# -- means over intervals ----------------------------------------------------------------------


def test_mean_weights_each_sample_by_its_time_in_the_interval() -> None:
    # [0.05, 0.2): 0.05 s of (1, 2), 0.1 s of (-3, 0.5).
    expected = (0.05 * np.array([1.0, 2.0]) + 0.1 * np.array([-3.0, 0.5])) / 0.15
    np.testing.assert_allclose(RECORD.mean(0.05, 0.2), expected, rtol=1e-14)
    # Half outside the record, before it and after it.
    np.testing.assert_allclose(RECORD.mean(-0.1, 0.1), [0.5, 1.0], rtol=1e-14)
    np.testing.assert_allclose(RECORD.mean(0.2, 0.6), [-0.75, 0.125], rtol=1e-14)
    assert np.array_equal(RECORD.mean(0.4, 0.5), [0.0, 0.0])
    assert np.array_equal(RECORD.mean(-1.0, -0.5), [0.0, 0.0])


def test_mean_is_exactly_the_sample_acting_alone() -> None:
    assert np.array_equal(RECORD.mean(0.0, 0.1), [1.0, 2.0])
    assert np.array_equal(RECORD.mean(0.12, 0.17), [-3.0, 0.5])
    # Slivers shorter than the tolerance are no overlap.
    assert np.array_equal(RECORD.mean(0.1 - 5e-10, 0.3 + 5e-10), [-3.0, 0.5])
    assert np.array_equal(RECORD.mean(0.1 + 5e-10, 0.2), [-3.0, 0.5])


def test_an_empty_interval_is_an_error() -> None:
    for begin, end in ((0.2, 0.2), (0.3, 0.1), (0.0, float("nan"))):
        with pytest.raises(ValueError, match="end > begin"):
            RECORD.mean(begin, end)


def test_mean_reads_only_the_overlapping_samples() -> None:
    # A long record: the mean over a short interval must not look at the rest of it.
    count = 200_000
    forces = np.ones((count, 2))
    forces[100_000:100_003] = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    long_record = RecordedForce(np.arange(count) * 0.001, forces)
    acting = long_record.acting(100.0005, 100.0025)
    assert [index for index, _ in acting] == [100_000, 100_001, 100_002]
    np.testing.assert_allclose([seconds for _, seconds in acting], [0.0005, 0.001, 0.0005], rtol=1e-9)
    np.testing.assert_allclose(long_record.mean(100.0005, 100.0025), [3.0, 4.0])


# -- stepping ----------------------------------------------------------------------------------


def test_stepped_needs_a_positive_step() -> None:
    for dt in (0.0, -0.001, float("inf")):
        with pytest.raises(ValueError, match="positive"):
            RECORD.stepped(dt)


def test_a_finer_step_splits_each_push_and_a_coarser_one_averages() -> None:
    fine = RECORD.stepped(0.05)
    assert np.array_equal(fine(0.0), [1.0, 2.0])
    assert np.array_equal(fine(0.05), [1.0, 2.0])
    assert np.array_equal(fine(0.1), [-3.0, 0.5])
    coarse = RECORD.stepped(0.2)
    np.testing.assert_allclose(coarse(0.0), [-1.0, 1.25], rtol=1e-14)


def accumulated_times(dt: float, steps: int, start: float = 0.0) -> list[float]:
    """Frame times as the engine and skelarm make them: ``t += dt``."""
    times, t = [], start
    for _ in range(steps + 1):
        times.append(t)
        t += dt
    return times


@settings(max_examples=60, deadline=None)
@given(
    start=st.floats(-5.0, 5.0),
    increments=st.lists(st.floats(1e-3, 0.5), min_size=1, max_size=12),
    values=st.data(),
    dt=st.floats(5e-3, 2.0),
    phase=st.floats(0.0, 1.0),
)
def test_every_step_grid_keeps_the_impulse(start, increments, values, dt, phase) -> None:
    times = start + np.concatenate([[0.0], np.cumsum(increments)])
    forces = values.draw(
        st.lists(st.tuples(st.floats(-100, 100), st.floats(-100, 100)), min_size=len(times), max_size=len(times))
    )
    record = RecordedForce(times, forces)
    force = record.stepped(dt)
    t0 = record.start - phase * dt
    total = np.zeros(2)
    step = 0
    while t0 + step * dt < record.end:
        total += force(t0 + step * dt) * dt
        step += 1
    # Each boundary may move by the tolerance when a step's mean is taken as one whole sample.
    bound = 1e-12 * (1 + step) * 100 + 2 * record.tolerance * 100 * (step + len(record))
    np.testing.assert_allclose(total, record.impulse(), rtol=0, atol=bound)


@settings(max_examples=40, deadline=None)
@given(
    dt=st.sampled_from([0.001, 0.002, 0.01, 1 / 3, 0.0005]),
    start=st.sampled_from([0.0, 0.5, 10.0]),
    values=st.lists(st.tuples(st.floats(-50, 50), st.floats(-50, 50)), min_size=2, max_size=300),
)
def test_own_step_replays_each_sample_exactly(dt, start, values) -> None:
    times = accumulated_times(dt, len(values) - 1, start)
    record = RecordedForce(times, values)
    force = record.stepped(dt)
    for k, t in enumerate(times[:-1]):
        assert np.array_equal(force(t), values[k])
        assert np.array_equal(record.at(t), values[k])
        # A clock that carries the time as whole nanoseconds reads the same sample.
        clock = stamp_to_seconds(*seconds_to_stamp(t))
        assert np.array_equal(force(clock), values[k])
        assert np.array_equal(record.at(clock), values[k])
    assert np.array_equal(record.at(times[-1]), [0.0, 0.0])


# -- playing step by step ---------------------------------------------------------------------


def test_the_player_reports_start_end_and_restart() -> None:
    record = RecordedForce([1.0, 1.5, 2.0], [[1.0, 0.0], [2.0, 0.0], [0.0, 0.0]])
    player = ForcePlayer(record, "stepped", dt=0.4)
    events = []
    for t in (0.0, 0.4, 0.8, 0.8, 1.2, 1.6, 2.0, 2.4, 0.4, 0.8):
        step = player.advance(t)
        events.append(None if step is None else (step.force.tolist(), step.started, step.ended, step.restarted))
    assert events == [
        ([0.0, 0.0], False, False, False),
        ([0.0, 0.0], False, False, False),
        (pytest.approx([0.5, 0.0]), True, False, False),  # [0.8, 1.2) overlaps the start
        None,  # the same time again
        (pytest.approx([1.25, 0.0]), False, False, False),
        ([2.0, 0.0], False, False, False),
        ([0.0, 0.0], False, True, False),
        ([0.0, 0.0], False, False, False),
        ([0.0, 0.0], False, False, True),
        (pytest.approx([0.5, 0.0]), True, False, False),
    ]
    hold = ForcePlayer(record)
    assert [hold.advance(t).started for t in (0.5, 1.0 - 1e-10, 1.2)] == [False, True, False]


def test_the_player_needs_a_known_mode_and_a_step_to_average_over() -> None:
    with pytest.raises(ValueError, match=r"unknown force replay mode 'ramp'; choose from \['hold', 'stepped'\]"):
        ForcePlayer(RECORD, "ramp")
    for dt in (None, 0.0, -1.0):
        with pytest.raises(ValueError, match="mode 'stepped' needs the step dt"):
            ForcePlayer(RECORD, "stepped", dt)


# -- spans -------------------------------------------------------------------------------------


def test_spans_find_the_pushes_and_join_close_ones() -> None:
    record = RecordedForce(
        [0.0, 1.0, 2.0, 2.5, 3.0, 4.0, 4.2, 5.0],
        [[0, 0], [3, 4], [5, 0], [0, 0], [0, 6], [0.1, 0], [0, 2], [0, 0]],
    )
    assert record.spans(1.0) == [(1.0, 2.5), (3.0, 4.0), (4.2, 5.0)]
    assert record.spans(1.0, min_gap=0.25) == [(1.0, 2.5), (3.0, 5.0)]
    assert record.spans(1.0, min_gap=0.6) == [(1.0, 5.0)]
    assert record.spans(5.5) == [(3.0, 4.0)]
    assert record.spans(10.0) == []


# -- the engine's own runs ---------------------------------------------------------------------


def test_replaying_a_runs_force_gives_the_run_back() -> None:
    recorded = run_reach(scripted_push)
    force = RecordedForce.from_log(recorded)
    applied = recorded.channel("ext_force")
    assert np.abs(applied).max() > 1.0, "the scripted push did not act"
    assert np.array_equal(applied[-1], [0.0, 0.0])
    arm = load_arm("reach")
    for replay_force in (force.at, force.stepped(arm.dt)):
        replay = run_reach(replay_force)
        np.testing.assert_array_equal(replay.times, recorded.times)
        for channel in ("q", "dq", "tau", "ext_force"):
            np.testing.assert_array_equal(replay.channel(channel), recorded.channel(channel))


def test_a_finer_simulation_gets_the_same_impulse() -> None:
    recorded = run_reach(scripted_push)
    force = RecordedForce.from_log(recorded)
    dt = load_arm("reach").dt / 3
    replay = run_reach(force.stepped(dt), dt=dt)
    replayed = RecordedForce.from_log(replay)
    np.testing.assert_allclose(replayed.impulse(), force.impulse(), rtol=0, atol=1e-9)
    np.testing.assert_allclose(replayed.spans(0.5), force.spans(0.5), rtol=0, atol=1e-9)


# -- sources -----------------------------------------------------------------------------------


def test_from_log_reads_a_saved_log_with_an_offset(tmp_path: Path) -> None:
    recorded = run_reach(scripted_push, duration=0.6)
    path = tmp_path / "push.sklog.npz"
    recorded.save(path)
    force = RecordedForce.from_log(path, time_offset=2.0)
    np.testing.assert_array_equal(force.times, recorded.times + 2.0)
    np.testing.assert_array_equal(force.forces, recorded.channel("ext_force"))
    assert np.array_equal(force.at(2.35), [3.0, -2.0])
    np.testing.assert_allclose(load_force(path).spans(0.0), [(0.3, 0.5)], rtol=0, atol=1e-9)


def test_a_log_without_the_channel_is_refused(tmp_path: Path) -> None:
    log = run_reach(None, duration=0.1)
    with pytest.raises(ForceSourceError, match="has no 'ext_force' channel"):
        RecordedForce.from_log(log)
    path = tmp_path / "no_force.sklog.npz"
    log.save(path)
    with pytest.raises(ForceSourceError, match=r"no_force\.sklog\.npz' has no 'ext_force' channel"):
        load_force(path)
    with pytest.raises(ForceSourceError, match="has no 'push' channel"):
        RecordedForce.from_log(run_reach(scripted_push, duration=0.1), channel="push")


def test_missing_and_corrupt_logs_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ForceSourceError, match="does not exist"):
        RecordedForce.from_log(tmp_path / "absent.sklog.npz")
    with pytest.raises(ForceSourceError, match="does not exist"):
        load_force(tmp_path / "absent.sklog.npz")
    corrupt = tmp_path / "corrupt.sklog.npz"
    corrupt.write_bytes(b"PK\x03\x04 not really a zip archive")
    with pytest.raises(ForceSourceError, match=r"not a readable skelarm \.sklog\.npz log"):
        load_force(corrupt)
    text = tmp_path / "text.sklog.npz"
    text.write_text("t,fx,fy\n")
    with pytest.raises(ForceSourceError, match=r"not a readable skelarm \.sklog\.npz log"):
        load_force(text)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_from_csv_reads_named_columns_in_any_order(tmp_path: Path) -> None:
    path = write(tmp_path / "push.csv", "fy, t ,fx,note\n0.5,0.0,1.0,a\n\n-1,0.25,2,b\n0,0.5,0,end\n")
    force = load_force(path, time_offset=1.0)
    np.testing.assert_array_equal(force.times, [1.0, 1.25, 1.5])
    np.testing.assert_array_equal(force.forces, [[1.0, 0.5], [2.0, -1.0], [0.0, 0.0]])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("time,fx,fy\n0,1,2\n1,0,0\n", r"has no column\(s\) \['t'\] in its header row"),
        ("0,1,2\n1,0,0\n", r"has no column\(s\) \['t', 'fx', 'fy'\]"),
        ("t,fx,fy\n0,1,2\n0.1,x,0\n", "line 3: fx is 'x', not a number"),
        ("t,fx,fy\n0,1,2\n0.1,1\n", "line 3 has 2 fields but the header has 3"),
        ("t,fx,fy\n0,1,2\n0.2,0,0\n0.1,0,0\n", "the sample times must increase"),
        ("t,fx,fy\n0,1,2\n", "at least two sample times"),
        ("t,fx,fy\n0,1,nan\n1,0,0\n", "not finite"),
        ("", "is empty"),
    ],
)
def test_bad_csv_files_are_refused(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path / "bad.csv", text)
    with pytest.raises(ForceSourceError, match=message) as caught:
        load_force(path)
    assert "bad.csv" in str(caught.value)


def test_a_missing_csv_and_an_empty_source_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ForceSourceError, match="does not exist"):
        RecordedForce.from_csv(tmp_path / "absent.csv")
    with pytest.raises(ForceSourceError, match="no force source given"):
        load_force("")


def write_wrench_bag(path: Path, topic: str, samples, frame: str = "base", msgtype: str = "") -> Path:
    """Write a rosbag2 (sqlite3) bag with one WrenchStamped message per (t, fx, fy), logged at t + 1 s."""
    from rosbags.rosbag2 import Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    types = store.types
    with Writer(path, version=9) as writer:
        if msgtype:
            connection = writer.add_connection(topic, msgtype, typestore=store)
            message = types[msgtype](data="not a wrench")
            writer.write(connection, 1, store.serialize_cdr(message, msgtype))
            return path
        name = "geometry_msgs/msg/WrenchStamped"
        connection = writer.add_connection(topic, name, typestore=store)
        for t, fx, fy in samples:
            sec, nanosec = seconds_to_stamp(t)
            message = types[name](
                header=types["std_msgs/msg/Header"](
                    stamp=types["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec), frame_id=frame
                ),
                wrench=types["geometry_msgs/msg/Wrench"](
                    force=types["geometry_msgs/msg/Vector3"](x=fx, y=fy, z=0.0),
                    torque=types["geometry_msgs/msg/Vector3"](x=0.0, y=0.0, z=0.0),
                ),
            )
            writer.write(connection, round((t + 1.0) * 1e9), store.serialize_cdr(message, name))
    return path


def test_from_bag_reads_a_wrench_topic_by_header_stamp(tmp_path: Path) -> None:
    samples = [(0.0, 1.0, 2.0), (0.002, -1.0, 0.5), (0.004, 0.0, 0.0)]
    bag = write_wrench_bag(tmp_path / "bag", "/tip_wrench", samples)
    for topic in ("/tip_wrench", "tip_wrench"):
        force = load_force(bag, topic=topic, time_offset=0.5)
        np.testing.assert_allclose(force.times, [0.5, 0.502, 0.504], rtol=0, atol=1e-12)
        np.testing.assert_array_equal(force.forces, [[1.0, 2.0], [-1.0, 0.5], [0.0, 0.0]])


def test_bad_bags_are_refused(tmp_path: Path) -> None:
    bag = write_wrench_bag(tmp_path / "bag", "/tip_wrench", [(0.0, 1.0, 2.0), (0.1, 0.0, 0.0)])
    with pytest.raises(ForceSourceError, match=r"has no topic '/push'; its WrenchStamped topics are \['/tip_wrench'\]"):
        load_force(bag, topic="/push")
    with pytest.raises(ForceSourceError, match="needs 'topic'"):
        load_force(bag)
    other = write_wrench_bag(tmp_path / "other", "/tip_wrench", [], msgtype="std_msgs/msg/String")
    with pytest.raises(ForceSourceError, match="carries std_msgs/msg/String, not geometry_msgs/msg/WrenchStamped"):
        load_force(other, topic="/tip_wrench")
    framed = write_wrench_bag(tmp_path / "framed", "/w", [(0.0, 1.0, 2.0), (0.1, 0.0, 0.0)], frame="tool")
    with pytest.raises(ForceSourceError, match="frame 'tool'"):
        load_force(framed, topic="/w")
    repeated = write_wrench_bag(tmp_path / "repeated", "/w", [(0.0, 1.0, 2.0), (0.0, 0.0, 0.0)])
    with pytest.raises(ForceSourceError, match="the sample times must increase"):
        load_force(repeated, topic="/w")
    not_a_bag = tmp_path / "empty_dir"
    not_a_bag.mkdir()
    with pytest.raises(ForceSourceError, match="is not a bag"):
        load_force(not_a_bag, topic="/w")
    garbage = tmp_path / "garbage.db3"
    garbage.write_bytes(b"this is not sqlite")
    with pytest.raises(ForceSourceError, match=r"garbage\.db3"):
        load_force(garbage, topic="/w")
