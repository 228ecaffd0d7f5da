# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The node kit: how every node of the package runs, takes its parameters and handles its topics.

- :func:`run_node` is every node's ``main``: one order of argument parsing and
  ``rclpy.init``, one error path (the sentence, exit 1), the node destroyed on every
  path, and signals handled in order (:mod:`skelarm_ros.nodes.spinning`): SIGINT or
  SIGTERM ends the spin between callbacks, never inside one, and the node says its
  last words before the context goes away (no traceback, no ``FATAL``, no
  ``Failed to publish log message to rosout``).
- :class:`KitNode` is the base of every node: its set-up runs inside a guard that
  destroys the node when it fails, and it ends the run with :meth:`KitNode.finish`.
- :class:`Param` and :func:`declare_parameters` declare a node's parameters from one
  table, with descriptors, one sentence per bad value (the same checks the launch
  description uses, from :mod:`skelarm_ros.interface`), and a refusal of parameters
  the node does not have; :func:`live_parameters` validates a whole set before
  applying any of it.
- :class:`JointStateInput` reads ``sensor_msgs/JointState`` as bytes, directly when of
  a known layout (:mod:`skelarm_ros.bags.cdr`), through rclpy otherwise.
- :class:`HeldBack` holds messages back, in order, until the readers a graph starts
  are matched.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import math
import re
import signal
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import rclpy
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.clock import Clock, ClockType
from rclpy.duration import Duration
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    QoSCompatibility,
    QoSProfile,
    ReliabilityPolicy,
    qos_check_compatible,
)
from rclpy.serialization import deserialize_message
from rclpy.signals import SignalHandlerOptions
from rclpy.subscription import Subscription
from rclpy.task import Future
from rclpy.utilities import remove_ros_args
from sensor_msgs.msg import JointState

from skelarm_ros.bags.cdr import JointStateLayout
from skelarm_ros.interface import check_choice, check_count, check_non_negative, check_positive
from skelarm_ros.nodes.spinning import node_executor, request_stop, spin_until, stop_requested, try_shutdown
from skelarm_ros.sim.run import ERROR, WARNING
from skelarm_ros.startup import NODE_STOPPED, STOP_SIGNALS, restore_signals, take_signals

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from rclpy.publisher import Publisher
    from rclpy.timer import Timer

    from skelarm_ros.sim.run import Say

CHECK_PERIOD = 0.02  # s, how often held-back messages look for their readers

KEEP_ALL = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
"""Reliable, keep-all: a slow reliable reader holds the writer back instead of losing messages (lockstep)."""
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
"""Reliable, transient local, depth 1: a late reader still gets the last message (``robot_description``)."""


def newest(depth: int, *, reliable: bool) -> QoSProfile:
    """Return a keep-last ``depth`` profile; best effort takes reliable and best-effort publishers alike."""
    reliability = ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=reliability)


ALWAYS_ACCEPTED = frozenset({"use_sim_time", "start_type_description_service"})
"""Parameters rclpy declares on every node."""


# -- the node base -------------------------------------------------------------------------------------


