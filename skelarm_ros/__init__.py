# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""ROS 2 nodes for the skelarm planar-arm simulator.

The pure core (``engine``, ``scenario``, ``conversions``, ``urdf`` and the bag and
force tools) imports no rclpy; the node modules in ``skelarm_ros.nodes`` are thin
shells around it. skelarm is imported without its Qt modules (:mod:`skelarm_ros.headless`),
so every node and tool runs where no GUI library is installed.
"""

from skelarm_ros.headless import install as _install_headless_skelarm

__version__ = "0.1.0"

_install_headless_skelarm()
