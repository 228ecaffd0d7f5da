# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The arm's dynamic regressor and base parameters with FIGAROH, and the least-squares fit.

This is the one adapter to FIGAROH (PyPI ``figaroh``, pinned in the lock). It calls:

- :func:`figaroh.tools.regressor.build_regressor_basic`: the joint-torque regressor
  ``W(q, dq, ddq)`` of the Pinocchio model, so ``tau = W theta`` with ``theta`` the
  standard parameters, ten per link (``m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz``,
  about the joint frame) plus FIGAROH's own per-joint parameters of what real arms
  have: a viscous ``fv`` and a Coulomb ``fs`` friction coefficient (its
  ``has_friction``), the actuator inertia ``Ia`` (its ``has_actuator_inertia``: the
  armature) and a torque offset ``off`` (its ``has_joint_offset``: a current sensor's
  bias);
- :func:`figaroh.identification.parameter.get_standard_parameters` and
  :func:`~figaroh.identification.parameter.add_standard_additional_parameters`: the
  parameter names and the prior's values;
- :func:`figaroh.tools.regressor.get_index_eliminate`: the parameters that never act
  (for a planar arm every one but ``m, mx, my, Izz``; without gravity also the first
  link's ``m, mx, my``);
- :class:`figaroh.tools.qrdecomposition.QRDecomposer` (``double_decomposition``): the
  base parameters, their expressions in the standard ones, the map ``phi = M theta``
  and the least-squares estimate;
- :func:`figaroh.tools.qrdecomposition.cond_num`: the base regressor's condition number.

FIGAROH's ``BaseIdentification`` pipeline and ``integration.api.identify_parameters``
are not used: the latter is broken in 1.0.2, and the former reads the sampling rate
from its own YAML configuration, filters with edge transients and defaults to
decimating and plotting (docs/identification.md). FIGAROH needs the caller to set
``act_idxq`` / ``act_idxv`` and to turn its model components (friction, actuator
inertia, joint offsets) off explicitly; the Pinocchio model is the simulator's
(:func:`skelarm_ros.sim.engine.build_model`: same joints, placements and planar gravity,
set on the model after it is built), with each link's rotational inertia written as
``diag(i/2, i/2, i)`` (a flat plate, which FIGAROH's physical-consistency check
accepts; ``diag(0, 0, i)`` it rejects). Only ``Izz`` acts in the plane.

This module does not import rclpy.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from skelarm_ros.identification import IdentificationError
from skelarm_ros.identification.signals import check_cutoff, lowpass
from skelarm_ros.sim.engine import ArmEngine, build_model
from skelarm_ros.sim.scenario import JointDrive

if TYPE_CHECKING:
    from collections.abc import Sequence

    import skelarm
    from numpy.typing import ArrayLike, NDArray

    from skelarm_ros.identification.data import Samples

INERTIAL_KEYS = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")  # FIGAROH's order per link
PLANAR_KEYS = ("m", "mx", "my", "Izz")  # the ones that act on a planar arm
# What real arms have, per joint, by this package's name and FIGAROH's parameter prefix (in its column order).
TERM_KEYS = {"viscous": "fv", "coulomb": "fs", "armature": "Ia", "offset": "off"}
MODEL_TERMS = ("armature", "viscous", "coulomb", "offset")  # identified by default
TERM_UNITS = {"armature": "kg*m^2", "viscous": "N*m*s/rad", "coulomb": "N*m", "offset": "N*m"}
FRICTION_KEYS = ("fv", "fs")  # viscous (N*m*s/rad), Coulomb (N*m)
RANK_RTOL = 1e-8  # a base column whose residual is below this fraction of the largest is not excited
SAMPLES_PER_PARAMETER = 5  # fewer rows than this many per parameter is too few samples
_STRUCTURE_SAMPLES = 40  # random states per joint that reveal the structural base parameters
_ZERO_COLUMN = 1e-20  # squared-norm fraction below which a column never acts


def _figaroh() -> Any:
    """Import the FIGAROH functions (FIGAROH imports its whole tree; one of its binaries warns once)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ndcurves registers a converter twice and says so on import
        from figaroh.identification.parameter import add_standard_additional_parameters, get_standard_parameters
        from figaroh.tools.qrdecomposition import QRDecomposer, cond_num
        from figaroh.tools.regressor import build_regressor_basic, build_regressor_reduced, get_index_eliminate
    return SimpleNamespace(
        add_standard_additional_parameters=add_standard_additional_parameters,
        get_standard_parameters=get_standard_parameters,
        QRDecomposer=QRDecomposer,
        cond_num=cond_num,
        build_regressor_basic=build_regressor_basic,
        build_regressor_reduced=build_regressor_reduced,
        get_index_eliminate=get_index_eliminate,
    )


def figaroh_model(skeleton: skelarm.Skeleton, grav_vec: ArrayLike | None = None) -> pin.Model:
    """Build the simulator's Pinocchio model of the arm, its inertias as FIGAROH accepts them.

    Parameters
    ----------
    skeleton : skelarm.Skeleton
        The arm (geometry and, as the prior, inertial parameters).
    grav_vec : ArrayLike | None, optional
        Planar gravity ``(gx, gy)`` (m/s^2); ``None`` is zero.

    Returns
    -------
    pin.Model
        Joints ``j1 ... jN`` as :func:`skelarm_ros.sim.engine.build_model` places them, each
        link's inertia ``diag(i/2, i/2, i)`` about its centre of mass.
    """
    model, _ = build_model(skeleton, grav_vec)
    for joint, link in enumerate(skeleton.links[1:], start=1):
        prop = link.prop
        com = np.array([prop.rgx, prop.rgy, 0.0])
        model.inertias[joint] = pin.Inertia(float(prop.m), com, np.diag([prop.i / 2, prop.i / 2, prop.i]))
    return model


@dataclass
class Structure:
    """The regressor of one arm: its standard parameters, which act, and how many base parameters there are.

    Attributes
    ----------
    model : pin.Model
        The Pinocchio model (:func:`figaroh_model`).
    config : dict[str, Any]
        The identification settings FIGAROH's functions read (``act_idxq``, ``act_idxv``, ...).
    standard : dict[str, float]
        Every standard parameter (``m_j1``, ..., ``Izz_jN``, then ``fv_j1`` ... ``fs_jN``)
        with the prior's value (friction 0).
    active : list[int]
        Columns of the regressor that act (FIGAROH's remaining parameters).
    params_r : list[str]
        Their names.
    rank : int
        The number of base parameters (3N-2 for a planar arm without gravity, 3N with,
        plus 2N with friction).
    base_columns : list[int]
        Which of ``params_r`` FIGAROH took as the independent (base) columns.
    terms : tuple[str, ...]
        What real arms have that is in the model (of :data:`MODEL_TERMS`).
    offsets : tuple[int, ...]
        The joints (0-based) whose torque offset is in the model (none without ``offset`` in ``terms``).
    base_names : list[str]
        FIGAROH's expression of each base parameter in the standard ones, as the random states
        give them (a fit's are the same where its data picks the same base columns).
    mapping : NDArray[np.float64]
        ``M`` with ``phi = M theta_r`` for those, shape ``(rank, len(params_r))``.
    """

    model: pin.Model
    config: dict[str, Any]
    standard: dict[str, float]
    active: list[int]
    params_r: list[str]
    rank: int
    base_columns: list[int]
    terms: tuple[str, ...]
    offsets: tuple[int, ...] = ()
    _robot: Any = None
    base_names: list[str] = field(default_factory=list)
    mapping: NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 0)))

    @property
    def friction(self) -> bool:
        """Whether viscous or Coulomb friction is in the model."""
        return "viscous" in self.terms or "coulomb" in self.terms

    @property
    def num_joints(self) -> int:
        """Number of joints."""
        return int(self.model.nv)

    def regressor(
        self, q: NDArray[np.float64], dq: NDArray[np.float64], ddq: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """FIGAROH's joint-torque regressor, rows joint-major (all samples of joint 1 first), every column.

        Parameters
        ----------
        q, dq, ddq : NDArray[np.float64]
            States and accelerations, shape ``(S, N)``.

        Returns
        -------
        NDArray[np.float64]
            Shape ``(N * S, len(standard))``.
        """
        return np.asarray(_figaroh().build_regressor_basic(self._robot, q, dq, ddq, self.config), dtype=np.float64)


def structure(
    skeleton: skelarm.Skeleton,
    grav_vec: ArrayLike | None = None,
    *,
    terms: Sequence[str] = (),
    drive: JointDrive | None = None,
    offsets: Sequence[int] | None = None,
) -> Structure:
    """Work out the arm's regressor structure from random states (no data needed).

    Parameters
    ----------
    skeleton : skelarm.Skeleton
        The arm: its geometry, and its inertial parameters as the prior.
    grav_vec : ArrayLike | None, optional
        Planar gravity ``(gx, gy)`` (m/s^2).
    terms : Sequence[str], optional
        What real arms have to put in the model, of :data:`MODEL_TERMS` (armature,
        viscous and Coulomb friction, torque offset); none by default.
    drive : JointDrive | None, optional
        The prior's armature and friction (zero when ``None``).
    offsets : Sequence[int] | None, optional
        With ``offset`` in ``terms``: the joints (0-based) whose torque offset is in the
        model; ``None`` for every joint. An empty list leaves the term out.

    Returns
    -------
    Structure
        The standard parameters, the acting ones and the number of base parameters.
    """
    fig = _figaroh()
    model = figaroh_model(skeleton, grav_vec)
    n = int(model.nv)
    joints = list(range(n))
    unknown = [term for term in terms if term not in TERM_KEYS]
    if unknown:
        msg = f"unknown model term {', '.join(unknown)}; choose from {list(MODEL_TERMS)}"
        raise IdentificationError(msg)
    offset_joints = tuple(joints if offsets is None else sorted(set(offsets) & set(joints)))
    chosen = tuple(term for term in MODEL_TERMS if term in terms and (term != "offset" or offset_joints))
    if "offset" not in chosen:
        offset_joints = ()
    prior = drive if drive is not None else JointDrive.ideal(n)
    config: dict[str, Any] = {
        "act_idxq": joints,  # FIGAROH does not fill these in itself
        "act_idxv": joints,
        "is_joint_torques": True,
        "is_external_wrench": False,
        # FIGAROH's model components default on: every one is set
        "has_friction": "viscous" in chosen or "coulomb" in chosen,
        "has_actuator_inertia": "armature" in chosen,
        "has_joint_offset": "offset" in chosen,
        "fv": prior.viscous.tolist(),
        "fs": prior.coulomb.tolist(),
        "Ia": prior.armature.tolist(),
        "off": [0.0] * n,
    }
    standard = {key: float(value) for key, value in fig.get_standard_parameters(model, config).items()}
    standard.update(fig.add_standard_additional_parameters(model, config))
    robot = SimpleNamespace(model=model, data=model.createData())
    rng = np.random.default_rng(20260)
    rows = _STRUCTURE_SAMPLES * n
    q = rng.uniform(-math.pi, math.pi, (rows, n))
    dq = rng.normal(0.0, 2.0, (rows, n))
    ddq = rng.normal(0.0, 5.0, (rows, n))
    matrix = np.asarray(fig.build_regressor_basic(robot, q, dq, ddq, config), dtype=np.float64)
    norms = np.einsum("ij,ij->j", matrix, matrix)
    eliminated, params_r = fig.get_index_eliminate(matrix, standard, tol_e=_ZERO_COLUMN * float(norms.max()))
    # viscous without Coulomb friction, or the other way round: FIGAROH adds both, the other is left out
    off = {TERM_KEYS[term] for term in ("viscous", "coulomb") if config["has_friction"] and term not in chosen}
    names = list(standard)
    without = {f"{TERM_KEYS['offset']}_j{k + 1}" for k in joints if k not in offset_joints}
    dropped = [index for index, name in enumerate(names) if name.split("_", 1)[0] in off or name in without]
    eliminated = sorted(set(eliminated) | set(dropped))
    params_r = [name for index, name in enumerate(names) if index not in set(eliminated)]
    active = [index for index in range(matrix.shape[1]) if index not in set(eliminated)]
    decomposer = fig.QRDecomposer(tolerance=0.0, relative_tolerance=RANK_RTOL)
    reduced = fig.build_regressor_reduced(matrix, eliminated)
    _, _, names, _ = decomposer.double_decomposition(np.zeros(reduced.shape[0]), reduced, list(params_r))
    base_columns = list(decomposer.get_base_indices() or [])
    mapping = np.asarray(decomposer.get_M(), dtype=np.float64)
    return Structure(
        model,
        config,
        standard,
        active,
        list(params_r),
        len(names),
        base_columns,
        chosen,
        offset_joints,
        robot,
        list(names),
        mapping,
    )


@dataclass
class BaseFit:
    """Base parameters identified by least squares, with their quality.

    Attributes
    ----------
    names : list[str]
        FIGAROH's expression of each base parameter in the standard ones
        (``Izz_j1 + 0.25*m_j2``), rounded for display.
    values : NDArray[np.float64]
        The identified base parameters, shape ``(r,)``.
    std : NDArray[np.float64]
        Their standard deviations, shape ``(r,)``: ``sqrt(diag(G^-1 S G^-1))`` with
        ``G = W_b^T W_b`` and ``S`` the long-run covariance of the samples' scores
        ``W_b,t^T e_t`` (``e`` the residual), estimated from sums over overlapping blocks
        of ``block`` consecutive samples, so residuals correlated in time (by the filter,
        or by what the model lacks) count as the fewer independent samples they are.
    prior : NDArray[np.float64]
        The prior's base parameters, shape ``(r,)``.
    mapping : NDArray[np.float64]
        ``M`` with ``phi = M theta_r``, shape ``(r, len(params_r))``.
    params_r : list[str]
        The acting standard parameters (columns of ``mapping``).
    columns : list[str]
        The standard parameter whose regressor column each base parameter's is (FIGAROH's pivots).
    condition : float
        Condition number of the base regressor (FIGAROH's ``cond_num``).
    residual_rms : NDArray[np.float64]
        RMS of ``tau - W_b phi`` per joint (N*m), shape ``(N,)``.
    torque_rms : NDArray[np.float64]
        RMS of the fitted torque per joint (N*m), shape ``(N,)``.
    gram : NDArray[np.float64]
        ``W_b^T W_b`` of the base regressor, shape ``(r, r)`` (the torque metric of the base parameters).
    samples : int
        Samples (steps) in the fit.
    filtered_out : int
        Samples left out because their segment was too short to filter.
    block : int
        The block length (samples) of the long-run covariance: a few times the scores'
        integrated autocorrelation time.
    effective : float
        The samples' worth in independent ones (what the white-noise deviations would
        need for the same spread).
    cutoff : float | None
        The filter's cut-off (Hz) the fit used.
    """

    names: list[str]
    values: NDArray[np.float64]
    std: NDArray[np.float64]
    prior: NDArray[np.float64]
    mapping: NDArray[np.float64]
    params_r: list[str]
    columns: list[str]
    condition: float
    residual_rms: NDArray[np.float64]
    torque_rms: NDArray[np.float64]
    gram: NDArray[np.float64]
    samples: int
    filtered_out: int = 0
    block: int = 1
    effective: float = 0.0
    cutoff: float | None = None


def applied_torque(skeleton: skelarm.Skeleton, samples: Samples) -> NDArray[np.float64]:
    """Return the joint torque plus ``J(q)^T F`` of the recorded tip force, shape ``(S, N)``."""
    if samples.force is None:
        return samples.tau
    engine = ArmEngine(skeleton, 1.0, enforce_limits=False)
    total = samples.tau.copy()
    for row in np.flatnonzero(np.any(samples.force != 0.0, axis=1)):
        total[row] += engine.jacobian(samples.q[row]).T @ samples.force[row]
    return total


def _stack(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """``(S, N)`` per-sample joint values as FIGAROH stacks them: joint-major, shape ``(N * S,)``."""
    return np.ascontiguousarray(values.T).reshape(-1)


def _filtered(
    matrix: NDArray[np.float64], torque: NDArray[np.float64], samples: Samples, cutoff: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """Low-pass the regressor's rows and the torque alike (parallel filtering); the samples kept."""
    check_cutoff(cutoff, samples.step)
    n = torque.shape[1]
    per_sample = matrix.reshape(n, len(samples), -1).transpose(1, 0, 2)
    smooth_w = lowpass(per_sample, samples.segment, cutoff, samples.step)
    smooth_t = lowpass(torque, samples.segment, cutoff, samples.step)
    keep = np.isfinite(smooth_t).all(axis=1)
    kept_w = smooth_w[keep].transpose(1, 0, 2).reshape(n * int(keep.sum()), -1)
    return kept_w, smooth_t[keep], keep


_BLOCK_PER_TAU = 3.0  # block length of the long-run covariance, in integrated autocorrelation times
_SOKAL_WINDOW = 5.0  # Sokal's automatic window for the integrated autocorrelation time


def _autocorrelation_time(scores: NDArray[np.float64]) -> float:
    """Return the largest integrated autocorrelation time (samples) of the score columns (Sokal's window)."""
    count = scores.shape[0]
    centred = scores - scores.mean(axis=0)
    size = 1 << int(2 * count - 1).bit_length()
    spectrum = np.fft.rfft(centred, n=size, axis=0)
    correlation = np.fft.irfft(np.abs(spectrum) ** 2, n=size, axis=0)[:count]
    variance = correlation[0]
    longest = 1.0
    for column in np.flatnonzero(variance > 0.0):
        rho = correlation[:, column] / variance[column]
        tau = 1.0 + 2.0 * np.cumsum(rho[1:])
        window = np.flatnonzero(np.arange(1, count) >= _SOKAL_WINDOW * tau)
        longest = max(longest, float(tau[window[0]]) if window.size else float(tau[-1]))
    return longest


def _long_run(scores: NDArray[np.float64], segment: NDArray[np.int64], block: int) -> NDArray[np.float64]:
    """Long-run covariance of the scores' sum by overlapping block sums, within each segment."""
    width = scores.shape[1]
    out = np.zeros((width, width))
    starts = np.flatnonzero(np.diff(segment, prepend=segment[:1] - 1))
    ends = [*starts[1:].tolist(), len(segment)]
    for start, end in zip(starts.tolist(), ends, strict=True):
        part = scores[start:end]
        length = min(block, len(part))
        cumulative = np.vstack([np.zeros((1, width)), np.cumsum(part, axis=0)])
        sums = cumulative[length:] - cumulative[:-length]
        out += (sums.T @ sums) / length * (len(part) / len(sums))
    return out


def deviations(
    w_base: NDArray[np.float64], residual: NDArray[np.float64], segment: NDArray[np.int64], gram: NDArray[np.float64]
) -> tuple[NDArray[np.float64], int, float]:
    """Return the standard deviations of the base parameters from correlated residuals.

    Parameters
    ----------
    w_base : NDArray[np.float64]
        The base regressor, rows joint-major, shape ``(n * S, r)``.
    residual : NDArray[np.float64]
        ``tau - W_b phi``, joint-major, shape ``(n * S,)``.
    segment : NDArray[np.int64]
        Segment of each sample, shape ``(S,)``.
    gram : NDArray[np.float64]
        ``W_b^T W_b``.

    Returns
    -------
    tuple[NDArray[np.float64], int, float]
        The deviations, the block length (samples) and the effective number of samples.
    """
    count = len(segment)
    r = w_base.shape[1]
    scores = np.einsum("jtr,jt->tr", w_base.reshape(-1, count, r), residual.reshape(-1, count))
    tau = _autocorrelation_time(scores)
    block = int(min(max(1, math.ceil(_BLOCK_PER_TAU * tau)), max(1, count // 4)))
    inverse = np.linalg.inv(gram)
    dof = max(residual.size - r, 1)
    inflate = residual.size / dof
    white = inverse @ (scores.T @ scores) @ inverse * inflate
    covariance = inverse @ _long_run(scores, segment, block) @ inverse * inflate
    std = np.sqrt(np.maximum(np.diag(covariance), 0.0))
    spread = float(np.trace(covariance))
    effective = count * float(np.trace(white)) / spread if spread > 0.0 else float(count)
    return std, block, effective


def _unexcited(reduced: NDArray[np.float64], base_columns: Sequence[int], names: Sequence[str]) -> list[str]:
    """Return the parameters of ``base_columns`` that span the regressor's null space."""
    block = reduced[:, list(base_columns)]
    scale = np.linalg.norm(block, axis=0)
    scale[scale == 0.0] = 1.0
    _, singular, vt = np.linalg.svd(block / scale, full_matrices=False)
    weak = singular <= RANK_RTOL * max(float(singular[0]), np.finfo(float).tiny)
    picked: list[str] = []
    for vector in vt[weak]:
        for index in np.argsort(-np.abs(vector)):
            name = names[list(base_columns)[int(index)]]
            if name not in picked:
                picked.append(name)
                break
    return picked


def check_count(arm: Structure, samples: Samples) -> int:
    """Refuse too few samples for the parameters; return the least number of samples.

    Raises
    ------
    IdentificationError
        With the count, how many were dropped and how many are needed.
    """
    minimum = math.ceil(SAMPLES_PER_PARAMETER * len(arm.params_r) / arm.num_joints)
    if len(samples) < minimum:
        msg = (
            f"too few samples: {len(samples)} usable steps ({samples.dropped} dropped as NaN or masked) for "
            f"{len(arm.params_r)} parameters; record at least {minimum} steps of an exciting run"
        )
        raise IdentificationError(msg)
    return minimum


def fit(arm: Structure, samples: Samples, skeleton: skelarm.Skeleton, *, cutoff: float | None = None) -> BaseFit:
    """Identify the base parameters from samples by least squares (FIGAROH's double QR).

    Parameters
    ----------
    arm : Structure
        The arm's regressor structure.
    samples : Samples
        The aligned samples.
    skeleton : skelarm.Skeleton
        The arm's geometry (for the tip force's Jacobian).
    cutoff : float | None, optional
        Low-pass the torque and the regressor's rows alike at this frequency (Hz);
        ``None`` for no filter.

    Returns
    -------
    BaseFit
        The base parameters with their standard deviations, the condition number and the residuals.

    Raises
    ------
    IdentificationError
        With too few samples, or when the run does not excite some base parameter
        (the sentence names them and gives the rank).
    """
    fig = _figaroh()
    n = arm.num_joints
    minimum = check_count(arm, samples)
    matrix = arm.regressor(samples.q, samples.dq, samples.ddq)
    torque = applied_torque(skeleton, samples)
    dropped = 0
    segment = samples.segment
    if cutoff is not None:
        matrix, torque, keep = _filtered(matrix, torque, samples, cutoff)
        dropped = int(np.count_nonzero(~keep))
        segment = segment[keep]
        if torque.shape[0] < minimum:
            msg = (
                f"too few samples: {torque.shape[0]} steps remain after filtering at {cutoff} Hz for "
                f"{len(arm.params_r)} parameters; record longer runs without gaps"
            )
            raise IdentificationError(msg)
    reduced = matrix[:, arm.active]
    stacked = _stack(torque)
    # FIGAROH's QR runs on the triangular factor of [W tau]: the same normal equations, pivots
    # and estimate as on every row, at the cost of one QR of the rows instead of three.
    compact = np.linalg.qr(np.column_stack([reduced, stacked]), mode="r")
    decomposer = fig.QRDecomposer(tolerance=0.0, relative_tolerance=RANK_RTOL)
    _, _, names, phi, phi_prior = decomposer.double_decomposition(
        compact[:, -1], compact[:, :-1], arm.params_r, arm.standard
    )
    if len(names) < arm.rank:
        missing = _unexcited(compact[:, :-1], arm.base_columns, arm.params_r)
        msg = (
            f"the run does not excite every base parameter: the regressor has rank {len(names)} of {arm.rank} "
            f"(not excited: {', '.join(missing)}); record a run that moves every joint with changing "
            "velocity and acceleration, e.g. the bundled excitation scenario"
        )
        raise IdentificationError(msg)
    base_indices = list(decomposer.get_base_indices())
    w_base = reduced[:, base_indices]
    residual = stacked - w_base @ phi
    gram = w_base.T @ w_base
    std, block, effective = deviations(w_base, residual, segment, gram)
    per_joint = residual.reshape(n, -1)
    return BaseFit(
        names=list(names),
        values=np.asarray(phi, dtype=np.float64),
        std=std,
        prior=np.asarray(phi_prior, dtype=np.float64),
        mapping=np.asarray(decomposer.get_M(), dtype=np.float64),
        params_r=list(arm.params_r),
        columns=[arm.params_r[index] for index in base_indices],
        condition=float(fig.cond_num(w_base)),
        residual_rms=np.sqrt(np.mean(per_joint**2, axis=1)),
        torque_rms=np.sqrt(np.mean(torque**2, axis=0)),
        gram=gram,
        samples=int(torque.shape[0]),
        filtered_out=dropped,
        block=block,
        effective=effective,
        cutoff=cutoff,
    )


def base_of(fit_result: BaseFit, standard: dict[str, float]) -> NDArray[np.float64]:
    """Return the base parameters of a standard parameter set (``M theta_r``), shape ``(r,)``."""
    theta = np.array([standard.get(name, 0.0) for name in fit_result.params_r])
    return fit_result.mapping @ theta


def standard_of(skeleton: skelarm.Skeleton, grav_vec: ArrayLike | None = None) -> dict[str, float]:
    """Return the standard parameters of an arm (``m_j1``, ``mx_j1``, ..., ``Izz_jN``) as FIGAROH names them."""
    model = figaroh_model(skeleton, grav_vec)
    return {key: float(value) for key, value in _figaroh().get_standard_parameters(model, {}).items()}
