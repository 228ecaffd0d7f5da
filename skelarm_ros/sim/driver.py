# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""What the arm's driver does: a scenario's ``[driver]`` table, read and checked.

A real arm is reached through a driver: it publishes joint states at its own rate, takes
commands at its ticks and applies them some time later, its sensors are noisy and its
encoders count whole ticks, its current loop lags the command, and a servo arm's firmware
turns a position or velocity goal into torque. A scenario (and a twin that ``identify``
writes) describes that driver in an optional ``[driver]`` table; every key is optional
(docs/scenarios.md, "[driver]"). :class:`DriverSpec` holds the checked values, and
:func:`driver_from_config` reads them with one sentence per problem, an unknown key
answered with the nearest known one.

A key that is per joint takes one number for every joint or a list with one per joint: a
servo arm's base and wrist differ by orders of magnitude in inertia.

This module does not import rclpy.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from skelarm_ros.interface import EFFORT, INTERFACES, POSITION, VELOCITY

if TYPE_CHECKING:
    from numpy.typing import NDArray

TABLE = "driver"


@dataclass(frozen=True)
class DriverKey:
    """One key of ``[driver]``: its name, unit, whether it is per joint, and what it is.

    Attributes
    ----------
    name : str
        The key.
    unit : str
        Its unit (empty for none).
    per_joint : bool
        Whether it takes one number per joint (or one for all).
    meaning : str
        One phrase, for the docs and the messages.
    """

    name: str
    unit: str
    per_joint: bool
    meaning: str


KEYS: tuple[DriverKey, ...] = (
    DriverKey("rate", "Hz", False, "states published and commands taken at the driver's ticks; default every step"),
    DriverKey("command_delay", "s", False, "a command acts from the first tick at or after its arrival plus this"),
    DriverKey("position_noise", "rad", True, "standard deviation of Gaussian noise on the published positions"),
    DriverKey("velocity_noise", "rad/s", True, "standard deviation of Gaussian noise on the published velocities"),
    DriverKey("effort_noise", "N*m", True, "standard deviation of Gaussian noise on the published effort"),
    DriverKey("encoder_ticks", "per revolution", True, "published positions quantised to whole encoder ticks"),
    DriverKey("torque_lag", "s", False, "time constant of the first-order lag from the command to the torque"),
    DriverKey("effort_bias", "N*m", True, "bias of the effort measurement: added to the published effort only"),
    DriverKey("seed", "", False, "seed of the noise (a whole number); the same seed gives the same noise"),
    DriverKey("interface", "", False, "what the driver takes: effort, position or velocity"),
    DriverKey("servo_kp", "N*m/rad", True, "a servo's position gain (interface position)"),
    DriverKey("servo_kd", "N*m*s/rad", True, "a servo's damping on the joint's velocity (interface position)"),
    DriverKey("servo_kv", "N*m*s/rad", True, "a servo's velocity gain (interface velocity)"),
    DriverKey(
        "profile_velocity", "rad/s", True, "a position goal moves at most this fast, a velocity goal is at most this"
    ),
    DriverKey("profile_acceleration", "rad/s^2", True, "and either changes its speed at most this fast"),
)
KEY_NAMES = tuple(key.name for key in KEYS)
_WHOLE_STEPS = 1e-9  # relative tolerance of a tick period that is a whole number of integration steps
_SERVO_KEYS = ("servo_kp", "servo_kd", "servo_kv", "profile_velocity", "profile_acceleration")
SERVO_KEYS_OF = {
    POSITION: ("servo_kp", "servo_kd", "profile_velocity", "profile_acceleration"),
    VELOCITY: ("servo_kv", "profile_velocity", "profile_acceleration"),
}
"""The servo keys each servo interface takes (the others are refused with it)."""


def _zeros() -> NDArray[np.float64]:
    return np.zeros(0)


