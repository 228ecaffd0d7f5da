# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Bags and logs: reading and writing them, and what is played back from them.

- :mod:`~skelarm_ros.bags.reader`: any bag opened (rosbag2 sqlite3 and MCAP, split,
  compressed; ROS 1), its messages in log-time order, its recorded QoS.
- :mod:`~skelarm_ros.bags.rosbags_adapter`: everything taken from rosbags beyond its
  documented API.
- :mod:`~skelarm_ros.bags.cdr`: JointState CDR bytes read and written directly.
- :mod:`~skelarm_ros.bags.logfile`: the ``.sklog.npz`` file, skelarm's format.
- :mod:`~skelarm_ros.bags.bag_to_log` and :mod:`~skelarm_ros.bags.log_to_bag`: the two
  converters.
- :mod:`~skelarm_ros.bags.recording`: the recorder's core (bounded queue, writer thread).
- :mod:`~skelarm_ros.bags.replay`: the player's core (which topics, as what, when).
- :mod:`~skelarm_ros.bags.forces`: recorded tip forces from logs, CSV and bags, replayed
  at any step.

This package imports neither rclpy, the controllers nor the nodes (import contracts in
``.importlinter``).
"""
