# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The player's core: which topics of a bag play, as what, and when each message goes out.

:func:`plan_topics` chooses the topics (``--topics``), the name each is published
under (``--remap``), its ROS 2 type (a ROS 1 type is converted to the ROS 2 type of
the same name, where one exists) and the QoS it was recorded with (reliability,
durability; ``robot_description`` always latched), and skips with one note per type
what cannot be published here (a type with no message package). :class:`BagFrames`
streams the chosen topics' recorded bytes in log-time order.

:class:`Playback` decides when each message goes out, with the time passed in
(monotonic nanoseconds): the recorded log time scaled by the rate, after a start
offset and a delay, with pause, resume and play-next as ``ros2 bag play`` offers them,
and loops. A bag that turns out damaged part-way plays up to where it reads and
says where it stopped.

:class:`Pacer` is the player's play thread with the time handed in: it waits for the
readers ``--wait-for-subscribers`` asks for (saying which are missing), hands out the
messages due, the ``/clock`` ticks and the progress line, measures how late each
message went out, and says when to look again; the node only publishes and logs.

This module does not import rclpy.
"""

from __future__ import annotations

import math
import time
from array import array
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from skelarm_ros.bags.reader import Bag, BagError, TopicQos, open_bag, ros2_converter
from skelarm_ros.interface import (
    INFO,
    NANOSECONDS,
    ROBOT_DESCRIPTION,
    Say,
    check_non_negative,
    check_positive,
    seconds_to_nanoseconds,
    stamp_text,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterator, Sequence

Frame = tuple[int, int, bytes]
"""``(topic index in the plan, log time in ns, serialized bytes)``."""

VOLATILE_DEPTH = 1000
"""History depth of a volatile topic's publisher: a reader that falls behind loses nothing up to this."""

RUNNING, PAUSED, DELAYED, WAITING, FINISHED = "R", "P", "D", "W", "F"


class PlayError(ValueError):
    """A bag or an option the player cannot use; the message names it and what would be right."""


@dataclass(frozen=True)
class PlayOptions:
    """How to play a bag (the options of ``ros2 bag play`` this player has).

    Attributes
    ----------
    rate : float
        Speed factor: 2 plays twice as fast as recorded.
    topics : tuple[str, ...]
        Topics to play; empty plays every topic.
    loop : bool
        Start again from the beginning at the end, until stopped.
    start_offset : float
        Seconds into the bag (after its first message) to start at.
    delay : float
        Wall seconds to wait before playing (each loop).
    remaps : tuple[tuple[str, str], ...]
        ``(from, to)`` topic renames (:func:`parse_remap`).
    clock_hz : float
        Rate (Hz) of ``/clock`` messages from the bag's time; 0 publishes none.
    start_paused : bool
        Start paused (``resume`` or ``play_next`` goes on).
    """

    rate: float = 1.0
    topics: tuple[str, ...] = ()
    loop: bool = False
    start_offset: float = 0.0
    delay: float = 0.0
    remaps: tuple[tuple[str, str], ...] = ()
    clock_hz: float = 0.0
    start_paused: bool = False

    def __post_init__(self) -> None:
        """Check the numbers (one sentence naming the option)."""
        check_positive("rate", self.rate, "a speed factor")
        check_non_negative("start_offset", self.start_offset)
        check_non_negative("delay", self.delay)
        check_non_negative("clock", self.clock_hz, "Hz")


def parse_remap(text: str) -> tuple[str, str]:
    """Read one ``--remap`` rule ``FROM:=TO``.

    Raises
    ------
    PlayError
        If it is not two non-empty names joined by ``:=``.
    """
    source, sep, target = text.partition(":=")
    if not sep or not source.strip() or not target.strip():
        msg = f"remap '{text}' is not FROM:=TO (for example /joint_states:=/replay/joint_states)"
        raise PlayError(msg)
    return source.strip(), target.strip()


def _matches(name: str, topic: str) -> bool:
    """Whether a name given on the command line (relative ones from the root) is the bag's ``topic``."""
    return name == topic or (not name.startswith("/") and "/" + name == topic)


def remapped(topic: str, remaps: Sequence[tuple[str, str]]) -> str:
    """Return the name ``topic`` is published under: the first remap whose FROM names it, else itself."""
    for source, target in remaps:
        if _matches(source, topic):
            return target
    return topic


