# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Lockstep across two hosts: the simulator in one network namespace, the controller in another.

The two hosts are two network namespaces joined by a veth pair (:mod:`skelarm_ros.cli.netns`),
each process with its host's own ``/dev/shm``, so the traffic between them is UDP over
the veth as between two machines (without a physical wire's latency). Side by side in
one run, interleaved so that each meets the same load:

- same host: both processes in one namespace, discovery on the local host
  (``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``), so Fast DDS carries the data through
  shared memory, as on one machine;
- same host, UDP only: both in one namespace with ``FASTDDS_BUILTIN_TRANSPORTS=UDPv4``
  (loopback), the network path without the network;
- two hosts, multicast discovery (``SUBNET``, UDP only) and static peers
  (``LOCALHOST`` with ``ROS_STATIC_PEERS``).

The rate is the simulator's own figure: steps over the wall time between its first and
last state (its closing log line). Where namespaces cannot be created (they need root)
the benchmark says why and measures nothing.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from skelarm_ros.bench.loop import end_process, node_args
from skelarm_ros.cli import netns

SCENARIO = "reach"
START_TIMEOUT = 60.0  # s for the processes to start and find each other
_RAN = re.compile(r"ran (\d+) steps \(.*?\) in ([0-9.e+-]+) s wall time")
_runs = itertools.count()
# (label, where the controller runs: same host or the other, how the two discover each other)
CASES = (
    ("same host (shared memory)", "same", "localhost"),
    ("same host, UDP only (loopback)", "same", netns.MULTICAST),
    ("two hosts, multicast discovery (UDP)", "other", netns.MULTICAST),
    ("two hosts, static peers (UDP)", "other", netns.STATIC_PEERS),
)


def _environment(pair: netns.HostPair, host: netns.Host, discovery: str, domain: int, log_dir: Path) -> dict[str, str]:
    """Return the environment of a process on ``host`` in DDS domain ``domain``, with its logs in ``log_dir``."""
    if discovery == "localhost":
        env = {key: value for key, value in os.environ.items() if key != "ROS_STATIC_PEERS"}
        env.update(ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
        env.pop("FASTDDS_BUILTIN_TRANSPORTS", None)
    else:
        env = netns.dds_environment(os.environ, domain_id=domain, discovery=discovery, peer=pair.peer(host).address)
    env["ROS_LOG_DIR"] = str(log_dir)
    return env


def lockstep_rate(pair: netns.HostPair, where: str, discovery: str, duration: float, folder: Path) -> float:
    """Return the simulator's lockstep steps per second with the controller on the same host or the other.

    Parameters
    ----------
    pair : netns.HostPair
        The two hosts; the simulator runs on ``pair.a``.
    where : str
        ``"same"`` (the controller on ``pair.a`` too) or ``"other"`` (on ``pair.b``).
    discovery : str
        ``"localhost"`` (the default transports: shared memory on one host) or one of
        :data:`skelarm_ros.cli.netns.DISCOVERY`.
    duration : float
        Simulated seconds.
    folder : Path
        Where the logs go.

    Returns
    -------
    float
        Steps per second (wall time).
    """
    number = next(_runs)
    domain = 1 + (os.getpid() + number) % 99  # a domain of its own (1-99; tests use 100-199)
    controller_host = pair.a if where == "same" else pair.b
    common: dict[str, object] = {"scenario": SCENARIO, "command_interface": "joint_commands"}
    logs = {name: folder / f"{name}-{number}.log" for name in ("simulator", "controller")}
    processes = []
    try:
        for name, host, parameters in (
            ("controller", controller_host, common),
            ("simulator", pair.a, {**common, "mode": "lockstep", "duration": duration}),
        ):
            env = _environment(pair, host, discovery, domain, folder)
            with logs[name].open("wb") as stream:
                command = pair.command(host, [sys.executable, *node_args(name, parameters)])
                processes.append(subprocess.Popen(command, env=env, stdout=stream, stderr=subprocess.STDOUT))
        code = processes[1].wait(timeout=START_TIMEOUT + duration * 10.0)
    finally:
        for process in processes:
            end_process(process)
    text = logs["simulator"].read_text(errors="replace")
    found = _RAN.search(text)
    if code != 0 or found is None:
        msg = f"the simulator did not complete its lockstep run (exit {code}):\n{text[-2000:]}"
        raise RuntimeError(msg)
    return int(found.group(1)) / float(found.group(2))


def run(*, quick: bool = False) -> dict[str, float]:
    """Measure and print lockstep steps/s across two hosts beside the same host.

    Returns
    -------
    dict[str, float]
        Steps per second by case label (best of the rounds); empty where namespaces
        cannot be created.
    """
    reason = netns.unavailable()
    if reason is not None:
        print(f"not measured: {reason}")
        return {}
    rounds = 1 if quick else 3
    duration = 4.0 if quick else 10.0
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="skelarm-ros-bench-hosts-") as folder, netns.HostPair() as pair:
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start")
        print(f"hosts: {pair.a.address} and {pair.b.address} (network namespaces joined by a veth pair)")
        print(f"lockstep, scenario {SCENARIO}, {duration:g} s simulated, best of {rounds} (interleaved)")
        for _ in range(rounds):
            for label, where, discovery in CASES:
                rate = lockstep_rate(pair, where, discovery, duration, Path(folder))
                results[label] = max(results.get(label, 0.0), rate)
        same = results[CASES[0][0]]
        print(f"{'':40} {'steps/s':>9} {'of same host':>13}")
        for label, _, _ in CASES:
            print(f"{label:<40} {results[label]:>9.0f} {results[label] / same:>12.0%}")
        print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return results
