# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The ``force_replay`` node: plays a recorded tip force on ``tip_wrench``.

A thin shell around :class:`skelarm_ros.forces.ForcePlayer`. With ``timing:=clock``
(the default) it publishes one wrench per new ``/clock`` time t_k, stamped t_k, so a
lockstep simulator with ``wait_for_wrench:=true`` gets the force of each step before
it integrates; with ``timing:=timer`` it publishes on its own timer at the step
(a real arm, or no ``/clock``). See docs/force_replay.md.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

import rclpy
from geometry_msgs.msg import WrenchStamped
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor
from rclpy.clock import Clock, ClockType
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.utilities import remove_ros_args
from rosgraph_msgs.msg import Clock as ClockMsg

from skelarm_ros.forces import HOLD, STEPPED, ForcePlayer, ForceSourceError, RecordedForce, load_force
from skelarm_ros.interface import BASE_FRAME, stamp_to_seconds
from skelarm_ros.nodes.spinning import node_executor, parameter_problem, spin_until, try_shutdown
from skelarm_ros.scenario import ScenarioError, load_arm

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from rclpy.publisher import Publisher
    from rclpy.timer import Timer

NODE_NAME = "force_replay"
CLOCK = "clock"
TIMER = "timer"
TIMINGS = (CLOCK, TIMER)
WATCH_PERIOD = 0.02  # s, how often clock timing looks for a /clock publisher

# Reliable keep-all, as the lockstep simulator: no step's clock or wrench is ever dropped.
QOS = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)


def _descriptor(description: str, *, read_only: bool = True, low: float | None = None) -> ParameterDescriptor:
    ranges = [] if low is None else [FloatingPointRange(from_value=low, to_value=1e9, step=0.0)]
    return ParameterDescriptor(description=description, read_only=read_only, floating_point_range=ranges)


