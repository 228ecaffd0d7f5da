# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The report ``identify`` prints: data, filter, base parameters, fit, offsets, twin, held-out errors, files.

This module does not import rclpy.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from skelarm_ros.identification import offsets
from skelarm_ros.identification.regressor import TERM_UNITS
from skelarm_ros.identification.servo import servo_report
from skelarm_ros.identification.twin import Prediction

if TYPE_CHECKING:
    from skelarm_ros.identification.identify import Result


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
    lines += _offset_lines(result)
    lines += [f"driver: {line}" for line in result.driver.found]
    lines += [f"driver, not estimated: {line}" for line in result.driver.missing]
    lines += _twin_lines(result)
    if result.servo is not None:
        lines += servo_report(result.servo)
    for prediction in result.predictions:
        twin_error = Prediction.error(prediction.twin, prediction.measured)
        line = (
            f"held-out {prediction.source} ({len(prediction.time)} samples, as the simulator runs each): "
            f"torque RMS error twin {100.0 * twin_error:.3g} %"
        )
        if prediction.prior is not None:
            prior_error = Prediction.error(prediction.prior, prediction.measured)
            verdict = "better than its prior" if twin_error < prior_error else "NOT better than its prior"
            line += f", prior {100.0 * prior_error:.3g} %: the twin is {verdict}"
        lines.append(line)
    if result.output is not None:
        lines.append(f"wrote {result.output}" + (f" and {result.plot}" if result.plot else ""))
    return lines


def _offset_lines(result: Result) -> list[str]:
    """Say why the torque offset is not in the model, or each joint's separation and whether it was identified."""
    if result.offsets is None:
        return [f"offsets: {result.no_offset}"] if result.no_offset else []
    choice = result.offsets
    figures = ", ".join(
        f"{joint} {choice.separation[k]:.2g} " + ("identified" if k in choice.kept else "left out")
        for k, joint in enumerate(result.joints)
    )
    return [
        f"offsets (the bias of the published effort, where the runs separate it from gravity and Coulomb "
        f"friction: separation at least {offsets.SEPARATION:g}): {figures}"
    ]


def _twin_lines(result: Result) -> list[str]:
    p = result.params
    how = "reproduces the base parameters" if p.exact else f"nearest consistent set, torque misfit {p.misfit:.3g}"
    lines = [f"twin: physically consistent, closest to the prior, {how}:"]
    header = ("link", "mass kg", "(prior)", "com x, y m", "(prior)", "inertia", "(prior)")
    lines.append("  {:<6} {:>9} {:>9} {:>20} {:>20} {:>10} {:>10}".format(*header))
    prior_links = result.prior.skeleton.links[1:]
    for k, (link, prior, verdict) in enumerate(zip(p.links, prior_links, p.feasibility, strict=True)):
        q = prior.prop
        lines.append(
            f"  {k + 1:<6} {link.mass:>9.4g} {q.m:>9.4g} {link.com[0]:>9.4g},{link.com[1]:>10.4g} "
            f"{q.rgx:>9.4g},{q.rgy:>10.4g} {link.inertia:>10.4g} {q.i:>10.4g}"
            + ("" if verdict == "feasible" else f"  FIGAROH: {verdict}")
        )
    columns = {"armature": p.drive.armature, "viscous": p.drive.viscous, "coulomb": p.drive.coulomb}
    titles = {term: f"{term} {TERM_UNITS[term]}" for term in columns}
    if result.effort_bias is not None:
        columns["offset"], titles["offset"] = result.effort_bias, "effort_bias N*m"
    shown = [term for term in p.terms if term in columns]
    if shown:
        lines.append(
            "  joint   " + " ".join(f"{titles[term]:>20}" for term in shown) + "   (armature and friction move "
            "the arm; [driver].effort_bias shifts the effort the driver publishes)"
        )
        for k, joint in enumerate(p.joints):
            lines.append(f"  {joint:<7} " + " ".join(f"{float(columns[term][k]):>20.4g}" for term in shown))
    for name, base in p.regrouped.items():
        lines.append(
            f"  {name} cannot be told apart from the first link's inertia about its joint (base parameter "
            f"{base}): regrouped into it; the twin keeps the prior's value"
        )
    return lines


__all__ = ["report_lines"]
