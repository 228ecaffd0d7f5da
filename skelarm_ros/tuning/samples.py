# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The robust samples of a tuning: the twins a candidate is scored on, each at every delay of its driver.

Gains tuned on one model hold on that model. ``skelarm-ros tune`` scores each candidate on
several arms behind several drivers and keeps the worst (:func:`skelarm_ros.tuning.objective.worst`):

- **twins**: the scenario's own arm, and ``twins - 1`` others. Where the scenario is a twin
  that ``identify`` wrote (an ``[identification]`` table with ``base_parameters``, ``base_values``
  and ``base_std``), each other twin's base parameters are drawn from normal distributions
  about the identified values with the reported standard deviations, turned into masses,
  centres of mass, inertias, armature and friction (the smallest change of the standard
  parameters that gives them: every set with the same base parameters moves the arm alike),
  and drawn again until they are physically consistent. Each other twin also draws its
  driver's noise from another seed (where the driver has noise). A scenario without the
  table, or a driver without noise, has fewer twins to offer: the sentence in
  :attr:`Samples.notes` says so;
- **delays**: each twin behind its driver with every command delay that acts differently,
  from none to the ``[driver]``'s ``command_delay`` and :data:`LATE_TICKS` ticks more. A
  command acts from the first tick at or after its arrival plus the delay, so the delays that
  differ are whole ticks (0, 1, ...) and the given one. The ticks more are the arm's: in
  lockstep a command arrives at the tick of the state it answers, on an arm a little after
  it, so there the same ``command_delay`` acts one tick later (docs/predict.md), and two
  where the answer comes after the next state (a loaded computer, now and then). Gains that
  hold only at the lockstep's timing went unstable on a stand-in driver, and gains that held
  one tick later went unstable there on the run whose answers came late (docs/tuning.md).

