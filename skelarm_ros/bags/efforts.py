# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Efforts to compare: a run's commands or measured effort beside a shadow controller's commands.

A shadow run (launch argument ``replay:=BAG``) plays a recorded run's joint states into a
controller that drives nothing; each of its commands is stamped with the state it
answers. What it is set beside is read from the recorded run (:func:`load_efforts`):

- its **commands**, when it recorded some: ``joint_commands`` (``sensor_msgs/JointState``
  by name, stamped with the state answered), else ``effort_controller/commands``
  (``std_msgs/Float64MultiArray``, unstamped: each paired with the state logged last
  before it, in ``command_joints`` order); from a ``.sklog.npz`` log, ``tau`` at each
  frame's stamp when it came from commands. Two sets of commands are paired by the
  stamp of the state each answers (:func:`compare_commands`). A servo arm's commands are
  its goals (:attr:`Efforts.kind` ``position`` or ``velocity``): the field of that name of
  ``joint_commands``, ``position_controller/commands`` or ``velocity_controller/commands``,
  a log's ``goal_position`` or ``goal_velocity``; a shadow's goals are set beside the
  recorded goals of their kind. A JointState command topic whose stamps are not the
  recorded states' (a driver's goals stamped when sent, or not at all) is paired as an
  unstamped one is: each with the state logged last before it;
