# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""``log_to_bag``: a skelarm ``.sklog.npz`` as a rosbag2 bag, in this package's topic conventions.

Frame k at time t_k becomes (stamped and logged at t_k):

- ``joint_states``: q[k], dq[k] and, as effort, the torque applied over the step
  that ended at frame k: tau[k-1] (zero at k = 0), see ``docs/interfaces.md``;
- ``joint_commands``: JointState with effort tau[k], the command computed from frame k;
  (when the log keeps the recorded joint states' effort beside its commands,
  ``measured_effort``, that is frame k's effort instead of tau[k-1]);

  unless the log's ``tau`` is a measured effort (``bag_to_log`` of a bag without
  commands: ``extra.effort.timing`` ``applied_until_frame``): then ``joint_states``
  carries tau[k] as its effort, as it was recorded, and there is no ``joint_commands``
  (a measurement is not a command);
- a channel never recorded (velocity or effort masked in every frame) is left empty in
  ``joint_states``, as a driver that does not report it publishes it;
- ``tip_wrench``: ext_force[k] when the log has it;
- ``controller/<channel>``: PointStamped for the 2-D point channels, JointState
  positions for the others;
- ``robot_description`` (transient local), once, when the log embeds a skeleton.

``bag_to_log`` of the result gives back q, dq, tau and ext_force exactly.

This module does not import rclpy.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import skelarm
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from skelarm_ros import tool
from skelarm_ros.bags.logfile import LogFile, LogFileError, read_log
from skelarm_ros.bags.reader import qos_profile
from skelarm_ros.interface import (
    APPLIED_UNTIL_FRAME,
    BASE_FRAME,
    JOINT_COMMANDS,
    JOINT_STATE_TYPE,
    JOINT_STATES,
    NANOSECONDS,
    POINT_CHANNELS,
    POINT_TYPE,
    ROBOT_DESCRIPTION,
    STRING_TYPE,
    TIP_WRENCH,
    WRENCH_TYPE,
    channel_topic,
    default_joint_names,
    nanoseconds_to_stamp,
    split_names,
)
from skelarm_ros.outputs import check_new, write_folder_atomically
from skelarm_ros.sim.urdf import skeleton_to_urdf

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

PROG = "log_to_bag"
STORAGES = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}
MEASURED_EFFORT = "measured_effort"
"""The channel of the joint states' effort that ``bag_to_log`` keeps beside ``tau`` from commands."""
_STATE = ("time", "q", "dq", "tau", "ext_force", MEASURED_EFFORT)


class LogError(ValueError):
    """A log that cannot be written as a bag; the message names the problem and the fix."""


