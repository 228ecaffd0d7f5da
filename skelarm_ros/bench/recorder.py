# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The recorder's highest sustained rate without loss, beside the rosbags writer's raw rate.

Side by side, in one run, for sqlite3 and MCAP storage:

- **rosbags raw**: ``Writer.write`` of serialized JointState messages (6 joints) in
  one thread, nothing else (the ceiling of any recorder written with rosbags);
- **recording core**: the same messages through :class:`skelarm_ros.bags.recording.Recording`
  (the write queue and its writer thread), from one thread;
- **recorder node**: a recorder process (``skelarm_ros.nodes.recorder``) records a
  publisher process that publishes JointState bytes, reliable and keep-all (as a
  lockstep simulator does), at increasing rates for a few seconds each. A rate is
  **sustained** when the publisher kept it (98 % of the asked rate, no failed
  publish) and the closed bag holds every message published, in one of three tries.
  The node runs on the EventsExecutor; the same node on the single-threaded executor
  is measured beside it, at each rate right after it.
  The recorder process's CPU time while the publisher runs, per message published, is
  printed beside each rate.

The highest sustained rate of each is printed beside rosbags' raw rate.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from rosbags.rosbag2 import Writer
from rosbags.typesys import Stores, get_typestore
from ruamel.yaml import YAML

from skelarm_ros.bags.recording import STORAGES, Recording, plan_topic
from skelarm_ros.bench.loop import _environment, _start
from skelarm_ros.interface import JOINT_STATE_TYPE, JOINT_STATES

JOINTS = 6
SECONDS = 3.0  # s each publisher rate is held
RATES = (2_000, 5_000, 10_000, 15_000, 20_000, 30_000, 40_000, 60_000)
KEPT = 0.98  # share of the asked rate a publisher must reach for the rate to count as kept
TRIES = 3  # runs of a rate before it counts as not sustained
START_TIMEOUT = 60.0  # s for the processes to start and match
STOP_TIMEOUT = 60.0  # s for a stopped recorder to close its bag


