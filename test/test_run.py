"""The simulator's run life, with the time handed in: start, readers by name, lockstep wait, watchdog, pause, end."""

from __future__ import annotations

import pytest

from skelarm_ros.interface import ERROR, INFO, WARNING, Say, missing_readers
from skelarm_ros.sim.run import SimulatorRun, SimulatorSummary, TimeLineFigures, start_missing


def texts(said: list[Say]) -> list[str]:
    return [item.text for item in said]


def started(mode: str = "lockstep", **settings: float) -> SimulatorRun:
    run = SimulatorRun(mode, 0.002, **settings)  # type: ignore[arg-type]
    run.start(100.0)
    return run


def test_settings_are_checked_with_one_sentence() -> None:
    with pytest.raises(ValueError, match="mode 'Lockstep' is not one of realtime, lockstep"):
        SimulatorRun("Lockstep", 0.002)
    with pytest.raises(ValueError, match=r"dt must be a positive number \(s\), got 0"):
        SimulatorRun("realtime", 0)
    with pytest.raises(ValueError, match="duration must be zero or a positive number"):
        SimulatorRun("realtime", 0.002, duration=-1.0)
    with pytest.raises(ValueError, match="command_timeout must be a positive number"):
        SimulatorRun("realtime", 0.002, command_timeout=0.0)


def test_without_a_start_condition_the_run_starts_at_once_and_says_so() -> None:
    run = SimulatorRun("realtime", 0.002, start_condition=False)
    said = run.poll_start(5.0, ["ignored"])
    assert run.started and run.stepping
    assert said == [Say(INFO, "realtime: starting; stepping every 0.002 s")]
    assert run.poll_start(6.0, []) == []  # once


def test_the_start_waits_says_what_for_and_starts_once_nothing_is_missing() -> None:
    run = SimulatorRun("lockstep", 0.002, wait_report=5.0)
    assert texts(run.poll_start(0.0, ["a publisher on /joint_commands"])) == [
        "lockstep: step 0 waits for a publisher on /joint_commands"
    ]
    assert run.poll_start(1.0, ["a publisher on /joint_commands"]) == []  # not every poll
    assert len(run.poll_start(5.0, ["x"])) == 1  # again after wait_report
    said = run.poll_start(6.0, [])  # every reader is named: nothing left to settle for
    assert run.started and said[0].text.startswith("lockstep: starting")


def test_lockstep_times_out_on_a_step_that_waits_too_long() -> None:
    run = started(lockstep_timeout=5.0)
    run.awaiting(100.0)
    assert run.check_wait(105.0, "joint_commands stamped 0.000000000 s (step 0)", "a controller") == []
    said = run.check_wait(105.1, "joint_commands stamped 0.000000000 s (step 0)", "a controller on /joint_commands")
    assert run.finished and run.code == 1
    assert said == [
        Say(
            ERROR,
            "lockstep: no joint_commands stamped 0.000000000 s (step 0) arrived within lockstep_timeout=5.0 s; "
            "is a controller on /joint_commands? stopping",
        )
    ]
    assert run.check_wait(200.0, "x", "y") == []  # finished: said once


def test_a_paused_lockstep_run_does_not_time_out_and_resume_restarts_the_wait() -> None:
    run = started(lockstep_timeout=1.0)
    run.awaiting(100.0)
    run.pause(100.5)
    assert not run.stepping
    assert run.check_wait(150.0, "x", "y") == []
    run.resume(150.0)
    assert run.check_wait(150.9, "x", "y") == []
    assert run.check_wait(151.1, "x", "y") != [] and run.code == 1


def test_a_realtime_run_never_times_out_on_commands() -> None:
    run = started("realtime")
    assert run.check_wait(1e6, "x", "y") == [] and not run.finished


