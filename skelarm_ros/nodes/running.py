# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""How every node of the package runs: the node base, its ``main``, and saying what a core says.

- :func:`run_node` is every node's ``main``: one order of argument parsing and
  ``rclpy.init``, one error path (the sentence, exit 1), the node destroyed on every
  path, and signals handled in order (:mod:`skelarm_ros.nodes.spinning`): SIGINT or
  SIGTERM ends the spin between callbacks, never inside one, and the node says its
  last words before the context goes away (no traceback, no ``FATAL``, no
  ``Failed to publish log message to rosout``).
- :class:`KitNode` is the base of every node: its set-up runs inside a guard that
  destroys the node when it fails, it publishes through :meth:`KitNode.publisher` (a
  test hands in stand-ins), and it ends the run with :meth:`KitNode.finish`.
- :func:`say` logs the :class:`~skelarm_ros.interface.Say` items a core returns.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

import rclpy
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from rclpy.task import Future
from rclpy.utilities import remove_ros_args

from skelarm_ros.interface import ERROR, WARNING
from skelarm_ros.nodes.graph_queries import wait_for_acknowledgements
from skelarm_ros.nodes.parameters import parameter_problem
from skelarm_ros.nodes.spinning import Beat, node_executor, request_stop, spin_until, stop_requested, try_shutdown
from skelarm_ros.startup import NODE_STOPPED, STOP_SIGNALS, restore_signals, take_signals

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from rclpy.publisher import Publisher
    from rclpy.qos import QoSProfile

    from skelarm_ros.interface import Say


class KitNode(Node):
    """A node of this package: set-up guarded, publishers a test can stand in for, a run that can finish.

    Subclasses put their set-up in :meth:`setup` (not ``__init__``), so a set-up that
    fails destroys the node before the error goes on, and create their publishers with
    :meth:`publisher`.

    Parameters
    ----------
    node_name : str, optional
        The node's name (the class's :attr:`node_name` when empty).
    stand_ins : Mapping[str, Publisher] | None, optional
        Stand-ins for some of the node's publishers, by topic as the node names it
        (``joint_states``, ``/clock``): :meth:`publisher` returns them instead of
        creating publishers, so a test sees what the node publishes. A stand-in needs
        what the node uses of a publisher (``publish``, ``get_subscription_count``,
        ``topic_name``).
    shared : Sequence[type], optional
        The parameter classes of the other nodes of its process, whose parameters it
        leaves to them (:func:`~skelarm_ros.nodes.parameters.declare_parameters`).
    **kwargs : Any
        Passed on to :class:`rclpy.node.Node` (``context=``, ``parameter_overrides=``...).

    Attributes
    ----------
    finished : Future
        Completed with the exit code when the run ends by itself (:meth:`finish`).
    thread_priority : int
        SCHED_FIFO priority for the process's threads (0 leaves the scheduler alone).
    time_slice : float
        The CPU slice (s) the process's threads ask for under normal scheduling (0: the kernel's).
    nice : int
        The nice value the process's threads run at (0: normal).
    beat : Beat | None
        Deadlines :func:`run_node`'s spin keeps for the node (the realtime simulator's steps).
    node_name : str
        The node's (and its program's) name; :func:`run_node` takes it, ``description``
        (one sentence for ``--help``) and ``doc`` from the class.
    doc : str
        The node's page in the docs, named in parameter problems.
    events_executor : bool
        Spin on rclpy's EventsExecutor (else the single-threaded executor).
    shared : tuple[type, ...]
        The parameter classes of the other nodes of its process.
    """

    node_name = ""
    description = ""
    doc = "docs/interfaces.md"
    events_executor = True

    def __init__(
        self,
        node_name: str = "",
        *,
        stand_ins: Mapping[str, Publisher] | None = None,
        shared: Sequence[type] = (),
        **kwargs: Any,
    ) -> None:
        """Create the node (named ``node_name``, else the class's) and run :meth:`setup`; on failure destroy it."""
        self._stand_ins = dict(stand_ins or {})
        self.shared = tuple(shared)
        super().__init__(node_name or self.node_name, **kwargs)
        self.finished: Future = Future()
        self.thread_priority = 0
        self.time_slice = 0.0
        self.beat: Beat | None = None
        self.nice = 0
        try:
            self.setup()
        except BaseException:
            self.destroy_node()
            raise

    def setup(self) -> None:
        """Declare parameters, build the core objects and wire topics (override it)."""

    def publisher(self, msg_type: Any, topic: str, qos: QoSProfile | int, **kwargs: Any) -> Publisher:
        """Create a publisher (``create_publisher``'s arguments), or return the stand-in given for ``topic``."""
        stand_in = self._stand_ins.get(topic)
        if stand_in is not None:
            return stand_in
        return self.create_publisher(msg_type, topic, qos, **kwargs)

    def finish(self, code: int) -> None:
        """End the run with an exit code (the first call wins); :func:`run_node` then exits with it."""
        if not self.finished.done():
            self.finished.set_result(code)

    def wrap_up(self) -> int:
        """Return the exit code after the run finished by itself (override to wait for readers, say)."""
        return int(self.finished.result() or 0)

    def wait_for_readers(self, publishers: Sequence[Publisher], timeout: float, what: str) -> bool:
        """Wait until every reliable reader took what ``publishers`` published (:func:`wait_for_acknowledgements`).

        The end of a run: it waits for the readers that have not acknowledged yet, no
        fixed time, and ends as soon as the last one has (the graph's Fast DDS profile asks
        readers every 0.1 s, docs/launch.md). Says that it waits and how long it took, and
        warns, naming the topics, when ``timeout`` (s) passes first; a stop request ends the
        wait quietly. Returns whether every reader acknowledged.
        """
        logger = self.get_logger()
        logger.info(f"waiting up to {timeout:g} s for every reliable reader to take {what}")
        began = time.monotonic()
        pending = wait_for_acknowledgements(publishers, timeout)
        if not pending:
            logger.info(f"every reliable reader took {what} after {time.monotonic() - began:.3f} s")
            return True
        if not stop_requested():
            topics = ", ".join(publisher.topic_name for publisher in pending)
            logger.warning(f"not every reader acknowledged {what} within {timeout:g} s (on {topics})")
        return False

    def companions(self) -> Sequence[Node]:
        """Other nodes of this process that spin on the node's executor (the composed graph's controller)."""
        return ()

    def stop_report(self) -> str | None:
        """Return what to say when a signal stopped the node, or ``None``."""
        return None

    def close(self) -> None:
        """Release what the node holds (files), on every way out; called before the node is destroyed."""


