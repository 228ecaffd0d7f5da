# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""``identify``: recorded runs of an arm (bags or logs) to its twin, a skelarm robot or scenario TOML.

``identify INPUT... -o TWIN.toml [--scenario PRIOR.toml] [--joints a,b,c] [--validate HELDOUT...]``

The stages are in :mod:`skelarm_ros.identification` (read and align, the data checks
and the filter the data need, FIGAROH's regressor and base parameters with armature,
friction and offsets, the physically consistent set closest to the prior, the twin);
this module runs them in order, prints the report and writes the TOML and the torque
plot beside it (``TWIN.png``), both only when every stage succeeded. See
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
from skelarm_ros.identification import IdentificationError, checks
from skelarm_ros.identification.consistency import DEFAULT_COM_MARGIN, ConsistentSet, consistent_set
from skelarm_ros.identification.data import (
    BagOptions,
    Recording,
    Samples,
    align,
    choose_torque,
    command_lag,
    merge,
    read_recording,
)
from skelarm_ros.identification.regressor import (
    MODEL_TERMS,
    TERM_UNITS,
    BaseFit,
    applied_torque,
    check_count,
    fit,
    structure,
)
from skelarm_ros.identification.servo import (
    ServoEstimate,
    identify_servo,
    servo_into,
    servo_report,
)
from skelarm_ros.identification.twin import (
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
from skelarm_ros.sim.scenario import ArmSetup, JointDrive, ScenarioError, load_arm

if TYPE_CHECKING:
    from collections.abc import Sequence

    import skelarm
    from numpy.typing import NDArray

PROG = "identify"
_GEOMETRY_TOLERANCE = 1e-9  # m
EFFORTS = ("auto", "measured", "commands")


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
    assessment : checks.Assessment | None
        What the data checks found (noise, motion, rate).
    filter : str
        The filter used, and why.
    lags : list[tuple[str, float, float]]
        Per input with commands and measured effort: the commands' lag (s) and how much the
        two differ at it (a share of the torques' RMS).
    velocity : str
        Where the velocities came from.
    prior_drive : JointDrive | None
        The prior's armature and friction.
    servo : ServoEstimate | None
        A servo arm's servo, from the runs' position goals (:mod:`~skelarm_ros.identification.servo`).
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
    assessment: checks.Assessment | None = None
    filter: str = ""
    lags: list[tuple[str, float, float]] = field(default_factory=list)
    velocity: str = ""
    prior_drive: JointDrive | None = None
    servo: ServoEstimate | None = None


def _prior(scenario: str | Path | None) -> ArmSetup | None:
    if not scenario:
        return None
    try:
        return load_arm(scenario)
    except ScenarioError as error:
        raise IdentificationError(str(error)) from None


def _windows(values: Sequence[float | None] | float | None, count: int, option: str) -> list[float | None]:
    """One window bound per input: one value for all, or one per input."""
    if values is None or isinstance(values, int | float):
        return [None if values is None else float(values)] * count
    bounds = list(values)
    if len(bounds) == 1:
        return bounds * count
    if len(bounds) != count:
        msg = f"{option} has {len(bounds)} values for {count} inputs; give one for all, or one per input"
        raise IdentificationError(msg)
    return bounds


def _read_all(
    paths: Sequence[str | Path],
    options: BagOptions,
    joints: Sequence[str] | None,
    *,
    start: Sequence[float | None] | float | None = None,
    end: Sequence[float | None] | float | None = None,
    effort: str = "auto",
) -> list[Recording]:
    starts = _windows(start, len(paths), "--start")
    ends = _windows(end, len(paths), "--end")
    recordings = [read_recording(path, options) for path in paths]
    order = list(joints) if joints else recordings[0].joints
    return [
        choose_torque(recording.selected(order, named=bool(joints)).window(low, high), effort)
        for recording, low, high in zip(recordings, starts, ends, strict=True)
    ]


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
            fix = (
                "pick the arm's joints, first joint first, with --joints a,b,c (grippers and other joints are left out)"
                if n > prior.num_joints
                else "pass the scenario of this arm"
            )
            msg = (
                f"the prior '{prior.path}' has {prior.num_joints} joints but the runs have {n} "
                f"({recordings[0].joints}); {fix}"
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
        msg = (
            f"the arm recorded in the runs has {embedded.num_joints} joints but its states have {n}; "
            "pick the arm's joints with --joints, or pass --scenario"
        )
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
        "std_block_samples": fit_result.block,
        "effective_samples": fit_result.effective,
        "condition_number": fit_result.condition,
        "residual_rms": fit_result.residual_rms.tolist(),
        "reproduces_base_parameters": params.exact,
        "model_terms": list(params.terms),
        "filter_hz": fit_result.cutoff if fit_result.cutoff is not None else 0.0,
    }
    if not params.exact:
        record["torque_misfit"] = params.misfit
    if params.offset is not None:
        record["torque_offset"] = {
            "note": "per joint (N*m): the bias of the recorded torque (a current sensor's); not simulated",
            "joints": list(params.joints),
            "values": params.offset.tolist(),
        }
    if params.regrouped:
        record["regrouped"] = {
            name: f"kept at the prior's value; part of {base}" for name, base in params.regrouped.items()
        }
    return record


def _validate(
    path: str | Path,
    result: Result,
    *,
    options: BagOptions,
    named: bool,
    effort: str,
    cutoff: float | None,
) -> Prediction:
    recording = choose_torque(read_recording(path, options).selected(result.joints, named=named), effort)
    samples = align(recording)
    if len(samples) == 0:
        msg = f"held-out run '{path}' has no usable sample (every step has a NaN or masked value)"
        raise IdentificationError(msg)
    return _prediction(result, samples, str(path), cutoff)


def _prediction(result: Result, samples: Samples, source: str, cutoff: float | None) -> Prediction:
    """Return the measured torques beside the twin's and the prior's, filtered alike as the fit was."""
    measured = applied_torque(result.prior, samples)
    time, measured, twin_tau, prior_tau = smooth_pair(
        samples,
        cutoff,
        measured,
        predict(result.twin, samples, result.grav_vec, result.params.drive, result.params.offset),
        predict(result.prior, samples, result.grav_vec, result.prior_drive),
    )
    return Prediction(source, time, measured, twin_tau, prior_tau)


def identify(
    inputs: Sequence[str | Path],
    output: str | Path,
    *,
    scenario: str | Path | None = None,
    bag: BagOptions | None = None,
    joints: Sequence[str] | None = None,
    start: Sequence[float | None] | float | None = None,
    end: Sequence[float | None] | float | None = None,
    validate: Sequence[str | Path] = (),
    terms: Sequence[str] = MODEL_TERMS,
    effort: str = "auto",
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
        geometry, its guessed inertial parameters (and armature, friction) and its
        gravity; its other tables are kept.
    bag : BagOptions | None, optional
        How to read bags (joint and command topics, clock, recovery), as ``bag_to_log``.
    joints : Sequence[str] | None, optional
        The arm's joints as the recordings name them, first joint first; other joints
        (a gripper) are left out. Default: the first input's joints, in its order.
    start, end : Sequence[float | None] | float | None, optional
        A time window (s after each input's first frame): one value for all inputs, or one per input.
    validate : Sequence[str | Path], optional
        Held-out runs whose torques the twin and the prior predict.
    terms : Sequence[str], optional
        What real arms have to identify beside the inertial parameters
        (:data:`~skelarm_ros.identification.regressor.MODEL_TERMS`: all by default).
    effort : str, optional
        The torque to fit: ``auto`` (the measured effort when recorded beside the commands
        and usable, else the commands), ``measured`` or ``commands``.
    cutoff : float | None, optional
        Low-pass the torques and the regressor at this frequency (Hz); ``None`` chooses it
        from the data, 0 filters nothing.
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
    if effort not in EFFORTS:
        msg = f"unknown --effort '{effort}'; choose from {list(EFFORTS)}"
        raise IdentificationError(msg)
    options = bag or BagOptions()
    target = Path(output)
    _check_output(target)
    prior_setup = _prior(scenario)
    recordings = _read_all(inputs, options, joints, start=start, end=end, effort=effort)
    names = recordings[0].joints
    geometry, source = _geometry(prior_setup, recordings)
    grav_vec = prior_setup.grav_vec if prior_setup is not None else np.zeros(2)
    prior_drive = prior_setup.drive if prior_setup is not None else None
    checks.check_torque(recordings)
    samples = merge([align(recording) for recording in recordings])
    arm = structure(geometry, grav_vec, terms=terms, drive=prior_drive)
    check_count(arm, samples)
    assessment = checks.assess(recordings, samples.step)
    checks.check_motion(assessment)
    checks.check_rate(assessment)
    checks.check_saturation(recordings)
    checks.warn_irregular(recordings, samples)
    if cutoff is None:
        chosen, why = checks.choose_cutoff(assessment)
    elif cutoff == 0.0:
        chosen, why = None, "none (--filter 0)"
    else:
        chosen, why = cutoff, f"zero-phase 4th-order Butterworth at {cutoff:g} Hz on torques and regressor alike"
    base = fit(arm, samples, geometry, cutoff=chosen)
    params = consistent_set(base, geometry, names, com_margin=com_margin, drive=prior_drive, terms=arm.terms)
    first = recordings[0].q[np.isfinite(recordings[0].q).all(axis=1)]
    config = twin_config(
        geometry,
        params,
        prior_config=prior_setup.config if prior_setup is not None else None,
        initial_q=first[0] if len(first) else np.zeros(len(names)),
        record=_record(inputs, base, params, samples),
    )
    servo = servo_into(config, inputs, options, names, prior_setup)
    twin = twin_skeleton(config)
    result = Result(
        names, samples, base, params, config, twin, geometry, grav_vec, source, [r.effort for r in recordings]
    )
    result.assessment, result.filter, result.prior_drive, result.servo = assessment, why, prior_drive, servo
    result.velocity = _velocity_words(recordings, assessment)
    for recording in recordings:
        lag = command_lag(recording)
        if lag is not None:
            result.lags.append((str(recording.source), *lag))
    for path in validate:
        result.predictions.append(
            _validate(path, result, options=options, named=bool(joints), effort=effort, cutoff=chosen)
        )
    _write(result, target, plot=plot, cutoff=chosen)
    return result


def _velocity_words(recordings: Sequence[Recording], assessment: checks.Assessment) -> str:
    recorded = [r.velocity_recorded for r in recordings]
    steps = [j.quantum for j in assessment.joints if j.quantum]
    encoder = f"; encoder step {max(steps):.3g} rad" if steps else ""
    if all(recorded):
        return "recorded in the joint states" + encoder
    how = "differentiated from the positions (central differences)"
    return (how if not any(recorded) else f"{how} where the joint states carry none") + encoder


def _training_prediction(result: Result, cutoff: float | None) -> Prediction:
    return _prediction(result, result.samples, "the identification runs", cutoff)


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
    """Return the printed report: data, filter, base parameters, fit, twin, held-out errors, files."""
    s, f = result.samples, result.fit
    lines = [
        f"data: {f.samples} samples of {len(result.joints)} joints {result.joints} from {s.frames} frames "
        f"({s.dropped} steps dropped as NaN or masked, {s.gaps} at gaps in the recording"
        + (f", {f.filtered_out} at the ends of filtered runs" if f.filtered_out else "")
        + f"), step {s.step:.6g} s{'' if s.uniform else ' (not uniform)'}",
        *(f"torque: {effort}" for effort in dict.fromkeys(result.efforts)),
    ]
    for source, lag, misfit in result.lags:
        lines.append(
            f"command lag: the commands of {source} show in its measured effort {1e3 * lag:.3g} ms after their "
            f"stamp (the two then differ by {100 * misfit:.3g} % RMS)"
        )
    if result.velocity:
        lines.append(f"velocity: {result.velocity}")
    if result.assessment is not None:
        a = result.assessment
        lines.append(
            f"motion: {a.rate:.4g} Hz sampling, motion up to {a.motion:.3g} Hz; sweep "
            + ", ".join(f"{j.name} {math.degrees(j.sweep):.3g} deg" for j in a.joints)
        )
    if result.filter:
        lines.append(f"filter: {result.filter}")
    lines += [
        f"model: {result.geometry}, planar gravity {result.grav_vec.tolist()} m/s^2"
        + (f", with {', '.join(result.params.terms)} per joint" if result.params.terms else ""),
        f"base parameters ({len(f.names)}, FIGAROH double QR), condition number {f.condition:.4g}:",
        f"  {'value':>12} {'std':>10} {'std %':>8} {'prior':>12}  expression",
    ]
    for name, value, std, prior in zip(f.names, f.values, f.std, f.prior, strict=True):
        relative = f"{100.0 * std / abs(value):.2g}" if value else "-"
        lines.append(f"  {_number(value):>12} {std:>10.2g} {relative:>8} {_number(prior):>12}  {name}")
    seconds = f.block * s.step
    lines.append(
        f"standard deviations: from the residuals' correlation in time (sums over blocks of {f.block} samples, "
        f"{seconds:.3g} s): the {f.samples} samples are worth {f.effective:.4g} independent ones"
    )
    lines.append(
        "fit residual RMS per joint: "
        + ", ".join(
            f"{joint} {res:.3g} N*m ({100.0 * res / rms:.2g} %)"
            for joint, res, rms in zip(result.joints, f.residual_rms, f.torque_rms, strict=True)
        )
    )
    lines += _twin_lines(result)
    if result.servo is not None:
        lines += servo_report(result.servo)
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
    columns = {"armature": p.drive.armature, "viscous": p.drive.viscous, "coulomb": p.drive.coulomb}
    if p.offset is not None:
        columns["offset"] = p.offset
    shown = [term for term in p.terms if term in columns]
    if shown:
        lines.append(
            "  joint   " + " ".join(f"{term + ' ' + TERM_UNITS[term]:>20}" for term in shown) + "   (simulated: "
            "armature, viscous, coulomb; the offset is the sensor's)"
        )
        for k, joint in enumerate(p.joints):
            lines.append(f"  {joint:<7} " + " ".join(f"{float(columns[term][k]):>20.4g}" for term in shown))
    for name, base in p.regrouped.items():
        lines.append(
            f"  {name} cannot be told apart from the first link's inertia about its joint (base parameter "
            f"{base}): regrouped into it; the twin keeps the prior's value"
        )
    return lines


# -- command line ----------------------------------------------------------------------------------------


def _numbers(text: str | None, option: str) -> list[float | None] | None:
    """``--start 2`` or ``--start 2,,5``: one number for all inputs, or one per input (empty: the run's own)."""
    if text is None:
        return None
    values: list[float | None] = []
    for part in text.split(","):
        if not part.strip():
            values.append(None)
            continue
        try:
            values.append(float(part))
        except ValueError:
            msg = f"{option} takes seconds after each input's first frame (one number, or one per input), got '{text}'"
            raise IdentificationError(msg) from None
    return values


def _terms(text: str | None) -> tuple[str, ...]:
    if not text:
        return MODEL_TERMS
    left_out = [item.strip() for item in text.split(",") if item.strip()]
    unknown = [item for item in left_out if item not in MODEL_TERMS]
    if unknown:
        msg = f"--without takes {', '.join(MODEL_TERMS)}, got '{', '.join(unknown)}'"
        raise IdentificationError(msg)
    return tuple(term for term in MODEL_TERMS if term not in left_out)


def _parser() -> argparse.ArgumentParser:
    parser = tool.parser(
        PROG,
        "Identify an arm's inertial parameters, armature and friction from recorded runs and write its twin "
        "(skelarm TOML).",
    )
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="bags or .sklog.npz logs of exciting runs")
    parser.add_argument("-o", "--output", required=True, help="the twin's .toml (a plot goes beside it as .png)")
    parser.add_argument("--scenario", help="the prior: scenario or robot TOML (path or bundled name); tables kept")
    parser.add_argument(
        "--joints",
        help="the arm's joints as the recordings name them, first joint first, comma separated; other joints "
        "(grippers) are left out (default: the first input's)",
    )
    parser.add_argument("--joint-topic", help="sensor_msgs/JointState topic of the bags (default: the only one)")
    parser.add_argument(
        "--command-topic",
        help="effort commands of the bags (JointState effort or Float64MultiArray; default: joint_commands or "
        "effort_controller/commands next to the joint topic)",
    )
    parser.add_argument("--clock", choices=("header", "log"), default="header", help="header stamps or log time")
    parser.add_argument("--recover", action="store_true", help="read a truncated MCAP up to its damage")
    parser.add_argument("--start", metavar="S", help="seconds after each input's first frame to start at (or S1,S2,..)")
    parser.add_argument("--end", metavar="S", help="seconds after each input's first frame to end at (or S1,S2,..)")
    parser.add_argument(
        "--effort",
        choices=EFFORTS,
        default="auto",
        help="the torque to fit: the measured effort when recorded beside the commands (auto), or choose",
    )
    parser.add_argument("--validate", nargs="+", default=[], metavar="HELDOUT", help="held-out runs to predict")
    parser.add_argument(
        "--without",
        metavar="TERMS",
        help=f"leave out of the model, comma separated: {', '.join(MODEL_TERMS)} (default: identify all)",
    )
    parser.add_argument(
        "--filter",
        type=float,
        metavar="HZ",
        help="low-pass torques and regressor alike (Hz; default: from the data; 0: none)",
    )
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
    bag = BagOptions(args.joint_topic, args.command_topic, args.clock, args.recover)
    joints = split_names(args.joints) or None
    servo_only = identify_servo(args.inputs, args.output, prior=_prior(args.scenario), bag=bag, joints=joints)
    if servo_only is not None:  # a servo arm's goals without torque: the servo told, the dynamics the prior's
        return tool.Done(report=servo_only)
    result = identify(
        args.inputs,
        args.output,
        scenario=args.scenario,
        bag=bag,
        joints=joints,
        start=_numbers(args.start, "--start"),
        end=_numbers(args.end, "--end"),
        validate=args.validate,
        terms=_terms(args.without),
        effort=args.effort,
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