class KitNode(Node):
    """A node of this package: set-up guarded, a run that can finish with an exit code.

    Subclasses put their set-up in :meth:`setup` (not ``__init__``), so a set-up that
    fails destroys the node before the error goes on. ``**kwargs`` go to
    :class:`rclpy.node.Node` (``context=``, ``parameter_overrides=``...).

    Attributes
    ----------
    finished : Future
        Completed with the exit code when the run ends by itself (:meth:`finish`).
    thread_priority : int
        SCHED_FIFO priority for the process's threads (0 leaves the scheduler alone).
    node_name : str
        The node's (and its program's) name; :func:`run_node` takes it, ``description``
        (one sentence for ``--help``) and ``doc`` from the class.
    doc : str
        The node's page in the docs, named in parameter problems.
    events_executor : bool
        Spin on rclpy's EventsExecutor (else the single-threaded executor).
    """

    node_name = ""
    description = ""
    doc = "docs/interfaces.md"
    events_executor = True

    def __init__(self, node_name: str = "", **kwargs: Any) -> None:
        """Create the node (named ``node_name``, else the class's) and run :meth:`setup`; on failure destroy it."""
        super().__init__(node_name or self.node_name, **kwargs)
        self.finished: Future = Future()
        self.thread_priority = 0
        try:
            self.setup()
        except BaseException:
            self.destroy_node()
            raise

    def setup(self) -> None:
        """Declare parameters, build the core objects and wire topics (override it)."""

    def finish(self, code: int) -> None:
        """End the run with an exit code (the first call wins); :func:`run_node` then exits with it."""
        if not self.finished.done():
            self.finished.set_result(code)

    def wrap_up(self) -> int:
        """Return the exit code after the run finished by itself (override to wait for readers, say)."""
        return int(self.finished.result() or 0)

    def wait_for_readers(self, publishers: Sequence[Publisher], timeout: float, what: str) -> bool:
        """Wait until every reliable reader took what ``publishers`` published (:func:`wait_for_acknowledgements`).

        Says that it waits, and warns when ``timeout`` (s) passes first; a stop request ends
        the wait quietly. Returns whether every reader acknowledged.
        """
        self.get_logger().info(f"waiting up to {timeout:g} s for every reliable reader to take {what}")
        if wait_for_acknowledgements(publishers, timeout):
            return True
        if not stop_requested():
            self.get_logger().warning(f"not every reader acknowledged {what} within {timeout:g} s")
        return False

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
        executor = node_executor(node, node.thread_priority, events=node.events_executor)
        if spin_until(node, executor, node.finished):
            return node.wrap_up()
        report = node.stop_report()
        if report:  # the context is still up: a signal only ended the spin
            (node.get_logger() if node.context.ok() else console).info(report)
        return NODE_STOPPED
    finally:
        node.close()
        node.destroy_node()


def say(node: Node, said: Sequence[Say]) -> None:
    """Log what a core object says (:class:`skelarm_ros.sim.run.Say` items) on the node's logger."""
    for item in said:  # one call site per level: rclpy ties a call site to one severity
        if item.level == ERROR:
            node.get_logger().error(item.text)
        elif item.level == WARNING:
            node.get_logger().warning(item.text)
        else:
            node.get_logger().info(item.text)


# -- parameters ---------------------------------------------------------------------------------------


class ParameterError(ValueError):
    """A parameter a node cannot take; the message names it and what would be right."""


@dataclass(frozen=True)
class Param:
    """One parameter of a node: its name, default, description and check.

    Attributes
    ----------
    name : str
        The parameter's name.
    default : Any
        Its default value; a :class:`rclpy.parameter.Parameter.Type` for an array
        without a default (empty unless given).
    description : str
        One sentence for ``ros2 param describe`` (units included).
    read_only : bool
        Structural parameters are read-only; tunable ones change live.
    check : Callable[[str, Any], Any] | None
        ``check(name, value)`` turns a given value into the value used, raising
        ``ValueError`` with one sentence when it cannot (the checks of
        :mod:`skelarm_ros.interface`, which the launch description uses too).
    low, high : float | None
        The range a descriptor states (for tools such as ``ros2 param describe``).
    choices : tuple[str, ...]
        The accepted values of a string parameter.
    """

    name: str
    default: Any
    description: str
    read_only: bool = True
    check: Callable[[str, Any], Any] | None = None
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()

    def descriptor(self) -> ParameterDescriptor:
        """Return the parameter's descriptor.

        The range goes into the descriptor of a read-only parameter only: rclpy checks a
        descriptor's range before a node's own check and refuses with its own words, so
        a tunable parameter's range is said by :attr:`check` (and in the description).
        """
        descriptor = ParameterDescriptor(description=self.description, read_only=self.read_only)
        if self.choices:
            descriptor.additional_constraints = f"one of: {', '.join(self.choices)}"
        if self.read_only and (self.low is not None or self.high is not None):
            if isinstance(self.default, bool) or not isinstance(self.default, int):
                low = -math.inf if self.low is None else float(self.low)
                high = math.inf if self.high is None else float(self.high)
                descriptor.floating_point_range = [FloatingPointRange(from_value=low, to_value=high)]
            else:
                low_int = -(2**63) if self.low is None else int(self.low)
                high_int = 2**63 - 1 if self.high is None else int(self.high)
                descriptor.integer_range = [IntegerRange(from_value=low_int, to_value=high_int, step=1)]
        return descriptor

    def value(self, given: Any, check: Callable[[str, Any], Any] | None = None) -> Any:
        """Return ``given`` checked: one of :attr:`choices`, then through ``check`` (else :attr:`check`).

        Raises
        ------
        ParameterError
            With the check's sentence.
        """
        check = check or self.check
        try:
            if self.choices:
                check_choice(self.name, given, self.choices)
            return given if check is None else check(self.name, given)
        except (TypeError, ValueError) as error:
            raise ParameterError(_parameter_sentence(self.name, str(error))) from None


