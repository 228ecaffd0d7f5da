"""How every tool ends: outputs checked first, notes once each, one error line, argparse's usage, exit codes."""

from __future__ import annotations

import io
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from skelarm_ros import tool


class BadInput(ValueError):
    """What a tool's work raises on input a user can fix."""


def run(work, argv: list[str], *, outputs=None, errors=(BadInput,)) -> tuple[int, str, str]:
    parser = tool.parser("some_tool", "A tool for the tests.")
    parser.add_argument("-o", "--output", default="out.txt")
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = tool.run_main(parser, argv, work, outputs=outputs, errors=errors)
    return code, out.getvalue(), err.getvalue()


def test_the_work_s_own_warnings_and_its_notes_are_said_once_each_as_notes_then_its_report() -> None:
    def work(_args) -> tool.Done:
        warnings.warn("the first joint state has no names", stacklevel=1)
        warnings.warn("the first joint state has no names", stacklevel=1)  # the same sentence: said once
        warnings.warn("a library's deprecation", DeprecationWarning, stacklevel=1)  # not the user's concern
        return tool.Done(report=["wrote out.txt", "3 frames"], notes=["no skeleton embedded", "no skeleton embedded"])

    code, out, err = run(work, [])
    assert code == tool.DONE == 0
    assert err.splitlines() == [
        "some_tool: note: the first joint state has no names",
        "some_tool: note: no skeleton embedded",
    ]
    assert out == "wrote out.txt\n3 frames\n"


def test_an_expected_error_is_one_line_and_nothing_else_is_said() -> None:
    def work(_args) -> tool.Done:
        warnings.warn("a note that no longer matters", stacklevel=1)
        print("half a report")  # what the work printed itself stays printed
        raise BadInput("bag 'x' does not exist; pass a rosbag2 folder")

    code, out, err = run(work, [])
    assert code == tool.FAILED == 1
    assert err == "some_tool: error: bag 'x' does not exist; pass a rosbag2 folder\n"
    assert out == "half a report\n"


def test_a_result_refused_once_made_shows_its_report_and_notes_then_one_error_line() -> None:
    def work(_args) -> tool.Done:
        warnings.warn("a joint's offset is left out", stacklevel=1)
        raise tool.Refused("the twin is not better than its prior (3 % against 2 %)", ["held-out: twin 3 %, prior 2 %"])

    code, out, err = run(work, [])
    assert code == tool.FAILED == 1
    assert out == "held-out: twin 3 %, prior 2 %\n"
    assert err.splitlines() == [
        "some_tool: note: a joint's offset is left out",
        "some_tool: error: the twin is not better than its prior (3 % against 2 %)",
    ]


def test_an_error_the_tool_does_not_expect_is_not_hidden() -> None:
    def work(_args) -> tool.Done:
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError, match="a bug"):
        run(work, [])


def test_every_output_is_checked_before_the_work_starts_and_force_lets_it_replace(tmp_path: Path) -> None:
    there = tmp_path / "there.txt"
    there.write_text("old")
    started = []

    def work(args) -> tool.Done:
        started.append(args.output)
        return tool.Done()

    def outputs(args):
        return [args.output, there]

    code, _, err = run(work, ["-o", str(tmp_path / "new.txt")], outputs=outputs)
    assert (code, started) == (1, [])
    assert err == f"some_tool: error: '{there}' exists already; choose another path, or pass --force to replace it\n"
    code, _, err = run(work, ["-o", str(tmp_path / "nowhere" / "new.txt")], outputs=outputs)
    assert (code, started) == (1, [])
    assert err.startswith("some_tool: error: the folder ") and "does not exist; create it" in err
    code, _, err = run(work, ["-o", str(tmp_path / "new.txt"), "--force"], outputs=outputs)
    assert (code, err, started) == (0, "", [str(tmp_path / "new.txt")])


def test_a_command_line_the_parser_refuses_is_argparse_s_usage_and_exit_2_and_help_exits_0() -> None:
    def work(_args) -> tool.Done:
        raise AssertionError("the work must not start")

    code, out, err = run(work, ["--no-such-option"])
    assert (code, out) == (tool.USAGE, "")
    assert err.startswith("usage: some_tool ") and "some_tool: error: unrecognized arguments: --no-such-option" in err
    code, out, err = run(work, ["--help"])
    assert (code, err) == (0, "")
    assert "--force" in out and "A tool for the tests." in out
