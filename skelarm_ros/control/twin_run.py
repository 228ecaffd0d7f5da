# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""A twin's run in one process: the arm, its driver and a control loop, stepped as lockstep ``hardware:=twin`` steps.

:func:`run_twin` is the lockstep graph of ``hardware:=twin`` (docs/predict.md) without its
transport: a :class:`~skelarm_ros.sim.simulation.Simulation` playing the scenario's driver
(:class:`~skelarm_ros.sim.driver_model.DriverModel`) publishes the state of each of the
driver's ticks, the caller's :class:`~skelarm_ros.control.loop.ControlLoop` answers it,
and the simulation takes the answer as its ``joint_commands`` message and steps to the
next tick; the last state (at the first tick at or after ``duration``) is answered too, as
the controller node answers it. The published states and the commands are the lockstep
run's, bit for bit (``test/test_twin_run.py`` holds them to the graph's bag).

The loop is the caller's: :func:`skelarm_ros.cli.predict.twin_loop` builds the one the graph
gives the controller for ``hardware:=twin``; tuning builds one per candidate's gains.

This module does not import rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from skelarm_ros.interface import check_positive
from skelarm_ros.sim.conversions import Rejected
from skelarm_ros.sim.simulation import Simulation

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

    from skelarm_ros.control.loop import ControlOutput
    from skelarm_ros.sim.scenario import ArmSetup


class StateControl(Protocol):
    """What the run asks of its controller: :meth:`skelarm_ros.control.loop.ControlLoop.control`'s answer to a state."""

    def control(
        self, names: Sequence[str], positions: Sequence[float], velocities: Sequence[float], stamp_ns: int
    ) -> ControlOutput:
        """Answer one published state (joint names, angles, velocities, stamp in ns); raise ``Rejected`` for none."""


@dataclass(frozen=True)
class TwinRun:
    """What a twin's run published and commanded, one row per published state (per driver tick).

    Attributes
    ----------
    joint_names : list[str]
        The arm's joints, the arrays' column order.
    stamps : NDArray[np.int64]
        ``(n,)`` the published states' stamps (ns of simulated time, from 0).
    position, velocity, effort : NDArray[np.float64]
        ``(n, joints)`` the states as the driver published them (noise, encoder ticks, bias).
    arm_position : NDArray[np.float64]
        ``(n, joints)`` the arm's own joint angles at those states (rad), without the driver's noise.
    command : NDArray[np.float64]
        ``(n, joints)`` the loop's command answering each state (``joint_names`` order): its torque
        (N*m), or a servo arm's goal (rad, rad/s); the last state's is not applied (the run
        ended), as in the graph.
    stopped : str
        Empty when the run went to its end; else why it stopped early (the controller gave no
        command for a state, or the arm's state became non-finite): the rows end there.
    """

    joint_names: list[str]
    stamps: NDArray[np.int64]
    position: NDArray[np.float64]
    velocity: NDArray[np.float64]
    effort: NDArray[np.float64]
    arm_position: NDArray[np.float64]
    command: NDArray[np.float64]
    stopped: str = ""

    @property
    def times(self) -> NDArray[np.float64]:
        """The states' times (s)."""
        return self.stamps / 1e9


def run_twin(
    arm: ArmSetup,
    loop: StateControl,
    duration: float,
    *,
    joint_names: Sequence[str] = (),
    driver: bool = True,
) -> TwinRun:
    """Run ``loop`` on the arm behind its driver for ``duration`` simulated seconds, as lockstep ``hardware:=twin``.

    Parameters
    ----------
    arm : ArmSetup
        The arm and its driver (:func:`skelarm_ros.sim.scenario.load_arm`): the simulator's scenario.
    loop : StateControl
        The controller, fresh (no state controlled yet): a
        :class:`~skelarm_ros.control.loop.ControlLoop`, run in place.
    duration : float
        Simulated seconds (the simulator's ``duration``): the run ends at the first tick at or after it.
    joint_names : Sequence[str], optional
        The joints' names (the simulator's ``joint_names``); empty for ``j1 ... jN``.
    driver : bool, optional
        Play the scenario's ``[driver]`` (``hardware:=twin``); false for ``hardware:=sim``'s simulator.

    Returns
    -------
    TwinRun
        The published states and the commands answering them.

    Raises
    ------
    ValueError
        If ``duration`` is not positive, or the arm's driver cannot be played (one sentence).
    """
    check_positive("duration", duration)
    sim = Simulation(arm, joint_names, driver=driver)
    names = sim.joint_names
    last = round(duration / sim.dt)
    rows = -(-last // round(sim.tick_period / sim.dt)) + 1  # ticks to the end, and the first state
    joints = sim.num_joints
    stamps = np.zeros(rows, dtype=np.int64)
    table = {key: np.zeros((rows, joints)) for key in ("position", "velocity", "effort", "arm_position", "command")}
    position, velocity, effort = table["position"], table["velocity"], table["effort"]
    arm_position, command = table["arm_position"], table["command"]
    stopped = ""
    row = 0
    while True:
        q, dq, tau = sim.published_state()
        stamp = sim.stamp_ns()
        stamps[row] = stamp
        position[row], velocity[row], effort[row] = q, dq, tau
        arm_position[row] = sim.engine.q
        try:
            output = loop.control(names, q, dq, stamp)
        except Rejected as error:
            command[row] = np.nan
            stopped = f"the controller gave no command for the state stamped {stamp} ns: {error}"
            row += 1
            break
        command[row] = output.command
        row += 1
        if sim.steps >= last:
            break
        if not sim.advance(output.command):
            stopped = sim.halted
            break
    cut = {key: value[:row] for key, value in table.items()}
    return TwinRun(list(names), stamps[:row], stopped=stopped, **cut)