def number(
    name: str, default: float, description: str, unit: str = "s", *, zero: bool = False, live: bool = False
) -> Param:
    """Return a floating-point parameter that must be positive (with ``zero``: zero or more), in ``unit``."""
    check = functools.partial(check_non_negative if zero else check_positive, unit=unit)
    bound = ">= 0" if zero else "> 0"
    return Param(name, float(default), f"{description} ({unit}, {bound})", read_only=not live, check=check, low=0.0)


def count(name: str, default: int, description: str, high: int | None = None, low: int = 0) -> Param:
    """Return a read-only whole-number parameter from ``low`` to ``high`` (no bound when ``None``)."""
    check = functools.partial(check_count, high=high, low=low)
    return Param(name, default, description, check=check, low=low, high=high)


def choice(name: str, choices: Sequence[str], description: str, *, live: bool = False) -> Param:
    """Return a string parameter that is one of ``choices`` (the first is the default)."""
    return Param(name, choices[0], description, read_only=not live, choices=tuple(choices))


def flag(name: str, default: bool, description: str, *, live: bool = False) -> Param:
    """Return a true/false parameter."""
    return Param(name, default, description, read_only=not live)


def text(name: str, default: str, description: str) -> Param:
    """Return a read-only string parameter."""
    return Param(name, default, description)


def strings(name: str, description: str) -> Param:
    """Return a read-only list-of-strings parameter, empty unless given."""
    return Param(name, Parameter.Type.STRING_ARRAY, description)


def floats(name: str, description: str, *, live: bool = False) -> Param:
    """Return a list-of-floats parameter, empty unless given."""
    return Param(name, Parameter.Type.DOUBLE_ARRAY, description, read_only=not live)


def _parameter_sentence(name: str, text: str) -> str:
    """Make a check's sentence name the parameter as such (``dt must be ...`` -> ``parameter dt must be ...``)."""
    if text.startswith(name):
        return f"parameter {text}"
    return text


_TYPE_WORDS = {
    Parameter.Type.BOOL: "true or false",
    Parameter.Type.INTEGER: "a whole number",
    Parameter.Type.DOUBLE: "a floating-point number",
    Parameter.Type.STRING: "a string",
    Parameter.Type.BYTE_ARRAY: "a list of bytes",
    Parameter.Type.BOOL_ARRAY: "a list of true/false",
    Parameter.Type.INTEGER_ARRAY: "a list of whole numbers",
    Parameter.Type.DOUBLE_ARRAY: "a list of floating-point numbers",
    Parameter.Type.STRING_ARRAY: "a list of strings",
}


def _expected_type(param: Param) -> Parameter.Type:
    if isinstance(param.default, Parameter.Type):
        return param.default
    return Parameter.Type.from_parameter_value(param.default)


def _check_given(param: Param, given: Parameter, doc: str) -> None:
    """Refuse a given value of the wrong type with one sentence (an integer for a float shows the fix)."""
    wanted = _expected_type(param)
    if given.type_ in (wanted, Parameter.Type.NOT_SET):
        return
    if wanted == Parameter.Type.DOUBLE and given.type_ == Parameter.Type.INTEGER:
        param.value(float(given.value))  # the range's sentence first, if the number is out of it
        msg = (
            f"parameter {param.name} is a floating-point number; write {given.value}.0 instead of {given.value} "
            f"(see {doc})"
        )
        raise ParameterError(msg)
    if wanted == Parameter.Type.DOUBLE_ARRAY and given.type_ == Parameter.Type.INTEGER_ARRAY:
        written = ", ".join(f"{value}.0" for value in given.value)
        msg = f"parameter {param.name} is a list of floating-point numbers; write [{written}] (see {doc})"
        raise ParameterError(msg)
    msg = f"parameter {param.name} must be {_TYPE_WORDS.get(wanted, str(wanted))}, got {given.value!r} (see {doc})"
    raise ParameterError(msg)


