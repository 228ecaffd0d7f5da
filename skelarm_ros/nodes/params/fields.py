# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""How a node's parameter is declared: a typed field of a frozen dataclass, its metadata the rest.

A node's parameters are one frozen dataclass (as generate_parameter_library's
``Params``): each field's name is the parameter's, its type the parameter's type
(``str``, ``float``, ``int``, ``bool``, ``tuple[str, ...]``, ``tuple[float, ...]``), its
default the parameter's default, and an ``Annotated`` :class:`Spec` says the rest:
the description, read-only or live, the check, the range, the choices::

    @dataclass(frozen=True)
    class SimulatorParams:
        dt: Annotated[float, number("integration step; 0 takes the scenario's", zero=True)] = 0.0

:func:`declarations` lists a parameter class's fields with their specs;
:meth:`Declaration.checked` checks a value with one sentence per problem (the checks
of :mod:`skelarm_ros.interface`, which the launch description uses too). Declaring
them on an rclpy node is :mod:`skelarm_ros.nodes.parameters`'s; the docs' tables are
:mod:`skelarm_ros.nodes.params.docs`'s.

This module imports neither rclpy nor numpy.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, get_args, get_origin

from skelarm_ros.interface import check_choice, check_count, check_node_names, check_non_negative, check_positive

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

STRING, DOUBLE, INTEGER, BOOL = "string", "double", "int", "bool"
STRING_ARRAY, DOUBLE_ARRAY = "string array", "double array"
KINDS: dict[object, str] = {str: STRING, float: DOUBLE, int: INTEGER, bool: BOOL}
ARRAY_KINDS: dict[object, str] = {str: STRING_ARRAY, float: DOUBLE_ARRAY}


class ParameterError(ValueError):
    """A parameter a node cannot take; the message names it and what would be right."""


@dataclass(frozen=True)
class Spec:
    """What a parameter's field says besides its name, type and default.

    Attributes
    ----------
    description : str
        One sentence for ``ros2 param describe`` and the docs' table (units included).
    live : bool
        Whether it changes while the node runs (tunable); structural ones are read-only.
    check : Callable[[str, Any], Any] | None
        ``check(name, value)`` turns a given value into the value used, raising
        ``ValueError`` with one sentence when it cannot.
    low, high : float | None
        The range a descriptor states (for tools such as ``ros2 param describe``).
    choices : tuple[str, ...]
        The accepted values of a string parameter (the default is one of them).
    details : str
        More for the docs' table only (Markdown), after the description.
    """

    description: str
    live: bool = False
    check: Callable[[str, Any], Any] | None = None
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    details: str = ""


def param(description: str, *, live: bool = False, details: str = "") -> Spec:
    """Return the spec of a parameter any value of its type suits."""
    return Spec(description, live=live, details=details)


def readers(description: str, *, details: str = "") -> Spec:
    """Return the spec of a read-only list of node names (the readers a publisher waits for)."""
    return Spec(description, check=check_node_names, details=details)


def number(description: str, unit: str = "s", *, zero: bool = False, live: bool = False, details: str = "") -> Spec:
    """Return the spec of a floating-point parameter in ``unit`` that must be positive (with ``zero``: or zero)."""
    check = functools.partial(check_non_negative if zero else check_positive, unit=unit)
    bound = ">= 0" if zero else "> 0"
    return Spec(f"{description} ({unit}, {bound})", live=live, check=check, low=0.0, details=details)


def count(description: str, high: int | None = None, low: int = 0, details: str = "") -> Spec:
    """Return the spec of a read-only whole-number parameter from ``low`` to ``high`` (no bound when ``None``)."""
    return Spec(
        description, check=functools.partial(check_count, high=high, low=low), low=low, high=high, details=details
    )


def choice(choices: Sequence[str], description: str, *, live: bool = False, details: str = "") -> Spec:
    """Return the spec of a string parameter that is one of ``choices``."""
    return Spec(description, live=live, choices=tuple(choices), details=details)


