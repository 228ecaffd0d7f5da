# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The Fast DDS transport setting the package ships: UDP on the loopback interface, no shared memory.

With rmw_fastrtps_cpp and ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` every participant
talks to the others on the same host through Fast DDS's shared-memory transport. The
first message to a participant that has just appeared opens its shared-memory port,
and that opening can sleep a third of a second in a health check while every other
send of the process waits (docs/reliability.md, "Stalls of about 0.33 s").
``config/fastdds_udp_localhost.xml`` keeps discovery on this host and sends everything
over UDP on 127.0.0.1 instead; :func:`udp_localhost_environment` is the environment
that turns it on for a process.

This module imports neither rclpy nor numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skelarm_ros.sim.scenario import share_directory

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

UDP_LOCALHOST_PROFILE = "fastdds_udp_localhost.xml"
"""The profile's file name in the package's ``config/``."""
PROFILES_FILE_VARIABLE = "FASTRTPS_DEFAULT_PROFILES_FILE"
"""The variable Fast DDS 2.x reads its XML profiles from."""
RANGE_VARIABLE = "ROS_AUTOMATIC_DISCOVERY_RANGE"


def udp_localhost_profile() -> Path:
    """Return the path of ``config/fastdds_udp_localhost.xml`` (installed, or in the source tree)."""
    return share_directory() / "config" / UDP_LOCALHOST_PROFILE


def udp_localhost_environment(base: Mapping[str, str]) -> dict[str, str]:
    """Return ``base`` with the variables that make a process use the UDP-only loopback profile.

    ``ROS_AUTOMATIC_DISCOVERY_RANGE`` becomes ``SYSTEM_DEFAULT``: with ``LOCALHOST``,
    rmw_fastrtps_cpp replaces the profile's transports with its own shared-memory and
    UDP pair. The profile itself keeps discovery on 127.0.0.1.

    Parameters
    ----------
    base : Mapping[str, str]
        An environment (``os.environ``, or a process's own).

    Returns
    -------
    dict[str, str]
        A copy of ``base`` with ``FASTRTPS_DEFAULT_PROFILES_FILE`` and
        ``ROS_AUTOMATIC_DISCOVERY_RANGE`` set.
    """
    environment = dict(base)
    environment[PROFILES_FILE_VARIABLE] = str(udp_localhost_profile())
    environment[RANGE_VARIABLE] = "SYSTEM_DEFAULT"
    return environment
