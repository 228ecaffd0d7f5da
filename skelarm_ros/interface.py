# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The interface contract in one place: names, types, modes, and the checks every part shares.

Topic and service names (relative, so a namespace moves a whole arm graph),
message type names, controller channels, command interfaces and simulator modes
live here, and so do the checks of values that several nodes, tools and the
launch description accept (seconds, effort limits, joint name lists, stamps), each
with one wording. docs/interfaces.md is the prose of this module.

:class:`Say` is what a core object says (a log level and a sentence): the cores
return it, the nodes log it.

This module imports neither rclpy nor numpy.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

# -- topics and services (relative names) -----------------------------------------------------------

JOINT_STATES = "joint_states"
EFFORT_COMMANDS = "effort_controller/commands"
POSITION_COMMANDS = "position_controller/commands"
VELOCITY_COMMANDS = "velocity_controller/commands"
JOINT_COMMANDS = "joint_commands"
TIP_WRENCH = "tip_wrench"
TIP = "tip"
TARGET = "target"
ROBOT_DESCRIPTION = "robot_description"
MARKERS = "markers"
CLOCK = "/clock"
CONTROLLER_NAMESPACE = "controller"
RESET_SERVICE = "simulator/reset"
PAUSE_SERVICE = "simulator/pause"

# -- message types, as rosbag2 and the graph name them ------------------------------------------------

JOINT_STATE_TYPE = "sensor_msgs/msg/JointState"
FLOAT_ARRAY_TYPE = "std_msgs/msg/Float64MultiArray"
WRENCH_TYPE = "geometry_msgs/msg/WrenchStamped"
POINT_TYPE = "geometry_msgs/msg/PointStamped"
STRING_TYPE = "std_msgs/msg/String"
CLOCK_TYPE = "rosgraph_msgs/msg/Clock"
MARKER_ARRAY_TYPE = "visualization_msgs/msg/MarkerArray"

# -- frames, units --------------------------------------------------------------------------------------

BASE_FRAME = "base"
NANOSECONDS = 1_000_000_000
WALL_CLOCK_NS = 100_000_000 * NANOSECONDS
"""Header stamps before this (1973) are simulated time (a simulator's clock starts at 0), not the wall clock:
a zero stamp among them is the first instant, not an unset one."""

# -- commands -------------------------------------------------------------------------------------------

COMMANDS = "commands"
"""``command_interface`` value: ``std_msgs/Float64MultiArray`` on the interface's forward command controller's
topic (:data:`ARRAY_COMMAND_TOPICS`, ros2_control)."""
COMMAND_INTERFACES = (COMMANDS, JOINT_COMMANDS)
COMMAND_TOPICS = {COMMANDS: EFFORT_COMMANDS, JOINT_COMMANDS: JOINT_COMMANDS}
"""The topic each command interface publishes an effort command on (:func:`command_topic` for any interface)."""

EFFORT = "effort"
POSITION = "position"
VELOCITY = "velocity"
INTERFACES = (EFFORT, POSITION, VELOCITY)
"""What an arm's driver takes (ros2_control's joint command interfaces): torques, or a servo's position or velocity
goals. A ``joint_commands`` message carries its command in the field of that name (docs/interfaces.md)."""
JOINT_STATE_FIELDS = (POSITION, VELOCITY, EFFORT)
"""The value fields of a ``sensor_msgs/JointState``, in its order."""
ARRAY_COMMAND_TOPICS = {EFFORT: EFFORT_COMMANDS, POSITION: POSITION_COMMANDS, VELOCITY: VELOCITY_COMMANDS}
"""The ``Float64MultiArray`` topic of each interface, as ros2_control's forward command controllers name theirs."""
GOAL_CHANNELS = {POSITION: "goal_position", VELOCITY: "goal_velocity"}
"""A log's channel of a servo's goals of each kind (``bag_to_log`` writes it; ``compare`` and ``identify`` read it)."""
REFERENCE = "reference"
STIFFNESS = "stiffness"
POSITION_MODES = (REFERENCE, STIFFNESS)
"""``position_mode`` values: how a controller's answer becomes a servo's goal: a tracking controller's reference, or
the controller's torque through the servo's stiffness (docs/servo.md)."""


def array_command_kind(topic: str) -> str:
    """Return the interface of a ``Float64MultiArray`` command topic by its name (:data:`ARRAY_COMMAND_TOPICS`).

    ``<kind>_controller/commands`` is that kind's; any other topic carries effort.
    """
    return next((kind for kind, name in ARRAY_COMMAND_TOPICS.items() if topic.endswith("/" + name)), EFFORT)


