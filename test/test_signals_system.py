"""Signals, as a user sends them: Ctrl-C while an executable starts, and while a launched graph runs.

- SIGINT 0.2, 0.5 and 1.0 s into each executable (the nodes, the tools) and into
  ``skelarm-ros launch sim``, ten times each: the process ends without a traceback,
  ``FATAL``, an ``Exception in ... callback`` line, a rosout error or a crash, with the
  exit code of its kind (0 for a node or a launch, 130 for a tool that had not
  finished, 0 for one that had). Started as ``skelarm-ros launch`` starts the
  package's executables (signals blocked until their handlers are in place), and as a
  shell starts them. A shell's process gets its signal right after the package's code
  put its handlers in place (seen in ``/proc/<pid>/status``): before that, in the
  interpreter's own start-up, Python itself answers a signal, and on a busy machine
  that start-up alone takes from tenths of a second to more than a second
  (docs/interfaces.md, "Signals").
- Ctrl-C to ``skelarm-ros launch sim`` right after it starts its first node and right after its
  second, five times each: every started node ends, exit code 0, no traceback,
  nothing left in the launch's session.
- Ctrl-C to a running ``skelarm-ros launch sim``, twenty times: every stop is clean.

The delays before each signal are what these tests are about (the signal's moment),
not a wait for something to happen.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import procs
import pytest
from conftest import EXTRA_DOMAINS, claim_domain
from test_launcher_system import STARTED
from waiting import wait_until

from skelarm_ros.bags.log_to_bag import log_to_bag
from skelarm_ros.sim.engine import ArmEngine, run_controlled
from skelarm_ros.sim.scenario import load_scenario
from skelarm_ros.startup import started_blocked

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # timing checks: alone, after the parallel part (Makefile)

NOISE = ("Traceback", "FATAL", "Exception in", "Failed to publish log message to rosout", "Segmentation fault")
DELAYS = (0.2, 0.5, 1.0)
REPEATS = 10
SPAWN_REPEATS = 5  # Ctrl-C right after a spawn, each moment
RUNS = 20  # Ctrl-C to a running graph
PARALLEL = 3  # processes signalled at once (each on its own DDS domain)
LAUNCH = (sys.executable, "-m", "skelarm_ros.cli", "launch", "sim")


_free: queue.Queue[int] = queue.Queue()  # this test process's extra domains, the least recently used first
_claimed: list[int] = []  # held (conftest.claim_domain) until this test process exits
_claiming = threading.Lock()


@contextlib.contextmanager
def environment() -> Iterator[dict[str, str]]:
    """This test process's environment on a DDS domain no other graph uses while the ``with`` block runs.

    The domains are claimed as the test process's own is, so two test runs at once never share one; the
    processes run at once here take one each, and one that ended gives it back for a later one.
    """
    with _claiming:
        while len(_claimed) < 2 * PARALLEL:
            _claimed.append(claim_domain(EXTRA_DOMAINS))
            _free.put(_claimed[-1])
    domain = _free.get()
    try:
        env = dict(os.environ)
        env["ROS_DOMAIN_ID"] = str(domain)
        yield env
    finally:
        _free.put(domain)


def handles_sigterm(pid: int) -> bool:
    """Whether the process has a handler of its own for SIGTERM (Python leaves it at the default until then)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True  # it ended: nothing to wait for
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught >> (signal.SIGTERM - 1) & 1)


