# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""A node's parameter class on an rclpy node: declared with descriptors, checked, changed live as a whole.

- :func:`declare_parameters` declares every field of a node's parameter class
  (:mod:`skelarm_ros.nodes.params`) with its descriptor and returns the checked values
  as an instance of the class: the node reads ``params.dt``. A given value of the
  wrong type or out of range, and a given parameter the node does not have (a
  misspelling), are refused with one sentence.
- :class:`LiveParameters` takes changes of the live fields: a set is checked whole,
  then replaces the instance at once (:func:`dataclasses.replace`), and the node
  applies the new one.
- :func:`parameter_problem` says in one sentence what rclpy itself refused.

rclpy keeps the given values in a private attribute: :func:`given_parameters` is the
one place that reads it (test/test_kit.py fails if a new rclpy moves it).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from typing import TYPE_CHECKING, Any

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.parameter import Parameter

from skelarm_ros.nodes.params.fields import (
    BOOL,
    DOUBLE,
    DOUBLE_ARRAY,
    INTEGER,
    STRING,
    STRING_ARRAY,
    Declaration,
    ParameterError,
    declarations,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from rclpy.node import Node

__all__ = [
    "ALWAYS_ACCEPTED",
    "LiveParameters",
    "ParameterError",
    "declare_parameters",
    "descriptor",
    "given_parameters",
    "parameter_problem",
]

ALWAYS_ACCEPTED = frozenset({"use_sim_time", "start_type_description_service"})
"""Parameters rclpy declares on every node."""

TYPES = {
    STRING: Parameter.Type.STRING,
    DOUBLE: Parameter.Type.DOUBLE,
    INTEGER: Parameter.Type.INTEGER,
    BOOL: Parameter.Type.BOOL,
    STRING_ARRAY: Parameter.Type.STRING_ARRAY,
    DOUBLE_ARRAY: Parameter.Type.DOUBLE_ARRAY,
}
"""The rclpy type of each kind of parameter."""

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


def descriptor(declaration: Declaration) -> ParameterDescriptor:
    """Return a parameter's descriptor: description, read-only, choices, range.

    The range goes into the descriptor of a read-only parameter only: rclpy checks a
    descriptor's range before a node's own check and refuses with its own words, so
    a live parameter's range is said by its check (and in the description).
    """
    spec = declaration.spec
    described = ParameterDescriptor(description=spec.description, read_only=declaration.read_only)
    if spec.choices:
        described.additional_constraints = f"one of: {', '.join(spec.choices)}"
    if declaration.read_only and (spec.low is not None or spec.high is not None):
        if declaration.kind == INTEGER:
            low_int = -(2**63) if spec.low is None else int(spec.low)
            high_int = 2**63 - 1 if spec.high is None else int(spec.high)
            described.integer_range = [IntegerRange(from_value=low_int, to_value=high_int, step=1)]
        else:
            low = -math.inf if spec.low is None else float(spec.low)
            high = math.inf if spec.high is None else float(spec.high)
            described.floating_point_range = [FloatingPointRange(from_value=low, to_value=high)]
    return described


def given_parameters(node: Node) -> dict[str, Parameter]:
    """Return the parameter values given to ``node`` (command line, parameter files, ``parameter_overrides``).

    rclpy keeps them in a private attribute; this is the one place that reads it
    (test/test_kit.py fails if a new rclpy moves it).
    """
    return dict(node._parameter_overrides)  # rclpy offers no public way to list them


def declare_parameters[P](node: Node, params: type[P], doc: str, shared: Sequence[type] = ()) -> P:
    """Declare the fields of ``params`` on ``node`` and return their checked values as an instance of it.

    Parameters
    ----------
    node : Node
        The node being set up.
    params : type[P]
        Its parameter class (a frozen dataclass of :mod:`skelarm_ros.nodes.params`).
    doc : str
        The node's page in the docs, named in the sentences.
    shared : Sequence[type], optional
        The parameter classes of the other nodes of the process: every node of a process
        gets the parameters of its command line and parameter files (the composed graph's
        simulator and controller share one set), so a name one of them declares is theirs,
        not an unknown one. A name none declares is still refused.

    Returns
    -------
    P
        The values the node runs with.

    Raises
    ------
    ParameterError
        With one sentence naming the parameter and what would be right: a value of
        the wrong type or out of range, or a parameter the node does not have (one it
        had names what replaces it: the class's ``retired``).
    """
    given = given_parameters(node)
    declared = declarations(params)
    names = [declaration.name for declaration in declared]
    theirs = {declaration.name for other in shared for declaration in declarations(other)}
    unknown = sorted(name for name in given if name not in names and name not in theirs and not _always_accepted(name))
    retired: dict[str, str] = getattr(params, "retired", {})
    gone = [name for name in unknown if name in retired]
    if gone:
        msg = f"{node.get_name()}'s parameter '{gone[0]}' was removed: {retired[gone[0]]} (see {doc})"
        raise ParameterError(msg)
    if unknown:
        close = difflib.get_close_matches(unknown[0], names, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        msg = (
            f"{node.get_name()} has no parameter '{unknown[0]}'{hint}; its parameters are {', '.join(names)} "
            f"(see {doc})"
        )
        raise ParameterError(msg)
    values: dict[str, Any] = {}
    for declaration in declared:
        if declaration.name in given:
            _check_given(declaration, given[declaration.name], doc)
            declaration.checked(given[declaration.name].value)  # its sentence, before rclpy's own range text
        value = node.declare_parameter(declaration.name, _initial(declaration), descriptor(declaration)).value
        values[declaration.name] = declaration.checked(value)
    return params(**values)


def _initial(declaration: Declaration) -> Any:
    """Return what rclpy declares: the default, a list for an array, the type alone for an empty array."""
    if not declaration.is_array:
        return declaration.default
    return list(declaration.default) if declaration.default else TYPES[declaration.kind]


def _always_accepted(name: str) -> bool:
    return name in ALWAYS_ACCEPTED or name.startswith("qos_overrides.")


def _check_given(declaration: Declaration, given: Parameter, doc: str) -> None:
    """Refuse a given value of the wrong type with one sentence (an integer for a float shows the fix)."""
    wanted = TYPES[declaration.kind]
    if given.type_ in (wanted, Parameter.Type.NOT_SET):
        return
    name = declaration.name
    if wanted == Parameter.Type.DOUBLE and given.type_ == Parameter.Type.INTEGER:
        declaration.checked(float(given.value))  # the range's sentence first, if the number is out of it
        msg = f"parameter {name} is a floating-point number; write {given.value}.0 instead of {given.value} (see {doc})"
        raise ParameterError(msg)
    if wanted == Parameter.Type.DOUBLE_ARRAY and given.type_ == Parameter.Type.INTEGER_ARRAY:
        written = ", ".join(f"{value}.0" for value in given.value)
        msg = f"parameter {name} is a list of floating-point numbers; write [{written}] (see {doc})"
        raise ParameterError(msg)
    msg = f"parameter {name} must be {_TYPE_WORDS.get(wanted, str(wanted))}, got {given.value!r} (see {doc})"
    raise ParameterError(msg)


class LiveParameters[P]:
    """Changes of a node's live parameters: a set is checked whole, then replaces the values at once.

    Parameters
    ----------
    node : Node
        The node, its parameters declared (:func:`declare_parameters`).
    params : P
        The values it runs with.
    apply : Callable[[P], None]
        Takes the new values once a set is accepted (the node applies them).
    checks : Mapping[str, Callable[[str, Any], Any]] | None, optional
        Checks that know the node (effort limits per joint of its arm), in place of
        those of the declaration.
    """

    def __init__(
        self,
        node: Node,
        params: P,
        apply: Callable[[P], None],
        checks: Mapping[str, Callable[[str, Any], Any]] | None = None,
    ) -> None:
        """Add the node's set-parameters callbacks."""
        self._current = params
        self._apply = apply
        self._checks = dict(checks or {})
        self._live = {item.name: item for item in declarations(type(params)) if not item.read_only}
        self._pending: P | None = None
        node.add_on_set_parameters_callback(self._check)
        node.add_post_set_parameters_callback(self._done)

    @property
    def current(self) -> P:
        """The values in use."""
        return self._current

    def _check(self, parameters: list[Parameter]) -> SetParametersResult:
        self._pending = None
        changes: dict[str, Any] = {}
        try:
            for parameter in parameters:
                declaration = self._live.get(parameter.name)
                if declaration is not None:
                    changes[parameter.name] = declaration.checked(parameter.value, self._checks.get(parameter.name))
        except ParameterError as error:
            return SetParametersResult(successful=False, reason=str(error))
        if changes:
            self._pending = dataclasses.replace(self._current, **changes)  # type: ignore[type-var]
        return SetParametersResult(successful=True)

    def _done(self, _parameters: list[Parameter]) -> None:
        if self._pending is not None:
            self._current, self._pending = self._pending, None
            self._apply(self._current)


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
