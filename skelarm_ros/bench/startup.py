# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""What each executable costs to start, beside a bare rclpy node; a running graph's memory; short runs' time.

Three parts, side by side in one run:

- **start-up**: each executable's module imported in a fresh interpreter (a node's with
  ``rclpy.init`` and a node, as it runs), beside a bare rclpy node (numpy and
  sensor_msgs) and bare numpy; wall time from the process's start to ready and the
  resident memory then, medians of alternating rounds;
- **a running graph**: the lockstep launch with force replay and recording, then the
  player playing its bag, every process watched (:mod:`skelarm_ros.memory`): peak
  resident memory (VmHWM) at its end beside its limit, and whether it mapped Qt,
  Pinocchio or SciPy;
- **short lockstep runs**: a 2-s lockstep launch, unrecorded and recorded, beside two
  bare rclpy processes that find each other, exchange one JointState and exit
  (:mod:`skelarm_ros.bench.short_runs`): the time outside stepping, its ratio to that
  floor and where it goes.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from skelarm_ros.bench.short_runs import run_section
from skelarm_ros.memory import LIBRARIES, Watched, limit_mb, run_watched
from skelarm_ros.startup import EXECUTABLES, NODES

BARE_NODE = "rclpy node"
BARE_NUMPY = "numpy"
MODULES: dict[str, str] = {
    **{name: target.split(":")[0] for name, target in EXECUTABLES.items()},
    "launch": "skelarm_ros.cli.launcher",
    "plot": "skelarm_ros.cli.plot",
    "compare": "skelarm_ros.cli.compare",
    "demo": "skelarm_ros.cli.demo",
}
"""Each executable (``ros2 run`` / ``skelarm-ros``) and the module it runs."""

_PROBE = """
import re, sys
{imports}
{node}
hwm = int(re.search(r"VmRSS:\\s+(\\d+)", open("/proc/self/status").read()).group(1))
print("ready", hwm / 1024.0, flush=True)
sys.stdin.read()
"""
_NODE = 'import rclpy\nrclpy.init()\nnode = rclpy.create_node("bench_startup")'
LIGHT = ("launch", "recorder", "force_replay", "player")


def probe(imports: str, node: bool) -> tuple[float, float]:
    """Start a fresh interpreter that imports ``imports`` (and makes a node); return (s to ready, resident MB then)."""
    code = _PROBE.format(imports=imports, node=_NODE if node else "")
    start = time.perf_counter()
    with subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None and process.stdin is not None
        line = process.stdout.readline()
        ready = time.perf_counter() - start
        process.stdin.close()
        process.wait(timeout=30)
    words = line.split()
    if not words or words[0] != "ready":
        msg = f"the probe of {imports!r} did not start: {line!r}"
        raise RuntimeError(msg)
    return ready, float(words[1])


def start_up(rounds: int) -> dict[str, tuple[float, float]]:
    """Median (s to ready, MB) of each executable and the two bare baselines, over alternating rounds."""
    cases = {
        BARE_NODE: ("import numpy\nfrom sensor_msgs.msg import JointState", True),
        BARE_NUMPY: ("import numpy", False),
        **{name: (f"import {module}", name in NODES) for name, module in MODULES.items()},
    }
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, (imports, node) in cases.items():
            samples[name].append(probe(imports, node))
    return {
        name: (statistics.median(s for s, _ in got), statistics.median(mb for _, mb in got))
        for name, got in samples.items()
    }


def running_graph(folder: Path) -> dict[str, Watched]:
    """Run the lockstep launch with force replay and recording, then the player on its bag; what each process used."""
    push = folder / "push.csv"
    push.write_text("t,fx,fy\n0.0,0,0\n0.8,4,-3\n1.0,0,0\n3.0,0,0\n", encoding="utf-8")
    bag = folder / "run"
    cli = [sys.executable, "-m", "skelarm_ros.cli"]
    launch = [*cli, "launch", "sim", "mode:=lockstep", "duration:=2.0", f"force_source:={push}", f"record:={bag}"]
    env = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    env.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 99))
    done, watched = run_watched(launch, env=env, cwd=folder, timeout=300)
    if done.returncode != 0:
        msg = f"the launch exited {done.returncode}:\n{done.stdout[-2000:]}"
        raise RuntimeError(msg)
    done, played = run_watched([*cli, "run", "player", str(bag)], env=env, cwd=folder, timeout=300)
    if done.returncode != 0:
        msg = f"the player exited {done.returncode}:\n{done.stdout[-2000:]}"
        raise RuntimeError(msg)
    return {**watched, **played}


def run(*, quick: bool = False) -> dict[str, object]:
    """Print the start-up table, the running graph's memory and the short runs beside their floor; return them."""
    rounds = 1 if quick else 3
    costs = start_up(rounds)
    node_s, node_mb = costs[BARE_NODE]
    numpy_s, numpy_mb = costs[BARE_NUMPY]
    print(f"start-up, median of {rounds} alternating round(s); a node's module with rclpy.init and a node")
    print(f"{'executable':<14} {'to ready':>9} {'resident':>9} {'beside bare':>22}")
    for name, (seconds, mb) in costs.items():
        base = "" if name in (BARE_NODE, BARE_NUMPY) else BARE_NODE if name in NODES else BARE_NUMPY
        beside = ""
        if base:
            base_s, base_mb = (node_s, node_mb) if base == BARE_NODE else (numpy_s, numpy_mb)
            beside = f"{seconds / base_s:4.1f}x  {mb - base_mb:+6.1f} MB ({base})"
        print(f"{name:<14} {seconds:>7.2f} s {mb:>6.1f} MB   {beside}")
    with tempfile.TemporaryDirectory(prefix="skelarm-ros-bench-") as folder:
        watched = running_graph(Path(folder))
    print()
    print("a running graph: lockstep launch with force replay and recording, then the player on its bag")
    print(f"{'process':<14} {'VmHWM':>9} {'limit':>7}  {'maps':<26} verdict")
    met = True
    for name in ("simulator", "controller", "force_replay", "recorder", "launch", "player"):
        entry = watched.get(name)
        if entry is None:
            print(f"{name:<14} {'not seen':>9}")
            met = False
            continue
        maps = ", ".join(library for library in LIBRARIES if library in entry.libraries) or "-"
        ok = entry.peak_mb <= limit_mb(name) and "Qt" not in entry.libraries
        ok = ok and not (name in LIGHT and entry.libraries & {"Pinocchio", "SciPy"})
        met = met and ok
        print(f"{name:<14} {entry.peak_mb:>6.1f} MB {limit_mb(name):>4.0f} MB  {maps:<26} {'met' if ok else 'NOT met'}")
    print(
        f"target: no Qt anywhere; no Pinocchio or SciPy in {', '.join(LIGHT)}; each within its limit: "
        f"{'met' if met else 'NOT met'}"
    )
    print()
    short = run_section(2 if quick else 5)
    return {"start_up": costs, "graph": watched, "short_runs": short}
