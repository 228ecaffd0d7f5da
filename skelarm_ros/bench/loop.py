# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Closed-loop speed of the simulator and controller nodes as two real processes over DDS.

``lockstep``: steps per second of the real simulator (``mode:=lockstep``) driven by the
real controller (``command_interface:=joint_commands``), from the simulator's own log
line (steps / wall time between its first and last state), beside the floor measured
in the same run: a minimal two-process ping-pong of JointState messages with the
executors the nodes use.

``realtime``: the simulator's timer at 1 kHz (``dt:=0.001``) and at the scenario's own
step, and the share of steps whose command was computed from the state right before
them (the simulator counts it by the command's stamp and logs it at the end).

Run as ``python -m skelarm_ros.bench.loop ping|pong ...`` this module is also the two
ping-pong processes.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from skelarm_ros.cli.graph import describe
from skelarm_ros.cli.transport import graph_environment
from skelarm_ros.sim.lateness import LATENESS_LINE
from skelarm_ros.sim.run import SimulatorSummary
from skelarm_ros.sim.scenario import resolve_scenario

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from rclpy.executors import Executor
    from rclpy.qos import QoSProfile

LOCKSTEP_TARGET = 3000.0  # steps/s
ON_TIME_TARGET = 99.5  # % of steps at 1 kHz
LOCKSTEP_SCENARIOS = ("reach", "reach_four_dof_robot")
# (label, bundled scenario, [controller] table replacing the scenario's, or None to keep it)
REALTIME_CASES: tuple[tuple[str, str, dict[str, object] | None], ...] = (
    ("computed_torque (fast), 2 links", "reach", None),
    ("computed_torque (fast), 4 links", "reach_four_dof_robot", None),
    ("virtual_spring_damper, 2 links", "reach", {"type": "virtual_spring_damper"}),
    ("adaptive_shaping, 2 links", "reach", {"type": "adaptive_shaping"}),
)
COMPOSED_SCENARIO = "reach_four_dof_robot"  # the composed graph's figures: 4 links, the fast computed torque
COMPOSED_TARGETS = {"alone": 5.0, "recorded": 1.5}  # composed lockstep / two-process lockstep, at least
RECORDED_TARGET = 0.8  # two-process lockstep recorded / unrecorded, at least
COMPOSED_ON_TIME_TARGET = 99.9  # % of 1 kHz steps on time by the wall clock, two CPU-bound processes beside
BURNERS = 2  # CPU-bound processes beside the realtime composed run
BURN = "while True: pass"
START_TIMEOUT = 60.0  # s for processes to start and find each other
SLICE = 0.0001  # s, the nodes' default scheduler_slice
PRIORITY = 50  # thread_priority of the realtime runs with SCHED_FIFO, as ros2_control's default
_domains = itertools.count()


# -- processes ---------------------------------------------------------------------------------------


def _environment(log_dir: Path) -> dict[str, str]:
    """Return a process environment on its own DDS domain (1-99; tests use 100-199), local host only."""
    env = dict(os.environ)
    env["ROS_DOMAIN_ID"] = str(1 + (os.getpid() + next(_domains)) % 99)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env["ROS_LOG_DIR"] = str(log_dir)
    return env


def _start(args: Sequence[str], env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as stream:
        return subprocess.Popen([sys.executable, *args], env=env, stdout=stream, stderr=subprocess.STDOUT)


def node_args(name: str, parameters: dict[str, object]) -> list[str]:
    """Return the Python arguments that run the package's node ``name`` with ``parameters`` set."""
    args = ["-m", f"skelarm_ros.nodes.{name}", "--ros-args"]
    for key, value in parameters.items():
        args += ["-p", f"{key}:={value}"]
    return args


def end_process(process: subprocess.Popen[bytes]) -> int:
    """End a process started here, by its id: SIGINT, then SIGKILL after a deadline."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=10.0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10.0)
    return process.returncode


def _wait(process: subprocess.Popen[bytes], timeout: float, log: Path) -> str:
    """Wait for a process to exit on its own and return its log; fail with the log otherwise."""
    try:
        code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        code = None
    text = log.read_text(errors="replace")
    if code != 0:
        msg = f"{log.name} did not end with 0 (exit {code}):\n{text[-2000:]}"
        raise RuntimeError(msg)
    return text


# -- ping-pong floor ---------------------------------------------------------------------------------


def _executor(kind: str) -> Executor:
    from rclpy.executors import SingleThreadedExecutor

    from skelarm_ros.nodes.spinning import events_executor

    return events_executor() if kind == "events" else SingleThreadedExecutor()


def _ping_pong_qos() -> QoSProfile:
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)


def ping(count: int, joints: int, executor_kind: str, raw: bool = False) -> int:
    """Send ``count`` JointState messages one after the other, each after the answer to the last; print the time.

    With ``raw`` the messages go out and come back as bytes (:mod:`skelarm_ros.bags.cdr`), as the nodes send theirs.
    """
    import struct

    import rclpy
    from rclpy.task import Future
    from sensor_msgs.msg import JointState

    from skelarm_ros.bags.cdr import JointStateWriter

    rclpy.init()
    node = rclpy.create_node("loop_ping")
    publisher = node.create_publisher(JointState, "loop/ping", _ping_pong_qos())
    message = JointState(name=[f"j{i + 1}" for i in range(joints)], position=[0.1] * joints, velocity=[0.0] * joints)
    message.effort = [0.0] * joints
    writer = JointStateWriter(message.name, (joints, joints, joints))
    done: Future = Future()
    sent = [0]
    start = [0.0]

    def send() -> None:
        stamp = message.header.stamp
        stamp.sec, stamp.nanosec = divmod(sent[0] * 1_000_000, 1_000_000_000)
        if raw:
            publisher.publish(writer.pack(stamp.sec, stamp.nanosec, message.position, message.velocity, message.effort))
        else:
            publisher.publish(message)

    def on_answer(answer: JointState | bytes) -> None:
        stamp = message.header.stamp
        if isinstance(answer, bytes):
            got = struct.unpack_from("<iI", answer, 4)
        else:
            got = (answer.header.stamp.sec, answer.header.stamp.nanosec)
        if got != (stamp.sec, stamp.nanosec):
            return
        sent[0] += 1
        if sent[0] == count:
            done.set_result(time.perf_counter() - start[0])
            return
        send()

    subscription = node.create_subscription(JointState, "loop/pong", on_answer, _ping_pong_qos(), raw=raw)
    executor = _executor(executor_kind)
    executor.add_node(node)
    deadline = time.monotonic() + START_TIMEOUT
    while publisher.get_subscription_count() < 1 or subscription.get_publisher_count() < 1:
        if time.monotonic() > deadline:
            print("ping: no pong within the start timeout", flush=True)
            return 1
        executor.spin_once(timeout_sec=0.05)
    start[0] = time.perf_counter()
    send()
    while not done.done() and time.monotonic() < deadline + 120.0:
        executor.spin_until_future_complete(done, timeout_sec=0.5)
    if done.done():
        print(f"ROUNDTRIPS {count} {done.result()!r}", flush=True)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0 if done.done() else 1


def pong(executor_kind: str, raw: bool = False) -> int:
    """Answer each JointState on ``loop/ping`` with an effort JointState of the same stamp, until stopped.

    With ``raw`` both are bytes: the state read with a learned layout, the answer written from a template.
    """
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import JointState

    from skelarm_ros.bags.cdr import JointStateLayout, JointStateWriter

    rclpy.init()
    node = rclpy.create_node("loop_pong")
    publisher = node.create_publisher(JointState, "loop/pong", _ping_pong_qos())
    layout = JointStateLayout()
    writers: dict[int, JointStateWriter] = {}

    def answer(state: JointState) -> None:
        command = JointState(name=state.name, effort=state.position)
        command.header.stamp = state.header.stamp
        publisher.publish(command)

    def answer_bytes(data: bytes) -> None:
        values = layout.values(data)
        if values is None:
            state = deserialize_message(data, JointState)
            layout.learn(data, state)
            values = (state.header.stamp.sec, state.header.stamp.nanosec, *state.position)
        count = layout.counts[0]
        writer = writers.get(count) or writers.setdefault(count, JointStateWriter(layout.names, (0, 0, count)))
        publisher.publish(writer.pack(values[0], values[1], (), (), values[2 : 2 + count]))

    node.create_subscription(JointState, "loop/ping", answer_bytes if raw else answer, _ping_pong_qos(), raw=raw)
    executor = _executor(executor_kind)
    executor.add_node(node)
    try:
        while rclpy.ok():
            executor.spin_once(timeout_sec=0.5)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


def sleeper(count: int, period: float, time_slice: float = 0.0) -> int:
    """Sleep to each of ``count`` deadlines ``period`` apart and say the lateness: the floor of a realtime loop here.

    With ``time_slice`` the process first asks Linux for that CPU slice, as the nodes' ``scheduler_slice`` does.
    """
    from skelarm_ros.nodes.scheduling import request_time_slice
    from skelarm_ros.sim.lateness import StepLateness

    if time_slice and not request_time_slice(time_slice):
        print(f"sleeper: this kernel did not take a {time_slice:g} s slice", flush=True)
        return 1
    lateness = StepLateness(period)
    first = time.monotonic() + 0.1
    for step in range(count):
        due = first + step * period
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        lateness.stepped(due, time.monotonic())
    print(lateness.text(), flush=True)
    return 0


# -- measurements ------------------------------------------------------------------------------------


@dataclass
class Workspace:
    """Where the processes of one benchmark run keep their logs, and how their environment is changed.

    ``environment``, when given, turns each pair's environment (own domain, local
    host, logs in :attr:`folder`) into the one the processes get (another transport).
    """

    folder: Path
    environment: Callable[[dict[str, str]], dict[str, str]] | None = None

    def log(self, name: str) -> Path:
        """Return a fresh log file path."""
        return self.folder / f"{name}-{next(_domains)}.log"


def _pair(
    work: Workspace,
    responders: Sequence[tuple[str, list[str]]],
    driver: tuple[str, list[str]],
    timeout: float,
) -> str:
    """Start the responders, then a driver that ends by itself; wait for the driver and return its log.

    Each of ``responders`` and ``driver`` is ``(log name, python arguments)``; all run
    on one fresh DDS domain and are ended by their ids.
    """
    env = _environment(work.folder)
    if work.environment is not None:
        env = work.environment(env)
    answering: list[subprocess.Popen[bytes]] = []
    try:
        for name, args in responders:
            answering.append(_start(args, env, work.log(name)))
        driver_log = work.log(driver[0])
        driving = _start(driver[1], env, driver_log)
        try:
            return _wait(driving, timeout, driver_log)
        finally:
            end_process(driving)
    finally:
        for process in answering:
            end_process(process)


def _found(pattern: re.Pattern[str] | str, text: str, what: str) -> re.Match[str]:
    found = re.search(pattern, text)
    if found is None:
        msg = f"{what}:\n{text[-2000:]}"
        raise RuntimeError(msg)
    return found


def _summary(text: str) -> SimulatorSummary:
    """Return the simulator's run summary from the processes' output (:meth:`SimulatorSummary.read`)."""
    summary = SimulatorSummary.read(text)
    if summary is None or not summary.time_lines:
        msg = f"the simulator logged no run summary:\n{text[-2000:]}"
        raise RuntimeError(msg)
    return summary


def floor_rate(work: Workspace, count: int, joints: int, pong_executor: str, raw: bool = False) -> float:
    """Round trips per second of the ping-pong, ping on the EventsExecutor as the lockstep simulator."""
    extra = ["--raw"] if raw else []
    text = _pair(
        work,
        [("pong", ["-m", __name__, "pong", "--executor", pong_executor, *extra])],
        (
            "ping",
            ["-m", __name__, "ping", "--count", str(count), "--joints", str(joints), "--executor", "events", *extra],
        ),
        START_TIMEOUT + 120.0,
    )
    found = _found(r"ROUNDTRIPS (\d+) ([0-9.e+-]+)", text, "ping printed no result")
    return int(found.group(1)) / float(found.group(2))


def lockstep_rate(work: Workspace, scenario: str, duration: float) -> float:
    """Return the simulator's steps per second in lockstep with the controller, from its log."""
    text = _pair(
        work,
        [("controller", node_args("controller", {"scenario": scenario, "command_interface": "joint_commands"}))],
        (
            "simulator",
            node_args(
                "simulator",
                {"scenario": scenario, "mode": "lockstep", "command_interface": "joint_commands", "duration": duration},
            ),
        ),
        START_TIMEOUT + duration * 10.0,
    )
    rate = _summary(text).time_lines[-1].rate
    return math.nan if rate is None else float(rate)


def realtime_share(
    work: Workspace, scenario: str, dt: float, duration: float, priority: int = 0
) -> tuple[float, int, int]:
    """Share (%) of realtime steps that applied the command answering the state before them, and the counts.

    With ``priority`` both nodes get ``thread_priority`` (SCHED_FIFO); if the user may
    not have it, the share is NaN.
    """
    common = {"scenario": scenario, "command_interface": "joint_commands", "dt": dt, "thread_priority": priority}
    text = _pair(
        work,
        [("controller", node_args("controller", common))],
        ("simulator", node_args("simulator", {**common, "mode": "realtime", "duration": duration})),
        START_TIMEOUT + duration * 3.0,
    )
    if priority and "runs under SCHED_FIFO" not in text:
        return float("nan"), 0, 0
    answered = _summary(text).answered
    if answered is None or not answered[1]:
        msg = f"the simulator counted no answered command (did the controller run?):\n{text[-2000:]}"
        raise RuntimeError(msg)
    on_time, total = answered
    return 100.0 * on_time / total, on_time, total


def _spec_args(executable: str, parameters: Mapping[str, object]) -> list[str]:
    """Python arguments of one node of the described graph (booleans as ROS parameters write them)."""
    values = {key: str(value).lower() if isinstance(value, bool) else value for key, value in parameters.items()}
    return node_args(executable, values)


def graph_rate(work: Workspace, arguments: Mapping[str, str], duration: float) -> float:
    """Return the steps per second of a lockstep graph as ``skelarm-ros launch sim`` starts it (its description).

    The process that ends the graph (the simulator, or the composed process) drives;
    the others (the controller, the recorder) start first and are ended after it. Every
    process gets the graph's DDS profile, as the launchers give it.
    """
    specs = describe({**arguments, "mode": "lockstep", "duration": str(duration)})
    outer = work.environment

    def launched(env: dict[str, str]) -> dict[str, str]:  # the graph's DDS profile, as the launchers give it
        given = env if outer is None else outer(env)
        return {**given, **graph_environment(given)}

    driver = next(spec for spec in specs if spec.ends_graph)
    others = [(spec.executable, _spec_args(spec.executable, spec.parameters)) for spec in specs if spec is not driver]
    driving = (driver.executable, _spec_args(driver.executable, driver.parameters))
    text = _pair(Workspace(work.folder, launched), others, driving, START_TIMEOUT + duration * 10.0)
    rate = _summary(text).time_lines[-1].rate
    return math.nan if rate is None else float(rate)


@dataclass
class Lateness:
    """A realtime run's step lateness by the wall clock, as the composed process says it."""

    on_time: int
    total: int
    p99_ms: float
    max_ms: float

    @property
    def share(self) -> float:
        """Steps on time (%)."""
        return 100.0 * self.on_time / self.total if self.total else math.nan


def composed_lateness(
    work: Workspace,
    scenario: str,
    dt: float,
    duration: float,
    burners: int,
    *,
    floor: bool = False,
    priority: int = 0,
    time_slice: float = SLICE,
) -> Lateness:
    """Run the composed process in realtime at ``dt`` beside ``burners`` CPU-bound processes; return its lateness.

    With ``floor``, a bare Python loop that only sleeps to the same deadlines runs instead (:func:`sleeper`);
    ``priority`` is the composed process's ``thread_priority`` (SCHED_FIFO; 0 for default scheduling);
    ``time_slice`` the CPU slice it (or the bare loop) asks Linux for (``scheduler_slice``; 0: the kernel's).
    """
    parameters = {"scenario": scenario, "mode": "realtime", "dt": dt, "duration": duration, "markers_rate": 0.0}
    parameters["thread_priority"] = priority
    parameters["scheduler_slice"] = time_slice
    run = ("composed", node_args("composed", parameters))
    if floor:
        count = str(round(duration / dt))
        run = (
            "sleeper",
            ["-m", __name__, "sleeper", "--count", count, "--period", str(dt), "--slice", str(time_slice)],
        )
    burning = [_start(["-c", BURN], os.environ, work.log("burner")) for _ in range(burners)]
    try:
        text = _pair(work, [], run, START_TIMEOUT + duration * 3.0)
    finally:
        for process in burning:
            end_process(process)
    found = _found(LATENESS_LINE, text, "the composed process said no step lateness")
    return Lateness(int(found["on_time"]), int(found["total"]), float(found["p99"]), float(found["max"]))


def _verdict(what: str, value: float, target: float, unit: str) -> str:
    """Return ``<what> (target <target><unit>): met`` or ``NOT met``."""
    return f"{what} (target {target:g}{unit}): " + ("met" if value >= target else "NOT met")


def _lockstep_rows(work: Workspace, quick: bool) -> dict[str, float]:
    """Measure and print the composed lockstep beside the two-process one, alone and recorded (paired rounds)."""
    results: dict[str, float] = {}
    scenario, duration, rounds = COMPOSED_SCENARIO, 4.0 if quick else 30.0, 1 if quick else 3
    cases = {
        "two-process": {"scenario": scenario},
        "two-process recorded": {"scenario": scenario, "record": ""},
        "composed": {"scenario": scenario, "compose": "true"},
        "composed recorded": {"scenario": scenario, "compose": "true", "record": ""},
    }
    rates: dict[str, list[float]] = {label: [] for label in cases}
    for _ in range(rounds):  # interleaved, so the four meet the same load in each round
        for label, arguments in cases.items():
            given = dict(arguments)
            if "record" in given:
                given["record"] = str(work.folder / f"bag-{next(_domains)}")
            rates[label].append(graph_rate(work, given, duration))
    ratios = {  # each round's ratio of two runs made one after the other; the median of the rounds
        "composed alone": ("composed", "two-process"),
        "composed recorded": ("composed recorded", "two-process recorded"),
        "recorded kept": ("two-process recorded", "two-process"),
    }
    paired = {
        key: statistics.median(a / b for a, b in zip(rates[top], rates[bottom], strict=True))
        for key, (top, bottom) in ratios.items()
    }
    steps = round(duration / 0.002)
    print(
        f"composed graph, lockstep, {scenario} (computed torque, fast model), as the launchers start it; "
        f"{duration:g} s simulated ({steps} steps) a run, {rounds} interleaved round(s), medians"
    )
    print(f"{'':48} {'steps/s':>9} {'vs two-process':>15}   each round")
    for label in cases:
        base = "two-process recorded" if "recorded" in label else "two-process"
        mine = statistics.median(rates[label])
        each = " ".join(f"{rate:.0f}" for rate in rates[label])
        print(f"{label:<48} {mine:>9.0f} {mine / statistics.median(rates[base]):>14.2f}x   {each}")
        results[label] = mine
    alone, recorded, kept = paired["composed alone"], paired["composed recorded"], paired["recorded kept"]
    results.update({"composed alone ratio": alone, "composed recorded ratio": recorded, "recorded kept": kept})
    print(
        "; ".join(
            (
                _verdict(f"composed alone {alone:.1f}x", alone, COMPOSED_TARGETS["alone"], "x"),
                _verdict(f"composed recorded {recorded:.1f}x", recorded, COMPOSED_TARGETS["recorded"], "x"),
                _verdict(f"two-process recorded at {kept:.0%} of unrecorded", kept * 100, RECORDED_TARGET * 100, "%"),
            )
        )
        + " (medians of the rounds' ratios)"
    )
    return results


def _lateness_rows(work: Workspace, quick: bool) -> dict[str, float]:
    """Measure and print the 1 kHz lateness of the composed process and of a bare loop, beside CPU-bound work."""
    results: dict[str, float] = {}
    seconds, rounds = (3.0, 1) if quick else (10.0, 2)
    print(
        f"realtime at 1 kHz, {rounds} x {seconds:g} s, beside {BURNERS} CPU-bound processes ({BURN!r}), normal "
        "scheduling unless said; on time: the step's state out within 1 ms of when it was due; rounds pooled"
    )
    print(f"{'':60} {'on time':>9} {'p99 ms':>9} {'max ms':>9}")
    slice_ms = f"{SLICE * 1e3:g} ms"
    runs = (  # label, floor, thread_priority, scheduler_slice, key
        ("floor: a bare Python loop sleeping to the deadlines", True, 0, 0.0, "realtime floor 0.001"),
        (f"floor, asking for a {slice_ms} slice", True, 0, SLICE, "realtime floor 0.001 slice"),
        (f"composed (scheduler_slice:={SLICE:g}, the default)", False, 0, SLICE, "composed realtime 0.001"),
        ("composed, scheduler_slice:=0 (the kernel's slice)", False, 0, 0.0, "composed realtime 0.001 no slice"),
        (
            f"composed, thread_priority:={PRIORITY} (SCHED_FIFO)",
            False,
            PRIORITY,
            0.0,
            "composed realtime 0.001 priority",
        ),
    )
    pooled: dict[str, list[Lateness]] = {key: [] for *_, key in runs}
    for _ in range(rounds):  # interleaved, so each meets the same load
        for _label, floor, priority, slice_, key in runs:
            pooled[key].append(
                composed_lateness(
                    work,
                    COMPOSED_SCENARIO,
                    0.001,
                    seconds,
                    BURNERS,
                    floor=floor,
                    priority=priority,
                    time_slice=slice_,
                )
            )
    for label, floor, priority, _slice, key in runs:
        lates = pooled[key]
        share = 100.0 * sum(late.on_time for late in lates) / max(1, sum(late.total for late in lates))
        p99, worst = max(late.p99_ms for late in lates), max(late.max_ms for late in lates)
        results[f"{key} on time"], results[f"{key} p99 ms"], results[f"{key} max ms"] = share, p99, worst
        verdict = "" if floor or priority else "  " + _verdict("", share, COMPOSED_ON_TIME_TARGET, "%")
        print(f"{label:<60} {share:>8.2f}% {p99:>9.3f} {worst:>9.3f}{verdict}")
    print("(p99: the worst round's; each round's own share is in the runs' logs)")
    return results


def composed_rows(work: Workspace, quick: bool) -> dict[str, float]:
    """Measure and print the composed graph beside the two-process graph: lockstep alone and recorded, realtime."""
    return {**_lockstep_rows(work, quick), **_lateness_rows(work, quick)}


def _scenario_file(work: Workspace, scenario: str, controller: dict[str, object] | None) -> str:
    """Return the bundled scenario, or a copy of it with another ``[controller]`` table."""
    if controller is None:
        return scenario
    text = resolve_scenario(scenario).read_text(encoding="utf-8")
    head = text.split("\n[controller]")[0]
    assert "controller" not in tomllib.loads(head)
    table = "\n".join(f"{key} = {value!r}".replace("'", '"') for key, value in controller.items())
    path = work.folder / f"{scenario}-{controller['type']}.toml"
    path.write_text(f"{head}\n[controller]\n{table}\n", encoding="utf-8")
    return str(path)


def run(*, quick: bool = False) -> dict[str, float]:
    """Measure and print the lockstep rate beside the ping-pong floor, and the realtime on-time share.

    Returns
    -------
    dict[str, float]
        ``lockstep <scenario>`` (steps/s), ``floor <executor>`` (round trips/s) and
        ``realtime <case> <rate>`` (% on time).
    """
    results: dict[str, float] = {}
    rounds = 1 if quick else 2
    with tempfile.TemporaryDirectory(prefix="skelarm-ros-bench-loop-") as folder:
        work = Workspace(Path(folder))
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start")
        print("lockstep (simulator EventsExecutor <-> controller node), best of", rounds)
        print(f"{'':48} {'steps/s':>9} {'floor/s':>9} {'of floor':>9}")
        count = 2000 if quick else 5000
        duration = 4.0 if quick else 10.0
        floors = (  # (key, label): messages as rclpy converts them, and bytes as the nodes send them
            ("events bytes", "ping-pong floor, bytes (as the nodes), events"),
            ("events", "ping-pong floor, messages, pong on EventsExecutor"),
            ("single", "ping-pong floor, messages, pong single-threaded"),
        )
        for _ in range(rounds):  # interleaved, so floor and loop meet the same load
            for key, _label in floors:
                kind, raw = key.split()[0], key.endswith("bytes")
                rate = floor_rate(work, count, 2, kind, raw)
                results[f"floor {key}"] = max(results.get(f"floor {key}", 0.0), rate)
            for scenario in LOCKSTEP_SCENARIOS:
                key = f"lockstep {scenario}"
                results[key] = max(results.get(key, 0.0), lockstep_rate(work, scenario, duration))
        floor = results["floor events bytes"]
        for key, label in floors:
            rate = results[f"floor {key}"]
            print(f"{label:<48} {rate:>9.0f} {floor:>9.0f} {rate / floor:>8.0%}")
        for scenario in LOCKSTEP_SCENARIOS:
            rate = results[f"lockstep {scenario}"]
            verdict = "met" if rate >= LOCKSTEP_TARGET else "NOT met"
            print(
                f"{'lockstep ' + scenario:<48} {rate:>9.0f} {floor:>9.0f} {rate / floor:>8.0%}"
                f"  target {LOCKSTEP_TARGET:.0f}: {verdict}"
            )
        seconds = 2.0 if quick else 5.0
        print(f"realtime ({seconds:g} s per run): steps whose command answered the state before them")
        print(f"{'':48} {'1 kHz':>16} {'scenario dt':>16}")
        for label, scenario, controller in REALTIME_CASES:
            path = _scenario_file(work, scenario, controller)
            cells = []
            for dt in (0.001, 0.0):
                share, on_time, total = realtime_share(work, path, dt, seconds)
                results[f"realtime {label} {dt or 'scenario'}"] = share
                cells.append(f"{share:6.2f}% ({total - on_time:>3} late)")
            verdict = "met" if results[f"realtime {label} 0.001"] >= ON_TIME_TARGET else "NOT met"
            print(f"{label:<48} {cells[0]:>16} {cells[1]:>16}  target {ON_TIME_TARGET}% at 1 kHz: {verdict}")
        print(f"the same at 1 kHz with thread_priority:={PRIORITY} on both nodes (SCHED_FIFO, where permitted)")
        for label, scenario, controller in REALTIME_CASES:
            share, on_time, total = realtime_share(
                work, _scenario_file(work, scenario, controller), 0.001, seconds, PRIORITY
            )
            results[f"realtime {label} 0.001 priority"] = share
            cell = "not permitted" if math.isnan(share) else f"{share:6.2f}% ({total - on_time:>3} late)"
            print(f"{label:<48} {cell:>16}")
        results.update(composed_rows(work, quick))
        print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """Run one side of the ping-pong (the processes :func:`floor_rate` starts)."""
    parser = argparse.ArgumentParser(prog="python -m skelarm_ros.bench.loop", description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=("ping", "pong", "sleeper"))
    parser.add_argument("--count", type=int, default=5000, help="ping: round trips")
    parser.add_argument("--joints", type=int, default=2, help="ping: joints per message")
    parser.add_argument("--executor", choices=("events", "single"), default="events")
    parser.add_argument("--raw", action="store_true", help="send and answer serialized bytes, as the nodes do")
    parser.add_argument("--period", type=float, default=0.001, help="sleeper: seconds between deadlines")
    parser.add_argument("--slice", type=float, default=0.0, help="sleeper: CPU slice to ask Linux for (s); 0: none")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.role == "ping":
        return ping(args.count, args.joints, args.executor, args.raw)
    if args.role == "sleeper":
        return sleeper(args.count, args.period, args.slice)
    return pong(args.executor, args.raw)


if __name__ == "__main__":
    sys.exit(main())
