# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Stage 5 of ``bag_to_log``: the log's ``[extra]`` table, the conventions, topics, sources and counts.

This module does not import rclpy.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import numpy as np

from skelarm_ros import __version__
from skelarm_ros.interface import WRENCH_TYPE

if TYPE_CHECKING:
    from pathlib import Path

    from skelarm_ros.bags.bag_to_log.alignment import Aligned
    from skelarm_ros.bags.bag_to_log.collection import Collected
    from skelarm_ros.bags.bag_to_log.topics import TopicPlan

TOOL = "skelarm_ros.bags.bag_to_log"
"""The producer written into every log, and ``extra.tool``."""


def log_extra(
    plan: TopicPlan, collected: Collected, aligned: Aligned, *, clock: str, skeleton_source: str, notes: list[str]
) -> dict[str, Any]:
    """Return the log's ``[extra]`` table: the conventions, topics, sources and counts of the conversion.

    Parameters
    ----------
    plan, collected, aligned
        The stages' outputs.
    clock : str
        ``header`` or ``log``.
    skeleton_source : str
        Where the embedded arm came from (``none`` when there is none).
    notes : list[str]
        Things a user should know (from the bag and the skeleton).
    """
    order = np.diff(aligned.stamps)
    topics: dict[str, Any] = {"joint_states": {"name": plan.joint_topic, "type": plan.joint_type}}
    if plan.command_topic and (aligned.effort["source"] == "commands" or "goals" in aligned.effort):
        topics["commands"] = {"name": plan.command_topic, "type": str(plan.command_type)}
    if plan.wrench_topic:
        topics["wrench"] = {"name": plan.wrench_topic, "type": WRENCH_TYPE, "auto_detected": plan.wrench_auto}
    if aligned.controller:
        topics["controller"] = aligned.controller
    return {
        "tool": TOOL,
        "tool_version": __version__,
        "joint_names": collected.joints,
        "clock": clock,
        "time_origin_ns": aligned.origin,
        "time_unit": "s since time_origin_ns",
        "effort": aligned.effort,
        "valid_masks": "valid_<channel>: true where the value was recorded and finite; missing values are NaN",
        "skeleton_source": skeleton_source,
        "topics": topics,
        "sources": [
            {"path": str(path.resolve()), "sha256": sha256(path)} for path in collected.files if path.is_file()
        ],
        "counts": {
            "messages_read": collected.messages,
            "stamp_fallbacks": aligned.fallbacks,
            "empty_name_lists": collected.empty_name_lists,
            "frames": len(aligned.stamps),
            "out_of_order": int(np.count_nonzero(order < 0)),
            "duplicate_stamps": int(np.count_nonzero(order == 0)),
            "skipped_undecodable": collected.skipped,
            "unknown_joint_names": collected.unknown_names,
            "masked": aligned.masked,
        },
        "notes": notes,
    }


def sha256(path: Path) -> str:
    """Return the sha256 of a file, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