def is_latched_by_contract(topic: str) -> bool:
    """Whether the topic is one the interface publishes transient local (``robot_description``)."""
    return topic.rsplit("/", 1)[-1] == ROBOT_DESCRIPTION


@dataclass(frozen=True)
class PlayTopic:
    """One topic as the player publishes it.

    Attributes
    ----------
    name : str
        Its name in the bag.
    output : str
        The name it is published under (after ``--remap``).
    msgtype : str
        The ROS 2 type published (``sensor_msgs/msg/JointState``).
    qos : TopicQos
        Reliability, durability and history depth of its publisher.
    count : int
        Messages the bag holds on it.
    convert : Callable[[bytes], bytes] | None
        ROS 1 bytes to ROS 2 CDR bytes; ``None`` plays the recorded bytes unchanged.
    """

    name: str
    output: str
    msgtype: str
    qos: TopicQos
    count: int
    convert: Callable[[bytes], bytes] | None = None


@dataclass
class Plan:
    """The topics to play and what the user should know about the others."""

    topics: list[PlayTopic]
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Messages the bag holds on the topics played (one pass)."""
        return sum(topic.count for topic in self.topics)


def _select(bag: Bag, wanted: Sequence[str], notes: list[str]) -> list[str]:
    """Return the bag's topics that ``--topics`` names (all when empty), noting names the bag lacks."""
    if not wanted:
        return list(bag.topics)
    chosen = [topic for topic in bag.topics if any(_matches(name, topic) for name in wanted)]
    missing = [name for name in wanted if not any(_matches(name, topic) for topic in bag.topics)]
    if missing:
        notes.append(f"not in the bag, so not played: {missing}; it has {list(bag.topics)}")
    return chosen


def _publish_qos(topic: str, recorded: TopicQos | None) -> TopicQos:
    """Return the publisher's QoS: as recorded (reliable and volatile when unknown), robot_description latched."""
    qos = recorded or TopicQos()
    latched = qos.transient_local or is_latched_by_contract(topic)
    depth = max(qos.depth, 1) if latched else VOLATILE_DEPTH
    return TopicQos(reliable=qos.reliable, transient_local=latched, depth=depth)


def plan_topics(bag: Bag, options: PlayOptions, has_type: Callable[[str], bool]) -> Plan:
    """Choose the topics to play, with their output names, ROS 2 types and QoS.

    Parameters
    ----------
    bag : Bag
        The open bag.
    options : PlayOptions
        ``topics`` and ``remaps`` are used.
    has_type : Callable[[str], bool]
        Whether a message package for a ROS 2 type is installed here.

    Returns
    -------
    Plan
        The topics in the bag's order, and one note per skipped type or missing name.

    Raises
    ------
    PlayError
        If no topic is left to play.
    """
    notes: list[str] = []
    skipped: dict[str, list[str]] = {}
    recorded = bag.qos
    topics: list[PlayTopic] = []
    for name in _select(bag, options.topics, notes):
        msgtype = bag.topics[name].msgtype
        convert = None
        if not bag.is_ros2:
            conversion = ros2_converter(bag, msgtype)
            if conversion is None:
                skipped.setdefault(f"the ROS 1 type {msgtype}, which ROS 2 does not have", []).append(name)
                continue
            if conversion.migrated:
                notes.append(
                    f"'{name}': the ROS 1 type {msgtype} differs from ROS 2's {conversion.msgtype}; "
                    "its fields are matched by name and the others left at their defaults"
                )
            msgtype, convert = conversion.msgtype, conversion.convert
        elif bag.topics[name].decodable and not bag.standard(msgtype) and has_type(msgtype):
            notes.append(
                f"'{name}': the bag defines {msgtype} differently from ROS 2 Jazzy; "
                "its bytes are played unchanged, and readers may not decode them"
            )
        if not has_type(msgtype):
            skipped.setdefault(f"{msgtype}, which has no message package here", []).append(name)
            continue
        qos = _publish_qos(name, recorded.get(name))
        topics.append(PlayTopic(name, remapped(name, options.remaps), msgtype, qos, bag.topics[name].count, convert))
    for what, names in skipped.items():
        notes.append(f"skipped {names}: {what}")
    if not topics:
        said = [*bag.notes, *notes]
        msg = f"bag '{bag.path}' has nothing to play" + (f" ({'; '.join(said)})" if said else "")
        raise PlayError(msg)
    return Plan(topics, notes)


