# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""``python -m skelarm_ros.cli``: the ``skelarm-ros`` command (how ``skelarm-ros launch`` starts each node)."""

import sys

from skelarm_ros.cli import console

sys.exit(console())
