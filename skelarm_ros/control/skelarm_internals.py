# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The one place that reaches into the private state of skelarm's controllers.

The fast twins (:mod:`skelarm_ros.control.twins`) take over a controller that
:func:`skelarm.build_controller` returned, its whole instance state, and re-implement
its control law on the Pinocchio model. So they depend on skelarm's internals: the
private attributes where a tracking controller keeps the channels it logs and
:class:`~skelarm.mpc.JointSpaceMPC` its limits and warm start, and the private methods
of those classes that a twin calls or overrides. The private attributes are read and
written here and nowhere else in skelarm_ros; the two private methods the MPC twin
overrides (its only way in) are defined in the twin but listed here with the rest:

- :data:`EXPECTED` lists, per wrapped skelarm class, every instance attribute a built
  controller has and the methods a twin calls or overrides with their parameters;
  :func:`state_changes` compares a controller of the installed skelarm with it.
- :func:`take_over` moves a controller's state into a twin; the other functions read
  and write the private attributes for the twins.
- :func:`controller_builders` is skelarm's registry of controller types itself, for
  :func:`skelarm_ros.control.plugins.registry_restored` to put back as it was.

:func:`~skelarm_ros.control.twins.with_fast_model` refuses the twin (and keeps skelarm's
own model, with a warning) for a controller whose state has changed, and
test/test_control.py fails with the sentence naming what moved, so a skelarm release
that renames its internals is noticed before a twin reads a wrong attribute.

This module does not import rclpy.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING

import skelarm
import skelarm.scenario
from skelarm.control import ComputedTorque, InverseDynamicsFeedforwardPD, TrackingController
from skelarm.mpc import JointSpaceMPC

if TYPE_CHECKING:
    from collections.abc import Mapping

    import numpy as np
    from numpy.typing import NDArray


@dataclass(frozen=True)
class Internals:
    """What a twin relies on in one skelarm controller class.

    Attributes
    ----------
    attributes : frozenset[str]
        Every instance attribute of a built controller, public and private: the twin
        copies them all and re-implements the code that reads and writes them.
    methods : Mapping[str, tuple[str, ...]]
        The methods a twin calls or overrides, each with its parameter names after ``self``.
    """

    attributes: frozenset[str]
    methods: Mapping[str, tuple[str, ...]]


_TRACKING_STATE = frozenset({"reference", "kp", "kd", "_q_ref", "_error"})
_STORE = {"_store": ("q_ref", "error")}

EXPECTED: dict[type, Internals] = {
    ComputedTorque: Internals(_TRACKING_STATE, _STORE),
    InverseDynamicsFeedforwardPD: Internals(_TRACKING_STATE | {"_model"}, _STORE),
    JointSpaceMPC: Internals(
        frozenset(
            {
                *("reference", "horizon", "dt", "max_iter", "tau_max"),
                *("q_weight", "dq_weight", "tau_weight", "terminal_weight", "limit_weight"),
                *("_model", "_lower", "_upper", "_warm", "_q_ref", "_error"),
            }
        ),
        {
            "reset": ("skeleton",),
            "_predict": ("q", "dq", "tau"),
            "_rollout_cost": ("tau_flat", "q0", "dq0", "q_ref", "dq_ref"),
        },
    ),
}
"""The skelarm classes that have a twin, and what each twin relies on in them."""


def _method_changes(cls: type) -> list[str]:
    problems = []
    for method, parameters in EXPECTED[cls].methods.items():
        function = getattr(cls, method, None)
        if not callable(function):
            problems.append(f"skelarm's {cls.__name__} no longer has the method {method}({', '.join(parameters)})")
            continue
        found = tuple(inspect.signature(function).parameters)[1:]
        if found != parameters:
            problems.append(
                f"skelarm's {cls.__name__}.{method} now takes ({', '.join(found)}) instead of ({', '.join(parameters)})"
            )
    return problems