def test_the_run_ends_after_duration_with_its_summary() -> None:
    run = started(duration=0.01)  # 5 steps of 2 ms
    assert run.last_step == 5
    for k in range(1, 5):
        assert run.stepped(100.1 + 0.001 * k, k, 0.002 * k) == []
    said = run.stepped(100.105, 5, 0.01)
    assert run.finished and run.code == 0 and not run.stepping
    assert said[0].text.endswith("; stopping")
    assert "ran 5 steps (0.01 s simulated)" in said[0].text
    run.finish(1)
    assert run.code == 0  # the first end wins


def test_the_rate_counts_stepping_only_not_the_wait_for_step_0_nor_pauses() -> None:
    run = started()  # step 0's state went out at 100.0
    run.stepped(103.0, 1, 0.002)  # its command came after a 3 s wait (discovery)
    run.pause(103.5)
    run.resume(113.5)  # 10 s paused
    run.stepped(114.0, 2, 0.004)
    line = run.time_lines[0]
    assert line.stepping() == pytest.approx(1.0)
    text = run.summary().text()
    assert "ran 2 steps (0.004 s simulated) in 1 s of stepping (1 steps/s)" in text
    assert "step 0 waited 3 s for its command" in text
    assert "paused 10 s" in text


def test_each_reset_starts_a_time_line_that_the_summary_reports() -> None:
    run = started("realtime")
    for k in range(1, 11):
        run.stepped(100.0 + 0.01 * k, k, 0.002 * k)
    run.reset(101.0)
    for k in range(1, 4):
        run.stepped(101.0 + 0.01 * k, k, 0.002 * k)
    text = run.summary().text()
    assert text.startswith("time line 1 (until a reset): ran 10 steps (0.02 s simulated)")
    assert "time line 2 (after the last reset): ran 3 steps (0.006 s simulated)" in text


def test_a_realtime_summary_gives_the_share_of_steps_that_applied_the_answering_command() -> None:
    run = started("realtime")
    for k in range(1, 5):
        run.answered.count(k != 3)
        run.stepped(100.0 + 0.01 * k, k, 0.002 * k)
    assert run.summary().text().endswith("; 3 of 4 steps (75.00%) applied the command answering the state before them")
    lockstep = started("lockstep")
    lockstep.answered.count(True)
    assert "applied the command" not in lockstep.summary().text()  # lockstep: every step does, by construction


def test_a_run_that_never_started_says_so() -> None:
    assert SimulatorRun("lockstep", 0.002).summary().text() == "ran no step (the run had not started)"


SUMMARIES = {
    "lockstep": SimulatorSummary((TimeLineFigures(1001, 2.0, 0.25, 4000, step0_wait=0.5),)),
    "paused": SimulatorSummary((TimeLineFigures(2, 0.004, 1.0, 1, step0_wait=3.0, paused=10.0),)),
    "realtime": SimulatorSummary((TimeLineFigures(5, 0.01, 0.008, 500),), answered=(3, 4)),
    "one step": SimulatorSummary((TimeLineFigures(1, 0.002, 0.0),)),
    "reset": SimulatorSummary(
        (TimeLineFigures(10, 0.02, 0.09, 100, paused=1.5), TimeLineFigures(3, 0.006, 1.5e-05, 133333)),
        answered=(12, 13),
    ),
    "not started": SimulatorSummary(),
}


@pytest.mark.parametrize("name", list(SUMMARIES))
def test_a_summary_reads_back_from_the_line_it_makes(name: str) -> None:
    summary = SUMMARIES[name]
    output = (
        "[controller] [INFO] [1.5] [controller]: stopped by a signal; sent 1000 commands\n"
        f"[simulator] [INFO] [1.6] [simulator]: {summary.text()}; stopping\n"
        "[recorder] [INFO] [1.7] [recorder]: closed the bag\n"
    )
    assert SimulatorSummary.read(output) == summary


