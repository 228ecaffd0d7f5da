# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The composed graph: the simulator and the controller as two nodes of one process, no transport between them.

As gz_ros2_control and mujoco_ros2_control run their controller manager inside the
simulator, the ``composed`` executable (``compose:=true`` in both launchers) runs the
:class:`~skelarm_ros.nodes.simulator.SimulatorNode` and the
:class:`~skelarm_ros.nodes.controller.ControllerNode`, under their own names, on one
executor. Each state the simulator publishes is handed to the controller node's own
:meth:`~skelarm_ros.nodes.controller.ControllerNode.answer` in the same call (the
control loop of :mod:`skelarm_ros.control.loop`, the command and channels published
for observers as the controller node publishes them), and the command it returns
goes to the simulator as its ``joint_commands`` message would:

- lockstep: the command is offered for the step it answers, and the next step is made
  from a zero-period timer, one step per callback, so services, ``tip_wrench`` (force
  replay, which lockstep still waits for over DDS) and signals are served between steps;
- realtime: the command is held for the next tick, as the newest command is; each
  tick's wall-clock lateness against its deadline is kept
  (:class:`~skelarm_ros.sim.lateness.StepLateness`) and said at the end.

Only the two links between them change, and they are wiring: each node is built with a
:class:`~skelarm_ros.nodes.endpoints.Direct` input in place of its subscription (the
controller's ``joint_states``, the simulator's commands), and both share the process's
parameters (``shared=``); everything else (parameters, topics, services, the run's start
and end, the readers waited for by name) is the two nodes' own. A controller that fails on a state (raises,
or gives a torque it cannot send) ends the run with exit code 1: the simulator has no
other source of commands. See docs/simulator.md, "The composed graph".
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

from rclpy.clock import Clock, ClockType

from skelarm_ros.interface import ERROR, Say, stamp_text
from skelarm_ros.nodes.controller import ControllerNode
from skelarm_ros.nodes.endpoints import Direct
from skelarm_ros.nodes.params.controller import ControllerParams
from skelarm_ros.nodes.params.simulator import SimulatorParams
from skelarm_ros.nodes.running import run_node, say
from skelarm_ros.nodes.simulator import SimulatorNode
from skelarm_ros.sim.conversions import Rejected
from skelarm_ros.sim.lateness import StepLateness

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rclpy.node import Node
    from rclpy.publisher import Publisher

    from skelarm_ros.control.loop import ControlOutput

NODE_NAME = "composed"
DOC = "docs/simulator.md"
DRIVE_SLICE = 0.002  # s of lockstep steps per callback, between which services, wrenches and signals are served


