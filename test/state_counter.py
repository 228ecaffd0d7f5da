"""Count commanded joint states in a process of its own (not shipped), for tests that set its environment.

An in-test probe shares the test process's DDS settings, which Fast DDS reads once per
process; a test that runs the nodes with other settings (the UDP-only profile) watches
them with this process instead, started in the same environment.

``python test/state_counter.py TOPIC COUNT TIMEOUT``: subscribe to ``TOPIC``
(sensor_msgs/JointState, reliable), wait until ``COUNT`` states with a non-zero effort
arrived or ``TIMEOUT`` seconds passed; print ``STATES <all> <commanded>``; exit 0 when
``COUNT`` were reached, else 1.
"""

from __future__ import annotations

import contextlib
import sys

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from waiting import spin_wait


def main(topic: str, count: int, timeout: float) -> int:
    rclpy.init()
    node = rclpy.create_node("state_counter")
    seen = [0, 0]

    def take(state: JointState) -> None:
        seen[0] += 1
        seen[1] += any(value != 0.0 for value in state.effort)

    node.create_subscription(JointState, topic, take, QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    with contextlib.suppress(KeyboardInterrupt):
        spin_wait(executor, lambda: seen[1] >= count, timeout)
    print(f"STATES {seen[0]} {seen[1]}", flush=True)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0 if seen[1] >= count else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3])))
