# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The ROS 2 nodes: one module per node, each with its ``main()``."""
