# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""bag_to_log throughput beside rosbags' raw deserialization rate, and its peak memory.

A bag of 100,000 JointState messages (6 joints) is written in sqlite3 and MCAP.
For each, the same file is read side by side: rosbags alone (iterate and
``deserialize_cdr`` every message) and ``bag_to_log`` (read, fill the arrays, write
the log); the ratio of their rates is the target (>= 70 %). ``bag_to_log`` is also
timed with its joint-state layout reader off, as for a bag whose JointState
definition is not the standard one (every message through rosbags' decoder). Peak memory of
``bag_to_log`` is measured with tracemalloc in a subprocess and compared with the
output arrays' size (target < 3x).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import numpy as np
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from skelarm_ros.interface import JOINT_STATE_TYPE, JOINT_STATES, default_joint_names

JOINTS = 6


def write_bench_bag(path: Path, count: int, storage: str) -> Path:
    """Write ``count`` JointState messages of :data:`JOINTS` joints at 1 kHz."""
    store = get_typestore(Stores.ROS2_JAZZY)
    types = store.types
    names = default_joint_names(JOINTS)
    plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
    with Writer(path, version=9, storage_plugin=plugin) as writer:
        conn = writer.add_connection("/" + JOINT_STATES, JOINT_STATE_TYPE, typestore=store)
        for k in range(count):
            ns = k * 1_000_000
            values = np.full(JOINTS, 0.001 * k)
            msg = types[JOINT_STATE_TYPE](
                header=types["std_msgs/msg/Header"](
                    stamp=types["builtin_interfaces/msg/Time"](sec=ns // 10**9, nanosec=ns % 10**9), frame_id=""
                ),
                name=names,
                position=values,
                velocity=values,
                effort=values,
            )
            writer.write(conn, ns, store.serialize_cdr(msg, msg.__msgtype__))
    return path


def raw_rate(path: Path) -> float:
    """Messages per second rosbags reads and deserializes from the bag."""
    store = get_typestore(Stores.ROS2_JAZZY)
    start = time.perf_counter()
    count = 0
    with Reader(path) as reader:
        for conn, _, data in reader.messages():
            store.deserialize_cdr(data, conn.msgtype)
            count += 1
    return count / (time.perf_counter() - start)


_MEMORY = """
import json, sys, tracemalloc
from skelarm_ros.bags.bag_to_log import bag_to_log
from skelarm_ros.bags.logfile import read_log
tracemalloc.start()
bag_to_log(sys.argv[1], sys.argv[2])
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
arrays = read_log(sys.argv[2]).arrays
print(json.dumps({"peak": peak, "arrays": sum(a.nbytes for a in arrays.values())}))
"""


def run(quick: bool = False) -> None:
    """Print throughput ratios and the peak-memory ratio."""
    from skelarm_ros.bags.bag_to_log import bag_to_log
    from skelarm_ros.bags.reader import Bag

    count = 10_000 if quick else 100_000
    with tempfile.TemporaryDirectory(prefix="skelarm-bench-bags-") as folder:
        for storage in ("sqlite3", "mcap"):
            bag = write_bench_bag(Path(folder) / storage, count, storage)
            out = Path(folder) / f"{storage}.sklog.npz"
            raw = raw_rate(bag)
            start = time.perf_counter()
            bag_to_log(bag, out)
            ours = count / (time.perf_counter() - start)
            with mock.patch.object(Bag, "standard", lambda self, msgtype: False):
                start = time.perf_counter()
                bag_to_log(bag, out)
                generic = count / (time.perf_counter() - start)
            print(
                f"{storage:8s} {count} msgs: rosbags raw {raw:9.0f} msgs/s, bag_to_log {ours:9.0f} msgs/s, "
                f"ratio {ours / raw:5.1%} (target >= 70%); every message through rosbags' decoder "
                f"{generic:9.0f} msgs/s, {generic / raw:5.1%}",
                flush=True,
            )
            result = subprocess.run(
                [sys.executable, "-c", _MEMORY, str(bag), str(out)], capture_output=True, text=True, check=True
            )
            memory = json.loads(result.stdout.strip().splitlines()[-1])
            print(
                f"{storage:8s} peak traced memory {memory['peak'] / 1e6:7.1f} MB vs output arrays "
                f"{memory['arrays'] / 1e6:6.1f} MB: {memory['peak'] / memory['arrays']:4.2f}x (target < 3x)",
                flush=True,
            )
