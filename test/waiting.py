"""Waiting in tests: on a condition, with a deadline, never for a fixed time.

Two kinds of wait, each in one place:

- :func:`wait_until` polls a condition that other threads or processes make true (a file, a queue, a
  process's state); it sleeps between looks and says whether the condition held in time.
- :func:`spin_until` spins an rclpy executor (its callbacks make the condition true) and fails the test,
  naming what it waited for, when the deadline passes; :func:`spin_wait` says whether it held instead, and
  :func:`spin_for` takes what is in flight for a while.

:class:`Spinning` binds those three to one executor (a probe's, a test's rig), so a test says
``probe.spin_until(condition, timeout, what)``; there is no other ``spin_until``.

Import it as ``from waiting import spin_until, wait_until`` (pytest puts ``test/`` on the path; so does
running a file of ``test/`` as a script).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

SPIN_PERIOD = 0.05
"""Seconds one ``spin_once`` waits for work before the condition is asked again."""


def wait_until(condition: Callable[[], bool], timeout: float, poll: float = 0.002) -> bool:
    """Whether ``condition()`` holds within ``timeout`` seconds, asked every ``poll`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(poll)
    return True


def spin_until(
    executor: Any,
    condition: Callable[[], bool],
    timeout: float,
    what: str,
    *,
    details: Callable[[], str] | None = None,
    period: float = SPIN_PERIOD,
) -> None:
    """Spin ``executor`` until ``condition()`` holds; fail naming ``what`` after ``timeout`` seconds.

    Parameters
    ----------
    executor : rclpy.executors.Executor
        The executor whose callbacks make the condition true.
    condition : callable
        Asked before each spin.
    timeout : float
        Wall seconds to wait.
    what : str
        What is awaited, for the failure message ("timed out after 10.0 s waiting for <what>").
    details : callable, optional
        Text added to the failure message (the processes' logs, say), made only when it fails.
    period : float, optional
        Seconds one ``spin_once`` waits for work.

    Raises
    ------
    AssertionError
        If ``condition()`` does not hold within ``timeout`` seconds.
    """
    if spin_wait(executor, condition, timeout, period=period):
        return
    message = f"timed out after {timeout} s waiting for {what}"
    raise AssertionError(message if details is None else f"{message}; {details()}")


def spin_wait(executor: Any, condition: Callable[[], bool], timeout: float, *, period: float = SPIN_PERIOD) -> bool:
    """Spin ``executor`` until ``condition()`` holds or ``timeout`` seconds pass; return whether it held."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        executor.spin_once(timeout_sec=period)
    return True


def spin_for(executor: Any, seconds: float, *, period: float = SPIN_PERIOD) -> None:
    """Spin ``executor`` for ``seconds`` (taking what is in flight), waiting for nothing in particular."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        executor.spin_once(timeout_sec=period)


class Spinning:
    """The spinning waits bound to one executor: what a probe node or a test's rig spins with.

    Parameters
    ----------
    executor : rclpy.executors.Executor
        The executor spun.
    details : callable, optional
        Text added to a failure message (the processes' logs, say), made only when a wait fails.
    period : float, optional
        Seconds one ``spin_once`` waits for work.
    """

    def __init__(self, executor: Any, *, details: Callable[[], str] | None = None, period: float = SPIN_PERIOD) -> None:
        self.executor = executor
        self.details = details
        self.period = period

    def spin_until(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        """Spin until ``condition()`` holds; fail naming ``what`` after ``timeout`` seconds (:func:`spin_until`)."""
        spin_until(self.executor, condition, timeout, what, details=self.details, period=self.period)

    def wait_for(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Spin until ``condition()`` holds or ``timeout`` seconds pass; return whether it held (:func:`spin_wait`)."""
        return spin_wait(self.executor, condition, timeout, period=self.period)

    def spin_for(self, seconds: float) -> None:
        """Spin for a while, taking what is in flight (:func:`spin_for`)."""
        spin_for(self.executor, seconds, period=self.period)
