# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The arm's driver as the simulator plays it: ticks, the command delay, the torque's lag and limit, the noise.

A scenario's ``[driver]`` table (:class:`~skelarm_ros.sim.driver.DriverSpec`) says what the
driver between a real arm and the graph does; :class:`DriverModel` does it, stepped with the
arm by :class:`~skelarm_ros.sim.simulation.Simulation`:

- **ticks**: the driver publishes the arm's state, and takes commands, every ``1 / rate``
  seconds, a whole number of the arm's integration steps (every step without a rate);
- **the command delay**: a command that arrives at step ``s`` acts from the first tick at or
  after ``s * dt + command_delay`` (:meth:`DriverModel.take`); until then the driver holds the
  command before it (zero before the first);
- **the torque**: at each integration step the driver asks the motors for a torque
  (:meth:`DriverModel.demand`, the one place a command becomes that torque): an effort
  driver the held command; a servo (``interface`` ``position`` or ``velocity``) its law on
  the held goal at the joint's state of that step (below). The torque reaches the joints
  through a first-order lag of time constant ``torque_lag`` (solved exactly over each step,
  so a torque step reaches 63.2 % after ``torque_lag``) and is saturated at the links'
  ``effort_limit`` (:meth:`DriverModel.torque`);
- **a servo**: a position servo gives ``servo_kp (g - q) - servo_kd dq``, a velocity servo
  ``servo_kv (g - dq)``, where ``g`` is the goal as its profile lets it move: a position goal
  at most ``profile_velocity`` fast and changing that speed at most ``profile_acceleration``
  fast, braking in time to stop at the goal; a velocity goal at most ``profile_velocity``
  and changing at most ``profile_acceleration`` fast (without them, the goal itself). The
  profile starts at the joint's position, at rest, when the first goal acts. The law is
  evaluated at every integration step (``dt``), so the servo's response does not depend on
  the driver's rate or the controller's. Until a goal acts, and while commands lapse (the
  simulator's watchdog), the servo gives no torque. The command delay holds the goal, the
  lag acts on the servo's torque;
- **what it publishes** at a tick (:meth:`DriverModel.observe`): the angles with Gaussian
  noise, quantised to whole encoder ticks; the velocities with noise; the effort, the torque
  applied over the step that ended at the tick, with noise and ``effort_bias`` (which shifts
  only what is published). The noise is seeded (``seed``): the same seed, the same noise.

Without a ``[driver]`` table the driver adds nothing: every step is a tick and each command
acts at once (the links' ``effort_limit`` still saturates the torque: the motors can give no more).
The simulator plays a servo arm's servo (:meth:`~skelarm_ros.sim.driver.DriverSpec.servo_only`)
with or without the rest of its driver.

This module does not import rclpy.
"""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING

import numpy as np

from skelarm_ros.interface import POSITION
from skelarm_ros.sim.driver import DriverSpec

if TYPE_CHECKING:
    from numpy.typing import NDArray

_TICK_TOLERANCE = 1e-9  # of a tick: an arrival plus delay this close above a tick acts from it
_NOISE_BLOCK = 256  # ticks of noise drawn at once: the same numbers as one draw a tick, drawn faster


class DriverModel:
    """One arm's driver, stepped with the arm (see the module).

    Parameters
    ----------
    spec : DriverSpec | None
        What the driver does (a scenario's ``[driver]`` table); ``None`` for a driver that adds
        nothing (every step a tick, each command at once, no lag, no noise).
    num_joints : int
        The arm's joints.
    dt : float
        The arm's integration step (s).
    effort_limit : NDArray[np.float64] | None, optional
        Per joint, the largest torque the motors give (N*m, ``inf`` for none); ``None`` for none.

    Attributes
    ----------
    steps_per_tick : int
        Integration steps from one tick to the next.
    command : NDArray[np.float64]
        The command acting now: a torque (N*m) or a servo's goal (rad, rad/s); zero until the first acts.
    goal : NDArray[np.float64] | None
        A servo's goal as its profile lets it move (rad or rad/s), ``None`` before the first acts
        or for an effort driver.

    Raises
    ------
    ValueError
        If the rate's period is not a whole number of steps.
    """

    def __init__(
        self, spec: DriverSpec | None, num_joints: int, dt: float, effort_limit: NDArray[np.float64] | None = None
    ) -> None:
        """Check the spec against the step and set the driver at its start."""
        self.spec = spec if spec is not None else DriverSpec.ideal(num_joints)
        self.interface = self.spec.interface
        self.num_joints = num_joints
        self.dt = dt
        self.steps_per_tick = self.spec.steps_per_tick(dt)
        self._delay_steps = self.spec.command_delay / dt
        lag = self.spec.torque_lag
        self._decay = math.exp(-dt / lag) if lag > 0.0 else 0.0
        limit = None if effort_limit is None else np.asarray(effort_limit, dtype=np.float64)
        self._limit = limit if limit is not None and np.isfinite(limit).any() else None
        spec = self.spec
        self._sigma: list[list[float]] = [spec.position_noise.tolist(), spec.velocity_noise.tolist()]
        self._sigma.append(spec.effort_noise.tolist())
        self._noisy = spec.has_noise
        self._encoder = [2.0 * math.pi / ticks if ticks > 0 else 0.0 for ticks in spec.encoder_ticks.tolist()]
        self._quantised = any(self._encoder)
        self._bias: list[float] = spec.effort_bias.tolist()
        self._biased = any(self._bias)
        self.alters_state = self._noisy or self._quantised or self._biased
        """Whether what it publishes differs from the arm's state (noise, encoder ticks, an effort bias)."""
        self._zero = np.zeros(num_joints)
        self._profile = _Profile(self.spec, dt) if self.spec.servo else None
        self.reset()

    def reset(self) -> None:
        """Go back to the start: no command taken, the torque at zero, the noise from its seed again."""
        self._rng = np.random.default_rng(self.spec.seed)
        self._noise: list[list[float]] = []
        self._drawn = 0
        self._pending: deque[tuple[int, NDArray[np.float64]]] = deque()
        self.command = self._zero
        self.goal: NDArray[np.float64] | None = None
        self._acting = False  # a command has acted (a servo gives no torque before its first goal)
        self._torque = self._zero

    # -- ticks and commands ---------------------------------------------------------------------------

    def at_tick(self, step: int) -> bool:
        """Whether the state after ``step`` integration steps is at one of the driver's ticks."""
        return step % self.steps_per_tick == 0

    def acts_from(self, step: int) -> int:
        """Return the step a command taken after ``step`` steps acts from: the first tick at or after its delay."""
        ticks = math.ceil((step + self._delay_steps) / self.steps_per_tick - _TICK_TOLERANCE)
        return ticks * self.steps_per_tick

    def take(self, command: NDArray[np.float64], step: int) -> None:
        """Take a command (N*m per joint) arriving after ``step`` integration steps; it acts from :meth:`acts_from`."""
        self._pending.append((self.acts_from(step), command))

    # -- the torque -----------------------------------------------------------------------------------------

    def demand(
        self, live: bool, q: NDArray[np.float64] | None = None, dq: NDArray[np.float64] | None = None
    ) -> NDArray[np.float64]:
        """Return the torque the driver asks of the motors at this integration step.

        An effort driver: the held command. A servo: its law on the held goal at the joint's
        angles ``q`` and velocities ``dq`` (see the module), the goal moved one step along its
        profile. Zero when not ``live`` (the simulator's watchdog) and, for a servo, before its
        first goal acts.
        """
        profile = self._profile
        if profile is None:
            return self.command if live else self._zero
        if not (live and self._acting):
            return self._zero
        assert q is not None and dq is not None  # a servo's law needs the joint's state
        spec = self.spec
        if self.goal is None:
            profile.start(q)
        self.goal = profile.follow(self.command)
        if profile.position:
            return spec.servo_kp * (self.goal - q) - spec.servo_kd * dq
        return spec.servo_kv * (self.goal - dq)

    def torque(
        self,
        step: int,
        live: bool = True,
        q: NDArray[np.float64] | None = None,
        dq: NDArray[np.float64] | None = None,
    ) -> NDArray[np.float64]:
        """Return the torque the joints get over the integration step from ``step``.

        The commands due by then are taken first (the newest acts); the demanded torque
        (:meth:`demand`) goes through the lag and is saturated at the effort limit.

        Parameters
        ----------
        step : int
            Integration steps made so far.
        live : bool, optional
            Whether commands still come (the simulator's watchdog); else zero is demanded.
        q, dq : NDArray[np.float64] | None, optional
            The joints' angles (rad) and velocities (rad/s) at the step's start: a servo's law
            needs them.
        """
        pending = self._pending
        while pending and pending[0][0] <= step:
            self.command = pending.popleft()[1]
            self._acting = True
        demand = self.demand(live, q, dq)
        torque = demand + (self._torque - demand) * self._decay if self._decay else demand
        self._torque = torque
        if self._limit is not None:
            return np.clip(torque, -self._limit, self._limit)
        return torque

    # -- what it publishes ------------------------------------------------------------------------------------

    def observe(
        self, q: NDArray[np.float64], dq: NDArray[np.float64], effort: NDArray[np.float64]
    ) -> tuple[list[float], list[float], list[float]]:
        """Return the state it publishes at a tick: angles, velocities and effort with their noise, ticks and bias.

        Draws the tick's noise (one standard normal per joint for each of angle, velocity and
        effort, in that order, when any noise is set).
        """
        angles, speeds, efforts = q.tolist(), dq.tolist(), effort.tolist()
        if self._noisy:  # plain lists: a few joints' noise costs less so (every list has a value per joint)
            n = self.num_joints
            z = self._next_noise()
            sigma = self._sigma
            angles = [x + s * e for x, s, e in zip(angles, sigma[0], z, strict=False)]
            speeds = [x + s * e for x, s, e in zip(speeds, sigma[1], z[n:], strict=False)]
            efforts = [x + s * e for x, s, e in zip(efforts, sigma[2], z[2 * n :], strict=False)]
        if self._quantised:
            angles = [round(x / step) * step if step else x for x, step in zip(angles, self._encoder, strict=False)]
        if self._biased:
            efforts = [x + b for x, b in zip(efforts, self._bias, strict=False)]
        return angles, speeds, efforts

    def _next_noise(self) -> list[float]:
        """Return the next tick's standard normals (angles', velocities', efforts'), drawn a block at a time."""
        if self._drawn == len(self._noise):
            self._noise = self._rng.standard_normal((_NOISE_BLOCK, 3 * self.num_joints)).tolist()
            self._drawn = 0
        self._drawn += 1
        return self._noise[self._drawn - 1]

    def describe(self) -> str:
        """Return one phrase on what the driver does, for the simulator's first log line."""
        spec, parts = self.spec, []
        period = self.steps_per_tick * self.dt
        parts.append(f"{1.0 / period:g} Hz ({self.steps_per_tick} step{'s' if self.steps_per_tick > 1 else ''} a tick)")
        if self._profile is not None:
            parts.append(self._profile.describe())
        if spec.command_delay:
            parts.append(f"commands act {spec.command_delay:g} s after they arrive, from the next tick")
        if spec.torque_lag:
            parts.append(f"torque lag {spec.torque_lag:g} s")
        if self.alters_state:
            parts.append(f"noise, encoder ticks and effort bias as [driver] says (seed {spec.seed})")
        if self._limit is not None:
            parts.append(f"torque saturated at {self._limit.tolist()} N*m")
        return ", ".join(parts)


class _Profile:
    """A servo's goal as its profile lets it move, one integration step at a time (see the module).

    Parameters
    ----------
    spec : DriverSpec
        The servo (``interface`` ``position`` or ``velocity``, its profile limits).
    dt : float
        The integration step (s).
    """

    def __init__(self, spec: DriverSpec, dt: float) -> None:
        """Take the servo's limits; the profile starts with the first goal."""
        self.spec = spec
        self.dt = dt
        self.position = spec.interface == POSITION
        self.speed = spec.profile_velocity
        self.acceleration = spec.profile_acceleration
        self.limited = bool(np.isfinite(self.speed).any() or np.isfinite(self.acceleration).any())
        self._finite = np.isfinite(self.acceleration)
        braking = np.where(self._finite, self.acceleration, 1.0)  # a finite stand-in where there is no limit
        # A step's constants, made once (see follow): the most the rate changes in one step, and the braking's
        # speed and distance over one step.
        self._most = self.acceleration * dt
        self._least = -self._most
        self._brake_speed = braking * dt
        self._brake_distance = self._brake_speed * dt
        self._slowest = -self.speed
        self._at: NDArray[np.float64] = np.zeros(spec.num_joints)  # the profiled goal
        self._rate: NDArray[np.float64] = np.zeros(spec.num_joints)  # its rate of change (a position goal's speed)

    def start(self, q: NDArray[np.float64]) -> None:
        """Start the profile at the joints' angles ``q`` (a velocity goal at 0), at rest."""
        self._at = q.copy() if self.position else np.zeros_like(q)
        self._rate = np.zeros_like(q)

    def follow(self, goal: NDArray[np.float64]) -> NDArray[np.float64]:
        """Move the profiled goal one step toward ``goal`` within the limits; return it."""
        if not self.limited:
            self._at = goal
            return goal
        dt, top, least, most = self.dt, self.speed, self._least, self._most
        if self.position:
            error = goal - self._at
            distance = np.abs(error)
            # As fast as allowed, slow enough to stop at the goal braking at the acceleration allowed step by step
            # (from n * a * dt the steps cover a dt^2 n (n + 1) / 2), and not past it in one step.
            braking = np.where(
                self._finite,
                self._brake_speed * (np.sqrt(0.25 + 2.0 * distance / self._brake_distance) - 0.5),
                np.inf,
            )
            wanted = np.sign(error) * np.minimum(np.minimum(top, braking), distance / dt)
            self._rate = self._rate + np.clip(wanted - self._rate, least, most)
            self._at = self._at + self._rate * dt
            return self._at
        wanted = np.clip(goal, self._slowest, top)
        self._at = self._at + np.clip(wanted - self._at, least, most)
        return self._at

    def describe(self) -> str:
        """Return one phrase on the servo, for the simulator's first log line."""
        spec = self.spec
        if self.position:
            gains = f"servo_kp {spec.servo_kp.tolist()} N*m/rad, servo_kd {spec.servo_kd.tolist()} N*m*s/rad"
            law = f"a position servo ({gains}"
        else:
            law = f"a velocity servo (servo_kv {spec.servo_kv.tolist()} N*m*s/rad"
        if self.limited:
            law += f", profile {self.speed.tolist()} rad/s, {self.acceleration.tolist()} rad/s^2"
        return law + ")"
