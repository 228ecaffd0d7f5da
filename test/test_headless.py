"""skelarm imported without Qt, and SciPy loaded only when called: what skelarm_ros.headless relies on.

If a skelarm release moves what this package relies on (a statement in its ``__init__``
that cannot run lazily, a new module that imports Qt, a SciPy name used other than by a
call), a test here fails and names it.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from skelarm_ros import headless

SKELARM = Path(importlib.util.find_spec("skelarm").origin).parent  # type: ignore[arg-type,union-attr]


def run_python(code: str) -> str:
    """Run ``code`` in a fresh interpreter of this environment and return what it printed."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


@functools.cache
def qt_problem() -> str | None:
    """Why Qt does not load in this environment (no GUI libraries), or ``None`` when it does."""
    done = subprocess.run(
        [sys.executable, "-c", "import PyQt6.QtWidgets"], capture_output=True, text=True, timeout=120, check=False
    )
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["no output"])[-1]


def need_qt() -> None:
    """Skip the calling test where skelarm's own ``__init__`` cannot import (Qt does not load)."""
    problem = qt_problem()
    if problem is not None:
        pytest.skip(f"skelarm's own import needs Qt, which does not load here: {problem}")


def module_tree(name: str) -> ast.Module:
    return ast.parse((SKELARM / f"{name}.py").read_text(encoding="utf-8"))


def imported_top_levels(tree: ast.Module) -> set[str]:
    """Every package or skelarm module a module's source imports, at any depth of its code."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(f"skelarm.{node.module}" if node.level else node.module)
    return found


def skelarm_modules() -> list[str]:
    return sorted(path.stem for path in SKELARM.glob("*.py") if path.stem != "__init__")


def test_the_gui_modules_are_exactly_those_that_import_qt() -> None:
    importing: dict[str, set[str]] = {name: imported_top_levels(module_tree(name)) for name in skelarm_modules()}
    gui = {
        name
        for name, imports in importing.items()
        if any(module.split(".")[0] in headless.GUI_BINDINGS for module in imports)
    }
    grown = True
    while grown:  # a module importing a GUI module needs Qt too
        more = {name for name, imports in importing.items() if any(f"skelarm.{g}" in imports for g in gui)}
        grown = not more <= gui
        gui |= more
    assert gui == set(headless.GUI_MODULES), (
        f"skelarm's modules that need Qt are now {sorted(gui)}, not {sorted(headless.GUI_MODULES)}: "
        "update skelarm_ros.headless.GUI_MODULES"
    )


def test_skelarm_init_holds_only_what_runs_lazily() -> None:
    names = headless.lazy_names()  # raises LayoutError naming the statement it cannot run
    tree = ast.parse((SKELARM / "__init__.py").read_text(encoding="utf-8"))
    exported = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets)
    )
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)}
    assert set(exported) <= set(names) | defined, sorted(set(exported) - set(names) - defined)
    assert {module for module in names.values()} <= set(skelarm_modules())


def test_every_skelarm_name_resolves_without_qt_or_scipy_until_used() -> None:
    out = run_python(
        "import sys, skelarm_ros, skelarm\n"
        "from skelarm_ros import headless\n"
        "gui = {n for n, m in headless.lazy_names().items() if m in headless.GUI_MODULES}\n"
        "for name in skelarm.__all__:\n"
        "    if name not in gui:\n"
        "        getattr(skelarm, name)\n"
        "print(headless.gui_loaded(), sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))\n"
        "print(sorted(set(skelarm.__all__) - set(dir(skelarm))))\n"
    )
    assert out.splitlines() == ["[] []", "[]"]


def test_a_gui_name_still_loads_qt_where_the_gui_libraries_are() -> None:
    need_qt()
    out = run_python("import skelarm_ros, skelarm; print(skelarm.SkelarmViewer.__module__)")
    assert out.strip() == "skelarm.canvas"


def test_scipy_names_skelarm_imports_are_functions_it_only_calls() -> None:
    seen = []
    for name in skelarm_modules():
        tree = module_tree(name)
        for line, module, attribute, bound in headless.deferred_imports(tree):
            seen.append(f"{name}:{module}.{attribute}")
            target = getattr(importlib.import_module(module), attribute)
            assert callable(target) and not isinstance(target, type), f"skelarm/{name}.py:{line} imports a non-function"
            calls = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
            uses = [node for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == bound]
            assert uses and all(id(use) in calls for use in uses), (
                f"skelarm/{name}.py uses {bound} other than by calling it, so headless.deferred cannot stand in"
            )
    assert seen  # skelarm imports from SciPy when its modules load; if it stops, DEFERRED can go


def test_deferred_functions_give_what_scipy_gives() -> None:
    from scipy.integrate import solve_ivp

    stand_in = headless.deferred("scipy.integrate", "solve_ivp")
    got = stand_in(lambda _t, y: -y, (0.0, 1.0), [1.0], rtol=1e-9, atol=1e-12)
    want = solve_ivp(lambda _t, y: -y, (0.0, 1.0), [1.0], rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(got.y, want.y)
    assert stand_in.__name__ == "solve_ivp"


def test_a_scenario_runs_the_same_through_the_lazy_package_as_through_skelarm_itself(tmp_path: Path) -> None:
    # The bundled four-joint reach, one simulated second of it: the two ways of importing run the same steps.
    bundled = Path(__file__).resolve().parents[1] / "config" / "scenarios" / "reach_four_dof_robot.toml"
    text = bundled.read_text(encoding="utf-8")
    assert "\nduration = 5.0 " in text
    scenario = tmp_path / bundled.name
    scenario.write_text(text.replace("\nduration = 5.0 ", "\nduration = 1.0 "), encoding="utf-8")
    run = (
        "import numpy as np, sys, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "{first}import skelarm\n"
        f"log = skelarm.run_scenario(skelarm.load_scenario({str(scenario)!r}))\n"
        "np.save(sys.argv[1] if len(sys.argv) > 1 else {out!r}, log.channel('q'))\n"
        "print('PyQt6' in sys.modules)\n"
    )
    need_qt()
    lazy, full = tmp_path / "lazy.npy", tmp_path / "full.npy"
    assert run_python(run.format(first="import skelarm_ros\n", out=str(lazy))).strip() == "False"
    run_python(run.format(first="", out=str(full)))  # skelarm's own __init__, Qt and all
    np.testing.assert_array_equal(np.load(lazy), np.load(full))


def test_no_cached_bytecode_of_skelarm_is_written_or_changed() -> None:
    cached = [Path(importlib.util.cache_from_source(str(SKELARM / f"{name}.py"))) for name in skelarm_modules()]
    before = {path: path.read_bytes() for path in cached if path.exists()}
    run_python("import skelarm_ros, skelarm.dynamics, skelarm.mpc, skelarm.scenario")
    after = {path: path.read_bytes() for path in cached if path.exists()}
    assert after == before


def test_a_skelarm_imported_before_the_package_stays_as_it_was() -> None:
    need_qt()
    out = run_python(
        "import skelarm, sys\nfull = sys.modules['skelarm']\nimport skelarm_ros\nprint(sys.modules['skelarm'] is full)"
    )
    assert out.strip() == "True"
