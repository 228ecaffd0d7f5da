# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""How this package imports skelarm: every name on demand, Qt only when a GUI name is used, SciPy when called.

``skelarm/__init__.py`` imports its Qt canvas, simulator window and widgets with
everything else, so a plain ``import skelarm`` needs the GUI libraries (OpenGL, EGL,
X11, xkbcommon, fontconfig) that a robot's computer or a ROS 2 base image does not
have, and costs every process Qt's memory. :func:`install` puts a ``skelarm``
package in ``sys.modules`` that runs skelarm's own ``__init__`` with each of its
``from .module import name, ...`` lines turned into names that import their module
the first time they are used. So ``skelarm.Skeleton`` loads ``skelarm.skeleton``
(numpy only), ``skelarm.run_scenario`` the scenario parsers and SciPy, and only
``skelarm.SkelarmViewer`` (and the like) loads Qt. Nothing installed is changed: the
package's files are read, never written. On a machine with the GUI libraries every
name still works as before; only when each module loads differs.

skelarm's modules import two SciPy functions when they load (``solve_ivp`` for its
offline simulation, ``minimize`` for MPC), which would make every process that reads
a scenario or builds a controller load SciPy (about 50 MB). :func:`install` also
makes skelarm's modules import such names as stand-ins that load their SciPy module
on the first call: a node that never runs MPC never loads SciPy. Only the modules
that import from SciPy are compiled from their source this way (in memory; no
cached bytecode is written); the others load as usual.

``skelarm_ros/__init__.py`` calls :func:`install`, so it is in place before any
module of this package, or a test, imports skelarm. A process that imported skelarm
itself first keeps the package as it imported it.

What this relies on in skelarm's layout is checked by ``test/test_headless.py``:
``__init__.py`` holds only relative ``from .module import ...`` lines, function
definitions, assignments and its docstring, and the modules in :data:`GUI_MODULES`
are the only ones that import a Qt binding, and every name a skelarm module imports
from SciPy when it loads is a function it only calls. A skelarm release that changes
any of these fails that test, naming what moved.

This module imports only the standard library.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

PACKAGE = "skelarm"
GUI_MODULES = frozenset({"canvas", "simulator", "widgets"})
"""skelarm's modules that import Qt (PyQt6, qtawesome): loaded only when one of their names is used."""
_RUN_AS_WRITTEN = (ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign, ast.Expr)
"""Statements of skelarm's ``__init__`` that run as written (its docstring, ``__all__``, small functions)."""
DEFERRED = ("scipy",)
"""Packages whose names skelarm's modules import when they load, made to load on the first call instead."""
GUI_BINDINGS = ("PyQt6", "PyQt5", "PySide6", "PySide2", "qtpy", "qtawesome")
"""Top-level packages whose import needs the GUI libraries."""


class LayoutError(ImportError):
    """skelarm's ``__init__.py`` holds a statement this module does not know how to run lazily."""


def install() -> ModuleType | None:
    """Put the on-demand ``skelarm`` package in ``sys.modules`` (once; a skelarm already imported stays).

    Returns
    -------
    ModuleType | None
        The ``skelarm`` package now in ``sys.modules``, or ``None`` when skelarm is
        not installed (a later ``import skelarm`` then fails as usual).

    Raises
    ------
    LayoutError
        If skelarm's ``__init__.py`` holds a statement other than relative
        ``from .module import ...`` lines, definitions and assignments.
    """
    loaded = sys.modules.get(PACKAGE)
    if loaded is not None:
        return loaded
    if not any(isinstance(finder, _DeferringFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _DeferringFinder())
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None or spec.submodule_search_locations is None:
        return None
    package = importlib.util.module_from_spec(spec)  # __path__, __file__, __spec__; not run
    lazy, body = _layout(spec.origin)
    # A module's own __getattr__ and __dir__ (PEP 562): the names skelarm's __init__ would have imported.
    vars(package).update(__getattr__=_resolver(package, lazy), __dir__=lambda: sorted({*vars(package), *lazy}))
    sys.modules[PACKAGE] = package
    try:
        exec(compile(ast.Module(body=body, type_ignores=[]), spec.origin, "exec"), package.__dict__)
    except BaseException:
        del sys.modules[PACKAGE]
        raise
    return package


def _resolver(package: ModuleType, lazy: dict[str, tuple[str, str]]) -> Any:
    """Return the package's ``__getattr__``: a lazy name imports its module, then stays as an attribute."""

    def resolve(name: str) -> Any:
        where = lazy.get(name)
        if where is None:
            msg = f"module {PACKAGE!r} has no attribute {name!r}"
            raise AttributeError(msg)
        module, attribute = where
        value = getattr(importlib.import_module(f"{PACKAGE}.{module}"), attribute)
        setattr(package, name, value)
        return value

    return resolve


def _layout(origin: str) -> tuple[dict[str, tuple[str, str]], list[ast.stmt]]:
    """Read skelarm's ``__init__.py``: the names it imports (name -> module, attribute) and the rest of its body.

    Raises
    ------
    LayoutError
        For a statement that is neither a relative ``from .module import ...``, a
        ``__future__`` import, a definition, an assignment nor an expression.
    """
    with open(origin, encoding="utf-8") as file:
        tree = ast.parse(file.read(), origin)
    lazy: dict[str, tuple[str, str]] = {}
    body: list[ast.stmt] = []
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom) and statement.level == 1 and statement.module:
            lazy.update({alias.asname or alias.name: (statement.module, alias.name) for alias in statement.names})
        elif isinstance(statement, _RUN_AS_WRITTEN) or (
            isinstance(statement, ast.ImportFrom) and statement.module == "__future__"
        ):
            body.append(statement)
        else:
            msg = (
                f"{origin}:{statement.lineno} is a {type(statement).__name__} statement, which "
                "skelarm_ros.headless cannot run without running all of skelarm's __init__; update "
                "skelarm_ros.headless for this skelarm release"
            )
            raise LayoutError(msg)
    return lazy, body


