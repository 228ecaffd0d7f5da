# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Short lockstep runs beside the two-process floor: what a 2-s launch spends outside its stepping.

A user tuning a controller runs ``skelarm-ros launch sim mode:=lockstep duration:=2.0``
again and again. This section of ``skelarm-ros bench startup`` times, in alternating
rounds of one run:

- **the floor**: two bare rclpy processes started together, which find each other,
  exchange one JointState (a state, and its answer) and exit;
- **the launch**, unrecorded and recorded (``record:=``): its wall time from the
  launcher's start to its exit, less the seconds of stepping its simulator reports
  (:class:`~skelarm_ros.sim.run.SimulatorSummary`).

It prints the medians, their ratios to the floor beside the targets (3x unrecorded, 4x
recorded), and where a launch's seconds go (from the time each output line arrived):
to the nodes' first line, to step 0, stepping, and from the last step to the exit.
Every process gets the graph's Fast DDS profile as the launchers give it
(:func:`skelarm_ros.cli.transport.graph_environment`).

Run as ``python -m skelarm_ros.bench.short_runs state|answer`` this module is also the
two floor processes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from skelarm_ros.cli.transport import graph_environment
from skelarm_ros.sim.run import SimulatorSummary

if TYPE_CHECKING:
    from collections.abc import Sequence

UNRECORDED_TARGET = 3.0  # x the floor, outside stepping
RECORDED_TARGET = 4.0
DURATION = 2.0  # simulated seconds of the timed launches
STATE_TOPIC = "short_run_floor/state"
ANSWER_TOPIC = "short_run_floor/answer"
TIMEOUT = 60.0  # s one process or launch may take
STEP_ZERO = "starting; stepping"  # the simulator's line as step 0 goes out


# -- the two floor processes ---------------------------------------------------------------------------


def floor_process(role: str) -> int:
    """One of the floor's two processes: ``state`` sends a JointState once matched, ``answer`` answers it.

    Each exits as soon as its part is done: ``state`` when the answer came, ``answer``
    once its answer went to a matched reader and was acknowledged (as the simulator's
    last states are at the end of a run).
    """
    import rclpy
    from rclpy.duration import Duration
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    rclpy.init()
    node = rclpy.create_node(f"short_run_floor_{role}")
    qos = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
    outgoing, incoming = (STATE_TOPIC, ANSWER_TOPIC) if role == "state" else (ANSWER_TOPIC, STATE_TOPIC)
    publisher = node.create_publisher(JointState, outgoing, qos)
    received: list[JointState] = []
    subscription = node.create_subscription(JointState, incoming, received.append, qos)
    sent = False
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline and not (received if role == "state" else sent):
        if not sent and publisher.get_subscription_count() and subscription.get_publisher_count():
            if role == "state":
                publisher.publish(JointState(name=["j1", "j2"], position=[0.1, 0.2], velocity=[0.0, 0.0]))
                sent = True
            elif received:
                state = received[0]
                publisher.publish(JointState(header=state.header, name=state.name, effort=state.position))
                sent = True
        rclpy.spin_once(node, timeout_sec=0.01)
    done = bool(received) and sent and (role == "state" or publisher.wait_for_all_acked(Duration(seconds=TIMEOUT)))
    node.destroy_node()
    rclpy.try_shutdown()
    return 0 if done else 1


# -- timing ----------------------------------------------------------------------------------------------


def _environment(base: dict[str, str], log_dir: Path) -> dict[str, str]:
    """Return the environment of every timed process: one domain, local host, logs aside, the graph's profile."""
    env = dict(base)
    env.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 99))
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env["ROS_LOG_DIR"] = str(log_dir)
    return {**env, **graph_environment(env)}


def floor_seconds(env: dict[str, str]) -> float:
    """Seconds from the start of the two floor processes until both exited (each must exit 0)."""
    start = time.perf_counter()
    processes = [
        subprocess.Popen([sys.executable, "-m", __name__, role], env=env, stdout=subprocess.PIPE, text=True)
        for role in ("answer", "state")
    ]
    codes = [process.wait(TIMEOUT) for process in processes]
    seconds = time.perf_counter() - start
    for process in processes:
        assert process.stdout is not None
        process.stdout.close()
    if codes != [0, 0]:
        msg = f"the floor's processes exited {codes}; is another graph on ROS_DOMAIN_ID {env['ROS_DOMAIN_ID']}?"
        raise RuntimeError(msg)
    return seconds


