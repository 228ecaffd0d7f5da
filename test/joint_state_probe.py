"""A probe process: records ``joint_states`` (reliable, keep-all) into an ``.npz``, for tests that run it elsewhere.

The two-hosts tests start it inside a network namespace, where the test process's own
probe cannot listen. It stops at ``--frames`` states or after ``--timeout`` seconds, writes
``stamp`` (s), ``q``, ``dq``, ``effort`` (one row per state) and ``publishers`` (the
joint_states publishers it matched), prints one ``PROBE`` line (with the nodes it saw), and exits 0 when it got
every frame asked for, 2 when the time ran out first.

``python test/joint_state_probe.py --frames 1001 --output states.npz --timeout 60``
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.utilities import remove_ros_args
from sensor_msgs.msg import JointState


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, required=True, help="states to record")
    parser.add_argument("--output", required=True, help="the .npz to write")
    parser.add_argument("--timeout", type=float, required=True, help="seconds to wait at most")
    args = parser.parse_args(remove_ros_args(sys.argv)[1:])
    rclpy.init()
    node = rclpy.create_node("joint_state_probe")
    states: list[JointState] = []
    qos = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
    subscription = node.create_subscription(JointState, "joint_states", states.append, qos)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    deadline = time.monotonic() + args.timeout
    publishers = 0
    try:
        while len(states) < args.frames and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
            publishers = max(publishers, subscription.get_publisher_count())
    except (KeyboardInterrupt, ExternalShutdownException):
        return 130
    finally:
        kept = states[: args.frames]
        np.savez(
            args.output,
            stamp=np.array([msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9 for msg in kept]),
            q=np.array([list(msg.position) for msg in kept]),
            dq=np.array([list(msg.velocity) for msg in kept]),
            effort=np.array([list(msg.effort) for msg in kept]),
            publishers=publishers,
        )
        nodes = sorted(f"{namespace.rstrip('/')}/{name}" for name, namespace in node.get_node_names_and_namespaces())
        print(f"PROBE {len(kept)} states, {publishers} publishers; nodes seen: {nodes}", flush=True)
        node.destroy_subscription(subscription)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0 if len(kept) >= args.frames else 2


if __name__ == "__main__":
    sys.exit(main())
