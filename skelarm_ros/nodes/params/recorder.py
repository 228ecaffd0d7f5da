# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The ``recorder`` node's parameters (docs/bags.md's table is made from them).

This module does not import rclpy.
"""

from dataclasses import dataclass
from typing import Annotated

from skelarm_ros.bags.recording import DEFAULT_CACHE_SIZE, STORAGES
from skelarm_ros.interface import ARM_TOPICS
from skelarm_ros.nodes.params.fields import choice, count, number, param


@dataclass(frozen=True)
class RecorderParams:
    """The recorder's parameters, all read-only."""

    output: Annotated[
        str, param("bag folder to create (default recorder_<UTC time>)", details="It must not exist yet.")
    ] = ""
    storage: Annotated[
        str,
        choice(
            tuple(STORAGES),
            "sqlite3 or mcap",
            details="The launch argument `record_storage` sets it ([launch.md](launch.md)).",
        ),
    ] = next(iter(STORAGES))
    topics: Annotated[
        tuple[str, ...],
        param(
            "topics to record (relative names resolve in the namespace); this graph's controller channels always",
            details="Besides these, every `controller/<channel>` topic of the recorder's own graph is recorded: "
            "one name deep in its namespace, a PointStamped or JointState published by a node there "
            "(not another stack's `/controller/...` topics).",
        ),
    ] = ARM_TOPICS
    flush_interval: Annotated[float, number("time between sqlite3 commits (what survives a SIGKILL)")] = 0.2
    discovery_period: Annotated[float, number("time between looks for new topics")] = 0.1
    max_cache_size: Annotated[
        int,
        count(
            "bytes of messages taken but not yet written; when full, taking waits (nothing is dropped)",
            low=1,
            details="16 MiB by default.",
        ),
    ] = DEFAULT_CACHE_SIZE
    nice: Annotated[
        int,
        count(
            "nice value of the process's threads (0: normal, 19: the lowest priority)",
            19,
            details="The launch sets 10 in lockstep: the recorder then takes its messages when the loop leaves a core "
            "free instead of preempting the simulator and the controller at each one, which kept a recorded "
            "two-process lockstep at 76-90 % of the unrecorded rate against 62-77 % at 0 "
            "([benchmarks.md](benchmarks.md#the-composed-graph)). Nothing is lost: in lockstep every topic is "
            "reliable with keep-all history, and the loop waits for a recorder that falls behind. Left at 0 in "
            "realtime, where a reader that falls behind loses messages.",
        ),
    ] = 0
