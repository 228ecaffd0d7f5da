"""Shared helpers of the identification tests: random arms, wrong priors, simulated exciting runs.

A run is simulated by the project's engine (semi-implicit Euler, as the simulator node
steps) under the excitation controller, so its logs have exactly the simulator's
conventions: the torque at frame k acted over the step from frame k.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import skelarm
from conftest import random_arm
from skelarm.recording import dump_toml

from skelarm_ros.identification import excitation
from skelarm_ros.sim.engine import ArmEngine, run_controlled

FREQUENCIES = [0.2, 0.45, 0.8, 1.3]
HELDOUT_FREQUENCIES = [0.15, 0.35, 0.6, 1.05]


def wide_arm(rng: np.random.Generator, num_links: int, *, gravity: bool = False) -> skelarm.Skeleton:
    """A random arm (conftest.random_arm: base offset, off-axis centres of mass) with roomy joint limits."""
    arm = random_arm(rng, num_links)
    for link in arm.links[1:]:
        link.prop.qmin, link.prop.qmax = -math.radians(170.0), math.radians(170.0)
        if gravity:  # a link heavier than its inertia alone: gravity then matters
            link.prop.i = max(link.prop.i, 0.01)
    arm.set_state(q=np.zeros(num_links))
    return arm


def wrong_prior(rng: np.random.Generator, arm: skelarm.Skeleton) -> skelarm.Skeleton:
    """A CAD guess of the arm: masses 30-60 % off, inertias off, centres of mass shifted by up to 10 % of a length."""
    prior = arm.clone()
    for link in prior.links[1:]:
        prop = link.prop
        prop.m *= float(rng.choice([-1.0, 1.0]) * rng.uniform(0.3, 0.6) + 1.0)
        prop.i = prop.i * float(rng.uniform(0.5, 2.0)) + 0.01
        prop.rgx += float(rng.uniform(-0.1, 0.1)) * prop.length
        prop.rgy += float(rng.uniform(-0.1, 0.1)) * prop.length
    return prior


def sines_task(num_joints: int, duration: float, frequencies=FREQUENCIES, amplitude: float = 60.0) -> skelarm.Task:
    """A sum-of-sines task (joint_trajectory_tracking, reference sum_of_sines)."""
    return skelarm.Task.from_dict(
        {
            "type": "joint_trajectory_tracking",
            "reference": "sum_of_sines",
            "duration": duration,
            "frequencies": list(frequencies),
            "amplitudes": [amplitude] * num_joints,
        }
    )


def excitation_run(
    arm: skelarm.Skeleton,
    *,
    duration: float = 6.0,
    dt: float = 0.002,
    grav_vec=None,
    frequencies=FREQUENCIES,
    friction=None,
) -> skelarm.StateLog:
    """Simulate the arm under the excitation controller (PD); with ``friction`` (viscous, Coulomb per joint) the
    motor also overcomes joint friction: the arm gets ``tau - f(dq)``, the log records ``tau``."""
    task = sines_task(arm.num_joints, duration, frequencies)
    controller = excitation.build_controller({"law": "pd", "kp": 60.0, "kd": 4.0}, arm, task)
    engine = ArmEngine(arm, dt, grav_vec=grav_vec, enforce_limits=False)
    if friction is not None:
        coefficients = np.asarray(friction, dtype=np.float64)
        step = engine.step

        def step_with_friction(tau, force=None):
            loss = coefficients[:, 0] * engine.dq + coefficients[:, 1] * np.sign(engine.dq)
            step(tau - loss, force)

        engine.step = step_with_friction
    return run_controlled(engine, arm.clone(), controller, duration=duration)


def with_torque(log: skelarm.StateLog, tau: np.ndarray) -> skelarm.StateLog:
    """A copy of the log with another torque channel (noise, a shift), the skeleton kept."""
    arrays = log.to_arrays()
    arrays["tau"] = tau
    return from_arrays(log, arrays)


def from_arrays(log: skelarm.StateLog, arrays: dict, extra: dict | None = None) -> skelarm.StateLog:
    """A StateLog of ``arrays`` (with ``time``) carrying ``log``'s skeleton and channel descriptions."""
    try:
        skeleton = log.build_skeleton()
    except ValueError:  # no skeleton embedded
        skeleton = None
    out = skelarm.StateLog(skeleton, producer="test", channel_meta=log.channel_meta, extra=extra or log.extra)
    names = [name for name in arrays if name != "time"]
    for k, t in enumerate(arrays["time"]):
        out.record(float(t), **{name: arrays[name][k] for name in names})
    return out


def save(log: skelarm.StateLog, path: Path) -> Path:
    log.save(path)
    return path


def robot_tables(arm: skelarm.Skeleton, **tables) -> dict:
    """A scenario's tables for an arm (degrees, as skelarm's TOML takes them), plus ``tables``."""
    links = [
        {
            "length": link.prop.length,
            "mass": link.prop.m,
            "inertia": link.prop.i,
            "com": [link.prop.rgx, link.prop.rgy],
            "limits": [math.degrees(link.prop.qmin), math.degrees(link.prop.qmax)],
        }
        for link in arm.links[1:]
    ]
    config = {
        "skeleton": {"base_length": arm.base_length, "link": links},
        "initial": {"q": np.degrees(arm.q).tolist()},
    }
    config.update(tables)
    return config


def write_toml(config: dict, path: Path) -> Path:
    path.write_text(dump_toml(config), encoding="utf-8")
    return path