@dataclass(frozen=True)
class LaunchTiming:
    """Where one launch's wall seconds went (from when each output line arrived).

    Attributes
    ----------
    wall : float
        From the launcher's start to its exit.
    stepping : float
        The simulator's seconds of stepping (its summary).
    first_line : float
        From the start to the first line a node said.
    step_zero : float
        From the start to step 0.
    end : float
        From the simulator's last step (its summary line) to the launcher's exit.
    """

    wall: float
    stepping: float
    first_line: float
    step_zero: float
    end: float

    @property
    def outside(self) -> float:
        """Seconds outside stepping."""
        return self.wall - self.stepping


def launch_timing(env: dict[str, str], folder: Path, record: str = "") -> LaunchTiming:
    """Time one ``skelarm-ros launch sim mode:=lockstep duration:=2.0`` (with ``record:=`` when given)."""
    command = [sys.executable, "-m", "skelarm_ros.cli", "launch", "sim", "mode:=lockstep", f"duration:={DURATION}"]
    if record:
        command.append(f"record:={record}")
    start = time.perf_counter()
    arrivals: list[tuple[float, str]] = []
    with subprocess.Popen(command, env=env, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as launch:
        assert launch.stdout is not None
        for raw in launch.stdout:
            arrivals.append((time.perf_counter() - start, raw.decode(errors="replace").rstrip("\n")))
        code = launch.wait(TIMEOUT)
    wall = time.perf_counter() - start
    text = "\n".join(line for _, line in arrivals)
    summary = SimulatorSummary.read(text)
    if code != 0 or summary is None or not summary.time_lines:
        msg = f"the launch exited {code} or its simulator said no summary:\n{text[-2000:]}"
        raise RuntimeError(msg)

    def first(words: str, *, node: bool = False) -> float:
        found = [at for at, line in arrivals if (words in line) and not (node and line.startswith("[launch]"))]
        return found[0] if found else float("nan")

    return LaunchTiming(
        wall=wall,
        stepping=summary.time_lines[-1].stepping,
        first_line=first("", node=True),
        step_zero=first(STEP_ZERO),
        end=wall - first(" steps/s)"),
    )


def short_runs(rounds: int) -> tuple[list[float], dict[str, list[LaunchTiming]]]:
    """Time the floor, the launch and the recorded launch in ``rounds`` alternating rounds."""
    floors: list[float] = []
    launches: dict[str, list[LaunchTiming]] = {"unrecorded": [], "recorded": []}
    with tempfile.TemporaryDirectory(prefix="skelarm-ros-bench-short-") as name:
        folder = Path(name)
        env = _environment(dict(os.environ), folder / "log")
        for index in range(rounds):  # alternating, so all three meet the same load
            floors.append(floor_seconds(env))
            launches["unrecorded"].append(launch_timing(env, folder))
            launches["recorded"].append(launch_timing(env, folder, str(folder / f"run{index}")))
    return floors, launches


def run_section(rounds: int) -> dict[str, float]:
    """Print the short runs' medians beside the floor, their ratios and targets; return the medians (s)."""
    floors, launches = short_runs(rounds)
    floor = statistics.median(floors)
    print(f"short lockstep runs (launch sim mode:=lockstep duration:={DURATION:g}), medians of {rounds} rounds")
    print(f"two-process floor (start, find each other, one JointState each way, exit): {floor:.2f} s")
    print(
        f"{'launch':<12} {'wall':>7} {'stepping':>9} {'outside':>8} {'x floor':>8}  "
        f"{'1st line':>8} {'step 0':>7} {'end':>6}  target"
    )
    results = {"floor": floor}
    for (label, timings), target in zip(launches.items(), (UNRECORDED_TARGET, RECORDED_TARGET), strict=True):

        def median(field: str, got: list[LaunchTiming] = timings) -> float:
            return statistics.median(getattr(timing, field) for timing in got)

        outside = median("outside")
        results[label] = outside
        verdict = "met" if outside <= target * floor else "NOT met"
        print(
            f"{label:<12} {median('wall'):>5.2f} s {median('stepping'):>7.2f} s {outside:>6.2f} s "
            f"{outside / floor:>7.1f}x  {median('first_line'):>6.2f} s {median('step_zero'):>5.2f} s "
            f"{median('end'):>4.2f} s  at most {target:g}x: {verdict}"
        )
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """Run one of the floor's two processes."""
    parser = argparse.ArgumentParser(prog="python -m skelarm_ros.bench.short_runs", description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=("state", "answer"))
    return floor_process(parser.parse_args(sys.argv[1:] if argv is None else argv).role)


if __name__ == "__main__":
    sys.exit(main())
