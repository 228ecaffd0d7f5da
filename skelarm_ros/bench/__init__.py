# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Benchmarks: each measures what it compares side by side in one run and prints the ratio.

``skelarm-ros bench [name ...]`` (``make bench``) runs them; none of this is a test.
Benchmarks live in this package, one module each, registered in :data:`BENCHMARKS`.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# name -> (module:function, one-line description)
BENCHMARKS: dict[str, tuple[str, str]] = {
    "startup": (
        "skelarm_ros.bench.startup:run",
        "each executable's start-up time and memory beside a bare rclpy node; peak memory of a running graph",
    ),
    "engine": ("skelarm_ros.bench.engine:run", "engine step vs skelarm.integrate_with_limits, 2/4/8 links"),
    "bags": ("skelarm_ros.bench.bags:run", "bag_to_log throughput vs rosbags raw deserialization, peak memory"),
    "controllers": ("skelarm_ros.bench.controllers:run", "per-step cost of each controller, skelarm vs fast model"),
    "player": ("skelarm_ros.bench.player:run", "player pacing at 1 kHz (lateness p50/p99/max), top rate vs rosbags"),
    "multiarm": ("skelarm_ros.bench.multiarm:run", "on-time steps of 2 and 4 arms side by side, realtime"),
    "recorder": (
        "skelarm_ros.bench.recorder:run",
        "recorder's highest sustained rate without loss (sqlite3, MCAP) vs rosbags' raw writer rate",
    ),
    "identify": ("skelarm_ros.bench.identify:run", "identify: 10,000 samples of a 4-joint arm, beside FIGAROH's solve"),
    "loop": (
        "skelarm_ros.bench.loop:run",
        "simulator + controller processes: lockstep steps/s vs a ping-pong floor, realtime on-time share",
    ),
    "twin": (
        "skelarm_ros.bench.twin:run",
        "lockstep hardware:=twin (the simulator playing the arm's driver) vs hardware:=sim, graph and in-process",
    ),
    "tune": (
        "skelarm_ros.bench.tune:run",
        "tuning trials/s (a 2 s reach at 2 ms behind a 250 Hz driver) on the project's engine vs MuJoCo from Python",
    ),
    "hosts": (
        "skelarm_ros.bench.hosts:run",
        "lockstep with simulator and controller on two hosts (network namespaces, veth, UDP) vs one host",
    ),
    "contact": (
        "skelarm_ros.bench.contact:run",
        "a 500 Hz publisher starting into a running graph: its publish() stalls, shared memory vs UDP only",
    ),
}


def main() -> int:
    """Run the named benchmarks (all when none is named)."""
    parser = argparse.ArgumentParser(prog="skelarm-ros bench", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="benchmarks to run: " + ", ".join(BENCHMARKS))
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    args = parser.parse_args(sys.argv[1:])
    unknown = [name for name in args.names if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; choose from {list(BENCHMARKS)}")
    for name in args.names or list(BENCHMARKS):
        target, text = BENCHMARKS[name]
        module_name, function_name = target.split(":")
        print(f"== {name}: {text}", flush=True)
        getattr(importlib.import_module(module_name), function_name)(quick=args.quick)
        print(flush=True)
    return 0
