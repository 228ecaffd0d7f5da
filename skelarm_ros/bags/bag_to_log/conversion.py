# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""``bag_to_log``'s conversion: the five stages into a log in memory (:func:`convert`), and its file.

:func:`convert` runs the stages and returns a :class:`Conversion`: the log as a
:class:`~skelarm_ros.bags.logfile.LogFile` (its arrays and metadata, exactly what the file
holds) and what the conversion says, as values. Any caller takes it so (``identify`` does,
with no file in between); :func:`bag_to_log` writes it, whole or not at all.

This module does not import rclpy.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypedDict, Unpack

from skelarm_ros.bags.bag_to_log.alignment import GOAL_UNITS_OF, align
from skelarm_ros.bags.bag_to_log.collection import collect
from skelarm_ros.bags.bag_to_log.extra import TOOL, log_extra
from skelarm_ros.bags.bag_to_log.samples import ConversionError
from skelarm_ros.bags.bag_to_log.skeleton import joint_kinds, joint_units, resolve_skeleton
from skelarm_ros.bags.bag_to_log.topics import plan_topics
from skelarm_ros.bags.logfile import LogFile, LogFileError, write_log
from skelarm_ros.bags.reader import open_bag
from skelarm_ros.sim.scenario import load_arm

if TYPE_CHECKING:
    from collections.abc import Sequence

CLOCKS = ("header", "log")
"""The clocks a log's time may be read on: header stamps or log time."""


class Options(TypedDict, total=False):
    """:func:`convert`'s keywords, as :func:`bag_to_log` passes them on."""

    joint_topic: str | None
    command_topic: str | None
    wrench_topic: str | None
    joints: Sequence[str] | None
    command_joints: Sequence[str]
    clock: str
    scenario: str | Path | None
    recover: bool
    progress: IO[str] | None


@dataclass(frozen=True)
class Conversion:
    """A bag converted in memory.

    Attributes
    ----------
    log : LogFile
        The log: its arrays and its metadata (``[extra]`` with the conventions, topics,
        the source files with their sha256, the notes), as :func:`bag_to_log` writes it.
    messages : int
        Messages read from the bag.
    masked : dict[str, int]
        Masked (missing) values per channel.
    said : tuple[str, ...]
        What a user should know that the log does not record (joint states without names).
    """

    log: LogFile
    messages: int
    masked: dict[str, int]
    said: tuple[str, ...] = ()

    @property
    def extra(self) -> dict[str, Any]:
        """The log's ``[extra]`` table."""
        return self.log.extra

    @property
    def joints(self) -> list[str]:
        """Joint names, in column order."""
        return list(self.extra["joint_names"])

    @property
    def frames(self) -> int:
        """Samples (joint-state messages)."""
        return len(self.log.times)

    @property
    def notes(self) -> list[str]:
        """Everything the conversion says: what the log does not record, then the notes it records."""
        return [*self.said, *self.extra["notes"]]


@dataclass
class Summary:
    """What a conversion to a file did.

    Attributes
    ----------
    output : Path
        The written log.
    conversion : Conversion
        The log as written, and what the conversion says.
    seconds : float
        Wall time of the conversion and the write.
    """

    output: Path
    conversion: Conversion
    seconds: float

    @property
    def frames(self) -> int:
        """Samples (joint-state messages) written."""
        return self.conversion.frames

    @property
    def messages(self) -> int:
        """Messages read from the bag."""
        return self.conversion.messages

    @property
    def joints(self) -> list[str]:
        """Joint names, in column order."""
        return self.conversion.joints

    @property
    def masked(self) -> dict[str, int]:
        """Masked (missing) values per channel."""
        return self.conversion.masked

    @property
    def extra(self) -> dict[str, Any]:
        """The ``[extra]`` table written."""
        return self.conversion.extra

    def text(self) -> str:
        """Return a few lines for the terminal."""
        rate = self.messages / self.seconds if self.seconds > 0 else float("inf")
        masked = ", ".join(f"{k}: {v}" for k, v in self.masked.items() if v) or "nothing"
        counts = self.extra["counts"]
        return (
            f"wrote {self.output}: {self.frames} frames of joints {self.joints}\n"
            f"read {self.messages} messages in {self.seconds:.2f} s ({rate:.0f} msgs/s); "
            f"clock {self.extra['clock']}, tau from {self.extra['effort']['source']}\n"
            f"masked values: {masked}; stamp fallbacks to log time: {counts['stamp_fallbacks']}, "
            f"out-of-order stamps: {counts['out_of_order']}, duplicate stamps: {counts['duplicate_stamps']}"
        )


