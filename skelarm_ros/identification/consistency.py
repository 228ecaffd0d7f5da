# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""From base parameters to a full, physically consistent set of link parameters closest to the prior.

The base parameters fix only some combinations of the links' parameters (masses, for
one, regroup into the links before them). Of the full sets that reproduce them,
this picks the one closest to the prior that is physically consistent:

``minimise sum_i ((theta_i - theta0_i) / s_i)^2 over theta = (m, mx, my, Izz) per link``
``subject to M theta = phi`` (the identified base parameters), and per link:

- a mass ``m >= 0.01 m0`` (``m0`` the prior's);
- a centre of mass where the link is: ``(mx, my) / m`` in the box from the joint
  ``(0, 0)`` to the next joint ``(L, 0)``, widened by ``com_margin * l`` on every
  side (``l`` the larger of the length, the prior's centre-of-mass distance and
  5 cm) and always holding the prior's centre of mass;
- a rotational inertia about the centre of mass ``Izz - (mx^2 + my^2) / m >= 1e-4 m0 l^2``
  (a cone: ``mx^2 + my^2 <= m (Izz - i_min)``).

The scales ``s`` are the prior's mass, ``m0 l`` and ``m0 l^2``. The problem is
convex; it is solved on the affine set ``M theta = phi`` (``theta = theta_p + N z``
with ``N`` its null space, so the base parameters are reproduced to rounding) by
cvxopt's cone QP solver (cvxopt comes with FIGAROH). When no consistent set
reproduces the base parameters (noise, or a prior far off), the set that fits the
torques best among the consistent ones is taken instead, and this is reported.
Each link is then checked with FIGAROH's
:func:`~figaroh.identification.physical_consistency.check_p10_feasibility` (its
pseudo-inertia positive semi-definite, the inertia taken as ``diag(i/2, i/2, i)``).

This module does not import rclpy.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from skelarm_ros.identification import IdentificationError
from skelarm_ros.identification.regressor import PLANAR_KEYS, TERM_KEYS
from skelarm_ros.sim.scenario import JointDrive

if TYPE_CHECKING:
    from collections.abc import Sequence

    import skelarm
    from numpy.typing import NDArray

    from skelarm_ros.identification.regressor import BaseFit

MASS_FLOOR = 0.01  # of the prior's mass
INERTIA_FLOOR = 1e-4  # of m0 l^2
DEFAULT_COM_MARGIN = 0.25  # of the link's scale l, on every side of the link's box
_MIN_SCALE = 0.05  # m
_MIN_MASS = 1e-3  # kg, the mass scale of a prior link without mass
_SOLVER_TOLERANCE = 1e-11
_FALLBACK_WEIGHT = 1e-6  # the prior's pull against the torque misfit when the base parameters cannot be kept
_FRICTION_ROW_TOL = 1e-9  # a mapping entry below this is zero
_ROUNDING = 1e-9  # of a term's scale: a negative armature or friction this small is zero
_EXTRA_SCALE = 1e-6  # the least scale of an armature, friction or offset in the prior's pull
_PREFIX_TERM = {prefix: term for term, prefix in TERM_KEYS.items()}
_LINEAR_PER_LINK = 5
_CONE = 4


@dataclass(frozen=True)
class LinkBounds:
    """The consistent region of one link's parameters (SI units, the link's frame)."""

    mass_min: float
    x: tuple[float, float]
    y: tuple[float, float]
    inertia_min: float
    scale: float


@dataclass(frozen=True)
class LinkParameters:
    """One link's inertial parameters as skelarm takes them: mass (kg), centre of mass (m), inertia (kg*m^2)."""

    mass: float
    com: tuple[float, float]
    inertia: float


@dataclass
class ConsistentSet:
    """The full parameter set of the twin.

    Attributes
    ----------
    links : list[LinkParameters]
        Per link.
    exact : bool
        Whether the set reproduces the identified base parameters (to rounding).
    misfit : float
        Relative torque misfit ``sqrt(d^T G d / phi^T G phi)`` of its base parameters
        (``d`` their difference to the identified ones, ``G = W_b^T W_b``); 0 when exact.
    drive : JointDrive
        Armature (kg*m^2), viscous (N*m*s/rad) and Coulomb (N*m) friction per joint
        (the prior's where not identified).
    offset : NDArray[np.float64] | None
        The torque offset per joint (N*m, a sensor's bias), when identified.
    joints : list[str]
        Joint names.
    terms : tuple[str, ...]
        What real arms have that was identified.
    regrouped : dict[str, str]
        Parameters that cannot be told apart from others (the first joint's armature
        from the first link's inertia about its joint), kept at the prior's value, with
        the base parameter they are part of.
    feasibility : list[str]
        FIGAROH's verdict per link (``feasible``).
    bounds : list[LinkBounds]
        The region each link was kept in.
    """

    links: list[LinkParameters]
    exact: bool
    misfit: float
    drive: JointDrive
    offset: NDArray[np.float64] | None = None
    joints: list[str] = field(default_factory=list)
    terms: tuple[str, ...] = ()
    regrouped: dict[str, str] = field(default_factory=dict)
    feasibility: list[str] = field(default_factory=list)
    bounds: list[LinkBounds] = field(default_factory=list)

    @property
    def friction(self) -> dict[str, tuple[float, float]]:
        """Per joint name: viscous and Coulomb coefficients, when friction was identified."""
        if "viscous" not in self.terms and "coulomb" not in self.terms:
            return {}
        return {
            joint: (float(v), float(c))
            for joint, v, c in zip(self.joints, self.drive.viscous, self.drive.coulomb, strict=True)
        }


def link_bounds(prior: skelarm.Skeleton, com_margin: float = DEFAULT_COM_MARGIN) -> list[LinkBounds]:
    """Return the consistent region of each link, from its length and the prior.

    Parameters
    ----------
    prior : skelarm.Skeleton
        The prior arm.
    com_margin : float, optional
        How far the centre of mass may leave the link's box, as a share of the link's scale.

    Returns
    -------
    list[LinkBounds]
        One per link.
    """
    bounds = []
    for link in prior.links[1:]:
        prop = link.prop
        scale = max(prop.length, abs(prop.rgx), abs(prop.rgy), _MIN_SCALE)
        mass = max(float(prop.m), _MIN_MASS)
        margin = com_margin * scale
        bounds.append(
            LinkBounds(
                mass_min=MASS_FLOOR * mass,
                x=(min(0.0, prop.rgx) - margin, max(prop.length, prop.rgx) + margin),
                y=(min(0.0, prop.rgy) - margin, max(0.0, prop.rgy) + margin),
                inertia_min=INERTIA_FLOOR * mass * scale**2,
                scale=scale,
            )
        )
    return bounds


def planar_names(num_joints: int) -> list[str]:
    """Return the planar standard parameters ``m_j1, mx_j1, my_j1, Izz_j1, ..., Izz_jN`` (FIGAROH's names)."""
    return [f"{key}_j{joint}" for joint in range(1, num_joints + 1) for key in PLANAR_KEYS]


def planar_vector(prior: skelarm.Skeleton) -> NDArray[np.float64]:
    """``(m, mx, my, Izz)`` per link of an arm, ``Izz`` about the joint, shape ``(4N,)``."""
    values = []
    for link in prior.links[1:]:
        p = link.prop
        values += [p.m, p.m * p.rgx, p.m * p.rgy, p.i + p.m * (p.rgx**2 + p.rgy**2)]
    return np.array(values, dtype=np.float64)


@dataclass
class _Variables:
    """The unknowns of the consistent set: 4 planar parameters per link, then the identified per-joint terms."""

    names: list[str]
    mapping: NDArray[np.float64]  # M over names: phi = M theta
    prior: NDArray[np.float64]  # theta0
    scales: NDArray[np.float64]
    non_negative: list[int]  # extra variables kept >= 0 (armature, friction)
    fixed: dict[int, float]  # variables kept at the prior's value (regrouped ones)
    regrouped: dict[str, str]


def _variables(fit: BaseFit, prior: skelarm.Skeleton, drive: JointDrive, bounds: Sequence[LinkBounds]) -> _Variables:
    n = prior.num_joints
    extras = [name for name in fit.params_r if name.split("_", 1)[0] in _PREFIX_TERM]
    names = planar_names(n) + extras
    columns = {name: index for index, name in enumerate(fit.params_r)}
    mapping = np.zeros((len(fit.values), len(names)))
    for j, name in enumerate(names):
        if name in columns:
            mapping[:, j] = fit.mapping[:, columns[name]]
    prior_terms = {"armature": drive.armature, "viscous": drive.viscous, "coulomb": drive.coulomb}
    theta0 = list(planar_vector(prior))
    scales = list(np.sqrt(1.0 / _weights(prior, bounds)))
    non_negative, fixed, regrouped = [], {}, {}
    for name in extras:
        prefix, joint = name.split("_", 1)
        term = _PREFIX_TERM[prefix]
        k = int(joint.lstrip("j")) - 1
        value = float(prior_terms[term][k]) if term in prior_terms else 0.0
        index = len(theta0)
        theta0.append(value)
        column = mapping[:, index]
        rows = np.flatnonzero(np.abs(column) > _FRICTION_ROW_TOL)
        own = rows.size == 1 and np.count_nonzero(np.abs(mapping[rows[0]]) > _FRICTION_ROW_TOL) == 1
        estimate = float(fit.values[rows[0]] / column[rows[0]]) if own else value
        scales.append(max(abs(estimate), abs(value), _EXTRA_SCALE))
        if term != "offset":
            non_negative.append(index)
        if not own:
            fixed[index] = value
            row = int(rows[0]) if rows.size else -1
            regrouped[name] = fit.names[row] if row >= 0 else "no base parameter"
    return _Variables(names, mapping, np.array(theta0), np.array(scales), non_negative, fixed, regrouped)


def _constraints(
    bounds: Sequence[LinkBounds], size: int, non_negative: Sequence[int] = (), slack: NDArray[np.float64] | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64], list[tuple[NDArray[np.float64], NDArray[np.float64]]]]:
    """Linear ``G theta <= h`` and, per link, the cone ``(a - A theta)`` in the second-order cone.

    ``size`` is the number of unknowns (``4 N`` planar ones, then the per-joint terms);
    the ``non_negative`` ones are kept at or above minus their ``slack`` (rounding; the
    twin then takes zero).
    """
    n = len(bounds)
    linear = np.zeros((_LINEAR_PER_LINK * n + len(non_negative), size))
    upper = np.zeros(_LINEAR_PER_LINK * n + len(non_negative))
    for row, index in enumerate(non_negative, start=_LINEAR_PER_LINK * n):
        linear[row, index] = -1.0
        upper[row] = 0.0 if slack is None else float(slack[index])
    cones = []
    for k, b in enumerate(bounds):
        m, mx, my, izz = (4 * k + offset for offset in range(4))
        row = _LINEAR_PER_LINK * k
        linear[row, m], upper[row] = -1.0, -b.mass_min  # m >= m_min
        linear[row + 1, [m, mx]] = (b.x[0], -1.0)  # x_lo m <= mx
        linear[row + 2, [m, mx]] = (-b.x[1], 1.0)  # mx <= x_hi m
        linear[row + 3, [m, my]] = (b.y[0], -1.0)
        linear[row + 4, [m, my]] = (-b.y[1], 1.0)
        # s = a - A theta in the cone: s0 = m + Izz - i_min, s1 = 2 mx, s2 = 2 my, s3 = m - Izz + i_min
        cone = np.zeros((_CONE, size))
        cone[0, [m, izz]] = (-1.0, -1.0)
        cone[1, mx] = -2.0
        cone[2, my] = -2.0
        cone[3, [m, izz]] = (-1.0, 1.0)
        cones.append((np.array([-b.inertia_min, 0.0, 0.0, b.inertia_min]), cone))
    return linear, upper, cones


