"""compare: recorded and shadow commands paired by stamp, from bags and logs; the table, the plot, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from bagwriter import START, damage_definition, float_array, joint_state, write_bag

from skelarm_ros.bags.bag_to_log import bag_to_log
from skelarm_ros.cli.compare import CompareError, compare_commands, load_commands, main

MS = 1_000_000


def commands_bag(path, efforts, *, names=("j1", "j2"), skip=(), states=True, topic="/joint_commands"):
    """States every 2 ms (stamped k*2 ms) and a stamped command answering each, but those in ``skip``."""
    messages = []
    for k, effort in enumerate(efforts):
        log = START + k * 2 * MS
        if states:
            messages.append(("/joint_states", log, joint_state(k * 2 * MS, names, (0.1 * k, 0.2))))
        if k not in skip:
            messages.append((topic, log + 100, joint_state(k * 2 * MS, names, (), (), effort)))
    return write_bag(path, messages)


def test_identical_commands_differ_by_nothing(tmp_path):
    efforts = [(math.sin(k), math.cos(k)) for k in range(50)]
    recorded = load_commands(commands_bag(tmp_path / "a", efforts))
    shadow = load_commands(commands_bag(tmp_path / "b", efforts))
    comparison = compare_commands(recorded, shadow)
    assert len(comparison.stamps) == 50 and comparison.recorded_only == comparison.shadow_only == 0
    assert comparison.largest == 0.0
    assert [joint.name for joint in comparison.joints] == ["j1", "j2"]


def test_differences_are_measured_per_joint_with_when_and_unpaired_counts(tmp_path):
    efforts = [(1.0, -1.0)] * 40
    other = [(1.0 + (0.5 if k == 30 else 0.0), -1.0 + 0.1) for k in range(40)]
    recorded = load_commands(commands_bag(tmp_path / "a", efforts, skip={3}))
    shadow = load_commands(commands_bag(tmp_path / "b", other, skip={5, 6}))
    comparison = compare_commands(recorded, shadow)
    assert len(comparison.stamps) == 37
    assert (comparison.recorded_only, comparison.shadow_only) == (2, 1)
    j1, j2 = comparison.joints
    assert j1.max == pytest.approx(0.5) and j1.at == pytest.approx(0.060)  # state 30, 60 ms after the first
    assert j1.rms == pytest.approx(math.sqrt(0.25 / 37))
    assert j2.max == pytest.approx(0.1) and j2.rms == pytest.approx(0.1)
    text = comparison.text()
    assert "paired 37 commands" in text and "2 recorded without a shadow command" in text
    assert "1 shadow without a recorded one" in text


def test_joints_are_matched_by_name_in_any_order(tmp_path):
    efforts = [(float(k), -float(k)) for k in range(10)]
    recorded = load_commands(commands_bag(tmp_path / "a", efforts, names=("elbow", "shoulder")))
    shadow = load_commands(commands_bag(tmp_path / "b", [(b, a) for a, b in efforts], names=("shoulder", "elbow")))
    assert compare_commands(recorded, shadow).largest == 0.0


def test_unstamped_array_commands_pair_with_the_state_logged_before(tmp_path):
    messages = []
    for k in range(10):
        log = START + k * 2 * MS
        messages.append(("/arm1/joint_states", log, joint_state(k * 2 * MS, ("shoulder", "elbow"), (0.0, 0.0))))
        messages.append(("/arm1/effort_controller/commands", log + 300, float_array([k, 2.0 * k])))
    messages.insert(0, ("/arm1/effort_controller/commands", START - 5, float_array([9.0, 9.0])))  # before any state
    path = write_bag(tmp_path / "hw", messages)
    recorded = load_commands(path, command_joints=("shoulder", "elbow"))
    assert recorded.joints == ["shoulder", "elbow"] and len(recorded.stamps) == 10
    assert list(recorded.stamps) == [k * 2 * MS for k in range(10)]
    np.testing.assert_array_equal(recorded.values[:, 1], 2.0 * np.arange(10))
    assert load_commands(path).joints == ["j1", "j2"]  # unnamed without --command-joints
    shadow = load_commands(commands_bag(tmp_path / "b", [(k, 2.0 * k) for k in range(10)], names=("shoulder", "elbow")))
    assert compare_commands(recorded, shadow).largest == 0.0


def test_a_log_compares_with_its_bag(tmp_path):
    efforts = [(0.3 * k, -0.2 * k) for k in range(30)]
    bag = commands_bag(tmp_path / "a", efforts)
    log = tmp_path / "a.sklog.npz"
    bag_to_log(bag, log)
    from_log = load_commands(log)
    assert from_log.source == "tau" and len(from_log.stamps) == 30
    comparison = compare_commands(from_log, load_commands(bag))
    assert comparison.largest == 0.0 and comparison.recorded_only == 0


def test_the_tool_prints_the_table_and_writes_the_plot(tmp_path, capsys):
    a = commands_bag(tmp_path / "a", [(1.0, 2.0)] * 20)
    b = commands_bag(tmp_path / "b", [(1.5, 2.0)] * 20)
    out = tmp_path / "plot.png"
    assert main([str(a), str(b), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "j1" in printed and "0.5" in printed and f"wrote {out}" in printed
    assert out.read_bytes().startswith(b"\x89PNG")


def test_bad_input_gives_one_sentence_and_exit_1(tmp_path, capsys):
    a = commands_bag(tmp_path / "a", [(1.0, 2.0)] * 5)
    other_arm = commands_bag(tmp_path / "b", [(1.0, 2.0)] * 5, names=("x", "y"))
    no_commands = write_bag(tmp_path / "c", [("/joint_states", START, joint_state(0))])
    later = write_bag(
        tmp_path / "d", [("/joint_commands", START, joint_state(10**12, ("j1", "j2"), (), (), (1.0, 1.0)))]
    )
    cases = [
        ([str(tmp_path / "none"), str(a)], "does not exist"),
        ([str(a), str(other_arm)], "none in common"),
        ([str(a), str(no_commands)], "no joint_commands or effort_controller/commands topic"),
        ([str(a), str(later)], "was the shadow run replayed from this recording?"),
        ([str(a), str(a), "-o", str(tmp_path / "no" / "x.png")], "does not exist; create it"),
        ([str(a), str(a), "--shadow-topic", "/nope"], "has no topic '/nope'"),
    ]
    for argv, words in cases:
        assert main(argv) == 1, argv
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1, err
    with pytest.raises(CompareError, match="does not exist"):
        load_commands(tmp_path / "missing.sklog.npz")


def test_a_command_topic_whose_stored_definition_lacks_a_field_read_is_named(tmp_path):
    bag = commands_bag(tmp_path / "a", [(1.0, 2.0)] * 5)
    damage_definition(bag, b"float64[] effort", b"float64[] effokt")
    with pytest.raises(CompareError) as error:
        load_commands(bag)
    assert "defines sensor_msgs/msg/JointState (topic '/joint_commands') without the field 'effort'" in str(error.value)
    assert str(error.value).endswith("; record '/joint_commands' again to compare it")