def given_parameters(node: Node) -> dict[str, Parameter]:
    """Return the parameter values given to ``node`` (command line, parameter files, ``parameter_overrides``).

    rclpy keeps them in a private attribute; this is the one place that reads it
    (test/test_kit.py fails if a new rclpy moves it).
    """
    return dict(node._parameter_overrides)  # rclpy offers no public way to list them


def declare_parameters(node: Node, params: Sequence[Param], doc: str) -> dict[str, Any]:
    """Declare ``params`` on ``node`` and return their checked values by name.

    A given value of the wrong type or out of range, and a given parameter the node
    does not declare (a misspelling), are refused with one sentence.

    Parameters
    ----------
    node : Node
        The node being set up.
    params : Sequence[Param]
        Its parameters.
    doc : str
        The node's page in the docs, named in the sentences.

    Raises
    ------
    ParameterError
        With one sentence naming the parameter and what would be right.
    """
    given = given_parameters(node)
    names = [param.name for param in params]
    unknown = sorted(name for name in given if name not in names and not _always_accepted(name))
    if unknown:
        close = difflib.get_close_matches(unknown[0], names, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        msg = (
            f"{node.get_name()} has no parameter '{unknown[0]}'{hint}; its parameters are {', '.join(names)} "
            f"(see {doc})"
        )
        raise ParameterError(msg)
    values: dict[str, Any] = {}
    for param in params:
        if param.name in given:
            _check_given(param, given[param.name], doc)
            param.value(given[param.name].value)  # its sentence, before rclpy's own range text
        value = node.declare_parameter(param.name, param.default, param.descriptor()).value
        values[param.name] = param.value(value)
    return values


def _always_accepted(name: str) -> bool:
    return name in ALWAYS_ACCEPTED or name.startswith("qos_overrides.")


def live_parameters(
    node: Node,
    params: Sequence[Param],
    apply: Callable[[dict[str, Any]], None],
    checks: Mapping[str, Callable[[str, Any], Any]] | None = None,
) -> None:
    """Apply changes of the node's tunable parameters live: the whole set is checked before any is applied.

    Parameters
    ----------
    node : Node
        The node, its parameters declared.
    params : Sequence[Param]
        Its parameters; those not read-only change live.
    apply : Callable[[dict[str, Any]], None]
        Takes the checked values by name, once the set is accepted.
    checks : Mapping[str, Callable[[str, Any], Any]] | None, optional
        Checks that know the node (effort limits per joint of its arm), in place of
        those of the table.
    """
    tunable = {param.name: param for param in params if not param.read_only}
    own = dict(checks or {})
    accepted: dict[str, Any] = {}

    def check(parameters: list[Parameter]) -> SetParametersResult:
        accepted.clear()
        try:
            for parameter in parameters:
                if parameter.name in tunable:
                    accepted[parameter.name] = tunable[parameter.name].value(parameter.value, own.get(parameter.name))
        except ParameterError as error:
            accepted.clear()
            return SetParametersResult(successful=False, reason=str(error))
        return SetParametersResult(successful=True)

    def done(_parameters: list[Parameter]) -> None:
        if accepted:
            apply(dict(accepted))
            accepted.clear()

    node.add_on_set_parameters_callback(check)
    node.add_post_set_parameters_callback(done)


_WRONG_TYPE = re.compile(
    r"Trying to set parameter '(?P<name>[^']*)' to '(?P<value>[^']*)' of type '(?P<given>\w+)', "
    r"expecting type '(?:Type\.)?(?P<wanted>\w+)'"
)


def parameter_problem(error: Exception, doc: str) -> str:
    """Return one sentence for a parameter rclpy itself refused (``ParameterException``)."""
    wrong = _WRONG_TYPE.search(str(error))
    if wrong:
        return (
            f"parameter {wrong['name']} must be of type {wrong['wanted']}, got {wrong['given']} "
            f"'{wrong['value']}'; see {doc} for the accepted values"
        )
    return f"a parameter is not valid ({error}); see {doc} for the accepted values"


# -- QoS mismatches ---------------------------------------------------------------------------------------


class IncompatiblePeers:
    """Names each peer whose QoS cannot match an endpoint of ours, once, with the fix.

    rclpy's own line for an incompatible peer names neither the peer nor a fix; this
    one does. Pass :meth:`subscription_events` or :meth:`publisher_events` when creating
    the endpoint, then set :attr:`endpoint` to it.

    Parameters
    ----------
    node : Node
        The node the endpoint belongs to.
    fix : str
        What to do about a mismatch, for the sentence.
    """

    def __init__(self, node: Node, fix: str) -> None:
        """Watch nothing yet (set :attr:`endpoint`)."""
        self._node = node
        self._fix = fix
        self._told: set[str] = set()
        self.endpoint: Subscription | Publisher | None = None
        self.said: list[str] = []

    def subscription_events(self) -> SubscriptionEventCallbacks:
        """Return the event callbacks to create a subscription with."""
        return SubscriptionEventCallbacks(incompatible_qos=self._on_event)

    def publisher_events(self) -> PublisherEventCallbacks:
        """Return the event callbacks to create a publisher with."""
        return PublisherEventCallbacks(incompatible_qos=self._on_event)

    def _on_event(self, _info: object) -> None:
        self.check()

    def check(self) -> list[str]:
        """Name every incompatible peer not named before; return the sentences said."""
        endpoint = self.endpoint
        if endpoint is None:
            return []
        topic, ours = endpoint.topic_name, endpoint.qos_profile
        reading = isinstance(endpoint, Subscription)
        peers = (
            self._node.get_publishers_info_by_topic(topic)
            if reading
            else self._node.get_subscriptions_info_by_topic(topic)
        )
        said = []
        for peer in peers:
            name = _full_name(peer.node_namespace, peer.node_name)
            pair = (peer.qos_profile, ours) if reading else (ours, peer.qos_profile)
            compatibility, reason = qos_check_compatible(*pair)
            if compatibility != QoSCompatibility.ERROR or name in self._told:
                continue
            self._told.add(name)
            role = "publisher" if reading else "reader"
            said.append(
                f"the {role} {name} of {topic} cannot match this node's QoS ({reason.strip().rstrip(';')}); {self._fix}"
            )
        for sentence in said:
            self._node.get_logger().warning(sentence)
        self.said.extend(said)
        return said


# -- joint states as bytes -------------------------------------------------------------------------------


class JointStateInput:
    """A raw ``sensor_msgs/JointState`` subscription: known layouts read directly, others through rclpy.

    Parameters
    ----------
    node : Node
        The node that subscribes.
    topic : str
        The topic.
    qos : QoSProfile
        The subscription's QoS.
    on_state : Callable[..., None]
        Gets ``(names, position, velocity, effort, sec, nanosec)`` of each message.
    on_damaged : Callable[[str], None]
        Gets one sentence for a message that cannot be deserialized.
    peers : IncompatiblePeers | None, optional
        Names publishers whose QoS cannot match the subscription.
    """

    def __init__(  # noqa: PLR0917 - the subscription's own arguments, then the two callbacks and the watcher
        self,
        node: Node,
        topic: str,
        qos: QoSProfile,
        on_state: Callable[..., None],
        on_damaged: Callable[[str], None],
        peers: IncompatiblePeers | None = None,
    ) -> None:
        """Subscribe (raw) to ``topic``."""
        self._layout = JointStateLayout()
        self._on_state = on_state
        self._on_damaged = on_damaged
        events = None if peers is None else peers.subscription_events()
        self.subscription = node.create_subscription(
            JointState, topic, self.take, qos, raw=True, event_callbacks=events
        )
        if peers is not None:
            peers.endpoint = self.subscription

    def take(self, data: bytes) -> None:
        """Hand one serialized message's fields on (or its problem)."""
        layout = self._layout
        values = layout.values(data)
        if values is not None:
            positions, velocities, _ = layout.counts
            at = 2 + positions + velocities
            self._on_state(
                layout.names, values[2 : 2 + positions], values[2 + positions : at], values[at:], values[0], values[1]
            )
            return
        try:
            msg = deserialize_message(data, JointState)
        except Exception as error:  # rclpy raises several types on damaged bytes
            self._on_damaged(f"a {self.subscription.topic_name} message could not be deserialized ({error})")
            return
        layout.learn(data, msg)
        stamp = msg.header.stamp
        self._on_state(msg.name, msg.position, msg.velocity, msg.effort, stamp.sec, stamp.nanosec)


# -- messages held back until the readers are there -------------------------------------------------------


class HeldBack:
    """Publishes through it go out at once, or, until ``ready()`` first holds, wait in order.

    A graph's recorder may take longer to be matched than its controller takes to
    answer step 0; holding back keeps every message for it. Once released, it never
    holds again.

    Parameters
    ----------
    node : Node
        The node publishing.
    ready : Callable[[], bool]
        Whether the readers the graph starts are matched; ``None`` never holds.
    on_release : Callable[[int], None]
        Gets the number of messages that were held, when they go out.
    """

    def __init__(
        self, node: Node, ready: Callable[[], bool] | None, on_release: Callable[[int], None] | None = None
    ) -> None:
        """Start holding (when there is something to wait for)."""
        self._node = node
        self._ready = ready
        self._on_release = on_release
        self._held: list[tuple[Publisher, Any]] | None = None
        self._timer: Timer | None = None
        if ready is not None:
            self._held = []
            self._timer = node.create_timer(CHECK_PERIOD, self.release, clock=Clock(clock_type=ClockType.STEADY_TIME))

    @property
    def holding(self) -> bool:
        """Whether messages are still held back."""
        return self._held is not None

    def publish(self, publisher: Publisher, message: Any) -> None:
        """Publish ``message`` now, or after those held before it."""
        if self._held is None:
            publisher.publish(message)
            return
        self._held.append((publisher, message))
        self.release()

    def release(self) -> None:
        """Send what is held, in order, once ``ready()`` holds."""
        if self._held is None or self._ready is None or not self._ready():
            return
        held, self._held = self._held, None
        for publisher, message in held:
            publisher.publish(message)
        if self._timer is not None:
            self._node.destroy_timer(self._timer)
            self._timer = None
        if self._on_release is not None:
            self._on_release(len(held))


# -- the graph ------------------------------------------------------------------------------------------


def _full_name(namespace: str, name: str) -> str:
    return f"{namespace.rstrip('/')}/{name}"


def matching_readers(node: Node, publisher: Publisher, msgtype: str) -> list[str]:
    """Return the full names of the graph's readers of ``publisher``'s topic that can match it.

    A reader of another type or with an incompatible QoS (transient local against a
    volatile publisher, say) is never matched, so it must not be waited for.
    """
    topic = publisher.topic_name
    me = (node.get_namespace(), node.get_name())
    own = next(
        (i.qos_profile for i in node.get_publishers_info_by_topic(topic) if (i.node_namespace, i.node_name) == me),
        None,
    )
    return [
        _full_name(info.node_namespace, info.node_name)
        for info in node.get_subscriptions_info_by_topic(topic)
        if info.topic_type == msgtype
        and (own is None or qos_check_compatible(own, info.qos_profile)[0] != QoSCompatibility.ERROR)
    ]


def publishing_nodes(node: Node, topic: str) -> set[str]:
    """Return the full names of the nodes publishing ``topic`` (a full name)."""
    return {_full_name(info.node_namespace, info.node_name) for info in node.get_publishers_info_by_topic(topic)}


def wait_for_acknowledgements(publishers: Sequence[Publisher], timeout: float, piece: float = 0.05) -> bool:
    """Block until every reliable reader acknowledged everything ``publishers`` published.

    Waits in slices of ``piece`` seconds, so a stop request (SIGINT, SIGTERM) ends the
    wait at once; returns ``False`` then, or when ``timeout`` (s, in all) passes.
    """
    deadline = time.monotonic() + timeout
    pending = list(publishers)
    while pending:
        if stop_requested() or time.monotonic() > deadline:
            return False
        pending = [publisher for publisher in pending if not publisher.wait_for_all_acked(Duration(seconds=piece))]
    return True