The first sample is the scenario as it is (its own arm, its driver's delay and seed): the
run ``hardware:=twin`` makes of it, which the tool checks over ROS.

This module does not import rclpy.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from skelarm_ros.identification.regressor import structure
from skelarm_ros.identification.twin import TABLE as IDENTIFICATION
from skelarm_ros.sim.scenario import arm_from_config

if TYPE_CHECKING:
    from skelarm_ros.sim.driver import DriverSpec
    from skelarm_ros.sim.scenario import ArmSetup

LATE_TICKS = 2
"""Ticks past the driver's delay a command may act on an arm: arriving after its state, and after the next."""
_TICK_TOLERANCE = 1e-9  # of a tick: a delay this close above a whole number of ticks is that number
_DRAWS = 50  # draws of one twin's base parameters before giving up on a consistent set
_DRIVE = {"fv": "viscous", "fs": "coulomb", "Ia": "armature"}  # FIGAROH's per-joint parameters, by link key


@dataclass(frozen=True)
class Sample:
    """One arm behind one driver a candidate is scored on.

    Attributes
    ----------
    label : str
        What it is, in a few words (``the twin, commands 4 ms late``).
    arm : ArmSetup
        The arm and its driver, as the simulator plays them.
    """

    label: str
    arm: ArmSetup


@dataclass(frozen=True)
class Samples:
    """The robust samples of one tuning, and what limited them.

    Attributes
    ----------
    items : list[Sample]
        The samples; the first is the scenario as it is.
    twins : int
        How many twins they hold (each at every delay).
    delays : list[float]
        The command delays each twin is run with (s).
    notes : list[str]
        Sentences for the user: why fewer twins than asked for, how the twins were drawn.
    """

    items: list[Sample]
    twins: int
    delays: list[float]
    notes: list[str]

    def labels(self) -> list[str]:
        """Return every sample's label."""
        return [item.label for item in self.items]


def delays(driver: DriverSpec | None, dt: float) -> list[float]:
    """Return the command delays that act differently, from none to the driver's ``command_delay`` and ticks more (s).

    Whole ticks below the driver's delay, the delay itself, then the whole ticks a command
    arriving after its state, or after the next, waits (the arm's timing, see the module), at
    250 Hz: ``[0, 0.004, 0.008, 0.012]`` for 4 ms, ``[0, 0.004, 0.008]`` for none,
    ``[0, 0.004, 0.006, 0.012]`` for 6 ms (6 ms acts two ticks after the state in lockstep, as
    on the arm); ``[0]`` without a driver.
    """
    if driver is None:
        return [0.0]
    period = driver.period(dt)
    given = driver.command_delay
    ticks = math.ceil(given / period - _TICK_TOLERANCE)  # the lockstep's: arriving at the tick of its state
    whole = math.floor(given / period + _TICK_TOLERANCE)  # the arm's: arriving after it (+1), or later
    lockstep = [k * period for k in range(ticks)] + ([given] if given > 0.0 else [0.0])
    return lockstep + [k * period for k in range(whole + 1, whole + LATE_TICKS + 1) if k != ticks]


def robust_samples(arm: ArmSetup, twins: int, seed: int) -> Samples:
    """Return the robust samples of a scenario's arm (see the module).

    Parameters
    ----------
    arm : ArmSetup
        The scenario's arm and driver (:func:`skelarm_ros.sim.scenario.load_arm`).
    twins : int
        How many twins to score on (1: the scenario's own arm only).
    seed : int
        Seeds the draws of the other twins.

    Returns
    -------
    Samples
        The samples, the scenario as it is first.
    """
    notes: list[str] = []
    rng = np.random.default_rng(seed)
    drawn = _Draws.of(arm, notes) if twins > 1 else None
    noisy = arm.driver is not None and arm.driver.has_noise
    arms = [(arm, "the twin")]
    if twins > 1 and drawn is None and not noisy:
        notes.append(
            f"the scenario has no [{IDENTIFICATION}] table with standard deviations and its driver no noise, so it "
            "offers one twin: each candidate is scored on it at every command delay"
        )
    elif twins > 1:
        for index in range(1, twins):
            other = arm if drawn is None else drawn.draw(rng)
            if other is None:
                assert drawn is not None
                notes.append(drawn.failed)
                break
            driver = arm.driver
            if noisy and driver is not None:
                other = dataclasses.replace(other, driver=dataclasses.replace(driver, seed=driver.seed + index))
            what = "drawn within the identification's standard deviations" if drawn is not None else "other noise"
            arms.append((other, f"twin {index + 1} ({what})"))
    given = arm.driver.command_delay if arm.driver is not None else 0.0
    lags = sorted(delays(arm.driver, arm.dt), key=lambda delay: delay != given)  # the scenario's own first
    items = []
    for setup, name in arms:
        for delay in lags:
            items.append(Sample(f"{name}, {_delay_text(delay, given)}", _with_delay(setup, delay)))
    return Samples(items, len(arms), sorted(lags), notes)


def _delay_text(delay: float, given: float) -> str:
    own = " (its [driver])" if delay == given else (" (as on the arm)" if delay > given else "")
    return f"commands {1e3 * delay:g} ms late{own}" if delay > 0.0 else f"commands on time{own}"


def _with_delay(arm: ArmSetup, delay: float) -> ArmSetup:
    if arm.driver is None or arm.driver.command_delay == delay:
        return arm
    return dataclasses.replace(arm, driver=dataclasses.replace(arm.driver, command_delay=delay))


@dataclass
class _Draws:
    """Draws of a twin's base parameters within their standard deviations, turned into its links."""

    arm: ArmSetup
    values: np.ndarray
    std: np.ndarray
    params: list[str]
    inverse: np.ndarray  # the smallest change of the standard parameters for a change of the base ones
    theta: np.ndarray  # the twin's standard parameters (params' order)
    failed: str = ""

    @classmethod
    def of(cls, arm: ArmSetup, notes: list[str]) -> _Draws | None:
        """Return the draws for a twin whose ``[identification]`` table has its base parameters; else ``None``."""
        record = arm.config.get(IDENTIFICATION)
        if not isinstance(record, dict) or not {"base_parameters", "base_values", "base_std"} <= set(record):
            return None
        terms = [str(term) for term in record.get("model_terms", [])]
        try:
            found = structure(arm.skeleton, arm.grav_vec, terms=terms, drive=arm.drive)
        except ValueError as error:
            notes.append(f"the [{IDENTIFICATION}] table's model cannot be rebuilt ({error}); no twin is drawn from it")
            return None
        names = [str(name) for name in record["base_parameters"]]
        values = np.asarray(record["base_values"], dtype=np.float64)
        std = np.asarray(record["base_std"], dtype=np.float64)
        if names != found.base_names or values.shape != std.shape or values.size != len(names):
            notes.append(
                f"the [{IDENTIFICATION}] table's base parameters are not the ones this arm's model has "
                f"({len(names)} written, {found.rank} in the model); no twin is drawn from them"
            )
            return None
        theta = np.array([found.standard[name] for name in found.params_r])
        return cls(arm, values, std, list(found.params_r), np.linalg.pinv(found.mapping), theta)

    def draw(self, rng: np.random.Generator) -> ArmSetup | None:
        """Return a twin whose base parameters are drawn within their deviations, or ``None`` if none is consistent."""
        for _ in range(_DRAWS):
            change = self.inverse @ (rng.standard_normal(self.std.size) * self.std)
            config = self._config(dict(zip(self.params, (self.theta + change).tolist(), strict=True)))
            if config is not None:
                return arm_from_config(config, "a drawn twin")
        self.failed = (
            f"no physically consistent twin came of {_DRAWS} draws within the identification's standard "
            "deviations (they are wide: record a longer exciting run); fewer twins are scored"
        )
        return None

    def _config(self, standard: dict[str, float]) -> dict[str, Any] | None:
        """Return the scenario's tables with the links made from ``standard``; ``None`` if not physically consistent."""
        config = copy.deepcopy(self.arm.config)
        section = config.get("skeleton", config)
        for index, link in enumerate(section["link"], start=1):
            joint = f"j{index}"
            mass = standard.get(f"m_{joint}", float(link.get("mass", 0.0)))
            if f"m_{joint}" in standard or f"mx_{joint}" in standard:
                prop = self.arm.skeleton.links[index].prop
                if not mass > 0.0:
                    return None
                com = [
                    standard.get(f"mx_{joint}", mass * prop.rgx) / mass,
                    standard.get(f"my_{joint}", mass * prop.rgy) / mass,
                ]
                about_joint = standard.get(f"Izz_{joint}", prop.i + mass * (prop.rgx**2 + prop.rgy**2))
                inertia = about_joint - mass * (com[0] ** 2 + com[1] ** 2)
                if not inertia > 0.0:
                    return None
                for key in ("rgx", "rgy"):
                    link.pop(key, None)
                link.update({"mass": mass, "com": com, "inertia": inertia})
            for prefix, key in _DRIVE.items():
                value = standard.get(f"{prefix}_{joint}")
                if value is not None:
                    if value < 0.0:
                        return None
                    link[key] = value
        return config
