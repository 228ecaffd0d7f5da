# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Reading skelarm scenario and robot TOML files, with one clear sentence per problem.

One scenario file is the single source of the robot, its initial state, the task,
the step and the controller for the whole graph (parameter ``scenario``). A robot-only
file (``[skeleton]`` and ``[initial]``) is enough for the simulator. skelarm's own
parsers do the work; this module checks the file first so a user gets a sentence
naming the file, the table and what would be right instead of a traceback.

This module does not import rclpy.
"""

from __future__ import annotations

import math
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import skelarm

from skelarm_ros.sim.driver import driver_from_config

if TYPE_CHECKING:
    from collections.abc import Callable

    from numpy.typing import ArrayLike, NDArray

    from skelarm_ros.sim.driver import DriverSpec

_PACKAGE = "skelarm_ros"
DEFAULT_SCENARIO = "reach.toml"
# The numbers every [[skeleton.link]] needs: (key, whether zero is allowed, the rule when it is out of range).
_LINK_NUMBERS = (
    ("length", True, "a link length must be zero or positive (m)"),
    ("mass", False, "every link needs a positive mass (kg) for the dynamics"),
    ("inertia", True, "a rotational inertia must be zero or positive (kg*m^2)"),
)
# What a real joint's drive adds, optional per link (skelarm ignores these keys): key, unit, what it is.
DRIVE_KEYS = (
    ("armature", "kg*m^2", "an armature (the motor's inertia reflected through the gears)"),
    ("viscous", "N*m*s/rad", "a viscous friction coefficient"),
    ("coulomb", "N*m", "a Coulomb friction torque"),
)
# What a joint's motor is rated for, optional per link (skelarm ignores these keys; a URDF's <limit> has them).
LIMIT_KEYS = (
    ("effort_limit", "N*m", "the largest torque the joint's drive gives"),
    ("velocity_limit", "rad/s", "the fastest the joint may turn"),
)


class ScenarioError(ValueError):
    """A scenario or robot file that cannot be used; the message names the file and the fix."""


@dataclass(frozen=True)
class _Rule:
    """What the per-link values of a group of keys (drive, limits) keep: the default and the accepted range."""

    default: float
    accepts: Callable[[NDArray[np.float64]], Any]
    wanted: str  # what the sentence asks for
    note: str = ""  # what the sentence adds after the unit


_DRIVE_RULE = _Rule(0.0, lambda a: np.isfinite(a) & (a >= 0.0), "must be zero or positive")
_LIMIT_RULE = _Rule(math.inf, lambda a: a > 0.0, "must be a positive number", ", or leave the key out for none")


def _per_joint_columns(
    num_joints: int, keys: tuple[tuple[str, str, str], ...], given: tuple[ArrayLike | None, ...], rule: _Rule
) -> list[NDArray[np.float64]]:
    """Return one array per key from per-joint values (``None`` for the rule's default), checked."""
    columns = []
    for (key, unit, what), values in zip(keys, given, strict=True):
        array = np.full(num_joints, rule.default) if values is None else np.array(values, dtype=np.float64).ravel()
        if array.shape != (num_joints,):
            msg = f"{key} needs one value per joint ({num_joints}), got {array.size}"
            raise ValueError(msg)
        if not np.all(rule.accepts(array)):
            msg = f"{key} {rule.wanted} ({unit}), {what}; got {array.tolist()}"
            raise ValueError(msg)
        columns.append(array)
    return columns


def _link_columns(
    config: dict[str, Any], keys: tuple[tuple[str, str, str], ...], rule: _Rule, source: str
) -> list[NDArray[np.float64]]:
    """Return one array per key from the links of ``[[skeleton.link]]`` (the rule's default where absent), checked."""
    section = config.get("skeleton", config)
    links = section.get("link", []) if isinstance(section, dict) else []
    columns: dict[str, list[float]] = {key: [] for key, _, _ in keys}
    for number, link in enumerate(links, start=1):
        for key, unit, what in keys:
            value = _number(link.get(key, rule.default), f"link {number} '{key}'", source, finite=False)
            if not rule.accepts(np.array([value])).all():
                msg = f"{source}: link {number} has {key} {value}; {what} {rule.wanted} ({unit}){rule.note}"
                raise ScenarioError(msg)
            columns[key].append(value)
    return [np.array(columns[key], dtype=np.float64) for key, _, _ in keys]


@dataclass(frozen=True)
class JointDrive:
    """What each joint's motor and gears add to the arm's rigid-body dynamics.

    The arm then follows ``(M(q) + diag(armature)) ddq = tau - h(q, dq) - viscous*dq -
    coulomb*sign(dq)`` (at rest the Coulomb torque holds the joint while it can:
    :class:`skelarm_ros.sim.engine.ArmEngine`). Without them (all zero) it is skelarm's model.

    Attributes
    ----------
    armature : NDArray[np.float64]
        Reflected motor inertia per joint (kg*m^2), shape ``(N,)``.
    viscous : NDArray[np.float64]
        Viscous friction per joint (N*m*s/rad), shape ``(N,)``.
    coulomb : NDArray[np.float64]
        Coulomb friction torque per joint (N*m), shape ``(N,)``.
    """

    armature: NDArray[np.float64]
    viscous: NDArray[np.float64]
    coulomb: NDArray[np.float64]

    @classmethod
    def ideal(cls, num_joints: int) -> JointDrive:
        """Return a drive that adds nothing (skelarm's model)."""
        return cls(np.zeros(num_joints), np.zeros(num_joints), np.zeros(num_joints))

    @classmethod
    def of(
        cls,
        num_joints: int,
        *,
        armature: ArrayLike | None = None,
        viscous: ArrayLike | None = None,
        coulomb: ArrayLike | None = None,
    ) -> JointDrive:
        """Return a drive from per-joint values (``None`` for zeros).

        Raises
        ------
        ValueError
            If a value is negative or not finite, or their number is not ``num_joints``.
        """
        return cls(*_per_joint_columns(num_joints, DRIVE_KEYS, (armature, viscous, coulomb), _DRIVE_RULE))

    @property
    def num_joints(self) -> int:
        """Number of joints."""
        return int(self.armature.size)

    @property
    def is_ideal(self) -> bool:
        """Whether the drive adds nothing (no armature, no friction)."""
        return not (np.any(self.armature) or self.has_friction)

    @property
    def has_friction(self) -> bool:
        """Whether any joint has viscous or Coulomb friction."""
        return bool(np.any(self.viscous) or np.any(self.coulomb))

    def friction_torque(self, dq: ArrayLike) -> NDArray[np.float64]:
        """Return the friction torque ``viscous*dq + coulomb*sign(dq)`` (N*m) that opposes the velocity ``dq``.

        This is the moving joint's friction (what a model-based controller adds to its
        torque); at rest the engine's Coulomb torque is whatever holds the joint, up to
        ``coulomb``.
        """
        velocity = np.asarray(dq, dtype=np.float64)
        return np.asarray(self.viscous * velocity + self.coulomb * np.sign(velocity), dtype=np.float64)

    def link_tables(self) -> list[dict[str, float]]:
        """Return the per-link keys (``armature``, ``viscous``, ``coulomb``) of each joint, zeros left out."""
        tables = []
        for values in zip(self.armature, self.viscous, self.coulomb, strict=True):
            tables.append({key: float(v) for (key, _, _), v in zip(DRIVE_KEYS, values, strict=True) if v != 0.0})
        return tables


def drive_from_config(config: dict[str, Any], source: str = "scenario") -> JointDrive:
    """Read the per-link drive keys (``armature``, ``viscous``, ``coulomb``) of a scenario's ``[[skeleton.link]]``.

    Parameters
    ----------
    config : dict[str, Any]
        Parsed TOML tables.
    source : str, optional
        How to name the file in messages.

    Returns
    -------
    JointDrive
        Zero where a key is absent.

    Raises
    ------
    ScenarioError
        On a value that is not a number or is negative.
    """
    return JointDrive(*_link_columns(config, DRIVE_KEYS, _DRIVE_RULE, source))


@dataclass(frozen=True)
class JointLimits:
    """What each joint's drive is rated for: its torque and its speed, ``inf`` where a link gives none.

    A scenario's links carry them as ``effort_limit`` (N*m) and ``velocity_limit`` (rad/s); a URDF's
    ``<limit effort= velocity=>`` gives the same (:func:`skelarm_ros.sim.urdf_reader.joint_limits_from_urdf`).
    The simulator saturates the applied torque at ``effort``; a controller on a live arm clamps its
    commands to it and stops a joint faster than ``velocity`` (docs/controller.md, "Driving a real arm").

    Attributes
    ----------
    effort : NDArray[np.float64]
        Torque limit per joint (N*m, positive; ``inf`` for none), shape ``(N,)``.
    velocity : NDArray[np.float64]
        Speed limit per joint (rad/s, positive; ``inf`` for none), shape ``(N,)``.
    """

    effort: NDArray[np.float64]
    velocity: NDArray[np.float64]

    @classmethod
    def none(cls, num_joints: int) -> JointLimits:
        """Return limits that bound nothing."""
        return cls(np.full(num_joints, np.inf), np.full(num_joints, np.inf))

    @classmethod
    def of(cls, num_joints: int, *, effort: ArrayLike | None = None, velocity: ArrayLike | None = None) -> JointLimits:
        """Return limits from per-joint values (``None`` for none; ``inf`` for a joint without one).

        Raises
        ------
        ValueError
            If a value is not positive, or their number is not ``num_joints``.
        """
        return cls(*_per_joint_columns(num_joints, LIMIT_KEYS, (effort, velocity), _LIMIT_RULE))

    @property
    def num_joints(self) -> int:
        """Number of joints."""
        return int(self.effort.size)

    @property
    def has_effort(self) -> bool:
        """Whether any joint has an effort limit."""
        return bool(np.isfinite(self.effort).any())

    @property
    def has_velocity(self) -> bool:
        """Whether any joint has a velocity limit."""
        return bool(np.isfinite(self.velocity).any())

    def effort_list(self) -> list[float]:
        """Return the effort limits as a list (``inf`` where none), as the ``effort_limits`` parameters take them."""
        return [float(value) for value in self.effort]

    def link_tables(self) -> list[dict[str, float]]:
        """Return the per-link keys (``effort_limit``, ``velocity_limit``) of each joint, ``inf`` left out."""
        tables = []
        for values in zip(self.effort, self.velocity, strict=True):
            tables.append(
                {key: float(v) for (key, _, _), v in zip(LIMIT_KEYS, values, strict=True) if math.isfinite(v)}
            )
        return tables


def limits_from_config(config: dict[str, Any], source: str = "scenario") -> JointLimits:
    """Read the per-link limit keys (``effort_limit``, ``velocity_limit``) of a scenario's ``[[skeleton.link]]``.

    Parameters
    ----------
    config : dict[str, Any]
        Parsed TOML tables.
    source : str, optional
        How to name the file in messages.

    Returns
    -------
    JointLimits
        ``inf`` where a key is absent.

    Raises
    ------
    ScenarioError
        On a value that is not a positive number.
    """
    return JointLimits(*_link_columns(config, LIMIT_KEYS, _LIMIT_RULE, source))


def share_directory() -> Path:
    """Return the package's share directory (installed, or the source tree in an editable install).

    Returns
    -------
    Path
        A directory holding ``config/`` and ``launch/``.
    """
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

        try:
            return Path(get_package_share_directory(_PACKAGE))
        except (PackageNotFoundError, OSError):  # not installed, or no AMENT_PREFIX_PATH at all
            pass
    except ImportError:  # pragma: no cover - ament_index_python comes with the ROS wheels
        pass
    return Path(__file__).resolve().parents[2]


def bundled_scenarios() -> dict[str, Path]:
    """Return the scenarios bundled in ``config/scenarios`` by name (file stem)."""
    folder = share_directory() / "config" / "scenarios"
    return {path.stem: path for path in sorted(folder.glob("*.toml"))}


def resolve_scenario(name: str | Path | None) -> Path:
    """Resolve a scenario parameter: a path, a bundled scenario's name, or empty for the default.

    Parameters
    ----------
    name : str | Path | None
        A file path, the stem of a bundled scenario (``reach``), or ``None`` / ``""``.

    Returns
    -------
    Path
        The scenario file.

    Raises
    ------
    ScenarioError
        If the file does not exist and no bundled scenario has that name.
    """
    bundled = bundled_scenarios()
    if name is None or str(name) == "":
        return bundled[Path(DEFAULT_SCENARIO).stem]
    path = Path(name).expanduser()
    if path.is_file():
        return path
    if str(name) in bundled:
        return bundled[str(name)]
    msg = (
        f"scenario file '{name}' does not exist; pass the path of a skelarm scenario or robot TOML "
        f"or one of the bundled scenarios {sorted(bundled)}"
    )
    raise ScenarioError(msg)


@dataclass
class ArmSetup:
    """The robot and run conditions of a scenario or robot file.

    Attributes
    ----------
    path : Path | None
        The file it came from.
    config : dict[str, Any]
        The parsed TOML tables.
    skeleton : skelarm.Skeleton
        The robot, posed at its initial state.
    dt : float
        Control / integration step (seconds) from ``[simulator]`` (default 0.002).
    enforce_limits : bool
        Joint limits as hard stops (``[simulator].enforce_limits``, default true).
    grav_vec : NDArray[np.float64]
        Planar gravity ``(gx, gy)`` from ``[simulator].grav_vec`` (default zero).
    drive : JointDrive | None
        Armature and friction per joint from the links' ``armature``, ``viscous`` and
        ``coulomb`` keys; ``None`` when no link has any (skelarm's model).
    limits : JointLimits | None
        Effort and velocity limits per joint from the links' ``effort_limit`` and
        ``velocity_limit`` keys (``inf`` where a link has none); ``None`` for none at all.
    driver : DriverSpec | None
        What the arm's driver does (``[driver]``, :mod:`skelarm_ros.sim.driver`); ``None``
        without the table (the simulator publishes every step and applies each command at once).
    """

    path: Path | None
    config: dict[str, Any]
    skeleton: skelarm.Skeleton
    dt: float
    enforce_limits: bool
    grav_vec: NDArray[np.float64] = field(default_factory=lambda: np.zeros(2))
    drive: JointDrive | None = None
    limits: JointLimits | None = None
    driver: DriverSpec | None = None

    @property
    def num_joints(self) -> int:
        """Number of actuated joints."""
        return self.skeleton.num_joints

    @property
    def q0(self) -> NDArray[np.float64]:
        """Initial joint angles (rad)."""
        return self.skeleton.q

    @property
    def dq0(self) -> NDArray[np.float64]:
        """Initial joint velocities (rad/s)."""
        return self.skeleton.dq

    @property
    def has_controller(self) -> bool:
        """Whether the file has the ``[task]`` and ``[controller]`` tables a controller needs."""
        return "task" in self.config and "controller" in self.config


def _number(value: object, where: str, source: str, *, finite: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        msg = f"{source}: {where} must be a number, got {value!r}"
        raise ScenarioError(msg)
    number = float(value)
    if finite and not math.isfinite(number):
        msg = f"{source}: {where} must be finite, got {value!r}"
        raise ScenarioError(msg)
    return number


def _pair(value: object, where: str, source: str) -> tuple[float, float]:
    if not isinstance(value, list | tuple) or len(value) != 2:
        msg = f"{source}: {where} must be a pair [a, b], got {value!r}"
        raise ScenarioError(msg)
    return _number(value[0], where, source), _number(value[1], where, source)


def _check_links(config: dict[str, Any], source: str) -> None:
    section = config.get("skeleton", config)
    if not isinstance(section, dict):
        msg = f"{source}: [skeleton] must be a table, got {section!r}"
        raise ScenarioError(msg)
    links = section.get("link")
    if not links:
        msg = f"{source} defines no links; add one [[skeleton.link]] table per link with length, mass and inertia"
        raise ScenarioError(msg)
    if not isinstance(links, list) or not all(isinstance(link, dict) for link in links):
        msg = f"{source}: 'link' must be an array of tables ([[skeleton.link]]), got {links!r}"
        raise ScenarioError(msg)
    _number(section.get("base_length", 0.0), "[skeleton].base_length", source)
    for number, link in enumerate(links, start=1):
        _check_link(link, f"link {number}", source)


def _check_link(link: dict[str, Any], where: str, source: str) -> None:
    for key, _, _ in _LINK_NUMBERS:
        if key not in link:
            msg = f"{source}: {where} has no '{key}'; each [[skeleton.link]] needs length, mass and inertia"
            raise ScenarioError(msg)
    values = [_number(link[key], f"{where} '{key}'", source) for key, _, _ in _LINK_NUMBERS]
    for (key, zero_allowed, rule), value in zip(_LINK_NUMBERS, values, strict=True):
        if value < 0.0 or (value == 0.0 and not zero_allowed):
            msg = f"{source}: {where} has {key} {value}; {rule}"
            raise ScenarioError(msg)
    if "com" in link:
        _pair(link["com"], f"{where} 'com'", source)
    for key in ("rgx", "rgy", "q0", "qmin", "qmax", *(key for key, _, _ in DRIVE_KEYS)):
        if key in link:
            _number(link[key], f"{where} '{key}'", source)
    if "limits" in link:
        low, high = _pair(link["limits"], f"{where} 'limits'", source)
        if low > high:
            msg = f"{source}: {where} has limits [{low}, {high}]; the lower limit must not exceed the upper"
            raise ScenarioError(msg)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as stream:
            return tomllib.load(stream)
    except FileNotFoundError:
        msg = f"scenario file '{path}' does not exist; pass the path of a skelarm scenario or robot TOML"
        raise ScenarioError(msg) from None
    except IsADirectoryError:
        msg = f"scenario '{path}' is a directory; pass the path of a skelarm scenario or robot TOML file"
        raise ScenarioError(msg) from None
    except tomllib.TOMLDecodeError as error:
        msg = f"scenario file '{path}' is not valid TOML ({error}); fix the syntax"
        raise ScenarioError(msg) from None
    except (OSError, UnicodeDecodeError) as error:
        msg = f"scenario file '{path}' cannot be read ({error}); check the path and its permissions"
        raise ScenarioError(msg) from None


def arm_from_config(config: dict[str, Any], source: str = "scenario", path: Path | None = None) -> ArmSetup:
    """Build an :class:`ArmSetup` from parsed scenario tables.

    Parameters
    ----------
    config : dict[str, Any]
        Parsed TOML tables (``[skeleton]``, ``[initial]``, optional ``[simulator]``...).
    source : str, optional
        How to name the file in messages.
    path : Path | None, optional
        The file the tables came from.

    Returns
    -------
    ArmSetup
        The robot at its initial state with the run conditions.

    Raises
    ------
    ScenarioError
        If a table is missing, ill-typed or physically meaningless.
    """
    _check_links(config, source)
    simulator = config.get("simulator", {})
    if not isinstance(simulator, dict):
        msg = f"{source}: [simulator] must be a table, got {simulator!r}"
        raise ScenarioError(msg)
    dt = _number(simulator.get("dt", 0.002), "[simulator].dt", source)
    if dt <= 0.0:
        msg = f"{source}: [simulator].dt is {dt}; the step must be a positive number of seconds"
        raise ScenarioError(msg)
    enforce = simulator.get("enforce_limits", True)
    if not isinstance(enforce, bool):
        msg = f"{source}: [simulator].enforce_limits must be true or false, got {enforce!r}"
        raise ScenarioError(msg)
    grav = _pair(simulator.get("grav_vec", [0.0, 0.0]), "[simulator].grav_vec", source)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # initial angles outside the limits are clamped, as skelarm does
            skeleton = skelarm.Skeleton.from_config(config)
    except (ValueError, TypeError, KeyError) as error:
        msg = f"{source}: {error}"
        raise ScenarioError(msg) from None
    drive = drive_from_config(config, source)
    limits = limits_from_config(config, source)
    try:
        driver = driver_from_config(config, skeleton.num_joints, source)
        if driver is not None:
            driver.steps_per_tick(dt)
    except ValueError as error:
        message = str(error)
        raise ScenarioError(message if message.startswith(source) else f"{source}: {message}") from None
    return ArmSetup(
        path=path,
        config=config,
        skeleton=skeleton,
        dt=dt,
        enforce_limits=enforce,
        grav_vec=np.array(grav, dtype=np.float64),
        drive=None if drive.is_ideal else drive,
        limits=limits if limits.has_effort or limits.has_velocity else None,
        driver=driver,
    )


def load_arm(scenario: str | Path | None) -> ArmSetup:
    """Read the robot and run conditions from a scenario or robot TOML.

    Parameters
    ----------
    scenario : str | Path | None
        A path, a bundled scenario's name, or ``None`` / ``""`` for the default.

    Returns
    -------
    ArmSetup
        The robot at its initial state, the step and the limits setting.

    Raises
    ------
    ScenarioError
        With one sentence naming the file and the problem.
    """
    path = resolve_scenario(scenario)
    return arm_from_config(_read_toml(path), f"scenario file '{path}'", path)


def load_scenario(scenario: str | Path | None) -> skelarm.Scenario:
    """Read a full skelarm scenario (robot, task, controller) with skelarm's own parsers.

    Parameters
    ----------
    scenario : str | Path | None
        A path, a bundled scenario's name, or ``None`` / ``""`` for the default.

    Returns
    -------
    skelarm.Scenario
        The scenario, its controller built by :func:`skelarm.build_controller`.

    Raises
    ------
    ScenarioError
        If the file is not a usable full scenario (the message names the problem,
        including skelarm's list of known controller types for an unknown type).
    """
    return scenario_of(load_arm(scenario))


def scenario_of(arm: ArmSetup) -> skelarm.Scenario:
    """Return the full skelarm scenario of a file already read (:func:`load_arm`), not reading it again.

    Raises
    ------
    ScenarioError
        As :func:`load_scenario`.
    """
    source = f"scenario file '{arm.path}'" if arm.path is not None else "scenario"
    for table in ("task", "controller"):
        if table not in arm.config:
            msg = f"{source} has no [{table}] table; a controller needs a full scenario with [task] and [controller]"
            raise ScenarioError(msg)
        if not isinstance(arm.config[table], dict):
            msg = f"{source}: [{table}] must be a table, got {arm.config[table]!r}"
            raise ScenarioError(msg)
    if "duration" in arm.config["task"]:
        duration = _number(arm.config["task"]["duration"], "[task].duration", source)
        if duration <= 0.0:
            msg = f"{source}: [task].duration is {duration}; give the task's length as a positive number of seconds"
            raise ScenarioError(msg)
    try:
        return skelarm.scenario_from_config(arm.config)
    except (ValueError, TypeError, KeyError, FileNotFoundError) as error:
        msg = f"{source}: {error}"
        raise ScenarioError(msg) from None
    except (OverflowError, MemoryError):
        msg = (
            f"{source}: the task is too long to plan (duration {arm.config['task'].get('duration')} s); "
            "give [task].duration in seconds of a run you mean to simulate"
        )
        raise ScenarioError(msg) from None