def lazy_names() -> dict[str, str]:
    """Return each name skelarm's ``__init__`` imports, with the module it comes from (for the layout test)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        return {}
    lazy, _ = _layout(spec.origin)
    return {name: module for name, (module, _attribute) in lazy.items()}


def deferred(module: str, name: str) -> Callable[..., Any]:
    """Return a stand-in for the function ``module.name`` that imports ``module`` on its first call.

    Parameters
    ----------
    module : str
        The module holding the function (``scipy.optimize``).
    name : str
        The function's name (``minimize``).

    Returns
    -------
    Callable[..., Any]
        Calls ``module.name`` with the same arguments and returns what it returns.
    """

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``{module}.{name}``, imported on the first call (skelarm_ros.headless)."
    return call


def deferred_imports(tree: ast.Module) -> list[tuple[int, str, str, str]]:
    """Return the top-level ``from <deferred package>... import name`` lines of a module.

    Returns
    -------
    list[tuple[int, str, str, str]]
        ``(line, module, name, bound as)`` for each name, in order.
    """
    return [
        (statement.lineno, statement.module, alias.name, alias.asname or alias.name)
        for statement in tree.body
        if isinstance(statement, ast.ImportFrom)
        and statement.level == 0
        and statement.module
        and statement.module.split(".")[0] in DEFERRED
        for alias in statement.names
    ]


def _defer(tree: ast.Module) -> ast.Module:
    """Turn each top-level import from a :data:`DEFERRED` package into ``name = deferred(module, name)``."""
    body: list[ast.stmt] = []
    for statement in tree.body:
        found = deferred_imports(ast.Module(body=[statement], type_ignores=[]))
        if not found:
            body.append(statement)
            continue
        for _line, module, name, bound in found:
            call = ast.parse(
                f"{bound} = __import__({__name__!r}, fromlist=['deferred']).deferred({module!r}, {name!r})"
            )
            body.extend(ast.copy_location(node, statement) for node in call.body)
    return ast.fix_missing_locations(ast.Module(body=body, type_ignores=tree.type_ignores))


class _DeferringLoader(importlib.machinery.SourceFileLoader):
    """Loads a skelarm module from its source with :func:`_defer` applied; never reads or writes cached bytecode."""

    def get_code(self, fullname: str) -> Any:
        path = self.get_filename(fullname)
        tree = ast.parse(self.get_data(path), path)
        return compile(_defer(tree), path, "exec", dont_inherit=True)


class _DeferringFinder(importlib.abc.MetaPathFinder):
    """Finds skelarm's modules as usual, but hands those that import from SciPy to :class:`_DeferringLoader`."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(f"{PACKAGE}."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.origin is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return spec
        with open(spec.origin, "rb") as file:
            source = file.read()
        if not any(f"from {package}".encode() in source for package in DEFERRED):
            return spec
        spec.loader = _DeferringLoader(fullname, spec.origin)
        return spec


def gui_loaded() -> list[str]:
    """Return the GUI bindings (:data:`GUI_BINDINGS`) this process has imported, sorted."""
    return sorted(name for name in GUI_BINDINGS if name in sys.modules)
