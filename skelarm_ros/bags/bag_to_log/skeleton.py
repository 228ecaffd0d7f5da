# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Stage 4 of ``bag_to_log``: the arm to embed, from a scenario or the recorded ``robot_description``.

This module does not import rclpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skelarm_ros.bags.bag_to_log.samples import ConversionError
from skelarm_ros.sim.urdf_reader import URDFError, skeleton_from_urdf

if TYPE_CHECKING:
    from collections.abc import Sequence

    import skelarm

    from skelarm_ros.sim.scenario import ArmSetup


def resolve_skeleton(
    joints: Sequence[str], *, arm: ArmSetup | None, urdf: str | None, description: str | None
) -> tuple[skelarm.Skeleton | None, str, list[str]]:
    """Return the arm to embed, where it came from (``extra.skeleton_source``), and notes.

    Parameters
    ----------
    joints : Sequence[str]
        The log's joints.
    arm : ArmSetup | None
        A scenario's arm (``--scenario``); it must have as many joints.
    urdf : str | None
        The recorded ``robot_description``, used when no scenario is given; one that
        is not a skelarm arm, or has another number of joints, is left out with a note.
    description : str | None
        The topic it was recorded on.

    Raises
    ------
    ConversionError
        If the scenario's arm has another number of joints.
    """
    if arm is not None:
        if arm.num_joints != len(joints):
            msg = (
                f"scenario '{arm.path}' has {arm.num_joints} joints but the bag has {len(joints)} "
                f"({list(joints)}); pass the scenario of this arm"
            )
            raise ConversionError(msg)
        return arm.skeleton, f"scenario {arm.path}", []
    if urdf is None:
        return None, "none", []
    try:
        skeleton, urdf_joints = skeleton_from_urdf(urdf)
    except URDFError as error:
        return None, "none", [f"robot_description could not be read as a skelarm arm ({error}); no skeleton embedded"]
    if len(urdf_joints) != len(joints):
        return None, "none", [f"robot_description has joints {urdf_joints}, the states {list(joints)}; not embedded"]
    return skeleton, f"robot_description on {description}", []