@dataclass(frozen=True)
class DriverSpec:
    """The checked ``[driver]`` table: what the driver between the arm and the graph does.

    Every per-joint array has one value per joint. The defaults are a driver that adds
    nothing: every step published exactly, every command applied at once.

    Attributes
    ----------
    num_joints : int
        The arm's joints.
    rate : float | None
        Ticks per second (Hz); ``None`` for every integration step.
    command_delay : float
        Seconds from a command's arrival to the tick it acts from (the first at or after).
    position_noise, velocity_noise, effort_noise : NDArray[np.float64]
        Standard deviations of the published state's noise (rad, rad/s, N*m).
    encoder_ticks : NDArray[np.float64]
        Encoder ticks per revolution per joint; 0 for no quantisation.
    torque_lag : float
        Time constant (s) of the applied torque's first-order lag behind the command; 0 for none.
    effort_bias : NDArray[np.float64]
        Bias of the effort measurement (N*m): it shifts the published effort, not the arm's motion.
    seed : int
        Seed of the noise.
    interface : str
        ``effort``, ``position`` or ``velocity`` (:data:`INTERFACES`).
    servo_kp, servo_kd, servo_kv : NDArray[np.float64]
        A servo's gains (zero when not given).
    profile_velocity, profile_acceleration : NDArray[np.float64]
        A position servo's profile limits (``inf`` when not given).
    given : frozenset[str]
        The keys the table gave (the rest are defaults).
    """

    num_joints: int
    rate: float | None = None
    command_delay: float = 0.0
    position_noise: NDArray[np.float64] = field(default_factory=_zeros)
    velocity_noise: NDArray[np.float64] = field(default_factory=_zeros)
    effort_noise: NDArray[np.float64] = field(default_factory=_zeros)
    encoder_ticks: NDArray[np.float64] = field(default_factory=_zeros)
    torque_lag: float = 0.0
    effort_bias: NDArray[np.float64] = field(default_factory=_zeros)
    seed: int = 0
    interface: str = EFFORT
    servo_kp: NDArray[np.float64] = field(default_factory=_zeros)
    servo_kd: NDArray[np.float64] = field(default_factory=_zeros)
    servo_kv: NDArray[np.float64] = field(default_factory=_zeros)
    profile_velocity: NDArray[np.float64] = field(default_factory=_zeros)
    profile_acceleration: NDArray[np.float64] = field(default_factory=_zeros)
    given: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        """Give every per-joint array not set its default, one value per joint."""
        for key in KEYS:
            if not key.per_joint:
                continue
            value = getattr(self, key.name)
            if np.asarray(value).size == 0:
                default = math.inf if key.name.startswith("profile_") else 0.0
                object.__setattr__(self, key.name, np.full(self.num_joints, default))

    @classmethod
    def ideal(cls, num_joints: int) -> DriverSpec:
        """Return a driver that adds nothing (the simulator without ``[driver]``)."""
        return cls(num_joints)

    @property
    def has_noise(self) -> bool:
        """Whether the published state is noisy."""
        return bool(np.any(self.position_noise) or np.any(self.velocity_noise) or np.any(self.effort_noise))

    @property
    def servo(self) -> bool:
        """Whether the driver is a servo (takes position or velocity goals)."""
        return self.interface != EFFORT

    def servo_only(self) -> DriverSpec | None:
        """Return the servo of this driver alone (its interface, gains and profile), or ``None`` for an effort driver.

        The servo is the arm's, as its links' ``effort_limit`` is: the simulator plays it
        with or without the rest of the driver (its ticks, delay, lag and noise).
        """
        if not self.servo:
            return None
        kept = {"interface", *SERVO_KEYS_OF[self.interface]}
        values = {name: getattr(self, name) for name in kept}
        return DriverSpec(self.num_joints, **values, given=frozenset(kept & self.given))

    def period(self, dt: float) -> float:
        """Return the seconds between two ticks: ``1 / rate``, or the integration step ``dt`` without a rate."""
        return dt if self.rate is None else 1.0 / self.rate

    def steps_per_tick(self, dt: float) -> int:
        """Return the integration steps of ``dt`` between two ticks: 1 without a rate.

        Raises
        ------
        ValueError
            If the period ``1 / rate`` is not a whole number of steps of ``dt`` (one sentence with the fix).
        """
        if self.rate is None:
            return 1
        steps = 1.0 / (self.rate * dt)
        whole = round(steps)
        if whole < 1 or abs(steps - whole) > _WHOLE_STEPS * whole:
            rates = sorted({round(1.0 / (k * dt), 3) for k in range(1, 5)}, reverse=True)
            shown = ", ".join(f"{rate:g}" for rate in rates)
            msg = (
                f"[driver].rate {self.rate:g} Hz is not a whole number of integration steps of dt={dt:g} s "
                f"(a tick every {steps:.4g} steps); choose a rate whose period is a multiple of dt ({shown} Hz ...) "
                "or another [simulator].dt"
            )
            raise ValueError(msg)
        return whole

    def table(self) -> dict[str, Any]:
        """Return the ``[driver]`` table that reads back as this spec: the given keys, per-joint ones as lists."""
        out: dict[str, Any] = {}
        for key in KEYS:
            if key.name not in self.given:
                continue
            value = getattr(self, key.name)
            if key.per_joint:
                out[key.name] = [float(v) if key.name != "encoder_ticks" else int(v) for v in value]
            elif isinstance(value, float | int | str):
                out[key.name] = value
        return out


