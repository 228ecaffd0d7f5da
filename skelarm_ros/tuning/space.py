# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Which gains of a controller ``skelarm-ros tune`` searches, and over what range: one table, one place.

Each controller type that can be tuned declares its tunable keys in :data:`TUNABLE`: the
key of its ``[controller]`` table, the range searched, and how the range is set: relative to
the scenario's own value (gains: from a tenth to ten times, searched on a log scale, so an
arm of any size gets a range of its scale), absolute (ratios), or, for a joint damping that a
scenario often leaves at 0, from none to the arm's own damping scale (the joint damping its
lightest joint holds alone, sampled at the driver's period with the longest command delay
the tuning samples: a damping ``D`` on an inertia ``m`` sampled every ``T`` is stable while
``D*T/m < 2`` with each command acting at the next tick, only below 1 a tick later, 0.45
three ticks later; :func:`skelarm_ros.tuning.evaluate.damping_scale`, docs/controller.md,
"Loop latency"). A range always holds the scenario's own value, so the first trial runs the
scenario's gains. A key the
scenario does not give takes skelarm's default (:data:`SKELARM_DEFAULTS`, checked against
skelarm's own builders by a test). A gain given per joint (a list) keeps its shape: one
factor scales the whole list. A type without tunable keys (``mpc``, whose horizon and
weights are a design choice rather than gains, and the excitation plugin) is refused in one
sentence.

This module imports neither rclpy nor Optuna.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping


class TuningError(ValueError):
    """What ``skelarm-ros tune`` cannot do; the message names the cause and the fix."""


RELATIVE = "relative"
ABSOLUTE = "absolute"
DAMPING = "damping"


@dataclass(frozen=True)
class Gain:
    """One tunable key of a controller type.

    Attributes
    ----------
    key : str
        The key in ``[controller]``.
    low, high : float
        The range: factors of the scenario's value (``relative``), values (``absolute``), or
        shares of the arm's damping scale (``damping``).
    kind : str
        ``relative``, ``absolute`` or ``damping``.
    log : bool
        Whether the range is searched on a log scale.
    meaning : str
        What it is, for the docs.
    """

    key: str
    low: float
    high: float
    kind: str = RELATIVE
    log: bool = True
    meaning: str = ""


def _stiffness(key: str, meaning: str) -> Gain:
    return Gain(key, 0.1, 10.0, meaning=meaning)


_JOINT_GAINS = (_stiffness("kp", "position gain"), _stiffness("kd", "velocity gain"))
_TASK_GAINS = (
    _stiffness("k_task", "task-space stiffness (N/m)"),
    _stiffness("d_task", "task-space damping (N*s/m)"),
    Gain("c_joint", 0.0, 1.0, DAMPING, log=False, meaning="joint damping (N*m*s/rad)"),
)
TUNABLE: dict[str, tuple[Gain, ...]] = {
    "computed_torque": _JOINT_GAINS,
    "joint_pd": _JOINT_GAINS,
    "inverse_dynamics_pd": _JOINT_GAINS,
    "virtual_spring_damper": _TASK_GAINS,
    "time_varying_stiffness": (
        _stiffness("k0", "saturated task-space stiffness (N/m)"),
        _stiffness("alpha", "rate of the stiffness' rise (1/s)"),
        Gain("zeta1", 0.02, 2.0, ABSOLUTE, meaning="damping as a share of the stiffness (s)"),
        _TASK_GAINS[2],
    ),
    "online_shaping": (*_TASK_GAINS, Gain("r", 0.05, 0.95, ABSOLUTE, log=False, meaning="shaping ratio")),
    "position_dependent_shaping": (*_TASK_GAINS, _stiffness("a", "shaping distance (m)")),
    "adaptive_shaping": (*_TASK_GAINS, _stiffness("epsilon", "adaptation threshold (m)")),
}
"""The tunable keys of each controller type (docs/tuning.md lists them)."""

SKELARM_DEFAULTS: dict[str, dict[str, float]] = {
    "computed_torque": {"kp": 200.0, "kd": 30.0},
    "joint_pd": {"kp": 300.0, "kd": 40.0},
    "inverse_dynamics_pd": {"kp": 100.0, "kd": 20.0},
    "virtual_spring_damper": {"k_task": 150.0, "d_task": 25.0, "c_joint": 0.0},
    "time_varying_stiffness": {"k0": 150.0, "alpha": 6.0, "zeta1": 0.15, "c_joint": 0.0},
    "online_shaping": {"k_task": 150.0, "d_task": 25.0, "c_joint": 0.0, "r": 0.5},
    "position_dependent_shaping": {"k_task": 150.0, "d_task": 25.0, "c_joint": 0.0, "a": 0.01},
    "adaptive_shaping": {"k_task": 150.0, "d_task": 25.0, "c_joint": 0.0, "epsilon": 0.01},
}
"""skelarm's default of each tunable key, what a scenario that leaves the key out runs with."""


