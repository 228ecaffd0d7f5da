# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The docs' parameter tables, made from the nodes' parameter classes.

Each node's page holds its table between two markers; :func:`table` makes it from the
class (name, type and default, read-only or live, the description and what the docs
add), :func:`rewritten` puts it into a page, and ``python -m
skelarm_ros.nodes.params.docs`` rewrites every page of a clone. test/test_params.py
fails when a page's table differs from its class.

This module imports neither rclpy nor numpy.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skelarm_ros.nodes.params.controller import ControllerParams
from skelarm_ros.nodes.params.fields import BOOL, DOUBLE, INTEGER, STRING, Declaration, declarations
from skelarm_ros.nodes.params.force_replay import ForceReplayParams
from skelarm_ros.nodes.params.recorder import RecorderParams
from skelarm_ros.nodes.params.simulator import SimulatorParams

if TYPE_CHECKING:
    from collections.abc import Sequence

PAGES: dict[str, tuple[type, str]] = {
    "simulator": (SimulatorParams, "docs/simulator.md"),
    "controller": (ControllerParams, "docs/controller.md"),
    "force_replay": (ForceReplayParams, "docs/force_replay.md"),
    "recorder": (RecorderParams, "docs/bags.md"),
}
"""Each node's parameter class and the page that tables it."""

HEADER = "| name | type, default | live | meaning |\n|---|---|---|---|"


def begin_marker(node: str) -> str:
    """Return the line before a node's table."""
    module = PAGES[node][0].__module__.replace(".", "/")
    return (
        f"<!-- parameters of {node}: made from {module}.py by `python -m skelarm_ros.nodes.params.docs`; "
        "edit them there -->"
    )


def end_marker(node: str) -> str:
    """Return the line after a node's table."""
    return f"<!-- end of the parameters of {node} -->"


def table(params: type) -> str:
    """Return the Markdown table of a parameter class: one row per parameter, in its order."""
    return "\n".join([HEADER, *(_row(declaration) for declaration in declarations(params))])


def _row(declaration: Declaration) -> str:
    spec = declaration.spec
    meaning = spec.description + (f". {spec.details}" if spec.details else "")
    live = "read-only" if declaration.read_only else "live"
    cells = (f"`{declaration.name}`", f"{_kind(declaration)}, {_default(declaration)}", live, meaning)
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _kind(declaration: Declaration) -> str:
    spec = declaration.spec
    if spec.choices:
        return f"{declaration.kind} (" + " or ".join(f"`{choice}`" for choice in spec.choices) + ")"
    if declaration.kind == INTEGER and spec.low is not None:
        bound = f"{spec.low:g} to {spec.high:g}" if spec.high is not None else f"{spec.low:g} or more"
        return f"{declaration.kind} ({bound})"
    return declaration.kind


def _default(declaration: Declaration) -> str:
    value: Any = declaration.default
    if declaration.is_array:
        return f"`[{', '.join(str(item) for item in value)}]`" if value else "empty"
    if declaration.kind == BOOL:
        return "`true`" if value else "`false`"
    if declaration.kind == STRING and not value:
        return '`""`'
    return f"`{value!r}`" if declaration.kind == DOUBLE else f"`{value}`"


def rewritten(text: str, node: str) -> str:
    """Return a page's text with ``node``'s table made anew between its markers.

    Raises
    ------
    ValueError
        If the page lacks the markers (one sentence naming them).
    """
    begin, end = begin_marker(node), end_marker(node)
    pattern = re.compile(rf"^{re.escape(begin)}\n.*?^{re.escape(end)}$", re.DOTALL | re.MULTILINE)
    if not pattern.search(text):
        msg = f"the page has no table of {node}'s parameters; put the lines '{begin}' and '{end}' where it goes"
        raise ValueError(msg)
    return pattern.sub(lambda _match: f"{begin}\n{table(PAGES[node][0])}\n{end}", text, count=1)


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite the parameter tables of every node's page in a clone (the current folder by default)."""
    parser = argparse.ArgumentParser(
        prog="python -m skelarm_ros.nodes.params.docs",
        description="Make the docs' parameter tables from the nodes' parameter classes.",
    )
    parser.add_argument("--root", type=Path, default=Path(), help="the clone's folder (default: the current one)")
    root = parser.parse_args(argv).root
    for node, (_, page) in PAGES.items():
        path = root / page
        try:
            text = path.read_text(encoding="utf-8")
            new = rewritten(text, node)
        except (OSError, ValueError) as error:
            print(f"{parser.prog}: error: {path}: {error}", file=sys.stderr)
            return 1
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"rewrote the table of {node}'s parameters in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