class ComposedSimulator(SimulatorNode):
    """The simulator node with its controller in the same process, stepped synchronously (see the module).

    Parameters
    ----------
    **kwargs : Any
        As for :class:`~skelarm_ros.nodes.simulator.SimulatorNode`; ``context``,
        ``namespace`` and ``parameter_overrides`` go to the controller node too.

    Attributes
    ----------
    controller : ControllerNode
        The controller node (its states handed in by :meth:`publish_state`).
    lateness : StepLateness
        Realtime: each step's wall-clock lateness against its deadline.
    """

    description = "skelarm_ros simulator and controller in one process (the composed graph)."
    doc = DOC

    def __init__(self, **kwargs: Any) -> None:
        """Build the simulator node, its commands handed in, then its controller node on the same context."""
        self._controller_kwargs = {
            key: kwargs[key] for key in ("context", "namespace", "parameter_overrides") if key in kwargs
        }
        super().__init__(commands=Direct(), shared=(ControllerParams,), **kwargs)

    def setup(self) -> None:
        """Set up the simulator, then build the controller node, its states handed in."""
        super().setup()
        self.controller = ControllerNode(states=Direct(), shared=(SimulatorParams,), **self._controller_kwargs)
        self.lateness = StepLateness(self.run.tick_period or self.sim.dt)
        self._state_out: float | None = None  # when the newest step's state went out (steady seconds)
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._drive_timer = self.create_timer(0.0, self.drive, clock=steady)
        self._drive_timer.cancel()

    def companions(self) -> Sequence[Node]:
        """Return the controller node, spun on the simulator's executor."""
        return (self.controller,)

    # -- one step ----------------------------------------------------------------------------------

    def publish_state(self) -> None:
        """Publish the state as the simulator does, then control it at once and give the command to the step.

        The last state of a run is answered too, as the controller node answers it (the command is not applied).
        """
        super().publish_state()
        self._state_out = time.monotonic()  # the step's lateness ends here, before the controller's part
        sec, nanosec = self.sim.stamp()
        positions, velocities, _ = self.sim.published_state()
        output = self.controller.answer(self.sim.joint_names, positions, velocities, sec, nanosec)
        tau = None if output is None else self._command(output)
        if tau is None:
            self._controller_failed()
            return
        stamp_ns = self.sim.stamp_ns()
        if not self.lockstep:
            self.hold(tau, stamp_ns)
            return
        self.pairing.offer_command(stamp_ns, tau)
        if self.pairing.ready() and self._drive_timer.is_canceled():
            self._drive_timer.reset()

    def _command(self, output: ControlOutput) -> Any:
        """Return the controller's command as the simulator takes a ``joint_commands`` message; ``None`` if refused."""
        loop = self.controller.loop
        try:
            return self.sim.command_from_joint_state(loop.command_joints, loop.command_torque(output.command).tolist())
        except Rejected as error:
            self.get_logger().error(f"the controller's command was refused: {error}")
            return None

    def _controller_failed(self) -> None:
        said = (
            f"the controller gave no command for the state stamped {stamp_text(self.sim.stamp_ns())} "
            f"(step {self.sim.steps}; its log says why), and the composed simulator has no other; stopping"
        )
        say(self, [Say(ERROR, said)])
        self.run.finish(1)
        self.finish(1)

    def drive(self) -> None:
        """Lockstep: make the steps whose commands (and wrenches) are there, for up to :data:`DRIVE_SLICE` seconds.

        Stops driving when no step can be made (a pause, the end, a wrench awaited).
        """
        until = time.perf_counter() + DRIVE_SLICE
        while self.run.stepping and self.pairing.ready():
            self._try_step()
            if time.perf_counter() >= until:
                return
        self._drive_timer.cancel()

    def tick(self, due: float | None = None) -> None:
        """Realtime: step as the simulator does, and count the step's lateness against its deadline ``due``."""
        if not self.run.stepping:
            self.lateness.restart()
            return
        self._state_out = None
        super().tick(due)
        if due is not None and self._state_out is not None:  # a step was made (not a halted arm's skipped one)
            self.lateness.stepped(due, self._state_out)

    def on_reset(self, request: Any, response: Any) -> Any:
        """Serve ``simulator/reset`` as the simulator does; a new time line's lateness starts afresh."""
        self.lateness.restart()
        return super().on_reset(request, response)

    # -- the end ---------------------------------------------------------------------------------------

    def _lateness_line(self) -> None:
        if not self.lockstep and self.lateness.total:
            self.get_logger().info(self.lateness.text())

    def stop_report(self) -> str:
        """Return what a stop by a signal says: the run's summary and the controller's."""
        self._lateness_line()
        return f"{super().stop_report()}; controller: {self.controller.progress.summary()}"

    def last_publishers(self) -> list[Publisher]:
        """Return the simulator's publishers and the controller's (its commands and channels) for the end's wait.

        In two processes the controller node was still running while the simulator waited.
        """
        controller = self.controller
        channels = [publisher for publisher, _ in controller.channel_pubs.values()]
        return [*super().last_publishers(), controller.command_pub, *channels]

    def wrap_up(self) -> int:
        """After the run ended by itself: say the lateness (realtime) and the controller's summary, then wrap up."""
        self._lateness_line()
        if self.controller.progress.commands:
            self.controller.get_logger().info(f"the run ended; {self.controller.progress.summary()}")
        return super().wrap_up()

    def destroy_node(self) -> None:
        """Destroy the controller node, then the simulator node."""
        controller = getattr(self, "controller", None)
        if controller is not None:
            controller.destroy_node()
        super().destroy_node()


def main(args: list[str] | None = None) -> int:
    """Run the composed simulator and controller until stopped, or until ``duration`` of simulated time has run."""
    return run_node(ComposedSimulator, args=args, name=NODE_NAME)


if __name__ == "__main__":
    sys.exit(main())
