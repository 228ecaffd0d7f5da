# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""``skelarm-ros demo`` (``make demo``): run the simulator headless and show what it publishes.

The simulator starts as its own process (realtime, the default scenario) for a few
simulated seconds, while a probe node in this process counts what arrives on each
topic and prints the counts, the rates and the final joint state and tip.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

DEFAULT_SECONDS = 3.0
_TOPICS = ("joint_states", "tip", "/clock", "robot_description")


@dataclass
class TopicCount:
    """Messages seen on one topic: how many, when the first and last came, and the last one."""

    count: int = 0
    first: float = 0.0
    last: float = 0.0
    message: Any = field(default=None, repr=False)

    def add(self, message: Any) -> None:
        """Count a message."""
        now = time.monotonic()
        if self.count == 0:
            self.first = now
        self.count += 1
        self.last = now
        self.message = message

    def rate(self) -> float:
        """Messages per wall-clock second between the first and the last (0 with fewer than two)."""
        return (self.count - 1) / (self.last - self.first) if self.count > 1 and self.last > self.first else 0.0


def simulator_command(seconds: float, *parameters: str) -> list[str]:
    """Return the command line that starts the simulator for ``seconds`` of simulated time."""
    args = [sys.executable, "-m", "skelarm_ros.nodes.simulator", "--ros-args", "-p", f"duration:={seconds}"]
    for parameter in parameters:
        args += ["-p", parameter]
    return args


def run_demo(seconds: float = DEFAULT_SECONDS, timeout: float = 60.0) -> int:
    """Run the simulator for ``seconds`` of simulated time and print what the probe received.

    Parameters
    ----------
    seconds : float
        Simulated time to run (realtime, so about as many wall-clock seconds).
    timeout : float
        Wall-clock limit for the whole demo.

    Returns
    -------
    int
        0 when the simulator ran and exited cleanly, else 1.
    """
    import rclpy
    from geometry_msgs.msg import PointStamped
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String

    env = dict(os.environ)
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("demo_probe", context=context)
    counts = {topic: TopicCount() for topic in _TOPICS}
    reliable = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    for topic, kind, qos in (
        ("joint_states", JointState, reliable),
        ("tip", PointStamped, reliable),
        ("/clock", Clock, reliable),
        ("robot_description", String, latched),
    ):
        node.create_subscription(kind, topic, counts[topic].add, qos)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    print(f"starting the simulator (realtime, default scenario) for {seconds} s of simulated time", flush=True)
    simulator = subprocess.Popen(simulator_command(seconds), env=env)
    deadline = time.monotonic() + timeout
    try:
        while simulator.poll() is None and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        drain_until = time.monotonic() + 1.0  # take what is still in flight
        while time.monotonic() < drain_until:
            executor.spin_once(timeout_sec=0.05)
    finally:
        if simulator.poll() is None:
            simulator.terminate()
            simulator.wait(timeout=10)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    print(report(counts))
    if simulator.returncode != 0:
        print(f"the simulator exited with code {simulator.returncode}", file=sys.stderr)
        return 1
    return 0


def report(counts: dict[str, TopicCount]) -> str:
    """Describe what the probe received, one line per topic plus the final state."""
    lines = ["topic               messages   rate (1/s)"]
    lines += [f"{topic:<20}{entry.count:>8}   {entry.rate():>10.1f}" for topic, entry in counts.items()]
    state = counts["joint_states"].message
    if state is not None:
        stamp = state.header.stamp.sec + state.header.stamp.nanosec * 1e-9
        lines.append(f"final joint state at t={stamp:.3f} s:")
        for name, q, dq, effort in zip(state.name, state.position, state.velocity, state.effort, strict=False):
            lines.append(f"  {name}: q={q:+.4f} rad  dq={dq:+.4f} rad/s  effort={effort:+.4f} N*m")
    tip = counts["tip"].message
    if tip is not None:
        lines.append(f"final tip: ({tip.point.x:+.4f}, {tip.point.y:+.4f}) m in '{tip.header.frame_id}'")
    description = counts["robot_description"].message
    if description is not None:
        lines.append(f"robot_description: URDF of {len(description.data)} characters")
    return "\n".join(lines)


def main() -> int:
    """Parse ``skelarm-ros demo`` arguments and run the demo."""
    parser = argparse.ArgumentParser(prog="skelarm-ros demo", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=DEFAULT_SECONDS, help="simulated seconds to run")
    args = parser.parse_args(sys.argv[1:])
    if not args.seconds > 0.0:
        parser.error(f"--seconds must be positive, got {args.seconds}")
    return run_demo(args.seconds)
