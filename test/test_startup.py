"""How executables take signals around their program (skelarm_ros.startup), in this process and as programs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from skelarm_ros import startup


@pytest.fixture(autouse=True)
def _signals_back() -> None:
    """Put this process's SIGINT and SIGTERM handlers back after each test."""
    previous = {signum: signal.getsignal(signum) for signum in startup.STOP_SIGNALS}
    yield
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def test_a_signal_ends_a_tool_with_130_and_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    def tool() -> int:
        os.kill(os.getpid(), signal.SIGTERM)
        return 0

    assert startup.run_tool(tool, "tool") == startup.TOOL_INTERRUPTED
    assert capsys.readouterr().err == "tool: stopped by a signal before it finished\n"


def test_a_second_signal_does_not_break_into_the_clean_up_the_first_started() -> None:
    cleaned = []

    def tool() -> int:
        try:
            os.kill(os.getpid(), signal.SIGINT)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # a launch's SIGTERM after its SIGINT
            cleaned.append(True)
        return 0

    assert startup.run_tool(tool, "tool") == startup.TOOL_INTERRUPTED
    assert cleaned == [True]


def test_a_finished_tool_keeps_its_exit_code_whatever_comes_after() -> None:
    assert startup.run_tool(lambda: 3, "tool") == 3
    os.kill(os.getpid(), signal.SIGINT)  # changes nothing now
    os.kill(os.getpid(), signal.SIGTERM)


def test_in_a_test_process_the_handlers_before_come_back() -> None:
    before = signal.getsignal(signal.SIGINT)
    with startup.quiet_start(startup.TOOL_INTERRUPTED):
        assert signal.getsignal(signal.SIGINT) is not before
    assert signal.getsignal(signal.SIGINT) is before


def program(body: str, folder: Path) -> subprocess.CompletedProcess[str]:
    """Run ``body`` as the package's executables run (``python -m``, its program, then the quiet exit)."""
    script = textwrap.dedent(
        """
        import atexit, os, signal, sys
        from skelarm_ros import startup

        def tool():
        {body}

        startup.console_program()
        sys.exit(startup.exit_quietly(startup.run_tool(tool, "tool")))
        """
    ).format(body=textwrap.indent(textwrap.dedent(body), "    "))
    (folder / "a_tool.py").write_text(script)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), *sys.path])}
    return subprocess.run(
        [sys.executable, "-m", "a_tool"], cwd=folder, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_signals_in_the_interpreters_teardown_leave_the_exit_code(tmp_path: Path) -> None:
    done = program(
        """
        def late():
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGTERM)
        atexit.register(late)
        return 0
        """,
        tmp_path,
    )
    assert (done.returncode, done.stderr) == (0, "")


def test_an_interrupt_raised_in_a_string_exec_still_ends_with_130(tmp_path: Path) -> None:
    # under -m, Python notes an interrupt that left exec'd source as unhandled and would end the process by SIGINT
    done = program(
        """
        exec("import os, signal; os.kill(os.getpid(), signal.SIGINT)", {})
        return 0
        """,
        tmp_path,
    )
    assert (done.returncode, done.stderr) == (130, "tool: stopped by a signal before it finished\n")
