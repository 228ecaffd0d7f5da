# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The twin: a skelarm robot or scenario TOML, its torque predictions, and the plot.

The twin keeps the prior's geometry (base, lengths, joint limits) and takes the
identified masses, centres of mass and inertias, and each joint's identified armature,
viscous and Coulomb friction as the per-link keys ``armature``, ``viscous`` and
``coulomb`` (skelarm ignores keys it does not know, so the file loads there too; this
package's simulator runs them, :class:`skelarm_ros.sim.engine.ArmEngine`). With a prior
scenario every other table of it is kept as it was, so the output runs as a scenario at
once. An ``[identification]`` table records how the twin was made (inputs, base
parameters with their standard deviations, condition number, residuals, the torque
offsets of the sensors); skelarm and this package's nodes do not read it.

This module does not import rclpy.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin
import skelarm
from skelarm.recording import dump_toml

from skelarm_ros.identification import IdentificationError
from skelarm_ros.identification.signals import GAP_FACTOR, lowpass
from skelarm_ros.outputs import agg_figure
from skelarm_ros.sim.engine import build_model

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from matplotlib.figure import Figure
    from numpy.typing import ArrayLike, NDArray

    from skelarm_ros.identification.consistency import ConsistentSet
    from skelarm_ros.identification.data import Samples
    from skelarm_ros.sim.scenario import JointDrive

TABLE = "identification"
_PLOT_POINTS = 1200  # samples drawn per line at most
DRIVE_TERMS = ("armature", "viscous", "coulomb")  # written per link, as the simulator reads them


def _degrees(radians: float) -> float:
    return float(np.degrees(radians))


def twin_config(
    geometry: skelarm.Skeleton,
    params: ConsistentSet,
    *,
    prior_config: Mapping[str, Any] | None,
    initial_q: NDArray[np.float64],
    record: Mapping[str, Any],
) -> dict[str, Any]:
    """Return the twin's TOML tables.

    Parameters
    ----------
    geometry : skelarm.Skeleton
        The arm whose geometry the twin keeps.
    params : ConsistentSet
        The identified link parameters.
    prior_config : Mapping[str, Any] | None
        The prior scenario's tables, kept but for the links' inertial parameters; ``None``
        writes a robot file (``[skeleton]``, ``[initial]``).
    initial_q : NDArray[np.float64]
        Initial pose (rad) of a robot file, clipped to the limits.
    record : Mapping[str, Any]
        The ``[identification]`` table.

    Returns
    -------
    dict[str, Any]
        Tables for :func:`skelarm.recording.dump_toml`.
    """
    if prior_config is not None:
        config = copy.deepcopy(dict(prior_config))
        section = config.get("skeleton", config)
        links = section["link"]
    else:
        links = []
        for link in geometry.links[1:]:
            prop = link.prop
            links.append({"length": float(prop.length), "limits": [_degrees(prop.qmin), _degrees(prop.qmax)]})
        lower = np.array([link.prop.qmin for link in geometry.links[1:]])
        upper = np.array([link.prop.qmax for link in geometry.links[1:]])
        q0 = np.clip(initial_q, lower, upper)
        config = {
            "skeleton": {"base_length": float(geometry.base_length), "link": links},
            "initial": {"q": [_degrees(value) for value in q0]},
        }
    drive = params.drive
    columns = {"armature": drive.armature, "viscous": drive.viscous, "coulomb": drive.coulomb}
    for k, (table, found) in enumerate(zip(links, params.links, strict=True)):
        for key in ("rgx", "rgy"):
            table.pop(key, None)
        table["mass"] = found.mass
        table["inertia"] = found.inertia
        table["com"] = [found.com[0], found.com[1]]
        for key in DRIVE_TERMS:
            if key in params.terms or columns[key][k] != 0.0:
                table[key] = float(columns[key][k])
    config[TABLE] = dict(record)
    return config


def twin_skeleton(config: Mapping[str, Any]) -> skelarm.Skeleton:
    """Return the twin as skelarm reads it (:meth:`skelarm.Skeleton.from_config`, as ``from_toml`` does)."""
    return skelarm.Skeleton.from_config(config)


def toml_text(config: Mapping[str, Any]) -> str:
    """Return the tables as TOML text.

    Raises
    ------
    IdentificationError
        If the prior holds a value skelarm's TOML writer cannot write (a date, say).
    """
    try:
        return dump_toml(config)
    except TypeError as error:
        msg = f"the prior scenario holds a value that cannot be written back ({error}); remove it from the prior"
        raise IdentificationError(msg) from None


# -- prediction ------------------------------------------------------------------------------------------


def predict(
    skeleton: skelarm.Skeleton,
    samples: Samples,
    grav_vec: ArrayLike | None = None,
    drive: JointDrive | None = None,
    offset: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """Return the torque the arm needs for each sample, shape ``(S, N)``.

    RNEA of the model with the drive's armature, plus its friction
    (:meth:`JointDrive.friction_torque`) and the sensors' offsets when given.
    """
    model, _ = build_model(skeleton, grav_vec, None if drive is None else drive.armature)
    data = model.createData()
    out = np.empty_like(samples.tau)
    for row in range(len(samples)):
        out[row] = pin.rnea(model, data, samples.q[row], samples.dq[row], samples.ddq[row])
    if drive is not None:
        out += drive.friction_torque(samples.dq)
    if offset is not None:
        out += offset
    return out


@dataclass
class Prediction:
    """Measured and predicted torques of one run, with the relative RMS errors.

    Attributes
    ----------
    source : str
        The run.
    time : NDArray[np.float64]
        Sample times (s), shape ``(S,)``.
    measured, twin, prior : NDArray[np.float64]
        Torques (N*m), shape ``(S, N)``; ``prior`` is ``None`` without a prior.
    """

    source: str
    time: NDArray[np.float64]
    measured: NDArray[np.float64]
    twin: NDArray[np.float64]
    prior: NDArray[np.float64] | None

    @staticmethod
    def error(predicted: NDArray[np.float64], measured: NDArray[np.float64]) -> float:
        """``rms(predicted - measured) / rms(measured)`` over every joint and sample (a fraction)."""
        scale = math.sqrt(float(np.mean(measured**2))) or 1.0
        return math.sqrt(float(np.mean((predicted - measured) ** 2))) / scale

    @staticmethod
    def joint_errors(predicted: NDArray[np.float64], measured: NDArray[np.float64]) -> NDArray[np.float64]:
        """RMS error per joint (N*m), shape ``(N,)``."""
        return np.sqrt(np.mean((predicted - measured) ** 2, axis=0))


def smooth_pair(
    samples: Samples, cutoff: float | None, *series: NDArray[np.float64]
) -> tuple[NDArray[np.float64], ...]:
    """Low-pass torque series alike (as the identification filtered), keeping the samples every series has."""
    if cutoff is None:
        return (samples.time, *series)
    smoothed = [lowpass(values, samples.segment, cutoff, samples.step) for values in series]
    keep = np.all([np.isfinite(values).all(axis=1) for values in smoothed], axis=0)
    return (samples.time[keep], *(values[keep] for values in smoothed))


# -- the plot --------------------------------------------------------------------------------------------


def _with_breaks(prediction: Prediction) -> tuple[Any, ...]:
    """Thin the series to what the figure shows, with NaN rows where frames are missing (so lines break there)."""
    time = prediction.time
    series = [prediction.measured, prediction.twin, prediction.prior]
    steps = np.diff(time)
    if steps.size:
        breaks = np.flatnonzero(steps > GAP_FACTOR * float(np.median(steps))) + 1
        time = np.insert(time, breaks, np.nan)
        series = [None if values is None else np.insert(values, breaks, np.nan, axis=0) for values in series]
    shown = np.zeros(len(time), dtype=bool)
    shown[:: max(1, len(time) // _PLOT_POINTS)] = True  # more would not show at this size
    shown |= np.isnan(time)  # every break
    return (time[shown], *(None if values is None else values[shown] for values in series))


def torque_figure(prediction: Prediction, joints: Sequence[str], title: str) -> Figure:
    """Measured against predicted torques per joint, one panel each, on the Agg canvas."""
    n = len(joints)
    figure = agg_figure(10.0, 1.9 * n + 1.2)
    axes = figure.subplots(n, 1, sharex=True, squeeze=False)[:, 0]
    twin_error = Prediction.error(prediction.twin, prediction.measured)
    time, measured, twin, prior = _with_breaks(prediction)
    for j, ax in enumerate(axes):
        ax.plot(time, measured[:, j], color="0.35", lw=2.2, label="measured")
        ax.plot(time, twin[:, j], color="tab:blue", lw=1.0, label="twin")
        if prior is not None:
            ax.plot(time, prior[:, j], "--", color="tab:orange", lw=1.0, label="prior")
        ax.set_ylabel(f"{joints[j]} (N*m)")
        ax.grid(alpha=0.3)
    axes[0].legend(loc="upper right", ncol=3, fontsize="small")
    axes[-1].set_xlabel("time (s)")
    summary = f"twin error {100.0 * twin_error:.3g} % RMS"
    if prediction.prior is not None:
        summary += f", prior {100.0 * Prediction.error(prediction.prior, prediction.measured):.3g} %"
    figure.suptitle(f"{title}: {prediction.source}\n{summary}", fontsize="medium")
    return figure
