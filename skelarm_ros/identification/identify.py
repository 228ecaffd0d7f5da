# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""``identify``: recorded runs of an arm (bags or logs) to its twin, a skelarm robot or scenario TOML.

``identify INPUT... -o TWIN.toml [--scenario PRIOR.toml] [--joints a,b,c] [--validate HELDOUT...]``

The stages are in :mod:`skelarm_ros.identification` (read and align, the data checks
and the filter the data need, FIGAROH's regressor and base parameters with armature,
friction and the torque offsets the runs separate from gravity, the physically
consistent set closest to the prior, the twin); this module runs them in order, prints
the report and writes the TOML and the torque plot beside it (``TWIN.png``), both only
when every stage succeeded. With held-out runs (``--validate``) a twin that does not
predict their torques better than its prior is refused: the report is printed, nothing
is written, exit code 1. See docs/identification.md.

This module does not import rclpy.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from skelarm_ros import __version__, tool
from skelarm_ros.identification import IdentificationError, checks, offsets
from skelarm_ros.identification.consistency import DEFAULT_COM_MARGIN, ConsistentSet, consistent_set
from skelarm_ros.identification.data import (
    BagOptions,
    Recording,
    Samples,
    align,
    choose_torque,
    command_lag,
    merge,
    read_input,
    read_recording,
    recording_of,
)
from skelarm_ros.identification.driver import DriverEstimate
from skelarm_ros.identification.driver import estimate as estimate_driver
from skelarm_ros.identification.regressor import (
    MODEL_TERMS,
    BaseFit,
    Structure,
    applied_torque,
    check_count,
    fit,
    structure,
)
from skelarm_ros.identification.report import report_lines
from skelarm_ros.identification.servo import ServoEstimate, ServoRun, identify_servo, servo_into, servo_run_of
from skelarm_ros.identification.twin import (
    TABLE,
    Prediction,
    predict,
    smooth_pair,
    toml_text,
    torque_figure,
    twin_config,
)
from skelarm_ros.interface import split_names
from skelarm_ros.outputs import check_new, write_atomically
from skelarm_ros.sim.scenario import ArmSetup, ScenarioError, arm_from_config, load_arm

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import skelarm
    from numpy.typing import NDArray

PROG = "identify"
_GEOMETRY_TOLERANCE = 1e-9  # m
EFFORTS = ("auto", "measured", "commands")


@dataclass(frozen=True)
class Result:
    """What :func:`identify` found and wrote, made once every stage is done.

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
    twin, prior : ArmSetup
        The twin as the simulator reads its tables, and the prior (its scenario, or the
        arm the runs carry).
    grav_vec : NDArray[np.float64]
        The planar gravity of the model (m/s^2).
    geometry : str
        Where the geometry and the prior came from.
    efforts : list[str]
        Which torque each input gave.
    predictions : list[Prediction]
        Held-out runs: measured torques and the twin's and prior's predictions.
    output, plot : Path | None
        The files written (``None`` for a twin refused: nothing is written then).
    assessment : checks.Assessment
        What the data checks found (noise, motion, rate).
    filter : str
        The filter used, and why.
    lags : list[tuple[str, float, float]]
        Per input with commands and measured effort: the commands' lag (s) and how much the
        two differ at it (a share of the torques' RMS).
    velocity : str
        Where the velocities came from.
    offsets : offsets.OffsetChoice | None
        Which joints' torque offsets the runs separate, with the figures; ``None`` when the
        offset is not in the model (see ``no_offset``).
    no_offset : str
        Why the offset is not in the model, when it is not.
    effort_bias : NDArray[np.float64] | None
        The twin's ``[driver].effort_bias`` (N*m per joint), when it has one.
    driver : DriverEstimate
        What the runs tell of the arm's driver (the twin's ``[driver]`` keys), and what they do not.
    notes : tuple[str, ...]
        What a user should know besides the result (what reading the inputs said, a prior
        of another geometry, irregular steps, offsets left out), each once.
    servo : ServoEstimate | None
        A servo arm's servo, from the runs' position goals (:mod:`~skelarm_ros.identification.servo`).
    """

    joints: list[str]
    samples: Samples
    fit: BaseFit
    params: ConsistentSet
    config: dict[str, Any]
    twin: ArmSetup
    prior: ArmSetup
    grav_vec: NDArray[np.float64]
    geometry: str
    efforts: list[str]
    predictions: list[Prediction]
    output: Path | None
    plot: Path | None
    assessment: checks.Assessment
    filter: str
    lags: list[tuple[str, float, float]]
    velocity: str
    offsets: offsets.OffsetChoice | None
    no_offset: str
    effort_bias: NDArray[np.float64] | None
    driver: DriverEstimate
    notes: tuple[str, ...]
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
) -> tuple[list[Recording], list[ServoRun]]:
    """Read each input once: its recording and, where it has a servo's position goals, its servo run; both windowed."""
    starts = _windows(start, len(paths), "--start")
    ends = _windows(end, len(paths), "--end")
    logs, recordings = [], []
    for path in paths:
        log, notes = read_input(Path(path), options)
        logs.append(log)
        recordings.append(recording_of(log, Path(path), notes))
    order = list(joints) if joints else recordings[0].joints
    chosen, runs = [], []
    for log, recording, low, high in zip(logs, recordings, starts, ends, strict=True):
        chosen.append(choose_torque(recording.selected(order, named=bool(joints)).window(low, high), effort))
        run = servo_run_of(log, recording.source)
        if run is not None:
            runs.append(run.selected(order).window(low, high))
    return chosen, runs


