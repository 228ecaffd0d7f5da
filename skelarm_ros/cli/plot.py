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
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import skelarm
from skelarm.plotting import draw_skeleton, draw_target, plot_trajectory

from skelarm_ros.bags.logfile import LogFileError, read_log
from skelarm_ros.outputs import add_force_option, agg_figure, named_after, refused, write_atomically
from skelarm_ros.sim.engine import sync_skeleton
from skelarm_ros.sim.markers import ArmGeometry, Goal, goals_from_config
from skelarm_ros.sim.scenario import ScenarioError, load_arm

if TYPE_CHECKING:
    from collections.abc import Sequence

    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from numpy.typing import NDArray

_FORCE_COLORS = ("tab:red", "tab:blue", "tab:green")
_ARROW_COLOR = "black"
_EQUILIBRIUM_COLOR = "darkorange"
_START_COLOR = "#9bb8d9"  # a light version of skelarm's link blue, for the first pose
_FORCE_ARROWS = 12  # force arrows drawn along the tip path at most


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


def _draw_series(ax: Axes, t: NDArray[np.float64], values: NDArray[np.float64], names: list[str], **style: Any) -> None:
    for k, name in enumerate(names):
        ax.plot(t, values[:, k], color=f"C{k % 10}", label=name, **style)


def _draw_angles(
    ax: Axes, t: NDArray[np.float64], q: NDArray[np.float64], q_ref: NDArray[np.float64] | None, joints: list[str]
) -> None:
    _draw_series(ax, t, np.rad2deg(q), joints)
    if q_ref is not None and q_ref.shape == q.shape:
        _draw_series(ax, t, np.rad2deg(q_ref), [f"{name} ref" for name in joints], ls="--", lw=0.9)
    ax.set_ylabel("joint angle (deg)")
    ax.set_title("Joint angles")


def _draw_torques(
    ax: Axes, t: NDArray[np.float64], tau: NDArray[np.float64] | None, width: int, joints: list[str]
) -> None:
    if tau is not None and tau.shape[1] == width:
        _draw_series(ax, t, tau, joints)
    else:
        ax.text(0.5, 0.5, "no torque recorded", ha="center", va="center", transform=ax.transAxes)
    ax.set_ylabel("torque (N*m)")
    ax.set_title("Joint torques")


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


def _finish_axes(axes: list[Axes]) -> None:
    """Grid and legend on every panel; the time axis labelled on the last only."""
    for ax in axes:
        ax.grid(True, alpha=0.4)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", borderaxespad=0.0)
    axes[-1].set_xlabel("time (s)")
    for ax in axes[:-1]:
        ax.tick_params(labelbottom=False)


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
        The run; needs a ``q`` channel, uses ``tau``, ``q_ref``, ``ext_force`` and
        ``equilibrium`` where present.
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
    q_ref = _matrix(log, "q_ref")
    joints = _columns(log, "q", q.shape[1], "j")
    plane = skeleton is not None and skeleton.num_joints == q.shape[1]
    active = [goal for goal in goals if goal.active]
    lower = "force" if force is not None else ("distance" if plane and active else None)
    rows = 3 if lower else 2
    figure = agg_figure(*((13.0, 7.5) if plane else (8.0, 7.5)))
    grid = figure.add_gridspec(rows, 2 if plane else 1, width_ratios=[1.1, 1.0] if plane else None)
    column = 1 if plane else 0
    angle_ax = figure.add_subplot(grid[0, column])
    axes = [angle_ax] + [figure.add_subplot(grid[row, column], sharex=angle_ax) for row in range(1, rows)]

    _draw_angles(angle_ax, t, q, q_ref, joints)
    _draw_torques(axes[1], t, tau, q.shape[1], joints)
    tips = None
    if plane:
        assert skeleton is not None
        equilibrium = _matrix(log, "equilibrium")
        tips = _draw_plane(
            figure.add_subplot(grid[:, 0]), skeleton, q, goals=goals, equilibrium=equilibrium, force=force
        )
    if lower == "force":
        assert force is not None
        _draw_force(axes[2], t, force, _columns(log, "ext_force", force.shape[1], "f"))
    elif lower == "distance":
        assert tips is not None
        _draw_distance(axes[2], t, tips, active[0])
    _finish_axes(axes)
    producer = log.producer or "unknown producer"
    heading = f"{title}: {producer}" if title else producer
    figure.suptitle(f"{heading}, {len(log)} frames over {t[-1] - t[0]:.3g} s")
    return figure


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skelarm-ros plot",
        description="Draw a recorded run (.sklog.npz): the arm and tip path with the target, joint angles, "
        "torques, and the external force where present.",
    )
    parser.add_argument("log", help="the run, a skelarm StateLog (.sklog.npz)")
    parser.add_argument("-o", "--output", help="image to write (.png, .pdf, .svg); default: LOG with .png")
    parser.add_argument(
        "--scenario",
        help="scenario or robot TOML for the arm and target when the log does not embed them",
    )
    parser.add_argument("--dpi", type=int, default=120, help="resolution of a raster image (default 120)")
    add_force_option(parser)
    return parser


def _arm_and_goals(log: skelarm.StateLog, scenario: str | None) -> tuple[skelarm.Skeleton | None, list[Goal]]:
    """Return the skeleton and targets: the log's own first, then ``--scenario``'s."""
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


def main(argv: list[str] | None = None) -> int:
    """Run ``skelarm-ros plot``; returns the exit code."""
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    output = Path(args.output) if args.output else named_after(Path(args.log), ".png", (".sklog.npz", ".npz"))
    if refused("skelarm-ros plot", [output], args.force):
        return 1
    try:
        log = load_log(args.log)
        skeleton, goals = _arm_and_goals(log, args.scenario)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN stretches of a bag's log
            figure = plot_log(log, skeleton=skeleton, goals=goals, title=Path(args.log).name)
        write_atomically(output, lambda path: figure.savefig(path, dpi=args.dpi))
    except (PlotError, ScenarioError) as error:
        print(f"skelarm-ros plot: error: {error}", file=sys.stderr)
        return 1
    except ValueError as error:  # an unusable [task] table, an unknown image format
        print(f"skelarm-ros plot: error: cannot draw '{args.log}' to '{output}': {error}", file=sys.stderr)
        return 1
    for note in missing_notes(skeleton, goals):
        print(f"skelarm-ros plot: note: {note}", file=sys.stderr)
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
