# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Per-step cost (update + control) of every skelarm controller type, skelarm's model beside the fast one."""

from __future__ import annotations

import copy
import time
import warnings

import numpy as np
import skelarm

from skelarm_ros.control.twins import has_fast_model, with_fast_model
from skelarm_ros.sim.engine import sync_skeleton

DT = 0.002
_TYPES = {
    "computed_torque": {},
    "joint_pd": {},
    "inverse_dynamics_pd": {},
    "mpc": {"horizon": 4, "max_iter": 5},
    "virtual_spring_damper": {},
    "time_varying_stiffness": {},
    "online_shaping": {},
    "position_dependent_shaping": {},
    "adaptive_shaping": {},
}


def _arm(num_links: int) -> tuple[skelarm.Skeleton, skelarm.Task]:
    props = [
        skelarm.LinkProp(length=0.5, m=1.0, i=0.05, rgx=0.25, rgy=0.01, qmin=-np.pi, qmax=np.pi)
        for _ in range(num_links)
    ]
    skeleton = skelarm.Skeleton(props, base_length=0.1)
    sync_skeleton(skeleton, np.full(num_links, 0.3), np.zeros(num_links))
    tip = skeleton.links[-1]
    task = skelarm.Task(type="reaching", target=np.array([tip.xe - 0.2, tip.ye + 0.1]), duration=1.0)
    return skeleton, task


def _per_step(controller: skelarm.Controller, skeleton: skelarm.Skeleton, steps: int) -> float:
    """Seconds per ``update`` + ``control`` over ``steps`` steps along a slowly moving state."""
    n = skeleton.num_joints
    controller.reset(skeleton)
    start = time.perf_counter()
    for k in range(steps):
        t = k * DT
        sync_skeleton(skeleton, np.full(n, 0.3 + 0.1 * t), np.full(n, 0.1))
        controller.update(t, skeleton, DT)
        controller.control(t, skeleton)
    return (time.perf_counter() - start) / steps


def run(*, quick: bool = False) -> dict[tuple[str, int], float]:
    """Print per-step costs for 2 and 4 links and the skelarm/fast ratio; return the ratios."""
    ratios: dict[tuple[str, int], float] = {}
    print(f"{'controller':<28} {'links':>5} {'skelarm model':>14} {'fast model':>12} {'ratio':>7}")
    for num_links in (2, 4):
        skeleton, task = _arm(num_links)
        for name, params in _TYPES.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                slow = skelarm.build_controller({"type": name, **params}, skeleton=skeleton, task=task, dt=DT)
            steps = 3 if name == "mpc" else (50 if quick else 300)
            if not has_fast_model(slow):
                cost = min(_per_step(slow, skeleton.clone(), steps) for _ in range(2 if quick else 3))
                print(f"{name:<28} {num_links:>5} {cost * 1e6:>11.1f} us {'(same)':>12} {'':>7}")
                continue
            fast = with_fast_model(copy.deepcopy(slow), skeleton, DT)
            slow_cost = fast_cost = float("inf")
            for _ in range(2 if quick else 3):  # interleaved, so both meet the same machine load
                slow_cost = min(slow_cost, _per_step(slow, skeleton.clone(), steps))
                fast_cost = min(fast_cost, _per_step(fast, skeleton.clone(), steps))
            ratios[(name, num_links)] = slow_cost / fast_cost
            print(
                f"{name:<28} {num_links:>5} {slow_cost * 1e6:>11.1f} us {fast_cost * 1e6:>9.1f} us "
                f"{slow_cost / fast_cost:>6.1f}x"
            )
    return ratios
