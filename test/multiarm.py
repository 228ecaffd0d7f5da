"""Several arms on one machine, each in its own namespace with its own controller (realtime), watched by a probe.

Each arm is the graph ``skelarm-ros launch sim namespace:=armK`` describes
(:func:`skelarm_ros.cli.graph.describe`), with ``publish_clock:=false`` (every simulator would
publish the one absolute ``/clock``) and ``command_interface:=joint_commands``, so each
command carries the stamp of the state it was computed from. A probe node keeps each
arm's newest state and reads the graph: which nodes publish and read each arm's topics.
test_faults_system.py runs it; ``skelarm-ros bench multiarm`` measures the same graphs'
on-time shares without a probe.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from waiting import spin_until

from skelarm_ros.cli.graph import describe
from skelarm_ros.cli.launcher import plan
from skelarm_ros.sim.engine import ArmEngine
from skelarm_ros.sim.scenario import load_arm, load_scenario

NS = 1_000_000_000
START_TIMEOUT = 60.0  # s for every arm's controller to be in the graph on a loaded machine
SETTLE = 1.0  # simulated seconds after the task's duration


@dataclass
class ArmRun:
    """What one arm did and what its topics showed.

    Attributes
    ----------
    namespace : str
        The arm's namespace (``arm1``).
    state_publishers : list[str]
        Nodes publishing the arm's ``joint_states`` (only its own simulator when isolated).
    state_subscribers : list[str]
        Nodes subscribing the arm's ``joint_states`` other than the probe.
    command_publishers : list[str]
        Nodes publishing the arm's ``joint_commands``.
    tip_error : float
        Distance (m) of the final tip from the task's target.
    on_time : int
        Steps whose applied command was computed from the previous step's state.
    steps : int
        Steps counted by the simulator (from its first stamped command on).
    exit_code : int | None
        The simulator's exit code (stopped by SIGINT once the reach had its time).
    """

    namespace: str
    state_publishers: list[str] = field(default_factory=list)
    state_subscribers: list[str] = field(default_factory=list)
    command_publishers: list[str] = field(default_factory=list)
    tip_error: float = math.inf
    on_time: int = 0
    steps: int = 0
    exit_code: int | None = None

    @property
    def share(self) -> float:
        """On-time steps in percent of the steps heard."""
        return 100.0 * self.on_time / self.steps if self.steps else 0.0


SUMMARY = re.compile(r"(\d+) of (\d+) steps \([^)]*\) applied the command answering the state before them")


def on_time_from_log(text: str) -> tuple[int, int]:
    """Return the simulator's own count of on-time steps from its last summary line, or ``(0, 0)``."""
    found = SUMMARY.findall(text)
    if not found:
        return 0, 0
    on_time, steps = found[-1]
    return int(on_time), int(steps)


def _stamp(message: Any) -> int:
    return int(message.header.stamp.sec) * NS + int(message.header.stamp.nanosec)


def _nodes(infos: list[Any]) -> list[str]:
    return sorted(f"{info.node_namespace.rstrip('/')}/{info.node_name}" for info in infos)