def state_changes(controller: skelarm.Controller) -> list[str]:
    """Say how a controller's state differs from what its twin was written against.

    Parameters
    ----------
    controller : skelarm.Controller
        A controller of one of the classes in :data:`EXPECTED` (exactly that class).

    Returns
    -------
    list[str]
        One sentence per difference (attributes gone or new, methods gone or with other
        parameters); empty when the twin can take the controller over.
    """
    cls = type(controller)
    expected = EXPECTED[cls].attributes
    found = set(vars(controller))
    problems = []
    if gone := sorted(expected - found):
        problems.append(f"skelarm's {cls.__name__} no longer has the attribute(s) {gone}")
    if new := sorted(found - expected):
        problems.append(f"skelarm's {cls.__name__} has attribute(s) {new} its fast twin does not know")
    return problems + _method_changes(cls)


def take_over[Twin: skelarm.Controller](controller: skelarm.Controller, twin: type[Twin]) -> Twin:
    """Return a ``twin`` holding ``controller``'s whole instance state (the same objects, not copies).

    Parameters
    ----------
    controller : skelarm.Controller
        The built controller; check it with :func:`state_changes` first.
    twin : type
        A subclass of ``type(controller)`` that adds no state of its own in ``__init__``.

    Returns
    -------
    Twin
        The twin; nothing of ``controller``'s class ``__init__`` runs again.
    """
    fast = object.__new__(twin)
    fast.__dict__.update(vars(controller))
    return fast


# -- tracking controllers (ComputedTorque, InverseDynamicsFeedforwardPD) -------------------------------


def store_tracking(controller: TrackingController, q_ref: NDArray[np.float64], error: NDArray[np.float64]) -> None:
    """Keep the joint reference and tracking error (rad) the controller logs as ``q_ref`` and ``error``."""
    controller._store(q_ref, error)


# -- JointSpaceMPC ---------------------------------------------------------------------------------------


def mpc_warm_start(mpc: JointSpaceMPC, skeleton: skelarm.Skeleton) -> NDArray[np.float64]:
    """Return the warm-start torque sequence, shape ``(horizon, N)``, resetting a controller never reset.

    skelarm's :meth:`~skelarm.mpc.JointSpaceMPC.control` resets the controller on the
    skeleton first when it has no prediction model or warm start yet; so does this.
    """
    if mpc._model is None or mpc._warm is None:
        mpc.reset(skeleton)
    assert mpc._warm is not None  # set by reset
    return mpc._warm


def mpc_keep(
    mpc: JointSpaceMPC, warm: NDArray[np.float64], q_ref: NDArray[np.float64], error: NDArray[np.float64]
) -> None:
    """Keep a solve's outcome: the next warm start ``(horizon, N)`` and the logged ``q_ref`` and ``error`` (rad)."""
    mpc._warm = warm
    mpc._q_ref = q_ref
    mpc._error = error


def mpc_joint_limits(mpc: JointSpaceMPC) -> tuple[NDArray[np.float64] | None, NDArray[np.float64] | None]:
    """Return the joint limits ``(lower, upper)`` (rad, shape ``(N,)``) the soft-limit cost uses; unset before reset."""
    return mpc._lower, mpc._upper


def mpc_predict(
    mpc: JointSpaceMPC, q: NDArray[np.float64], dq: NDArray[np.float64], tau: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Return the MPC's prediction of the joint accelerations (rad/s^2, shape ``(N,)``) for a torque at a state.

    skelarm's own model, or the twin's where a twin overrides it: the two compare through this.
    """
    return mpc._predict(q, dq, tau)


def mpc_rollout_cost(  # noqa: PLR0917 - skelarm's method's parameters, handed on
    mpc: JointSpaceMPC,
    plan: NDArray[np.float64],
    q: NDArray[np.float64],
    dq: NDArray[np.float64],
    q_ref: NDArray[np.float64],
    dq_ref: NDArray[np.float64],
) -> float:
    """Return the cost the MPC gives a flat torque ``plan`` (``horizon * N``) from a state, against references.

    ``q_ref`` and ``dq_ref`` have one row per step of the horizon and one more (shape ``(horizon + 1, N)``).
    """
    return float(mpc._rollout_cost(plan, q, dq, q_ref, dq_ref))


# -- the registry of controller types ---------------------------------------------------------------------


def controller_builders() -> dict[str, skelarm.ControllerBuilder]:
    """Return skelarm's registry of controller types (type name to builder), the dictionary itself.

    :func:`skelarm.register_controller` adds to it and :func:`skelarm.controller_types` lists it;
    skelarm offers no way to take a type back.
    """
    return skelarm.scenario._BUILDERS
