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
            "topics to record (relative names resolve in the namespace); controller/* always",
            details="Every `controller/<channel>` topic is recorded besides these.",
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
