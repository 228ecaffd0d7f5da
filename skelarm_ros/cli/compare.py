# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""``skelarm-ros compare RECORDED SHADOW``: a run's recorded commands beside a shadow controller's.

A shadow run (launch argument ``replay:=BAG``) plays a recorded run's joint states
into a controller that drives nothing; its commands answer the same states as the
recorded ones. This tool pairs the two sets of commands by the stamp of the state
each answers, and prints per joint the RMS and the largest difference (shadow minus
recorded, N*m) and when it happened, with how many commands found no partner; it
writes a plot of both.

Either side is a bag or a ``.sklog.npz`` log (``bag_to_log``'s). From a bag the
commands are ``joint_commands`` (``sensor_msgs/JointState`` effort by name, stamped
with the state they answer), else ``effort_controller/commands``
(``std_msgs/Float64MultiArray``, unstamped: each is paired with the state logged last
before it, its values in ``--command-joints`` order). From a log, ``tau`` at each
frame's stamp (``time`` plus ``extra.time_origin_ns``).

This module does not import rclpy; it draws with matplotlib's Agg canvas.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from skelarm_ros.bags.reader import Bag, BagError, open_bag
from skelarm_ros.interface import (
    EFFORT_COMMANDS,
    FLOAT_ARRAY_TYPE,
    JOINT_COMMANDS,
    JOINT_STATE_TYPE,
    JOINT_STATES,
    NANOSECONDS,
    default_joint_names,
    sibling,
    split_names,
    stamp_to_nanoseconds,
)
from skelarm_ros.outputs import add_force_option, agg_figure, named_after, refused, write_atomically

if TYPE_CHECKING:
    from collections.abc import Sequence

    from matplotlib.figure import Figure
    from numpy.typing import NDArray

PROG = "skelarm-ros compare"


class CompareError(ValueError):
    """Commands that cannot be compared; the message names the file and what would be right."""


@dataclass
class Commands:
    """One side's effort commands, by the stamp of the state each answers.

    Attributes
    ----------
    path : Path
        The bag or log read.
    source : str
        Where in it the commands came from (a topic, or ``tau``).
    joints : list[str]
        The column names.
    stamps : NDArray[np.int64]
        ``(n,)`` stamps in ns, increasing, each once.
    values : NDArray[np.float64]
        ``(n, len(joints))`` efforts in N*m (NaN where a joint was not commanded).
    """

    path: Path
    source: str
    joints: list[str]
    stamps: NDArray[np.int64]
    values: NDArray[np.float64]


def _unique(stamps: list[int], rows: list[NDArray[np.float64]], width: int) -> tuple[Any, Any]:
    """Sort by stamp; of several commands for one state keep the last one sent."""
    order = np.argsort(np.asarray(stamps, dtype=np.int64), kind="stable")
    sorted_stamps = np.asarray(stamps, dtype=np.int64)[order]
    values = np.asarray(rows, dtype=np.float64).reshape(len(rows), width)[order]
    keep = np.append(sorted_stamps[1:] != sorted_stamps[:-1], True) if len(sorted_stamps) else np.zeros(0, bool)
    return sorted_stamps[keep], values[keep]


def _choose_topic(bag: Bag, topic: str | None) -> str:
    """Return the command topic: the one given, else the only joint_commands or effort_controller/commands."""
    if topic:
        found = [name for name in bag.topics if name in (topic, "/" + topic)]
        if not found:
            msg = f"bag '{bag.path}' has no topic '{topic}'; it has {list(bag.topics)}"
            raise CompareError(msg)
        return found[0]
    for relative, msgtype in ((JOINT_COMMANDS, JOINT_STATE_TYPE), (EFFORT_COMMANDS, FLOAT_ARRAY_TYPE)):
        found = [
            name
            for name, summary in bag.topics.items()
            if (name == "/" + relative or name.endswith("/" + relative)) and summary.msgtype == msgtype
        ]
        if len(found) > 1:
            msg = (
                f"bag '{bag.path}' has several command topics {found}; "
                "choose one with --recorded-topic or --shadow-topic"
            )
            raise CompareError(msg)
        if found:
            return found[0]
    msg = (
        f"bag '{bag.path}' has no {JOINT_COMMANDS} or {EFFORT_COMMANDS} topic, so no commands to compare; "
        f"it has {list(bag.topics)}"
    )
    raise CompareError(msg)


STAMP_FIELDS = ("header.stamp.sec", "header.stamp.nanosec")


def _check_fields(bag: Bag, topic: str, paths: Sequence[str]) -> None:
    """Refuse a topic whose stored definition lacks a field read from it (:meth:`Bag.lacking`)."""
    problem = bag.lacking(topic, paths)
    if problem is not None:
        msg = f"{problem}; record '{topic}' again to compare it"
        raise CompareError(msg)


def _stamped_commands(bag: Bag, topic: str, joints: Sequence[str]) -> Commands:
    """``joint_commands``: effort by name, stamped with the state answered."""
    _check_fields(bag, topic, (*STAMP_FIELDS, "name", "effort"))
    names = list(joints)
    stamps: list[int] = []
    rows: list[NDArray[np.float64]] = []
    for _, _, _, message in bag.messages([topic]):
        if not names:
            names = list(message.name)
        efforts = dict(zip(message.name, np.asarray(message.effort, dtype=np.float64), strict=False))
        rows.append(np.array([efforts.get(name, np.nan) for name in names], dtype=np.float64))
        stamp = message.header.stamp
        stamps.append(stamp_to_nanoseconds(stamp.sec, stamp.nanosec))
    stamp_array, values = _unique(stamps, rows, len(names))
    return Commands(bag.path, topic, names, stamp_array, values)


def _array_commands(bag: Bag, topic: str, joints: Sequence[str]) -> Commands:
    """``effort_controller/commands``: each paired with the state logged last before it."""
    states = sibling(topic.removesuffix("/commands"), JOINT_STATES)
    if states not in bag.topics:
        msg = (
            f"bag '{bag.path}' has unstamped commands on '{topic}' but no '{states}' to pair them with; "
            "record joint_states with them"
        )
        raise CompareError(msg)
    _check_fields(bag, topic, ("data",))
    _check_fields(bag, states, STAMP_FIELDS)
    stamps: list[int] = []
    rows: list[NDArray[np.float64]] = []
    state: int | None = None
    width = len(joints)
    for name, _, _, message in bag.messages([topic, states]):
        if name == states:
            state = stamp_to_nanoseconds(message.header.stamp.sec, message.header.stamp.nanosec)
            continue
        data = np.asarray(message.data, dtype=np.float64)
        if state is None:
            continue  # answers no recorded state
        width = width or len(data)
        if len(data) != width:
            continue  # of another arm: cannot be put in columns
        stamps.append(state)
        rows.append(data)
    names = list(joints) or default_joint_names(width)
    stamp_array, values = _unique(stamps, rows, len(names))
    return Commands(bag.path, f"{topic} (paired with {states})", names, stamp_array, values)


def _log_commands(path: Path) -> Commands:
    """Return a log's ``tau`` at each frame's stamp."""
    from skelarm_ros.cli.plot import PlotError, load_log

    try:
        log = load_log(path)
    except PlotError as error:
        raise CompareError(str(error)) from None
    if "tau" not in log.channel_names:
        msg = f"log '{path}' has no 'tau' channel (joint torques), so no commands to compare"
        raise CompareError(msg)
    tau = np.asarray(log.channel("tau"), dtype=np.float64).reshape(len(log), -1)
    origin = int(log.extra.get("time_origin_ns", 0))
    stamps = origin + np.round(np.asarray(log.times, dtype=np.float64) * NANOSECONDS).astype(np.int64)
    names = [str(name) for name in log.extra.get("joint_names", [])] or default_joint_names(tau.shape[1])
    keep = np.isfinite(tau).any(axis=1)
    return Commands(path, "tau", names[: tau.shape[1]], stamps[keep], tau[keep])


def load_commands(path: str | Path, topic: str | None = None, command_joints: Sequence[str] = ()) -> Commands:
    """Read one side's commands from a bag or a ``.sklog.npz`` log.

    Parameters
    ----------
    path : str | Path
        A bag (any format :func:`skelarm_ros.bags.reader.open_bag` reads) or a log.
    topic : str | None, optional
        The command topic of a bag; ``None`` finds ``joint_commands`` or
        ``effort_controller/commands``.
    command_joints : Sequence[str], optional
        The joint names, in the order a ``Float64MultiArray`` command carries them
        (``j1 ... jN`` when empty); for ``joint_commands``, the columns to keep.

    Raises
    ------
    CompareError
        If the file cannot be read or holds no commands (one sentence).
    """
    file = Path(path)
    if file.name.endswith(".npz"):
        commands = _log_commands(file)
    else:
        try:
            with open_bag(file) as bag:
                chosen = _choose_topic(bag, topic)
                reader = _stamped_commands if bag.topics[chosen].msgtype == JOINT_STATE_TYPE else _array_commands
                commands = reader(bag, chosen, command_joints)
        except BagError as error:
            raise CompareError(str(error)) from None
    if len(commands.stamps) == 0:
        msg = f"'{file}' holds no commands on {commands.source}"
        raise CompareError(msg)
    return commands


@dataclass(frozen=True)
class JointDifference:
    """How one joint's shadow commands differ from the recorded ones (shadow minus recorded, N*m)."""

    name: str
    rms: float
    max: float
    at: float
    """Seconds after the first paired state at which :attr:`max` happened."""


@dataclass
class Comparison:
    """Recorded and shadow commands paired by stamp.

    Attributes
    ----------
    joints : list[JointDifference]
        Per joint, in the recorded order.
    stamps : NDArray[np.int64]
        ``(n,)`` the paired stamps (ns).
    difference : NDArray[np.float64]
        ``(n, joints)`` shadow minus recorded at the paired stamps.
    recorded_only, shadow_only : int
        Commands of one side with no command of the other for the same state.
    """

    joints: list[JointDifference]
    stamps: NDArray[np.int64]
    difference: NDArray[np.float64]
    recorded_only: int
    shadow_only: int

    @property
    def largest(self) -> float:
        """The largest difference over every joint (N*m)."""
        return max((joint.max for joint in self.joints), default=0.0)

    def text(self) -> str:
        """Return the table the tool prints."""
        lines = [
            f"paired {len(self.stamps)} commands by the stamp of the state they answer; "
            f"{self.recorded_only} recorded without a shadow command, {self.shadow_only} shadow without a recorded one",
            f"{'joint':<12} {'RMS (N*m)':>12} {'max (N*m)':>12} {'at (s)':>10}",
        ]
        lines += [f"{j.name:<12} {j.rms:>12.4g} {j.max:>12.4g} {j.at:>10.4f}" for j in self.joints]
        return "\n".join(lines)


def compare_commands(recorded: Commands, shadow: Commands) -> Comparison:
    """Pair the two sides by stamp and measure each joint's difference.

    Raises
    ------
    CompareError
        If the sides share no joint name or no stamp.
    """
    joints = [name for name in recorded.joints if name in shadow.joints]
    if not joints:
        msg = (
            f"the recorded commands name the joints {recorded.joints} and the shadow's {shadow.joints}: none in "
            "common; pass --command-joints with the names of the unstamped side"
        )
        raise CompareError(msg)
    stamps, left, right = np.intersect1d(recorded.stamps, shadow.stamps, assume_unique=True, return_indices=True)
    if len(stamps) == 0:
        msg = (
            f"no shadow command answers a state the recorded commands answer ('{recorded.path}' and "
            f"'{shadow.path}'); was the shadow run replayed from this recording?"
        )
        raise CompareError(msg)
    columns_r = [recorded.joints.index(name) for name in joints]
    columns_s = [shadow.joints.index(name) for name in joints]
    difference = shadow.values[right][:, columns_s] - recorded.values[left][:, columns_r]
    seconds = (stamps - stamps[0]) / NANOSECONDS
    per_joint = []
    for k, name in enumerate(joints):
        column = np.abs(difference[:, k])
        finite = np.isfinite(column)
        worst = int(np.argmax(np.where(finite, column, -1.0))) if finite.any() else 0
        per_joint.append(
            JointDifference(
                name,
                float(np.sqrt(np.mean(np.square(column[finite])))) if finite.any() else float("nan"),
                float(column[worst]) if finite.any() else float("nan"),
                float(seconds[worst]),
            )
        )
    return Comparison(
        per_joint, stamps, difference, len(recorded.stamps) - len(stamps), len(shadow.stamps) - len(stamps)
    )


def plot_comparison(recorded: Commands, shadow: Commands, comparison: Comparison) -> Figure:
    """Draw both sides' commands per joint and their difference over time.

    Returns
    -------
    Figure
        A matplotlib figure on the Agg canvas (``fig.savefig(path)``).
    """
    names = [joint.name for joint in comparison.joints]
    origin = int(comparison.stamps[0])
    figure = agg_figure(9.0, 2.2 * (len(names) + 1))
    axes = figure.subplots(len(names) + 1, 1, sharex=True, squeeze=False)[:, 0]
    for k, name in enumerate(names):
        ax = axes[k]
        for side, style in ((recorded, {"lw": 1.6}), (shadow, {"lw": 1.0, "ls": "--"})):
            column = side.joints.index(name)
            label = f"{'recorded' if side is recorded else 'shadow'} ({side.source})"
            ax.plot((side.stamps - origin) / NANOSECONDS, side.values[:, column], label=label, **style)
        ax.set_ylabel(f"{name} (N*m)")
        ax.grid(True, alpha=0.4)
        ax.legend(loc="upper right", fontsize="small")
    seconds = (comparison.stamps - origin) / NANOSECONDS
    ax = axes[-1]
    for k, name in enumerate(names):
        ax.plot(seconds, np.abs(comparison.difference[:, k]), label=name, lw=0.9)
    if comparison.largest > 0.0:
        ax.set_yscale("log")
    ax.set_ylabel("|shadow - recorded| (N*m)")
    ax.set_xlabel("time since the first paired state (s)")
    ax.grid(True, alpha=0.4)
    ax.legend(loc="upper right", fontsize="small")
    heading = f"{recorded.path.name} vs shadow {shadow.path.name}"
    figure.suptitle(f"{heading}: largest difference {comparison.largest:.3g} N*m")
    return figure


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Compare a run's recorded effort commands with a shadow controller's (replay:=BAG), "
        "paired by the state each answers; print per-joint RMS and maximum differences and plot both.",
    )
    parser.add_argument("recorded", help="the recorded run: a bag or a .sklog.npz log")
    parser.add_argument("shadow", help="the shadow run: a bag or a .sklog.npz log")
    parser.add_argument(
        "-o", "--output", help="image to write (.png, .pdf, .svg); default: SHADOW's name + _compare.png"
    )
    parser.add_argument("--recorded-topic", help="the recorded bag's command topic (default: found)")
    parser.add_argument("--shadow-topic", help="the shadow bag's command topic (default: found)")
    parser.add_argument(
        "--command-joints",
        default="",
        help="comma-separated joint names in the order unstamped (Float64MultiArray) commands carry them",
    )
    parser.add_argument("--dpi", type=int, default=120, help="resolution of a raster image (default 120)")
    add_force_option(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``skelarm-ros compare``; returns the exit code (1 with one sentence on bad input)."""
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    suffixes = (".sklog.npz", ".npz", ".db3", ".mcap", ".bag")
    output = Path(args.output) if args.output else named_after(Path(args.shadow), "_compare.png", suffixes, Path.cwd())
    joints = split_names(args.command_joints)
    if refused(PROG, [output], args.force):
        return 1
    try:
        recorded = load_commands(args.recorded, args.recorded_topic, joints)
        shadow = load_commands(args.shadow, args.shadow_topic, joints)
        comparison = compare_commands(recorded, shadow)
        print(f"recorded: {recorded.path} ({recorded.source}, {len(recorded.stamps)} commands)")
        print(f"shadow:   {shadow.path} ({shadow.source}, {len(shadow.stamps)} commands)")
        print(comparison.text())
        figure = plot_comparison(recorded, shadow, comparison)
        write_atomically(output, lambda path: figure.savefig(path, dpi=args.dpi))
    except CompareError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 1
    except ValueError as error:  # an unknown image format
        print(f"{PROG}: error: cannot write the plot '{output}': {error}", file=sys.stderr)
        return 1
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