@dataclass(frozen=True)
class Dimension:
    """One dimension of a scenario's search: a key, its scenario value, and the range searched.

    Attributes
    ----------
    gain : Gain
        The key's declaration.
    value : float | list[float]
        The scenario's value (skelarm's default when the scenario leaves it out); a list for a
        gain given per joint.
    low, high : float
        The range of the sampled value (a factor of ``value`` for a relative gain, else the
        gain itself), holding the scenario's own value.
    """

    gain: Gain
    value: float | list[float]
    low: float
    high: float

    @property
    def name(self) -> str:
        """The sampled parameter's name: the key, or ``<key>_scale`` for a factor of the scenario's value."""
        return f"{self.gain.key}_scale" if self.relative else self.gain.key

    @property
    def relative(self) -> bool:
        """Whether the optimiser samples a factor of the scenario's value (else the value itself)."""
        return self.gain.kind == RELATIVE

    def start(self) -> float:
        """Return the sampled value that reproduces the scenario's gains (the first trial's)."""
        if self.relative:
            return 1.0
        assert isinstance(self.value, float)  # an absolute gain is one number (search_space)
        return self.value

    def apply(self, sampled: float) -> float | list[float]:
        """Return the gain a sampled value gives (a per-joint list scaled as a whole)."""
        if isinstance(self.value, list):
            return [sampled * item for item in self.value]
        return sampled * self.value if self.relative else sampled


def search_space(controller: Mapping[str, Any], damping_scale: float) -> list[Dimension]:
    """Return the dimensions searched for a scenario's ``[controller]`` table.

    Parameters
    ----------
    controller : Mapping[str, Any]
        The ``[controller]`` table (``type`` and its keys).
    damping_scale : float
        The arm's damping scale (N*m*s/rad): the joint damping its lightest joint holds with the
        longest command delay sampled (:func:`skelarm_ros.tuning.evaluate.damping_scale`).

    Returns
    -------
    list[Dimension]
        One per tunable key of the type, in the order :data:`TUNABLE` declares them.

    Raises
    ------
    TuningError
        For a type without tunable keys, or a tunable key that is not a number or list of numbers
        (or a list where one number is needed, or a value a relative range cannot scale).
    """
    kind = str(controller.get("type", ""))
    if kind not in TUNABLE:
        msg = (
            f"controller type '{kind}' has no tunable gains declared, so skelarm-ros tune cannot search them; "
            f"tune one of {', '.join(sorted(TUNABLE))} (mpc's horizon and weights are set by hand)"
        )
        raise TuningError(msg)
    dimensions = []
    for gain in TUNABLE[kind]:
        value = controller.get(gain.key, SKELARM_DEFAULTS[kind][gain.key])
        checked = _checked_value(gain.key, value)
        if isinstance(checked, list) and gain.kind != RELATIVE:
            msg = f"[controller].{gain.key} is a list {checked}; give one number to tune it"
            raise TuningError(msg)
        if gain.log and not all(item > 0.0 for item in (checked if isinstance(checked, list) else [checked])):
            msg = f"[controller].{gain.key} is {checked}; tune searches it on a log scale, give a positive value"
            raise TuningError(msg)
        if gain.kind == RELATIVE:
            dimensions.append(Dimension(gain, checked, gain.low, gain.high))
            continue
        assert isinstance(checked, float)
        low, high = (gain.low, gain.high) if gain.kind == ABSOLUTE else (0.0, gain.high * damping_scale)
        dimensions.append(Dimension(gain, checked, min(low, checked), max(high, checked)))
    return dimensions


def _checked_value(key: str, value: object) -> float | list[float]:
    if isinstance(value, list) and value and all(_is_number(item) for item in value):
        return [float(item) for item in value]
    if _is_number(value):
        return float(value)  # type: ignore[arg-type]
    msg = f"[controller].{key} is {value!r}; give a number (or one number per joint) to tune it"
    raise TuningError(msg)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def gains_of(dimensions: list[Dimension], sampled: Mapping[str, float]) -> dict[str, float | list[float]]:
    """Return the ``[controller]`` keys that sampled values give, by key."""
    return {dimension.gain.key: dimension.apply(sampled[dimension.name]) for dimension in dimensions}


def with_gains(controller: Mapping[str, Any], gains: Mapping[str, float | list[float]]) -> dict[str, Any]:
    """Return a copy of a ``[controller]`` table with ``gains`` in place of its keys (its type kept)."""
    table = dict(controller)
    table.update(gains)
    return table


def markdown_table() -> str:
    """Return the table of every tunable controller type's keys and ranges, as docs/tuning.md has it."""
    ranges = {
        RELATIVE: "{low:g}-{high:g} times the scenario's",
        ABSOLUTE: "{low:g}-{high:g}",
        DAMPING: "0-{high:g} times the damping scale",
    }
    rows = ["| `[controller].type` | tunable keys (what; range searched) |", "|---|---|"]
    for kind, gains in TUNABLE.items():
        keys = [
            f"`{gain.key}` ({gain.meaning}; {ranges[gain.kind].format(low=gain.low, high=gain.high)}"
            + (", log scale)" if gain.log else ")")
            for gain in gains
        ]
        rows.append(f"| `{kind}` | {', '.join(keys)} |")
    return "\n".join(rows)