def command_topic(command_interface: str, interface: str = EFFORT) -> str:
    """Return the topic commands go on: ``joint_commands``, or the interface's ``<kind>_controller/commands``."""
    return JOINT_COMMANDS if command_interface == JOINT_COMMANDS else ARRAY_COMMAND_TOPICS[interface]


# -- effort timing: which step a torque at frame k acted over (docs/interfaces.md) -------------------------

APPLIED_FROM_FRAME = "applied_from_frame"
"""A command's timing: computed from frame k, applied over the step from frame k on (skelarm's ``tau[k]``)."""
APPLIED_UNTIL_FRAME = "applied_until_frame"
"""A joint state's measured effort: applied over the step that ended at frame k."""

# -- simulator modes ------------------------------------------------------------------------------------

REALTIME = "realtime"
LOCKSTEP = "lockstep"
MODES = (REALTIME, LOCKSTEP)

# -- the controller's time line -------------------------------------------------------------------------

TIME_REVERSAL_MODES = ("reset", "reject")
STATE_STAMPS = ("header", "arrival")
"""``state_stamps`` values: what times a joint state for the controller, its header's stamp or its arrival."""
"""``time_reversal`` values: what a joint state stamped earlier than the one before does to the controller."""
PLAN_FROM_STATE = "state"
PLAN_FROM_SCENARIO = "scenario"
PLAN_FROM = (PLAN_FROM_STATE, PLAN_FROM_SCENARIO)
"""``plan_from`` values: a tracking controller's reference starts at the first state it controls, or at the
scenario's initial pose (docs/controller.md, "Driving a real arm")."""
MODEL_ARM = "arm"
MODEL_SKELARM = "skelarm"
CONTROLLER_MODELS = (MODEL_ARM, MODEL_SKELARM)
"""``controller_model`` values: the model-based controllers' model has the scenario's gravity and the twin's
armature and friction (``arm``), or is skelarm's own, gravity-free one (``skelarm``)."""

# -- controller channels --------------------------------------------------------------------------------

POINT_CHANNELS = frozenset({"endpoint", "equilibrium", "apparent_initial"})
"""Channels that are a point ``(x, y)`` in :data:`BASE_FRAME` (``geometry_msgs/PointStamped``).

Every other channel is per joint or scalar (``sensor_msgs/JointState``, values in ``position``)."""

ARM_TOPICS = (
    JOINT_STATES,
    JOINT_COMMANDS,
    EFFORT_COMMANDS,
    POSITION_COMMANDS,
    VELOCITY_COMMANDS,
    TIP_WRENCH,
    TIP,
    TARGET,
    ROBOT_DESCRIPTION,
)
"""The arm graph's topics a recording keeps (besides every ``controller/<channel>``)."""


def channel_topic(channel: str) -> str:
    """Return the topic of a controller channel: ``controller/<channel>``."""
    return f"{CONTROLLER_NAMESPACE}/{channel}"


CHANNEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""What a controller channel's name is: one ROS name token (``controller/<channel>`` is one level deep)."""
CHANNEL_TYPES = (POINT_TYPE, JOINT_STATE_TYPE)
"""The message types of controller channels: a point, or per-joint or scalar values."""


def channel_of(topic: str) -> str | None:
    """Return the channel a ``[.../]controller/<channel>`` topic carries, or ``None`` for another topic."""
    parts = topic.rsplit("/", 2)
    if len(parts) >= 2 and parts[-2] == CONTROLLER_NAMESPACE and parts[-1]:
        return parts[-1]
    return None


def sibling(topic: str, name: str) -> str:
    """Return ``name`` in the namespace of ``topic`` (``/arm1/joint_states`` -> ``/arm1/<name>``)."""
    return topic.rsplit("/", 1)[0] + "/" + name


# -- what a core says ------------------------------------------------------------------------------------

INFO = "info"
WARNING = "warning"
ERROR = "error"


@dataclass(frozen=True)
class Say:
    """One thing a core object says: a log level (:data:`INFO`, :data:`WARNING`, :data:`ERROR`) and a sentence.

    The cores (the simulator's run, the controller's progress, the player's playing)
    return these; a node logs them (:func:`skelarm_ros.nodes.running.say`), a test reads them.
    """

    level: str
    text: str


# -- checks, one wording each ---------------------------------------------------------------------------


def _number(name: str, value: object, unit: str, *, zero: bool) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        number = math.nan
    if not (math.isfinite(number) and (number > 0.0 or (zero and number == 0.0))):
        what = "zero or a positive number" if zero else "a positive number"
        msg = f"{name} must be {what} ({unit}), got {value!r}"
        raise ValueError(msg)
    return number