class BagFrames:
    """The recorded bytes of a plan's topics, in log-time order, converted where the plan says.

    Calling it starts a new pass over the bag (each loop calls it again).

    Attributes
    ----------
    skipped : int
        Messages whose ROS 1 bytes could not be converted (left out).
    """

    def __init__(self, bag: Bag, topics: Sequence[PlayTopic]) -> None:
        """Keep the bag and the topics to read."""
        self.bag = bag
        self._index = {topic.name: i for i, topic in enumerate(topics)}
        self._convert = [topic.convert for topic in topics]
        self.skipped = 0

    def __call__(self) -> Iterator[Frame]:
        """Yield ``(topic index, log time ns, bytes)`` for one pass over the bag."""
        index, converters = self._index, self._convert
        for topic, _, log_time, data in self.bag.raw_messages(list(index)):
            i = index[topic]
            convert = converters[i]
            if convert is None:
                yield i, log_time, data if isinstance(data, bytes) else bytes(data)
                continue
            try:
                yield i, log_time, convert(data)
            except (ValueError, IndexError, TypeError, AssertionError):  # rosbags' SerdeError is a ValueError
                self.skipped += 1


def open_for_playing(path: str) -> Bag:
    """Open a bag to play; a truncated MCAP file is read up to its last complete chunk.

    Raises
    ------
    PlayError
        If the bag cannot be read at all (one sentence naming it and the problem).
    """
    try:
        return open_bag(path)
    except BagError:
        pass
    try:  # recovery reads what a truncated MCAP file holds; for other storage it fails as before
        return open_bag(path, recover=True)
    except BagError as error:
        raise PlayError(str(error)) from None


def first_log_time(bag: Bag) -> int | None:
    """Return the log time (ns) of the bag's first message over all its topics, or ``None`` when it has none.

    Raises
    ------
    PlayError
        If the bag is damaged before its first message.
    """
    try:
        first = next(iter(bag.raw_messages()), None)
    except BagError as error:
        raise PlayError(str(error)) from None
    return None if first is None else first[2]


