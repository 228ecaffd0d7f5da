"""Recorder node: a real recording process, stopped cleanly or killed, converted by bag_to_log."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import skelarm

from skelarm_ros.bag_to_log import bag_to_log


def committed_states(folder: Path) -> int:
    """Messages on /joint_states committed to the recorder's sqlite3 file so far."""
    files = list(folder.glob("*.db3"))
    if not files:
        return 0
    try:
        with sqlite3.connect(f"file:{files[0]}?mode=ro", uri=True) as db:
            row = db.execute(
                "SELECT count(*) FROM messages JOIN topics ON topics.id = messages.topic_id "
                "WHERE topics.name = '/joint_states'"
            ).fetchone()
    except sqlite3.Error:
        return 0
    return int(row[0])


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["SIGINT", "SIGTERM", "SIGKILL"])
def test_recording_survives_stop_and_converts(tmp_path, stop):
    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState

    folder = tmp_path / "bag"
    env = dict(os.environ)
    proc = subprocess.Popen(
        [sys.executable, "-m", "skelarm_ros.nodes.recorder", "--ros-args", "-p", f"output:={folder}"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    context = Context()
    rclpy.init(context=context)
    node = rclpy.create_node("probe", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    publisher = node.create_publisher(JointState, "joint_states", 10)
    try:
        deadline = time.monotonic() + 60.0
        k = 0
        while committed_states(folder) < 30:
            assert time.monotonic() < deadline, "the recorder committed fewer than 30 joint states in 60 s"
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            msg = JointState(name=["j1", "j2"], position=[0.1 * k, 0.2], velocity=[0.0, 0.0], effort=[0.0, 0.0])
            msg.header.stamp.sec, msg.header.stamp.nanosec = 1, k * 1000
            publisher.publish(msg)
            k += 1
            executor.spin_once(timeout_sec=0.02)
        proc.send_signal(stop)
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    if stop != signal.SIGKILL:  # stopped cleanly: the bag is complete
        assert code == 0
        assert (folder / "metadata.yaml").is_file()
    else:
        assert not (folder / "metadata.yaml").exists()
    summary = bag_to_log(folder, tmp_path / "out.sklog.npz")
    log = skelarm.StateLog.load(tmp_path / "out.sklog.npz")
    assert summary.frames >= 30 and log.extra["joint_names"] == ["j1", "j2"]
    assert log.channel("q")[0, 1] == 0.2
