# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Several arms on one machine, each in its own namespace with its own controller (realtime).

Each arm is the graph ``skelarm-ros launch sim namespace:=armK duration:=...`` describes
(:func:`skelarm_ros.cli.graph.describe`), with ``publish_clock:=false`` (every simulator would
publish the one absolute ``/clock``) and ``command_interface:=joint_commands``, so each
command carries the stamp of the state it was computed from. Every arm's graph runs
through the launcher's runner, all at once, until its simulator ends its duration.

A step is **on time** when the command the simulator applied over it is the one stamped
with the state that starts it, i.e. computed from the previous step's state; the
simulator counts these itself (by the command's stamp) and logs the count in its last
line, which is read here.
"""

from __future__ import annotations

import dataclasses
import io
import re
import tempfile
import threading
from pathlib import Path

from skelarm_ros.cli.graph import NodeSpec, ParameterValue, describe
from skelarm_ros.cli.launcher import Runner, plan
from skelarm_ros.sim.scenario import load_scenario

SETTLE = 1.0  # simulated seconds after the task's duration
ANSWERED = re.compile(r"(\d+) of (\d+) steps \([^)]*\) applied the command answering the state before them")


def arm_graph(namespace: str, scenario: str, duration: float) -> list[NodeSpec]:
    """Return the graph of one arm, as the launch describes it, with stamped commands and no ``/clock``."""
    specs = []
    for spec in describe({"namespace": namespace, "scenario": scenario, "duration": str(duration)}):
        extra: dict[str, ParameterValue] = {"command_interface": "joint_commands"}
        if spec.executable == "simulator":
            extra["publish_clock"] = False
        specs.append(dataclasses.replace(spec, parameters={**spec.parameters, **extra}))
    return specs


def run_arms(count: int, folder: Path, scenario: str = "reach") -> list[tuple[str, int, int, int]]:
    """Run ``count`` arms at once until each ends its run; return ``(namespace, exit code, on time, steps)``."""
    duration = load_scenario(scenario).task.duration + SETTLE
    results: list[tuple[str, int, int, int]] = []
    outputs: dict[str, io.StringIO] = {}
    codes: dict[str, int] = {}

    def one(namespace: str) -> None:
        planned = plan(arm_graph(namespace, scenario, duration), folder / namespace, report=lambda _text: None)
        codes[namespace] = Runner(out=outputs[namespace]).run(planned)

    namespaces = [f"arm{k + 1}" for k in range(count)]
    threads = []
    for namespace in namespaces:
        (folder / namespace).mkdir()
        outputs[namespace] = io.StringIO()
        threads.append(threading.Thread(target=one, args=(namespace,)))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for namespace in namespaces:
        found = ANSWERED.findall(outputs[namespace].getvalue())
        on_time, steps = (int(found[-1][0]), int(found[-1][1])) if found else (0, 0)
        results.append((namespace, codes[namespace], on_time, steps))
    return results


def run(*, quick: bool = False) -> dict[int, list[float]]:
    """Print each arm's on-time share with 2 and 4 arms (1 and 2 with ``quick``); return the shares."""
    shares: dict[int, list[float]] = {}
    for count in (1, 2) if quick else (2, 4):
        with tempfile.TemporaryDirectory(prefix="skelarm-ros-multiarm-") as folder:
            arms = run_arms(count, Path(folder))
        shares[count] = [100.0 * on_time / steps if steps else 0.0 for _, _, on_time, steps in arms]
        cells = "  ".join(
            f"{namespace} {100.0 * on_time / steps:5.1f}% of {steps}" if steps else f"{namespace} n/a (exit {code})"
            for namespace, code, on_time, steps in arms
        )
        print(f"{count} arms, on-time steps: {cells}", flush=True)
    return shares
