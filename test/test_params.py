"""The nodes' parameter classes: declared once, tabled in the docs from the declarations, named by the launch."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import pytest

from skelarm_ros.cli.graph import describe
from skelarm_ros.nodes.params import docs
from skelarm_ros.nodes.params.fields import Names, ParameterError, choice, declarations, number, param

REPO = Path(__file__).resolve().parents[1]
PARAMS = {node: params for node, (params, _) in docs.PAGES.items()}


@pytest.mark.parametrize("node", list(docs.PAGES))
def test_the_docs_table_is_the_declarations(node: str) -> None:
    params, page = docs.PAGES[node]
    text = (REPO / page).read_text(encoding="utf-8")
    assert docs.rewritten(text, node) == text, (
        f"{page}'s table of {node}'s parameters differs from {params.__name__}; "
        "run `.venv/bin/python -m skelarm_ros.nodes.params.docs` to make it anew"
    )
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    for declaration in declarations(params):  # every parameter, with its type, default, live-ness and description
        (row,) = [line for line in rows if line.startswith(f"| `{declaration.name}` |")]
        assert declaration.kind in row and declaration.spec.description in row
        assert ("| read-only |" if declaration.read_only else "| live |") in row


def test_the_tables_say_types_defaults_and_live_changes() -> None:
    table = docs.table(PARAMS["simulator"]).splitlines()
    assert table[:2] == docs.HEADER.splitlines()
    assert "| `dt` | double, `0.0` | read-only | integration step; 0 takes the scenario's (s, >= 0)." in table[3]
    rows = {row.split(" | ")[0][3:-1]: row for row in table[2:]}
    assert "| string (`realtime` or `lockstep`), `realtime` |" in rows["mode"]
    assert "| double array, empty | live |" in rows["effort_limits"]
    assert "| int (0 to 99), `0` |" in rows["thread_priority"]
    assert "| bool, `true` |" in rows["publish_clock"]
    recorder = docs.table(PARAMS["recorder"])
    assert "`[joint_states, joint_commands, effort_controller/commands," in recorder
    assert "| int (1 or more), `16777216` |" in recorder


def test_a_page_without_the_markers_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="has no table of recorder's parameters; put the lines '<!-- parameters of"):
        docs.rewritten("# a page\n", "recorder")


def test_the_rewriter_writes_every_table_and_leaves_the_prose(tmp_path: Path) -> None:
    for _, page in docs.PAGES.values():
        (tmp_path / page).parent.mkdir(exist_ok=True)
        text = (REPO / page).read_text(encoding="utf-8")
        (tmp_path / page).write_text(text.replace("| `dt` |", "| `dt_old` |"), encoding="utf-8")
    assert docs.main(["--root", str(tmp_path)]) == 0
    for _, page in docs.PAGES.values():
        assert (tmp_path / page).read_text(encoding="utf-8") == (REPO / page).read_text(encoding="utf-8")


@pytest.mark.parametrize("node", list(PARAMS))
def test_every_parameter_is_declared_whole(node: str) -> None:
    params = PARAMS[node]
    found = declarations(params)
    assert [item.name for item in found] == [item.name for item in dataclasses.fields(params)]
    assert dataclasses.is_dataclass(params) and params.__dataclass_params__.frozen  # type: ignore[attr-defined]
    for item in found:
        assert item.spec.description and "\n" not in item.spec.description, item.name
        assert item.checked(item.default) == item.default, item.name  # the default passes its own check


def test_the_launch_names_only_declared_parameters(tmp_path: Path) -> None:
    push = tmp_path / "push.csv"
    push.write_text("t,fx,fy\n0,1,0\n1,0,0\n", encoding="utf-8")
    specs = describe({"mode": "lockstep", "force_source": str(push), "record": str(tmp_path / "bag")})
    specs += describe({"joint_names": "a,b", "command_joints": "b,a", "force_source": str(push)})
    ours = [spec for spec in specs if spec.package == "skelarm_ros" and spec.executable in PARAMS]
    assert {spec.executable for spec in ours} == set(PARAMS)
    for spec in ours:
        declared = {item.name for item in declarations(PARAMS[spec.executable])}
        assert set(spec.parameters) - {"use_sim_time"} <= declared, spec.executable


def test_names_come_from_the_class_and_a_misspelling_is_one_sentence() -> None:
    names = Names(PARAMS["simulator"])
    assert names.dt == "dt" and names.wait_for_wrench == "wait_for_wrench"
    with pytest.raises(
        AttributeError, match=r"^SimulatorParams has no parameter 'dtt'; its parameters are scenario, dt,"
    ):
        _ = names.dtt


def test_a_value_is_checked_with_the_sentence_that_names_the_parameter() -> None:
    (dt,) = [item for item in declarations(PARAMS["simulator"]) if item.name == "dt"]
    with pytest.raises(ParameterError, match=r"^parameter dt must be zero or a positive number \(s\), got -1$"):
        dt.checked(-1)
    (mode,) = [item for item in declarations(PARAMS["simulator"]) if item.name == "mode"]
    with pytest.raises(ParameterError, match=r"^parameter mode 'Lockstep' is not one of realtime, lockstep$"):
        mode.checked("Lockstep")
    (names,) = [item for item in declarations(PARAMS["simulator"]) if item.name == "joint_names"]
    assert names.checked(None) == () and names.checked(["a", "b"]) == ("a", "b")


@dataclass(frozen=True)
class Untyped:
    dt: float = 0.0


@dataclass(frozen=True)
class BadChoice:
    mode: Annotated[str, choice(("a", "b"), "a mode")] = "c"


@dataclass(frozen=True)
class NoDefault:
    dt: Annotated[float, number("a step")]


@dataclass(frozen=True)
class Listed:
    names: Annotated[list[str], param("names")] = dataclasses.field(default_factory=list)


@pytest.mark.parametrize(
    ("params", "words"),
    [
        (Untyped, "Untyped.dt must be Annotated[<type>, <Spec>] with a default"),
        (BadChoice, "BadChoice.mode defaults to 'c', which is not one of ('a', 'b')"),
        (NoDefault, "NoDefault.dt must be Annotated[<type>, <Spec>] with a default"),
        (Listed, "Listed.names must be Annotated[<type>, <Spec>] with a default"),
    ],
)
def test_a_field_that_is_not_a_parameter_is_refused(params: type, words: str) -> None:
    with pytest.raises(TypeError, match=words.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        declarations(params)