def _finite(key: str, value: object, unit: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        msg = f"[driver].{key} must be a finite number ({unit}), got {value!r}"
        raise ValueError(msg)
    return float(value)


def _per_joint(key: DriverKey, value: object, num_joints: int) -> NDArray[np.float64]:
    """Read one number for every joint, or a list of one per joint."""
    if isinstance(value, list | tuple):
        if len(value) != num_joints:
            msg = (
                f"[driver].{key.name} has {len(value)} values but the arm has {num_joints} joints; "
                "give one number for every joint or one per joint"
            )
            raise ValueError(msg)
        return np.array([_finite(key.name, item, key.unit) for item in value], dtype=np.float64)
    return np.full(num_joints, _finite(key.name, value, key.unit))


# The rule each key's values keep: (holds, what the sentence asks for).
_RULES: dict[str, tuple[Any, str]] = {
    "positive": (lambda a: np.all(a > 0.0), "positive"),
    "non_negative": (lambda a: np.all(a >= 0.0), "zero or positive"),
    "finite": (lambda a: True, "finite"),
    "ticks": (lambda a: np.all((a > 0.0) & (a == np.round(a))), "whole numbers above 0"),
}
_KEY_RULES = {
    "rate": "positive",
    "profile_velocity": "positive",
    "profile_acceleration": "positive",
    "encoder_ticks": "ticks",
    "effort_bias": "finite",
}


def _value(key: DriverKey, raw: object, num_joints: int) -> Any:
    """Return one key's checked value."""
    if key.name == "interface":
        if raw not in INTERFACES:
            msg = f"[driver].interface '{raw}' is not one of {', '.join(INTERFACES)}"
            raise ValueError(msg)
        return raw
    if key.name == "seed":
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            msg = f"[driver].seed must be a whole number, zero or more, got {raw!r}"
            raise ValueError(msg)
        return raw
    value = _per_joint(key, raw, num_joints) if key.per_joint else _finite(key.name, raw, key.unit)
    holds, wanted = _RULES[_KEY_RULES.get(key.name, "non_negative")]
    if not holds(np.atleast_1d(value)):
        shown = value.tolist() if isinstance(value, np.ndarray) else value
        msg = f"[driver].{key.name} must be {wanted} ({key.unit}), got {shown}"
        raise ValueError(msg)
    return value


def driver_from_config(config: dict[str, Any], num_joints: int, source: str = "scenario") -> DriverSpec | None:
    """Read a scenario's ``[driver]`` table.

    Parameters
    ----------
    config : dict[str, Any]
        Parsed TOML tables.
    num_joints : int
        The arm's joints (a per-joint key takes one number or one per joint).
    source : str, optional
        How to name the file in messages.

    Returns
    -------
    DriverSpec | None
        The checked driver; ``None`` when the file has no ``[driver]`` table.

    Raises
    ------
    ValueError
        With one sentence naming the file, the key and what would be right (an unknown
        key names the nearest known one).
    """
    table = config.get(TABLE)
    if table is None:
        return None
    try:
        return _spec(table, num_joints)
    except ValueError as error:
        raise ValueError(f"{source}: {error}") from None


def _spec(table: object, num_joints: int) -> DriverSpec:
    if not isinstance(table, dict):
        msg = f"[driver] must be a table of keys ({', '.join(KEY_NAMES)}), got {table!r}"
        raise ValueError(msg)
    by_name = {key.name: key for key in KEYS}
    for name in table:
        if name not in by_name:
            near = difflib.get_close_matches(name, KEY_NAMES, n=1, cutoff=0.5)
            hint = f"the nearest is '{near[0]}'" if near else "see docs/scenarios.md"
            msg = f"[driver] has no key '{name}'; {hint} (the keys are {', '.join(KEY_NAMES)})"
            raise ValueError(msg)
    values = {name: _value(by_name[name], raw, num_joints) for name, raw in table.items()}
    _check_servo(values)
    return DriverSpec(num_joints, **values, given=frozenset(values))


def _check_servo(values: dict[str, Any]) -> None:
    """Refuse a servo's keys without its interface or of the other one, and a servo without the gain it needs."""
    interface = values.get("interface", EFFORT)
    servo_keys = [name for name in _SERVO_KEYS if name in values]
    if interface == EFFORT and servo_keys:
        msg = (
            f"[driver].{servo_keys[0]} is a servo's setting but the driver takes effort; "
            'set interface = "position" or "velocity", or remove it'
        )
        raise ValueError(msg)
    other = [name for name in servo_keys if interface != EFFORT and name not in SERVO_KEYS_OF[interface]]
    if other:
        takes = ", ".join(SERVO_KEYS_OF[interface])
        msg = f"[driver].{other[0]} is not a setting of a {interface} servo (it takes {takes}); remove it"
        raise ValueError(msg)
    needed = {POSITION: "servo_kp", VELOCITY: "servo_kv"}.get(interface)
    if needed is not None and not np.all(values.get(needed, np.zeros(1)) > 0.0):
        msg = f'[driver] interface = "{interface}" needs {needed} above 0 on every joint (the servo\'s gain)'
        raise ValueError(msg)


def check_servo_gain(interface: str, driver: DriverSpec | None) -> None:
    """Check that the scenario's ``[driver]`` gives the gain a goal made through a servo's stiffness needs.

    ``position_mode:=stiffness`` turns a torque into a ``position`` goal through ``servo_kp``,
    into a ``velocity`` goal through ``servo_kv``.

    Raises
    ------
    ValueError
        In one sentence naming the key to add, when ``driver`` is not a servo of ``interface`` with its gain.
    """
    gain = "servo_kp" if interface == POSITION else "servo_kv"
    if driver is not None and driver.interface == interface and gain in driver.given:
        return
    msg = (
        f"position_mode:=stiffness turns the controller's torque into a {interface} goal through the servo's "
        f"{gain}, but the scenario's [driver] gives none for a {interface} servo; add [driver] "
        f'interface = "{interface}" and {gain} (per joint) to the scenario, or use position_mode:=reference '
        "with a tracking controller"
    )
    raise ValueError(msg)