def convert(
    bag_path: str | Path,
    *,
    joint_topic: str | None = None,
    command_topic: str | None = None,
    wrench_topic: str | None = None,
    joints: Sequence[str] | None = None,
    command_joints: Sequence[str] = (),
    clock: str = "header",
    scenario: str | Path | None = None,
    recover: bool = False,
    progress: IO[str] | None = None,
) -> Conversion:
    """Convert a bag into a skelarm log in memory.

    Parameters
    ----------
    bag_path : str | Path
        A rosbag2 directory, a ``.db3`` / ``.mcap`` file or a ROS 1 ``.bag``.
    joint_topic : str | None, optional
        The JointState topic; by default the only one (see :func:`choose_joint_topic`).
    command_topic : str | None, optional
        Effort commands (JointState ``effort`` or Float64MultiArray) for ``tau``, or a servo's
        goals; by default ``joint_commands`` or ``<kind>_controller/commands`` next to the
        joint topic when present, else ``tau`` is the joint states' effort.
    wrench_topic : str | None, optional
        WrenchStamped tip force for ``ext_force``; by default ``tip_wrench`` next to the
        joint topic when present.
    joints : Sequence[str] | None, optional
        Joint names and their column order; by default as in the first message.
    command_joints : Sequence[str], optional
        The joints of a Float64MultiArray command's values, in their order (the controller's
        ``command_joints``); by default the joints, in column order.
    clock : str, optional
        ``header`` (stamps, a zero stamp falls back to log time) or ``log``.
    scenario : str | Path | None, optional
        Scenario or robot TOML whose skeleton is embedded; by default the bag's
        ``robot_description`` when recorded.
    recover : bool, optional
        Read a truncated MCAP file up to its damage.
    progress : IO[str] | None, optional
        Where to draw a progress bar (for bags of more than a few thousand messages).

    Returns
    -------
    Conversion
        The log and what the conversion says.

    Raises
    ------
    BagError, ConversionError, ScenarioError
        With one sentence naming the problem.
    """
    if clock not in CLOCKS:
        msg = f"unknown clock '{clock}'; choose 'header' (message stamps) or 'log' (recording time)"
        raise ConversionError(msg)
    arm = load_arm(scenario) if scenario else None
    with open_bag(bag_path, recover=recover) as bag:
        plan = plan_topics(
            bag,
            joint_topic=joint_topic,
            command_topic=command_topic,
            wrench_topic=wrench_topic,
            read_description=arm is None,
        )
        collected = collect(bag, plan, joints=joints, command_joints=command_joints, progress=progress)
    aligned = align(collected, plan, header=clock == "header")
    skeleton, skeleton_source, notes = resolve_skeleton(
        collected.joints, arm=arm, urdf=collected.urdf, description=plan.description
    )
    kinds = joint_kinds(collected.joints, urdf=collected.urdf, skelarm_arm=skeleton is not None)
    aligned.channel_meta.update(joint_units(collected.joints, kinds))
    if "measured_effort" in aligned.channel_meta:  # in the unit of the joints' efforts, as tau is
        aligned.channel_meta["measured_effort"]["unit"] = aligned.channel_meta["tau"]["unit"]
    for goal, state in GOAL_UNITS_OF.items():  # a servo's goals in the unit of the angles or velocities they are
        if goal in aligned.channel_meta:
            aligned.channel_meta[goal]["unit"] = aligned.channel_meta[state]["unit"]
    extra = log_extra(
        plan, collected, aligned, clock=clock, skeleton_source=skeleton_source, notes=[*collected.notes, *notes]
    )
    if kinds:
        extra["joint_kinds"] = kinds
    if arm is not None:  # the scenario's tables travel with the log, as a skelarm run's do (plot draws its task)
        extra["source_config"] = arm.config
    log = LogFile.made(aligned.arrays, skeleton=skeleton, producer=TOOL, channel_meta=aligned.channel_meta, extra=extra)
    return Conversion(log, collected.messages, aligned.masked, tuple(collected.said))


def bag_to_log(bag_path: str | Path, output: str | Path, **options: Unpack[Options]) -> Summary:
    """Convert a bag into a skelarm ``.sklog.npz`` (:func:`convert`, then the file written whole).

    Parameters
    ----------
    bag_path : str | Path
        A rosbag2 directory, a ``.db3`` / ``.mcap`` file or a ROS 1 ``.bag``.
    output : str | Path
        The log to write.
    **options
        :func:`convert`'s keywords (:class:`Options`: topics, joints, clock, scenario, recover, progress).

    Returns
    -------
    Summary
        What was written.

    Raises
    ------
    BagError, ConversionError, ScenarioError
        With one sentence naming the problem; no output is left behind.
    """
    started = time.perf_counter()
    conversion = convert(bag_path, **options)
    output = Path(output)
    try:
        write_log(output, conversion.log)
    except LogFileError as error:
        raise ConversionError(str(error)) from None
    return Summary(output, conversion, time.perf_counter() - started)
