# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""``skelarm-ros plot LOG.sklog.npz -o PNG``: draw a recorded run, headless.

One figure: on the left the arm in the plane (its first and last pose, drawn with
skelarm's own plotting, the tip path, the target with its tolerance ring, the
controller's equilibrium path and the external force along the path); on the right
the joint angles (with the reference where recorded), the joint torques, and the
external tip force when the log has one (otherwise the tip's distance to the
target). It reads any skelarm ``StateLog`` (``.sklog.npz``): a
``skelarm.run_scenario`` run, a skelarm GUI recording, or ``bag_to_log`` output,
whose missing samples (NaN) show as gaps.

The arm comes from the skeleton embedded in the log, the target from the scenario
the log embeds (``[extra].source_config``); ``--scenario`` supplies either when the
log lacks it.

This module does not import rclpy; it draws with matplotlib's Agg canvas, so it
needs no display.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import skelarm
from skelarm.plotting import draw_skeleton, draw_target, plot_trajectory

from skelarm_ros import tool
from skelarm_ros.bags.logfile import LogFileError, read_log
from skelarm_ros.outputs import agg_figure, named_after, write_atomically
from skelarm_ros.sim.engine import sync_skeleton
from skelarm_ros.sim.markers import ArmGeometry, Goal, goals_from_config
from skelarm_ros.sim.scenario import ScenarioError, load_arm

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from numpy.typing import NDArray

_FORCE_COLORS = ("tab:red", "tab:blue", "tab:green")
_ARROW_COLOR = "black"
_EQUILIBRIUM_COLOR = "darkorange"
_START_COLOR = "#9bb8d9"  # a light version of skelarm's link blue, for the first pose
_FORCE_ARROWS = 12  # force arrows drawn along the tip path at most
PROG = "skelarm-ros plot"


class PlotError(ValueError):
    """A log that cannot be plotted; the message names the file and the fix."""


def load_log(path: str | Path) -> skelarm.StateLog:
    """Read a ``.sklog.npz`` log that has a ``q`` channel.

    Raises
    ------
    PlotError
        If the file is missing, is not a StateLog, has no frames, or has no ``q``.
    """
    file = Path(path)
    try:
        log = read_log(file).state_log()
    except LogFileError as error:
        raise PlotError(str(error)) from None
    if "q" not in log.channel_names:
        msg = f"log file '{file}' has no 'q' channel (joint angles), only {log.channel_names}; a run needs q to plot"
        raise PlotError(msg)
    if len(log) == 0:
        msg = f"log file '{file}' holds no frames; record a run first"
        raise PlotError(msg)
    return log


def _columns(log: skelarm.StateLog, name: str, width: int, prefix: str) -> list[str]:
    columns = log.channel_meta.get(name, {}).get("columns")
    if isinstance(columns, list) and len(columns) == width:
        return [str(column) for column in columns]
    return [f"{prefix}{k + 1}" for k in range(width)]


def _matrix(log: skelarm.StateLog, name: str) -> NDArray[np.float64] | None:
    if name not in log.channel_names:
        return None
    values = np.asarray(log.channel(name), dtype=np.float64)
    return values.reshape(len(values), -1)


def _safe_color(color: str) -> str:
    from matplotlib.colors import is_color_like

    return color if is_color_like(color) else "purple"


def _draw_plane(
    ax: Axes,
    skeleton: skelarm.Skeleton,
    q: NDArray[np.float64],
    *,
    goals: Sequence[Goal],
    equilibrium: NDArray[np.float64] | None,
    force: NDArray[np.float64] | None,
) -> NDArray[np.float64]:
    """Draw the first and last pose, the tip path, targets, equilibrium and force; return the tip path."""
    finite = np.isfinite(q).all(axis=1)
    rows = np.flatnonzero(finite)
    tips = np.full((len(q), 2), np.nan)
    tips[finite] = ArmGeometry.from_skeleton(skeleton).tip(q[finite])
    if rows.size:
        zeros = np.zeros(skeleton.num_joints)
        sync_skeleton(skeleton, q[rows[0]], zeros)
        draw_skeleton(ax, skeleton, color=_START_COLOR, joint_color=_START_COLOR, title=None, label="start")
        sync_skeleton(skeleton, q[rows[-1]], zeros)
        draw_skeleton(ax, skeleton, linewidth=2.5, title=None, label="end")
    plot_trajectory(ax, tips[:, 0], tips[:, 1], color="tab:red", linewidth=1.5, label="tip path", title=None)
    if equilibrium is not None and equilibrium.shape[1] == 2:
        ax.plot(equilibrium[:, 0], equilibrium[:, 1], "--", color=_EQUILIBRIUM_COLOR, lw=1.2, label="equilibrium")
    for goal in goals:
        label = "target" if goal.active else "other target"
        draw_target(ax, goal.position, color=_safe_color(goal.color), tolerance=goal.tolerance, active=goal.active)
        ax.plot([], [], "o", color=_safe_color(goal.color), label=label, fillstyle="full" if goal.active else "none")
    if force is not None and force.shape[1] == 2:
        pushed = np.flatnonzero(np.isfinite(force).all(axis=1) & (np.hypot(force[:, 0], force[:, 1]) > 0.0) & finite)
        if pushed.size:
            picks = pushed[np.linspace(0, pushed.size - 1, min(_FORCE_ARROWS, pushed.size)).round().astype(int)]
            ax.quiver(
                tips[picks, 0],
                tips[picks, 1],
                force[picks, 0],
                force[picks, 1],
                color=_ARROW_COLOR,
                angles="xy",
                width=0.004,
                label="tip force",
                zorder=5,
            )
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_title("Arm in the plane (base frame)")
    ax.legend(loc="best", fontsize="small")
    return tips


GROUP = 8
"""Joints drawn in one panel at most (their colours stay apart, their legend fits beside the panel)."""


@dataclass(frozen=True)
class JointKind:
    """How the joints of one kind are drawn: titles, axis labels, and the position's conversion."""

    positions: str
    position_label: str
    efforts: str
    effort_label: str
    degrees: bool = False


def _kinds(log: skelarm.StateLog) -> dict[str, JointKind]:
    """Return how joints of each kind are drawn; those of unknown kind in the units the log records."""
    meta = log.channel_meta
    q_unit = meta.get("q", {}).get("unit") or "as recorded"
    tau_unit = meta.get("tau", {}).get("unit") or "as recorded"
    return {
        "revolute": JointKind("Joint angles", "joint angle (deg)", "Joint torques", "torque (N*m)", degrees=True),
        "prismatic": JointKind("Sliding joints: positions", "position (m)", "Sliding joints: forces", "force (N)"),
        "unknown": JointKind("Joint positions", f"position ({q_unit})", "Joint efforts", f"effort ({tau_unit})"),
    }


@dataclass(frozen=True)
class JointGroup:
    """Joints drawn together: one kind, at most :data:`GROUP` of them.

    Attributes
    ----------
    kind : str
        ``revolute``, ``prismatic`` or ``unknown``.
    columns : list[int]
        Their columns in ``q`` and ``tau``.
    names : list[str]
        Their names.
    """

    kind: str
    columns: list[int]
    names: list[str]


def joint_groups(log: skelarm.StateLog, joints: list[str], skeleton: skelarm.Skeleton | None) -> list[JointGroup]:
    """Group a log's joints by kind, in panels of at most :data:`GROUP` (as even as they go).

    A joint's kind is known from the arm (every joint of a skelarm arm is revolute) or
    from the description the log was converted with (``extra.joint_kinds``: revolute and
    continuous joints turn, prismatic ones slide); any other is of unknown kind.
    """
    recorded = log.extra.get("joint_kinds")
    kinds = recorded if isinstance(recorded, dict) else {}
    turning = skeleton is not None and skeleton.num_joints == len(joints)

    def kind(name: str) -> str:
        if turning or kinds.get(name) in ("revolute", "continuous"):
            return "revolute"
        return "prismatic" if kinds.get(name) == "prismatic" else "unknown"

    by_kind: dict[str, list[int]] = {}
    for column, name in enumerate(joints):
        by_kind.setdefault(kind(name), []).append(column)
    groups = []
    for name, columns in by_kind.items():
        parts = math.ceil(len(columns) / GROUP)
        for chunk in np.array_split(np.asarray(columns), parts):
            groups.append(JointGroup(name, chunk.tolist(), [joints[k] for k in chunk.tolist()]))
    return groups


POSITION_OVERLAYS = {"q_ref": ("--", "reference (dashed)"), "goal_position": (":", "servo's goal (dotted)")}
"""Channels drawn over the joint positions in each joint's colour: their line style and legend entry."""


def _draw_positions(
    ax: Axes,
    t: NDArray[np.float64],
    q: NDArray[np.float64],
    overlays: Mapping[str, NDArray[np.float64] | None],
    *,
    group: JointGroup,
    kind: JointKind,
) -> None:
    convert = np.rad2deg if kind.degrees else np.asarray
    for k, (column, name) in enumerate(zip(group.columns, group.names, strict=True)):
        ax.plot(t, convert(q[:, column]), color=f"C{k}", label=name)
    for channel, values in overlays.items():
        if values is None or values.shape != q.shape or not np.isfinite(values[:, group.columns]).any():
            continue
        style, label = POSITION_OVERLAYS[channel]
        for k, column in enumerate(group.columns):
            ax.plot(t, convert(values[:, column]), color=f"C{k}", ls=style, lw=0.9)
        ax.plot([], [], color="gray", ls=style, lw=0.9, label=label)
    ax.set_ylabel(kind.position_label)


def _draw_efforts(
    ax: Axes, t: NDArray[np.float64], tau: NDArray[np.float64] | None, width: int, *, group: JointGroup, kind: JointKind
) -> None:
    if tau is not None and tau.shape[1] == width:
        for k, (column, name) in enumerate(zip(group.columns, group.names, strict=True)):
            ax.plot(t, tau[:, column], color=f"C{k}", label=name)
    else:
        ax.text(0.5, 0.5, "no effort recorded", ha="center", va="center", transform=ax.transAxes)
    ax.set_ylabel(kind.effort_label)


def _draw_force(ax: Axes, t: NDArray[np.float64], force: NDArray[np.float64], columns: list[str]) -> None:
    names = columns if force.shape[1] != 2 else ["fx", "fy"]
    for k, name in enumerate(names):
        ax.plot(t, force[:, k], color=_FORCE_COLORS[k % 3], label=name)
    if force.shape[1] == 2:
        ax.plot(t, np.hypot(force[:, 0], force[:, 1]), color="black", lw=0.9, ls=":", label="|F|")
    ax.set_ylabel("force (N)")
    ax.set_title("External tip force (base frame)")


def _draw_distance(ax: Axes, t: NDArray[np.float64], tips: NDArray[np.float64], goal: Goal) -> None:
    ax.plot(t, np.hypot(*(tips - goal.position).T), color="tab:red", label="tip to target")
    if goal.tolerance:
        ax.axhline(goal.tolerance, color=_safe_color(goal.color), ls="--", lw=1.0, label="tolerance")
    ax.set_ylabel("distance (m)")
    ax.set_title("Tip distance to the target")


def _finish_axes(axes: list[Axes], bottom: list[Axes], legends: list[Axes]) -> None:
    """Grid on every panel, a legend beside those in ``legends``; the time axis labelled on the ``bottom`` ones only."""
    for ax in axes:
        ax.grid(True, alpha=0.4)
        if ax in bottom:
            ax.set_xlabel("time (s)")
        else:
            ax.tick_params(labelbottom=False)
    for ax in legends:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", borderaxespad=0.0)


class _Layout:
    """The panels of a run's figure.

    With one group of joints: the positions above the efforts above the lower panel
    (force or distance), the plane on the left. With several: a row per group, its
    positions beside its efforts (one legend per row: the two share their colours), the
    lower panel under them across both, the plane on the left.
    """

    def __init__(self, groups: int, *, plane: bool, lower: bool) -> None:
        stacked = groups == 1
        rows = (2 if stacked else groups) + int(lower)
        width = (13.0 if plane else 8.0) if stacked else (17.0 if plane else 12.0)
        self.figure = agg_figure(width, 7.5 if stacked else 2.4 * rows + 1.0)
        first = 1 if plane else 0
        ratios = ([1.1] if plane else []) + ([1.0] if stacked else [1.0, 1.0])
        grid = self.figure.add_gridspec(rows, len(ratios), width_ratios=ratios)
        top = self.figure.add_subplot(grid[0, first])
        cell = [(0, first), (1, first)] if stacked else [(g, first + side) for g in range(groups) for side in (0, 1)]
        axes = [top] + [self.figure.add_subplot(grid[r, c], sharex=top) for r, c in cell[1:]]
        self.joint_axes = list(zip(axes[::2], axes[1::2], strict=True))
        self.lower = self.figure.add_subplot(grid[rows - 1, first:], sharex=top) if lower else None
        self.plane = self.figure.add_subplot(grid[:, 0]) if plane else None
        self.series = axes + ([self.lower] if self.lower is not None else [])
        self.bottom = [self.lower] if self.lower is not None else list(self.joint_axes[-1][1 if stacked else 0 :])
        labelled = axes if stacked else [effort for _, effort in self.joint_axes]
        self.legends = labelled + ([self.lower] if self.lower is not None else [])


def plot_log(
    log: skelarm.StateLog,
    *,
    skeleton: skelarm.Skeleton | None = None,
    goals: Sequence[Goal] = (),
    title: str | None = None,
) -> Figure:
    """Draw a run.

    Parameters
    ----------
    log : skelarm.StateLog
        The run; needs a ``q`` channel, uses ``tau``, ``q_ref``, ``goal_position`` (a servo's
        goals), ``ext_force`` and ``equilibrium`` where present.
    skeleton : skelarm.Skeleton | None, optional
        The arm; ``None`` draws no plane view (joint plots only).
    goals : Sequence[Goal], optional
        Targets to draw in the plane (and, with no force channel, the tip's distance to).
    title : str | None, optional
        What the run is (e.g. the log's file name), put before the producer in the title.

    Returns
    -------
    Figure
        A matplotlib figure on the Agg canvas (``fig.savefig(path)``).
    """
    t = log.times
    q = _matrix(log, "q")
    assert q is not None  # load_log checked it
    tau = _matrix(log, "tau")
    force = _matrix(log, "ext_force")
    joints = _columns(log, "q", q.shape[1], "j")
    plane = skeleton is not None and skeleton.num_joints == q.shape[1]
    active = [goal for goal in goals if goal.active]
    lower = "force" if force is not None else ("distance" if plane and active else None)
    groups = joint_groups(log, joints, skeleton)
    layout = _Layout(len(groups), plane=plane, lower=lower is not None)
    kinds = _kinds(log)
    overlays = {name: _matrix(log, name) for name in POSITION_OVERLAYS}
    for group, (position_ax, effort_ax) in zip(groups, layout.joint_axes, strict=True):
        kind = kinds[group.kind]
        _draw_positions(position_ax, t, q, overlays, group=group, kind=kind)
        _draw_efforts(effort_ax, t, tau, q.shape[1], group=group, kind=kind)
        many = f" ({len(group.names)} joints)" if len(groups) > 1 else ""
        position_ax.set_title(kind.positions + many)
        effort_ax.set_title(kind.efforts + many)
    tips = None
    if plane:
        assert skeleton is not None and layout.plane is not None
        equilibrium = _matrix(log, "equilibrium")
        tips = _draw_plane(layout.plane, skeleton, q, goals=goals, equilibrium=equilibrium, force=force)
    if lower == "force":
        assert force is not None and layout.lower is not None
        _draw_force(layout.lower, t, force, _columns(log, "ext_force", force.shape[1], "f"))
    elif lower == "distance":
        assert tips is not None and layout.lower is not None
        _draw_distance(layout.lower, t, tips, active[0])
    _finish_axes(layout.series, layout.bottom, layout.legends)
    figure = layout.figure
    producer = log.producer or "unknown producer"
    heading = f"{title}: {producer}" if title else producer
    figure.suptitle(f"{heading}, {len(log)} frames over {t[-1] - t[0]:.3g} s")
    return figure


def _parser() -> argparse.ArgumentParser:
    parser = tool.parser(
        PROG,
        "Draw a recorded run (.sklog.npz): the arm and tip path with the target, joint angles, "
        "torques, and the external force where present.",
    )
    parser.add_argument("log", help="the run, a skelarm StateLog (.sklog.npz)")
    parser.add_argument("-o", "--output", help="image to write (.png, .pdf, .svg); default: LOG with .png")
    parser.add_argument(
        "--scenario",
        help="scenario or robot TOML for the arm and target when the log does not embed them",
    )
    parser.add_argument("--dpi", type=int, default=120, help="resolution of a raster image (default 120)")
    return parser


def arm_and_goals(log: skelarm.StateLog, scenario: str | Path | None) -> tuple[skelarm.Skeleton | None, list[Goal]]:
    """Return the arm and the targets to draw: the log's own first, then ``scenario``'s.

    Parameters
    ----------
    log : skelarm.StateLog
        The loaded log; its embedded arm and ``source_config`` task come first.
    scenario : str or Path or None
        A scenario (name or file) that gives what the log lacks (``--scenario``), or ``None``.

    Returns
    -------
    tuple
        The skeleton (``None`` when neither gives one) and the goals (empty when neither gives a task).
    """
    skeleton = None
    with contextlib.suppress(ValueError, TypeError, KeyError):  # no embedded skeleton
        skeleton = log.build_skeleton()
    config = log.extra.get("source_config")
    goals = goals_from_config(config) if isinstance(config, dict) else []
    if scenario:
        arm = load_arm(scenario)
        skeleton = skeleton or arm.skeleton
        goals = goals or goals_from_config(arm.config)
    return skeleton, goals


def missing_notes(skeleton: skelarm.Skeleton | None, goals: Sequence[Goal]) -> list[str]:
    """Say what the plot cannot show for want of the arm or the task, and how to give them."""
    notes = []
    if skeleton is None:
        notes.append("the log embeds no skeleton, so the arm and its tip path are not drawn; pass --scenario")
    if not any(goal.active for goal in goals):
        notes.append(
            "the log carries no task with a target (a scenario's [task]), so no target, tolerance ring or "
            "distance panel; pass --scenario, or convert the bag with bag_to_log --scenario"
        )
    return notes


def draw(log_path: str | Path, output: Path, *, scenario: str | Path | None = None, dpi: int = 120) -> list[str]:
    """Draw the log at ``log_path`` into the image ``output``; return what the picture cannot show, and why.

    The image is written through a temporary file (:func:`skelarm_ros.outputs.write_atomically`):
    an error leaves the old one, or none. Whether ``output`` may be replaced is the
    caller's to decide (:func:`skelarm_ros.outputs.check_new`).

    Parameters
    ----------
    log_path : str | Path
        The run, a ``.sklog.npz`` with a ``q`` channel.
    output : Path
        The image to write; its suffix gives the format (``.png``, ``.pdf``, ``.svg``).
    scenario : str | Path | None, optional
        A scenario or robot TOML (path or bundled name) for the arm and the target when
        the log does not embed them.
    dpi : int, optional
        Resolution of a raster image.

    Returns
    -------
    list[str]
        Notes, one sentence each (:func:`missing_notes`); empty when the picture shows everything.

    Raises
    ------
    PlotError
        If the log cannot be read or drawn, or the image's format is unknown.
    ScenarioError
        If ``scenario`` cannot be read.
    """
    try:
        log = load_log(log_path)
        skeleton, goals = arm_and_goals(log, scenario)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN stretches of a bag's log
            figure = plot_log(log, skeleton=skeleton, goals=goals, title=Path(log_path).name)
        write_atomically(output, lambda path: figure.savefig(path, dpi=dpi))
    except (PlotError, ScenarioError):
        raise
    except ValueError as error:  # an unusable [task] table, an unknown image format
        msg = f"cannot draw '{log_path}' to '{output}': {error}"
        raise PlotError(msg) from None
    return missing_notes(skeleton, goals)


def _output(args: argparse.Namespace) -> Path:
    """Return the image the command line asks for: ``-o``, else the log's name with ``.png``."""
    return Path(args.output) if args.output else named_after(Path(args.log), ".png", (".sklog.npz", ".npz"))


def _draw(args: argparse.Namespace) -> tool.Done:
    output = _output(args)
    notes = draw(args.log, output, scenario=args.scenario, dpi=args.dpi)
    return tool.Done(report=[f"wrote {output}"], notes=notes)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``skelarm-ros plot``; returns the exit code."""
    return tool.run_main(
        _parser(), argv, _draw, outputs=lambda args: [_output(args)], errors=(PlotError, ScenarioError)
    )


if __name__ == "__main__":
    sys.exit(main())