def _time(typestore: Any, ns: int) -> Any:
    sec, nanosec = nanoseconds_to_stamp(ns)
    return typestore.types["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec)


def _topic(name: str) -> str:
    """Return a topic of the contract as a bag names it (absolute, in the root namespace)."""
    return "/" + name


def log_to_bag(
    log: str | Path | skelarm.StateLog,
    output: str | Path,
    *,
    storage: str = "mcap",
    joint_names: Sequence[str] | None = None,
    force: bool = False,
) -> int:
    """Write a skelarm log as a rosbag2 bag.

    Parameters
    ----------
    log : str | Path | skelarm.StateLog
        The log (a ``.sklog.npz`` path or a StateLog).
    output : str | Path
        The bag directory to create (it must not exist).
    storage : str, optional
        ``mcap`` (default) or ``sqlite3``.
    joint_names : Sequence[str] | None, optional
        Joint names; by default the log's ``extra.joint_names`` or ``j1 ... jN``.

    Returns
    -------
    int
        Messages written.

    Raises
    ------
    LogError
        If the log lacks ``q``, the output exists, or the storage is unknown.
    """
    if storage not in STORAGES:
        msg = f"unknown storage '{storage}'; choose from {list(STORAGES)}"
        raise LogError(msg)
    try:
        contents = LogFile.from_state_log(log) if isinstance(log, skelarm.StateLog) else read_log(log)
    except LogFileError as error:
        raise LogError(str(error)) from None
    meta, arrays = contents.meta, contents.arrays
    for key in ("time", "q", "dq", "tau"):
        if key not in arrays:
            msg = f"the log has no '{key}' channel; log_to_bag needs time, q, dq and tau"
            raise LogError(msg)
    try:
        output = check_new(output, force)
    except ValueError as error:
        raise LogError(str(error)) from None
    extra = meta.get("extra", {})
    q = np.atleast_2d(arrays["q"].T).T
    num = q.shape[1]
    names = list(joint_names or extra.get("joint_names") or default_joint_names(num))
    if len(names) != num:
        msg = f"{len(names)} joint names {names} for a log of {num} joints; give one name per joint"
        raise LogError(msg)
    origin = int(extra.get("time_origin_ns", 0))
    stamps = origin + np.round(np.asarray(arrays["time"], dtype=np.float64) * NANOSECONDS).astype(np.int64)
    counts: list[int] = []
    write_folder_atomically(
        output, lambda folder: counts.append(_write(folder, arrays, meta, names, stamps, STORAGES[storage]))
    )
    return counts[0]


def _frame_efforts(
    arrays: dict[str, NDArray[Any]], meta: dict[str, Any], tau: NDArray[np.float64]
) -> tuple[NDArray[np.float64], bool]:
    """Return each frame's joint-state effort, and whether ``tau`` is a measurement (then no commands are written).

    A commanded tau[k] acts from frame k on, so frame k's effort is tau[k-1]; a measured
    one is frame k's own, as is the joint states' effort a log keeps beside its commands
    (``measured_effort``).
    """
    if meta.get("extra", {}).get("effort", {}).get("timing") == APPLIED_UNTIL_FRAME:
        return tau, True
    if MEASURED_EFFORT in arrays:
        return np.asarray(arrays[MEASURED_EFFORT], dtype=np.float64).reshape(tau.shape), False
    return np.vstack([np.zeros((1, tau.shape[1])), tau[:-1]]), False


def _write(  # noqa: PLR0917
    path: Path,
    arrays: dict[str, NDArray[Any]],
    meta: dict[str, Any],
    names: list[str],
    stamps: NDArray[np.int64],
    plugin: StoragePlugin,
) -> int:
    store = get_typestore(Stores.ROS2_JAZZY)
    types = store.types
    header = types["std_msgs/msg/Header"]
    joint_state = types[JOINT_STATE_TYPE]
    empty = np.zeros(0)
    q, dq, tau = (np.asarray(arrays[k], dtype=np.float64).reshape(len(stamps), -1) for k in ("q", "dq", "tau"))
    applied, measured = _frame_efforts(arrays, meta, tau)
    velocity, effort = (values if np.isfinite(values).any() else np.zeros((len(stamps), 0)) for values in (dq, applied))
    force = arrays.get("ext_force")
    channels = {
        name: np.asarray(value, dtype=np.float64)
        for name, value in arrays.items()
        if name not in _STATE and not name.startswith("valid_")
    }
    columns = {name: info.get("columns") for name, info in meta.get("channels", {}).items()}
    count = 0
    with Writer(path, version=9, storage_plugin=plugin) as writer:
        conn_state = writer.add_connection(_topic(JOINT_STATES), JOINT_STATE_TYPE, typestore=store)
        conn_cmd = (
            None if measured else writer.add_connection(_topic(JOINT_COMMANDS), JOINT_STATE_TYPE, typestore=store)
        )
        conn_force = (
            writer.add_connection(_topic(TIP_WRENCH), WRENCH_TYPE, typestore=store) if force is not None else None
        )
        conn_channels = {
            name: writer.add_connection(
                _topic(channel_topic(name)),
                POINT_TYPE if name in POINT_CHANNELS and value.ndim == 2 and value.shape[1] == 2 else JOINT_STATE_TYPE,
                typestore=store,
            )
            for name, value in channels.items()
        }
        if "skeleton" in meta:
            skeleton = skelarm.Skeleton.from_dict(meta["skeleton"])
            conn = writer.add_connection(
                _topic(ROBOT_DESCRIPTION),
                STRING_TYPE,
                typestore=store,
                offered_qos_profiles=[qos_profile(transient_local=True, depth=1)],
            )
            text = types[STRING_TYPE](data=skeleton_to_urdf(skeleton, names))
            writer.write(conn, int(stamps[0]), store.serialize_cdr(text, text.__msgtype__))
            count += 1
        vector = types["geometry_msgs/msg/Vector3"]
        for k, stamp in enumerate(stamps.tolist()):
            head = header(stamp=_time(store, stamp), frame_id="")
            msg = joint_state(header=head, name=names, position=q[k], velocity=velocity[k], effort=effort[k])
            writer.write(conn_state, stamp, store.serialize_cdr(msg, msg.__msgtype__))
            count += 1
            if conn_cmd is not None:
                msg = joint_state(header=head, name=names, position=empty, velocity=empty, effort=tau[k])
                writer.write(conn_cmd, stamp, store.serialize_cdr(msg, msg.__msgtype__))
                count += 1
            if conn_force is not None and force is not None:
                wrench = types[WRENCH_TYPE](
                    header=header(stamp=_time(store, stamp), frame_id=BASE_FRAME),
                    wrench=types["geometry_msgs/msg/Wrench"](
                        force=vector(x=float(force[k][0]), y=float(force[k][1]), z=0.0),
                        torque=vector(x=0.0, y=0.0, z=0.0),
                    ),
                )
                writer.write(conn_force, stamp, store.serialize_cdr(wrench, wrench.__msgtype__))
                count += 1
            for name, conn in conn_channels.items():
                value = channels[name][k]
                if conn.msgtype == POINT_TYPE:
                    point = types["geometry_msgs/msg/Point"](x=float(value[0]), y=float(value[1]), z=0.0)
                    out: Any = types[conn.msgtype](header=head, point=point)
                else:
                    values = np.atleast_1d(value)
                    labels = columns.get(name) or (
                        [name] if value.ndim == 0 else names if len(values) == len(names) else None
                    )
                    labels = list(labels or [f"{name}_{i}" for i in range(len(values))])
                    out = joint_state(header=head, name=labels, position=values, velocity=empty, effort=empty)
                writer.write(conn, stamp, store.serialize_cdr(out, out.__msgtype__))
                count += 1
    return count


def _parser() -> argparse.ArgumentParser:
    parser = tool.parser(PROG, "Write a skelarm .sklog.npz as a rosbag2 bag.")
    parser.add_argument("log", help="the .sklog.npz to read")
    parser.add_argument("-o", "--output", required=True, help="the bag directory to create")
    parser.add_argument("--storage", choices=list(STORAGES), default="mcap", help="storage format (default mcap)")
    parser.add_argument("--joints", help="joint names, comma separated (default: the log's, else j1..jN)")
    return parser


def _write_bag(args: argparse.Namespace) -> tool.Done:
    joints = split_names(args.joints) or None
    count = log_to_bag(args.log, args.output, storage=args.storage, joint_names=joints, force=args.force)
    return tool.Done(report=[f"wrote {args.output}: {count} messages ({args.storage})"])


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``log_to_bag`` from the command line; returns the exit code."""
    return tool.run_main(_parser(), argv, _write_bag, outputs=lambda args: [args.output], errors=(LogError,))


if __name__ == "__main__":
    sys.exit(main())
