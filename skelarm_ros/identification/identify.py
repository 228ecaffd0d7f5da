# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""``identify``: recorded runs of an arm (bags or logs) to its twin, a skelarm robot or scenario TOML.

``identify INPUT... -o TWIN.toml [--scenario PRIOR.toml] [--joint-topic T] [--validate HELDOUT...]``

The stages are in :mod:`skelarm_ros.identification` (read and align, FIGAROH's
regressor and base parameters, the physically consistent set closest to the prior,
the twin); this module runs them in order, prints the report and writes the TOML and
the torque plot beside it (``TWIN.png``), both only when every stage succeeded. See
docs/identification.md.

This module does not import rclpy.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from skelarm_ros import __version__, tool
from skelarm_ros.identification import IdentificationError
from skelarm_ros.identification.consistency import DEFAULT_COM_MARGIN, ConsistentSet, consistent_set
from skelarm_ros.identification.data import Recording, Samples, align, merge, read_recording
from skelarm_ros.identification.regressor import BaseFit, applied_torque, fit, structure
from skelarm_ros.identification.twin import (
    FRICTION_NOTE,
    TABLE,
    Prediction,
    predict,
    smooth_pair,
    toml_text,
    torque_figure,
    twin_config,
    twin_skeleton,
)
from skelarm_ros.interface import split_names
from skelarm_ros.outputs import check_new, write_atomically
from skelarm_ros.sim.scenario import ArmSetup, ScenarioError, load_arm

if TYPE_CHECKING:
    from collections.abc import Sequence

    import skelarm
    from numpy.typing import NDArray

PROG = "identify"
_GEOMETRY_TOLERANCE = 1e-9  # m


@dataclass
class Result:
    """What :func:`identify` found and wrote.

    Attributes
    ----------
    joints : list[str]
        Joint names in the arm's order.
    samples : Samples
        The identification samples.
    fit : BaseFit
        The base parameters and their quality.
    params : ConsistentSet
        The twin's link parameters.
    config : dict[str, Any]
        The twin's TOML tables.
    twin, prior : skelarm.Skeleton
        The twin and the prior arm.
    grav_vec : NDArray[np.float64]
        The planar gravity of the model (m/s^2).
    geometry : str
        Where the geometry and the prior came from.
    efforts : list[str]
        Which torque each input gave.
    predictions : list[Prediction]
        Held-out runs: measured torques and the twin's and prior's predictions.
    output, plot : Path | None
        The files written.
    """

    joints: list[str]
    samples: Samples
    fit: BaseFit
    params: ConsistentSet
    config: dict[str, Any]
    twin: skelarm.Skeleton
    prior: skelarm.Skeleton
    grav_vec: NDArray[np.float64]
    geometry: str
    efforts: list[str]
    predictions: list[Prediction] = field(default_factory=list)
    output: Path | None = None
    plot: Path | None = None


def _prior(scenario: str | Path | None) -> ArmSetup | None:
    if not scenario:
        return None
    try:
        return load_arm(scenario)
    except ScenarioError as error:
        raise IdentificationError(str(error)) from None


def _read_all(paths: Sequence[str | Path], joint_topic: str | None, joints: Sequence[str] | None) -> list[Recording]:
    recordings = [read_recording(path, joint_topic=joint_topic) for path in paths]
    order = list(joints) if joints else recordings[0].joints
    return [recording.reordered(order) for recording in recordings]


def _same_geometry(one: skelarm.Skeleton, other: skelarm.Skeleton) -> bool:
    lengths = [link.prop.length for link in one.links]
    others = [link.prop.length for link in other.links]
    return len(lengths) == len(others) and all(
        abs(a - b) <= _GEOMETRY_TOLERANCE for a, b in zip(lengths, others, strict=True)
    )


def _geometry(prior: ArmSetup | None, recordings: Sequence[Recording]) -> tuple[skelarm.Skeleton, str]:
    """Return the arm's geometry (and prior): the prior scenario's, else the one the first input embeds."""
    n = len(recordings[0].joints)
    embedded = next((r.skeleton for r in recordings if r.skeleton is not None), None)
    if prior is not None:
        if prior.num_joints != n:
            msg = (
                f"the prior '{prior.path}' has {prior.num_joints} joints but the runs have {n} "
                f"({recordings[0].joints}); pass the scenario of this arm"
            )
            raise IdentificationError(msg)
        if embedded is not None and not _same_geometry(prior.skeleton, embedded):
            warnings.warn(
                f"the arm recorded in the runs has other link lengths than the prior '{prior.path}'; "
                "the prior's geometry is used",
                stacklevel=2,
            )
        return prior.skeleton, f"prior {prior.path}"
    if embedded is None:
        msg = (
            "the runs carry no arm (no robot_description in the bag, no skeleton in the log); "
            "pass the arm's scenario or robot TOML with --scenario"
        )
        raise IdentificationError(msg)
    if embedded.num_joints != n:
        msg = f"the arm recorded in the runs has {embedded.num_joints} joints but its states have {n}; pass --scenario"
        raise IdentificationError(msg)
    return embedded, f"the robot recorded in {recordings[0].source}"