def check_positive(name: str, value: object, unit: str = "s") -> float:
    """Return ``value`` as a float after checking it is a positive finite number.

    Parameters
    ----------
    name : str
        The parameter's name, for the sentence.
    value : object
        The value given.
    unit : str, optional
        Its unit, for the sentence (seconds unless said).

    Raises
    ------
    ValueError
        ``"<name> must be a positive number (<unit>), got <value>"``.
    """
    return _number(name, value, unit, zero=False)


def check_non_negative(name: str, value: object, unit: str = "s") -> float:
    """Return ``value`` as a float after checking it is a finite number >= 0.

    Raises
    ------
    ValueError
        ``"<name> must be zero or a positive number (<unit>), got <value>"``.
    """
    return _number(name, value, unit, zero=True)


SLICE_RANGE = (0.0001, 0.1)  # s: the CPU slices Linux takes for a thread under normal scheduling


def check_time_slice(name: str, value: object) -> float:
    """Return ``value`` as a float after checking it is 0 or a CPU slice Linux takes (0.1 ms to 100 ms).

    Raises
    ------
    ValueError
        ``"<name> must be 0 (the kernel's default) or from 0.0001 to 0.1 (s), got <value>"``.
    """
    low, high = SLICE_RANGE
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        number = math.nan
    if not (number == 0.0 or low <= number <= high):
        msg = f"{name} must be 0 (the kernel's default) or from {low:g} to {high:g} (s), got {value!r}"
        raise ValueError(msg)
    return number


def check_count(name: str, value: object, high: int | None = None, low: int = 0) -> int:
    """Return ``value`` as an int after checking it is a whole number from ``low`` to ``high`` (``None``: no bound).

    Raises
    ------
    ValueError
        ``"<name> must be a whole number from <low> to <high>, got <value>"`` (or ``", <low> or more"``).
    """
    text = str(value).strip()
    number = int(text) if text.isdigit() else -1
    if isinstance(value, bool) or number < low or (high is not None and number > high):
        bound = f", {low} or more" if high is None else f" from {low} to {high}"
        msg = f"{name} must be a whole number{bound}, got {value!r}"
        raise ValueError(msg)
    return number


def check_choice(name: str, value: str, choices: Sequence[str]) -> str:
    """Return ``value`` after checking it is one of ``choices`` (exactly, case included).

    Raises
    ------
    ValueError
        ``"<name> '<value>' is not one of <choices>"``.
    """
    if value not in choices:
        msg = f"{name} '{value}' is not one of {', '.join(choices)}"
        raise ValueError(msg)
    return value


def check_effort_limits(values: Sequence[float], num_joints: int) -> list[float] | None:
    """Validate an ``effort_limits`` value: empty for none, else one positive limit per joint.

    Parameters
    ----------
    values : Sequence[float]
        The limits (N*m); ``inf`` for a joint without a limit.
    num_joints : int
        The arm's joints.

    Returns
    -------
    list[float] | None
        The limits, or ``None`` for no clamping.

    Raises
    ------
    ValueError
        On a wrong count or a limit that is not a positive number.
    """
    limits = [float(value) for value in values]
    if not limits:
        return None
    if len(limits) != num_joints:
        msg = (
            f"effort_limits has {len(limits)} values but the arm has {num_joints} joints; "
            "give one limit per joint or none"
        )
        raise ValueError(msg)
    if not all(limit > 0.0 for limit in limits):  # also false for NaN
        msg = f"effort_limits must be positive (N*m; inf for no limit), got {limits}"
        raise ValueError(msg)
    return limits


def default_joint_names(num_joints: int) -> list[str]:
    """Return skelarm's joint names ``j1 ... jN`` (the columns of its logs)."""
    return [f"j{i + 1}" for i in range(num_joints)]


def check_joint_names(names: Sequence[str], num_joints: int, what: str = "joint_names") -> list[str]:
    """Validate a list of joint names: empty for ``j1 ... jN``, else one distinct non-empty name per joint.

    Parameters
    ----------
    names : Sequence[str]
        The names given.
    num_joints : int
        The arm's joints.
    what : str, optional
        The parameter or argument's name, for the sentence.

    Raises
    ------
    ValueError
        If the count is wrong, a name is empty, or a name repeats.
    """
    if len(names) == 0:
        return default_joint_names(num_joints)
    if len(names) != num_joints:
        msg = f"{what} has {len(names)} names but the arm has {num_joints} joints; give one name per joint"
        raise ValueError(msg)
    if any(not name for name in names) or len(set(names)) != len(names):
        msg = f"{what} must be {num_joints} distinct non-empty names, got {list(names)}"
        raise ValueError(msg)
    return list(names)


