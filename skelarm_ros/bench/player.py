# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The player's pacing and its top rate beside rosbags' read rate.

A bag of 10,000 JointState messages at 1 kHz (sqlite3) is played by the player node
as ``main()`` runs it (its play thread, the EventsExecutor serving its services), to a
reader in another process:

- pacing at rate 1: each message's lateness (publish time minus its due time on the
  schedule), p50 / p99 / max, beside a bare Python loop that sleeps until each of the
  same due times (no ROS), measured in the same run: the floor the machine gives;
- the highest rate it sustains: the same bag at ``--rate 1000`` (10 ms of schedule), so
  every message is due at once and the player publishes as fast as it reads, in
  messages per second, beside rosbags reading the same bag alone (no publishing).

The process runs on its own DDS domain (1-99; tests use 100-199), on the local host.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import rclpy

from skelarm_ros.bags.reader import open_bag
from skelarm_ros.bags.replay import PlayOptions, ReaderWait
from skelarm_ros.bench.bags import write_bench_bag
from skelarm_ros.nodes.player import PlayerNode, PlayerSettings
from skelarm_ros.nodes.spinning import events_executor, spin_until

READER_IDLE = 2.0  # s without a message after which the reader process reports and exits
_READER = f"""
import sys, time, rclpy
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
rclpy.init()
node = rclpy.create_node("reader")
got = [0, time.monotonic()]
def count(_):
    got[0] += 1
    got[1] = time.monotonic()
qos = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
node.create_subscription(JointState, "/joint_states", count, qos, raw=True)
while got[0] == 0 or time.monotonic() - got[1] < {READER_IDLE}:
    rclpy.spin_once(node, timeout_sec=0.05)
print(got[0])
"""


def _isolate(folder: Path) -> None:
    os.environ["ROS_DOMAIN_ID"] = str(1 + os.getpid() % 99)
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    os.environ.setdefault("ROS_LOG_DIR", str(folder))


def play(bag: Path, rate: float) -> tuple[np.ndarray, float, int]:
    """Play ``bag`` at ``rate`` to a reader process; return the lateness (ns), the playing time (s), messages read."""
    reader = subprocess.Popen([sys.executable, "-c", _READER], stdout=subprocess.PIPE, text=True)
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        settings = PlayerSettings(
            str(bag), PlayOptions(rate=rate), ReaderWait(default=1), wait_for_all_acked=10_000, progress_hz=0.0
        )
        node = PlayerNode(settings, out=io.StringIO(), autostart=False, context=context)
        executor = events_executor(context)  # as main() spins the player (node_executor, in its own context)
        executor.add_node(node)
        node.start()
        spin_until(node, executor, node.finished)
        took = (node.pacer.finished_at - node.pacer.started_at) / 1e9
        lateness = np.asarray(node.lateness, dtype=np.int64)
        node.close()
        node.destroy_node()
        executor.shutdown()
    finally:
        rclpy.try_shutdown(context=context)
        try:
            out, _ = reader.communicate(timeout=60.0)
        except subprocess.TimeoutExpired:
            reader.kill()
            out, _ = reader.communicate()
    counts = [line for line in out.splitlines() if line.strip().isdigit()]
    if not counts:
        print(f"the reader process reported no count (exit code {reader.returncode}): {out[-500:]!r}", flush=True)
    return lateness, took, int(counts[-1]) if counts else -1


def sleep_floor(count: int) -> np.ndarray:
    """Lateness (ns) of a bare Python loop sleeping until each of ``count`` due times 1 ms apart."""
    late = np.empty(count, dtype=np.int64)
    origin = time.monotonic_ns() + 1_000_000
    for k in range(count):
        due = origin + k * 1_000_000
        while (now := time.monotonic_ns()) < due:
            time.sleep((due - now) / 1e9)
        late[k] = time.monotonic_ns() - due
    return late


def _percentiles(lateness: np.ndarray) -> str:
    p50, p99 = np.percentile(lateness, [50, 99]) / 1e6
    return f"p50 {p50:.3f} ms, p99 {p99:.3f} ms, max {lateness.max() / 1e6:.3f} ms"


def read_rate(bag: Path) -> float:
    """Messages per second rosbags reads from the bag (raw bytes, the player's own reading)."""
    with open_bag(bag) as opened:
        start = time.perf_counter()
        count = sum(1 for _ in opened.raw_messages())
        return count / (time.perf_counter() - start)


def run(quick: bool = False) -> None:
    """Print the pacing percentiles and the top rate beside rosbags' read rate."""
    count = 2_000 if quick else 10_000
    with tempfile.TemporaryDirectory(prefix="skelarm-bench-player-") as folder:
        _isolate(Path(folder))
        bag = write_bench_bag(Path(folder) / "states", count, "sqlite3")
        lateness, took, got = play(bag, 1.0)
        floor = sleep_floor(count)
        print(
            f"pacing   {count} JointStates at 1 kHz, rate 1: lateness {_percentiles(lateness)}; "
            f"played in {took:.2f} s (schedule {(count - 1) / 1000:.3f} s), reader got {got}",
            flush=True,
        )
        print(f"floor    a bare sleep loop to the same due times, same run: lateness {_percentiles(floor)}", flush=True)
        rates = []
        for _ in range(1 if quick else 3):
            raw = read_rate(bag)
            _, took, got = play(bag, 1000.0)
            rates.append((count / took, raw, got))
        for ours, raw, got in rates:
            print(
                f"top rate --rate 1000: {ours:9.0f} msgs/s published, rosbags reads {raw:9.0f} msgs/s alone: "
                f"{ours / raw:5.1%} of it (an rclpy reader in another process got {got} of {count})",
                flush=True,
            )
