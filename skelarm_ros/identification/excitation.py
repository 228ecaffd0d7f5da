# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""An exciting run for identification: a sum-of-sines joint reference tracked within the arm's limits.

A scenario selects it with ``[controller] type = "excitation"``, a controller registered
through the ``skelarm_ros.controllers`` entry points (setup.py), and a ``[task]`` of
skelarm's type ``joint_trajectory_tracking`` whose ``reference = "sum_of_sines"``: the
joint trajectory is given by the keys below instead of a recorded file. (A task type
of its own would be cleaner, but the simulator parses ``[task]`` with skelarm's
registry for its markers and loads no plugins, so it would refuse an unknown type.)

The reference of joint ``j`` is

``q_j(t) = o_j + w(t) sum_k a_jk sin(2 pi f_k t + phi_jk)``

with a smooth (quintic) fade ``w`` from 0 to 1 over the first ``fade`` seconds and back to 0
over the last, so it starts and ends at rest at the offsets. ``[task]`` keys (angles
in degrees, as every skelarm TOML gives them):

- ``duration`` (s), ``frequencies`` (Hz, shared by the joints);
- ``amplitudes``: one list per joint (one amplitude per frequency), or one number per
  joint, spread over the frequencies in proportion to ``1/f`` (equal velocity amplitudes);
- ``offsets``: one per joint, default the initial pose;
- ``phases``: ``"schroeder"`` (default), ``"optimized"`` (the candidate, of ``candidates``
  drawn with ``seed``, whose regressor has the lowest condition number on the arm's
  model) or one list per joint;
- ``fade`` (s, default the smaller of 1 s and a tenth of the duration), ``limit_margin``
  (degrees from each joint limit, default 5).

Each joint's amplitudes are scaled down where ``o_j +- sum_k |a_jk|`` would come within
``limit_margin`` of a limit. Under gravity (``[controller].grav_vec``) a planned reference
that holds some link within less than :data:`.offsets.SWEEP` (91 deg) of posture is said
in a warning: its run could not tell that joint's torque offset from gravity (identify
leaves it out), and the warning names the link, its range and the sweep that would.

``[controller]`` keys: ``law`` (``"pd"``, the default, needs no model;
``"computed_torque"`` uses the scenario's arm, with ``grav_vec``), ``kp``, ``kd`` (one
number or one per joint), ``effort_limits`` (N*m per joint): every amplitude
is scaled down until the scenario's arm needs at most ``1 - headroom`` (default 0.7) of
each limit along the reference, and the torque is clipped to the limits, so the command
recorded is the torque applied.

This module does not import rclpy.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin
import skelarm
from skelarm.control import TrackingController

from skelarm_ros.identification.offsets import SWEEP, link_sweeps, narrow_links
from skelarm_ros.sim.engine import build_model

if TYPE_CHECKING:
    from collections.abc import Mapping

    from numpy.typing import NDArray

TASK_TYPE = "joint_trajectory_tracking"
REFERENCE_KIND = "sum_of_sines"  # [task].reference of an excitation
LAWS = ("pd", "computed_torque")
PHASE_CHOICES = ("schroeder", "optimized")
DEFAULT_GAINS = {"pd": (300.0, 40.0), "computed_torque": (400.0, 40.0)}
_PLAN_RATE = 100.0  # Hz: reference samples checked against the effort limits
_PHASE_RATE = 20.0  # Hz: reference samples whose regressor rates a phase choice
_BISECTIONS = 30


class ExcitationError(ValueError):
    """An excitation task or controller table that cannot be used; the message names the key and the fix."""


def _smoothstep(ramp: NDArray[np.float64], fade: float, sign: float) -> tuple[NDArray[np.float64], ...]:
    """Quintic fade ``10u^3 - 15u^4 + 6u^5`` of ``u = ramp / fade`` and its time derivatives (``sign`` of d ramp/dt).

    It rises from 0 to 1 with zero first and second derivatives at both ends, so the
    reference's acceleration has no jump where the fade starts or ends.
    """
    u = np.clip(ramp, 0.0, fade) / fade
    w = u**3 * (10.0 + u * (-15.0 + 6.0 * u))
    dw = sign * 30.0 * u**2 * (1.0 - u) ** 2 / fade
    ddw = 60.0 * u * (1.0 - u) * (1.0 - 2.0 * u) / fade**2
    return w, dw, ddw


