# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The ``force_replay`` node: plays a recorded tip force on ``tip_wrench``.

A thin shell around :class:`skelarm_ros.bags.forces.ForcePlayer`. With ``timing:=clock``
(the default) it publishes one wrench per new ``/clock`` time t_k, stamped t_k, so a
lockstep simulator with ``wait_for_wrench:=true`` gets the force of each step before
it integrates; with ``timing:=timer`` it publishes on its own timer at the step
(a real arm, or no ``/clock``). See docs/force_replay.md.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from geometry_msgs.msg import WrenchStamped
from rclpy.clock import Clock, ClockType
from rosgraph_msgs.msg import Clock as ClockMsg

from skelarm_ros.bags.forces import STEPPED, ForcePlayer, RecordedForce, load_force
from skelarm_ros.interface import BASE_FRAME, CLOCK, TIP_WRENCH, stamp_to_seconds
from skelarm_ros.nodes.endpoints import KEEP_ALL, HeldBack
from skelarm_ros.nodes.graph_queries import reader_names, readers_missing
from skelarm_ros.nodes.parameters import declare_parameters
from skelarm_ros.nodes.params.force_replay import CLOCK_TIMING, TIMER_TIMING, ForceReplayParams
from skelarm_ros.nodes.running import KitNode, run_node
from skelarm_ros.sim.scenario import load_arm

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from rclpy.publisher import Publisher
    from rclpy.timer import Timer

NODE_NAME = "force_replay"
DOC = "docs/force_replay.md"
WATCH_PERIOD = 0.02  # s, how often clock timing looks for a /clock publisher


class ForceReplayNode(KitNode):
    """Replays a recorded tip force as ``geometry_msgs/WrenchStamped`` on ``tip_wrench``.

    Parameters
    ----------
    record : RecordedForce | None, optional
        The force to play; ``None`` reads it from the ``source`` parameter.
    **kwargs : Any
        Passed on to :class:`~skelarm_ros.nodes.running.KitNode` (``stand_ins=``) and
        :class:`rclpy.node.Node` (``context=``, ``parameter_overrides=``...).

    Attributes
    ----------
    params : ForceReplayParams
        The parameters it runs with.

    Raises
    ------
    ForceSourceError
        If the source cannot be read (one sentence naming it and the problem).
    ScenarioError
        If the step is taken from a scenario that cannot be read.
    ValueError
        If a parameter is invalid (one sentence naming it and what is accepted).
    """

    node_name = NODE_NAME
    description = "skelarm_ros force replay."
    doc = DOC

    def __init__(self, record: RecordedForce | None = None, **kwargs: Any) -> None:
        """Declare the parameters, read the record and wire ``/clock`` or the timer."""
        self._given_record = record
        super().__init__(NODE_NAME, **kwargs)

    def setup(self) -> None:
        """Declare the parameters, read the record and wire ``/clock`` or the timer."""
        params = self.params = declare_parameters(self, ForceReplayParams, DOC)
        self.mode, self.timing = params.mode, params.timing
        step = params.dt
        if step == 0.0 and (self.mode == STEPPED or self.timing == TIMER_TIMING):
            step = load_arm(params.scenario).dt
        self.dt = step
        record = self._given_record
        offset = params.time_offset
        self.record = load_force(params.source, params.topic, offset) if record is None else record.shifted(offset)
        self.player = ForcePlayer(self.record, self.mode, step if step > 0.0 else None)
        self.published = 0
        readers = reader_names(self, params.wrench_readers)
        # Until the readers the graph names (simulator, recorder) are matched, wrenches wait in order.
        self.out = HeldBack(
            self, (lambda: not readers_missing(self, self.ensure_publisher(), readers)) if readers else None
        )
        self.wrench_pub: Publisher | None = None
        self._timer_start: int | None = None
        self.timer: Timer
        if self.timing == CLOCK_TIMING:
            # Subscribe first: a lockstep simulator starts when it sees our publisher, and
            # the publisher is created only once /clock has a publisher, so the first
            # clock message cannot be missed.
            self.clock_sub = self.create_subscription(ClockMsg, CLOCK, self.on_clock, KEEP_ALL)
            self.timer = self.create_timer(
                WATCH_PERIOD, self._watch_clock, clock=Clock(clock_type=ClockType.STEADY_TIME)
            )
        else:
            self.wrench_pub = self.publisher(WrenchStamped, TIP_WRENCH, KEEP_ALL)
            self.timer = self.create_timer(step, self.on_timer)
        self.get_logger().info(
            f"replaying {self.record!r} on {TIP_WRENCH}: mode {self.mode}, timing {self.timing}"
            + (f", step {step} s" if step > 0.0 else "")
        )

    # -- timing ----------------------------------------------------------------------------------

    def _watch_clock(self) -> None:
        """Create the wrench publisher once ``/clock`` has a publisher."""
        if self.clock_sub.get_publisher_count() > 0:
            self.timer.cancel()
            self.ensure_publisher()

    def ensure_publisher(self) -> Publisher:
        """Return the ``tip_wrench`` publisher, creating it when it does not exist yet."""
        if self.wrench_pub is None:
            self.wrench_pub = self.publisher(WrenchStamped, TIP_WRENCH, KEEP_ALL)
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
            self.timer.cancel()

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
        """Publish ``(fx, fy)`` in ``base`` stamped ``(sec, nanosec)`` (held back until the readers match)."""
        message = WrenchStamped()
        message.header.frame_id = BASE_FRAME
        message.header.stamp.sec, message.header.stamp.nanosec = sec, nanosec
        message.wrench.force.x, message.wrench.force.y = float(force[0]), float(force[1])
        self.out.publish(self.ensure_publisher(), message)
        self.published += 1


def main(args: list[str] | None = None) -> int:
    """Run the force replay node until stopped; exit 1 at start-up when the source or a parameter is bad."""
    return run_node(ForceReplayNode, args=args)


if __name__ == "__main__":
    sys.exit(main())
