# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""What a tuning writes: the tuned scenario's ``[tuning]`` table, the picture of the reach before and after, the lines.

The tuned scenario is the scenario's tables with the winner's gains in ``[controller]`` (its
type kept) and a ``[tuning]`` table (skelarm and this package's nodes do not read it): the
objective in words, the score before and after with every figure, the gains before, the
trials, seed, workers, robust samples and the time taken, and what the check over ROS found.
The picture (:func:`figure`, on the Agg canvas) has the tip's distance to the target over
time and the tip's path, before and after, on the twin with its driver's delay and the longest delay sampled.

This module imports neither rclpy nor Optuna.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from skelarm_ros import __version__
from skelarm_ros.outputs import agg_figure
from skelarm_ros.tuning.objective import OBJECTIVE, tip_positions

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from matplotlib.figure import Figure

    from skelarm_ros.tuning.evaluate import Evaluation, Evaluator, Run

TABLE = "tuning"


def gains_text(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """Return each gain's change in one phrase (``k0 150 -> 57.1, zeta1 0.2 -> 0.216``)."""

    def shown(value: Any) -> str:
        if isinstance(value, list):
            return "[" + ", ".join(f"{item:.4g}" for item in value) + "]"
        return f"{value:.4g}"

    return ", ".join(f"{key} {shown(before[key])} -> {shown(after[key])}" for key in after)


def tuning_table(
    *,
    before: Evaluation,
    after: Evaluation,
    evaluator: Evaluator,
    source: str,
    trials: int,
    seed: int,
    workers: int,
    storage: str,
    study: str,
    seconds: float,
    checked: str,
) -> dict[str, Any]:
    """Return the ``[tuning]`` table of a tuned scenario (see the module), ``source`` the scenario as named."""
    samples = evaluator.samples
    return {
        "tool": f"skelarm_ros tune {__version__}",
        "source": source,
        "objective": OBJECTIVE,
        "score_before": before.worst.value,
        "score_after": after.worst.value,
        "feasible_before": before.worst.feasible,
        "feasible_after": after.worst.feasible,
        "trials": trials,
        "seed": seed,
        "workers": workers,
        "storage": storage or "memory",
        "study": study,
        "robust_twins": samples.twins,
        "robust_delays": samples.delays,
        "robust_samples": samples.labels(),
        "seconds": round(seconds, 3),
        "checked_over_ros": checked,
        "gains_before": dict(before.gains),
        "before": {**before.worst.table(), "worst_sample": before.worst_sample},
        "after": {**after.worst.table(), "worst_sample": after.worst_sample},
    }


def figure(evaluator: Evaluator, runs: Mapping[str, Sequence[tuple[str, Run]]], title: str) -> Figure:
    """Draw the reach before and after: the tip's distance to the target over time, and its path.

    Parameters
    ----------
    evaluator : Evaluator
        The tuning's evaluator (the arm, target and tolerance).
    runs : Mapping[str, Sequence[tuple[str, Run]]]
        ``before`` and ``after``: runs on samples, each with its sample's label.
    title : str
        The figure's title.
    """
    fig = agg_figure(11.0, 4.6)
    error_axes, path_axes = fig.subplots(1, 2, width_ratios=[1.7, 1.0])
    colours = {"before": "tab:red", "after": "tab:blue"}
    styles = ["-", "--", ":", "-."]
    for name, chosen in runs.items():
        for index, (label, run) in enumerate(chosen):
            twin = run.twin
            tips = tip_positions(evaluator.arm.skeleton, twin.position)
            error = np.hypot(tips[:, 0] - evaluator.target[0], tips[:, 1] - evaluator.target[1])
            style = styles[index % len(styles)]
            text = f"{name}: {label}" + (" (stopped)" if run.stopped else "")
            error_axes.plot(twin.times, 1e3 * error, style, color=colours[name], label=text, linewidth=1.2)
            path_axes.plot(tips[:, 0], tips[:, 1], style, color=colours[name], linewidth=1.0)
    error_axes.axhline(1e3 * evaluator.scale, color="grey", linewidth=0.8, label="tolerance")
    error_axes.axvline(evaluator.task_duration, color="grey", linestyle=":", linewidth=0.8)
    error_axes.set_yscale("log")
    error_axes.set_xlabel("time (s)")
    error_axes.set_ylabel("tip to target (mm)")
    error_axes.legend(fontsize="small", loc="lower left")
    error_axes.set_title(title, fontsize="medium")
    target = evaluator.target
    path_axes.plot([target[0]], [target[1]], "x", color="purple", markersize=9)
    circle = np.linspace(0.0, 2.0 * np.pi, 90)
    path_axes.plot(target[0] + evaluator.scale * np.cos(circle), target[1] + evaluator.scale * np.sin(circle), "-",
                   color="purple", linewidth=0.8)  # fmt: skip
    path_axes.set_aspect("equal", adjustable="datalim")
    path_axes.set_xlabel("x (m)")
    path_axes.set_ylabel("y (m)")
    path_axes.set_title("the tip's path; the target and its tolerance", fontsize="medium")
    return fig
