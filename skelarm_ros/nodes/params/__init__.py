# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Every node's parameters, declared once, as a frozen dataclass per node.

- :mod:`~skelarm_ros.nodes.params.fields`: how a parameter is declared (a typed field
  with a :class:`~skelarm_ros.nodes.params.fields.Spec`), checked and named.
- :mod:`~skelarm_ros.nodes.params.simulator`, :mod:`~skelarm_ros.nodes.params.controller`,
  :mod:`~skelarm_ros.nodes.params.force_replay`, :mod:`~skelarm_ros.nodes.params.recorder`:
  each node's parameter class (``SimulatorParams`` ...). A node declares its class on
  its rclpy node (:func:`skelarm_ros.nodes.parameters.declare_parameters`) and reads
  ``params.dt``; the launch description takes the names from it.
- :mod:`~skelarm_ros.nodes.params.docs`: the docs' parameter tables, made from the
  classes (``python -m skelarm_ros.nodes.params.docs`` rewrites them; a test fails when
  a table differs).

This package imports no ROS client library, so the launch description uses it.
"""