class Playback:
    """When each message goes out: recorded log time scaled by the rate, with pause, play-next and loops.

    The playback's clock runs on the bag's time line: it starts at the bag's first
    log time plus ``start_offset``, waits ``delay`` wall seconds, then advances
    ``rate`` bag seconds per wall second; pausing stops it, and ``play_next`` moves it
    to the message it plays. A message is due when the clock reaches its log time.
    Messages of latched topics recorded before the start offset go out first, so a
    late start still gives ``robot_description``.

    Parameters
    ----------
    read : Callable[[], Iterator[Frame]]
        Starts a pass over the bag (:class:`BagFrames`).
    start_ns : int
        The bag's first log time (:func:`first_log_time`).
    options : PlayOptions
        Rate, offset, delay, loop, start paused.
    latched : Collection[int], optional
        Indices of the transient-local topics.
    total : int, optional
        Messages in one pass, for the progress line.

    Attributes
    ----------
    played : int
        Messages taken so far, over every loop.
    loops : int
        Passes completed.
    done : bool
        Whether the playback is over (never, with ``loop``, unless the bag is empty or :meth:`stop`).
    problem : str | None
        Why a pass ended before the end of the bag (a damaged bag), or ``None``.
    """

    def __init__(
        self,
        read: Callable[[], Iterator[Frame]],
        start_ns: int,
        options: PlayOptions,
        latched: Collection[int] = (),
        total: int = 0,
    ) -> None:
        """Set the playback up, not started (see :meth:`start`)."""
        self._read = read
        self.options = options
        self.rate = options.rate
        self.first_ns = start_ns
        self.start_ns = start_ns + seconds_to_nanoseconds(options.start_offset)
        self.paused = options.start_paused
        self.started = False
        self.done = False
        self.played = 0
        self.loops = 0
        self.total = total
        self.problem: str | None = None
        self.stopped_at: int | None = None  # log time of the last message read before the problem
        self._latched = set(latched)
        self._queue: deque[Frame] = deque()
        self._frames: Iterator[Frame] = iter(())
        self._bag_anchor = self.start_ns
        self._wall_anchor = 0
        self._hold = 0  # wall ns of delay left, kept while paused
        self._pass_played = 0
        self._last_taken = self.start_ns  # log time of the latest message taken

    # -- the bag's stream ---------------------------------------------------------------------------

    def _pull(self) -> Frame | None:
        """Return the next frame of the pass, or ``None`` at its end (or where the bag stops reading)."""
        try:
            frame = next(self._frames, None)
        except BagError as error:
            if self.problem is None:
                self.problem = str(error)
            return None
        if frame is not None:
            self.stopped_at = frame[1]
        return frame

    def _begin(self, now: int) -> None:
        """Start a pass: skip to the start offset (keeping each latched topic's newest message), arm the clock."""
        self._frames = iter(self._read())
        self._pass_played = 0
        kept: dict[int, Frame] = {}
        while (frame := self._pull()) is not None:
            if frame[1] >= self.start_ns:
                break
            if frame[0] in self._latched:
                kept[frame[0]] = frame
        self._queue.extend(sorted(kept.values(), key=lambda item: item[1]))
        if frame is not None:
            self._queue.append(frame)
        delay = seconds_to_nanoseconds(self.options.delay)
        self._bag_anchor = self.start_ns
        if self.paused:
            self._hold = delay
        else:
            self._wall_anchor = now + delay

    def _end_pass(self, now: int) -> None:
        self.loops += 1
        if self.options.loop and self._pass_played > 0 and self.problem is None:
            self._begin(now)
        else:
            self.done = True

    # -- control ------------------------------------------------------------------------------------

    def start(self, now: int) -> None:
        """Start playing (after waiting for readers): the first pass begins at ``now`` plus the delay."""
        if not self.started:
            self.started = True
            self._begin(now)
            if not self._queue:
                self._end_pass(now)

    def bag_time(self, now: int) -> int:
        """Return the playback clock (ns on the bag's time line) at wall time ``now``; it stops at the end."""
        if not self.started or self.paused:
            return self._bag_anchor
        if self.done:
            return self._last_taken
        return self._bag_anchor + max(0, math.floor((now - self._wall_anchor) * self.rate))

    def next_due(self) -> int | None:
        """Return the wall time (ns) the next message is due at; ``None`` when paused, done or not started."""
        if self.done or self.paused or not self.started or not self._queue:
            return None
        ahead = self._queue[0][1] - self._bag_anchor
        return self._wall_anchor + max(0, math.ceil(ahead / self.rate))

    def take(self, now: int, limit: int = 1000) -> list[Frame]:
        """Return the messages due at ``now`` (at most ``limit``), in order, and move on past them."""
        taken: list[Frame] = []
        while len(taken) < limit:
            due = self.next_due()
            if due is None or due > now:
                break
            taken.append(self.advance(now))
        return taken

    def advance(self, now: int) -> Frame:
        """Take the next message (due, or asked for by play-next) and read the one after it.

        Call only when :meth:`next_due` is not ``None`` (or through :meth:`play_next`).
        """
        frame = self._queue.popleft()
        self._last_taken = max(self._last_taken, frame[1])
        self.played += 1
        self._pass_played += 1
        if not self._queue:
            following = self._pull()
            if following is not None:
                self._queue.append(following)
            else:
                self._end_pass(now)
        return frame

    def pause(self, now: int) -> bool:
        """Pause the clock; return whether it was running."""
        if self.paused:
            return False
        self._bag_anchor = self.bag_time(now)
        self._hold = max(0, self._wall_anchor - now) if self.started else 0
        self.paused = True
        return True

    def resume(self, now: int) -> bool:
        """Resume the clock where it stopped; return whether it was paused."""
        if not self.paused:
            return False
        self.paused = False
        self._wall_anchor = now + self._hold
        self._hold = 0
        return True

    def play_next(self, now: int) -> Frame | None:
        """While paused, take the next message at once and move the clock to its time.

        Returns
        -------
        Frame | None
            The message, or ``None`` when not paused, not started or nothing is left.
        """
        if not self.paused or not self.started or self.done or not self._queue:
            return None
        self._bag_anchor = max(self._bag_anchor, self._queue[0][1])
        self._hold = 0
        return self.advance(now)

    def stop(self) -> None:
        """End the playback now."""
        self.done = True
        self._queue.clear()

    # -- reporting ----------------------------------------------------------------------------------

    def status(self, now: int) -> str:
        """One letter: W waiting to start, P paused, D delayed, R running, F finished."""
        if self.done:
            return FINISHED
        if not self.started:
            return WAITING
        if self.paused:
            return PAUSED
        return DELAYED if now < self._wall_anchor else RUNNING

    def progress(self, now: int) -> str:
        """Return the progress line: status, the bag's time, seconds into the bag, messages played."""
        clock = self.bag_time(now)
        into = (clock - self.first_ns) / NANOSECONDS
        pass_played = self._pass_played if not self.done else self.total
        text = f"[{self.status(now)}] bag time {stamp_text(clock)} ({into:.3f} s in)"
        text += f", {pass_played}/{self.total} messages"
        if self.options.loop:
            text += f", loop {self.loops + 1}"
        return text

    def ending(self) -> str:
        """One sentence on how the playback ended."""
        text = f"played {self.played} messages"
        if self.options.loop and self.loops > 1:
            text += f" in {self.loops} passes"
        where = (
            f"{(self.stopped_at - self.first_ns) / NANOSECONDS:.3f} s into the bag"
            if self.stopped_at is not None
            else "its start"
        )
        if self.problem is not None:
            return text + f"; the bag stops reading at {where}: {self.problem}"
        return text + f", up to {where}"