def _check_output(output: Path) -> None:
    if output.suffix != ".toml":
        msg = f"output '{output}' must be a .toml file (the twin is a skelarm robot or scenario TOML)"
        raise IdentificationError(msg)
    if output.is_dir():
        msg = f"output '{output}' is a directory; name the twin's .toml file"
        raise IdentificationError(msg)
    try:
        check_new(output, force=True)  # its folder; whether it may be replaced is the command line's (--force)
    except ValueError as error:
        raise IdentificationError(str(error)) from None


def _record(inputs: Sequence[str | Path], fit_result: BaseFit, params: ConsistentSet, samples: Samples) -> dict:
    record: dict[str, Any] = {
        "tool": f"skelarm_ros identify {__version__}",
        "inputs": [str(Path(path).resolve()) for path in inputs],
        "samples": fit_result.samples,
        "dropped_samples": samples.dropped,
        "base_parameters": fit_result.names,
        "base_values": fit_result.values.tolist(),
        "base_std": fit_result.std.tolist(),
        "condition_number": fit_result.condition,
        "residual_rms": fit_result.residual_rms.tolist(),
        "reproduces_base_parameters": params.exact,
    }
    if not params.exact:
        record["torque_misfit"] = params.misfit
    if params.friction:
        record["friction"] = {
            "note": FRICTION_NOTE,
            "joints": list(params.friction),
            "viscous": [value[0] for value in params.friction.values()],
            "coulomb": [value[1] for value in params.friction.values()],
        }
    return record


def _validate(
    path: str | Path,
    joints: Sequence[str],
    twin: skelarm.Skeleton,
    prior: skelarm.Skeleton,
    grav_vec: NDArray[np.float64],
    *,
    friction: Sequence[tuple[float, float]] | None,
    cutoff: float | None,
    joint_topic: str | None,
) -> Prediction:
    recording = read_recording(path, joint_topic=joint_topic).reordered(joints)
    samples = align(recording)
    if len(samples) == 0:
        msg = f"held-out run '{path}' has no usable sample (every step has a NaN or masked value)"
        raise IdentificationError(msg)
    measured = applied_torque(twin, samples)
    time, measured, twin_tau, prior_tau = smooth_pair(
        samples,
        cutoff,
        measured,
        predict(twin, samples, grav_vec, friction),
        predict(prior, samples, grav_vec),
    )
    return Prediction(str(path), time, measured, twin_tau, prior_tau)