@dataclass(frozen=True)
class Declaration:
    """One parameter of a node, from its field: name, kind, default and spec.

    Attributes
    ----------
    name : str
        The parameter's name (the field's).
    kind : str
        ``string``, ``double``, ``int``, ``bool``, ``string array`` or ``double array``.
    default : Any
        The field's default (an array's is a tuple; empty: none unless given).
    spec : Spec
        The rest.
    """

    name: str
    kind: str
    default: Any
    spec: Spec

    @property
    def read_only(self) -> bool:
        """Whether the parameter keeps its start-up value."""
        return not self.spec.live

    @property
    def is_array(self) -> bool:
        """Whether the parameter is a list (a tuple in the dataclass)."""
        return self.kind in (STRING_ARRAY, DOUBLE_ARRAY)

    def checked(self, given: Any, check: Callable[[str, Any], Any] | None = None) -> Any:
        """Return ``given`` checked and as the field holds it (a list as a tuple, none given as empty).

        ``given`` must be one of the choices, then goes through ``check`` (else the
        spec's).

        Raises
        ------
        ParameterError
            With the check's sentence, naming the parameter.
        """
        check = check or self.spec.check
        try:
            if self.spec.choices:
                check_choice(self.name, given, self.spec.choices)
            value = given if check is None else check(self.name, given)
        except (TypeError, ValueError) as error:
            raise ParameterError(_parameter_sentence(self.name, str(error))) from None
        if self.is_array:
            return tuple(value or ())
        return float(value) if self.kind == DOUBLE else value


def declarations(params: type) -> list[Declaration]:
    """Return the parameters a parameter class declares, in its order.

    Raises
    ------
    TypeError
        If a field has no :class:`Spec`, no default, a type a parameter cannot have, or
        a default that is not one of its choices.
    """
    hints = typing.get_type_hints(params, include_extras=True)
    found = []
    for item in dataclasses.fields(params):
        annotated = hints[item.name]
        specs = [extra for extra in getattr(annotated, "__metadata__", ()) if isinstance(extra, Spec)]
        kind = _kind(get_args(annotated)[0] if specs else annotated)
        if not specs or kind is None or item.default is dataclasses.MISSING:
            msg = (
                f"{params.__name__}.{item.name} must be Annotated[<type>, <Spec>] with a default, the type one of "
                "str, float, int, bool, tuple[str, ...], tuple[float, ...]"
            )
            raise TypeError(msg)
        spec = specs[0]
        if spec.choices and item.default not in spec.choices:
            msg = f"{params.__name__}.{item.name} defaults to '{item.default}', which is not one of {spec.choices}"
            raise TypeError(msg)
        found.append(Declaration(item.name, kind, item.default, spec))
    return found


def _kind(annotation: object) -> str | None:
    if get_origin(annotation) is tuple:
        args = get_args(annotation)
        return ARRAY_KINDS.get(args[0]) if len(args) == 2 and args[1] is Ellipsis else None
    return KINDS.get(annotation)


class Names:
    """The parameter names of a parameter class, as attributes: ``Names(SimulatorParams).dt == "dt"``.

    So a launch description names a node's parameters from their declaration; a name
    the class does not declare raises ``AttributeError`` naming the ones it does.
    """

    def __init__(self, params: type) -> None:
        """Read the field names of ``params``."""
        self._params = params.__name__
        self._names = tuple(item.name for item in dataclasses.fields(params))

    def __getattr__(self, name: str) -> str:
        """Return ``name`` when the class declares it."""
        if name in self._names:
            return name
        msg = f"{self._params} has no parameter '{name}'; its parameters are {', '.join(self._names)}"
        raise AttributeError(msg)


def _parameter_sentence(name: str, text: str) -> str:
    """Make a check's sentence name the parameter as such (``dt must be ...`` -> ``parameter dt must be ...``)."""
    if text.startswith(name):
        return f"parameter {text}"
    return text
