# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The simulated arm: its model, its stepping, the simulator's run, and what describes the arm.

- :mod:`~skelarm_ros.sim.scenario`: scenario and robot TOML files, one sentence per problem.
- :mod:`~skelarm_ros.sim.engine`: the Pinocchio model of a Skeleton and its stepping.
- :mod:`~skelarm_ros.sim.conversions`: message fields to arrays by joint name; ``Rejected``.
- :mod:`~skelarm_ros.sim.simulation`: the simulator's per-step rules (held command and
  force, clamping, lockstep pairing).
- :mod:`~skelarm_ros.sim.run`: the simulator's run with the time handed in: when it
  starts, waits, lapses and ends, and what it says.
- :mod:`~skelarm_ros.sim.markers`: the arm's rviz marker geometry from plain values.
- :mod:`~skelarm_ros.sim.urdf` and :mod:`~skelarm_ros.sim.urdf_reader`: the arm written
  as URDF, and any URDF read back as an arm.

This package imports neither rclpy nor the bags, the controllers or the nodes
(import contracts in ``.importlinter``).
"""
