"""How a node process spins: the beat kept in the spinning thread, and the CPU slice asked of Linux."""

from __future__ import annotations

import itertools
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
import rclpy

from skelarm_ros.interface import check_time_slice
from skelarm_ros.nodes import scheduling, spinning
from skelarm_ros.nodes.running import KitNode, run_node
from skelarm_ros.nodes.spinning import Beat

pytestmark = pytest.mark.ros


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_beat_fires_each_deadline_and_skips_the_ones_already_past(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock(100.0)
    monkeypatch.setattr(spinning.time, "monotonic", clock)
    fired: list[float] = []
    beat = Beat(0.001, fired.append)
    assert beat.due == pytest.approx(100.001)
    clock.now = 100.0012  # a little late: the next deadline is still one period on
    beat.fire()
    assert beat.due == pytest.approx(100.002)
    clock.now = 100.0045  # 2.5 periods late: 100.003 and 100.004 are past, 100.005 is the next one ahead
    beat.fire()
    assert beat.due == pytest.approx(100.005)
    clock.now = 100.005  # exactly on a deadline: that one is past too
    beat.fire()
    assert beat.due == pytest.approx(100.006)
    assert fired == pytest.approx([100.001, 100.002, 100.005])


class Beating(KitNode):
    """A node whose spin keeps a 2 ms beat and ends after 100 beats."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("beating", **kwargs)

    def setup(self) -> None:
        self.fired: list[tuple[float, float, int]] = []
        self.callbacks = 0
        self.create_timer(0.01, self._count)  # other callbacks run between the deadlines
        self.beat = Beat(0.002, self._on_beat)

    def _count(self) -> None:
        self.callbacks += 1

    def _on_beat(self, due: float) -> None:
        self.fired.append((due, time.monotonic(), threading.get_ident()))
        if len(self.fired) == 100:
            self.finish(0)


def test_the_spin_fires_the_beat_in_its_own_thread_at_the_deadlines() -> None:
    nodes: list[Beating] = []

    def factory() -> Beating:
        nodes.append(Beating())
        return nodes[-1]

    spinning.clear_stop()
    assert run_node(factory, name="beating", description="Beats.", doc="docs/x.md", args=["beating"]) == 0
    (node,) = nodes
    dues = [due for due, _, _ in node.fired]
    assert all(round((b - a) / 0.002) >= 1 for a, b in itertools.pairwise(dues))
    assert all(abs((b - a) / 0.002 - round((b - a) / 0.002)) < 1e-6 for a, b in itertools.pairwise(dues))
    assert all(fired >= due for due, fired, _ in node.fired)  # never early
    assert {thread for _, _, thread in node.fired} == {threading.get_ident()}  # the thread that spins
    assert node.callbacks >= 5  # the timer's callbacks ran between the deadlines


def test_a_slice_is_0_or_one_linux_takes() -> None:
    assert check_time_slice("scheduler_slice", 0) == 0.0
    assert check_time_slice("scheduler_slice", "0.0001") == 0.0001
    assert check_time_slice("scheduler_slice", 0.1) == 0.1
    for bad in (0.00005, 0.2, -0.001, "nan", "fast"):
        with pytest.raises(ValueError, match=r"^scheduler_slice must be 0 \(the kernel's default\) or from 0.0001"):
            check_time_slice("scheduler_slice", bad)


@pytest.mark.skipif(not scheduling.slices_known(), reason="Linux only")
def test_every_thread_asks_for_the_slice_or_the_node_says_the_kernel_keeps_its_own(
    context: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    node = rclpy.create_node("slicing", context=context)
    try:
        took = spinning.set_time_slice(node, 0.0002)
        err = capfd.readouterr().err
        slices = scheduling.thread_slices()
        if took:
            assert set(slices.values()) == {200_000}, slices
            assert "every thread of this process asks for a 0.2 ms CPU slice (normal scheduling)" in err
        else:  # a kernel before 6.12 keeps its own slice and says nothing of a per-thread one
            assert "this kernel keeps its own slice for normal scheduling (Linux 6.12 or later" in err
        assert not spinning.set_time_slice(node, 0.0)  # 0 leaves the kernel's slice alone
    finally:
        spinning.set_time_slice(node, 0.0)
        scheduling.request_time_slice(0.0)  # this test process's threads get the kernel's slice back
        node.destroy_node()


def test_every_thread_of_a_process_goes_nicer_and_a_nicer_one_stays(tmp_path: Any) -> None:
    script = """
import os, threading, time
from skelarm_ros.nodes.scheduling import lower_priority
ready = threading.Event()
def nicest():
    os.setpriority(os.PRIO_PROCESS, 0, 15)  # already nicer than asked: stays so
    ready.set()
    time.sleep(5)
threading.Thread(target=nicest, daemon=True).start()
threading.Thread(target=time.sleep, args=(5,), daemon=True).start()
ready.wait()
lower_priority(7)
print(sorted(os.getpriority(os.PRIO_PROCESS, int(t)) for t in os.listdir("/proc/self/task")))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[7, 7, 15]", done.stderr


@pytest.mark.parametrize(
    ("outcome", "sentence"),
    [
        (False, "scheduler_slice:=0.0001: this kernel keeps its own slice for normal scheduling (Linux 6.12 or later"),
        (None, "scheduler_slice:=0.0001 needs Linux's sched_setattr, not known here; the kernel's slice"),
        (OSError(1, "Operation not permitted"), "scheduler_slice:=0.0001 could not be set (Operation not permitted)"),
    ],
    ids=["older-kernel", "not-linux", "refused"],
)
def test_a_slice_the_kernel_does_not_take_is_one_sentence_and_the_node_goes_on(
    context: Any, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, outcome: Any, sentence: str
) -> None:
    def request(_seconds: float) -> bool | None:
        if isinstance(outcome, OSError):
            raise outcome
        return outcome

    monkeypatch.setattr(spinning, "request_time_slice", request)
    node = rclpy.create_node("slicing", context=context)
    try:
        assert not spinning.set_time_slice(node, 0.0001)
    finally:
        node.destroy_node()
    err = capfd.readouterr().err
    assert sentence in err
    assert len([line for line in err.splitlines() if "scheduler_slice" in line]) == 1 and "Traceback" not in err
