"""The package's size rules: no module over 800 lines, no function over 100 lines of code.

Lines of code leave out blank lines, comments and the docstring. A node module's own, smaller limit is
test_simulator_node.py's.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*(ROOT / "skelarm_ros").rglob("*.py"), *(ROOT / "launch").glob("*.py"), ROOT / "setup.py"])
MODULE_LINES = 800
FUNCTION_CODE_LINES = 100


def code_lines(lines: list[str], function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of code of ``function``: neither blank, nor a comment, nor its docstring."""
    skipped: set[int] = set()
    first = function.body[0]
    if ast.get_docstring(function, clean=False) is not None and first.end_lineno is not None:
        skipped = set(range(first.lineno, first.end_lineno + 1))
    end = function.end_lineno or function.lineno
    return sum(
        1
        for number in range(function.lineno, end + 1)
        if number not in skipped and lines[number - 1].strip() and not lines[number - 1].strip().startswith("#")
    )


def long_functions(source: str) -> list[tuple[str, int]]:
    """``(name, lines of code)`` of each function in ``source`` over the limit."""
    lines = source.splitlines()
    return [
        (node.name, code_lines(lines, node))
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and code_lines(lines, node) > FUNCTION_CODE_LINES
    ]


@pytest.mark.parametrize("path", SOURCES, ids=[str(path.relative_to(ROOT)) for path in SOURCES])
def test_modules_and_functions_stay_small(path: Path) -> None:
    source = path.read_text()
    lines = len(source.splitlines())
    assert lines <= MODULE_LINES, f"{path.relative_to(ROOT)} has {lines} lines; split it along what it does"
    assert long_functions(source) == [], f"{path.relative_to(ROOT)}: functions over {FUNCTION_CODE_LINES} lines"


def test_the_count_sees_a_long_function() -> None:
    # The def line and 100 statements: 101 lines of code; the docstring, the comment and the blank line not.
    body = "\n".join(f"    x{k} = {k}  # a step" for k in range(FUNCTION_CODE_LINES))
    source = f'def f():\n    """Doc.\n\n    More.\n    """\n\n    # a comment\n{body}\n'
    assert long_functions(source) == [("f", FUNCTION_CODE_LINES + 1)]
    shorter = "\n".join(source.splitlines()[:-1])
    assert long_functions(shorter) == []
