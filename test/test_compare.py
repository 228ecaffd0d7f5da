"""compare: recorded and shadow commands paired by stamp, from bags and logs; the table, the plot, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from bagwriter import START, damage_definition, float_array, joint_state, write_bag
from driverbags import driven_run, shadow_bag

from skelarm_ros.bags.bag_to_log import bag_to_log
from skelarm_ros.bags.efforts import compare_efforts, load_efforts
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
        ([str(a), str(no_commands)], "has no command topic, so no commands to compare"),
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


# -- against measured effort: a real robot's bag holds its joint states only -----------------------------


def recorded_effort(run) -> np.ndarray:
    """The measured effort of every recorded state, in the arm's order (shoulder, elbow), read back from the bag."""
    from skelarm_ros.bags.reader import open_bag

    with open_bag(run.bag) as opened:
        states = [message for *_, message in opened.messages([run.topic])]
    return np.array([[dict(zip(s.name, s.effort, strict=True))[j] for j in ("shoulder", "elbow")] for s in states])


def test_a_bag_without_commands_compares_the_shadow_with_the_effort_of_the_next_state_and_finds_the_lag(
    tmp_path, capsys
):
    run = driven_run(tmp_path / "driven", frames=400, rate=250.0, lag=3)
    shadow = shadow_bag(tmp_path / "shadow", run, skip=(7,))
    out = tmp_path / "vs_effort.png"
    assert main([str(run.bag), str(shadow), "-o", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == (
        f"recorded: {run.bag} has no commands: comparing the shadow's commands with its measured effort "
        f"({run.topic}, 400 states)"
    )
    assert printed[2].startswith("paired 398 shadow commands with the measured effort of the state after the one")
    assert "1 recorded states without a shadow command, 1 shadow commands without a following state" in printed[2]
    assert printed[3].startswith("the lag that aligns them best is 3 states (12.0 ms) after each command: RMS ")
    effort = recorded_effort(run)
    answered = [k for k in range(399) if k != 7]  # each command k with the effort of state k + 1
    expected = run.commands[answered] - effort[[k + 1 for k in answered]]
    rows = {line.split()[0]: line.split()[1:] for line in printed[5:7]}
    for column, joint in enumerate(("shoulder", "elbow")):
        assert float(rows[joint][0]) == pytest.approx(np.sqrt(np.mean(expected[:, column] ** 2)), rel=1e-3)
        assert float(rows[joint][1]) == pytest.approx(np.max(np.abs(expected[:, column])), rel=1e-3)
    assert out.read_bytes().startswith(b"\x89PNG")


def test_the_best_lag_comes_out_of_the_search_whatever_the_actuator_s_delay(tmp_path):
    for lag in (0, 1, 5):
        run = driven_run(tmp_path / f"driven{lag}", frames=300, lag=lag, noise=0.002, seed=lag)
        comparison = compare_efforts(load_efforts(run.bag), load_efforts(shadow_bag(tmp_path / f"s{lag}", run)))
        assert comparison.lag is not None and comparison.lag.convention == 1
        # The current filter smears the effort by a fraction of a state: the best lag is the delay or one after it.
        assert comparison.lag.best in (lag, lag + 1), comparison.lag


def test_a_log_of_measured_effort_compares_as_its_bag_does(tmp_path):
    run = driven_run(tmp_path / "driven", frames=200)
    log = tmp_path / "driven.sklog.npz"
    bag_to_log(run.bag, log)
    shadow = load_efforts(shadow_bag(tmp_path / "shadow", run))
    from_log = compare_efforts(load_efforts(log), shadow)
    from_bag = compare_efforts(load_efforts(run.bag), shadow)
    assert load_efforts(log).measured and from_log.lag is not None and from_bag.lag is not None
    assert from_log.lag.best == from_bag.lag.best
    assert [j.rms for j in from_log.joints] == pytest.approx([j.rms for j in from_bag.joints])


def test_measured_effort_that_says_nothing_is_refused_in_one_sentence(tmp_path, capsys):
    zero = [
        ("/servo/state", START + k, joint_state(k * MS, ("j1", "j2"), (0.1, 0.2), (), (0.0, 0.0))) for k in range(5)
    ]
    none = [("/servo/state", START + k, joint_state(k * MS, ("j1", "j2"), (0.1, 0.2))) for k in range(5)]
    shadow = commands_bag(tmp_path / "shadow", [(1.0, 2.0)] * 5)
    for name, messages, words in (
        ("zero", zero, "carry an effort of zero in every state (the driver reports none)"),
        ("none", none, "carry no effort, and the bag records no commands"),
    ):
        bag = write_bag(tmp_path / name, messages)
        assert main([str(bag), str(shadow), "-o", str(tmp_path / f"{name}.png")]) == 1
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1, err
    assert main([str(shadow), str(write_bag(tmp_path / "z2", zero)), "-o", str(tmp_path / "x.png")]) == 1
    assert "has no command topic, so no commands to compare" in capsys.readouterr().err


# -- compare --angles: a hardware run beside its prediction ------------------------------------------------


def reach(t):
    """Two joints' angles of a smooth reach (rad) at times ``t`` (s)."""
    t = np.atleast_1d(np.asarray(t, dtype=float))
    return np.stack([0.5 * (1.0 - np.cos(np.pi * np.clip(t, 0.0, 1.0))), 0.2 * np.sin(3.0 * t)], axis=1)


def run_bag(path, *, period_ms=4, frames=400, lead=0, delay_ms=0.0, offset=0.0, names=("j1", "j2"), origin=0):
    """A run's bag: states every ``period_ms`` (the first ``lead`` before control starts, held still), and
    the commands from the first controlled state on (unstamped, as a driver's effort controller takes them);
    its angles follow :func:`reach` ``delay_ms`` late, ``offset`` rad off."""
    messages = []
    for k in range(frames):
        ns = origin + k * period_ms * MS
        t = (k - lead) * period_ms * 1e-3 - delay_ms * 1e-3
        q = reach(max(t, 0.0) if k >= lead else 0.0)[0] + offset
        messages.append(("/joint_states", START + ns, joint_state(ns, names, tuple(q), (0.0, 0.0))))
        if k >= lead:
            messages.append(("/effort_controller/commands", START + ns + 300_000, float_array([0.1, 0.2])))
    return write_bag(path, messages)


def test_angles_are_timed_from_where_control_starts_and_the_best_shift_is_found(tmp_path):
    from skelarm_ros.bags.angles import compare_angles, load_angles

    hardware = load_angles(run_bag(tmp_path / "hw", lead=50, delay_ms=12.0, origin=7 * 10**15))
    prediction = load_angles(run_bag(tmp_path / "twin", period_ms=2, frames=700))
    assert hardware.commanded and hardware.origin == 7 * 10**15 + 200 * MS
    comparison = compare_angles(hardware, prediction)
    assert comparison.shift == pytest.approx(0.012, abs=1e-9)
    assert comparison.rms < 1e-4  # the interpolation's error only
    assert all(joint.rms > 5e-3 for joint in comparison.unshifted)
    text = comparison.text()
    assert "the best time shift is +12.0 ms (the hardware behind the prediction)" in text
    assert comparison.span == pytest.approx(1.398)


def test_angles_per_joint_rms_and_a_side_without_commands_starts_at_its_first_state(tmp_path):
    from skelarm_ros.bags.angles import compare_angles, load_angles

    messages = [
        ("/joint_states", START + k * 4 * MS, joint_state(k * 4 * MS, ("j2", "j1"), tuple(reach(k * 0.004)[0][::-1])))
        for k in range(300)
    ]
    hardware = load_angles(write_bag(tmp_path / "hw", messages))
    assert not hardware.commanded and hardware.origin == 0
    prediction = load_angles(run_bag(tmp_path / "twin", offset=0.01, frames=200))
    comparison = compare_angles(hardware, prediction, max_shift=0.0)
    assert comparison.shift == 0.0
    assert [joint.rms for joint in comparison.joints] == pytest.approx([0.01, 0.01])
    assert len(comparison.seconds) == 200  # the hardware's states within the prediction's span


def test_compare_angles_prints_the_table_and_plots(tmp_path, capsys):
    hardware = run_bag(tmp_path / "hw", lead=10, delay_ms=4.0)
    prediction = run_bag(tmp_path / "twin", period_ms=2, frames=700)
    image = tmp_path / "angles.png"
    assert main(["--angles", str(hardware), str(prediction), "-o", str(image)]) == 0
    out = capsys.readouterr().out
    assert "hardware:   " in out and "time from the state its first command answers" in out
    assert "the best time shift is +4.0 ms" in out
    assert "RMS mrad" in out and "RMS unshifted" in out
    assert image.stat().st_size > 10_000


@pytest.mark.parametrize(
    ("names", "max_lag", "words"),
    [
        (("a", "b"), "0.25", "none in common; run the prediction with the arm's joint names (joint_names:=)"),
        (("j1", "j2"), "-1", "--max-lag must be zero or a positive number of seconds, got -1.0"),
    ],
)
def test_compare_angles_refuses_bad_input_in_one_sentence(tmp_path, capsys, names, max_lag, words):
    hardware = run_bag(tmp_path / "hw")
    prediction = run_bag(tmp_path / "twin", names=names)
    image = tmp_path / "angles.png"
    assert main(["--angles", str(hardware), str(prediction), "-o", str(image), "--max-lag", max_lag]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("skelarm-ros compare: error: ") and words in err[0]
    assert not image.exists()


# -- a servo arm's goals -------------------------------------------------------------------------------------------


def goals_bag(path, goals, *, topic="/joint_commands", stamped=True, states_topic="/joint_states"):
    """States every 2 ms (stamped k*2 ms) and a position goal answering each: stamped with it, or with its send time."""
    messages = []
    for k, goal in enumerate(goals):
        log = START + k * 2 * MS
        messages.append((states_topic, log, joint_state(k * 2 * MS, ("a", "b"), (0.1 * k, 0.2), (0.0, 0.0))))
        if topic.endswith("/commands"):
            messages.append((topic, log + 100, float_array(goal)))
        else:
            stamp = k * 2 * MS if stamped else START + k * 2 * MS + 700_000
            messages.append((topic, log + 100, joint_state(stamp, ("a", "b"), goal)))
    return write_bag(path, messages)


def test_a_shadows_position_goals_are_set_beside_the_recorded_goals(tmp_path):
    goals = [(0.1 * k, -0.05 * k) for k in range(20)]
    recorded = tmp_path / "servo_run"
    goals_bag(recorded, goals, topic="/position_controller/commands")  # realtime: the forward command controller's
    shadow = goals_bag(tmp_path / "shadow", [(a + 0.01, b) for a, b in goals])  # lockstep: joint_commands' position
    got = load_efforts(shadow, commands_only=True)
    assert got.kind == "position" and got.what == "position goals"
    mine = load_efforts(recorded, kind="position", command_joints=("a", "b"))
    comparison = compare_efforts(mine, got)
    assert len(comparison.stamps) == 20
    assert comparison.joints[0].rms == pytest.approx(0.01) and comparison.joints[1].max == pytest.approx(0.0, abs=1e-12)
    out = tmp_path / "goals.png"
    assert main([str(recorded), str(shadow), "--command-joints", "a,b", "-o", str(out)]) == 0
    assert out.is_file()


def test_recorded_goals_stamped_when_sent_pair_with_the_state_logged_before_them(tmp_path):
    goals = [(0.1 * k, -0.05 * k) for k in range(20)]
    topic = "/servo/in/references/joint_references"
    recorded = load_efforts(
        goals_bag(tmp_path / "driver", goals, topic=topic, stamped=False, states_topic="/servo/out/state"),
        topic,
        kind="position",
    )
    assert recorded.source == f"{topic} (paired with /servo/out/state)"
    assert list(recorded.stamps) == [k * 2 * MS for k in range(20)]
    shadow = load_efforts(goals_bag(tmp_path / "shadow", goals), commands_only=True)
    assert compare_efforts(recorded, shadow).largest == 0.0


def test_goals_without_recorded_goals_of_their_kind_are_refused_in_one_sentence(tmp_path, capsys):
    shadow = goals_bag(tmp_path / "shadow", [(0.0, 0.0)] * 5)
    efforts = commands_bag(tmp_path / "effort_run", [(1.0, 1.0)] * 5)
    assert main([str(efforts), str(shadow), "-o", str(tmp_path / "x.png")]) == 1
    err = capsys.readouterr().err
    assert "holds commands on /joint_commands, not the position commands to set beside the shadow's" in err
    states_only = write_bag(tmp_path / "states", [("/joint_states", START, joint_state(0, ("a", "b"), (0.0, 0.0)))])
    assert main([str(states_only), str(shadow), "-o", str(tmp_path / "y.png")]) == 1
    assert "no position commands (a servo's goals) to compare" in capsys.readouterr().err


def test_a_logs_goals_are_its_commands(tmp_path):
    goals = [(0.1 * k, -0.05 * k) for k in range(20)]
    run = goals_bag(tmp_path / "run", goals)
    bag_to_log(run, tmp_path / "run.sklog.npz")
    logged = load_efforts(tmp_path / "run.sklog.npz", commands_only=True)
    assert logged.kind == "position" and logged.source == "goal_position"
    assert compare_efforts(logged, load_efforts(run, commands_only=True)).largest == 0.0
