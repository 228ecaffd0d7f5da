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


def installed(folder: Path, name: str) -> Path:
    """Write the executable ``name`` as a ROS 2 build installs it (for this interpreter) and return its path."""
    path = folder / name
    path.write_text(startup.installed_script(name, f"#!{sys.executable}\n"))
    path.chmod(0o755)
    return path


def run_installed(path: Path, *args: str, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if pythonpath is not None:  # as sourcing a ROS 2 setup file puts folders first on the path
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath), env.get("PYTHONPATH")]))
    return subprocess.run(
        [str(path), *args], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize("name", sorted(startup.EXECUTABLES))
def test_an_installed_script_takes_the_signals_before_anything_runs(name: str) -> None:
    text = startup.installed_script(name, "#!/usr/bin/python3\n")
    code = startup.NODE_STOPPED if name in startup.NODES else startup.TOOL_INTERRUPTED
    # Python starts it without its site step, so no .pth file or library runs before the handlers are in place.
    assert text.startswith("#!/usr/bin/python3 -S\n")
    assert "importlib" not in text
    handler = f"lambda _signum, _frame: posix._exit({code}))"
    taken = [text.index(f"_signal.signal(_signal.{signame}, {handler}") for signame in ("SIGINT", "SIGTERM")]
    assert max(taken) < text.index("site.main()") < text.index(f"from skelarm_ros.startup import {name}\n")
    assert text.endswith(f"sys.exit({name}())\n")


def test_an_interpreter_line_with_options_is_kept_and_the_script_runs_the_site_step_itself_only_without_it() -> None:
    text = startup.installed_script("simulator", "#!/usr/bin/env python3\n")
    assert text.startswith("#!/usr/bin/env python3\n")  # `env` takes one argument on Linux: no -S added
    assert "if sys.flags.no_site:\n    import site\n\n    site.main()\n" in text
    with pytest.raises(ValueError, match="unknown executable 'sim'; the executables are simulator, controller, "):
        startup.installed_script("sim", "#!/usr/bin/python3")


def test_the_interpreter_line_starts_python_through_env_with_the_stop_signals_blocked_where_env_can() -> None:
    env = "/usr/bin/env"
    blocked = f"#!{env} -S --block-signal=INT,TERM"
    assert startup.interpreter_line("#!/usr/bin/python3\n", env=env) == f"{blocked} /usr/bin/python3 -S"
    assert startup.interpreter_line("#!/usr/bin/env python3", env=env) == f"{blocked} python3 -S"
    assert startup.interpreter_line("#!/usr/bin/python3 -E", env=env) == "#!/usr/bin/python3 -E"  # its own options
    long_python = "/" + "p" * 250
    assert startup.interpreter_line(f"#!{long_python}", env=env) == f"#!{long_python} -S"  # Linux would cut it
    text = startup.installed_script("controller", "#!/usr/bin/python3", env=env)
    assert text.startswith(f"{blocked} /usr/bin/python3 -S\n")


def test_env_is_asked_whether_it_can_block_signals() -> None:
    assert not startup.env_blocks_signals("/bin/false")
    assert not startup.env_blocks_signals("/nonexistent/env")


@pytest.mark.skipif(
    not startup.env_blocks_signals(),
    reason=f"{startup.ENV} cannot start a program with signals blocked here (GNU coreutils 8.31 or later can)",
)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize(("name", "code"), [("simulator", 0), ("bag_to_log", 130)])
def test_a_signal_before_python_starts_waits_for_the_start_up_which_ends_the_executable_quietly(
    tmp_path: Path, name: str, code: int, signum: signal.Signals
) -> None:
    # A stand-in interpreter signals itself and then becomes Python: the signal is there through every instant
    # of Python's own start-up, which answers it with `KeyboardInterrupt` or `Fatal Python error:
    # init_sys_streams` (a launch's Ctrl-C or SIGTERM to a node it has just spawned).
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nkill -{signum.name.removeprefix("SIG")} $$\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    path = tmp_path / name
    path.write_text(startup.installed_script(name, f"#!{python}\n", env=startup.ENV))
    path.chmod(0o755)
    done = run_installed(path)
    assert (done.returncode, done.stdout, done.stderr) == (code, "", "")


@pytest.mark.parametrize(("name", "code"), [("simulator", 0), ("bag_to_log", 130)])
def test_a_signal_in_pythons_site_step_ends_an_installed_executable_at_once_and_quietly(
    tmp_path: Path, name: str, code: int
) -> None:
    # A sitecustomize module runs at the end of the site step, after every .pth file: a Ctrl-C arriving then.
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGINT)\n")
    done = run_installed(installed(tmp_path, name), pythonpath=site)
    assert (done.returncode, done.stdout, done.stderr) == (code, "", "")


def test_an_installed_tool_runs_with_the_site_folders_and_its_arguments(tmp_path: Path) -> None:
    done = run_installed(installed(tmp_path, "bag_to_log"), "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: bag_to_log ")


def test_numpy_found_is_the_numpy_that_imports() -> None:
    import numpy

    assert startup.numpy_found() == (numpy.__version__, str(Path(numpy.__file__).parent))
    assert startup.numpy_refusal() is None


def test_numpy_found_takes_no_version_where_the_metadata_disagrees(tmp_path: Path, monkeypatch) -> None:
    for entry in ("numpy", "numpy-1.26.4.dist-info", "numpy-2.2.4.dist-info"):  # a stale folder beside
        (tmp_path / entry).mkdir()
    (tmp_path / "numpy" / "__init__.py").touch()
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "numpy", raising=False)
    assert startup.numpy_found() is None
    (tmp_path / "numpy-2.2.4.dist-info").rmdir()
    assert startup.numpy_found() == ("1.26.4", str(tmp_path / "numpy"))


def test_the_numpy_needed_is_skelarms_requirement() -> None:
    import importlib.metadata
    import re

    (wanted,) = [r for r in importlib.metadata.requires("skelarm") or [] if re.match(r"numpy\b", r)]
    assert re.fullmatch(r"numpy>=(\d+)(\.\d+)*", wanted.replace(" ", "")), wanted
    assert int(wanted.split(">=")[1].split(".")[0]) == startup.NUMPY_NEEDED


@pytest.mark.parametrize("metadata", ["numpy-1.26.4.egg-info", "numpy-1.26.4.dist-info"])
def test_a_numpy_older_than_2_is_refused_in_one_sentence_before_it_is_imported(tmp_path: Path, metadata: str) -> None:
    # Ubuntu 24.04's numpy, found first: it would fail inside skelarm's import; the stand-in fails if imported.
    old = tmp_path / "old"
    (old / "numpy").mkdir(parents=True)
    (old / "numpy" / "__init__.py").write_text("raise ImportError('the stand-in numpy was imported')\n")
    (old / metadata).mkdir()
    done = run_installed(installed(tmp_path, "simulator"), pythonpath=old)
    assert done.returncode == 1, done.stderr
    assert done.stderr == (
        f"simulator: numpy 1.26.4 (in {old / 'numpy'}) is older than the numpy 2 skelarm needs; install numpy>=2 "
        f"where this Python finds it first ({sys.executable} -m pip install 'numpy>=2' in a virtual environment; "
        "a ROS 2 distribution's own numpy stays as it is, see the README)\n"
    )
