# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""A publisher starting into a running graph: how long its ``publish()`` calls stall while it meets the graph.

An *idle* process holds :data:`READERS` participants, each with a reader on one topic,
up for the whole benchmark (a controller, a recorder, rviz, a probe: nodes that were up
before). A *talker* process starts, publishes a JointState every 2 ms (the
simulator's rate and QoS) for :data:`TALK` seconds and prints its longest
``publish()`` call; then the next talker starts, for a number of rounds (as a
simulator restarts into a running graph, or starts after its controller).

It runs with Fast DDS's shared-memory transport (rmw_fastrtps_cpp with
``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``, the default here) and with the package's
UDP-only loopback profile (:mod:`skelarm_ros.cli.transport`), the rounds of the two
interleaved; then, as the price of the profile, the lockstep rate of the real simulator
and controller on each (as ``bench loop`` measures it). With shared memory, the
talker's first message to each participant opens that participant's port, and when
the port's listener is idle the opening sleeps a third of a second in a health check
while every other send of the talker, its ``publish()`` included, waits
(docs/reliability.md).

Run as ``python -m skelarm_ros.bench.contact talker|idle ...`` this module is also the
two processes.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from skelarm_ros.bench.loop import Workspace, end_process, lockstep_rate
from skelarm_ros.cli.transport import udp_localhost_environment

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

PERIOD = 0.002  # s between two messages of the talker
TALK = 3.0  # s a talker publishes
READERS = 8  # participants of the idle process, each with a reader
SETTLE = 2.0  # s the idle participants are up before the first talker (their ports pass a watchdog check)
STALL = 0.1  # s: a publish() call longer than this is a stall
HEALTH_CHECK = 0.3  # s: a stall this long is the shared-memory health check's (1000 ms / 3)
START_TIMEOUT = 60.0  # s for a process to come up
TOPIC = "contact/joint_states"
_LONGEST = re.compile(r"^LONGEST ([0-9.]+) MATCHED (\d+)$", re.MULTILINE)
_READY = "READY"


# -- the two processes --------------------------------------------------------------------------------


def _stop_on_sigint() -> list[int]:
    """Make SIGINT only note itself (rclpy then starts without its handlers); return the list it appends to."""
    stop: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, _frame: stop.append(signum))
    return stop


def talker(seconds: float) -> int:
    """Publish a JointState every :data:`PERIOD` for ``seconds``; print the longest ``publish()`` call."""
    import rclpy
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    from rclpy.signals import SignalHandlerOptions
    from sensor_msgs.msg import JointState

    stop = _stop_on_sigint()
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node("contact_talker")
    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.RELIABLE)
    publisher = node.create_publisher(JointState, TOPIC, qos)
    message = JointState(name=["j1", "j2"], position=[0.1, 0.2], velocity=[0.0, 0.0], effort=[0.0, 0.0])
    longest = 0.0
    sent = 0
    start = time.monotonic()
    while not stop and time.monotonic() - start < seconds:
        before = time.monotonic()
        publisher.publish(message)
        longest = max(longest, time.monotonic() - before)
        sent += 1
        time.sleep(max(0.0, start + sent * PERIOD - time.monotonic()))
    print(f"LONGEST {longest:.6f} MATCHED {publisher.get_subscription_count()}", flush=True)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


def idle(readers: int) -> int:
    """Hold ``readers`` participants, each with a reader on :data:`TOPIC`, until SIGINT."""
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rclpy.signals import SignalHandlerOptions
    from sensor_msgs.msg import JointState

    stop = _stop_on_sigint()
    qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    held = []
    for index in range(readers):
        context = rclpy.Context()
        rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
        node = rclpy.create_node(f"contact_reader_{index}", context=context)
        node.create_subscription(JointState, TOPIC, lambda _data: None, qos, raw=True)
        held.append((context, node))
    print(_READY, flush=True)
    while not stop:
        time.sleep(0.1)
    for context, node in held:
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    return 0


# -- measurement ----------------------------------------------------------------------------------------


@dataclass
class Rounds:
    """What one setting gave: each talker's longest ``publish()`` (s) and how many readers it had matched."""

    longest: list[float] = field(default_factory=list)
    matched: list[int] = field(default_factory=list)

    def line(self) -> str:
        """One row of the table: talkers, talkers with a stall, health-check stalls, longest, readers matched."""
        stalled = [s for s in self.longest if s > STALL]
        checks = [s for s in stalled if s >= HEALTH_CHECK]
        longest = f"{max(self.longest) * 1000:.0f} ms" if self.longest else "-"
        matched = f"{min(self.matched)}-{max(self.matched)}" if self.matched else "-"
        return f"{len(self.longest):>8} {len(stalled):>14} {len(checks):>13} {longest:>10} {matched:>9}"


