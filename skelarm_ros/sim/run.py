# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""When a simulated run starts, waits, times out, lapses, ends, and what it says: the simulator's run life.

:class:`SimulatorRun` decides, from the times it is handed (seconds of a steady
clock), everything about the run that is not physics: the start condition, the
lockstep wait for each step's command and its timeout, the realtime watchdog on
commands (lapse and resume, paused time not counted), pause and reset (each reset
starts a new time line), the end after ``duration``, the exit
code, and the summary of each time line. It returns what to say as
:class:`~skelarm_ros.interface.Say` items; the simulator node logs them and keeps only
topics, timers and services.

The summary is a :class:`SimulatorSummary`: the run's figures, which make its last log
line (:meth:`SimulatorSummary.text`) and which another process reads back from that
line (:meth:`SimulatorSummary.read`), so the wording and its reading live together.

This module imports neither rclpy nor numpy.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from skelarm_ros.interface import (
    ERROR,
    INFO,
    JOINT_COMMANDS,
    LOCKSTEP,
    REALTIME,
    TIP_WRENCH,
    WARNING,
    Say,
    check_choice,
    check_non_negative,
    check_positive,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

WAIT_REPORT = 5.0  # s between two reports of what a start is waiting for


def start_missing(
    command_publishers: int,
    *,
    wrench_publishers: int | None = None,
    need_controller: bool = True,
    command_topic: str = JOINT_COMMANDS,
    wrench_topic: str = TIP_WRENCH,
) -> list[str]:
    """Say which publishers step 0 still waits for; empty when they are there.

    Its readers are waited for by name, as every publisher's are
    (:func:`skelarm_ros.nodes.graph_queries.missing_readers`): the nodes the graph says
    read ``joint_states`` and ``tip``, and every node publishing the commands.

    Parameters
    ----------
    command_publishers : int
        Command publishers matched by the simulator's subscription.
    wrench_publishers : int | None, optional
        ``tip_wrench`` publishers matched, when lockstep waits for the wrench too.
    need_controller : bool, optional
        Whether a command publisher must be there (lockstep; realtime only when asked
        to wait for its controller).
    command_topic, wrench_topic : str, optional
        The command and wrench topics' names, for the log line.

    Returns
    -------
    list[str]
        One phrase per missing publisher, for a log line.
    """
    missing = []
    if need_controller and command_publishers < 1:
        missing.append(f"a publisher on {command_topic}")
    if wrench_publishers is not None and wrench_publishers < 1:
        missing.append(f"a publisher on {wrench_topic}")
    return missing


@dataclass
class TimeLine:
    """One time line of the run: from the start, or from a reset, to the next reset or the end.

    Attributes
    ----------
    begun : float
        When its first state went out (s, steady clock).
    steps : int
        Steps made on it.
    simulated : float
        Simulated seconds at its newest state.
    first_step : float | None
        When its first step was made (s); lockstep waits for step 0's command until then.
    last_step : float | None
        When its newest step was made (s).
    paused : float
        Seconds it spent paused.
    paused_while_stepping : float
        Of those, the seconds after its first step.
    """

    begun: float
    steps: int = 0
    simulated: float = 0.0
    first_step: float | None = None
    last_step: float | None = None
    paused: float = 0.0
    paused_while_stepping: float = 0.0

    def stepping(self) -> float:
        """Seconds of stepping: from its first step to its newest, pauses left out."""
        if self.first_step is None or self.last_step is None:
            return 0.0
        return max(self.last_step - self.first_step - self.paused_while_stepping, 0.0)

    def figures(self, lockstep: bool) -> TimeLineFigures:
        """Return this time line's figures: steps, simulated time, stepping time and rate, waits.

        The rate is steps per second of stepping (from the first step to the last), so
        the waits before step 0 and the pauses do not lower it.
        """
        wall = self.stepping()
        return TimeLineFigures(
            steps=self.steps,
            simulated=self.simulated,
            stepping=wall,
            rate=round((self.steps - 1) / wall) if self.steps > 1 and wall > 0.0 else None,
            step0_wait=self.first_step - self.begun if lockstep and self.first_step is not None else None,
            paused=self.paused,
        )


_NUMBER = r"[0-9.eE+-]+"
_TIME_LINE = re.compile(
    rf"ran (?P<steps>\d+) steps \((?P<simulated>{_NUMBER}) s simulated\) in (?P<stepping>{_NUMBER}) s of stepping "
    rf"\((?P<rate>\d+|-) steps/s\)(?:, step 0 waited (?P<wait>{_NUMBER}) s for its command)?"
    rf"(?:, paused (?P<paused>{_NUMBER}) s)?"
)
_ANSWERED = re.compile(
    r"(?P<on_time>\d+) of (?P<total>\d+) steps \([0-9.]+%\) applied the command answering the state before them"
)
NOT_STARTED = "ran no step (the run had not started)"


def answered_text(on_time: int, total: int) -> str:
    """Return the phrase on answered commands: ``'998 of 1000 steps (99.80%) applied the command answering ...'``."""
    share = 100.0 * on_time / total if total else 0.0
    return f"{on_time} of {total} steps ({share:.2f}%) applied the command answering the state before them"


@dataclass(frozen=True)
class TimeLineFigures:
    """One time line's figures, as the run's summary states them.

    Attributes
    ----------
    steps : int
        Steps made on it.
    simulated : float
        Simulated seconds at its newest state.
    stepping : float
        Seconds of stepping: from its first step to its newest, pauses left out.
    rate : int | None
        Steps per second of stepping, rounded; ``None`` with fewer than two steps.
    step0_wait : float | None
        Lockstep: seconds step 0 waited for its command; ``None`` in realtime or before step 0.
    paused : float
        Seconds it spent paused (0: never).
    """

    steps: int
    simulated: float
    stepping: float
    rate: int | None = None
    step0_wait: float | None = None
    paused: float = 0.0

    def text(self) -> str:
        """Return the phrase: ``ran N steps (T s simulated) in W s of stepping (R steps/s)``, then the waits."""
        rate = "-" if self.rate is None else str(self.rate)
        text = (
            f"ran {self.steps} steps ({self.simulated:.6g} s simulated) in {self.stepping:.6g} s of stepping "
            f"({rate} steps/s)"
        )
        if self.step0_wait is not None:
            text += f", step 0 waited {self.step0_wait:.3g} s for its command"
        if self.paused > 0.0:
            text += f", paused {self.paused:.3g} s"
        return text


@dataclass(frozen=True)
class SimulatorSummary:
    """What a simulator's run did: the figures of each time line and, in realtime, the answered commands.

    :meth:`text` makes the sentence the simulator logs last; :meth:`read` finds it in a
    simulator's output and gives the figures back (to the printed precision).

    Attributes
    ----------
    time_lines : tuple[TimeLineFigures, ...]
        One per time line (a reset starts a new one); empty when the run had not started.
    answered : tuple[int, int] | None
        Realtime: steps that applied the command answering the state before them, and
        steps counted; ``None`` in lockstep or when no stamped command was counted.
    """

    time_lines: tuple[TimeLineFigures, ...] = ()
    answered: tuple[int, int] | None = None

    def text(self) -> str:
        """Return one sentence on the run: each time line's steps, simulated time, stepping time and rate."""
        if not self.time_lines:
            return NOT_STARTED
        if len(self.time_lines) == 1:
            text = self.time_lines[0].text()
        else:
            last = len(self.time_lines)
            text = "; ".join(
                f"time line {index} ({'until a reset' if index < last else 'after the last reset'}): {line.text()}"
                for index, line in enumerate(self.time_lines, start=1)
            )
        if self.answered is not None:
            text += f"; {answered_text(*self.answered)}"
        return text

    @classmethod
    def read(cls, output: str) -> SimulatorSummary | None:
        """Return the newest summary in a simulator's output (its log lines, among others), or ``None``.

        Numbers come back as the sentence prints them: six significant digits for
        times, three for waits, whole steps per second.
        """
        for line in reversed(output.splitlines()):
            found = list(_TIME_LINE.finditer(line))
            if found:
                answered = _ANSWERED.search(line)
                return cls(
                    tuple(_figures(match) for match in found),
                    None if answered is None else (int(answered["on_time"]), int(answered["total"])),
                )
            if NOT_STARTED in line:
                return cls()
        return None


def _figures(match: re.Match[str]) -> TimeLineFigures:
    return TimeLineFigures(
        steps=int(match["steps"]),
        simulated=float(match["simulated"]),
        stepping=float(match["stepping"]),
        rate=None if match["rate"] == "-" else int(match["rate"]),
        step0_wait=None if match["wait"] is None else float(match["wait"]),
        paused=0.0 if match["paused"] is None else float(match["paused"]),
    )


class AnswerCount:
    """How many steps applied the command answering the state before them, and how many did not.

    Attributes
    ----------
    on_time : int
        Steps whose command was computed from the state right before the step.
    late : int
        Steps that applied an older command (or none, after a timeout).
    """

    def __init__(self) -> None:
        """Start at zero."""
        self.on_time = 0
        self.late = 0

    def count(self, on_time: bool) -> None:
        """Count one step."""
        if on_time:
            self.on_time += 1
        else:
            self.late += 1

    @property
    def total(self) -> int:
        """Steps counted."""
        return self.on_time + self.late

    def summary(self) -> str:
        """Return one phrase for a log line: ``'998 of 1000 steps (99.80%) applied the command answering ...'``."""
        return answered_text(self.on_time, self.total)


@dataclass
class _Watchdog:
    """Realtime: whether the held command is recent enough, in time the simulator ran.

    Times are on the watchdog's clock: the steady clock less paused time and less
    ``stood_still``, the time the step loop itself stood still. ``last_tick`` is when
    (time not paused) the watchdog was last asked, at the step before.
    """

    timeout: float
    last_command: float = -math.inf
    last_tick: float | None = None
    stood_still: float = 0.0
    commanding: bool = False
    lapsed_once: bool = False


@dataclass
class SimulatorRun:
    """The run life of one simulator (see the module's docstring).

    Parameters
    ----------
    mode : str
        ``realtime`` or ``lockstep``.
    dt : float
        The integration step (s), for the end after ``duration``.
    duration : float, optional
        Simulated seconds to run; 0 runs until stopped.
    command_timeout : float, optional
        Realtime: a command older than this (s, not counting pauses) gives zero torque.
    lockstep_timeout : float, optional
        Lockstep: the longest wait (s) for a step's command.
    start_condition : bool, optional
        Whether step 0 waits for the graph (readers, a controller); without it a
        realtime run starts at once.
    wait_report : float, optional
        Seconds between two reports of what the start waits for.
    answered : AnswerCount, optional
        Realtime: the count of steps whose command answered the state before them
        (the simulation counts it), which the summary reports.
    tick_period : float | None, optional
        Realtime: the wall seconds between two steps (``dt / real_time_factor``);
        ``None`` takes ``dt``. A step that comes much later than that finds the
        simulator itself stalled (see :meth:`command_live`).
    """

    mode: str
    dt: float
    duration: float = 0.0
    command_timeout: float = 0.5
    lockstep_timeout: float = 5.0
    start_condition: bool = True
    wait_report: float = WAIT_REPORT
    answered: AnswerCount = field(default_factory=AnswerCount)
    tick_period: float | None = None
    code: int | None = None
    started: bool = False
    paused: bool = False
    time_lines: list[TimeLine] = field(default_factory=list)
    _reported: float = -math.inf
    _waiting_since: float = 0.0
    _paused_at: float = 0.0
    _paused_total: float = 0.0
    _told_halt: bool = False
    _watchdog: _Watchdog = field(init=False)

    def __post_init__(self) -> None:
        """Check the settings."""
        check_choice("mode", self.mode, (REALTIME, LOCKSTEP))
        self.dt = check_positive("dt", self.dt)
        self.duration = check_non_negative("duration", self.duration)
        self.command_timeout = check_positive("command_timeout", self.command_timeout)
        self.lockstep_timeout = check_positive("lockstep_timeout", self.lockstep_timeout)
        self.tick_period = check_positive("tick_period", self.dt if self.tick_period is None else self.tick_period)
        self._watchdog = _Watchdog(self.command_timeout)

    # -- state ------------------------------------------------------------------------------------

    @property
    def lockstep(self) -> bool:
        """Whether the run steps in lockstep."""
        return self.mode == LOCKSTEP

    @property
    def finished(self) -> bool:
        """Whether the run has ended (its exit code is :attr:`code`)."""
        return self.code is not None

    @property
    def last_step(self) -> int | None:
        """The step count at which the run ends, or ``None`` to run until stopped."""
        return round(self.duration / self.dt) if self.duration > 0.0 else None

    @property
    def stepping(self) -> bool:
        """Whether steps may be made now: started, not paused, not finished."""
        return self.started and not self.paused and not self.finished

    def finish(self, code: int) -> None:
        """End the run with ``code`` (the first call wins)."""
        if self.code is None:
            self.code = code

    def set_timeouts(self, *, command_timeout: float | None = None, lockstep_timeout: float | None = None) -> None:
        """Change the timeouts live."""
        if command_timeout is not None:
            self.command_timeout = self._watchdog.timeout = check_positive("command_timeout", command_timeout)
        if lockstep_timeout is not None:
            self.lockstep_timeout = check_positive("lockstep_timeout", lockstep_timeout)

    # -- the start --------------------------------------------------------------------------------

    def poll_start(self, now: float, missing: Sequence[str]) -> list[Say]:
        """Look at the start condition: ``missing`` lists what step 0 still waits for (empty when nothing).

        Step 0 goes out as soon as nothing is missing; :attr:`started` then turns true.
        While something is missing, it is reported every :attr:`wait_report` seconds.

        Returns
        -------
        list[Say]
            The report of what is awaited, or the start.
        """
        if self.started or self.finished:
            return []
        if not self.start_condition:
            return self.start(now)
        if missing:
            if now - self._reported >= self.wait_report:
                self._reported = now
                return [Say(INFO, f"{self.mode}: step 0 waits for {'; '.join(missing)}")]
            return []
        return self.start(now)

    def start(self, now: float) -> list[Say]:
        """Start the run: step 0's state goes out now."""
        self.started = True
        self.time_lines.append(TimeLine(begun=now))
        self._waiting_since = now
        self._watchdog.last_command = self._watch_clock(now)
        what = "stepping as each step's command arrives" if self.lockstep else f"stepping every {self.dt:g} s"
        return [Say(INFO, f"{self.mode}: starting; {what}")]

    # -- steps ------------------------------------------------------------------------------------

    def stepped(self, now: float, steps: int, simulated: float) -> list[Say]:
        """Note a step made at ``now``: the time line's counts, and the end after ``duration``.

        Parameters
        ----------
        now : float
            When (s).
        steps : int
            Steps made on this time line so far.
        simulated : float
            Simulated seconds at the new state.

        Returns
        -------
        list[Say]
            The summary when the run ends here (:attr:`finished` is then true, code 0).
        """
        line = self.time_lines[-1]
        if line.first_step is None:
            line.first_step = now
            line.paused_while_stepping = 0.0
        line.last_step = now
        line.steps, line.simulated = steps, simulated
        self._waiting_since = now
        end = self.last_step
        if end is not None and steps >= end:
            self.finish(0)
            return [Say(INFO, f"{self.summary().text()}; stopping")]
        return []

    def awaiting(self, now: float) -> None:
        """Lockstep: a step's state went out at ``now``; its command is awaited from then."""
        self._waiting_since = now

    def check_wait(self, now: float, awaited: str, sources: str) -> list[Say]:
        """Lockstep: end the run (code 1) when a step's command is awaited longer than ``lockstep_timeout``.

        Parameters
        ----------
        now : float
            Now (s).
        awaited : str
            What the step waits for (``joint_commands stamped 1.200000000 s (step 600)``).
        sources : str
            Who should send it (``a controller answering joint_states on joint_commands``).
        """
        if not self.lockstep or not self.stepping or now - self._waiting_since <= self.lockstep_timeout:
            return []
        self.finish(1)
        return [
            Say(
                ERROR,
                f"lockstep: no {awaited} arrived within lockstep_timeout={self.lockstep_timeout} s; "
                f"is {sources}? stopping",
            )
        ]

    def halted(self, reason: str) -> list[Say]:
        """Say once that integration stopped (a non-finite state), until a reset."""
        if self._told_halt:
            return []
        self._told_halt = True
        return [Say(ERROR, reason)]

    # -- pause and reset ----------------------------------------------------------------------------

    def pause(self, now: float) -> None:
        """Pause stepping; the watchdog and the lockstep wait do not count paused time."""
        if not self.paused:
            self.paused = True
            self._paused_at = now

    def resume(self, now: float) -> None:
        """Resume stepping."""
        if not self.paused:
            return
        self.paused = False
        spent = now - self._paused_at
        self._paused_total += spent
        self._waiting_since = now
        if self.time_lines:
            line = self.time_lines[-1]
            line.paused += spent
            if line.first_step is not None:
                line.paused_while_stepping += spent

    def reset(self, now: float) -> None:
        """Start a new time line at ``now`` (the arm went back to its initial state)."""
        self._told_halt = False
        if self.started:
            self.time_lines.append(TimeLine(begun=now))
            self._waiting_since = now

    def active(self, now: float) -> float:
        """Seconds of the steady clock at ``now`` with paused time left out (the watchdog's clock)."""
        paused = self._paused_total + (now - self._paused_at if self.paused else 0.0)
        return now - paused

    # -- the realtime watchdog ----------------------------------------------------------------------

    def command_arrived(self, now: float) -> list[Say]:
        """Note a command at ``now``; says so once when commands come back after a lapse."""
        watchdog = self._watchdog
        watchdog.last_command = self._watch_clock(now)
        if watchdog.commanding:
            return []
        watchdog.commanding = True
        return [Say(INFO, "commands resumed; applying them again")] if watchdog.lapsed_once else []

    def command_live(self, now: float) -> tuple[bool, list[Say]]:
        """Whether the held command still applies at ``now`` (else zero torque), and the lapse's sentence once.

        Asked once per realtime step. Like paused time, time in which the simulator
        itself stood still is not counted: when a step comes late, more than half of
        ``command_timeout`` (and two tick periods) after the one before (a publish
        blocked in the middleware, a frozen process; docs/reliability.md, "Stalls of
        about 0.33 s"), no state went out meanwhile and the controller had nothing new
        to answer, so all of that gap but one period is left out. A controller that
        stops answering is caught after ``command_timeout`` of stepping.

        Returns
        -------
        tuple[bool, list[Say]]
            Whether a command arrived within ``command_timeout`` (paused time and the
            simulator's own stalls not counted), and the warning the first time it lapses.
        """
        watchdog = self._watchdog
        active = self.active(now)
        if watchdog.last_tick is not None and active - watchdog.last_tick > self._late_after():
            watchdog.stood_still += active - watchdog.last_tick - (self.tick_period or self.dt)
        watchdog.last_tick = active
        if not watchdog.commanding:
            return False, []
        if self._watch_clock(now) - watchdog.last_command <= watchdog.timeout:
            return True, []
        watchdog.commanding = False
        watchdog.lapsed_once = True
        return False, [
            Say(
                WARNING,
                f"no effort command for over command_timeout={watchdog.timeout} s; "
                "applying zero torque until commands resume",
            )
        ]

    def _watch_clock(self, now: float) -> float:
        """Return the watchdog's clock at ``now``: seconds, paused time and the step loop's own stalls left out."""
        return self.active(now) - self._watchdog.stood_still

    def _late_after(self) -> float:
        """Seconds between two steps past which the second comes late (the simulator stalled)."""
        return max(self._watchdog.timeout / 2.0, 2.0 * (self.tick_period or self.dt))

    # -- the end --------------------------------------------------------------------------------------

    def summary(self) -> SimulatorSummary:
        """Return the run's figures: each time line's steps, simulated time, stepping time and rate.

        :meth:`SimulatorSummary.text` says them in one sentence.
        """
        answered = (self.answered.on_time, self.answered.total) if not self.lockstep and self.answered.total else None
        return SimulatorSummary(tuple(line.figures(self.lockstep) for line in self.time_lines), answered)