- its **measured effort**, when it recorded no commands (a real robot's bag usually holds
  only its driver's joint states): the joint states' ``effort``, or a log's ``tau`` taken
  from it (``extra.effort.timing`` ``applied_until_frame``). By the package's effort
  convention (``docs/interfaces.md``) a state's effort is the torque applied over the step
  that ended at it, so the command answering state k is paired with the effort of state
  k + 1; a real actuator adds its own delay, so the lag (in states) that aligns the two
  best is found and reported beside it (:func:`compare_measured`).

The differences are shadow minus recorded, per joint, in N*m (or N for a sliding joint), or
in the goals' unit (rad, rad/s).

This module does not import rclpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from skelarm_ros.bags.logfile import LogFileError, read_log
from skelarm_ros.bags.reader import Bag, BagError, open_bag
from skelarm_ros.interface import (
    APPLIED_UNTIL_FRAME,
    ARRAY_COMMAND_TOPICS,
    EFFORT,
    FLOAT_ARRAY_TYPE,
    GOAL_CHANNELS,
    JOINT_COMMANDS,
    JOINT_STATE_TYPE,
    JOINT_STATES,
    NANOSECONDS,
    POSITION,
    VELOCITY,
    array_command_kind,
    channel_of,
    default_joint_names,
    sibling,
    stamp_to_nanoseconds,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

CONVENTION_LAG = 1
"""States between a command and the measured effort that answers it, by the package's effort convention."""
MAX_LAG = 0.25
"""Seconds of lag searched for the best alignment of commands and measured effort, by default."""
STAMP_FIELDS = ("header.stamp.sec", "header.stamp.nanosec")


class CompareError(ValueError):
    """Efforts that cannot be compared; the message names the file and what would be right."""


@dataclass
class Efforts:
    """One side's efforts, by stamp.

    Attributes
    ----------
    path : Path
        The bag or log read.
    source : str
        Where in it they came from (a topic, or ``tau``).
    joints : list[str]
        The column names.
    stamps : NDArray[np.int64]
        ``(n,)`` stamps in ns, increasing, each once: of the state each command answers,
        or of the state each measured effort belongs to.
    values : NDArray[np.float64]
        ``(n, len(joints))`` efforts (NaN where a joint has none).
    measured : bool
        Measured effort (a joint state's, applied until its stamp), not commands.
    kind : str
        What the commands are: ``effort``, or a servo's ``position`` or ``velocity`` goals.
    """

    path: Path
    source: str
    joints: list[str]
    stamps: NDArray[np.int64]
    values: NDArray[np.float64]
    measured: bool = False
    kind: str = EFFORT

    @property
    def what(self) -> str:
        """``commands``, ``position goals``, ``velocity goals`` or ``measured effort``, for sentences."""
        if self.measured:
            return "measured effort"
        return "commands" if self.kind == EFFORT else f"{self.kind} goals"


def _unique(stamps: list[int], rows: list[NDArray[np.float64]], width: int) -> tuple[Any, Any]:
    """Sort by stamp; of several rows for one stamp keep the last one logged."""
    order = np.argsort(np.asarray(stamps, dtype=np.int64), kind="stable")
    sorted_stamps = np.asarray(stamps, dtype=np.int64)[order]
    values = np.asarray(rows, dtype=np.float64).reshape(len(rows), width)[order]
    keep = np.append(sorted_stamps[1:] != sorted_stamps[:-1], True) if len(sorted_stamps) else np.zeros(0, bool)
    return sorted_stamps[keep], values[keep]


def _given(bag: Bag, topic: str) -> str:
    """Return a topic named on the command line, checked: it is there, and of a type that carries efforts."""
    found = [name for name in bag.topics if name in (topic, "/" + topic)]
    if not found:
        msg = f"bag '{bag.path}' has no topic '{topic}'; it has {list(bag.topics)}"
        raise CompareError(msg)
    msgtype = bag.topics[found[0]].msgtype
    if msgtype not in (JOINT_STATE_TYPE, FLOAT_ARRAY_TYPE):
        msg = (
            f"topic '{found[0]}' is {msgtype}, not {JOINT_STATE_TYPE} or {FLOAT_ARRAY_TYPE}; choose a topic of efforts"
        )
        raise CompareError(msg)
    return found[0]


def _command_topic(bag: Bag, kind: str | None = None) -> str | None:
    """Return the bag's command topic: its only ``joint_commands``, else its only ``<kind>_controller/commands``.

    ``kind`` (``effort``, ``position``, ``velocity``) looks only for that kind's array topic; ``None`` for any.
    """
    arrays = [topic for name, topic in ARRAY_COMMAND_TOPICS.items() if kind in (None, name)]
    for relative, msgtype in ((JOINT_COMMANDS, JOINT_STATE_TYPE), *((topic, FLOAT_ARRAY_TYPE) for topic in arrays)):
        found = [
            name
            for name, summary in bag.topics.items()
            if (name == "/" + relative or name.endswith("/" + relative)) and summary.msgtype == msgtype
        ]
        if len(found) > 1:
            msg = (
                f"bag '{bag.path}' has several command topics {found}; "
                "choose one with --recorded-topic or --shadow-topic"
            )
            raise CompareError(msg)
        if found:
            return found[0]
    return None


def state_topics(bag: Bag) -> list[str]:
    """Return the bag's joint-state topics: the JointState topics with messages that are no controller's channel.

    One named ``joint_states`` comes alone: it is the arm's.
    """
    candidates = [
        name
        for name, summary in bag.topics.items()
        if summary.msgtype == JOINT_STATE_TYPE and summary.count and channel_of(name) is None
    ]
    named = [name for name in candidates if name.rsplit("/", 1)[-1] == JOINT_STATES]
    return named if len(named) == 1 else candidates


def _state_topic(bag: Bag) -> str:
    """Return the bag's joint-state topic, for its measured effort: the only one (one named ``joint_states`` wins)."""
    candidates = state_topics(bag)
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        topics = list(bag.topics)
        msg = f"bag '{bag.path}' has no command topic and no joint states, so nothing to compare; it has {topics}"
        raise CompareError(msg)
    listed = ", ".join(f"{name} ({bag.topics[name].count})" for name in candidates)
    msg = (
        f"bag '{bag.path}' has no commands and several joint-state topics ({listed}); "
        "choose the one whose measured effort to compare with --recorded-topic"
    )
    raise CompareError(msg)


def _check_fields(bag: Bag, topic: str, paths: Sequence[str]) -> None:
    """Refuse a topic whose stored definition lacks a field read from it (:meth:`Bag.lacking`)."""
    problem = bag.lacking(topic, paths)
    if problem is not None:
        msg = f"{problem}; record '{topic}' again to compare it"
        raise CompareError(msg)


def named_rows(
    bag: Bag, topic: str, joints: Sequence[str], field: str
) -> tuple[list[str], NDArray[np.int64], NDArray[np.float64]]:
    """Read one field of JointState messages by joint name, at their stamps, each stamp once (the last logged).

    Parameters
    ----------
    bag : Bag
        The open bag.
    topic : str
        A JointState topic.
    joints : Sequence[str]
        The columns: joint names (NaN where a message has none); empty for the first message's names.
    field : str
        ``position``, ``velocity`` or ``effort``.

    Returns
    -------
    tuple[list[str], NDArray[np.int64], NDArray[np.float64]]
        The joint names, the stamps (ns, increasing) and the values ``(stamps, joints)``.

    Raises
    ------
    CompareError
        If the topic's stored definition lacks the fields.
    """
    _check_fields(bag, topic, (*STAMP_FIELDS, "name", field))
    names = list(joints)
    stamps: list[int] = []
    rows: list[NDArray[np.float64]] = []
    for _, _, _, message in bag.messages([topic]):
        values = getattr(message, field)
        if not names:
            names = list(message.name) or default_joint_names(len(values))
        carried = list(message.name) or default_joint_names(len(values))
        by_name = dict(zip(carried, np.asarray(values, dtype=np.float64), strict=False))
        rows.append(np.array([by_name.get(name, np.nan) for name in names], dtype=np.float64))
        stamp = message.header.stamp
        stamps.append(stamp_to_nanoseconds(stamp.sec, stamp.nanosec))
    stamp_array, values = _unique(stamps, rows, len(names))
    return names, stamp_array, values


def _measured(bag: Bag, topic: str, joints: Sequence[str]) -> Efforts:
    """Return a driver's measured effort: its joint states' effort by name, at their stamps."""
    names, stamps, values = named_rows(bag, topic, joints, "effort")
    return Efforts(bag.path, topic, names, stamps, values, measured=True)


def _kinds(bag: Bag, topic: str) -> list[str]:
    """Return what a command topic carries: its kinds of command.

    An array topic its kind (by its name); a JointState the fields its first message with any
    carries, of effort, position and velocity in that order.
    """
    if bag.topics[topic].msgtype == FLOAT_ARRAY_TYPE:
        return [array_command_kind(topic)]
    _check_fields(bag, topic, (*STAMP_FIELDS, "name", EFFORT, POSITION, VELOCITY))
    for _, _, _, message in bag.messages([topic]):
        carried = [kind for kind in (EFFORT, POSITION, VELOCITY) if len(getattr(message, kind))]
        if carried:
            return carried
    return [EFFORT]


def _states_for(bag: Bag, topic: str, answered: NDArray[np.int64] | None) -> str | None:
    """Return the joint states a command topic's commands answer; ``None`` for none.

    ``joint_states`` beside it, else the recorded states sharing the most stamps with the
    shadow's ``answered`` ones, else the only ones.
    """
    beside = sibling(topic.removesuffix("/commands"), JOINT_STATES)
    if beside in bag.topics and bag.topics[beside].msgtype == JOINT_STATE_TYPE:
        return beside
    candidates = [name for name in state_topics(bag) if name != topic and name.rsplit("/", 1)[-1] != JOINT_COMMANDS]
    if answered is not None and len(candidates) > 1:
        shared = {name: len(np.intersect1d(named_rows(bag, name, (), "position")[1], answered)) for name in candidates}
        return max(candidates, key=lambda name: shared[name])
    return candidates[0] if len(candidates) == 1 else None


def _commands(
    bag: Bag, topic: str, joints: Sequence[str], kind: str, answered: NDArray[np.int64] | None = None
) -> Efforts:
    """Commands of ``kind`` on ``topic``, each at the stamp of the state it answers.

    A JointState command carries that stamp (the package's convention) when its stamps are
    recorded states' stamps; any other (an array, which has none; a JointState stamped
    otherwise) is paired with the state logged last before it.
    """
    array = bag.topics[topic].msgtype == FLOAT_ARRAY_TYPE
    states = _states_for(bag, topic, answered)
    if array and states is None:
        msg = (
            f"bag '{bag.path}' has unstamped commands on '{topic}' but no joint states to pair them with; "
            "record joint_states with them"
        )
        raise CompareError(msg)
    _check_fields(bag, topic, ("data",) if array else (*STAMP_FIELDS, "name", kind))
    if states is not None:
        _check_fields(bag, states, STAMP_FIELDS)
    names = list(joints)
    own: list[int] = []  # each command's own stamp (JointState)
    last: list[int] = []  # the stamp of the state logged last before it
    rows: list[NDArray[np.float64]] = []
    seen: set[int] = set()
    state: int | None = None
    width = len(joints)
    for name, _, _, message in bag.messages([topic] if states is None else [topic, states]):
        if name == states:
            state = stamp_to_nanoseconds(message.header.stamp.sec, message.header.stamp.nanosec)
            seen.add(state)
            continue
        if array:
            data = np.asarray(message.data, dtype=np.float64)
            width = width or len(data)
            if len(data) != width:
                continue  # of another arm: cannot be put in columns
        else:
            values = getattr(message, kind)
            carried = list(message.name) or default_joint_names(len(values))
            names = names or carried
            by_name = dict(zip(carried, np.asarray(values, dtype=np.float64), strict=False))
            data = np.array([by_name.get(joint, np.nan) for joint in names], dtype=np.float64)
            own.append(stamp_to_nanoseconds(message.header.stamp.sec, message.header.stamp.nanosec))
        last.append(-1 if state is None else state)
        rows.append(data)
    stamped = not array and (states is None or bool(seen.intersection(own)))
    stamps = own if stamped else last
    keep = [k for k, stamp in enumerate(stamps) if stamp >= 0]  # a command logged before any state answers none
    names = names or default_joint_names(width)
    stamp_array, values = _unique([stamps[k] for k in keep], [rows[k] for k in keep], len(names))
    source = topic if stamped else f"{topic} (paired with {states})"
    return Efforts(bag.path, source, names, stamp_array, values, kind=kind)


def _log_efforts(path: Path, kind: str | None = None) -> Efforts:
    """Return a log's ``tau`` at each frame's stamp: commands, or measured effort when it came from the joint states.

    A servo arm's log gives its goals instead (``goal_position`` or ``goal_velocity``), or the goals of ``kind``.
    """
    try:
        log = read_log(path)
    except LogFileError as error:
        raise CompareError(str(error)) from None
    goals = [
        channel for name, channel in GOAL_CHANNELS.items() if kind in (None, name) and channel in log.channel_names
    ]
    if goals:
        return _log_goals(path, log, goals[0])
    if "tau" not in log.channel_names:
        msg = f"log '{path}' has no 'tau' channel (joint torques), so no efforts to compare"
        raise CompareError(msg)
    times = np.asarray(log.times, dtype=np.float64)
    tau = np.asarray(log.channel("tau"), dtype=np.float64).reshape(len(times), -1)
    extra = log.extra
    origin = int(extra.get("time_origin_ns", 0))
    stamps = origin + np.round(times * NANOSECONDS).astype(np.int64)
    names = [str(name) for name in extra.get("joint_names", [])] or default_joint_names(tau.shape[1])
    measured = extra.get("effort", {}).get("timing") == APPLIED_UNTIL_FRAME
    keep = np.ones(len(stamps), bool) if measured else np.isfinite(tau).any(axis=1)  # measured: every state counts
    return Efforts(path, "tau", names[: tau.shape[1]], stamps[keep], tau[keep], measured=measured)


def _log_goals(path: Path, log: Any, channel: str) -> Efforts:
    """Return a log's goals (``goal_position``, ``goal_velocity``) at each frame's stamp where it holds one."""
    times = np.asarray(log.times, dtype=np.float64)
    goals = np.asarray(log.channel(channel), dtype=np.float64).reshape(len(times), -1)
    stamps = int(log.extra.get("time_origin_ns", 0)) + np.round(times * NANOSECONDS).astype(np.int64)
    names = [str(name) for name in log.extra.get("joint_names", [])] or default_joint_names(goals.shape[1])
    keep = np.isfinite(goals).any(axis=1)
    kind = channel.removeprefix("goal_")
    return Efforts(path, channel, names[: goals.shape[1]], stamps[keep], goals[keep], kind=kind)


def load_efforts(
    path: str | Path,
    topic: str | None = None,
    command_joints: Sequence[str] = (),
    *,
    commands_only: bool = False,
    kind: str | None = None,
    answered: NDArray[np.int64] | None = None,
) -> Efforts:
    """Read one side's efforts from a bag or a ``.sklog.npz`` log: its commands, else its measured effort.

    Parameters
    ----------
    path : str | Path
        A bag (any format :func:`skelarm_ros.bags.reader.open_bag` reads) or a log.
    topic : str | None, optional
        The topic to read: a command topic, or a joint-state topic for its measured
        effort; ``None`` finds ``joint_commands`` or ``effort_controller/commands``, else
        the bag's joint states.
    command_joints : Sequence[str], optional
        The joint names, in the order a ``Float64MultiArray`` command carries them
        (``j1 ... jN`` when empty); for ``joint_commands``, the columns to keep.
    commands_only : bool, optional
        Refuse a side without commands (the shadow's).
    kind : str | None, optional
        The commands to read: ``effort``, or a servo's ``position`` or ``velocity`` goals (the
        shadow's kind, for the recorded side); ``None`` for what the side has.
    answered : NDArray[np.int64] | None, optional
        The stamps of the states the shadow answered: of a bag with several joint-state topics,
        the one they are stamps of pairs commands that are not stamped with states.

    Raises
    ------
    CompareError
        If the file cannot be read or holds no efforts (one sentence).
    """
    file = Path(path)
    if file.name.endswith(".npz"):
        efforts = _log_efforts(file, kind)
    else:
        try:
            with open_bag(file) as bag:
                efforts = _from_bag(
                    bag, topic, command_joints, commands_only=commands_only, kind=kind, answered=answered
                )
        except BagError as error:
            raise CompareError(str(error)) from None
    if kind is not None and efforts.kind != kind and not efforts.measured:
        msg = (
            f"'{file}' holds {efforts.what} on {efforts.source}, not the {kind} commands to set beside the shadow's; "
            f"pass --recorded-topic with the topic of the recorded {kind} commands"
        )
        raise CompareError(msg)
    if commands_only and efforts.measured:
        msg = f"'{file}' holds measured effort ({efforts.source}), not a shadow's commands; pass the shadow run second"
        raise CompareError(msg)
    if len(efforts.stamps) == 0:
        msg = f"'{file}' holds no {efforts.what} on {efforts.source}"
        raise CompareError(msg)
    return efforts


def _from_bag(
    bag: Bag,
    topic: str | None,
    joints: Sequence[str],
    *,
    commands_only: bool,
    kind: str | None,
    answered: NDArray[np.int64] | None,
) -> Efforts:
    chosen = _given(bag, topic) if topic else _command_topic(bag, kind)
    if chosen is None and (commands_only or kind not in (None, EFFORT)):
        what = "commands" if kind in (None, EFFORT) else f"{kind} commands (a servo's goals)"
        hint = "" if kind in (None, EFFORT) else "; pass --recorded-topic with the topic its goals were sent on"
        msg = f"bag '{bag.path}' has no command topic, so no {what} to compare; it has {list(bag.topics)}{hint}"
        raise CompareError(msg)
    if chosen is None:
        efforts = _measured(bag, _state_topic(bag), joints)
    elif topic and kind in (None, EFFORT) and _is_state_topic(bag, chosen):  # a joint-state topic named for its effort
        efforts = _measured(bag, chosen, joints)
    else:  # commands, stamped or not: of the kind asked for where carried, else of the first kind carried
        carried = _kinds(bag, chosen)
        return _commands(bag, chosen, joints, kind if kind in carried else carried[0], answered)
    _check_measured(efforts)
    return efforts


def _is_state_topic(bag: Bag, topic: str) -> bool:
    """Whether a JointState topic given by name holds states (positions), not stamped commands (effort only)."""
    for _, _, _, message in bag.messages([topic]):
        return len(message.position) > 0
    return False


def _check_measured(efforts: Efforts) -> None:
    """Refuse measured effort that says nothing: none carried, or zero in every state (a driver that reports none)."""
    values = efforts.values
    finite = np.isfinite(values)
    if not finite.any():
        msg = (
            f"the joint states on {efforts.source} in '{efforts.path}' carry no effort, and the bag records no "
            "commands: nothing to compare the shadow's commands with; record the driver's effort or its commands"
        )
        raise CompareError(msg)
    if not values[finite].any():
        msg = (
            f"the joint states on {efforts.source} in '{efforts.path}' carry an effort of zero in every state (the "
            "driver reports none), and the bag records no commands: nothing to compare the shadow's commands with"
        )
        raise CompareError(msg)


@dataclass(frozen=True)
class JointDifference:
    """How one joint's shadow commands differ from the recorded efforts (shadow minus recorded)."""

    name: str
    rms: float
    max: float
    at: float
    """Seconds after the first paired state at which :attr:`max` happened."""


@dataclass
class Lag:
    """How measured effort lines up with the commands it follows.

    Attributes
    ----------
    convention : int
        States after each command whose effort is paired with it (:data:`CONVENTION_LAG`).
    best : int
        States after each command at which the effort differs from it least (RMS over every joint).
    rms : list[float]
        The RMS difference over every joint at each lag from 0, in order.
    period : float
        The recorded states' median period (s), to say lags in seconds.
    """

    convention: int
    best: int
    rms: list[float]
    period: float

    def text(self) -> str:
        """Say the best lag and its RMS beside the convention's."""
        best, convention = self.best, self.convention
        states = f"{best} state{'' if best == 1 else 's'} ({best * self.period * 1e3:.1f} ms)"
        if best == convention:
            return (
                f"the lag that aligns them best is the convention's: {states}, RMS {self.rms[best]:.4g} over all joints"
            )
        return (
            f"the lag that aligns them best is {states} after each command: RMS {self.rms[best]:.4g} over all joints, "
            f"against {self.rms[convention]:.4g} at the convention's {convention} state"
        )


@dataclass
class Comparison:
    """Recorded efforts and shadow commands paired by stamp.

    Attributes
    ----------
    joints : list[JointDifference]
        Per joint, in the recorded order.
    stamps : NDArray[np.int64]
        ``(n,)`` the paired stamps (ns): of the state each shadow command answers.
    difference : NDArray[np.float64]
        ``(n, joints)`` shadow minus recorded at the paired stamps.
    recorded_only, shadow_only : int
        Efforts of one side with no partner on the other.
    lag : Lag | None
        For measured effort: the lag used and the one that aligns best.
    """

    joints: list[JointDifference]
    stamps: NDArray[np.int64]
    difference: NDArray[np.float64]
    recorded_only: int
    shadow_only: int
    lag: Lag | None = field(default=None)

    @property
    def largest(self) -> float:
        """The largest difference over every joint."""
        return max((joint.max for joint in self.joints), default=0.0)

    def text(self) -> str:
        """Return the table the tool prints."""
        if self.lag is None:
            lines = [
                f"paired {len(self.stamps)} commands by the stamp of the state they answer; {self.recorded_only} "
                f"recorded without a shadow command, {self.shadow_only} shadow without a recorded one"
            ]
        else:
            lines = [
                f"paired {len(self.stamps)} shadow commands with the measured effort of the state after the one each "
                f"answers (docs/interfaces.md); {self.recorded_only} recorded states without a shadow command, "
                f"{self.shadow_only} shadow commands without a following state",
                self.lag.text(),
            ]
        lines.append(f"{'joint':<12} {'RMS':>12} {'max':>12} {'at (s)':>10}")
        lines += [f"{j.name:<12} {j.rms:>12.4g} {j.max:>12.4g} {j.at:>10.4f}" for j in self.joints]
        return "\n".join(lines)


def common_joints(first: Sequence[str], second: Sequence[str], none: str) -> tuple[list[str], list[int], list[int]]:
    """Return the joints both sides name (in the first's order), and their columns on each side.

    Raises
    ------
    CompareError
        With the sentence ``none`` when they name no joint in common.
    """
    joints = [name for name in first if name in second]
    if not joints:
        raise CompareError(none)
    return joints, [list(first).index(name) for name in joints], [list(second).index(name) for name in joints]


def _columns(recorded: Efforts, shadow: Efforts) -> tuple[list[str], list[int], list[int]]:
    """Return the joints both sides name, and their columns on each side."""
    none = (
        f"the recorded {recorded.what} name the joints {recorded.joints} and the shadow's {shadow.joints}: none "
        "in common; pass --command-joints with the names of the unstamped side"
    )
    return common_joints(recorded.joints, shadow.joints, none)


def joint_differences(
    joints: Sequence[str], difference: NDArray[np.float64], seconds: NDArray[Any]
) -> list[JointDifference]:
    """Return each joint's RMS and largest difference (NaN rows left out), and when the largest happened."""
    out = []
    for k, name in enumerate(joints):
        column = np.abs(difference[:, k])
        finite = np.isfinite(column)
        worst = int(np.argmax(np.where(finite, column, -1.0))) if finite.any() else 0
        rms = float(np.sqrt(np.mean(np.square(column[finite])))) if finite.any() else float("nan")
        out.append(
            JointDifference(name, rms, float(column[worst]) if finite.any() else float("nan"), float(seconds[worst]))
        )
    return out


def _no_common_state(recorded: Efforts, shadow: Efforts) -> CompareError:
    return CompareError(
        f"no shadow command answers a state the recorded {recorded.what} belong to ('{recorded.path}' and "
        f"'{shadow.path}'); was the shadow run replayed from this recording?"
    )


def compare_commands(recorded: Efforts, shadow: Efforts) -> Comparison:
    """Pair two sets of commands by stamp and measure each joint's difference.

    Raises
    ------
    CompareError
        If the sides share no joint name or no stamp.
    """
    joints, columns_r, columns_s = _columns(recorded, shadow)
    stamps, left, right = np.intersect1d(recorded.stamps, shadow.stamps, assume_unique=True, return_indices=True)
    if len(stamps) == 0:
        raise _no_common_state(recorded, shadow)
    difference = shadow.values[right][:, columns_s] - recorded.values[left][:, columns_r]
    seconds = (stamps - stamps[0]) / NANOSECONDS
    return Comparison(
        joint_differences(joints, difference, seconds),
        stamps,
        difference,
        len(recorded.stamps) - len(stamps),
        len(shadow.stamps) - len(stamps),
    )


def shifted_rms(commands: NDArray[np.float64], efforts: NDArray[np.float64], shift: int) -> float:
    """Return the RMS of ``efforts[k + shift] - commands[k]`` over the frames where both rows are finite.

    Parameters
    ----------
    commands, efforts : NDArray[np.float64]
        ``(n, joints)`` on the same frames: the command of frame k (applied from it) and
        the effort measured at frame k (applied until it).
    shift : int
        Frames from a command to the effort paired with it (negative: before it).

    Returns
    -------
    float
        The RMS over every joint of the paired rows; NaN when no row pairs.
    """
    if shift >= 0:
        x, y = commands[: len(commands) - shift], efforts[shift:]
    else:
        x, y = commands[-shift:], efforts[: len(efforts) + shift]
    difference = (y - x)[np.isfinite(y - x).all(axis=1)]
    return float(np.sqrt(np.mean(difference**2))) if difference.size else math.nan


def compare_measured(measured: Efforts, shadow: Efforts, *, max_lag: float = MAX_LAG) -> Comparison:
    """Pair each shadow command with the measured effort that follows it, and find the lag that aligns them best.

    The command answering recorded state k is paired with the effort of state k +
    :data:`CONVENTION_LAG` (the torque applied over the step after it); the RMS
    difference over every joint is measured at each lag from 0 to ``max_lag`` seconds
    (in states), and the smallest is reported beside it.

    Parameters
    ----------
    measured : Efforts
        The recorded states' measured effort (:attr:`Efforts.measured`).
    shadow : Efforts
        The shadow's commands, stamped with the recorded states they answer.
    max_lag : float, optional
        The longest lag searched (s).

    Raises
    ------
    CompareError
        If the sides share no joint name, or no shadow command answers a recorded state
        that has one after it.
    """
    joints, columns_r, columns_s = _columns(measured, shadow)
    states = measured.stamps
    where = np.searchsorted(states, shadow.stamps)
    answers = (where < len(states)) & (states[np.minimum(where, len(states) - 1)] == shadow.stamps)
    index = where[answers]
    commands = shadow.values[answers][:, columns_s]
    efforts = measured.values[:, columns_r]
    by_state = np.full(efforts.shape, np.nan)  # each recorded state's shadow command, NaN where none answers it
    by_state[index] = commands
    period = float(np.median(np.diff(states))) / NANOSECONDS if len(states) > 1 else 0.0
    most = max(CONVENTION_LAG, min(len(states) - 1, round(max_lag / period) if period > 0 else 0))
    rms = [shifted_rms(by_state, efforts, shift) for shift in range(most + 1)]
    rms = [value if math.isfinite(value) else math.inf for value in rms]
    paired = index + CONVENTION_LAG < len(states)
    if not paired.any():
        raise _no_common_state(measured, shadow)
    difference = commands[paired] - efforts[index[paired] + CONVENTION_LAG]
    stamps = states[index[paired]]
    seconds = (stamps - stamps[0]) / NANOSECONDS
    lag = Lag(CONVENTION_LAG, int(np.argmin(rms)), rms, period)
    unanswered = len(states) - len(np.unique(index))
    return Comparison(
        joint_differences(joints, difference, seconds),
        stamps,
        difference,
        unanswered,
        len(shadow.stamps) - int(paired.sum()),
        lag,
    )


def compare_efforts(recorded: Efforts, shadow: Efforts, *, max_lag: float = MAX_LAG) -> Comparison:
    """Compare the shadow's commands with the recorded commands, or with the recorded measured effort."""
    if recorded.measured:
        return compare_measured(recorded, shadow, max_lag=max_lag)
    return compare_commands(recorded, shadow)
