# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""``bag_to_log``: a bag's joint states, commands and wrench as a skelarm ``.sklog.npz``.

The bag is streamed once with :mod:`skelarm_ros.bags.reader`; values go straight into
numpy arrays grown in chunks, so memory follows the output arrays, not the bag.
Everything else the log needs to be understood later (joint names and order, the
clock, the effort's kind, unit, source and timing, topics and types, the source
files with their sha256, counts of repaired or masked samples) is written into the
log's ``[extra]`` table. Missing values are NaN and marked ``False`` in the
``valid_<channel>`` masks; no sample is deleted. See ``docs/bags.md``.

:func:`convert` (:mod:`.conversion`) runs five stages, each a function that can be
called alone, each in a module of its own, and returns the log in memory (a
:class:`Conversion`: the :class:`~skelarm_ros.bags.logfile.LogFile` and what the
conversion says, as values; no stage warns through the warnings module):

1. :func:`plan_topics` (:mod:`.topics`): which topics to read (joint states, commands,
   wrench, controller channels, ``robot_description``), given or found, and checked;
2. :func:`collect` (:mod:`.collection`): one streaming pass over them into growing
   arrays (joint states of one repeated layout read straight from their bytes by
   :class:`skelarm_ros.bags.cdr.JointStateLayout`; commands logged before the first
   state kept for it);
3. :func:`align` (:mod:`.alignment`): every stream held onto the joint states' times
   on the chosen clock, giving the log's channels, masks and time axis;
4. :func:`resolve_skeleton` (:mod:`.skeleton`): the arm to embed, from a scenario or
   the recorded ``robot_description``;
5. :func:`log_extra` (:mod:`.extra`): the ``[extra]`` table.

Any caller takes the log so (``identify`` does, with no file in between);
:func:`bag_to_log` writes it with :func:`skelarm_ros.bags.logfile.write_log`. What the stages hand
on (rows grown in chunks, a topic's :class:`Samples`, :class:`ConversionError`) is in
:mod:`.samples`; the command line (:func:`main`) in :mod:`.command`.

This package does not import rclpy.
"""

from skelarm_ros.bags.bag_to_log.alignment import WALL_CLOCK_NS, Aligned, align, resolve_times
from skelarm_ros.bags.bag_to_log.collection import PROGRESS_MIN_MESSAGES, Collected, collect
from skelarm_ros.bags.bag_to_log.command import main
from skelarm_ros.bags.bag_to_log.conversion import CLOCKS, Conversion, Options, Summary, bag_to_log, convert
from skelarm_ros.bags.bag_to_log.extra import TOOL, log_extra, sha256
from skelarm_ros.bags.bag_to_log.samples import ConversionError, Samples
from skelarm_ros.bags.bag_to_log.skeleton import resolve_skeleton
from skelarm_ros.bags.bag_to_log.topics import (
    AUTO_COMMAND_TOPICS,
    FIELDS_READ,
    OPTIONAL_TOPICS,
    TopicPlan,
    choose_joint_topic,
    controller_topics,
    description_topic,
    plan_topics,
)

__all__ = [
    "AUTO_COMMAND_TOPICS",
    "CLOCKS",
    "FIELDS_READ",
    "OPTIONAL_TOPICS",
    "PROGRESS_MIN_MESSAGES",
    "TOOL",
    "WALL_CLOCK_NS",
    "Aligned",
    "Collected",
    "Conversion",
    "ConversionError",
    "Options",
    "Samples",
    "Summary",
    "TopicPlan",
    "align",
    "bag_to_log",
    "choose_joint_topic",
    "collect",
    "controller_topics",
    "convert",
    "description_topic",
    "log_extra",
    "main",
    "plan_topics",
    "resolve_skeleton",
    "resolve_times",
    "sha256",
]
