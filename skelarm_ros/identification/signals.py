# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Signals of a recorded run: velocity from angles, telling simulator steps from a continuous motion, low-pass.

A run of frames ends at a gap: a step longer than :data:`GAP_FACTOR` median steps
(frames missing). Nothing here differentiates or filters across one.

This module does not import rclpy.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from skelarm_ros.identification import IdentificationError

if TYPE_CHECKING:
    from numpy.typing import NDArray

GAP_FACTOR = 1.5  # a step this many times the median one is frames missing


def within(time: NDArray[np.float64], start: float | None, end: float | None) -> NDArray[np.bool_]:
    """Return which frames lie from ``start`` to ``end`` seconds after the first (``None``: no bound), to 1 ns."""
    since = time - time[0]
    low = -math.inf if start is None else start
    high = math.inf if end is None else end
    return (since >= low - 1e-9) & (since <= high + 1e-9)


def differentiate(time: NDArray[np.float64], q: NDArray[np.float64]) -> NDArray[np.float64]:
    """Velocities from angles: central differences inside each run of valid frames, one-sided at its ends.

    A run ends at a NaN angle or at a gap (a step over 1.5 median steps). A run of a
    single frame gets NaN.

    Parameters
    ----------
    time : NDArray[np.float64]
        Frame times (s), shape ``(N,)``.
    q : NDArray[np.float64]
        Angles (rad), shape ``(N, n)``; NaN where not valid.

    Returns
    -------
    NDArray[np.float64]
        Velocities (rad/s), shape ``(N, n)``.
    """
    out = np.full(q.shape, np.nan)
    if len(time) < 2:
        return out
    steps = np.diff(time)
    positive = steps[steps > 0.0]
    median = float(np.median(positive)) if positive.size else 0.0
    for j in range(q.shape[1]):
        valid = np.isfinite(q[:, j]) & np.isfinite(time)
        joined = valid[:-1] & valid[1:] & (steps > 0.0) & (steps <= GAP_FACTOR * median)
        breaks = np.flatnonzero(~joined) + 1
        for frames in np.split(np.arange(len(time)), breaks):
            run = frames[valid[frames]]
            if run.size >= 2:
                out[run, j] = np.gradient(q[run, j], time[run])
    return out


_STEPPED_SHARE = 0.25  # the weight of dq_k in q_{k+1} - q_k below which frames are semi-implicit Euler steps


def semi_implicit(time: NDArray[np.float64], q: NDArray[np.float64], dq: NDArray[np.float64]) -> bool:
    """Whether the frames are semi-implicit Euler steps (``q_{k+1} = q_k + h dq_{k+1}``), as simulators take them.

    Then the forward difference of the velocity is exactly the acceleration at the
    step's start state; on a continuous motion it is the mean over the step, which
    belongs to the step's midpoint. The two are told apart by least squares of
    ``(q_{k+1} - q_k) / h = a dq_k + b dq_{k+1}`` over every joint and regular step:
    ``a = 0, b = 1`` for Euler steps, ``a = b = 1/2`` for a continuous motion (the
    trapezoid rule). The three series are low-passed alike first (at a tenth of the
    Nyquist frequency; the relation is linear, so it holds filtered too), so velocity
    noise does not blur the small difference between ``dq_k`` and ``dq_{k+1}``.
    """
    steps = np.diff(time)
    regular = (steps > 0.0) & (steps <= GAP_FACTOR * float(np.median(steps)))
    rate = (q[1:] - q[:-1]) / steps[:, np.newaxis]
    before, after = dq[:-1], dq[1:]
    rows = np.isfinite(rate).all(axis=1) & np.isfinite(before).all(axis=1) & np.isfinite(after).all(axis=1) & regular
    if np.count_nonzero(rows) < 4 * _STEPPED_PAD:
        return False
    segment = np.cumsum(~rows)[rows].astype(np.int64)
    step = float(np.median(steps[rows]))
    series = np.stack([rate[rows], before[rows], after[rows]], axis=-1)
    smooth = lowpass(series, segment, _STEPPED_CUTOFF / step, step)
    keep = np.isfinite(smooth).all(axis=(1, 2))
    if np.count_nonzero(keep) < 4 * _STEPPED_PAD:
        return False
    smooth = smooth[keep]
    design = np.column_stack([smooth[:, :, 1].reshape(-1), smooth[:, :, 2].reshape(-1)])
    weights, *_ = np.linalg.lstsq(design, smooth[:, :, 0].reshape(-1), rcond=None)
    return bool(weights[0] < _STEPPED_SHARE)


_STEPPED_CUTOFF = 0.01  # of the sampling rate: the low-pass before telling Euler steps from a continuous motion
_STEPPED_PAD = 27  # sosfiltfilt's padding of a 4th-order filter


# -- filtering -------------------------------------------------------------------------------------------

FILTER_ORDER = 4


def lowpass(values: NDArray[np.float64], segment: NDArray[np.int64], cutoff: float, step: float) -> NDArray[Any]:
    """Zero-phase Butterworth low-pass of ``values`` along axis 0, one segment at a time.

    Parameters
    ----------
    values : NDArray[np.float64]
        Samples along axis 0 (any trailing shape).
    segment : NDArray[np.int64]
        Segment index per sample; consecutive samples of one segment are filtered together.
    cutoff : float
        Cut-off frequency (Hz), below the Nyquist frequency ``0.5 / step``.
    step : float
        Sampling step (s).

    Returns
    -------
    NDArray
        The filtered values (same shape); NaN for the first and last ``1 / cutoff``
        seconds of each segment (where the filter's edge transients carry the noise of
        the edge samples far into the segment) and for segments too short to filter.
    """
    from scipy.signal import butter, sosfiltfilt

    sos = butter(FILTER_ORDER, cutoff, btype="low", fs=1.0 / step, output="sos")
    out = np.full(values.shape, np.nan)
    starts = np.flatnonzero(np.diff(segment, prepend=segment[:1] - 1))
    ends = [*starts[1:].tolist(), len(segment)]
    pad = 3 * (2 * len(sos) + 1)  # sosfiltfilt's default padding
    trim = math.ceil(EDGE_PERIODS / (cutoff * step))
    for start, end in zip(starts.tolist(), ends, strict=True):
        if end - start > max(pad, 2 * trim + 1):
            out[start + trim : end - trim] = sosfiltfilt(sos, values[start:end], axis=0)[trim : end - start - trim]
    return out


EDGE_PERIODS = 1.0  # periods of the cut-off left out at each end of a filtered segment


def check_cutoff(cutoff: float, step: float) -> None:
    """Check a filter cut-off against the sampling step.

    Raises
    ------
    IdentificationError
        If the cut-off is not a positive frequency below the Nyquist frequency.
    """
    nyquist = 0.5 / step
    if not (math.isfinite(cutoff) and 0.0 < cutoff < nyquist):
        msg = (
            f"--filter {cutoff} Hz is not a cut-off below the Nyquist frequency {nyquist:.6g} Hz of these runs "
            f"(step {step:.6g} s); give a positive frequency under it, or leave the filter out"
        )
        raise IdentificationError(msg)
