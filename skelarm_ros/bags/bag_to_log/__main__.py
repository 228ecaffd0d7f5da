# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""``python -m skelarm_ros.bags.bag_to_log``: the ``bag_to_log`` tool, as the other tools' modules run."""

import sys

from skelarm_ros.bags.bag_to_log.command import main

sys.exit(main())
