# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Recorded runs as identification samples: conventions applied, masked samples dropped, velocity differentiated.

A bag is converted in memory by :func:`skelarm_ros.bags.bag_to_log.convert` (no file in
between) and a ``.sklog.npz`` read by :func:`skelarm_ros.bags.logfile.read_log`; both give
a :class:`~skelarm_ros.bags.logfile.LogFile`, so bags and logs go through one path and a
bag is read with exactly ``bag_to_log``'s conventions (docs/bags.md): joint names and
order, the clock, the valid-sample masks, and which torque the effort is and over which
step it acted (``[extra].effort.timing``). What the conversion says comes back as values
(:attr:`Recording.notes`), and the files read with their sha256, as ``bag_to_log``
records them (:attr:`Recording.files`):

- ``applied_from_frame`` (commands; every skelarm log): the torque at frame ``k``
  acted over the step from ``t_k`` to ``t_{k+1}``;
- ``applied_until_frame`` (a joint state's effort): the torque at frame ``k`` acted
  over the step that ended at ``t_k``.

Frames missing from a recording (a step longer than 1.5 median steps) break the run:
no acceleration is taken across the gap.

The acceleration of sample ``k`` is the forward difference quotient
``(dq_{k+1} - dq_k) / (t_{k+1} - t_k)`` and its torque the one that acted over that
step. The simulator integrates with semi-implicit Euler (``dq += ddq dt``), so on
simulated data this quotient is exactly the acceleration the dynamics produced at the
step's start state ``(q_k, dq_k)``; such frames are recognised by ``q_{k+1} - q_k =
h dq_{k+1}`` holding to rounding. On any other run (a real arm moves continuously) the
quotient is the mean acceleration over the step and is paired with the step's
midpoint state ``((q_k + q_{k+1}) / 2, (dq_k + dq_{k+1}) / 2)``. When
the steps are uniform to within the stamps' rounding (``|h_k - h| <= 1e-6 h + 2 ns``)
the mean step ``h = (t_last - t_first) / (N - 1)`` is used, so nanosecond stamps
cost no accuracy.

A sample is used only where its angle, velocity, next velocity and torque (and the
tip force, when recorded) are valid; the rest are dropped and counted, never filled in.

Joint states without velocity (positions only, as many servo drivers publish) are
differentiated: the velocity at a frame is the central difference of the angles around
it (``(q_{k+1} - q_{k-1}) / (t_{k+1} - t_{k-1})``, one-sided at the ends of a run), so an
encoder's quantisation becomes velocity noise the identification's filter removes.

A recording may carry two torques: the commands (applied from their frame) and the joint
states' own effort (measured, applied until their frame). :func:`choose_torque` picks
the one to fit; :func:`command_lag` says how much later than stamped the commands show
in the measured effort.

This module does not import rclpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from skelarm_ros.bags.efforts import shifted_rms
from skelarm_ros.bags.logfile import LogFile, LogFileError, read_log
from skelarm_ros.identification import IdentificationError
from skelarm_ros.identification.signals import GAP_FACTOR, differentiate, semi_implicit, within
from skelarm_ros.interface import APPLIED_FROM_FRAME, APPLIED_UNTIL_FRAME, default_joint_names

if TYPE_CHECKING:
    from collections.abc import Sequence

    import skelarm
    from numpy.typing import NDArray

FROM_FRAME = APPLIED_FROM_FRAME
UNTIL_FRAME = APPLIED_UNTIL_FRAME
TIMINGS = (FROM_FRAME, UNTIL_FRAME)
LOG_SUFFIX = ".npz"
_UNIFORM_RTOL = 1e-6  # relative spread of the steps accepted as a uniform step
_UNIFORM_ATOL = 2e-9  # s: two nanosecond-stamp roundings
_MIN_FRAMES = 3


@dataclass
class Torque:
    """One torque a recording carries.

    Attributes
    ----------
    kind : str
        ``commands`` (effort commands), ``measured`` (the joint states' effort beside
        commands) or ``effort`` (the only torque: a log's, or the joint states' effort).
    values : NDArray[np.float64]
        Torques (N*m), shape ``(N, n)``; NaN where not valid.
    timing : str
        Which step the torque at a frame acted over (:data:`TIMINGS`).
    description : str
        Where it came from, for the report.
    """

    kind: str
    values: NDArray[np.float64]
    timing: str
    description: str

    def selected(self, order: Sequence[int]) -> Torque:
        """Return the torque of the columns ``order``."""
        return Torque(self.kind, self.values[:, list(order)], self.timing, self.description)

    def rows(self, keep: NDArray[np.bool_]) -> Torque:
        """Return the torque of the frames ``keep``."""
        return Torque(self.kind, self.values[keep], self.timing, self.description)


@dataclass
class Recording:
    """One input as read, in its own joint order.

    Attributes
    ----------
    source : Path
        The bag or log it came from, as given.
    joints : list[str]
        Joint names, one per column.
    time : NDArray[np.float64]
        Frame times (s), shape ``(N,)``.
    q, dq, tau : NDArray[np.float64]
        Joint angles (rad), velocities (rad/s) and torques (N*m), shape ``(N, n)``;
        NaN where a value is not valid. Without recorded velocities ``dq`` is the
        angles' central difference (``velocity_recorded`` false).
    force : NDArray[np.float64] | None
        External tip force ``(fx, fy)`` (N) held over the step from each frame, shape
        ``(N, 2)``; ``None`` when none was recorded.
    timing : str
        Which step the torque at a frame acted over (:data:`TIMINGS`).
    effort : str
        Where the torque came from, for the report.
    skeleton : skelarm.Skeleton | None
        The arm embedded in the log (a scenario or ``robot_description``), if any.
    torques : list[Torque]
        Every torque recorded (commands and the joint states' effort); ``tau`` is one of them.
    velocity_recorded : bool
        Whether the joint states carried velocities.
    from_angles : tuple[str, ...]
        Joints whose recorded velocity was replaced by the angles' central difference
        (:meth:`with_velocity_from_angles`).
    notes : tuple[str, ...]
        What reading it said (a bag's conversion: its warnings and notes), each naming the input.
    files : tuple[dict[str, str], ...]
        The files the data came from, with their sha256, as ``bag_to_log`` records them
        (``path``, ``sha256``): a bag's own; for a log, those its ``[extra].sources`` names.
    """

    source: Path
    joints: list[str]
    time: NDArray[np.float64]
    q: NDArray[np.float64]
    dq: NDArray[np.float64]
    tau: NDArray[np.float64]
    force: NDArray[np.float64] | None
    timing: str
    effort: str
    skeleton: skelarm.Skeleton | None
    torques: list[Torque] = field(default_factory=list)
    velocity_recorded: bool = True
    from_angles: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    files: tuple[dict[str, str], ...] = ()

    @property
    def stepped(self) -> bool:
        """Whether the frames are a simulator's semi-implicit Euler steps (:func:`.signals.semi_implicit`)."""
        return self.velocity_recorded and not self.from_angles and semi_implicit(self.time, self.q, self.dq)

    def with_velocity_from_angles(self, joints: Sequence[int]) -> Recording:
        """Return the recording with the velocity of ``joints`` (columns) differentiated from the angles."""
        if not joints:
            return self
        dq = self.dq.copy()
        dq[:, list(joints)] = differentiate(self.time, self.q[:, list(joints)])
        return replace(self, dq=dq, from_angles=tuple(self.joints[j] for j in joints))

    def selected(self, joints: Sequence[str], *, named: bool) -> Recording:
        """Return the recording with the columns of ``joints``, in their order (other joints left out).

        Parameters
        ----------
        joints : Sequence[str]
            The arm's joints, first joint first.
        named : bool
            Whether the user named them (``--joints``), for the sentence when one is missing.

        Raises
        ------
        IdentificationError
            If a joint is not in the recording.
        """
        if list(joints) == self.joints:
            return self
        fix = (
            "pick the arm's joints by the names the driver publishes with --joints"
            if named
            else "pick the arm's joints with --joints a,b,c (the same for every input)"
        )
        order = joint_columns(self.source, self.joints, joints, fix)
        return replace(
            self,
            joints=list(joints),
            q=self.q[:, order],
            dq=self.dq[:, order],
            tau=self.tau[:, order],
            torques=[torque.selected(order) for torque in self.torques],
        )

    def window(self, start: float | None, end: float | None) -> Recording:
        """Return the frames from ``start`` to ``end`` seconds after the recording's first frame.

        Raises
        ------
        IdentificationError
            If the window holds fewer than three frames.
        """
        if start is None and end is None:
            return self
        keep = within(self.time, start, end)
        if np.count_nonzero(keep) < _MIN_FRAMES:
            low = -math.inf if start is None else start
            high = math.inf if end is None else end
            msg = (
                f"input '{self.source}' has {np.count_nonzero(keep)} frames from {low:g} s to {high:g} s "
                f"(it lasts {float(self.time[-1] - self.time[0]):.6g} s); choose --start and --end inside the run"
            )
            raise IdentificationError(msg)
        return replace(
            self,
            time=self.time[keep],
            q=self.q[keep],
            dq=self.dq[keep],
            tau=self.tau[keep],
            force=None if self.force is None else self.force[keep],
            torques=[torque.rows(keep) for torque in self.torques],
        )

    def with_torque(self, torque: Torque) -> Recording:
        """Return the recording fitting ``torque`` (one of :attr:`torques`)."""
        return replace(self, tau=torque.values, timing=torque.timing, effort=torque.description)

    @property
    def published_effort(self) -> bool:
        """Whether the torque is the effort the driver publishes in its joint states (applied until its frame).

        That is a measurement (or the driver's own figure): its bias is the driver's
        ``effort_bias``, a torque offset identification can find. Commands carry none.
        """
        return self.timing == UNTIL_FRAME

    def torque(self, kind: str) -> Torque | None:
        """Return the recorded torque of ``kind``, if any."""
        return next((torque for torque in self.torques if torque.kind == kind), None)


@dataclass
class Samples:
    """Identification samples: one row per step with a valid state, acceleration and torque.

    Attributes
    ----------
    time : NDArray[np.float64]
        Time of each sample (s since its input's first frame), shape ``(S,)``.
    q, dq, ddq, tau : NDArray[np.float64]
        Angle (rad), velocity (rad/s), acceleration (rad/s^2) and the torque that
        acted over the step (N*m), shape ``(S, n)``.
    force : NDArray[np.float64] | None
        Tip force over the step (N), shape ``(S, 2)``, or ``None``.
    segment : NDArray[np.int64]
        Index of the run of consecutive steps each sample belongs to, shape ``(S,)``
        (a dropped sample or another input starts a new one; filters run per segment).
    step : float
        The (mean) step between frames (s).
    frames : int
        Frames read.
    dropped : int
        Steps not used because a value was NaN or masked.
    gaps : int
        Steps not used because frames are missing after them (a step over 1.5 median steps).
    uniform : bool
        Whether every step equals ``step`` to within the stamps' rounding.
    midpoint : bool
        Whether the state is the step's midpoint (a continuous motion) rather than its
        start (semi-implicit Euler steps).
    published : NDArray[np.bool_] | None
        Per sample, whether its torque is the effort the driver publishes
        (:attr:`Recording.published_effort`); ``None`` for none.
    """

    time: NDArray[np.float64]
    q: NDArray[np.float64]
    dq: NDArray[np.float64]
    ddq: NDArray[np.float64]
    tau: NDArray[np.float64]
    force: NDArray[np.float64] | None
    segment: NDArray[np.int64]
    step: float
    frames: int
    dropped: int
    gaps: int
    uniform: bool
    midpoint: bool = False
    published: NDArray[np.bool_] | None = None

    def __len__(self) -> int:
        """Return the number of samples."""
        return int(self.q.shape[0])

    @property
    def published_rows(self) -> NDArray[np.bool_]:
        """Per sample, whether its torque is the published effort (shape ``(S,)``)."""
        return np.zeros(len(self), dtype=bool) if self.published is None else self.published

    def unbiased(self, bias: NDArray[np.float64]) -> Samples:
        """Return the samples with ``bias`` (N*m per joint) taken off the published effort's torques."""
        rows = self.published_rows
        if not np.any(bias) or not rows.any():
            return self
        return replace(self, tau=self.tau - np.where(rows[:, np.newaxis], bias, 0.0))


def joint_columns(source: Path, have: Sequence[str], joints: Sequence[str], fix: str) -> list[int]:
    """Return the columns of ``joints`` among an input's joints ``have``; a joint it lacks is refused with ``fix``."""
    missing = [name for name in joints if name not in have]
    if missing:
        msg = f"input '{source}' has no joint {', '.join(missing)} (its joints are {list(have)}); {fix}"
        raise IdentificationError(msg)
    return [list(have).index(name) for name in joints]


# -- reading ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BagOptions:
    """How a bag is read, as ``bag_to_log`` takes it (docs/bags.md).

    Attributes
    ----------
    joint_topic : str | None
        The JointState topic (default: the only one).
    command_topic : str | None
        The effort commands (default: ``joint_commands`` or ``effort_controller/commands`` beside it).
    clock : str
        ``header`` (stamps) or ``log`` (recording time).
    recover : bool
        Read a truncated MCAP up to its damage.
    """

    joint_topic: str | None = None
    command_topic: str | None = None
    clock: str = "header"
    recover: bool = False


def _convert(path: Path, options: BagOptions) -> tuple[LogFile, tuple[str, ...]]:
    """Convert a bag in memory with ``bag_to_log``'s stages; return the log and what the conversion says."""
    from skelarm_ros.bags.bag_to_log import convert

    try:
        conversion = convert(
            path,
            joint_topic=options.joint_topic,
            command_topic=options.command_topic,
            clock=options.clock,
            recover=options.recover,
        )
    except ValueError as error:  # bag_to_log's errors are ValueErrors with one sentence each, naming the bag
        text = str(error)
        msg = text if str(path) in text else f"bag '{path}': {text}"
        raise IdentificationError(msg) from None
    return conversion.log, tuple(f"{path}: {note}" for note in conversion.notes)


def _sources(log: LogFile) -> tuple[dict[str, str], ...]:
    """Return the files a log came from with their sha256 (``[extra].sources``, as ``bag_to_log`` records them)."""
    sources = log.extra.get("sources")
    if not isinstance(sources, list):
        return ()
    return tuple(
        {"path": str(item["path"]), "sha256": str(item["sha256"])}
        for item in sources
        if isinstance(item, dict) and "path" in item and "sha256" in item
    )


def log_channel(log: LogFile, name: str, width: int | None = None) -> NDArray[np.float64] | None:
    """Return a log's channel as a float matrix, NaN where its ``valid_<name>`` mask is false; ``None`` if absent."""
    if name not in log.channel_names:
        return None
    values = np.array(log.channel(name), dtype=np.float64)
    values = values.reshape(len(values), -1)
    if width is not None and values.shape[1] != width:
        return None
    mask_name = f"valid_{name}"
    if mask_name in log.channel_names:
        mask = np.asarray(log.channel(mask_name)).reshape(values.shape).astype(bool)
        values[~mask] = np.nan
    return values


def log_joint_names(log: LogFile, width: int) -> list[str]:
    """Return a log's joint names (its ``[extra]``, its ``q`` columns, else ``j1 ... jN``)."""
    names = log.extra.get("joint_names")
    if not (isinstance(names, list) and len(names) == width):
        names = log.channel_meta.get("q", {}).get("columns")
    if isinstance(names, list) and len(names) == width and len(set(names)) == width:
        return [str(name) for name in names]
    return default_joint_names(width)


def _timing(log: LogFile, shown: Path) -> tuple[str, str]:
    effort = log.extra.get("effort")
    if not isinstance(effort, dict) or "timing" not in effort:
        return FROM_FRAME, "logged torque (skelarm's convention: applied from its frame)"
    if effort.get("source") == "joint_states":
        return UNTIL_FRAME, f"effort of {effort.get('topic', 'the joint states')} (applied until its frame)"
    timing = str(effort["timing"])
    if timing not in TIMINGS:
        msg = (
            f"input '{shown}' gives effort timing '{timing}', which identify does not know; "
            f"it must be one of {list(TIMINGS)} (see docs/bags.md)"
        )
        raise IdentificationError(msg)
    source = str(effort.get("source", "effort"))
    topic = effort.get("topic")
    where = f"{source} on {topic}" if topic else source
    return timing, f"{where} ({timing.replace('_', ' ')})"


def _required(values: NDArray[np.float64] | None, missing: str) -> NDArray[np.float64]:
    """Return a channel that has at least one finite value, else raise ``missing``'s sentence."""
    if values is None or not np.isfinite(values).any():
        raise IdentificationError(missing)
    return values


def read_recording(path: str | Path, options: BagOptions | None = None) -> Recording:
    """Read one bag or ``.sklog.npz`` log.

    Parameters
    ----------
    path : str | Path
        A bag (rosbag2 folder, ``.db3``, ``.mcap``, ROS 1 ``.bag``) or a ``.sklog.npz`` log.
    options : BagOptions | None, optional
        How to read a bag (topics, clock, recovery), as ``bag_to_log`` takes them.

    Returns
    -------
    Recording
        The arrays with their conventions.

    Raises
    ------
    IdentificationError
        If the input is missing or unreadable, or has no joint angles, velocities or torque.
    """
    source = Path(path)
    log, notes = read_input(source, options)
    return recording_of(log, source, notes)


def read_input(source: Path, options: BagOptions | None = None) -> tuple[LogFile, tuple[str, ...]]:
    """Return an input's log in memory (a ``.sklog.npz`` read, a bag converted) and what reading it says.

    Raises
    ------
    IdentificationError
        If the input is missing or unreadable (one sentence).
    """
    if not source.exists():
        msg = f"input '{source}' does not exist; pass a bag (folder, .db3, .mcap, .bag) or a .sklog.npz log"
        raise IdentificationError(msg)
    if source.is_file() and source.suffix == LOG_SUFFIX:
        try:  # the package's one reader of logs
            return read_log(source), ()
        except LogFileError as error:
            raise IdentificationError(f"{error}, or a bag") from None
    return _convert(source, options or BagOptions())


def recording_of(log: LogFile, source: Path, notes: Sequence[str] = ()) -> Recording:
    """Return the recording a log holds (in memory: a bag's conversion, or a log file read).

    Parameters
    ----------
    log : LogFile
        The log.
    source : Path
        The input it came from, as given (named in messages).
    notes : Sequence[str], optional
        What reading it said.

    Raises
    ------
    IdentificationError
        If it has no joint angles or torque, or an effort timing identify does not know.
    """
    q = log_channel(log, "q")
    if q is None or len(q) == 0:
        msg = f"input '{source}' has no joint angles (channel 'q'); record joint states"
        raise IdentificationError(msg)
    width = q.shape[1]
    time = np.asarray(log.times, dtype=np.float64)
    dq = log_channel(log, "dq", width)
    recorded = dq is not None and bool(np.isfinite(dq).any())
    if dq is None or not recorded:
        dq = differentiate(time, q)
    tau = _required(
        log_channel(log, "tau", width),
        f"input '{source}' has no joint torque (no effort in its joint states and no effort commands); "
        "record the commands (joint_commands or effort_controller/commands) beside the joint states, "
        "or use a driver that publishes measured or commanded torque in their effort",
    )
    timing, effort = _timing(log, source)
    torques = [Torque("commands" if timing == FROM_FRAME and "commands" in effort else "effort", tau, timing, effort)]
    measured = log_channel(log, "measured_effort", width)
    if measured is not None and np.isfinite(measured).any():
        info = log.extra.get("effort", {}).get("measured", {})
        topic = info.get("topic", "the joint states") if isinstance(info, dict) else "the joint states"
        torques.append(Torque("measured", measured, UNTIL_FRAME, f"effort of {topic} (applied until its frame)"))
    force = log_channel(log, "ext_force", 2)
    if force is not None and not np.any(force[np.isfinite(force)]):
        force = None  # recorded but never pushed: nothing to add
    return Recording(
        source=source,
        joints=log_joint_names(log, width),
        time=time,
        q=q,
        dq=dq,
        tau=tau,
        force=force,
        timing=timing,
        effort=effort,
        skeleton=log.skeleton(),
        torques=torques,
        velocity_recorded=recorded,
        notes=tuple(notes),
        files=_sources(log),
    )


def choose_torque(recording: Recording, prefer: str = "auto") -> Recording:
    """Return the recording fitting one of its torques.

    Parameters
    ----------
    recording : Recording
        One input.
    prefer : str, optional
        ``auto``: the joint states' measured effort when it was recorded beside the
        commands and changes on every joint (a measured torque is what acted, a
        command may reach the motors late), else the commands; ``measured`` or
        ``commands`` to choose.

    Raises
    ------
    IdentificationError
        If the chosen torque was not recorded.
    """
    measured = recording.torque("measured")
    if prefer == "auto":
        usable = measured is not None and not _placeholder_joints(measured.values)
        return recording.with_torque(measured) if usable and measured is not None else recording
    if prefer == "measured":
        if measured is not None:
            return recording.with_torque(measured)
        if recording.timing == UNTIL_FRAME:
            return recording
        msg = (
            f"input '{recording.source}' has no measured effort beside its commands (--effort measured); "
            "record the joint states with their effort, or leave --effort out"
        )
        raise IdentificationError(msg)
    if recording.torque("commands") is None:
        msg = (
            f"input '{recording.source}' has no effort commands (--effort commands); record the commands "
            "(joint_commands or effort_controller/commands), name their topic with --command-topic, "
            "or leave --effort out"
        )
        raise IdentificationError(msg)
    commands = recording.torque("commands")
    return recording if commands is None else recording.with_torque(commands)


def _placeholder_joints(values: NDArray[np.float64]) -> list[int]:
    """Columns whose valid values are all zero or all the same (a placeholder, not a torque)."""
    out = []
    for j in range(values.shape[1]):
        column = values[:, j][np.isfinite(values[:, j])]
        if column.size == 0 or float(np.ptp(column)) <= CONSTANT_TOLERANCE * max(1.0, float(np.max(np.abs(column)))):
            out.append(j)
    return out


CONSTANT_TOLERANCE = 1e-9  # N*m relative: a torque that changes less than this never changes


def command_lag(recording: Recording) -> tuple[float, float] | None:
    """How much later than stamped the commands show in the measured effort.

    With no lag, the measured effort at frame ``k+1`` (applied until it) is the command
    of frame ``k`` (applied from it). The lag is the shift ``L`` (in steps, refined to a
    fraction of one) that makes the measured effort at frame ``k+1+L`` closest to the
    command of frame ``k`` (least RMS difference over every joint, each scaled by its
    torque's RMS).

    Returns
    -------
    tuple[float, float] | None
        The lag (s; positive: the torque acts later than the command) and the RMS
        difference at it as a share of the torques' RMS; ``None`` without both torques or
        too few frames.
    """
    commands, measured = recording.torque("commands"), recording.torque("measured")
    if commands is None or measured is None or len(recording.time) < _MIN_LAG_FRAMES:
        return None
    return lag_between(commands.values, measured.values, float(np.median(np.diff(recording.time))), after=1)


def lag_between(
    commands: NDArray[np.float64], torque: NDArray[np.float64], step: float, *, after: int
) -> tuple[float, float]:
    """Return how much later than ``after`` frames a torque follows the commands, and the misfit there.

    The shift ``L`` (in frames, refined to a fraction of one by a parabola through the
    least misfit and its neighbours) makes ``torque[k + after + L]`` closest to
    ``commands[k]``: least RMS difference over every joint, each scaled by the torque's RMS.

    Parameters
    ----------
    commands, torque : NDArray[np.float64]
        ``(frames, joints)`` on the same frames, NaN where not valid.
    step : float
        The frames' step (s).
    after : int
        Frames from a command to the torque paired with it when nothing delays it: 1 for
        the effort a driver publishes (applied until its frame), 0 for a torque applied from its frame.

    Returns
    -------
    tuple[float, float]
        ``L`` in seconds (positive: later than without delay) and the RMS difference at it
        as a share of the torque's RMS.
    """
    scale = np.sqrt(np.nanmean(torque**2, axis=0))
    scale = np.where(scale > 0.0, scale, 1.0)
    lags = np.arange(-_MAX_LAG_STEPS, _MAX_LAG_STEPS + 1)
    misfit = np.array([shifted_rms(commands / scale, torque / scale, after + int(lag)) for lag in lags])
    lag, least = least_shift(lags, misfit)
    return lag * step, least


def least_shift(shifts: NDArray[np.int64], misfit: NDArray[np.float64]) -> tuple[float, float]:
    """Return the shift of least misfit (refined by a parabola through it and its neighbours) and the misfit there.

    Parameters
    ----------
    shifts : NDArray[np.int64]
        Consecutive whole shifts.
    misfit : NDArray[np.float64]
        The misfit (an RMS) at each, NaN where none could be taken.
    """
    best = int(np.nanargmin(misfit))
    offset = 0.0
    if 0 < best < len(shifts) - 1 and np.all(np.isfinite(misfit[best - 1 : best + 2])):
        left, middle, right = misfit[best - 1 : best + 2] ** 2
        curvature = left - 2.0 * middle + right
        if curvature > 0.0:
            offset = 0.5 * (left - right) / curvature
    return float(shifts[best]) + offset, float(misfit[best])


_MIN_LAG_FRAMES = 50
_MAX_LAG_STEPS = 25


# -- aligning --------------------------------------------------------------------------------------------


def steps_of(time: NDArray[np.float64], source: Path) -> tuple[NDArray[np.float64], NDArray[np.bool_], float, bool]:
    """Return the step after each frame (s), where frames are missing, the mean step, and whether it is uniform.

    A step longer than 1.5 times the median step is a gap (messages lost in the
    recording): no acceleration is taken across it.

    Raises
    ------
    IdentificationError
        If a time is not finite or the times do not increase.
    """
    if len(time) < _MIN_FRAMES:
        msg = f"input '{source}' has {len(time)} frames; identification needs a run of many steps"
        raise IdentificationError(msg)
    steps = np.diff(time)
    bad = np.flatnonzero(~(steps > 0.0))  # also NaN
    if bad.size:
        k = int(bad[0])
        msg = (
            f"input '{source}': times do not increase at frame {k + 1} "
            f"(t={float(time[k + 1]):.9g} s after {float(time[k]):.9g} s); "
            "identify needs frames in time order (for a bag stamped out of order, convert it with "
            "bag_to_log --clock log and identify the log)"
        )
        raise IdentificationError(msg)
    gap = steps > GAP_FACTOR * float(np.median(steps))
    regular = steps[~gap]
    mean = float(np.sum(regular)) / len(regular)
    uniform = bool(np.max(np.abs(regular - mean)) <= _UNIFORM_RTOL * mean + _UNIFORM_ATOL)
    return (np.where(gap, steps, mean) if uniform else steps), gap, mean, uniform


def align(recording: Recording) -> Samples:
    """Pair each step's state and acceleration with the torque that acted over it.

    Parameters
    ----------
    recording : Recording
        One input.

    Returns
    -------
    Samples
        One row per step whose values are all valid and whose next frame follows without a gap.

    Raises
    ------
    IdentificationError
        If the times do not increase or there are too few frames.
    """
    steps, gap, mean, uniform = steps_of(recording.time, recording.source)
    q, dq = recording.q[:-1], recording.dq[:-1]
    ddq = (recording.dq[1:] - dq) / steps[:, np.newaxis]
    stepped = recording.stepped
    if not stepped:  # a continuous motion: the mean acceleration over the step belongs to its midpoint
        q, dq = 0.5 * (q + recording.q[1:]), 0.5 * (dq + recording.dq[1:])
    tau = recording.tau[:-1] if recording.timing == FROM_FRAME else recording.tau[1:]
    columns = [q, dq, ddq, tau]
    force = recording.force[:-1] if recording.force is not None else None
    if force is not None:
        columns.append(force)
    finite = np.all(np.isfinite(np.hstack(columns)), axis=1)
    valid = finite & ~gap
    segment = np.cumsum(~valid)[valid].astype(np.int64)
    return Samples(
        time=(recording.time[:-1] - recording.time[0])[valid],
        q=q[valid],
        dq=dq[valid],
        ddq=ddq[valid],
        tau=tau[valid],
        force=None if force is None else force[valid],
        segment=segment,
        step=mean,
        frames=len(recording.time),
        dropped=int(np.count_nonzero(~finite)),
        gaps=int(np.count_nonzero(gap)),
        uniform=uniform,
        midpoint=not stepped,
        published=np.full(int(np.count_nonzero(valid)), recording.published_effort),
    )


def merge(parts: Sequence[Samples]) -> Samples:
    """Join the samples of several inputs (each input's segments stay apart)."""
    if len(parts) == 1:
        return parts[0]
    offset = 0
    segments = []
    for part in parts:
        segments.append(part.segment + offset)
        offset = int(segments[-1].max()) + 1 if len(part) else offset
    forces = [part.force for part in parts]
    width = parts[0].q.shape[1]
    force = None
    if any(item is not None for item in forces):
        force = np.vstack([np.zeros((len(p), 2)) if f is None else f for p, f in zip(parts, forces, strict=True)])
    steps = [part.step for part in parts]
    uniform = all(part.uniform for part in parts) and max(steps) - min(steps) <= _UNIFORM_RTOL * max(steps)
    return Samples(
        time=np.concatenate([part.time for part in parts]),
        q=np.vstack([part.q for part in parts]).reshape(-1, width),
        dq=np.vstack([part.dq for part in parts]).reshape(-1, width),
        ddq=np.vstack([part.ddq for part in parts]).reshape(-1, width),
        tau=np.vstack([part.tau for part in parts]).reshape(-1, width),
        force=force,
        segment=np.concatenate(segments),
        step=float(np.mean(steps)),
        frames=sum(part.frames for part in parts),
        dropped=sum(part.dropped for part in parts),
        gaps=sum(part.gaps for part in parts),
        uniform=uniform,
        midpoint=any(part.midpoint for part in parts),
        published=np.concatenate([part.published_rows for part in parts]),
    )