@dataclass(frozen=True)
class ReaderWait:
    """The readers each topic waits for before the first message (``--wait-for-subscribers``).

    A topic waits either for a count of readers or for the nodes the graph says read it, by
    name (the one rule of :func:`skelarm_ros.interface.missing_readers`: a reader from
    outside the graph never stands in for a named node).

    Attributes
    ----------
    default : int
        Readers every volatile topic needs (a bare count).
    topics : dict[str, int]
        Readers a named topic needs (``TOPIC:=N``), by its published name.
    names : dict[str, tuple[str, ...]]
        The nodes that read a named topic (``TOPIC:=NODE[,NODE...]``), by its published name.
    """

    default: int = 0
    topics: dict[str, int] = field(default_factory=dict)
    names: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def needed(self, output: str, latched: bool) -> int:
        """Readers to wait for on a published topic (latched ones only when named; none where nodes are named)."""
        if output in self.names:
            return 0
        return self.topics.get(output, 0 if latched else self.default)

    def wanted(self, output: str) -> tuple[str, ...]:
        """Return the nodes (as given: relative or full names) that must read a published topic first."""
        return self.names.get(output, ())

    def resolved(self, resolve: Callable[[str], str]) -> ReaderWait:
        """Return the same wait with each named topic resolved (relative names in the player's namespace)."""
        topics = {resolve(name): count for name, count in self.topics.items()}
        return ReaderWait(self.default, topics, {resolve(name): nodes for name, nodes in self.names.items()})


def parse_reader_wait(items: Sequence[str]) -> ReaderWait:
    """Read ``--wait-for-subscribers`` values: ``N`` for every topic, ``TOPIC:=N`` or ``TOPIC:=NODE[,NODE...]`` for one.

    Raises
    ------
    PlayError
        If a value is none of these.
    """
    default = 0
    topics: dict[str, int] = {}
    names: dict[str, tuple[str, ...]] = {}
    for item in items:
        name, sep, value = item.rpartition(":=")
        nodes = tuple(node.strip() for node in value.split(",") if node.strip())
        if sep and name.strip() and not value.strip().isdigit() and nodes:
            names[name.strip()] = nodes
            continue
        if not value.strip().isdigit() or (sep and not name.strip()):
            msg = (
                f"--wait-for-subscribers '{item}' is not a count N, TOPIC:=N or TOPIC:=NODE[,NODE...] "
                "(for example joint_states:=2 or joint_states:=controller,recorder)"
            )
            raise PlayError(msg)
        if sep:
            topics[name.strip()] = int(value)
        else:
            default = int(value)
    return ReaderWait(default, topics, names)


class Ticker:
    """A fixed-rate tick on the wall clock (``/clock`` messages); ``period_ns`` 0 never ticks."""

    def __init__(self, hz: float) -> None:
        """Tick at ``hz`` (0: never)."""
        self.period = round(NANOSECONDS / hz) if hz > 0.0 else 0
        self.next: int | None = None

    def due(self, now: int) -> bool:
        """Whether a tick is due at ``now`` (the first call always ticks); the next is one period on."""
        if self.period == 0 or (self.next is not None and now < self.next):
            return False
        # Ticks missed by more than a period are not made up.
        late = self.next is None or now - self.next >= self.period
        self.next = now + self.period if late else self.next + self.period  # type: ignore[operator]
        return True


