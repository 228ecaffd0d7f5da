# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The Fast DDS profiles the package ships: the graph's discovery and acknowledgement timing, and UDP only.

``config/fastdds_graph.xml`` is the profile both launchers give every node of the graph
(:func:`graph_environment`): a reliable writer's heartbeat every 0.1 s (Fast DDS: 3 s),
so the end of a run, which waits for the readers to acknowledge the last states, ends
as soon as they have them; and 20 initial discovery announcements 0.1 s apart (Fast
DDS: 5), so nodes that start a second apart still find each other at once. A user's
own Fast DDS profile, or another rmw, is left alone (docs/launch.md, "The graph's DDS
profile").

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

from pathlib import Path
from typing import TYPE_CHECKING

from skelarm_ros.sim.scenario import share_directory

if TYPE_CHECKING:
    from collections.abc import Mapping

GRAPH_PROFILE = "fastdds_graph.xml"
"""The graph's profile's file name in the package's ``config/``."""
UDP_LOCALHOST_PROFILE = "fastdds_udp_localhost.xml"
"""The UDP-only profile's file name in the package's ``config/``."""
PROFILES_FILE_VARIABLE = "FASTRTPS_DEFAULT_PROFILES_FILE"
"""The variable Fast DDS 2.x reads its XML profiles from."""
USER_PROFILE_VARIABLES = (PROFILES_FILE_VARIABLE, "FASTDDS_DEFAULT_PROFILES_FILE")
"""Variables through which a user gives Fast DDS a profile of their own (2.x and 3.x names)."""
WORKING_FOLDER_PROFILE = "DEFAULT_FASTRTPS_PROFILES.xml"
"""The profile Fast DDS loads from the working folder when it finds one there."""
FAST_DDS_RMWS = ("rmw_fastrtps_cpp", "rmw_fastrtps_dynamic_cpp")
"""The rmw implementations that read Fast DDS profiles (an unset ``RMW_IMPLEMENTATION`` is the first)."""
RANGE_VARIABLE = "ROS_AUTOMATIC_DISCOVERY_RANGE"


def graph_profile() -> Path:
    """Return the path of ``config/fastdds_graph.xml`` (installed, or in the source tree)."""
    return share_directory() / "config" / GRAPH_PROFILE


def own_profile(base: Mapping[str, str], folder: Path | None = None) -> str | None:
    """Return the Fast DDS profile a user set up themselves, or ``None`` when there is none.

    Parameters
    ----------
    base : Mapping[str, str]
        The environment the nodes start from.
    folder : Path | None, optional
        The folder the nodes start in (the current one when ``None``).

    Returns
    -------
    str | None
        The variable's value, or the working folder's ``DEFAULT_FASTRTPS_PROFILES.xml``.
    """
    for variable in USER_PROFILE_VARIABLES:
        if base.get(variable):
            return base[variable]
    found = (folder or Path.cwd()) / WORKING_FOLDER_PROFILE
    return str(found) if found.is_file() else None


def graph_environment(base: Mapping[str, str], folder: Path | None = None) -> dict[str, str]:
    """Return the variables both launchers add to every node's environment: the graph's Fast DDS profile.

    Nothing when the nodes run another rmw than Fast DDS's or the user has a profile of
    their own (:func:`own_profile`): theirs wins, and the run loses nothing with it,
    only its end may wait longer for the readers' acknowledgements (up to Fast DDS's
    heartbeat period, 3 s by default).

    Parameters
    ----------
    base : Mapping[str, str]
        The environment the nodes start from.
    folder : Path | None, optional
        The folder the nodes start in (the current one when ``None``).

    Returns
    -------
    dict[str, str]
        ``{"FASTRTPS_DEFAULT_PROFILES_FILE": <config/fastdds_graph.xml>}``, or empty.
    """
    if base.get("RMW_IMPLEMENTATION", FAST_DDS_RMWS[0]) not in FAST_DDS_RMWS or own_profile(base, folder):
        return {}
    return {PROFILES_FILE_VARIABLE: str(graph_profile())}


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