def interrupted(command: list[str], delay: float, cwd: Path, *, blocked: bool) -> tuple[int, str]:
    """Start ``command``, send SIGINT ``delay`` seconds after (a shell's: after its handlers are in place)."""
    with environment() as env:
        with started_blocked() if blocked else contextlib.nullcontext():
            process = subprocess.Popen(
                command,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
        try:
            if not blocked:
                # polling /proc for the moment the handlers are in place
                wait_until(lambda: handles_sigterm(process.pid), procs.START_TIMEOUT, poll=0.005)
            time.sleep(delay)
            process.send_signal(signal.SIGINT)
            output, _ = process.communicate(timeout=30.0)
        finally:
            procs.kill(process)
    return process.returncode, output.decode(errors="replace")


@pytest.fixture(scope="module")
def bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small bag for the tools to read."""
    folder = tmp_path_factory.mktemp("bag") / "run"
    scenario = load_scenario("reach")
    engine = ArmEngine(scenario.skeleton, scenario.simulator.dt)
    log_to_bag(run_controlled(engine, scenario.skeleton.clone(), scenario.controller, duration=0.1), folder)
    return folder


def executables(bag: Path, work: Path) -> dict[str, tuple[list[str], tuple[int, ...]]]:
    """Each executable's command line and the exit codes a signal may leave (its kind's)."""
    run = [sys.executable, "-m", "skelarm_ros.cli", "run"]
    force = work / "push.csv"
    force.write_text("t,fx,fy\n0.0,1.0,0.0\n1.0,1.0,0.0\n")
    return {
        "simulator": ([*run, "simulator"], (0,)),
        "controller": ([*run, "controller"], (0,)),
        "force_replay": ([*run, "force_replay", "--ros-args", "-p", f"source:={force}", "-p", "timing:=timer"], (0,)),
        "recorder": ([*run, "recorder", "--ros-args", "-p", "output:=out_{index}"], (0,)),
        "bag_to_log": ([*run, "bag_to_log", str(bag), "-o", "out_{index}.sklog.npz"], (0, 130)),
        "launch": (list(LAUNCH), (0,)),
    }


STARTS = [("launcher", delay) for delay in DELAYS] + [("shell", 0.0)]


@pytest.mark.parametrize(("started_by", "delay"), STARTS)
@pytest.mark.parametrize("name", ["simulator", "controller", "force_replay", "recorder", "bag_to_log", "launch"])
def test_a_signal_while_an_executable_starts_ends_it_quietly(
    bag: Path, tmp_path: Path, name: str, started_by: str, delay: float
) -> None:
    command, codes = executables(bag, tmp_path)[name]

    def one(index: int) -> tuple[int, str]:
        words = [word.format(index=index) for word in command]
        return interrupted(words, delay, tmp_path, blocked=started_by == "launcher")

    with ThreadPoolExecutor(PARALLEL) as pool:
        results = list(pool.map(one, range(REPEATS)))
    for code, output in results:
        assert code in codes, f"exit {code} (expected one of {codes}):\n{output}"
        for noise in NOISE:
            assert noise not in output, output
    leftovers = sorted(path.name for path in tmp_path.iterdir() if path.name.startswith(".out"))
    assert leftovers == []  # no half-written output


def ctrl_c_launch(moment: Callable[[str], bool]) -> tuple[int, str, list[int]]:
    """Start ``skelarm-ros launch sim`` in a session of its own, SIGINT it right after its output line ``moment``.

    Returns its exit code, its output, and the processes of its session still running after it ended (ended
    here by SIGKILL).
    """
    with environment() as env:
        process = subprocess.Popen(
            list(LAUNCH),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        lines = []
        try:
            assert process.stdout is not None
            deadline = time.monotonic() + procs.START_TIMEOUT
            for line in process.stdout:
                lines.append(line)
                if moment(line) or time.monotonic() > deadline:
                    break
            process.send_signal(signal.SIGINT)
            rest, _ = process.communicate(timeout=30.0)
        finally:
            procs.kill(process)
        left = procs.in_session(process.pid)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    return process.returncode, "".join(lines) + rest, left


def starts(count: int) -> Callable[[str], bool]:
    """The moment the launcher has said it started its ``count``-th node."""
    started: list[str] = []

    def moment(line: str) -> bool:
        if STARTED.match(line.rstrip("\n")):
            started.append(line)
        return len(started) == count

    return moment


@pytest.mark.parametrize("count", [1, 2], ids=["after-the-first", "after-the-second"])
def test_ctrl_c_right_after_the_launcher_starts_a_node_ends_every_started_node_cleanly(count: int) -> None:
    with ThreadPoolExecutor(PARALLEL) as pool:
        results = list(pool.map(lambda _index: ctrl_c_launch(starts(count)), range(SPAWN_REPEATS)))
    for code, output, left in results:
        assert (code, left) == (0, []), output
        for noise in NOISE:
            assert noise not in output, output


def test_ctrl_c_stops_a_running_graph_cleanly_every_time() -> None:
    with ThreadPoolExecutor(PARALLEL) as pool:  # the graph runs once the controller reports its progress
        results = list(pool.map(lambda _index: ctrl_c_launch(lambda line: "stepping every" in line), range(RUNS)))
    clean = 0
    for code, output, left in results:
        assert "stepping every" in output, output
        assert (code, left) == (0, []), output
        for noise in NOISE:
            assert noise not in output, output
        assert "stopped by a signal; ran" in output, output
        assert "[controller]: stopped by a signal; sent " in output, output
        clean += 1
    assert clean == RUNS