def joint_state_bytes(count: int) -> list[bytes]:
    """``count`` serialized JointState messages of :data:`JOINTS` joints, stamped 1 ms apart."""
    store = get_typestore(Stores.ROS2_JAZZY)
    types = store.types
    names = [f"j{i + 1}" for i in range(JOINTS)]
    out = []
    for k in range(count):
        values = np.full(JOINTS, 0.001 * k)
        stamp = types["builtin_interfaces/msg/Time"](sec=k // 1000, nanosec=(k % 1000) * 1_000_000)
        message = types[JOINT_STATE_TYPE](
            header=types["std_msgs/msg/Header"](stamp=stamp, frame_id=""),
            name=names,
            position=values,
            velocity=values,
            effort=values,
        )
        out.append(bytes(store.serialize_cdr(message, JOINT_STATE_TYPE)))
    return out


# -- in-process ---------------------------------------------------------------------------------------


def raw_writer_rate(folder: Path, storage: str, messages: list[bytes]) -> float:
    """Messages per second rosbags' ``Writer`` writes (and closes) from one thread."""
    store = get_typestore(Stores.ROS2_JAZZY)
    start = time.perf_counter()
    with Writer(folder / f"raw_{storage}", version=9, storage_plugin=STORAGES[storage]) as writer:
        connection = writer.add_connection("/joint_states", JOINT_STATE_TYPE, typestore=store)
        for k, data in enumerate(messages):
            writer.write(connection, k, data)
    return len(messages) / (time.perf_counter() - start)


def core_rate(folder: Path, storage: str, messages: list[bytes]) -> float:
    """Messages per second through the recording core (queue and writer thread), written and closed."""
    recording = Recording(folder / f"core_{storage}", storage, flush_interval=0.2, distro="jazzy")
    definition = recording.definition_hash(JOINT_STATE_TYPE)
    start = time.perf_counter()
    recording.start()
    topic = recording.add_topic(plan_topic("/joint_states", JOINT_STATE_TYPE, [], [], definition))
    for k, data in enumerate(messages):
        recording.write(topic, k, data)
    summary = recording.close()
    elapsed = time.perf_counter() - start
    assert summary.messages == len(messages), summary.line()
    return len(messages) / elapsed


# -- processes ------------------------------------------------------------------------------------------


def _bag_count(folder: Path, topic: str) -> int:
    info = YAML(typ="safe").load((folder / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    return sum(e["message_count"] for e in info["topics_with_message_count"] if e["topic_metadata"]["name"] == topic)


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait_for_line(log: Path, text: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while text not in log.read_text(errors="replace"):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def recorded_rate(
    folder: Path, storage: str, rate: int, seconds: float, *, events: bool, attempt: int = 1
) -> tuple[bool, str]:
    """Record a publisher at ``rate`` messages/s; return whether it was sustained and a line saying what happened."""
    env = _environment(folder)
    bag = folder / f"bag_{storage}_{rate}_{'events' if events else 'single'}_{attempt}"
    recorder_args = ["-m", "skelarm_ros.bench.recorder", "recorder" if events else "recorder-single"]
    recorder_args += ["--ros-args", "-p", f"output:={bag}", "-p", f"storage:={storage}"]
    recorder_log = folder / f"{bag.name}_recorder.log"
    recorder = _start(recorder_args, env, recorder_log)
    _wait_for_line(recorder_log, "recording into", START_TIMEOUT)
    cpu_start = _cpu_seconds(recorder.pid)
    report = folder / f"{bag.name}_publisher.txt"
    publisher = _start(
        ["-m", "skelarm_ros.bench.recorder", "publish", str(rate), str(seconds), str(report)],
        env,
        folder / f"{bag.name}_publisher.log",
    )
    cpu = 0.0
    try:
        publisher.wait(START_TIMEOUT + 10.0 * seconds)
        cpu = _cpu_seconds(recorder.pid) - cpu_start
        recorder.send_signal(signal.SIGINT)
        recorder.wait(STOP_TIMEOUT)
    finally:
        for process in (publisher, recorder):
            if process.poll() is None:
                process.kill()
                process.wait()
    if publisher.returncode != 0 or recorder.returncode != 0 or not report.exists():
        log = recorder_log.read_text(errors="replace")[-2000:]
        return False, f"failed (publisher exit {publisher.returncode}, recorder exit {recorder.returncode}): {log}"
    published, elapsed, errors = (float(word) for word in report.read_text().split())
    stored = _bag_count(bag, f"/{JOINT_STATES}")
    achieved = published / elapsed
    sustained = errors == 0 and stored == published and achieved >= KEPT * rate
    line = (
        f"published {int(published):7d} at {achieved:8.0f}/s ({int(errors)} failed), bag holds {stored:7d}, "
        f"recorder CPU {1e6 * cpu / max(published, 1.0):5.1f} us/msg"
    )
    return sustained, line


def highest_sustained(folder: Path, storage: str, rates: tuple[int, ...], seconds: float) -> dict[str, int]:
    """Go up the rates, both executors side by side at each, until a rate fails its tries; return the highest kept.

    A rate counts as sustained when one of :data:`TRIES` runs sustains it: on a machine
    shared with other work a burst of load can hold the publisher back for a moment.
    """
    best = {"events": 0, "single": 0}
    going = set(best)
    for rate in rates:
        for kind in [kind for kind in best if kind in going]:
            label = "EventsExecutor" if kind == "events" else "single-threaded"
            for attempt in range(1, TRIES + 1):
                sustained, line = recorded_rate(
                    folder, storage, rate, seconds, events=kind == "events", attempt=attempt
                )
                verdict = "sustained" if sustained else "NOT sustained"
                print(f"  {storage:7} {label:15} {rate:6d}/s try {attempt}: {line}  {verdict}", flush=True)
                if sustained:
                    best[kind] = rate
                    break
            else:
                going.discard(kind)
        if not going:
            break
    return best


def run(*, quick: bool = False) -> dict[str, float]:
    """Measure and print the raw writer rates, the core's, and the recorder's highest sustained rates.

    Returns
    -------
    dict[str, float]
        ``raw <storage>``, ``core <storage>`` (messages/s) and ``recorder <storage> <executor>``
        (the highest sustained rate tried, messages/s).
    """
    results: dict[str, float] = {}
    count = 20_000 if quick else 100_000
    messages = joint_state_bytes(count)
    rates = RATES[:4] if quick else RATES
    seconds = 1.5 if quick else SECONDS
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start")
    with tempfile.TemporaryDirectory(prefix="skelarm-ros-bench-recorder-") as name:
        folder = Path(name)
        for storage in STORAGES:
            results[f"raw {storage}"] = raw_writer_rate(folder, storage, messages)
            results[f"core {storage}"] = core_rate(folder, storage, messages)
            print(
                f"{storage:7} {count} msgs: rosbags raw {results[f'raw {storage}']:8.0f} msgs/s, "
                f"recording core {results[f'core {storage}']:8.0f} msgs/s"
            )
        print(f"recorder process, a reliable keep-all publisher held {seconds:g} s per rate:")
        for storage in STORAGES:
            for kind, rate in highest_sustained(folder, storage, rates, seconds).items():
                results[f"recorder {storage} {kind}"] = rate
    for storage in STORAGES:
        raw = results[f"raw {storage}"]
        for kind in ("events", "single"):
            best = results[f"recorder {storage} {kind}"]
            print(
                f"{storage:7} recorder ({kind}): highest sustained {best:6.0f} msgs/s = {100.0 * best / raw:5.1f} % "
                f"of rosbags' raw {raw:.0f} msgs/s"
            )
    return results


# -- the processes' entry points -------------------------------------------------------------------------------


def publish(rate: int, seconds: float, report: Path) -> int:
    """Publish JointState bytes reliable and keep-all at ``rate``/s for ``seconds`` once a reader is matched.

    Writes ``published elapsed failed`` to ``report`` after every message is acknowledged.
    """
    import rclpy
    from rclpy.duration import Duration
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    rclpy.init()
    node = rclpy.create_node("bench_publisher")
    publisher = node.create_publisher(
        JointState, JOINT_STATES, QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
    )
    messages = joint_state_bytes(1000)
    deadline = time.monotonic() + START_TIMEOUT
    while publisher.get_subscription_count() < 1:
        if time.monotonic() > deadline:
            return 1
        time.sleep(0.01)
    sent = failed = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        due = int(elapsed * rate)
        while sent + failed < due:
            try:
                publisher.publish(messages[(sent + failed) % len(messages)])
                sent += 1
            except Exception:  # a keep-all writer whose readers are too slow fails to publish
                failed += 1
        time.sleep(0.0005)
    elapsed = time.perf_counter() - start
    publisher.wait_for_all_acked(Duration(seconds=STOP_TIMEOUT))
    report.write_text(f"{sent} {elapsed} {failed}\n")
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


def _single_threaded_recorder(args: list[str]) -> int:
    from skelarm_ros.nodes.recorder import DOC, NODE_NAME, Recorder
    from skelarm_ros.nodes.running import run_node

    class SingleThreadedRecorder(Recorder):
        events_executor = False

    return run_node(SingleThreadedRecorder, name=NODE_NAME, description="recorder", doc=DOC, args=args)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the benchmark's processes: ``publish RATE SECONDS REPORT``, ``recorder``, ``recorder-single``."""
    argv = list(sys.argv if argv is None else argv)
    command = argv[1] if len(argv) > 1 else ""
    if command == "publish":
        parser = argparse.ArgumentParser(prog="bench recorder publish")
        parser.add_argument("rate", type=int)
        parser.add_argument("seconds", type=float)
        parser.add_argument("report", type=Path)
        options = parser.parse_args(argv[2:])
        return publish(options.rate, options.seconds, options.report)
    if command == "recorder":
        from skelarm_ros.nodes.recorder import main as recorder_main

        return recorder_main([argv[0], *argv[2:]])
    if command == "recorder-single":
        return _single_threaded_recorder([argv[0], *argv[2:]])
    print(main.__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
