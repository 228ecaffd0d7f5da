# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Dynamic identification of a skelarm arm from recorded runs: from a bag to a calibrated twin.

The stages, each a module:

- :mod:`~skelarm_ros.identification.data`: read bags (converted in memory by
  :func:`skelarm_ros.bags.bag_to_log.convert`) and ``.sklog.npz`` logs, apply their
  conventions (joint order, clock, which torque the effort is and over which step it
  acted), drop masked samples, differentiate the velocity.
- :mod:`~skelarm_ros.identification.regressor`: the FIGAROH regressor of the arm's
  Pinocchio model, its base parameters and the least-squares fit (FIGAROH's QR).
- :mod:`~skelarm_ros.identification.offsets`: which joints' torque offsets the runs
  separate from gravity and Coulomb friction (the others are left out, with the reason).
- :mod:`~skelarm_ros.identification.consistency`: the physically consistent full set of
  inertial parameters closest to the prior that reproduces the base parameters.
- :mod:`~skelarm_ros.identification.driver`: what the runs tell of the arm's driver (its
  rate, command delay, encoder ticks and noise), for the twin's ``[driver]`` table.
- :mod:`~skelarm_ros.identification.twin`: the twin as a skelarm robot or scenario TOML
  (its ``[driver]`` table), held-out torque prediction as the simulator runs it, and the plot.
- :mod:`~skelarm_ros.identification.report`: the report ``identify`` prints.

This package does not import rclpy.
"""

from __future__ import annotations


class IdentificationError(ValueError):
    """Input that cannot be identified from; the message names the problem and the fix."""


__all__ = ["IdentificationError"]
