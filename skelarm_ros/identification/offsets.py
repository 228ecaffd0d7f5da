# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The torque offset: identified only where the recorded postures tell it apart from gravity and Coulomb friction.

A joint's torque offset (FIGAROH's ``off``, N*m) is a constant in the joint's recorded
torque that no motion explains: the bias of the effort the driver measures and publishes
(its current sensor's). So it is a term of the model only when the torque fitted is that
effort (the joint states' effort), and in the twin it is the driver's ``effort_bias``
(``[driver]``, :func:`skelarm_ros.identification.twin.driver_table`): it shifts the
published effort, not the arm's motion.

A constant is also what a joint's gravity torque looks like while the links beyond it stay
near one posture, and what its Coulomb friction looks like while it moves one way. Fitted
there, the offset takes the arm's gravity, the links' centres of mass go wrong to match,
and the twin (whose offset only shifts what it publishes) neither holds nor falls like the
arm. The rule, one figure per joint:

- the **separation** of a joint's offset is the share of its regressor column that lies
  outside the span of every other column of the model (gravity, Coulomb friction,
  inertia, the other offsets): ``1 / sqrt(VIF)``, the sine of the angle between the
  column and that span, from the base regressor the fit uses (filtered alike, columns
  scaled to unit length). 1 is a column orthogonal to the rest, 0 one the others
  reproduce;
- the offset is identified where the separation is at least :data:`SEPARATION` (0.1); the
  others are left out and keep the prior's effort bias. A link swept evenly over an angle
  ``a`` separates its joint's offset from its own gravity torque by
  ``sqrt(1 - sinc^2(a/2) / (1/2 + sin(a) / 2a))``: 0.1 at :data:`SWEEP` (91 deg), which is
  what the note asks for where a link's sweep is the reason.

This module does not import rclpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from skelarm_ros.identification import IdentificationError
from skelarm_ros.identification.regressor import TERM_KEYS

if TYPE_CHECKING:
    from collections.abc import Sequence

    import skelarm
    from numpy.typing import NDArray

    from skelarm_ros.identification.data import Recording, Samples
    from skelarm_ros.identification.regressor import BaseFit

SEPARATION = 0.1
"""The least separation (share of the offset's column outside the others' span) at which an offset is identified."""
_OFFSET = TERM_KEYS["offset"]
_COULOMB = TERM_KEYS["coulomb"]
_PERCENTILES = (1.0, 99.0)  # a link's posture range: where it spends all but 2 % of the run


def even_sweep_separation(sweep: float) -> float:
    """Return the separation of a constant from ``cos`` and ``sin`` of an angle swept evenly over ``sweep`` (rad)."""
    if sweep <= 0.0:
        return 0.0
    half = 0.5 * sweep
    mean = math.sin(half) / half  # of cos over the sweep; sin averages to zero and is orthogonal to both
    square = 0.5 + math.sin(sweep) / (2.0 * sweep)  # mean of cos^2
    return math.sqrt(max(0.0, 1.0 - mean * mean / square))


def _even_sweep(separation: float) -> float:
    """Return the sweep (rad) at which :func:`even_sweep_separation` reaches ``separation`` (bisection)."""
    low, high = 0.0, 2.0 * math.pi
    for _ in range(60):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if even_sweep_separation(middle) < separation else (low, middle)
    return high


SWEEP = _even_sweep(SEPARATION)
"""rad: a link swept evenly over this angle separates its joint's offset from its gravity by :data:`SEPARATION`."""


def separations(fit: BaseFit, offsets: Sequence[int], num_joints: int) -> NDArray[np.float64]:
    """Return each joint's offset separation in the fit's base regressor, NaN where it has no offset, shape ``(N,)``.

    An offset in the model that the fit could not take as a base column (the others
    reproduce it exactly) has separation 0.
    """
    out = np.full(num_joints, np.nan)
    gram = fit.gram
    scale = np.sqrt(np.diag(gram))
    scale = np.where(scale > 0.0, scale, 1.0)
    inverse = np.linalg.pinv(gram / np.outer(scale, scale), hermitian=True)
    for k in offsets:
        name = f"{_OFFSET}_j{k + 1}"
        index = fit.columns.index(name) if name in fit.columns else None
        out[k] = 0.0 if index is None else 1.0 / math.sqrt(max(float(inverse[index, index]), 1.0))
    return out


def _sine(fit: BaseFit, one: str, other: str) -> float:
    """Return the sine of the angle between two base columns (1 when either is not one)."""
    if one not in fit.columns or other not in fit.columns:
        return 1.0
    a, b = fit.columns.index(one), fit.columns.index(other)
    gram = fit.gram
    cosine = gram[a, b] / math.sqrt(max(gram[a, a] * gram[b, b], 1e-300))
    return math.sqrt(max(0.0, 1.0 - cosine * cosine))


@dataclass(frozen=True)
class LinkSweep:
    """The postures a link took: its angle from the base's x axis (rad).

    Attributes
    ----------
    low, high : float
        The 1st and 99th percentiles of the angle.
    allowed : float
        The widest sweep its joints' limits allow (rad, at most a turn).
    """

    low: float
    high: float
    allowed: float

    @property
    def sweep(self) -> float:
        """The angle swept (rad)."""
        return self.high - self.low


def link_sweeps(q: NDArray[np.float64], arm: skelarm.Skeleton) -> list[LinkSweep]:
    """Return each link's posture range over joint angles ``q``, shape ``(S, N)`` (link k's angle: the sum to q_k)."""
    angles = np.cumsum(q, axis=1)
    ranges = np.cumsum([link.prop.qmax - link.prop.qmin for link in arm.links[1:]])
    out = []
    for k in range(angles.shape[1]):
        low, high = np.percentile(angles[:, k], _PERCENTILES)
        out.append(LinkSweep(float(low), float(high), float(min(ranges[k], 2.0 * math.pi))))
    return out


def narrow_links(
    sweeps: Sequence[LinkSweep], joints: Sequence[str] | None = None, first: int = 0, what: str = "it"
) -> str:
    """Say which links from ``first`` on sweep less than :data:`SWEEP` and that a wider sweep would separate ``what``.

    When every one sweeps that far, the narrowest is named (its postures need more than an
    even sweep's 91 deg).
    """
    narrow = [k for k in range(first, len(sweeps)) if sweeps[k].sweep < SWEEP]
    enough = f"over {_degrees(SWEEP)} deg or more" if narrow else "wider"
    narrow = narrow or [min(range(first, len(sweeps)), key=lambda k: sweeps[k].sweep)]
    held = ", ".join(
        f"link {k + 1}{f' ({joints[k]})' if joints else ''} between {_degrees(sweeps[k].low)} and "
        f"{_degrees(sweeps[k].high)} deg from the base's x axis (a {_degrees(sweeps[k].sweep)} deg sweep)"
        for k in narrow
    )
    text = f"{held}; sweeping {'it' if len(narrow) == 1 else 'each'} {enough} would separate {what}"
    blocked = [k for k in narrow if sweeps[k].sweep <= sweeps[k].allowed < SWEEP]  # limits the run kept to
    if blocked:
        text += (
            f" (the joint limits allow link {', '.join(str(k + 1) for k in blocked)} only "
            f"{', '.join(_degrees(sweeps[k].allowed) for k in blocked)} deg: give the bias in the prior's "
            "[driver].effort_bias if it is known)"
        )
    return text


@dataclass
class OffsetChoice:
    """Which joints' offsets the runs separate, with the figures and what to do about the others.

    Attributes
    ----------
    separation : NDArray[np.float64]
        Per joint, the offset's separation in the model with every offset (NaN: not in it).
    kept : tuple[int, ...]
        The joints (0-based) whose offset is identified.
    reasons : str
        Why the others are left out and what excitation would separate them (empty when none is).
    """

    separation: NDArray[np.float64]
    kept: tuple[int, ...]
    reasons: str = ""

    @property
    def left_out(self) -> list[int]:
        """The joints whose offset is in the model but not separated."""
        return [k for k in range(len(self.separation)) if np.isfinite(self.separation[k]) and k not in self.kept]


def _degrees(radians: float) -> str:
    return f"{math.degrees(radians):.0f}"


def _reasons(
    fit: BaseFit, samples: Samples, arm: skelarm.Skeleton, *, gravity: bool, joints: Sequence[str], left_out: list[int]
) -> str:
    """Why the offsets of ``left_out`` are not separated, and what excitation would separate them."""
    one_way = [k for k in left_out if _sine(fit, f"{_OFFSET}_j{k + 1}", f"{_COULOMB}_j{k + 1}") < SEPARATION]
    parts = []
    for k in one_way:
        velocity = samples.dq[:, k]
        share = max(np.count_nonzero(velocity > 0.0), np.count_nonzero(velocity < 0.0)) / max(len(velocity), 1)
        parts.append(
            f"{joints[k]} moves one way {100.0 * share:.0f} % of the time, so its Coulomb friction is a constant "
            "torque too: moving it both ways alike would separate it"
        )
    rest = [k for k in left_out if k not in one_way]
    if rest:
        what = "it" if len(rest) == 1 else "them"
        held = narrow_links(link_sweeps(samples.q, arm), joints, min(rest), what) if gravity else ""
        names = ", ".join(joints[k] for k in rest)
        parts.append(
            f"gravity about {names} looks constant: the runs hold {held}"
            if held
            else f"the other terms of {names} reproduce a constant torque: moving {what} further and faster would "
            f"separate {what}"
        )
    return "; ".join(parts)


def choose(
    fit: BaseFit,
    offsets: Sequence[int],
    samples: Samples,
    arm: skelarm.Skeleton,
    *,
    grav_vec: NDArray[np.float64],
    joints: Sequence[str],
    demanded: bool = False,
) -> OffsetChoice:
    """Decide which joints' offsets the runs separate from gravity and Coulomb friction.

    Parameters
    ----------
    fit : BaseFit
        The fit with the offsets of ``offsets`` in the model.
    offsets : Sequence[int]
        The joints (0-based) whose offset is in the model.
    samples : Samples
        Its samples (for the postures and velocities the reasons name).
    arm : skelarm.Skeleton
        The arm's geometry and joint limits.
    grav_vec : NDArray[np.float64]
        Planar gravity of the model (m/s^2).
    joints : Sequence[str]
        Joint names.
    demanded : bool, optional
        ``--offset``: every joint's offset asked for; one the runs do not separate is refused.

    Returns
    -------
    OffsetChoice
        The figures, the joints kept and the reasons for the others.

    Raises
    ------
    IdentificationError
        When ``demanded`` and some joint's offset is not separated, naming the joints, the
        figures and the excitation that would separate them.
    """
    separation = separations(fit, offsets, len(joints))
    kept = tuple(k for k in offsets if separation[k] >= SEPARATION)
    choice = OffsetChoice(separation, kept)
    if choice.left_out:
        choice.reasons = _reasons(
            fit, samples, arm, gravity=bool(np.any(grav_vec)), joints=joints, left_out=choice.left_out
        )
    if demanded and choice.left_out:
        msg = (
            f"--offset asks for {summary(choice, joints)}; record such a run, or leave --offset out to identify the "
            "offsets the runs separate"
        )
        raise IdentificationError(msg)
    return choice


def model_terms(
    terms: Sequence[str], recordings: Sequence[Recording], *, demanded: bool = False
) -> tuple[tuple[str, ...], str]:
    """Return the model's terms, the offset only where every input's torque is the effort a driver publishes.

    Parameters
    ----------
    terms : Sequence[str]
        What real arms have to identify (:data:`~skelarm_ros.identification.regressor.MODEL_TERMS`).
    recordings : Sequence[Recording]
        The inputs, their torques chosen.
    demanded : bool, optional
        ``--offset``: the offset asked for.

    Returns
    -------
    tuple[tuple[str, ...], str]
        The terms, and why the offset is not among them (empty when it is, or was not asked for).

    Raises
    ------
    IdentificationError
        When the offset is asked for but left out (``--without offset``) or no driver published the torque.
    """
    if demanded and "offset" not in terms:
        msg = "--offset asks for the torque offset that --without offset leaves out; give one of them"
        raise IdentificationError(msg)
    commands = [str(r.source) for r in recordings if not r.published_effort]
    if "offset" not in terms or not commands:
        return tuple(terms), ""
    described = dict.fromkeys(r.effort for r in recordings if not r.published_effort)
    why = (
        f"no torque offset: the torque of {', '.join(commands)} is the {'; the '.join(described)}, not the effort a "
        "driver publishes, whose measurement's bias the offset is"
    )
    if demanded:
        msg = f"--offset asks for the bias of the published effort, but {why.split(': ', 1)[1]}"
        raise IdentificationError(msg)
    return tuple(term for term in terms if term != "offset"), why


def summary(choice: OffsetChoice, joints: Sequence[str]) -> str:
    """One sentence: which offsets the runs cannot separate, their figures, and why (empty when none)."""
    left_out = choice.left_out
    if not left_out:
        return ""
    figures = ", ".join(f"{joints[k]} {choice.separation[k]:.2g}" for k in left_out)
    return (
        f"the torque offset of {', '.join(joints[k] for k in left_out)}, which the runs cannot tell apart from the "
        f"arm's own torques (separation {figures}, below {SEPARATION:g}): {choice.reasons}"
    )