@dataclass(frozen=True)
class SumOfSines:
    """The faded sum-of-sines joint reference (a :class:`skelarm.control.JointReference`).

    Attributes
    ----------
    offsets : NDArray[np.float64]
        ``o`` (rad), shape ``(N,)``.
    amplitudes : NDArray[np.float64]
        ``a`` (rad), shape ``(N, K)``.
    frequencies : NDArray[np.float64]
        ``f`` (Hz), shape ``(K,)``.
    phases : NDArray[np.float64]
        ``phi`` (rad), shape ``(N, K)``.
    duration : float
        Length (s); the reference rests at the offsets after it.
    fade : float
        Fade-in and fade-out time (s).
    """

    offsets: NDArray[np.float64]
    amplitudes: NDArray[np.float64]
    frequencies: NDArray[np.float64]
    phases: NDArray[np.float64]
    duration: float
    fade: float

    def _window(self, t: NDArray[np.float64]) -> tuple[NDArray[np.float64], ...]:
        """Return the fade ``w`` and its first two derivatives at times ``t``."""
        w, dw, ddw = np.ones_like(t), np.zeros_like(t), np.zeros_like(t)
        for mask, ramp, sign in (
            (t < self.fade, t, 1.0),
            (t > self.duration - self.fade, self.duration - t, -1.0),
        ):
            w[mask], dw[mask], ddw[mask] = _smoothstep(ramp[mask], self.fade, sign)
        after = t >= self.duration
        w[after], dw[after], ddw[after] = 0.0, 0.0, 0.0
        return w, dw, ddw

    def _window_at(self, t: float) -> tuple[float, float, float]:
        """Return the fade and its first two derivatives at one time (as :meth:`_window`)."""
        if t >= self.duration:
            return 0.0, 0.0, 0.0
        if t < self.fade:
            ramp, sign = t, 1.0
        elif t > self.duration - self.fade:
            ramp, sign = self.duration - t, -1.0
        else:
            return 1.0, 0.0, 0.0
        w, dw, ddw = _smoothstep(np.array([ramp]), self.fade, sign)
        return float(w[0]), float(dw[0]), float(ddw[0])

    def sample_many(self, times: NDArray[np.float64]) -> tuple[NDArray[np.float64], ...]:
        """``(q, dq, ddq)`` at each time, each shape ``(T, N)``."""
        t = np.asarray(times, dtype=np.float64).reshape(-1)
        omega = 2.0 * math.pi * self.frequencies  # (K,)
        angle = omega[np.newaxis, np.newaxis, :] * t[:, np.newaxis, np.newaxis] + self.phases[np.newaxis]
        a = self.amplitudes[np.newaxis]
        s = np.sum(a * np.sin(angle), axis=2)
        ds = np.sum(a * omega * np.cos(angle), axis=2)
        dds = -np.sum(a * omega**2 * np.sin(angle), axis=2)
        w, dw, ddw = (item[:, np.newaxis] for item in self._window(t))
        return self.offsets + w * s, dw * s + w * ds, ddw * s + 2.0 * dw * ds + w * dds

    def sample(self, t: float) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Return ``(q_r, dq_r, ddq_r)`` at time ``t`` (rad, rad/s, rad/s^2), as :meth:`sample_many` does."""
        omega = 2.0 * math.pi * self.frequencies
        angle = omega * t + self.phases
        sine, cosine = np.sin(angle), np.cos(angle)
        a = self.amplitudes
        s = np.sum(a * sine, axis=1)
        ds = np.sum(a * omega * cosine, axis=1)
        dds = -np.sum(a * omega**2 * sine, axis=1)
        w, dw, ddw = self._window_at(float(t))
        return self.offsets + w * s, dw * s + w * ds, ddw * s + 2.0 * dw * ds + w * dds

    def scaled(self, factors: NDArray[np.float64] | float) -> SumOfSines:
        """Return the reference with each joint's amplitudes multiplied by ``factors`` (one per joint or one)."""
        factor = np.broadcast_to(np.asarray(factors, dtype=np.float64), self.offsets.shape)
        return replace(self, amplitudes=self.amplitudes * factor[:, np.newaxis])


