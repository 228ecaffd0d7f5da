# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The twin: a skelarm robot or scenario TOML, its torque predictions, and the plot.

The twin keeps the prior's geometry (base, lengths, joint limits) and takes the
identified masses, centres of mass and inertias, and each joint's identified armature,
viscous and Coulomb friction as the per-link keys ``armature``, ``viscous`` and
``coulomb`` (skelarm ignores keys it does not know, so the file loads there too; this
package's simulator runs them, :class:`skelarm_ros.sim.engine.ArmEngine`). What the
driver does goes to its ``[driver]`` table (:func:`driver_table`, the one place that
builds it): an identified torque offset is the driver's ``effort_bias``, the bias of the
effort it publishes. With a prior scenario every other table of it is kept as it was
(its ``[driver]`` keys too, the estimates in place of theirs), so the output runs as a
scenario at once. An ``[identification]`` table records how the twin was made (inputs,
base parameters with their standard deviations, condition number, residuals, the
offsets' separation from gravity); skelarm and this package's nodes do not read it.

The torques a twin predicts (:func:`predict`) are computed as the simulator runs the
scenario: from the tables as :func:`skelarm_ros.sim.scenario.arm_from_config` reads them,
the rigid body with the armature by the engine's Pinocchio model, the drive's friction,
and, for the effort a driver publishes, its effort bias; nothing the simulator leaves out.

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
from skelarm_ros.sim.driver import TABLE as DRIVER_TABLE
from skelarm_ros.sim.driver import driver_from_config
from skelarm_ros.sim.engine import build_model

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from matplotlib.figure import Figure
    from numpy.typing import NDArray

    from skelarm_ros.identification.consistency import ConsistentSet
    from skelarm_ros.identification.data import Samples
    from skelarm_ros.sim.scenario import ArmSetup

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
    driver: Mapping[str, Any] | None = None,
    dt: float | None = None,
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
    driver : Mapping[str, Any] | None, optional
        What was estimated of the driver (``[driver]`` keys: ``effort_bias``, ...), written
        over the prior's ``[driver]`` keys by :func:`driver_table`.
    dt : float | None, optional
        The twin's integration step (``[simulator].dt``) in place of the prior's, when the
        driver's rate needs another; ``None`` keeps the prior's.

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
    if dt is not None:
        config["simulator"] = {**config.get("simulator", {}), "dt": dt}
    table = driver_table(config.get(DRIVER_TABLE), len(links), driver or {})
    if table:
        config[DRIVER_TABLE] = table
    config[TABLE] = dict(record)
    return config


def driver_table(prior: Mapping[str, Any] | None, num_joints: int, estimates: Mapping[str, Any]) -> dict[str, Any]:
    """Return the twin's ``[driver]`` table: the prior's keys, each estimated one in place of the prior's.

    Parameters
    ----------
    prior : Mapping[str, Any] | None
        The prior scenario's ``[driver]`` table (as the simulator read it), or ``None``.
    num_joints : int
        The arm's joints.
    estimates : Mapping[str, Any]
        What was estimated of the driver, by ``[driver]`` key (``effort_bias``: N*m per
        joint, a number, a list or an array); ``None`` values are left out.

    Returns
    -------
    dict[str, Any]
        The table as :func:`skelarm_ros.sim.driver.driver_from_config` reads it back (per-joint
        keys as one number per joint); empty when neither the prior nor the estimates give a key.

    Raises
    ------
    IdentificationError
        If the prior's table is not one the simulator reads (its sentence).
    """
    table = dict(prior or {})
    for key, value in estimates.items():
        if value is not None:
            table[key] = value.tolist() if isinstance(value, np.ndarray) else value
    if not table:
        return {}
    try:
        spec = driver_from_config({DRIVER_TABLE: table}, num_joints, "the twin")
    except ValueError as error:
        raise IdentificationError(str(error)) from None
    return {} if spec is None else spec.table()


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


def predict(setup: ArmSetup, samples: Samples) -> NDArray[np.float64]:
    """Return the torque a scenario's arm needs for each sample, as the simulator runs it, shape ``(S, N)``.

    Parameters
    ----------
    setup : ArmSetup
        The scenario as the simulator reads it (:func:`skelarm_ros.sim.scenario.arm_from_config`).
    samples : Samples
        The states and accelerations; where a sample's torque is the effort the driver
        publishes (:attr:`~skelarm_ros.identification.data.Samples.published`), the
        driver's ``effort_bias`` is in it (not in a command).

    Returns
    -------
    NDArray[np.float64]
        RNEA of the engine's model with the drive's armature and the scenario's gravity, plus
        the drive's friction (:meth:`~skelarm_ros.sim.scenario.JointDrive.friction_torque`),
        plus the effort bias where the torque is the published effort.
    """
    out = model_torque(setup, samples.q, samples.dq, samples.ddq)
    if setup.driver is not None:
        out += np.where(samples.published_rows[:, np.newaxis], setup.driver.effort_bias, 0.0)
    return out


def model_torque(
    setup: ArmSetup, q: NDArray[np.float64], dq: NDArray[np.float64], ddq: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Return the torque a scenario's arm needs for a motion, frame by frame, shape ``(S, N)`` (N*m).

    RNEA of the engine's model with the drive's armature and the scenario's gravity, plus the
    drive's friction: the arm's own torque, without the driver's effort bias (:func:`predict` adds it).
    """
    drive = setup.drive
    model, _ = build_model(setup.skeleton, setup.grav_vec, None if drive is None else drive.armature)
    data = model.createData()
    out = np.empty(np.shape(q), dtype=np.float64)
    for row in range(len(q)):
        out[row] = pin.rnea(model, data, q[row], dq[row], ddq[row])
    if drive is not None:
        out += drive.friction_torque(dq)
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