def _python(args: Sequence[str], env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as stream:
        return subprocess.Popen(
            [sys.executable, "-m", __name__, *args], env=dict(env), stdout=stream, stderr=subprocess.STDOUT
        )


def _wait_ready(process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while _READY not in log.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > deadline:
            msg = f"the idle participants did not start:\n{log.read_text(errors='replace')[-2000:]}"
            raise RuntimeError(msg)
        time.sleep(0.05)


def talk_once(env: Mapping[str, str], log: Path, into: Rounds) -> None:
    """Run one talker to its end on ``env`` and add its longest ``publish()`` to ``into``."""
    talking = _python(["talker", "--seconds", str(TALK)], env, log)
    try:
        talking.wait(timeout=START_TIMEOUT + TALK)
    finally:
        end_process(talking)
    text = log.read_text(errors="replace")
    found = _LONGEST.search(text)
    if found is None:
        msg = f"the talker printed no result:\n{text[-2000:]}"
        raise RuntimeError(msg)
    into.longest.append(float(found.group(1)))
    into.matched.append(int(found.group(2)))


def _environments(folder: str) -> dict[str, dict[str, str]]:
    """Return the two settings' environments, each on its own DDS domain (1-99, as ``bench loop``'s)."""
    base = dict(os.environ)
    base["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    base["ROS_LOG_DIR"] = folder
    domain = 1 + os.getpid() % 97
    return {
        "shared memory + UDP (LOCALHOST, the default)": {**base, "ROS_DOMAIN_ID": str(domain)},
        "UDP loopback only (config/fastdds_udp_localhost.xml)": udp_localhost_environment(
            {**base, "ROS_DOMAIN_ID": str(domain + 1)}
        ),
    }


def run(*, quick: bool = False) -> dict[str, list[float]]:
    """Measure and print, per transport setting, the longest ``publish()`` of talkers starting into a graph.

    Returns
    -------
    dict[str, list[float]]
        Per setting, each talker's longest ``publish()`` call (s).
    """
    rounds = 6 if quick else 24
    with tempfile.TemporaryDirectory(prefix="skelarm-ros-bench-contact-") as folder:
        settings = _environments(folder)
        results = {label: Rounds() for label in settings}
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start")
        print(
            f"{rounds} talkers per setting (interleaved), each {TALK:g} s at {1 / PERIOD:.0f} Hz into {READERS} "
            f"participants up before it; a stall is a publish() over {STALL:g} s"
        )
        idles = []
        try:
            for index, env in enumerate(settings.values()):
                log = Path(folder) / f"idle-{index}.log"
                idles.append(_python(["idle", "--readers", str(READERS)], env, log))
                _wait_ready(idles[-1], log)
            time.sleep(SETTLE)
            for round_ in range(rounds):
                for index, (label, env) in enumerate(settings.items()):
                    talk_once(env, Path(folder) / f"talker-{index}-{round_}.log", results[label])
        finally:
            for process in idles:
                end_process(process)
        print(f"{'':54} {'talkers':>8} {'with a stall':>14} {'of >= 0.3 s':>13} {'longest':>10} {'matched':>9}")
        for label, result in results.items():
            print(f"{label:<54} {result.line()}")
        shares = [sum(s > STALL for s in r.longest) / max(len(r.longest), 1) for r in results.values()]
        print(f"talkers with a stall: {shares[0]:.0%} with shared memory, {shares[1]:.0%} with UDP only")
        rates = _lockstep_rates(Path(folder), list(results), 1 if quick else 2, 4.0 if quick else 10.0)
        print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return {label: result.longest for label, result in results.items()} | {
        f"lockstep {label}": [rate] for label, rate in rates.items()
    }


def _lockstep_rates(folder: Path, labels: list[str], rounds: int, duration: float) -> dict[str, float]:
    """Print and return the lockstep rate (steps/s, best of ``rounds``, interleaved) of ``reach`` on each setting."""
    changes = dict(zip(labels, (None, udp_localhost_environment), strict=True))
    rates = dict.fromkeys(labels, 0.0)
    for _ in range(rounds):
        for label, change in changes.items():
            rates[label] = max(rates[label], lockstep_rate(Workspace(folder, change), "reach", duration))
    print(f"lockstep reach (simulator <-> controller), best of {rounds}: {'steps/s':>9} {'of shared memory':>17}")
    for label, rate in rates.items():
        print(f"  {label:<54} {rate:>9.0f} {rate / rates[labels[0]]:>16.0%}")
    return rates


def main(argv: Sequence[str] | None = None) -> int:
    """Run one of the two processes (:func:`run` starts them)."""
    parser = argparse.ArgumentParser(prog="python -m skelarm_ros.bench.contact", description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=("talker", "idle"))
    parser.add_argument("--seconds", type=float, default=TALK, help="talker: how long to publish")
    parser.add_argument("--readers", type=int, default=READERS, help="idle: how many participants to hold")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.role == "talker":
        return talker(args.seconds)
    return idle(args.readers)


if __name__ == "__main__":
    sys.exit(main())