def run_arms(count: int, folder: Path, *, scenario: str = "reach") -> list[ArmRun]:
    """Run ``count`` arms side by side (realtime) until each simulator ends; report each.

    Parameters
    ----------
    count : int
        Number of arms, in namespaces ``arm1 ... armN``.
    folder : Path
        Where each process's output (``armK_<node>.log``) and parameter files go.
    scenario : str, optional
        The scenario every arm runs (its task's duration plus a second is the run's length).

    Returns
    -------
    list[ArmRun]
        One per arm.
    """
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    task = load_scenario(scenario).task
    arm = load_arm(scenario)
    duration = task.duration + SETTLE
    namespaces = [f"arm{k + 1}" for k in range(count)]
    specs = {}
    for namespace in namespaces:
        for spec in describe({"namespace": namespace, "scenario": scenario}):
            extra: dict[str, Any] = {"command_interface": "joint_commands"}
            if spec.executable == "simulator":
                extra["publish_clock"] = False
            specs[(namespace, spec.executable)] = dataclasses.replace(spec, parameters={**spec.parameters, **extra})
    planned = {
        key: item
        for key, item in zip(specs, plan(list(specs.values()), folder, report=lambda _text: None), strict=True)
    }
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("multiarm_probe", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    newest = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE)
    heard: dict[str, list[Any]] = {}
    subscriptions = []
    for namespace in namespaces:
        states: list[Any] = []
        heard[namespace] = states
        subscriptions.append(node.create_subscription(JointState, f"/{namespace}/joint_states", states.append, newest))
    processes: dict[tuple[str, str], subprocess.Popen[bytes]] = {}
    runs = {namespace: ArmRun(namespace) for namespace in namespaces}

    def start(key: tuple[str, str]) -> None:
        with (folder / f"{key[0]}_{key[1]}.log").open("wb") as log:
            processes[key] = subprocess.Popen(
                planned[key].command, env=dict(os.environ), stdout=log, stderr=subprocess.STDOUT
            )

    try:
        # Controllers first, so each answers its arm's first state.
        for namespace in namespaces:
            start((namespace, "controller"))
        spin_until(
            executor,
            lambda: all(node.count_publishers(f"/{ns}/joint_commands") >= 1 for ns in namespaces),
            START_TIMEOUT,
            "every controller",
        )
        for namespace in namespaces:
            start((namespace, "simulator"))
        # Each reach's time starts at the first state its controller answers (effort not zero).
        answered: dict[str, int] = {}

        def every_arm_answered() -> bool:
            for ns in namespaces:
                if ns not in answered and heard[ns] and any(value != 0.0 for value in heard[ns][-1].effort):
                    answered[ns] = _stamp(heard[ns][-1])
            return len(answered) == count

        spin_until(executor, every_arm_answered, START_TIMEOUT, "every arm's first commanded state")

        def graph_known() -> bool:
            return all(
                "UNKNOWN" not in " ".join(_nodes(node.get_publishers_info_by_topic(f"/{ns}/joint_states")))
                for ns in namespaces
            )

        spin_until(executor, graph_known, START_TIMEOUT, "the node names on every arm's topics")
        for namespace in namespaces:  # the graph while every arm runs
            topic = f"/{namespace}/joint_states"
            run = runs[namespace]
            run.state_publishers = _nodes(node.get_publishers_info_by_topic(topic))
            run.state_subscribers = [
                name for name in _nodes(node.get_subscriptions_info_by_topic(topic)) if name != "/multiarm_probe"
            ]
            run.command_publishers = _nodes(node.get_publishers_info_by_topic(f"/{namespace}/joint_commands"))
        length = round(duration * NS)
        spin_until(
            executor,
            lambda: all(_stamp(heard[ns][-1]) >= answered[ns] + length for ns in namespaces),
            START_TIMEOUT + 20.0 * duration * count,
            "every reach to have had its time",
        )
        executor.spin_once(timeout_sec=0.2)
    finally:
        for subscription in subscriptions:
            node.destroy_subscription(subscription)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        for key, process in processes.items():
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
            try:
                code = process.wait(timeout=10.0)
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait(timeout=10.0)
            if key[1] == "simulator":
                runs[key[0]].exit_code = code
    engine = ArmEngine(arm.skeleton, arm.dt)
    target = np.asarray(task.target, dtype=np.float64)
    for namespace, states in heard.items():
        run = runs[namespace]
        if states:
            last = max(states, key=_stamp)
            run.tip_error = float(np.linalg.norm(engine.endpoint(np.array(last.position)) - target))
        log = folder / f"{namespace}_simulator.log"
        run.on_time, run.steps = on_time_from_log(log.read_text(errors="replace") if log.exists() else "")
    return [runs[namespace] for namespace in namespaces]