@dataclass(frozen=True)
class PlayStep:
    """What the play thread does after one look at the time (:meth:`Pacer.step`).

    Attributes
    ----------
    said : list[Say]
        What to log (which readers are still missing).
    clock : int | None
        The bag time (ns) to publish on ``/clock`` now, or ``None``.
    progress : str | None
        The progress line to show now, or ``None``.
    wake : int | None
        When to look again (monotonic ns); ``None`` when the playback is done.
    """

    said: list[Say] = field(default_factory=list)
    clock: int | None = None
    progress: str | None = None
    wake: int | None = None


class Pacer:
    """The player's play thread with the time handed in (monotonic ns): what goes out when, and what to say.

    Parameters
    ----------
    playback : Playback
        The messages and their times.
    clock_hz : float, optional
        ``/clock`` ticks per second (0: none).
    progress_hz : float, optional
        Progress lines per second (0: only the last).
    wait_slice : float, optional
        Seconds between two looks while nothing else is due (readers, a pause).
    wait_report : float, optional
        Seconds between two lines on the readers still missing.
    batch : int, optional
        Messages handed out at most before the time is looked at again.

    Attributes
    ----------
    lateness : array
        Nanoseconds from each message's due time to the end of its publishing.
    started_at, finished_at : int
        Monotonic ns the playback started and ended at (0 until then).
    """

    def __init__(
        self,
        playback: Playback,
        *,
        clock_hz: float = 0.0,
        progress_hz: float = 0.0,
        wait_slice: float = 0.05,
        wait_report: float = 2.0,
        batch: int = 1000,
    ) -> None:
        """Pace ``playback``; nothing is handed out before :meth:`step`."""
        self.playback = playback
        self.clock_ticks = Ticker(clock_hz)
        self.progress_ticks = Ticker(progress_hz)
        self.lateness = array("q")
        self.started_at = self.finished_at = 0
        self._slice = round(wait_slice * NANOSECONDS)
        self._report = round(wait_report * NANOSECONDS)
        self._batch = batch
        self._told_waiting = 0

    def step(
        self,
        now: int,
        missing: Callable[[], Sequence[str]],
        publish: Callable[[Frame], None],
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> PlayStep:
        """Hand ``publish`` what is due at ``now``; return what else to do and when to look again.

        Parameters
        ----------
        now : int
            The time (monotonic ns).
        missing : Callable[[], Sequence[str]]
            The readers still missing before the first message (``topic (have of need)``).
        publish : Callable[[Frame], None]
            Publishes one message (called in order, at most ``batch`` times).
        clock : Callable[[], int], optional
            The monotonic clock (ns) each publish's lateness is measured on.
        """
        playback = self.playback
        if not playback.started:
            waiting = missing()
            if waiting:
                said = []
                if now >= self._told_waiting:
                    self._told_waiting = now + self._report
                    said.append(Say(INFO, f"waiting for readers: {', '.join(waiting)}"))
                return PlayStep(said, wake=now + self._slice)
            playback.start(now)
            self.started_at = now
        published = 0
        while published < self._batch and (due := playback.next_due()) is not None and due <= now:
            publish(playback.advance(now))
            self.lateness.append(clock() - due)
            published += 1
        tick = playback.bag_time(now) if self.clock_ticks.due(now) else None
        line = playback.progress(now) if self.progress_ticks.due(now) or playback.done else None
        if playback.done:
            self.finished_at = now
            return PlayStep(clock=tick, progress=line)
        wake = [t for t in (playback.next_due(), self.clock_ticks.next, self.progress_ticks.next) if t is not None]
        return PlayStep(clock=tick, progress=line, wake=min(wake, default=now + self._slice))

    def ending(self, frames: BagFrames) -> str:
        """One sentence on the playback so far, with the messages of ``frames``' bag left out."""
        text = self.playback.ending()
        if frames.skipped:
            text += f"; {frames.skipped} ROS 1 messages could not be converted and were left out"
        if frames.bag.skipped_messages:
            text += f"; damaged messages skipped: {frames.bag.skipped_messages}"
        return text