def test_the_summary_of_a_run_reads_back_to_its_printed_precision() -> None:
    run = started("realtime")
    for k in range(1, 11):
        run.answered.count(k % 4 != 0)
        run.stepped(100.0 + 0.0013 * k, k, 0.002 * k)
    run.reset(101.0)
    run.stepped(101.5, 1, 0.002)
    text = run.summary().text()
    read = SimulatorSummary.read(f"[INFO] [simulator]: stopped by a signal; {text}")
    assert read is not None and read.text() == text
    assert [line.steps for line in read.time_lines] == [10, 1] and read.answered == (8, 10)
    assert read.time_lines[0].stepping == pytest.approx(run.time_lines[0].stepping(), rel=1e-5)
    assert read.time_lines[0].rate == round(9 / run.time_lines[0].stepping())


def test_reading_takes_the_newest_summary_and_nothing_else() -> None:
    first = SimulatorSummary((TimeLineFigures(3, 0.006, 0.004, 500),)).text()
    second = SimulatorSummary((TimeLineFigures(7, 0.014, 0.012, 500),)).text()
    read = SimulatorSummary.read(f"{first}\nsomething else\n{second}\nrealtime: starting")
    assert read is not None and read.time_lines[0].steps == 7
    assert SimulatorSummary.read("realtime: starting; stepping every 0.002 s\nsent 5 commands") is None
    assert SimulatorSummary.read("") is None


def test_the_demo_reads_the_simulators_stepping_time_from_the_graphs_output() -> None:
    from skelarm_ros.cli.demo import DemoError, stepping_wall_time

    line = SimulatorSummary((TimeLineFigures(751, 1.5, 0.375, 2000, step0_wait=0.25),)).text()
    output = f"[controller] [INFO] [2.0] [controller]: target reached\n[simulator] [INFO] [2.1] [simulator]: {line}\n"
    assert stepping_wall_time(output) == 0.375
    with pytest.raises(DemoError, match="the simulator did not report the end of its run"):
        stepping_wall_time("[controller] [INFO] [2.0] [controller]: target reached\n")


def ticks(run: SimulatorRun, start: float, end: float, period: float = 0.002) -> list[tuple[bool, list[Say]]]:
    """Ask the watchdog as realtime steps do, every ``period`` from ``start`` up to ``end``."""
    return [run.command_live(start + k * period) for k in range(round((end - start) / period) + 1)]


def test_the_watchdog_lapses_once_and_resumes_once() -> None:
    run = started("realtime", command_timeout=0.5)
    assert run.command_live(100.1) == (False, [])  # no command yet: zero torque, nothing to say
    assert ticks(run, 100.102, 100.198)[-1] == (False, [])
    assert run.command_arrived(100.2) == []
    assert all(answer == (True, []) for answer in ticks(run, 100.2, 100.69))
    assert all(answer == (True, []) for answer in ticks(run, 100.692, 100.7))  # 0.5 s: not over it yet
    live, said = run.command_live(100.702)
    assert not live
    assert said == [
        Say(WARNING, "no effort command for over command_timeout=0.5 s; applying zero torque until commands resume")
    ]
    assert all(answer == (False, []) for answer in ticks(run, 100.704, 100.9))  # one warning, not one per step
    assert texts(run.command_arrived(101.0)) == ["commands resumed; applying them again"]
    assert run.command_arrived(101.001) == []
    assert all(answer == (True, []) for answer in ticks(run, 100.902, 101.1))
    run.set_timeouts(command_timeout=0.05)  # applied live
    assert run.command_live(101.102)[0] is False


def test_paused_time_does_not_count_for_the_watchdog() -> None:
    run = started("realtime", command_timeout=0.5)
    run.command_arrived(100.0)
    assert all(answer == (True, []) for answer in ticks(run, 100.0, 100.1))
    run.pause(100.1)
    assert run.command_live(105.0) == (True, [])  # while paused: no lapse
    run.resume(110.1)
    assert all(answer == (True, []) for answer in ticks(run, 110.1, 110.48))  # up to 0.48 s of running time
    assert run.command_live(110.52)[0] is False  # 0.52 s of running time: lapsed