def identify(
    inputs: Sequence[str | Path],
    output: str | Path,
    *,
    scenario: str | Path | None = None,
    joint_topic: str | None = None,
    joints: Sequence[str] | None = None,
    validate: Sequence[str | Path] = (),
    friction: bool = False,
    cutoff: float | None = None,
    com_margin: float = DEFAULT_COM_MARGIN,
    plot: bool = True,
) -> Result:
    """Identify an arm from recorded runs and write its twin.

    Parameters
    ----------
    inputs : Sequence[str | Path]
        Bags or ``.sklog.npz`` logs of exciting runs of one arm.
    output : str | Path
        The twin's ``.toml`` (a robot file, or with ``scenario`` a full scenario).
    scenario : str | Path | None, optional
        The prior: a scenario or robot TOML (path or bundled name) with the arm's
        geometry, its guessed inertial parameters and its gravity; its other tables are kept.
    joint_topic : str | None, optional
        The JointState topic of the bags.
    joints : Sequence[str] | None, optional
        Joint names in the arm's order (first joint first); default the first input's order.
    validate : Sequence[str | Path], optional
        Held-out runs whose torques the twin and the prior predict.
    friction : bool, optional
        Identify a viscous and a Coulomb friction coefficient per joint too.
    cutoff : float | None, optional
        Low-pass the torques and the regressor at this frequency (Hz).
    com_margin : float, optional
        How far a centre of mass may leave its link's box (share of the link's scale).
    plot : bool, optional
        Write the torque plot beside the TOML (``.png``).

    Returns
    -------
    Result
        The identification and the files written.

    Raises
    ------
    IdentificationError
        With one sentence naming the problem; nothing is written then.
    """
    if not inputs:
        msg = "no input; pass one or more bags or .sklog.npz logs of an exciting run"
        raise IdentificationError(msg)
    if not (math.isfinite(com_margin) and com_margin >= 0.0):
        msg = f"--com-margin must be a share of the link's scale, zero or positive, got {com_margin}"
        raise IdentificationError(msg)
    target = Path(output)
    _check_output(target)
    prior_setup = _prior(scenario)
    recordings = _read_all(inputs, joint_topic, joints)
    names = recordings[0].joints
    geometry, source = _geometry(prior_setup, recordings)
    grav_vec = prior_setup.grav_vec if prior_setup is not None else np.zeros(2)
    samples = merge([align(recording) for recording in recordings])
    arm = structure(geometry, grav_vec, friction=friction)
    base = fit(arm, samples, geometry, cutoff=cutoff)
    params = consistent_set(base, geometry, names, com_margin=com_margin)
    first = recordings[0].q[np.isfinite(recordings[0].q).all(axis=1)]
    config = twin_config(
        geometry,
        params,
        prior_config=prior_setup.config if prior_setup is not None else None,
        initial_q=first[0] if len(first) else np.zeros(len(names)),
        record=_record(inputs, base, params, samples),
    )
    twin = twin_skeleton(config)
    result = Result(
        names, samples, base, params, config, twin, geometry, grav_vec, source, [r.effort for r in recordings]
    )
    coefficients = list(params.friction.values()) or None
    for path in validate:
        result.predictions.append(
            _validate(
                path, names, twin, geometry, grav_vec, friction=coefficients, cutoff=cutoff, joint_topic=joint_topic
            )
        )
    _write(result, target, plot=plot, cutoff=cutoff)
    return result


def _training_prediction(result: Result, cutoff: float | None) -> Prediction:
    samples = result.samples
    measured = applied_torque(result.prior, samples)
    friction = list(result.params.friction.values()) or None
    time, measured, twin_tau, prior_tau = smooth_pair(
        samples,
        cutoff,
        measured,
        predict(result.twin, samples, result.grav_vec, friction),
        predict(result.prior, samples, result.grav_vec),
    )
    return Prediction("the identification runs", time, measured, twin_tau, prior_tau)


def _write(result: Result, target: Path, *, plot: bool, cutoff: float | None) -> None:
    """Write the TOML and the plot; both are made before either file is replaced."""
    text = toml_text(result.config)
    figure = None
    if plot:
        shown = result.predictions[0] if result.predictions else _training_prediction(result, cutoff)
        title = "held-out run" if result.predictions else "fit"
        figure = torque_figure(shown, result.joints, title)
    write_atomically(target, lambda path: path.write_text(text, encoding="utf-8"))
    result.output = target
    if figure is not None:
        picture = target.with_suffix(".png")
        write_atomically(picture, lambda path: figure.savefig(path, dpi=110, format="png"))
        result.plot = picture


# -- the report ------------------------------------------------------------------------------------------


def _number(value: float) -> str:
    return f"{value:.6g}"


def report_lines(result: Result) -> list[str]:
    """Return the printed report: data, base parameters, fit, twin, held-out errors, files."""
    s, f = result.samples, result.fit
    lines = [
        f"data: {f.samples} samples of {len(result.joints)} joints {result.joints} from {s.frames} frames "
        f"({s.dropped} steps dropped as NaN or masked, {s.gaps} at gaps in the recording"
        + (f", {f.filtered_out} too short to filter" if f.filtered_out else "")
        + f"), step {s.step:.6g} s{'' if s.uniform else ' (not uniform)'}",
        *(f"torque: {effort}" for effort in dict.fromkeys(result.efforts)),
        f"model: {result.geometry}, planar gravity {result.grav_vec.tolist()} m/s^2",
        f"base parameters ({len(f.names)}, FIGAROH double QR), condition number {f.condition:.4g}:",
        f"  {'value':>12} {'std':>10} {'std %':>8} {'prior':>12}  expression",
    ]
    for name, value, std, prior in zip(f.names, f.values, f.std, f.prior, strict=True):
        relative = f"{100.0 * std / abs(value):.2g}" if value else "-"
        lines.append(f"  {_number(value):>12} {std:>10.2g} {relative:>8} {_number(prior):>12}  {name}")
    lines.append(
        "fit residual RMS per joint: "
        + ", ".join(
            f"{joint} {res:.3g} N*m ({100.0 * res / rms if rms else 0.0:.2g} %)"
            for joint, res, rms in zip(result.joints, f.residual_rms, f.torque_rms, strict=True)
        )
    )
    lines += _twin_lines(result)
    for prediction in result.predictions:
        twin_error = Prediction.error(prediction.twin, prediction.measured)
        line = (
            f"held-out {prediction.source} ({len(prediction.time)} samples): "
            f"torque RMS error twin {100.0 * twin_error:.3g} %"
        )
        if prediction.prior is not None:
            line += f", prior {100.0 * Prediction.error(prediction.prior, prediction.measured):.3g} %"
        lines.append(line)
    if result.output is not None:
        lines.append(f"wrote {result.output}" + (f" and {result.plot}" if result.plot else ""))
    return lines