def split_names(text: str | None) -> list[str]:
    """Return the names of a comma-separated list (``"shoulder, elbow"``), blanks dropped; empty for ``None``."""
    return [name.strip() for name in (text or "").split(",") if name.strip()]


def check_mode(mode: str, command_interface: str) -> None:
    """Check the simulator's ``mode`` and ``command_interface`` together.

    Raises
    ------
    ValueError
        On an unknown value, or lockstep without ``joint_commands`` (lockstep pairs a
        command with its state by stamp, and only ``joint_commands`` carries one).
    """
    check_choice("mode", mode, MODES)
    check_choice("command_interface", command_interface, COMMAND_INTERFACES)
    if mode == LOCKSTEP and command_interface != JOINT_COMMANDS:
        msg = (
            f"mode '{LOCKSTEP}' needs stamped commands; set command_interface:={JOINT_COMMANDS} "
            f"(sensor_msgs/JointState on {JOINT_COMMANDS}, stamped with the state it answers)"
        )
        raise ValueError(msg)


def check_node_names(name: str, value: Sequence[str] | None) -> tuple[str, ...]:
    """Check a list of node names (relative, ``recorder``, or full, ``/lab/plotter``; none: empty); return each once.

    Raises
    ------
    ValueError
        On an entry that is not a node name (a count, say: readers are named, not counted).
    """
    for entry in value or ():
        if not all(CHANNEL_NAME.fullmatch(part) for part in entry.removeprefix("/").split("/")):
            msg = (
                f"{name} must name nodes (/plotter, recorder), not count them: {entry!r} is not a node name "
                "(letters, digits and underscores, not starting with a digit, parts separated by '/')"
            )
            raise ValueError(msg)
    return tuple(dict.fromkeys(value or ()))


# -- who a publisher waits for ----------------------------------------------------------------------------


def missing_readers(
    topic: str, wanted: Sequence[str], readers: Sequence[str], matched: int, at_least: int = 0
) -> list[str]:
    """Say what a publisher's first message still waits for; empty when its readers are there (the one rule).

    Parameters
    ----------
    topic : str
        The publisher's topic, for the phrases.
    wanted : Sequence[str]
        Full names of the nodes that read the topic, as the graph's description says.
    readers : Sequence[str]
        Full names of the graph's readers of the topic that can match the publisher (its
        type, a compatible QoS), one per reader.
    matched : int
        Readers matched by the publisher.
    at_least : int, optional
        Readers to wait for when no name can be known (a real arm's driver's effort controller).

    Returns
    -------
    list[str]
        One phrase per missing thing: each wanted node without a reader that can match,
        and the matched count while it is below every reader that can match (so the
        wanted ones are matched, not only known) or below ``at_least``. A reader from
        outside the graph never stands in for a wanted node.
    """
    missing = [f"a {topic} reader of {name}" for name in wanted if name not in readers]
    expected = max(at_least, len(readers) if wanted else 0)
    if matched < expected:
        missing.append(f"{topic} readers matched ({matched} of {expected})")
    return missing


# -- stamps -----------------------------------------------------------------------------------------------


def seconds_to_stamp(t: float) -> tuple[int, int]:
    """Split a time in seconds into ``(sec, nanosec)``, rounded to the nearest nanosecond."""
    return nanoseconds_to_stamp(round(t * NANOSECONDS))


def seconds_to_nanoseconds(t: float) -> int:
    """Return time ``t`` (seconds) in integer nanoseconds, rounded as a published stamp is."""
    return round(t * NANOSECONDS)


def nanoseconds_to_stamp(ns: int) -> tuple[int, int]:
    """Split integer nanoseconds into ``(sec, nanosec)``."""
    return ns // NANOSECONDS, ns % NANOSECONDS


def stamp_to_seconds(sec: int, nanosec: int) -> float:
    """Join a ``(sec, nanosec)`` stamp into seconds."""
    return sec + nanosec * 1e-9


def stamp_to_nanoseconds(sec: int, nanosec: int) -> int:
    """Join a ``(sec, nanosec)`` stamp into integer nanoseconds (exact, for pairing stamps)."""
    return int(sec) * NANOSECONDS + int(nanosec)


def stamp_text(ns: int) -> str:
    """Return a stamp in nanoseconds as ``'<sec>.<nanosec> s'`` (nine digits), as log lines show it."""
    sec, nanosec = nanoseconds_to_stamp(ns)
    return f"{sec}.{nanosec:09d} s"
