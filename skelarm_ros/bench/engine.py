# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Step cost of the Pinocchio engine beside :func:`skelarm.integrate_with_limits`."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

import numpy as np
import skelarm

from skelarm_ros.sim.engine import ArmEngine, sync_skeleton

TARGET_RATIO_4_LINKS = 300.0


def _arm(num_links: int) -> skelarm.Skeleton:
    props = [
        skelarm.LinkProp(length=0.5, m=1.0, i=0.05, rgx=0.25, rgy=0.01, qmin=-np.pi, qmax=np.pi)
        for _ in range(num_links)
    ]
    skeleton = skelarm.Skeleton(props, base_length=0.1)
    sync_skeleton(skeleton, np.full(num_links, 0.3), np.zeros(num_links))
    return skeleton


def _per_step(step: Callable[[], object], steps: int, rounds: int) -> float:
    """Best-of-``rounds`` seconds per call of ``step`` over ``steps`` calls."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        best = min(best, (time.perf_counter() - start) / steps)
    return best


def run(*, quick: bool = False) -> dict[int, float]:
    """Print per-step costs and ratios for 2, 4 and 8 links; return the ratios."""
    dt = 0.001
    ratios = {}
    print(f"{'links':>5} {'skelarm step':>14} {'engine step':>12} {'ratio':>8}")
    for num_links in (2, 4, 8):
        tau = np.linspace(-1.0, 1.0, num_links)
        reference = _arm(num_links)
        lower = np.full(num_links, -np.pi)
        upper = np.full(num_links, np.pi)
        engine = ArmEngine(_arm(num_links), dt)
        slow_step = functools.partial(skelarm.integrate_with_limits, reference, tau, dt, lower, upper)
        fast_step = functools.partial(engine.step, tau)
        # Interleave the two, so that both meet the same machine load.
        slow = fast = float("inf")
        for _ in range(2 if quick else 5):
            slow = min(slow, _per_step(slow_step, 20, 1))
            fast = min(fast, _per_step(fast_step, 2000 if quick else 20000, 1))
        ratios[num_links] = slow / fast
        print(f"{num_links:>5} {slow * 1e3:>11.3f} ms {fast * 1e6:>9.2f} us {slow / fast:>7.0f}x")
    verdict = "met" if ratios[4] >= TARGET_RATIO_4_LINKS else "NOT met"
    print(f"target: engine at least {TARGET_RATIO_4_LINKS:.0f}x faster for 4 links: {verdict} ({ratios[4]:.0f}x)")
    return ratios
