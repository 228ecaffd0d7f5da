# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Controller plugins: the builders installed packages offer in the ``skelarm_ros.controllers`` group.

A package adds a controller type with an entry point in :data:`PLUGIN_GROUP`; its name
is the ``[controller].type`` and its object a builder ``(params, skeleton, task) ->
skelarm.Controller``, registered with :func:`skelarm.register_controller` (docs/controller.md,
"Controller plugins"). :func:`registry_restored` leaves the registry of controller types as it
found it, for a process that loads plugins only for a while (a test, a look at what is installed).

This module does not import rclpy.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
from typing import TYPE_CHECKING

import skelarm

from skelarm_ros.control.skelarm_internals import controller_builders

if TYPE_CHECKING:
    from collections.abc import Iterator

PLUGIN_GROUP = "skelarm_ros.controllers"
_PLUGIN_NAMES: set[str] = set()  # the types registered from entry points


def load_controller_plugins() -> list[str]:
    """Register the controller builders that installed packages offer as entry points.

    Each entry point of the group ``skelarm_ros.controllers`` loads a builder
    ``(params, skeleton, task) -> skelarm.Controller``, registered with
    :func:`skelarm.register_controller` under the entry point's name. A plugin that
    fails to load, or whose name is one of skelarm's built-in types, is skipped.

    Returns
    -------
    list[str]
        One sentence per skipped plugin, for the caller to log as a warning.
    """
    problems: list[str] = []
    builtin = set(skelarm.controller_types()) - _PLUGIN_NAMES
    for entry in importlib.metadata.entry_points(group=PLUGIN_GROUP):
        where = f"controller plugin '{entry.name}' ({entry.value})"
        if entry.name in builtin:
            problems.append(f"{where} would replace skelarm's built-in type '{entry.name}'; rename the entry point")
            continue
        try:
            builder = entry.load()
        except Exception as error:  # any error a third-party plugin raises on import
            problems.append(f"{where} failed to load ({type(error).__name__}: {error}); fix or uninstall it")
            continue
        if not callable(builder):
            problems.append(f"{where} is not callable; it must name a builder (params, skeleton, task) -> Controller")
            continue
        skelarm.register_controller(entry.name, builder)
        _PLUGIN_NAMES.add(entry.name)
    return problems


@contextlib.contextmanager
def registry_restored() -> Iterator[None]:
    """Put skelarm's controller types and the plugins' names back as they were when the block ends.

    Whatever the block registers (:func:`load_controller_plugins`, :func:`skelarm.register_controller`)
    is gone after it, and what it replaced is back.
    """
    builders = controller_builders()
    kept_builders, kept_names = dict(builders), set(_PLUGIN_NAMES)
    try:
        yield
    finally:
        builders.clear()
        builders.update(kept_builders)
        _PLUGIN_NAMES.clear()
        _PLUGIN_NAMES.update(kept_names)
