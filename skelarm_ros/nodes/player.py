# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The ``player`` node: plays a bag onto the graph without rosbag2, as ``ros2 bag play`` does.

``player BAG [--topics T ...] [--rate R] [--loop] [--clock [HZ]] [--start-offset S]
[--delay S] [--remap FROM:=TO ...] [--wait-for-all-acked [MS]] [--start-paused]
[--wait-for-subscribers N|TOPIC:=N ...]``

Every format :mod:`skelarm_ros.bags.reader` reads plays (sqlite3, MCAP, split, compressed,
a truncated MCAP up to its last complete chunk, ROS 1 bags as their ROS 2 types).
Each message's recorded bytes are published unchanged at its log time scaled by the
rate, with the QoS the bag recorded. A thin shell around :mod:`skelarm_ros.bags.replay`:
a play thread publishes what :class:`~skelarm_ros.bags.replay.Pacer` says is due and
sleeps until it says to look again; the executor serves the services (std_srvs/Trigger:
``~/pause``, ``~/resume``, ``~/toggle_paused``, ``~/is_paused``, ``~/play_next``,
``~/stop``; see docs/replay.md for how they map onto rosbag2_interfaces'). The node
exits 0 when the bag is played out.
"""

from __future__ import annotations

import argparse
import functools
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from rclpy.clock import Clock, ClockType
from rclpy.qos import QoSProfile
from rosgraph_msgs.msg import Clock as ClockMsg
from std_srvs.srv import Trigger

from skelarm_ros.bags.replay import (
    BagFrames,
    Frame,
    Pacer,
    Playback,
    PlayError,
    PlayOptions,
    ReaderWait,
    first_log_time,
    open_for_playing,
    parse_reader_wait,
    parse_remap,
    plan_topics,
)
from skelarm_ros.interface import CLOCK, NANOSECONDS, nanoseconds_to_stamp, stamp_text
from skelarm_ros.nodes.endpoints import message_class, publisher_qos
from skelarm_ros.nodes.graph_queries import reader_names, readers_missing, wait_for_acknowledgements
from skelarm_ros.nodes.running import KitNode, run_node, say

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from rclpy.publisher import Publisher

NODE_NAME = "player"
DEFAULT_CLOCK_HZ = 40.0  # --clock without a rate, as ros2 bag play
WAIT_SLICE = 0.05  # s, the longest the play thread sleeps before it looks again (stop, services)
FINE_WAIT = 0.001  # s before a message is due, the play thread sleeps instead of waiting on an event
FINISH_POLL = 0.02  # s, how often the executor looks whether the play thread is done
ACK_SLICE = 0.1  # s, one piece of --wait-for-all-acked, so a signal ends the wait promptly


@dataclass(frozen=True)
class PlayerSettings:
    """What the command line asks for.

    Attributes
    ----------
    bag : str
        The bag to play.
    options : PlayOptions
        Rate, topics, loop, offset, delay, remaps, clock, start paused.
    readers : ReaderWait
        Readers to wait for before the first message.
    wait_for_all_acked : int | None
        Milliseconds to wait at the end for every reliable reader's acknowledgement
        (0: as long as it takes); ``None`` does not wait.
    progress_hz : float
        Progress line updates per second (0: none).
    """

    bag: str
    options: PlayOptions
    readers: ReaderWait = field(default_factory=ReaderWait)
    wait_for_all_acked: int | None = None
    progress_hz: float = 3.0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=NODE_NAME,
        description="Play a bag onto the ROS graph without rosbag2 (options as `ros2 bag play`'s).",
    )
    parser.add_argument("bag", help="rosbag2 folder, .db3 / .mcap file, or ROS 1 .bag")
    parser.add_argument("--topics", nargs="+", default=[], metavar="T", help="topics to play (default: all)")
    parser.add_argument("-r", "--rate", type=float, default=1.0, help="speed factor (> 0; default 1)")
    parser.add_argument("-l", "--loop", action="store_true", help="play again from the start at the end, until stopped")
    parser.add_argument(
        "--clock",
        type=float,
        nargs="?",
        const=DEFAULT_CLOCK_HZ,
        default=0.0,
        metavar="HZ",
        help=f"publish /clock from the bag's time at HZ (default {DEFAULT_CLOCK_HZ:g} when given without a rate)",
    )
    parser.add_argument("--start-offset", type=float, default=0.0, metavar="S", help="start S seconds into the bag")
    parser.add_argument("-d", "--delay", type=float, default=0.0, metavar="S", help="wait S seconds before playing")
    parser.add_argument(
        "-m", "--remap", nargs="+", default=[], metavar="FROM:=TO", help="publish topic FROM under the name TO"
    )
    parser.add_argument(
        "--wait-for-all-acked",
        type=int,
        nargs="?",
        const=0,
        default=None,
        metavar="MS",
        help="at the end, wait up to MS milliseconds (0 or none given: as long as it takes) until every "
        "reliable reader acknowledged every message",
    )
    parser.add_argument("-p", "--start-paused", action="store_true", help="start paused (call ~/resume or ~/play_next)")
    parser.add_argument(
        "--wait-for-subscribers",
        nargs="+",
        default=[],
        metavar="N|TOPIC:=N|TOPIC:=NODE,...",
        help="before the first message, wait for N readers on every volatile topic, N on TOPIC, or NODEs on TOPIC",
    )
    parser.add_argument(
        "--progress-bar-update-rate",
        type=float,
        default=3.0,
        metavar="HZ",
        help="progress line updates per second; 0: none",
    )
    return parser


def parse_arguments(argv: Sequence[str]) -> PlayerSettings:
    """Read the command line (without the program name and ROS arguments); exit 2 with a sentence when it is wrong."""
    parser = _parser()
    args = parser.parse_args(list(argv))
    try:
        options = PlayOptions(
            rate=args.rate,
            topics=tuple(args.topics),
            loop=args.loop,
            start_offset=args.start_offset,
            delay=args.delay,
            remaps=tuple(parse_remap(rule) for rule in args.remap),
            clock_hz=args.clock,
            start_paused=args.start_paused,
        )
        readers = parse_reader_wait(args.wait_for_subscribers)
        if args.wait_for_all_acked is not None and args.wait_for_all_acked < 0:
            msg = (
                "--wait-for-all-acked must be 0 (no limit) or a positive number of milliseconds, "
                f"got {args.wait_for_all_acked}"
            )
            raise PlayError(msg)
        if args.progress_bar_update_rate < 0.0:
            msg = (
                "--progress-bar-update-rate must be 0 (no progress line) or positive, "
                f"got {args.progress_bar_update_rate}"
            )
            raise PlayError(msg)
    except ValueError as error:
        parser.error(str(error))
    return PlayerSettings(args.bag, options, readers, args.wait_for_all_acked, args.progress_bar_update_rate)


class PlayerNode(KitNode):
    """Plays a bag: one publisher per topic, ``/clock`` when asked, services to pause and step.

    Parameters
    ----------
    settings : PlayerSettings
        The bag and how to play it.
    out : IO[str] | None, optional
        Where the progress line goes (standard output by default).
    autostart : bool, optional
        Start the play thread at the executor's first spin (tests call :meth:`step` instead).
    **kwargs : Any
        Passed on to :class:`rclpy.node.Node` (``context=``...).

    Raises
    ------
    PlayError
        If the bag cannot be read or has nothing to play (the node is destroyed first).
    """

    doc = "docs/replay.md"

    def __init__(
        self, settings: PlayerSettings, out: IO[str] | None = None, *, autostart: bool = True, **kwargs: Any
    ) -> None:
        """Open the bag, plan its topics, create the publishers and services; never blocks."""
        self.settings = settings
        self._out = sys.stdout if out is None else out
        self._autostart = autostart
        super().__init__(NODE_NAME, **kwargs)

    def setup(self) -> None:
        """Open the bag, plan it, create publishers, services and the timer that starts and ends the play thread."""
        self._tty = self._out.isatty()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._finished = threading.Event()
        self._thread: threading.Thread | None = None
        self._setup(self.settings)
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(FINISH_POLL, self._tick, clock=steady)

    def _setup(self, settings: PlayerSettings) -> None:
        self.bag = open_for_playing(settings.bag)
        try:
            self.plan = plan_topics(self.bag, settings.options, lambda msgtype: message_class(msgtype) is not None)
            start = first_log_time(self.bag)
        except PlayError:
            self.bag.close()
            raise
        logger = self.get_logger()
        for note in [*self.bag.notes, *self.plan.notes]:
            logger.info(note)
        self.publishers_by_index: list[Publisher] = [
            self.publisher(message_class(topic.msgtype), topic.output, publisher_qos(topic.qos))
            for topic in self.plan.topics
        ]
        self.frames = BagFrames(self.bag, self.plan.topics)
        latched = [i for i, topic in enumerate(self.plan.topics) if topic.qos.transient_local]
        self.playback = Playback(self.frames, start or 0, settings.options, latched, self.plan.total)
        clock_hz, progress_hz = settings.options.clock_hz, settings.progress_hz
        self.pacer = Pacer(
            self.playback,
            clock_hz=clock_hz,
            progress_hz=progress_hz if self._tty else min(progress_hz, 1.0),
            wait_slice=WAIT_SLICE,
        )
        self.lateness = self.pacer.lateness  # ns from each message's due time to its publish
        self._readers = settings.readers.resolved(self.resolve_topic_name)
        self.clock_pub = self.publisher(ClockMsg, CLOCK, QoSProfile(depth=10)) if clock_hz > 0.0 else None
        self._clock_msg = ClockMsg()
        for name, (act, yes, no) in self._service_table().items():
            self.create_service(Trigger, f"~/{name}", functools.partial(self._control, act=act, yes=yes, no=no))
        listing = ", ".join(
            f"{topic.name}" + (f" as {pub.topic_name}" if pub.topic_name != topic.name else "") + f" ({topic.msgtype})"
            for topic, pub in zip(self.plan.topics, self.publishers_by_index, strict=True)
        )
        logger.info(
            f"playing '{self.bag.path}' ({self.bag.storage}, {self.plan.total} messages) at rate "
            f"{settings.options.rate:g}: {listing}"
        )

    # -- playing (the play thread; tests call step directly) ---------------------------------------

    def missing_readers(self) -> list[str]:
        """Return what ``--wait-for-subscribers`` still waits for: ``topic (have of need)``, or the named nodes'."""
        missing = []
        for topic, publisher in zip(self.plan.topics, self.publishers_by_index, strict=True):
            if wanted := reader_names(self, self._readers.wanted(publisher.topic_name)):
                missing += readers_missing(self, publisher, wanted)
                continue
            need = self._readers.needed(publisher.topic_name, topic.qos.transient_local)
            if (have := publisher.get_subscription_count()) < need:
                missing.append(f"{publisher.topic_name} ({have} of {need})")
        return missing

    def step(self, now: int) -> int | None:
        """Publish what is due at ``now`` (monotonic ns); return when to look again (ns), ``None`` when done."""
        with self._lock:
            step = self.pacer.step(now, self.missing_readers, self._publish)
            if self.context.ok():
                say(self, step.said)
            if step.clock is not None and self.clock_pub is not None:
                self._publish_clock(step.clock)
            if step.progress is not None:
                self._show_progress(step.progress)
            return step.wake

    def _publish(self, frame: Frame) -> None:
        self.publishers_by_index[frame[0]].publish(frame[2])

    def _publish_clock(self, bag_ns: int) -> None:
        assert self.clock_pub is not None
        self._clock_msg.clock.sec, self._clock_msg.clock.nanosec = nanoseconds_to_stamp(bag_ns)
        self.clock_pub.publish(self._clock_msg)

    def _show_progress(self, line: str) -> None:
        end = "\n" if not self._tty or self.playback.done else ""
        self._out.write(("\r" if self._tty else "") + line + end)
        self._out.flush()

    def start(self) -> None:
        """Start the play thread."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="player", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                wake = self.step(time.monotonic_ns())
                if wake is None:
                    break
                pause = min((wake - time.monotonic_ns()) / NANOSECONDS, WAIT_SLICE)
                if pause > FINE_WAIT:  # a wait a service call can cut short, up to the last stretch
                    self._wake.wait(pause - FINE_WAIT)
                    self._wake.clear()
                elif pause > 0.0:  # the last stretch: time.sleep keeps time more closely than Event.wait
                    time.sleep(pause)
            if self.playback.done:
                self._wait_for_acks()
        finally:
            self._finished.set()

    def _wait_for_acks(self) -> None:
        """``--wait-for-all-acked``: wait, in slices a stop can end, for every reliable reader's acknowledgement."""
        limit = self.settings.wait_for_all_acked
        if limit is None:
            return
        reliable = [
            pub for topic, pub in zip(self.plan.topics, self.publishers_by_index, strict=True) if topic.qos.reliable
        ]
        timeout = limit / 1000.0 if limit > 0 else None
        pending = wait_for_acknowledgements(reliable, timeout, ACK_SLICE, self._stopping.is_set)
        if pending and not self._stopping.is_set():
            names = [pub.topic_name for pub in pending]
            self.get_logger().warning(f"not every reader acknowledged the messages on {names} within {limit} ms")

    def _tick(self) -> None:
        """Start the play thread (``autostart``); finish the run once it is done (the future is the executor's)."""
        if self._autostart and self._thread is None:
            self.start()
        if self._finished.is_set() and not self.finished.done():
            self.get_logger().info(self.summary())
            self.finish(0)

    def wrap_up(self) -> int:
        """Return 0: the bag is played out (and acknowledged, with ``--wait-for-all-acked``)."""
        self.stop()
        return 0

    def stop_report(self) -> str:
        """Stop the play thread and say what was played."""
        self.stop()
        return f"stopped by a signal; {self.summary()}"

    def summary(self) -> str:
        """One sentence on the playback so far."""
        return self.pacer.ending(self.frames)

    def stop(self) -> None:
        """Stop the play thread and wait for it."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()

    def close(self) -> None:
        """Stop playing and close the bag (the node is destroyed after, by :func:`run_node` or the caller)."""
        self.stop()
        if hasattr(self, "bag"):
            self.bag.close()

    # -- services (std_srvs/Trigger, in the executor) -------------------------------------------------

    def _service_table(self) -> dict[str, tuple[Callable[[int], bool], str, str]]:
        """Each service: what it does to the playback at a time, and what it answers when that did or did not."""
        playback = self.playback
        return {
            "pause": (playback.pause, "paused", "already paused"),
            "resume": (playback.resume, "resumed", "not paused"),
            "toggle_paused": (lambda now: playback.resume(now) or playback.pause(now), "toggled", "not toggled"),
            "is_paused": (lambda _now: playback.paused, "paused", "playing"),
            "play_next": (
                self._play_next,
                "played the next message",
                "nothing played (not paused, or no message left)",
            ),
            "stop": (self._stop_playback, "stopped", ""),
        }

    def _control(
        self,
        _request: Trigger.Request,
        response: Trigger.Response,
        *,
        act: Callable[[int], bool],
        yes: str,
        no: str,
    ) -> Trigger.Response:
        with self._lock:
            now = time.monotonic_ns()
            response.success = act(now)
            clock = stamp_text(self.playback.bag_time(now))
            response.message = (yes if response.success else no) + f" at bag time {clock}"
        self._wake.set()
        return response

    def _play_next(self, now: int) -> bool:
        frame: Frame | None = self.playback.play_next(now)
        if frame is not None:
            self._publish(frame)
        return frame is not None

    def _stop_playback(self, _now: int) -> bool:
        self.playback.stop()
        return True


def split_arguments(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split a command line into the player's own words and the ROS part (``--ros-args ... [--]``).

    The player's ``--remap FROM:=TO`` words look like ROS 1-style remapping rules,
    which rcl would take (and apply to every topic) anywhere but inside the ROS part;
    so they never reach ``rclpy.init``.
    """
    words = list(argv[1:])
    if "--ros-args" not in words:
        return words, []
    start = words.index("--ros-args")
    rest = words[start:]
    end = rest.index("--") if "--" in rest else len(rest)
    return words[:start] + rest[end + 1 :], rest[:end]


def main(args: list[str] | None = None) -> int:
    """Play a bag (``ros2 run skelarm_ros player BAG ...``); exit 0 when it is played out or stopped, 1 on a bad bag."""
    argv = sys.argv if args is None else args
    own, ros = split_arguments(argv)
    settings = parse_arguments(own)  # the player's options; the node kit runs the rest, as for every node
    return run_node(
        lambda: PlayerNode(settings),
        name=NODE_NAME,
        description="Play a bag onto the graph (player BAG --help for its options).",
        doc=PlayerNode.doc,
        args=[argv[0], *ros],
    )


if __name__ == "__main__":
    sys.exit(main())