# -- reading the tables ----------------------------------------------------------------------------------


def _numbers(value: object, key: str, table: str) -> NDArray[np.float64]:
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        array = np.array([np.nan])
    if array.size == 0 or not np.isfinite(array).all():
        msg = f"[{table}].{key} must be finite numbers, got {value!r}"
        raise ExcitationError(msg)
    return array


def _per_joint(value: object, key: str, table: str, n: int) -> NDArray[np.float64]:
    array = _numbers(value, key, table)
    if array.ndim == 0 or array.size == 1:
        return np.full(n, float(array.reshape(-1)[0]))
    if array.shape != (n,):
        msg = f"[{table}].{key} has {array.size} values for {n} joints; give one number or one per joint"
        raise ExcitationError(msg)
    return array


def _amplitudes(value: object, frequencies: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    array = np.radians(_numbers(value, "amplitudes", "task"))
    k = frequencies.size
    if array.shape == (n,):
        weights = (1.0 / frequencies) / np.sum(1.0 / frequencies)
        return array[:, np.newaxis] * weights[np.newaxis, :]
    if array.shape != (n, k):
        msg = (
            f"[task].amplitudes has shape {list(array.shape)}; give one amplitude per joint ({n}) "
            f"or one list per joint with one amplitude per frequency ({n} x {k}), in degrees"
        )
        raise ExcitationError(msg)
    return array


def schroeder_phases(n: int, k: int) -> NDArray[np.float64]:
    """Schroeder phases ``-pi k (k - 1) / K``, shifted per joint so the joints do not move alike, shape ``(n, k)``."""
    harmonic = np.arange(1, k + 1)
    base = -math.pi * harmonic * (harmonic - 1) / k
    shift = 2.0 * math.pi * np.arange(n)[:, np.newaxis] * harmonic[np.newaxis, :] / (n * k)
    return np.asarray(base[np.newaxis, :] + shift, dtype=np.float64)


def reference_from_task(skeleton: skelarm.Skeleton, params: Mapping[str, Any], duration: float) -> SumOfSines:
    """Read the sum of sines of a ``[task]`` table (before any fitting to limits).

    Raises
    ------
    ExcitationError
        On a missing or malformed key.
    """
    n = skeleton.num_joints
    if "frequencies" not in params or "amplitudes" not in params:
        msg = "a sum-of-sines [task] needs 'frequencies' (Hz) and 'amplitudes' (degrees)"
        raise ExcitationError(msg)
    frequencies = _numbers(params["frequencies"], "frequencies", "task").reshape(-1)
    if np.any(frequencies <= 0.0):
        msg = f"[task].frequencies must all be positive (Hz), got {frequencies.tolist()}"
        raise ExcitationError(msg)
    if not (math.isfinite(duration) and duration > 0.0):
        msg = f"[task].duration must be a positive number of seconds, got {duration!r}"
        raise ExcitationError(msg)
    amplitudes = _amplitudes(params["amplitudes"], frequencies, n)
    offsets = np.radians(_per_joint(params["offsets"], "offsets", "task", n)) if "offsets" in params else skeleton.q
    fade = float(params.get("fade", min(1.0, duration / 10.0)))
    if not (0.0 < fade <= duration / 2.0):
        msg = f"[task].fade is {fade} s; give a positive time of at most half the duration ({duration / 2.0} s)"
        raise ExcitationError(msg)
    phases = params.get("phases", "schroeder")
    if isinstance(phases, str):
        if phases not in PHASE_CHOICES:
            msg = f"unknown [task].phases '{phases}'; choose from {list(PHASE_CHOICES)} or give one list per joint"
            raise ExcitationError(msg)
        phase_array = schroeder_phases(n, frequencies.size)
    else:
        phase_array = np.radians(_numbers(phases, "phases", "task"))
        if phase_array.shape != amplitudes.shape:
            msg = f"[task].phases must be one list per joint of {frequencies.size} angles (degrees)"
            raise ExcitationError(msg)
    return SumOfSines(offsets, np.abs(amplitudes), frequencies, phase_array, float(duration), fade)


# -- fitting the reference to the arm --------------------------------------------------------------------


def fit_joint_limits(skeleton: skelarm.Skeleton, reference: SumOfSines, margin: float) -> SumOfSines:
    """Scale each joint's amplitudes so the reference stays ``margin`` (rad) inside the joint limits.

    Raises
    ------
    ExcitationError
        If an offset is not at least ``margin`` inside its joint's limits.
    """
    lower = np.array([link.prop.qmin for link in skeleton.links[1:]]) + margin
    upper = np.array([link.prop.qmax for link in skeleton.links[1:]]) - margin
    room = np.minimum(reference.offsets - lower, upper - reference.offsets)
    if np.any(room <= 0.0):
        joint = int(np.flatnonzero(room <= 0.0)[0])
        msg = (
            f"the excitation offset of joint {joint + 1} ({math.degrees(reference.offsets[joint]):.4g} deg) is not "
            f"{math.degrees(margin):.4g} deg inside its limits; move [task].offsets (or [initial].q) inward"
        )
        raise ExcitationError(msg)
    reach = np.sum(reference.amplitudes, axis=1)
    factors = np.where(reach > room, room / np.where(reach > 0.0, reach, 1.0), 1.0)
    shrunk = np.flatnonzero(factors < 1.0 - 1e-6)
    if shrunk.size:
        warnings.warn(
            "excitation amplitudes scaled to stay inside the joint limits: "
            + ", ".join(f"joint {j + 1} x{factors[j]:.3g}" for j in shrunk),
            stacklevel=2,
        )
    return reference.scaled(factors)


def peak_torques(model: pin.Model, reference: SumOfSines, rate: float = _PLAN_RATE) -> NDArray[np.float64]:
    """Return the largest ``|tau_j|`` the model needs to follow the reference exactly (N*m), shape ``(N,)``."""
    times = np.arange(0.0, reference.duration + 0.5 / rate, 1.0 / rate)
    q, dq, ddq = reference.sample_many(times)
    data = model.createData()
    peak = np.zeros(q.shape[1])
    for row in range(len(times)):
        peak = np.maximum(peak, np.abs(pin.rnea(model, data, q[row], dq[row], ddq[row])))
    return peak


def fit_effort_limits(
    model: pin.Model, reference: SumOfSines, limits: NDArray[np.float64], headroom: float
) -> SumOfSines:
    """Scale all amplitudes alike until the model needs at most ``1 - headroom`` of each effort limit.

    Raises
    ------
    ExcitationError
        If even the resting arm (gravity at the offsets) needs more.
    """
    budget = (1.0 - headroom) * limits
    if np.all(peak_torques(model, reference) <= budget):
        return reference
    if np.any(peak_torques(model, reference.scaled(0.0)) > budget):
        msg = (
            "the arm needs more than the effort limits allow just to hold the excitation offsets; "
            "raise [controller].effort_limits or move the offsets"
        )
        raise ExcitationError(msg)
    low, high = 0.0, 1.0
    for _ in range(_BISECTIONS):
        middle = 0.5 * (low + high)
        if np.all(peak_torques(model, reference.scaled(middle)) <= budget):
            low = middle
        else:
            high = middle
    warnings.warn(f"excitation amplitudes scaled by {low:.3g} to stay within the effort limits", stacklevel=2)
    return reference.scaled(low)


def optimize_phases(
    skeleton: skelarm.Skeleton, reference: SumOfSines, grav_vec: NDArray[np.float64], *, seed: int, candidates: int
) -> SumOfSines:
    """Pick the phases (Schroeder's or random ones) whose regressor has the lowest condition number.

    The regressor is FIGAROH's, of the arm's base parameters, with its columns scaled
    to unit norm, along the reference sampled at 20 Hz.
    """
    from skelarm_ros.identification.regressor import structure

    arm = structure(skeleton, grav_vec)
    times = np.arange(0.0, reference.duration, 1.0 / _PHASE_RATE)
    rng = np.random.default_rng(seed)
    n, k = reference.amplitudes.shape
    best, best_score = reference, math.inf
    for index in range(max(1, candidates)):
        phases = reference.phases if index == 0 else rng.uniform(0.0, 2.0 * math.pi, (n, k))
        candidate = replace(reference, phases=phases)
        matrix = arm.regressor(*candidate.sample_many(times))[:, arm.active][:, arm.base_columns]
        norms = np.linalg.norm(matrix, axis=0)
        score = float(np.linalg.cond(matrix / np.where(norms > 0.0, norms, 1.0)))
        if score < best_score:
            best, best_score = candidate, score
    return best


def plan_reference(
    skeleton: skelarm.Skeleton,
    task: skelarm.Task,
    *,
    grav_vec: NDArray[np.float64] | None = None,
    effort_limits: NDArray[np.float64] | None = None,
    headroom: float = 0.3,
) -> SumOfSines:
    """Plan the task's reference: choose its phases and fit its amplitudes to the joint and effort limits.

    Parameters
    ----------
    skeleton : skelarm.Skeleton
        The arm (limits; its model for the effort limits and the phase choice).
    task : skelarm.Task
        A sum-of-sines task.
    grav_vec : NDArray[np.float64] | None, optional
        Planar gravity of the arm's model (m/s^2).
    effort_limits : NDArray[np.float64] | None, optional
        Per-joint torque limits (N*m).
    headroom : float, optional
        Share of each effort limit left for feedback.

    Returns
    -------
    SumOfSines
        The reference.

    Raises
    ------
    ExcitationError
        With one sentence naming the key and the fix.
    """
    params = task.params
    reference = reference_from_task(skeleton, params, task.duration)
    gravity = np.zeros(2) if grav_vec is None else np.asarray(grav_vec, dtype=np.float64)
    if params.get("phases") == "optimized":
        seed = int(params.get("seed", 0))
        reference = optimize_phases(
            skeleton, reference, gravity, seed=seed, candidates=int(params.get("candidates", 32))
        )
    margin = math.radians(float(params.get("limit_margin", 5.0)))
    reference = fit_joint_limits(skeleton, reference, margin)
    if effort_limits is not None and np.isfinite(effort_limits).any():
        model, _ = build_model(skeleton, gravity)
        reference = fit_effort_limits(model, reference, effort_limits, headroom)
    if np.any(gravity):
        narrow = narrow_postures(skeleton, reference)
        if narrow:
            warnings.warn(
                f"the excitation cannot tell the joints' torque offsets from gravity: it holds {narrow} (widen the "
                "amplitudes of the joints up to such a link, within their limits; docs/identification.md, "
                "'Gravity, offsets and friction')",
                stacklevel=2,
            )
    return reference


def narrow_postures(skeleton: skelarm.Skeleton, reference: SumOfSines) -> str:
    """Say which links the reference sweeps too narrowly to tell a joint's torque offset from gravity; empty for none.

    A link's sweep is the range of its angle from the base's x axis along the reference
    (sampled at 20 Hz); below :data:`~skelarm_ros.identification.offsets.SWEEP` its
    joint's offset is not told apart from its gravity.
    """
    q, _, _ = reference.sample_many(np.arange(0.0, reference.duration, 1.0 / _PHASE_RATE))
    sweeps = link_sweeps(q, skeleton)
    if all(sweep.sweep >= SWEEP for sweep in sweeps):
        return ""
    return narrow_links(sweeps, None, 0, "them")


# -- the controller --------------------------------------------------------------------------------------


class ExcitationController(TrackingController):
    """Track a :class:`SumOfSines` by PD or computed torque, the torque clipped to the effort limits.

    Parameters
    ----------
    reference : SumOfSines
        The joint reference.
    kp, kd : NDArray[np.float64]
        Gains (1/s^2 and 1/s for computed torque, N*m/rad and N*m*s/rad for PD), shape ``(N,)``.
    law : str
        ``"pd"`` or ``"computed_torque"``.
    effort_limits : NDArray[np.float64]
        Per-joint torque limits (N*m; ``inf`` for none), shape ``(N,)``.
    model : pin.Model | None
        The arm's model, for computed torque.
    """

    def __init__(
        self,
        reference: SumOfSines,
        kp: NDArray[np.float64],
        kd: NDArray[np.float64],
        *,
        law: str,
        effort_limits: NDArray[np.float64],
        model: pin.Model | None = None,
    ) -> None:
        """Store the reference, gains, law and limits."""
        super().__init__(reference, kp, kd)
        self.sines = reference
        self.law = law
        self.effort_limits = effort_limits
        self.model = model
        self._data = model.createData() if model is not None else None

    def control(self, t: float, skeleton: skelarm.Skeleton) -> NDArray[np.float64]:
        """Return the clipped tracking torque (N*m) for the current state."""
        q_r, dq_r, ddq_r = self.sines.sample(t)
        q, dq = skeleton.q, skeleton.dq
        error = q_r - q
        if self.model is not None and self._data is not None:
            commanded = ddq_r + self.kd * (dq_r - dq) + self.kp * error
            torque = np.array(pin.rnea(self.model, self._data, q, dq, commanded))
        else:
            torque = self.kp * error + self.kd * (dq_r - dq)
        self._store(q_r, error)
        return np.clip(torque, -self.effort_limits, self.effort_limits)


def build_controller(params: Mapping[str, Any], skeleton: skelarm.Skeleton, task: skelarm.Task) -> skelarm.Controller:
    """Build the excitation controller of a ``[controller]`` table (the ``skelarm_ros.controllers`` entry point).

    Parameters
    ----------
    params : Mapping[str, Any]
        The ``[controller]`` table without ``type`` (``law``, ``kp``, ``kd``,
        ``effort_limits``, ``headroom``, ``grav_vec``; ``dt`` is skelarm's).
    skeleton : skelarm.Skeleton
        The scenario's arm, at its initial pose.
    task : skelarm.Task
        A sum-of-sines ``joint_trajectory_tracking`` task.

    Returns
    -------
    skelarm.Controller
        The controller.

    Raises
    ------
    ExcitationError
        With one sentence naming the key and the fix.
    """
    if task.type != TASK_TYPE or task.params.get("reference") != REFERENCE_KIND:
        msg = (
            f"controller type 'excitation' tracks a [task] of type '{TASK_TYPE}' with reference = "
            f"\"{REFERENCE_KIND}\" (its frequencies and amplitudes), not a '{task.type}' task"
        )
        raise ExcitationError(msg)
    n = skeleton.num_joints
    law = str(params.get("law", "pd"))
    if law not in LAWS:
        msg = f"unknown [controller].law '{law}'; choose from {list(LAWS)}"
        raise ExcitationError(msg)
    kp_default, kd_default = DEFAULT_GAINS[law]
    kp = _per_joint(params.get("kp", kp_default), "kp", "controller", n)
    kd = _per_joint(params.get("kd", kd_default), "kd", "controller", n)
    limits = np.full(n, math.inf)
    if "effort_limits" in params:
        limits = _per_joint(params["effort_limits"], "effort_limits", "controller", n)
        if np.any(limits <= 0.0):
            msg = f"[controller].effort_limits must be positive (N*m), got {limits.tolist()}"
            raise ExcitationError(msg)
    headroom = float(params.get("headroom", 0.3))
    if not 0.0 <= headroom < 1.0:
        msg = f"[controller].headroom is {headroom}; give the share of each effort limit kept for feedback, in [0, 1)"
        raise ExcitationError(msg)
    gravity = _per_joint(params.get("grav_vec", [0.0, 0.0]), "grav_vec", "controller", 2)
    reference = plan_reference(skeleton, task, grav_vec=gravity, effort_limits=limits, headroom=headroom)
    model = build_model(skeleton, gravity)[0] if law == "computed_torque" else None
    return ExcitationController(reference, kp, kd, law=law, effort_limits=limits, model=model)
