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
from skelarm_ros.identification.regressor import FRICTION_KEYS, PLANAR_KEYS

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
_FRICTION_ROW_TOL = 1e-9
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
    friction : dict[str, tuple[float, float]]
        Per joint name: viscous (N*m*s/rad) and Coulomb (N*m) coefficients, when identified.
    feasibility : list[str]
        FIGAROH's verdict per link (``feasible``).
    bounds : list[LinkBounds]
        The region each link was kept in.
    """

    links: list[LinkParameters]
    exact: bool
    misfit: float
    friction: dict[str, tuple[float, float]] = field(default_factory=dict)
    feasibility: list[str] = field(default_factory=list)
    bounds: list[LinkBounds] = field(default_factory=list)


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


def _split_friction(
    fit: BaseFit, joints: Sequence[str]
) -> tuple[NDArray[np.float64], NDArray[np.bool_], dict[str, tuple[float, float]]]:
    """Take the friction coefficients out: the planar columns of ``M``, its inertial rows, and the friction."""
    n = len(joints)
    names = planar_names(n)
    columns = {name: index for index, name in enumerate(fit.params_r)}
    mapping = np.zeros((len(fit.values), len(names)))
    for j, name in enumerate(names):
        if name in columns:
            mapping[:, j] = fit.mapping[:, columns[name]]
    friction_columns = [i for i, name in enumerate(fit.params_r) if name.split("_", 1)[0] in FRICTION_KEYS]
    rows = np.ones(len(fit.values), dtype=bool)
    values: dict[str, float] = {}
    for column in friction_columns:
        hits = np.flatnonzero(np.abs(fit.mapping[:, column]) > _FRICTION_ROW_TOL)
        if hits.size != 1:
            msg = f"friction parameter {fit.params_r[column]} is not a base parameter of its own; identify without it"
            raise IdentificationError(msg)
        row = int(hits[0])
        values[fit.params_r[column]] = float(fit.values[row] / fit.mapping[row, column])
        rows[row] = False
    friction = {
        joint: (values.get(f"fv_j{k + 1}", 0.0), values.get(f"fs_j{k + 1}", 0.0)) for k, joint in enumerate(joints)
    }
    return mapping, rows, friction if friction_columns else {}


def _constraints(
    bounds: Sequence[LinkBounds],
) -> tuple[NDArray[np.float64], NDArray[np.float64], list[tuple[NDArray[np.float64], NDArray[np.float64]]]]:
    """Linear ``G theta <= h`` and, per link, the cone ``(a - A theta)`` in the second-order cone."""
    n = len(bounds)
    linear = np.zeros((_LINEAR_PER_LINK * n, 4 * n))
    upper = np.zeros(_LINEAR_PER_LINK * n)
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
        cone = np.zeros((_CONE, 4 * n))
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
        result: dict[str, Any] = solvers.coneqp(
            cvxopt.matrix(0.5 * (quadratic + quadratic.T)),
            cvxopt.matrix(linear_term),
            cvxopt.matrix(g),
            cvxopt.matrix(h),
            dims,
            options=options,
        )
    if result["status"] != "optimal" and result.get("primal infeasibility", 1.0) > 1e-6:
        return None
    return np.array(result["x"], dtype=np.float64).reshape(-1)


def _weights(prior: skelarm.Skeleton, bounds: Sequence[LinkBounds]) -> NDArray[np.float64]:
    scales = []
    for link, b in zip(prior.links[1:], bounds, strict=True):
        mass = max(float(link.prop.m), _MIN_MASS)
        scales += [mass, mass * b.scale, mass * b.scale, mass * b.scale**2]
    return 1.0 / np.square(np.array(scales))


def _exact(
    mapping: NDArray[np.float64],
    phi: NDArray[np.float64],
    theta0: NDArray[np.float64],
    weights: NDArray[np.float64],
    bounds: Sequence[LinkBounds],
) -> NDArray[np.float64] | None:
    """Return the consistent set closest to the prior on ``M theta = phi``, or ``None`` if there is none."""
    from scipy.linalg import null_space

    particular = np.linalg.lstsq(mapping, phi, rcond=None)[0]
    basis = null_space(mapping)
    g_lin, h_lin, cones = _constraints(bounds)
    if basis.shape[1] == 0:
        theta = particular
        feasible = np.all(g_lin @ theta <= h_lin + 1e-12) and all(_in_cone(a - c @ theta) for a, c in cones)
        return theta if feasible else None
    weighted = basis.T * weights
    z = _solve_cone_qp(
        2.0 * weighted @ basis,
        2.0 * weighted @ (particular - theta0),
        g_lin @ basis,
        h_lin - g_lin @ particular,
        [(a - c @ particular, c @ basis) for a, c in cones],
    )
    return None if z is None else particular + basis @ z


def _in_cone(s: NDArray[np.float64]) -> bool:
    return bool(s[0] >= np.linalg.norm(s[1:]) - 1e-12 * max(1.0, abs(s[0])))


def _nearest(
    mapping: NDArray[np.float64],
    phi: NDArray[np.float64],
    gram: NDArray[np.float64],
    theta0: NDArray[np.float64],
    *,
    weights: NDArray[np.float64],
    bounds: Sequence[LinkBounds],
) -> NDArray[np.float64]:
    """Return the consistent set whose base parameters fit the torques best (the prior breaks ties)."""
    norm = float(phi @ gram @ phi) or 1.0
    fit_term = mapping.T @ gram @ mapping / norm
    prior_term = _FALLBACK_WEIGHT * np.diag(weights) / len(theta0)
    quadratic = 2.0 * (fit_term + prior_term)
    linear_term = -2.0 * (mapping.T @ gram @ phi / norm + prior_term @ theta0)
    g_lin, h_lin, cones = _constraints(bounds)
    theta = _solve_cone_qp(quadratic, linear_term, g_lin, h_lin, cones)
    if theta is None:
        msg = "no physically consistent arm fits these runs; check the prior's geometry (lengths, base) and gravity"
        raise IdentificationError(msg)
    return theta


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
) -> ConsistentSet:
    """Find the physically consistent full set closest to the prior that reproduces the base parameters.

    Parameters
    ----------
    fit : BaseFit
        The identified base parameters.
    prior : skelarm.Skeleton
        The prior arm (its geometry is the twin's).
    joints : Sequence[str]
        Joint names, for the friction table.
    com_margin : float, optional
        How far a centre of mass may leave its link's box, as a share of the link's scale.

    Returns
    -------
    ConsistentSet
        The links' parameters, whether they reproduce the base parameters, friction and FIGAROH's verdicts.
    """
    full_mapping, rows, friction = _split_friction(fit, joints)
    mapping, phi = full_mapping[rows], fit.values[rows]
    gram_in = fit.gram[np.ix_(rows, rows)]
    bounds = link_bounds(prior, com_margin)
    theta0 = planar_vector(prior)
    weights = _weights(prior, bounds)
    theta = _exact(mapping, phi, theta0, weights, bounds)
    exact = theta is not None
    if theta is None:
        theta = _nearest(mapping, phi, gram_in, theta0, weights=weights, bounds=bounds)
    difference = mapping @ theta - phi
    norm = float(phi @ gram_in @ phi) or 1.0
    misfit = 0.0 if exact else math.sqrt(max(float(difference @ gram_in @ difference), 0.0) / norm)
    links = _links(theta)
    return ConsistentSet(links, exact, misfit, friction, feasibility(links), bounds)