def test_a_stall_of_the_step_loop_is_not_counted_against_the_controller() -> None:
    # The step loop stands still 0.4 s (a publish blocked in the middleware, a frozen process): no
    # state went out, so the controller had nothing new to answer; steps queued meanwhile may then
    # come back to back, before the controller's answer to the first of them.
    run = started("realtime", command_timeout=0.3)
    run.command_arrived(100.0)
    assert all(answer == (True, []) for answer in ticks(run, 100.0, 100.1))
    assert ticks(run, 100.5, 100.51) == [(True, [])] * 6  # 0.4 s late, then 5 steps back to back
    assert run.command_arrived(100.511) == []  # the controller's answer to the late step's state
    assert all(answer == (True, []) for answer in ticks(run, 100.512, 100.7))
    # A controller that stops answering is caught after command_timeout of stepping, stalls left out:
    # 0.189 s of stepping after its last answer, a 0.5 s stall (one period of it counted), then 0.11 s more.
    assert ticks(run, 101.2, 101.308) == [(True, [])] * 55
    live, said = run.command_live(101.31)
    assert not live
    assert texts(said) == [
        "no effort command for over command_timeout=0.3 s; applying zero torque until commands resume"
    ]


def test_a_slow_timer_is_not_taken_for_a_stall() -> None:
    # real_time_factor 0.01: a step every 0.2 s of wall time; the watchdog still lapses.
    run = SimulatorRun("realtime", 0.002, command_timeout=0.3, tick_period=0.2)
    run.start(100.0)
    run.command_arrived(100.0)
    assert [live for live, _ in ticks(run, 100.0, 100.6, 0.2)] == [True, True, False, False]


def test_halting_is_said_once_until_a_reset() -> None:
    run = started()
    assert run.halted("the state became non-finite") == [Say(ERROR, "the state became non-finite")]
    assert run.halted("the state became non-finite") == []
    run.reset(101.0)
    assert run.halted("again") == [Say(ERROR, "again")]


def test_step_0_waits_for_a_command_publisher_when_it_waits_for_a_controller() -> None:
    assert start_missing(0) == ["a publisher on joint_commands"]
    assert start_missing(1) == []
    assert start_missing(0, need_controller=False) == []  # realtime, readers only
    assert start_missing(1, wrench_publishers=0) == ["a publisher on tip_wrench"]
    assert start_missing(1, wrench_publishers=1) == []


@pytest.mark.parametrize(
    ("wanted", "readers", "matched", "missing"),
    [
        (["/controller"], ["/controller"], 1, []),
        (["/controller"], ["/controller", "/probe"], 2, []),
        # The controller's reader is not in the graph yet: a matched reader from outside does not stand in for it.
        (["/controller"], ["/plotter"], 1, ["a joint_states reader of /controller"]),
        # Known but not matched yet (every reader that can match must be matched).
        (["/controller"], ["/controller", "/plotter"], 1, ["joint_states readers matched (1 of 2)"]),
        (["/controller", "/recorder"], ["/controller"], 1, ["a joint_states reader of /recorder"]),
        ([], ["/plotter"], 0, []),  # nobody named: nothing to wait for
    ],
)
def test_a_publisher_waits_for_its_readers_by_name(wanted, readers, matched, missing) -> None:
    assert missing_readers("joint_states", wanted, readers, matched) == missing


def test_an_outside_reader_started_first_no_longer_meets_the_wait_a_count_would_have_met() -> None:
    # A plotter started before the graph's recorder: one reader matched, as the old count of one wanted.
    assert missing_readers("tip", ["/recorder"], ["/plotter"], 1) == ["a tip reader of /recorder"]
    assert missing_readers("tip", ["/recorder"], ["/plotter", "/recorder"], 2) == []


def test_where_no_name_can_be_known_at_least_one_reader() -> None:
    # A live arm's driver: its effort controller's name is unknown.
    assert missing_readers("effort_controller/commands", [], [], 0, at_least=1) == [
        "effort_controller/commands readers matched (0 of 1)"
    ]
    assert missing_readers("effort_controller/commands", [], [], 1, at_least=1) == []
