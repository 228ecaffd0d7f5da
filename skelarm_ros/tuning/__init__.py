# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Tuning a scenario's controller gains on its twin behind its driver: what ``skelarm-ros tune`` runs.

The stages, each a module:

- :mod:`~skelarm_ros.tuning.space`: which gains each controller type declares tunable, and
  over what range (one table);
- :mod:`~skelarm_ros.tuning.objective`: what a good reach is in numbers: the score and the
  constraints of a run, the worst of several;
- :mod:`~skelarm_ros.tuning.samples`: the robust samples: twins drawn within the
  identification's standard deviations, each behind its driver at every command delay;
- :mod:`~skelarm_ros.tuning.evaluate`: one candidate's gains in the scenario's tables, its
  control loop built as the graph builds it, run in this process on every sample and scored;
- :mod:`~skelarm_ros.tuning.study`: the Optuna study: its sampler, constraints, storage and
  worker processes (the one module that imports Optuna);
- :mod:`~skelarm_ros.tuning.report`: the tuned scenario's ``[tuning]`` table and the picture.

The tool around them is :mod:`skelarm_ros.cli.tune`. This package does not import rclpy.
"""

from __future__ import annotations
