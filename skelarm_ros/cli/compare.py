# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""``skelarm-ros compare RECORDED SHADOW``: a shadow's commands beside a run's efforts, or a prediction's angles.

A shadow run (launch argument ``replay:=BAG``) plays a recorded run's joint states
into a controller that drives nothing; its commands answer the same states as the
recorded run. This tool sets them beside what the recorded run holds
(:mod:`skelarm_ros.bags.efforts`):

- its **commands**: paired by the stamp of the state each answers;
- its **measured effort**, when it recorded no commands (a real robot's bag usually holds
  only its joint states): each shadow command paired with the effort of the state after
  the one it answers (the package's effort convention, ``docs/interfaces.md``), with the
  lag that aligns the two best found and reported beside it; the first line says so.

It prints per joint the RMS and the largest difference (shadow minus recorded) and when
it happened, with how many of either side found no partner, and writes a plot of both.

With ``--angles`` it sets a hardware run's joint angles (RECORDED) beside a prediction's
(SHADOW: a lockstep ``hardware:=twin`` run, docs/predict.md), both timed from where control
starts, and reports per joint the RMS and largest difference at the time shift that matches
them best, and with none (:mod:`skelarm_ros.bags.angles`).

Either side is a bag or a ``.sklog.npz`` log (``bag_to_log``'s).

This module does not import rclpy; it draws with matplotlib's Agg canvas.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from skelarm_ros import tool
from skelarm_ros.bags.angles import AngleComparison, Angles, compare_angles, load_angles
from skelarm_ros.bags.efforts import (
    MAX_LAG,
    CompareError,
    Comparison,
    Efforts,
    compare_commands,
    compare_efforts,
    load_efforts,
)
from skelarm_ros.interface import NANOSECONDS, split_names
from skelarm_ros.outputs import agg_figure, named_after, write_atomically

if TYPE_CHECKING:
    from collections.abc import Sequence

    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from skelarm_ros.bags.efforts import JointDifference

PROG = "skelarm-ros compare"
__all__ = ["CompareError", "Comparison", "Efforts", "compare_commands", "compare_efforts", "load_commands", "main"]

load_commands = load_efforts
"""One side's efforts from a bag or a log (:func:`skelarm_ros.bags.efforts.load_efforts`)."""
OVER_TIME = 8
"""Joints up to which the differences are drawn over time; more are drawn as RMS and largest per joint."""
PANEL_ROWS = 6
"""Joint panels per column before the joints are laid out in more columns."""


def _grid(figure: Figure, count: int) -> tuple[list[Axes], Axes]:
    """Lay out one small panel per joint (in columns of :data:`PANEL_ROWS`) and a wide panel under them."""
    columns = min(4, math.ceil(count / PANEL_ROWS))
    rows = math.ceil(count / columns)
    grid = figure.add_gridspec(rows + 1, columns, height_ratios=[*([1.0] * rows), 1.4])
    first = figure.add_subplot(grid[0, 0])
    panels = [first] + [figure.add_subplot(grid[k // columns, k % columns], sharex=first) for k in range(1, count)]
    return panels, figure.add_subplot(grid[rows, :])


def _draw_differences(
    ax: Axes, joints: Sequence[JointDifference], difference: np.ndarray, seconds: np.ndarray, label: str
) -> None:
    """Draw ``|label|`` per joint over time, or, for many joints, each joint's RMS and largest."""
    names = [joint.name for joint in joints]
    if len(names) <= OVER_TIME:
        for k, name in enumerate(names):
            ax.plot(seconds, np.abs(difference[:, k]), label=name, lw=0.9)
        if max((joint.max for joint in joints), default=0.0) > 0.0:
            ax.set_yscale("log")
        ax.set_xlabel("time since the first paired state (s)")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", borderaxespad=0.0)
        ax.set_ylabel(f"|{label}|")
        return
    where = np.arange(len(names))
    ax.bar(where - 0.2, [joint.rms for joint in joints], width=0.4, label="RMS")
    ax.bar(where + 0.2, [joint.max for joint in joints], width=0.4, label="largest")
    ax.set_xticks(where, names, rotation=90, fontsize="x-small")
    ax.set_ylabel(label)
    ax.legend(loc="upper right", fontsize="small")


def _figure(count: int) -> tuple[Figure, list[Axes], Axes]:
    """Return a figure with one small panel per joint and a wide one under them."""
    columns = min(4, math.ceil(count / PANEL_ROWS))
    rows = math.ceil(count / columns)
    figure = agg_figure(4.5 + 4.0 * columns, 1.9 * rows + 3.2)
    panels, lower = _grid(figure, count)
    return figure, panels, lower


def _panel(ax: Axes, name: str) -> None:
    ax.set_title(name, fontsize="small")
    ax.tick_params(labelsize="x-small")
    ax.grid(True, alpha=0.4)


def plot_comparison(recorded: Efforts, shadow: Efforts, comparison: Comparison) -> Figure:
    """Draw both sides per joint (small panels) and their differences.

    Returns
    -------
    Figure
        A matplotlib figure on the Agg canvas (``fig.savefig(path)``).
    """
    names = [joint.name for joint in comparison.joints]
    origin = int(comparison.stamps[0])
    figure, panels, lower = _figure(len(names))
    sides = (
        (recorded, f"recorded {recorded.what}", {"lw": 1.6}),
        (shadow, f"shadow {shadow.what}", {"lw": 1.0, "ls": "--"}),
    )
    for ax, name in zip(panels, names, strict=True):
        for side, _, style in sides:
            ax.plot((side.stamps - origin) / NANOSECONDS, side.values[:, side.joints.index(name)], **style)
        _panel(ax, name)
    handles = panels[0].get_lines()[:2]
    figure.legend(
        handles, [f"{label} ({side.source})" for side, label, _ in sides], loc="outside lower center", ncols=2
    )
    seconds = (comparison.stamps - origin) / NANOSECONDS
    _draw_differences(lower, comparison.joints, comparison.difference, seconds, "shadow - recorded")
    lower.grid(True, alpha=0.4)
    lag = "" if comparison.lag is None else f"; best lag {comparison.lag.best} states"
    heading = f"{recorded.path.name} ({recorded.what}) vs shadow {shadow.path.name}"
    figure.suptitle(f"{heading}: largest difference {comparison.largest:.3g}{lag}")
    return figure


def plot_angles(hardware: Angles, prediction: Angles, comparison: AngleComparison) -> Figure:
    """Draw both runs' angles per joint (small panels, the prediction at the best shift) and their differences.

    Returns
    -------
    Figure
        A matplotlib figure on the Agg canvas.
    """
    names = [joint.name for joint in comparison.joints]
    figure, panels, lower = _figure(len(names))
    sides = (
        (hardware, hardware.seconds, "hardware run", {"lw": 1.6}),
        (prediction, prediction.seconds + comparison.shift, "prediction", {"lw": 1.0, "ls": "--"}),
    )
    for ax, name in zip(panels, names, strict=True):
        for side, seconds, _, style in sides:
            ax.plot(seconds, side.values[:, side.joints.index(name)], **style)
        ax.set_xlim(-0.05 * comparison.span, 1.05 * comparison.span + comparison.shift)
        _panel(ax, f"{name} (rad)")
    handles = panels[0].get_lines()[:2]
    labels = [f"{label} ({side.path.name})" for side, _, label, _ in sides]
    figure.legend(handles, labels, loc="outside lower center", ncols=2)
    _draw_differences(lower, comparison.joints, comparison.difference, comparison.seconds, "hardware - prediction")
    lower.set_xlabel("time from where control starts (s)")
    lower.set_ylabel("|hardware - prediction| (rad)")
    lower.grid(True, alpha=0.4)
    figure.suptitle(
        f"{hardware.path.name} (hardware) vs {prediction.path.name} (prediction): RMS {comparison.rms * 1e3:.3g} mrad "
        f"at a shift of {comparison.shift * 1e3:+.1f} ms"
    )
    return figure


def _parser() -> argparse.ArgumentParser:
    parser = tool.parser(
        PROG,
        "Compare a shadow controller's commands (replay:=BAG) with a run's recorded commands, paired by the state "
        "each answers, or, when it recorded none, with its measured effort (the effort of the state after, and the "
        "lag that aligns them best); print per-joint RMS and maximum differences and plot both. With --angles, "
        "compare a hardware run's joint angles with a prediction's (hardware:=twin) at the best time shift.",
    )
    parser.add_argument(
        "recorded", help="the recorded run (with --angles, the hardware run): a bag or a .sklog.npz log"
    )
    parser.add_argument("shadow", help="the shadow run (with --angles, the prediction): a bag or a .sklog.npz log")
    parser.add_argument(
        "--angles",
        action="store_true",
        help="compare the two runs' joint angles (a hardware run and its prediction), timed from where control "
        "starts, at the time shift that matches them best",
    )
    parser.add_argument(
        "-o", "--output", help="image to write (.png, .pdf, .svg); default: SHADOW's name + _compare.png"
    )
    parser.add_argument(
        "--recorded-topic",
        help="the recorded bag's command topic, or the joint-state topic whose measured effort (with --angles: "
        "angles) to compare (default: its commands, else its joint states)",
    )
    parser.add_argument(
        "--shadow-topic", help="the shadow bag's command topic (with --angles: joint-state topic; default: found)"
    )
    parser.add_argument(
        "--command-joints",
        default="",
        help="comma-separated joint names in the order unstamped (Float64MultiArray) commands carry them",
    )
    parser.add_argument(
        "--max-lag",
        type=float,
        default=MAX_LAG,
        help=f"longest lag searched between commands and measured effort (with --angles: longest time shift "
        f"each way), in seconds (default {MAX_LAG})",
    )
    parser.add_argument("--dpi", type=int, default=120, help="resolution of a raster image (default 120)")
    return parser


def _output(args: argparse.Namespace) -> Path:
    """Return the image the command line asks for: ``-o``, else the shadow's name with ``_compare.png`` here."""
    if args.output:
        return Path(args.output)
    return named_after(Path(args.shadow), "_compare.png", (".sklog.npz", ".npz", ".db3", ".mcap", ".bag"), Path.cwd())


def _compare_angles(args: argparse.Namespace, output: Path) -> tool.Done:
    if not (math.isfinite(args.max_lag) and args.max_lag >= 0.0):
        msg = f"--max-lag must be zero or a positive number of seconds, got {args.max_lag}"
        raise CompareError(msg)
    hardware = load_angles(args.recorded, args.recorded_topic)
    prediction = load_angles(args.shadow, args.shadow_topic)
    comparison = compare_angles(hardware, prediction, max_shift=args.max_lag)
    _write(output, plot_angles(hardware, prediction, comparison), args.dpi)
    report = [
        f"hardware:   {hardware.text()}",
        f"prediction: {prediction.text()}",
        comparison.text(),
        f"wrote {output}",
    ]
    return tool.Done(report=report)


def _write(output: Path, figure: Figure, dpi: int) -> None:
    try:
        write_atomically(output, lambda path: figure.savefig(path, dpi=dpi))
    except ValueError as error:  # an unknown image format
        msg = f"cannot write the plot '{output}': {error}"
        raise CompareError(msg) from None


def _compare(args: argparse.Namespace) -> tool.Done:
    output = _output(args)
    if args.angles:
        return _compare_angles(args, output)
    joints = split_names(args.command_joints)
    shadow = load_efforts(args.shadow, args.shadow_topic, joints, commands_only=True)
    # The recorded commands of the shadow's kind (a servo arm's goals beside goals), paired with the states it answered.
    recorded = load_efforts(args.recorded, args.recorded_topic, joints, kind=shadow.kind, answered=shadow.stamps)
    comparison = compare_efforts(recorded, shadow, max_lag=args.max_lag)
    _write(output, plot_comparison(recorded, shadow, comparison), args.dpi)
    if recorded.measured:
        first = (
            f"recorded: {recorded.path} has no commands: comparing the shadow's commands with its measured effort "
            f"({recorded.source}, {len(recorded.stamps)} states)"
        )
    else:
        first = f"recorded: {recorded.path} ({recorded.source}, {len(recorded.stamps)} {recorded.what})"
    report = [
        first,
        f"shadow:   {shadow.path} ({shadow.source}, {len(shadow.stamps)} {shadow.what})",
        comparison.text(),
        f"wrote {output}",
    ]
    return tool.Done(report=report)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``skelarm-ros compare``; returns the exit code (1 with one sentence on bad input)."""
    errors = (ValueError,)  # CompareError, and whatever else a bad file or value raises: one line either way
    return tool.run_main(_parser(), argv, _compare, outputs=lambda args: [_output(args)], errors=errors)


if __name__ == "__main__":
    sys.exit(main())