def _twin_lines(result: Result) -> list[str]:
    p = result.params
    how = "reproduces the base parameters" if p.exact else f"nearest consistent set, torque misfit {p.misfit:.3g}"
    lines = [f"twin: physically consistent, closest to the prior, {how}:"]
    header = ("link", "mass kg", "(prior)", "com x, y m", "(prior)", "inertia", "(prior)")
    lines.append("  {:<6} {:>9} {:>9} {:>20} {:>20} {:>10} {:>10}".format(*header))
    for k, (link, prior, verdict) in enumerate(zip(p.links, result.prior.links[1:], p.feasibility, strict=True)):
        q = prior.prop
        lines.append(
            f"  {k + 1:<6} {link.mass:>9.4g} {q.m:>9.4g} {link.com[0]:>9.4g},{link.com[1]:>10.4g} "
            f"{q.rgx:>9.4g},{q.rgy:>10.4g} {link.inertia:>10.4g} {q.i:>10.4g}"
            + ("" if verdict == "feasible" else f"  FIGAROH: {verdict}")
        )
    if p.friction:
        lines.append(
            "friction (identified; the simulated twin has none): "
            + ", ".join(f"{joint} viscous {fv:.4g}, Coulomb {fs:.4g}" for joint, (fv, fs) in p.friction.items())
        )
    return lines


# -- command line ----------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = tool.parser(
        PROG, "Identify an arm's inertial parameters from recorded runs and write its twin (skelarm TOML)."
    )
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="bags or .sklog.npz logs of exciting runs")
    parser.add_argument("-o", "--output", required=True, help="the twin's .toml (a plot goes beside it as .png)")
    parser.add_argument("--scenario", help="the prior: scenario or robot TOML (path or bundled name); tables kept")
    parser.add_argument("--joint-topic", help="sensor_msgs/JointState topic of the bags (default: the only one)")
    parser.add_argument("--joints", help="joint names in the arm's order, comma separated (default: the first input's)")
    parser.add_argument("--validate", nargs="+", default=[], metavar="HELDOUT", help="held-out runs to predict")
    parser.add_argument("--friction", action="store_true", help="also identify viscous and Coulomb joint friction")
    parser.add_argument("--filter", type=float, metavar="HZ", help="low-pass torques and regressor alike (Hz)")
    parser.add_argument(
        "--com-margin",
        type=float,
        default=DEFAULT_COM_MARGIN,
        help=f"how far a centre of mass may leave its link (share of its scale; default {DEFAULT_COM_MARGIN})",
    )
    parser.add_argument("--no-plot", action="store_true", help="do not write the torque plot")
    return parser


def _outputs(args: argparse.Namespace) -> list[Path]:
    """Return the files the command line asks for: the twin's TOML and, unless ``--no-plot``, its plot."""
    return [Path(args.output), *(() if args.no_plot else (Path(args.output).with_suffix(".png"),))]


def _identify(args: argparse.Namespace) -> tool.Done:
    result = identify(
        args.inputs,
        args.output,
        scenario=args.scenario,
        joint_topic=args.joint_topic,
        joints=split_names(args.joints) or None,
        validate=args.validate,
        friction=args.friction,
        cutoff=args.filter,
        com_margin=args.com_margin,
        plot=not args.no_plot,
    )
    return tool.Done(report=report_lines(result))


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``identify`` from the command line; returns the exit code."""
    return tool.run_main(_parser(), argv, _identify, outputs=_outputs, errors=(IdentificationError,))


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["TABLE", "Result", "identify", "main", "report_lines"]