# -- the main runner --------------------------------------------------------------------------------


def _noted(_signum: int, _frame: object) -> None:
    request_stop()


def run_node(
    factory: type[KitNode] | Callable[[], KitNode],
    *,
    args: list[str] | None = None,
    name: str = "",
    description: str = "",
    doc: str = "",
) -> int:
    """Run a node as a program: parse, init, build, spin until it finishes or a signal stops it.

    Parameters
    ----------
    factory : type[KitNode] | Callable[[], KitNode]
        Builds the node (after ``rclpy.init``): a :class:`KitNode` class, whose
        ``node_name``, ``description`` and ``doc`` are used, or any callable with them given.
    args : list[str] | None, optional
        The command line with the program name first; ``sys.argv`` when ``None``.
    name, description, doc : str, optional
        The program's name, one sentence for ``--help``, the node's page in the docs;
        the class's when not given.

    Returns
    -------
    int
        The node's exit code (:meth:`KitNode.wrap_up`), 0 when stopped by SIGINT or
        SIGTERM, 1 when it could not start (one sentence says why).
    """
    if isinstance(factory, type) and issubclass(factory, KitNode):
        name, description, doc = name or factory.node_name, description or factory.description, doc or factory.doc
    argv = list(sys.argv if args is None else args)
    argparse.ArgumentParser(
        prog=name, description=f"{description} Set parameters with --ros-args -p name:=value."
    ).parse_args(remove_ros_args(argv)[1:])
    previous = {signum: signal.signal(signum, _noted) for signum in STOP_SIGNALS}
    take_signals()  # if the process started with them blocked
    try:
        rclpy.init(args=argv, signal_handler_options=SignalHandlerOptions.NO)
        try:
            return _run(factory, name, doc)
        finally:
            try_shutdown()
    finally:
        restore_signals(previous)


def _run(factory: Callable[[], KitNode], name: str, doc: str) -> int:
    console = rclpy.logging.get_logger(name)
    try:
        node = factory()
    except (ValueError, ParameterException) as error:
        if stop_requested():
            return NODE_STOPPED
        console.error(str(error) if isinstance(error, ValueError) else parameter_problem(error, doc))
        return 1
    except Exception:
        if stop_requested():  # a signal while the node was built
            return NODE_STOPPED
        raise
    try:
        executor = node_executor(
            node, node.thread_priority, events=node.events_executor, time_slice=node.time_slice, nice=node.nice
        )
        for companion in node.companions():
            executor.add_node(companion)
        if spin_until(node, executor, node.finished, node.beat):
            return node.wrap_up()
        report = node.stop_report()
        if report:  # the context is still up: a signal only ended the spin
            (node.get_logger() if node.context.ok() else console).info(report)
        return NODE_STOPPED
    finally:
        node.close()
        node.destroy_node()


def say(node: Node, said: Sequence[Say]) -> None:
    """Log what a core object says (:class:`skelarm_ros.interface.Say` items) on the node's logger."""
    for item in said:  # one call site per level: rclpy ties a call site to one severity
        if item.level == ERROR:
            node.get_logger().error(item.text)
        elif item.level == WARNING:
            node.get_logger().warning(item.text)
        else:
            node.get_logger().info(item.text)
