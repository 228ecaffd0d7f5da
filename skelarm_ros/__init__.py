# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""ROS 2 nodes for the skelarm planar-arm simulator.

The pure core (``engine``, ``scenario``, ``conversions``, ``urdf`` and the bag and
force tools) imports no rclpy; the node modules in ``skelarm_ros.nodes`` are thin
shells around it.
"""

__version__ = "0.1.0"