def _solve_cone_qp(
    quadratic: NDArray[np.float64],
    linear_term: NDArray[np.float64],
    g_lin: NDArray[np.float64],
    h_lin: NDArray[np.float64],
    cones: Sequence[tuple[NDArray[np.float64], NDArray[np.float64]]],
) -> NDArray[np.float64] | None:
    """``min 1/2 x^T P x + q^T x`` s.t. ``G x <= h`` and ``a - A x`` in second-order cones; ``None`` if infeasible."""
    import cvxopt
    from cvxopt import solvers

    g = np.vstack([g_lin, *(cone for _, cone in cones)])
    h = np.concatenate([h_lin, *(offset for offset, _ in cones)])
    dims = {"l": g_lin.shape[0], "q": [_CONE] * len(cones), "s": []}
    options = {
        "show_progress": False,
        "abstol": _SOLVER_TOLERANCE,
        "reltol": _SOLVER_TOLERANCE,
        "feastol": _SOLVER_TOLERANCE,
        "maxiters": 200,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result: dict[str, Any] = solvers.coneqp(
                cvxopt.matrix(0.5 * (quadratic + quadratic.T)),
                cvxopt.matrix(linear_term),
                cvxopt.matrix(g),
                cvxopt.matrix(h),
                dims,
                options=options,
            )
        except (ValueError, ArithmeticError):  # cvxopt's "domain error" and singular KKT systems
            return None
    if result["status"] != "optimal" and result.get("primal infeasibility", 1.0) > 1e-6:
        return None
    return np.array(result["x"], dtype=np.float64).reshape(-1)


def _weights(prior: skelarm.Skeleton, bounds: Sequence[LinkBounds]) -> NDArray[np.float64]:
    scales = []
    for link, b in zip(prior.links[1:], bounds, strict=True):
        mass = max(float(link.prop.m), _MIN_MASS)
        scales += [mass, mass * b.scale, mass * b.scale, mass * b.scale**2]
    return 1.0 / np.square(np.array(scales))


def _pinned(variables: _Variables, phi: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``M theta = phi`` with the fixed (regrouped) variables held at their values, as one linear system."""
    rows = [variables.mapping]
    values = [phi]
    for index, value in variables.fixed.items():
        row = np.zeros((1, len(variables.names)))
        row[0, index] = 1.0
        rows.append(row)
        values.append(np.array([value]))
    return np.vstack(rows), np.concatenate(values)


def _exact(variables: _Variables, phi: NDArray[np.float64], bounds: Sequence[LinkBounds]) -> NDArray[np.float64] | None:
    """Return the consistent set closest to the prior on ``M theta = phi``, or ``None`` if there is none."""
    from scipy.linalg import null_space

    mapping, values = _pinned(variables, phi)
    scale = variables.scales
    # in the prior's units: theta = theta0 + scale * z
    scaled = mapping * scale
    offset = values - mapping @ variables.prior
    particular = np.linalg.lstsq(scaled, offset, rcond=None)[0]
    basis = null_space(scaled)
    slack = _ROUNDING * np.maximum(scale, 1e-3)
    g_lin, h_lin, cones = _constraints(bounds, len(variables.names), variables.non_negative, slack)
    h_lin = h_lin - g_lin @ variables.prior
    g_lin = g_lin * scale
    cones = [(a - c @ variables.prior, c * scale) for a, c in cones]
    if basis.shape[1] == 0:
        z = particular
        feasible = np.all(g_lin @ z <= h_lin + 1e-12) and all(_in_cone(a - c @ z) for a, c in cones)
        return variables.prior + scale * z if feasible else None
    w = _solve_cone_qp(
        2.0 * basis.T @ basis,
        2.0 * basis.T @ particular,
        g_lin @ basis,
        h_lin - g_lin @ particular,
        [(a - c @ particular, c @ basis) for a, c in cones],
    )
    return None if w is None else variables.prior + scale * (particular + basis @ w)


def _in_cone(s: NDArray[np.float64]) -> bool:
    return bool(s[0] >= np.linalg.norm(s[1:]) - 1e-12 * max(1.0, abs(s[0])))


def _nearest(
    variables: _Variables, phi: NDArray[np.float64], gram: NDArray[np.float64], bounds: Sequence[LinkBounds]
) -> NDArray[np.float64]:
    """Return the consistent set whose base parameters fit the torques best (the prior breaks ties)."""
    scale = variables.scales
    mapping = variables.mapping * scale  # theta = theta0 + scale * z
    gap = phi - variables.mapping @ variables.prior
    norm = float(phi @ gram @ phi) or 1.0
    size = len(variables.names)
    pull = _FALLBACK_WEIGHT * np.eye(size) / size
    for index in variables.fixed:
        pull[index, index] = 1.0 / _FALLBACK_WEIGHT  # regrouped: held at the prior's value
    quadratic = 2.0 * (mapping.T @ gram @ mapping / norm + pull)
    linear_term = -2.0 * (mapping.T @ gram @ gap / norm)
    g_lin, h_lin, cones = _constraints(bounds, size, variables.non_negative)
    h_lin = h_lin - g_lin @ variables.prior
    cones = [(a - c @ variables.prior, c * scale) for a, c in cones]
    z = _solve_cone_qp(quadratic, linear_term, g_lin * scale, h_lin, cones)
    if z is None:
        msg = (
            "the physically consistent set nearest to the identified base parameters could not be computed "
            "(the cone solver failed); check that the prior's masses, centres of mass and inertias are those of "
            "this arm's links and that its geometry (lengths, base) and gravity are right"
        )
        raise IdentificationError(msg)
    return variables.prior + scale * z


def _links(theta: NDArray[np.float64]) -> list[LinkParameters]:
    links = []
    for m, mx, my, izz in theta.reshape(-1, 4):
        rgx, rgy = mx / m, my / m
        links.append(LinkParameters(float(m), (float(rgx), float(rgy)), float(izz - m * (rgx**2 + rgy**2))))
    return links


def feasibility(links: Sequence[LinkParameters]) -> list[str]:
    """FIGAROH's physical-consistency verdict per link (inertia ``diag(i/2, i/2, i)`` about the centre of mass)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from figaroh.identification.physical_consistency import check_p10_feasibility

    verdicts = []
    for link in links:
        inertia = pin.Inertia(
            link.mass, np.array([*link.com, 0.0]), np.diag([link.inertia / 2, link.inertia / 2, link.inertia])
        )
        verdicts.append(str(check_p10_feasibility(inertia.toDynamicParameters(), mass_min=0.0).status))
    return verdicts


def consistent_set(
    fit: BaseFit,
    prior: skelarm.Skeleton,
    joints: Sequence[str],
    *,
    com_margin: float = DEFAULT_COM_MARGIN,
    drive: JointDrive | None = None,
    terms: Sequence[str] = (),
) -> ConsistentSet:
    """Find the physically consistent full set closest to the prior that reproduces the base parameters.

    Parameters
    ----------
    fit : BaseFit
        The identified base parameters.
    prior : skelarm.Skeleton
        The prior arm (its geometry is the twin's).
    joints : Sequence[str]
        Joint names.
    com_margin : float, optional
        How far a centre of mass may leave its link's box, as a share of the link's scale.
    drive : JointDrive | None, optional
        The prior's armature and friction (zero when ``None``).
    terms : Sequence[str], optional
        What real arms have that was identified (:data:`~skelarm_ros.identification.regressor.MODEL_TERMS`).

    Returns
    -------
    ConsistentSet
        The links' parameters, armature, friction and offsets, whether they reproduce
        the base parameters, and FIGAROH's verdicts.
    """
    n = len(joints)
    prior_drive = drive if drive is not None else JointDrive.ideal(n)
    bounds = link_bounds(prior, com_margin)
    variables = _variables(fit, prior, prior_drive, bounds)
    theta = _exact(variables, fit.values, bounds)
    exact = theta is not None
    if theta is None:
        theta = _nearest(variables, fit.values, fit.gram, bounds)
    difference = variables.mapping @ theta - fit.values
    norm = float(fit.values @ fit.gram @ fit.values) or 1.0
    misfit = 0.0 if exact else math.sqrt(max(float(difference @ fit.gram @ difference), 0.0) / norm)
    links = _links(theta[: 4 * n])
    found = {name: float(value) for name, value in zip(variables.names[4 * n :], theta[4 * n :], strict=True)}

    def per_joint(term: str, default: NDArray[np.float64]) -> NDArray[np.float64]:
        prefix = TERM_KEYS[term]
        values = [found.get(f"{prefix}_j{k + 1}", default[k]) for k in range(n)]
        return np.maximum(np.array(values, dtype=np.float64), 0.0) if term != "offset" else np.array(values)

    twin_drive = JointDrive(
        per_joint("armature", prior_drive.armature),
        per_joint("viscous", prior_drive.viscous),
        per_joint("coulomb", prior_drive.coulomb),
    )
    offset = per_joint("offset", np.zeros(n)) if "offset" in terms else None
    return ConsistentSet(
        links,
        exact,
        misfit,
        twin_drive,
        offset,
        list(joints),
        tuple(terms),
        variables.regrouped,
        feasibility(links),
        bounds,
    )