class ForceReplayNode(Node):
    """Replays a recorded tip force as ``geometry_msgs/WrenchStamped`` on ``tip_wrench``.

    Parameters
    ----------
    record : RecordedForce | None, optional
        The force to play; ``None`` reads it from the ``source`` parameter.
    **kwargs : Any
        Passed on to :class:`rclpy.node.Node` (``context=``, ``parameter_overrides=``...).

    Raises
    ------
    ForceSourceError
        If the source cannot be read (one sentence naming it and the problem).
    ScenarioError
        If the step is taken from a scenario that cannot be read.
    ValueError
        If a parameter is invalid (one sentence naming it and what is accepted).
    """

    def __init__(self, record: RecordedForce | None = None, **kwargs: Any) -> None:
        """Declare the parameters, read the record and wire ``/clock`` or the timer."""
        super().__init__(NODE_NAME, **kwargs)
        declare = self.declare_parameter
        source = str(
            declare(
                "source", "", _descriptor("recorded tip force: a .sklog.npz log (ext_force), a .csv or a bag")
            ).value
        )
        topic = str(declare("topic", "tip_wrench", _descriptor("the WrenchStamped topic to read from a bag")).value)
        offset = float(
            declare("time_offset", 0.0, _descriptor("seconds added to the record's times before playing")).value
        )
        self.mode = str(
            declare(
                "mode",
                HOLD,
                _descriptor("hold: the record's value at each step's time; stepped: the mean over the step"),
            ).value
        )
        self.timing = str(
            declare(
                "timing",
                CLOCK,
                _descriptor("clock: one wrench per new /clock time, stamped with it; timer: own timer at the step"),
            ).value
        )
        step = float(declare("dt", 0.0, _descriptor("the step in s; 0 takes the scenario's", low=0.0)).value)
        scenario = str(
            declare(
                "scenario", "", _descriptor("scenario whose step is used when dt is 0 (path or bundled name)")
            ).value
        )
        self.min_subscribers = int(
            declare(
                "min_subscribers",
                0,
                ParameterDescriptor(
                    description="tip_wrench readers (simulator, recorder) to wait for before the first wrench; "
                    "wrenches are held back in order until then",
                    read_only=True,
                ),
            ).value
        )
        if self.timing not in TIMINGS:
            msg = f"parameter timing is '{self.timing}'; choose from {list(TIMINGS)}"
            raise ValueError(msg)
        if step < 0.0:
            msg = f"parameter dt is {step}; give the step in seconds, or 0 to take the scenario's"
            raise ValueError(msg)
        if step == 0.0 and (self.mode == STEPPED or self.timing == TIMER):
            step = load_arm(scenario).dt
        self.dt = step
        self.record = load_force(source, topic, offset) if record is None else record.shifted(offset)
        self.player = ForcePlayer(self.record, self.mode, step if step > 0.0 else None)
        self.published = 0
        self._held_back: list[tuple[float, float, int, int]] = []  # (fx, fy, sec, nanosec) until readers match
        self._flush_timer: Timer | None = None

        self._message = WrenchStamped()
        self._message.header.frame_id = BASE_FRAME
        self.wrench_pub: Publisher | None = None
        self._timer_start: int | None = None
        self._timer: Timer
        if self.timing == CLOCK:
            # Subscribe first: a lockstep simulator starts when it sees our publisher, and
            # the publisher is created only once /clock has a publisher, so the first
            # clock message cannot be missed.
            self.clock_sub = self.create_subscription(ClockMsg, "/clock", self.on_clock, QOS)
            self._timer = self.create_timer(
                WATCH_PERIOD, self._watch_clock, clock=Clock(clock_type=ClockType.STEADY_TIME)
            )
        else:
            self.wrench_pub = self.create_publisher(WrenchStamped, "tip_wrench", QOS)
            self._timer = self.create_timer(step, self.on_timer)
        self.get_logger().info(
            f"replaying {self.record!r} on tip_wrench: mode {self.mode}, timing {self.timing}"
            + (f", step {step} s" if step > 0.0 else "")
        )

    # -- timing ----------------------------------------------------------------------------------

    def _watch_clock(self) -> None:
        """Create the wrench publisher once ``/clock`` has a publisher."""
        if self.clock_sub.get_publisher_count() > 0:
            self._timer.cancel()
            self.ensure_publisher()

    def ensure_publisher(self) -> Publisher:
        """Return the ``tip_wrench`` publisher, creating it when it does not exist yet."""
        if self.wrench_pub is None:
            self.wrench_pub = self.create_publisher(WrenchStamped, "tip_wrench", QOS)
        return self.wrench_pub

    def on_clock(self, msg: ClockMsg) -> None:
        """Publish the force of the step that starts at this clock time (once per new time)."""
        sec, nanosec = msg.clock.sec, msg.clock.nanosec
        self.play(stamp_to_seconds(sec, nanosec), sec, nanosec)

    def on_timer(self) -> None:
        """Publish the force at the node's own time since its first tick; stop after the record ends."""
        now = self.get_clock().now().nanoseconds
        if self._timer_start is None:
            self._timer_start = now
        sec, nanosec = divmod(now, 1_000_000_000)
        if self.play((now - self._timer_start) * 1e-9, sec, nanosec):
            self._timer.cancel()

    def play(self, t: float, sec: int, nanosec: int) -> bool:
        """Publish the force for time ``t`` on the record's time line, stamped ``(sec, nanosec)``.

        Parameters
        ----------
        t : float
            The step's time on the record's time line (seconds).
        sec, nanosec : int
            The stamp to give the wrench.

        Returns
        -------
        bool
            Whether the record ended at this step (a zero wrench was published).
        """
        step = self.player.advance(t)
        if step is None:
            return False
        logger = self.get_logger()
        if step.restarted:
            logger.info(f"time went back to {t:.9g} s (the time line restarted); replaying the record from the start")
        if step.started:
            logger.info(f"the recorded force starts acting at t={t:.9g} s")
        self.publish(step.force, sec, nanosec)
        if step.ended:
            logger.info(f"the recorded force ended at t={t:.9g} s; tip_wrench is zero from now on")
        return step.ended

    def publish(self, force: NDArray[np.float64], sec: int, nanosec: int) -> None:
        """Publish ``(fx, fy)`` in ``base`` stamped ``(sec, nanosec)``."""
        publisher = self.ensure_publisher()
        if self._held_back or publisher.get_subscription_count() < self.min_subscribers:
            # Readers the graph starts (a recorder) are not matched yet: keep the wrenches, in order.
            self._held_back.append((float(force[0]), float(force[1]), sec, nanosec))
            if self._flush_timer is None:
                steady = Clock(clock_type=ClockType.STEADY_TIME)
                self._flush_timer = self.create_timer(WATCH_PERIOD, self._flush, clock=steady)
            return
        self._send(publisher, float(force[0]), float(force[1]), sec, nanosec)

    def _flush(self) -> None:
        """Send the wrenches held back once ``min_subscribers`` readers are matched."""
        publisher = self.ensure_publisher()
        if publisher.get_subscription_count() < self.min_subscribers:
            return
        held, self._held_back = self._held_back, []
        for fx, fy, sec, nanosec in held:
            self._send(publisher, fx, fy, sec, nanosec)
        if self._flush_timer is not None:
            self.destroy_timer(self._flush_timer)
            self._flush_timer = None

    def _send(self, publisher: Publisher, fx: float, fy: float, sec: int, nanosec: int) -> None:
        message = self._message
        message.header.stamp.sec, message.header.stamp.nanosec = sec, nanosec
        message.wrench.force.x, message.wrench.force.y = fx, fy
        publisher.publish(message)
        self.published += 1


def main(args: list[str] | None = None) -> int:
    """Run the force replay node until stopped; exit 1 at start-up when the source or a parameter is bad."""
    argv = remove_ros_args(sys.argv if args is None else args)
    argparse.ArgumentParser(
        prog=NODE_NAME, description="skelarm_ros force replay; set parameters with --ros-args -p name:=value"
    ).parse_args(argv[1:])
    rclpy.init(args=sys.argv if args is None else args)
    node: ForceReplayNode | None = None
    try:
        try:
            node = ForceReplayNode()
        except (ForceSourceError, ScenarioError, ValueError) as error:
            rclpy.logging.get_logger(NODE_NAME).error(str(error))
            return 1
        except ParameterException as error:
            rclpy.logging.get_logger(NODE_NAME).error(parameter_problem(error, "docs/force_replay.md"))
            return 1
        executor = node_executor(node)  # the EventsExecutor: in lockstep the simulator waits for each wrench
        spin_until(node, executor)
    finally:
        if node is not None:
            node.destroy_node()
        try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