def _same_geometry(one: skelarm.Skeleton, other: skelarm.Skeleton) -> bool:
    lengths = [link.prop.length for link in one.links]
    others = [link.prop.length for link in other.links]
    return len(lengths) == len(others) and all(
        abs(a - b) <= _GEOMETRY_TOLERANCE for a, b in zip(lengths, others, strict=True)
    )


def _geometry(prior: ArmSetup | None, recordings: Sequence[Recording]) -> tuple[skelarm.Skeleton, str, list[str]]:
    """Return the arm's geometry (and prior): the prior scenario's, else the one the first input embeds; and a note."""
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
        notes = []
        if embedded is not None and not _same_geometry(prior.skeleton, embedded):
            notes.append(
                f"the arm recorded in the runs has other link lengths than the prior '{prior.path}'; "
                "the prior's geometry is used"
            )
        return prior.skeleton, f"prior {prior.path}", notes
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
    return embedded, f"the robot recorded in {recordings[0].source}", []


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


def _record(
    inputs: Sequence[str | Path],
    recordings: Sequence[Recording],
    fit_result: BaseFit,
    params: ConsistentSet,
    samples: Samples,
) -> dict:
    """Return ``[identification]``: the inputs as given (with the files read and their sha256), the fit."""
    record: dict[str, Any] = {
        "tool": f"skelarm_ros identify {__version__}",
        "inputs": [str(path) for path in inputs],
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
    if params.regrouped:
        record["regrouped"] = {
            name: f"kept at the prior's value; part of {base}" for name, base in params.regrouped.items()
        }
    sources = [{"input": str(r.source), **item} for r in recordings for item in r.files]
    if sources:
        record["sources"] = sources
    return record


def _offset_record(choice: offsets.OffsetChoice | None, no_offset: str, joints: Sequence[str]) -> dict:
    """Return ``[identification.torque_offset]``: each joint's separation and verdict, or why there is none."""
    if choice is None:
        return {"torque_offset": {"note": no_offset}} if no_offset else {}
    note = (
        f"per joint: the offset's separation from the other terms (identified where at least {offsets.SEPARATION:g}); "
        "identified offsets are the bias of the published effort, [driver].effort_bias"
    )
    return {
        "torque_offset": {
            "note": note,
            "joints": list(joints),
            "separation": choice.separation.tolist(),
            "identified": [k in choice.kept for k in range(len(joints))],
        }
    }


def _validate(
    path: str | Path,
    arms: tuple[ArmSetup, ArmSetup],
    joints: Sequence[str],
    *,
    options: BagOptions,
    named: bool,
    effort: str,
    cutoff: float | None,
) -> tuple[Prediction, tuple[str, ...]]:
    """Return a held-out run's measured torques beside those of ``arms`` (twin, prior), and what reading said."""
    read = read_recording(path, options)
    recording = choose_torque(read.selected(joints, named=named), effort)
    recording = _cleaner_velocity(recording, float(np.median(np.diff(recording.time))), cutoff)
    samples = align(recording)
    if len(samples) == 0:
        msg = f"held-out run '{path}' has no usable sample (every step has a NaN or masked value)"
        raise IdentificationError(msg)
    return _prediction(arms, samples, str(path), cutoff), read.notes


def _prediction(arms: tuple[ArmSetup, ArmSetup], samples: Samples, source: str, cutoff: float | None) -> Prediction:
    """Return the measured torques beside the twin's and the prior's as the simulator runs them, filtered alike."""
    twin, prior = arms
    measured = applied_torque(prior.skeleton, samples)
    time, measured, twin_tau, prior_tau = smooth_pair(
        samples, cutoff, measured, predict(twin, samples), predict(prior, samples)
    )
    return Prediction(source, time, measured, twin_tau, prior_tau)


class NotBetterError(IdentificationError):
    """A twin that predicts a held-out run no better than its prior; ``result`` holds the figures."""

    def __init__(self, message: str, result: Result) -> None:
        """Keep the sentence and the result whose report shows the figures."""
        super().__init__(message)
        self.result = result


def _not_better(predictions: Sequence[Prediction]) -> str | None:
    """Return why the twin is refused (held-out torque error not below its prior's on a run), or ``None``."""
    for prediction in predictions:
        if prediction.prior is None:
            continue
        twin = Prediction.error(prediction.twin, prediction.measured)
        prior = Prediction.error(prediction.prior, prediction.measured)
        if twin >= prior:
            return (
                f"the twin is not better than its prior on held-out run '{prediction.source}': its torques, as "
                f"the simulator would run it, are {100.0 * twin:.3g} % RMS off where the prior's are "
                f"{100.0 * prior:.3g} %; nothing is written: keep the prior, or record an exciting run of this "
                "arm (docs/identification.md, 'Recording an exciting run')"
            )
    return None


def _fit_offsets(
    arm: Structure,
    rebuild: Callable[[Sequence[int]], Structure],
    samples: Samples,
    prior: ArmSetup,
    names: Sequence[str],
    *,
    cutoff: float | None,
    demanded: bool,
) -> tuple[Structure, BaseFit, offsets.OffsetChoice | None, list[str]]:
    """Fit ``arm`` (every term), and again without the offsets the runs do not separate from the other terms.

    ``rebuild(kept)`` is the model with the offsets of the joints ``kept`` only. Returns the
    model, its fit, the offsets' choice and the note on those left out.
    """
    geometry = prior.skeleton
    base = fit(arm, samples, geometry, cutoff=cutoff)
    if not arm.offsets:
        return arm, base, None, []
    choice = offsets.choose(
        base, arm.offsets, samples, geometry, grav_vec=prior.grav_vec, joints=names, demanded=demanded
    )
    if not choice.left_out:
        return arm, base, choice, []
    kept = ", ".join(f"{prior.driver.effort_bias[k] if prior.driver else 0.0:g}" for k in choice.left_out)
    note = (
        f"identify leaves out {offsets.summary(choice, names)}; the twin keeps the prior's effort bias for "
        f"{'it' if len(choice.left_out) == 1 else 'them'} ({kept} N*m)"
    )
    arm = rebuild(choice.kept)
    return arm, fit(arm, samples, geometry, cutoff=cutoff), choice, [note]


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
    demand_offset: bool = False,
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
        geometry, its guessed inertial parameters (and armature, friction, the driver's
        effort bias) and its gravity; its other tables are kept.
    bag : BagOptions | None, optional
        How to read bags (joint and command topics, clock, recovery), as ``bag_to_log``.
    joints : Sequence[str] | None, optional
        The arm's joints as the recordings name them, first joint first; other joints
        (a gripper) are left out. Default: the first input's joints, in its order.
    start, end : Sequence[float | None] | float | None, optional
        A time window (s after each input's first frame): one value for all inputs, or one per input.
    validate : Sequence[str | Path], optional
        Held-out runs whose torques the twin and the prior predict, as the simulator runs
        them; a twin no better than its prior on one of them is refused.
    terms : Sequence[str], optional
        What real arms have to identify beside the inertial parameters
        (:data:`~skelarm_ros.identification.regressor.MODEL_TERMS`: all by default). The
        torque offset is identified only on the effort a driver publishes, and only for the
        joints whose offset the runs separate from gravity and Coulomb friction
        (:mod:`~skelarm_ros.identification.offsets`).
    demand_offset : bool, optional
        Refuse the runs unless they separate every joint's offset (``--offset``).
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
        With one sentence naming the problem; nothing is written then
        (:class:`NotBetterError`, with the result, for a twin no better than its prior).
    """
    _check_arguments(inputs, com_margin, effort)
    options = bag or BagOptions()
    target = Path(output)
    _check_output(target)
    prior_setup = _prior(scenario)
    recordings, servo_runs = _read_all(inputs, options, joints, start=start, end=end, effort=effort)
    names = recordings[0].joints
    geometry, source, notes = _geometry(prior_setup, recordings)
    notes = [note for recording in recordings for note in recording.notes] + notes
    prior = prior_setup if prior_setup is not None else _embedded(geometry)
    terms, no_offset = offsets.model_terms(terms, recordings, demanded=demand_offset)
    checks.check_torque(recordings)
    samples = merge([align(recording) for recording in recordings])
    prior_bias = prior.driver.effort_bias if prior.driver is not None else np.zeros(len(names))

    def rebuild(kept: Sequence[int] | None) -> Structure:
        return structure(geometry, prior.grav_vec, terms=terms, drive=prior.drive, offsets=kept)

    arm = rebuild(None)
    check_count(arm, samples)
    assessment = _assessed(recordings, samples)
    notes += checks.irregular(recordings, samples)
    chosen, why = _filter(cutoff, assessment)
    driver = estimate_driver(recordings, assessment, prior, arm, cutoff=chosen)
    cleaner = [_cleaner_velocity(recording, samples.step, chosen) for recording in recordings]
    if any(r is not q for r, q in zip(cleaner, recordings, strict=True)):
        recordings = cleaner
        samples = merge([align(recording) for recording in recordings])
    arm, base, choice, left_out = _fit_offsets(
        arm, rebuild, samples.unbiased(prior_bias), prior, names, cutoff=chosen, demanded=demand_offset
    )
    notes += left_out
    params = consistent_set(base, geometry, names, com_margin=com_margin, drive=prior.drive, terms=arm.terms)
    bias = None if params.offset is None else prior_bias + params.offset
    first = recordings[0].q[np.isfinite(recordings[0].q).all(axis=1)]
    record = _record(inputs, recordings, base, params, samples)
    config = twin_config(
        geometry,
        params,
        prior_config=prior_setup.config if prior_setup is not None else None,
        initial_q=first[0] if len(first) else np.zeros(len(names)),
        record={**record, **_offset_record(choice, no_offset, names), **driver.record()},
        driver={"effort_bias": bias, **driver.table},
        dt=driver.dt,
    )
    servo = servo_into(config, servo_runs, prior_setup)
    twin = _twin_setup(config)
    predictions = []
    for path in validate:
        held_out, said = _validate(
            path, (twin, prior), names, options=options, named=bool(joints), effort=effort, cutoff=chosen
        )
        predictions.append(held_out)
        notes += said
    refusal = _not_better(predictions)
    written = target if refusal is None else None
    result = Result(
        joints=names,
        samples=samples,
        fit=base,
        params=params,
        config=config,
        twin=twin,
        prior=prior,
        grav_vec=prior.grav_vec,
        geometry=source,
        efforts=[r.effort for r in recordings],
        predictions=predictions,
        output=written,
        plot=written.with_suffix(".png") if written is not None and plot else None,
        assessment=assessment,
        filter=why,
        lags=[(str(r.source), *lag) for r in recordings if (lag := command_lag(r)) is not None],
        velocity=_velocity_words(recordings, assessment),
        offsets=choice,
        no_offset=no_offset,
        effort_bias=bias,
        driver=driver,
        notes=tuple(dict.fromkeys(notes)),
        servo=servo,
    )
    if refusal is not None:
        raise NotBetterError(refusal, result)
    _write(result, cutoff=chosen)
    return result


def _assessed(recordings: Sequence[Recording], samples: Samples) -> checks.Assessment:
    """Return what the runs tell of their motion and rate, refusing runs that cannot identify the arm."""
    assessment = checks.assess(recordings, samples.step)
    checks.check_motion(assessment)
    checks.check_rate(assessment)
    checks.check_saturation(recordings)
    return assessment


def _check_arguments(inputs: Sequence[str | Path], com_margin: float, effort: str) -> None:
    if not inputs:
        msg = "no input; pass one or more bags or .sklog.npz logs of an exciting run"
        raise IdentificationError(msg)
    if not (math.isfinite(com_margin) and com_margin >= 0.0):
        msg = f"--com-margin must be a share of the link's scale, zero or positive, got {com_margin}"
        raise IdentificationError(msg)
    if effort not in EFFORTS:
        msg = f"unknown --effort '{effort}'; choose from {list(EFFORTS)}"
        raise IdentificationError(msg)


def _filter(cutoff: float | None, assessment: checks.Assessment) -> tuple[float | None, str]:
    """Return the filter's cut-off (Hz, ``None`` for none) and why: the data's choice, or ``--filter``."""
    if cutoff is None:
        return checks.choose_cutoff(assessment)
    if cutoff == 0.0:
        return None, "none (--filter 0)"
    return cutoff, f"zero-phase 4th-order Butterworth at {cutoff:g} Hz on torques and regressor alike"


def _cleaner_velocity(recording: Recording, step: float, cutoff: float | None) -> Recording:
    """Return the recording with each joint's velocity from its angles where they are cleaner below the cut-off.

    Only on a continuous motion: a simulator's semi-implicit Euler steps keep their
    recorded velocities, whose forward difference is exactly the acceleration.
    """
    if cutoff is None or not recording.velocity_recorded or recording.stepped:
        return recording
    cleaner = checks.cleaner_from_angles(checks.assess([recording], step), cutoff)
    return recording.with_velocity_from_angles([j for j, flag in enumerate(cleaner) if flag])


def _embedded(skeleton: skelarm.Skeleton) -> ArmSetup:
    """Return the prior the runs carry (their robot, no gravity, no drive), as a scenario would give it."""
    return ArmSetup(path=None, config={}, skeleton=skeleton, dt=0.002, enforce_limits=True)


def _twin_setup(config: dict[str, Any]) -> ArmSetup:
    """Return the twin as the simulator reads its tables."""
    try:
        return arm_from_config(config, "the twin")
    except ScenarioError as error:
        raise IdentificationError(str(error)) from None


def _velocity_words(recordings: Sequence[Recording], assessment: checks.Assessment) -> str:
    recorded = [r.velocity_recorded for r in recordings]
    steps = [j.quantum for j in assessment.joints if j.quantum]
    encoder = f"; encoder step {max(steps):.3g} rad" if steps else ""
    derived = list(dict.fromkeys(name for r in recordings for name in r.from_angles))
    if derived:
        encoder += (
            f"; {', '.join(derived)} from the angles' central differences instead, which are cleaner below the "
            "filter's cut-off than the recorded velocity"
        )
    if all(recorded):
        return "recorded in the joint states" + encoder
    how = "differentiated from the positions (central differences)"
    return (how if not any(recorded) else f"{how} where the joint states carry none") + encoder


def _training_prediction(result: Result, cutoff: float | None) -> Prediction:
    return _prediction((result.twin, result.prior), result.samples, "the identification runs", cutoff)


def _write(result: Result, *, cutoff: float | None) -> None:
    """Write the TOML to ``result.output`` and the plot to ``result.plot``; both are made before either is replaced."""
    if result.output is None:
        return
    text = toml_text(result.config)
    figure = None
    if result.plot is not None:
        shown = result.predictions[0] if result.predictions else _training_prediction(result, cutoff)
        title = "held-out run" if result.predictions else "fit"
        figure = torque_figure(shown, result.joints, title)
    write_atomically(result.output, lambda path: path.write_text(text, encoding="utf-8"))
    if figure is not None and result.plot is not None:
        write_atomically(result.plot, lambda path: figure.savefig(path, dpi=110, format="png"))


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
        help=f"leave out of the model, comma separated: {', '.join(MODEL_TERMS)} (default: identify all; the "
        "offset where the runs separate it from gravity)",
    )
    parser.add_argument(
        "--offset",
        action="store_true",
        help="identify every joint's torque offset (the published effort's bias), or refuse runs that do not "
        "separate it from gravity and Coulomb friction",
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
    try:
        result = _run(args, bag, joints)
    except NotBetterError as refused:
        raise tool.Refused(str(refused), report_lines(refused.result), refused.result.notes) from None
    return tool.Done(report=report_lines(result), notes=result.notes)


def _run(args: argparse.Namespace, bag: BagOptions, joints: list[str] | None) -> Result:
    return identify(
        args.inputs,
        args.output,
        scenario=args.scenario,
        bag=bag,
        joints=joints,
        start=_numbers(args.start, "--start"),
        end=_numbers(args.end, "--end"),
        validate=args.validate,
        terms=_terms(args.without),
        demand_offset=args.offset,
        effort=args.effort,
        cutoff=args.filter,
        com_margin=args.com_margin,
        plot=not args.no_plot,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``identify`` from the command line; returns the exit code."""
    return tool.run_main(_parser(), argv, _identify, outputs=_outputs, errors=(IdentificationError,))


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["TABLE", "NotBetterError", "Result", "identify", "main", "report_lines"]
