# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""``bag_to_log`` on the command line: its options, and its ``main`` run by :func:`skelarm_ros.tool.run_main`.

This module does not import rclpy.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from skelarm_ros import tool
from skelarm_ros.bags.bag_to_log.conversion import CLOCKS, bag_to_log
from skelarm_ros.interface import split_names

if TYPE_CHECKING:
    from collections.abc import Sequence

PROG = "bag_to_log"


def _joint_names(text: str) -> list[str]:
    """Read ``--joints``: joint names separated by commas, at least one."""
    names = split_names(text)
    if not names:
        msg = "empty; give joint names separated by commas"
        raise argparse.ArgumentTypeError(msg)
    return names


def _parser() -> argparse.ArgumentParser:
    parser = tool.parser(PROG, "Convert a rosbag2 (sqlite3/MCAP) or ROS 1 bag into a skelarm .sklog.npz log.")
    parser.add_argument("bag", help="rosbag2 directory, .db3 or .mcap file, or ROS 1 .bag")
    parser.add_argument("-o", "--output", required=True, help="the .sklog.npz to write")
    parser.add_argument("--joint-topic", help="sensor_msgs/JointState topic (default: the only one)")
    parser.add_argument(
        "--command-topic",
        help="effort commands for tau, or a servo's goals (JointState or Float64MultiArray; "
        "default: joint_commands or <kind>_controller/commands next to the joint topic)",
    )
    parser.add_argument(
        "--command-joints",
        type=_joint_names,
        default=[],
        help="the joints of a Float64MultiArray command's values, in their order, comma separated (the "
        "controller's command_joints; default: the joints' column order)",
    )
    parser.add_argument("--wrench-topic", help="WrenchStamped tip force (default: tip_wrench next to the joint topic)")
    parser.add_argument(
        "--joints",
        type=_joint_names,
        help="joint names in column order, comma separated (default: the first message's)",
    )
    parser.add_argument("--clock", choices=CLOCKS, default="header", help="header stamps (default) or log time")
    parser.add_argument("--scenario", help="scenario or robot TOML whose skeleton to embed")
    parser.add_argument("--recover", action="store_true", help="read a truncated MCAP up to its damage")
    return parser


def _convert(args: argparse.Namespace) -> tool.Done:
    """Convert the bag the command line names; say the summary, and the conversion's notes."""
    summary = bag_to_log(
        args.bag,
        args.output,
        joint_topic=args.joint_topic,
        command_topic=args.command_topic,
        wrench_topic=args.wrench_topic,
        joints=args.joints,
        command_joints=args.command_joints,
        clock=args.clock,
        scenario=args.scenario,
        recover=args.recover,
        progress=sys.stderr if sys.stderr.isatty() else None,
    )
    return tool.Done(report=[summary.text()], notes=summary.conversion.notes)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``bag_to_log`` from the command line; returns the exit code.

    Every error of a conversion is a ``ValueError`` whose message is one sentence
    (``BagError``, ``ConversionError``, ``ScenarioError``).
    """
    return tool.run_main(_parser(), argv, _convert, outputs=lambda args: [args.output], errors=(ValueError,))
