"""Every command block of the README and ``docs/`` runs as written, in order, on a fresh clone.

The convention the pages follow (the README's "Development" section says it too):

- A fenced block tagged ``bash`` holds commands a reader runs in the clone's folder, one
  after another: this test runs every one of them. Usage synopses and printed output are
  tagged ``text``; ``toml`` and ``python`` blocks are files and code. Every fence has a
  tag, so a new command block cannot slip by untested.
- An HTML comment on the line before a fence (not shown on the rendered page) changes
  that: ``<!-- docs-test: skip REASON -->`` leaves the block out and says why (two hosts
  at once, a bag of your own, ...); ``<!-- docs-test: file NAME -->`` on a ``toml`` block
  saves it as NAME in the page's folder, as the page asks the reader to;
  ``<!-- docs-test: same PAGE -->`` on a ``bash`` block that repeats commands of another page
  (the README's summary of a workflow ``docs/`` walks through) runs them once, there: every
  command of the block must be one of PAGE's, word for word (a fast test checks it).
- Some commands are not run here wherever they stand (:func:`not_run`, each with its
  reason): the quick start's own ``make`` targets and the test suite (CI runs them), the
  benchmarks (minutes of measuring: ``make bench``), ``export`` (a reader's shell
  settings: the commands keep this test's environment), and the commands of a ROS 2
  installation (``ros2``, ``colcon``, ``source install/setup.bash``, ``launch_test``),
  which run only where ``ros2`` is on ``PATH`` (and then not those that build or test a
  workspace, or need what the installation lacks).
- A command that runs until it is stopped (a realtime ``launch sim`` without
  ``duration``, a node, a lockstep simulator waiting for its controller, a paused or
  looping player) gets SIGINT in its process group, as Ctrl-C in a terminal, once it
  printed the line that shows it runs (:func:`runs_until_stopped`); a command ending in
  ``&`` gets SIGTERM (``kill %1``) at the end of its block, likewise once it runs. Every
  command must exit 0 and print no traceback.

How the pages run: each page in a scratch folder of its own that looks like the clone's
folder after the quick start: ``.venv`` links to this checkout's, ``config/`` is a copy of
it, ``demo_output/`` a copy of one ``skelarm-ros demo`` run (what ``make demo`` leaves),
and the files the pages have the reader save (``docs-test: file``) are there, as for a
reader who saved them. Each command runs in its own ``bash -c`` and process group, in
page order, so a later command finds what an earlier one wrote (the bag that
``bag_to_log`` converts). ``/tmp/`` in a command is mapped to
``tmp/`` in the page's folder, so the ``/tmp/run1`` of two pages collide neither with each
other nor with anything else on the machine. ``PATH`` holds no ``.venv/bin``: a command
spells out ``.venv/bin/skelarm-ros``, as a reader of a fresh clone must. The environment
is otherwise the test process's (its own ``ROS_DOMAIN_ID``, discovery on the local host,
``ROS_LOG_DIR``).
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from skelarm_ros.cli import COMMANDS
from skelarm_ros.startup import EXECUTABLES

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LANGUAGES = {"bash", "text", "toml", "python"}

FENCE = re.compile(r"^(?P<indent>\s*)```(?P<language>[^`]*)$")
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<kind>\S+)\s*(?P<value>.*?)\s*-->\s*$")
TRACEBACK = "Traceback (most recent call last)"

ONE_SHOT_TIMEOUT = 300.0  # wall seconds for a command that ends by itself (a 20 s lockstep run, identify)
READY_TIMEOUT = 90.0  # wall seconds for a long-running command to show that it runs, on a loaded machine
STOP_TIMEOUT = 30.0  # wall seconds for it to end after the signal

# What shows that a command which runs until stopped is running (a line of its output).
SIMULATOR_WAITS = r"lockstep: step 0 waits for"
SIMULATOR_STEPS = r"realtime: starting"
CONTROLLER_RUNS = r"waiting for a publisher on|commands/s|target reached"
GRAPH_RUNS = r"\[(?:[\w/]*/)?controller(?:-\d+)?\] .*(?:" + CONTROLLER_RUNS + ")"  # ros2 launch: [controller-1]
NODE_RUNS = {
    "controller": CONTROLLER_RUNS,
    "force_replay": r"replaying ",
    "recorder": r"recording into",
    "player": r"\[[PRW]\] bag time",
}

PROJECT_PROGRAMS = {"skelarm-ros", "python", "python3", "pytest", "ruff", "mypy", *EXECUTABLES}
"""Programs of the project's ``.venv``: a command names them as ``.venv/bin/<program>``."""
SHELL_STATE = {"cd", "export", "source", ".", "pushd", "popd", "alias"}
"""Commands that change the shell itself, which a command running in its own shell cannot carry over."""
ROS2_PROGRAMS = {"ros2", "colcon", "launch_test", "rviz2", "rosdep"}


@dataclass(frozen=True)
class Block:
    """A fenced block of a page: its language, text and the marker on the line before it."""

    page: Path
    line: int  # of the opening fence, from 1
    language: str
    text: str
    marker: tuple[str, str] | None


@dataclass(frozen=True)
class Command:
    """One command of a ``bash`` block: a line (continuations joined) and its words."""

    block: Block
    line: int
    text: str  # as written, comments kept, without a trailing ``&``
    words: tuple[str, ...]  # shell words, comments dropped, operators (``&&``, ``|``, ``>``) as words
    background: bool

    @property
    def where(self) -> str:
        return f"{self.block.page.relative_to(REPO)}:{self.line}"

    @property
    def simple(self) -> list[list[str]]:
        """The simple commands of the line (split at ``&&``, ``||``, ``;``, ``|``), leading ``NAME=value`` dropped."""
        parts: list[list[str]] = [[]]
        for word in self.words:
            if word in ("&&", "||", ";", "|", "&"):
                parts.append([])
            else:
                parts[-1].append(word)
        simple = []
        for part in parts:
            start = 0
            while start < len(part) and re.fullmatch(r"[A-Za-z_]\w*=.*", part[start]):
                start += 1
            if part[start:]:
                simple.append(part[start:])
        return simple


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a Markdown page, in order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    opening: tuple[int, str, str] | None = None  # line index, indent, language
    body: list[str] = []
    for index, line in enumerate(lines):
        fence = FENCE.match(line)
        if opening is None:
            if fence:
                opening = (index, fence["indent"], fence["language"].strip())
                body = []
            continue
        if fence and not fence["language"].strip():
            start, indent, language = opening
            marker = MARKER.match(lines[start - 1]) if start > 0 else None
            text = "\n".join(row[len(indent) :] if row.startswith(indent) else row for row in body)
            found.append(Block(page, start + 1, language, text, (marker["kind"], marker["value"]) if marker else None))
            opening = None
        else:
            body.append(line)
    assert opening is None, f"{page.relative_to(REPO)}:{opening[0] + 1}: a code block that is never closed"
    return found


def shell_words(text: str) -> tuple[str, ...]:
    """The words of a shell line as bash splits them (comments dropped, operators as words of their own)."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return tuple(lexer)


def commands(block: Block) -> list[Command]:
    """The commands of a ``bash`` block: one per line, ``\\`` continuations joined, comment lines left out."""
    found: list[Command] = []
    pending: list[str] = []
    first = 0
    for offset, row in enumerate(block.text.splitlines(), start=1):
        if not pending:
            first = offset
        if row.rstrip().endswith("\\"):
            pending.append(row.rstrip()[:-1])
            continue
        text = " ".join(part.strip() for part in [*pending, row]).strip()
        pending = []
        if not text or text.startswith("#"):
            continue
        words = shell_words(text)
        background = bool(words) and words[-1] == "&"
        if background:
            text = re.sub(r"(?<!&)&\s*(#.*)?$", r"\1", text).strip()
            words = words[:-1]
        found.append(Command(block, block.line + first, text, words, background))
    assert not pending, f"{block.page.relative_to(REPO)}:{block.line}: a command ends in a line continuation"
    return found


def program(words: list[str]) -> str:
    """A simple command's program, without the ``.venv/bin/`` it is spelled with."""
    return words[0].removeprefix(".venv/bin/")


def arguments(words: list[str]) -> dict[str, str]:
    """The ``name:=value`` words of a command (launch arguments and ``-p`` parameters alike)."""
    pairs = (word.split(":=", 1) for word in words if ":=" in word and not word.startswith("-"))
    return {name: value for name, value in pairs}


def seconds(value: str | None) -> float:
    try:
        return float(value) if value else 0.0
    except ValueError:
        return 0.0


@functools.cache
def ros2_available() -> bool:
    return shutil.which("ros2") is not None


@functools.cache
def ros2_verb_available(verb: str) -> bool:
    """Whether ``ros2 <verb>`` exists in this installation (``ros2 bag`` needs rosbag2, for one)."""
    result = subprocess.run(["ros2", verb, "--help"], capture_output=True, timeout=60, check=False)
    return result.returncode == 0


# ROS 2 programs run as modules of a Python (the workspace's virtual environment runs colcon so).
ROS2_MODULES = {"colcon": "colcon", "launch_testing.launch_test": "launch_test"}


def not_run(command: Command) -> str | None:
    """Why a command is not run here, or ``None`` when it is."""
    for words in command.simple:
        name = program(words)
        if name in ("python", "python3") and words[1:2] == ["-m"] and len(words) > 2 and words[2] in ROS2_MODULES:
            name = ROS2_MODULES[words[2]]
        if name == "make":
            target = words[1] if len(words) > 1 else ""
            if target == "bench":
                return "the benchmarks measure for minutes; `make bench` runs them"
            if target == "env":
                return "sets up .venv/, which this test runs from"
            return f"the quick start's own `make {target}`: CI runs it"
        if name in ("python", "python3") and words[1:3] == ["-m", "pytest"]:
            return "the test suite: `make test` and CI run it"
        if name == "skelarm-ros" and words[1:2] == ["bench"]:
            return "the benchmarks measure for minutes; `make bench` runs them"
        if name == "export":
            return "sets your shell's environment; the commands here keep the test's (domain, discovery, log folder)"
        if name in ROS2_PROGRAMS or (name in ("source", ".") and "install/" in " ".join(words[1:])):
            reason = ros2_not_run(name, words)
            if reason:
                return reason
    return None


def ros2_not_run(name: str, words: list[str]) -> str | None:
    """Why a command of a ROS 2 installation is not run here, or ``None`` when it is."""
    if not ros2_available():
        return "needs a ROS 2 distribution: `ros2` is not on PATH"
    if name == "colcon":
        return "builds or tests a colcon workspace: test/test_colcon.py and CI do that"
    if name in ("source", "."):
        return "the commands run in the environment this test was started in: source the workspace before pytest"
    if name == "launch_test":
        return "runs a launch test of a built workspace; `make test` runs test/test_launch_file.py so where it can"
    if name == "ros2" and len(words) > 1 and not ros2_verb_available(words[1]):
        return f"`ros2 {words[1]}` is not part of this ROS 2 installation"
    if "rviz:=true" in words and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return "rviz2 needs a display"
    return None


def runs_until_stopped(command: Command) -> str | None:
    """The output that shows a command runs, for one that runs until it is stopped; ``None`` if it ends by itself."""
    for words in command.simple:
        name = program(words)
        given = arguments(words)
        if name == "skelarm-ros" and words[1:2] == ["run"] and len(words) > 2:
            node = words[2]
        elif name == "ros2" and words[1:3] == ["run", "skelarm_ros"] and len(words) > 3:
            node = words[3]
        elif (name == "skelarm-ros" and words[1:2] == ["launch"]) or (name == "ros2" and words[1:2] == ["launch"]):
            if {"-s", "--show-args", "--dry-run", "-h", "--help"} & set(words):
                continue
            if given.get("replay") or seconds(given.get("duration")) > 0:
                continue  # a replay ends with its player; a duration ends the graph
            return GRAPH_RUNS if given.get("controller", "true") == "true" else SIMULATOR_STEPS
        elif name == "ros2" and words[1:3] == ["bag", "record"]:
            return r"Recording|Listening for topics"
        else:
            continue
        if node == "simulator":
            if given.get("mode") == "lockstep":
                return SIMULATOR_WAITS  # alone, it waits for its controller
            if seconds(given.get("duration")) > 0:
                continue
            return SIMULATOR_STEPS
        if node == "player":
            options = set(words[: words.index("--ros-args")] if "--ros-args" in words else words)
            if options & {"-l", "--loop", "-p", "--start-paused"}:
                return NODE_RUNS["player"]
            continue
        if node in NODE_RUNS:
            return NODE_RUNS[node]
    return None


# ---------------------------------------------------------------------------------------------
# What every page must follow (fast: reads the pages, runs nothing)


def problems(page: Path) -> list[str]:
    """What breaks the convention on a page, one sentence each."""
    found = []
    lines = page.read_text(encoding="utf-8").splitlines()
    fence_lines = {block.line - 1 for block in blocks(page)}
    for index, line in enumerate(lines):
        marker = MARKER.match(line)
        if marker and index + 1 not in fence_lines:
            found.append(f"{page.relative_to(REPO)}:{index + 1}: a docs-test marker must be the line before a fence")
        elif line.lstrip().startswith("<!--") and "docs-test" in line and not marker:
            where = f"{page.relative_to(REPO)}:{index + 1}"
            found.append(f"{where}: write a marker as <!-- docs-test: skip|file|same ... -->")
    for block in blocks(page):
        where = f"{page.relative_to(REPO)}:{block.line}"
        if block.language not in LANGUAGES:
            found.append(
                f"{where}: a code block tagged '{block.language}'; tag it bash (the docs test runs it), "
                f"or text, toml or python (it does not)"
            )
        if block.marker:
            kind, value = block.marker
            if kind not in ("skip", "file", "same") or not value:
                found.append(f"{where}: a marker is `skip REASON`, `file NAME` or `same PAGE`, not '{kind} {value}'")
            elif kind == "file" and (block.language == "bash" or "/" in value):
                found.append(f"{where}: `file` saves a toml or text block under a plain file name")
            elif kind == "same":
                found.extend(same_problems(block, value))
        if block.language != "bash" or (block.marker and block.marker[0] == "skip"):
            continue
        for command in commands(block):
            found.extend(command_problems(command))
    return found


def runs_here(block: Block) -> bool:
    """Whether the docs test runs a block's commands on its own page (a ``bash`` block, not marked skip or same)."""
    return block.language == "bash" and not (block.marker and block.marker[0] in ("skip", "same"))


def same_problems(block: Block, page_name: str) -> list[str]:
    """What keeps a block marked ``same PAGE`` from being run there instead: a command PAGE does not run."""
    where = f"{block.page.relative_to(REPO)}:{block.line}"
    page = REPO / page_name
    if block.language != "bash" or page not in PAGES or page == block.page:
        return [f"{where}: `same` marks a bash block whose commands another page runs (README.md or docs/NAME.md)"]
    there = {command.words for other in blocks(page) if runs_here(other) for command in commands(other)}
    return [
        f"{command.where}: `{command.text}` is not one of {page_name}'s commands; write it as there, or drop the marker"
        for command in commands(block)
        if not not_run(command) and command.words not in there
    ]


def command_problems(command: Command) -> list[str]:
    """What keeps a command from running as written in a fresh clone's folder."""
    found = []
    if not_run(command):
        return found
    for words in command.simple:
        name = words[0]
        if name in PROJECT_PROGRAMS:
            found.append(f"{command.where}: `{name}` runs from the project's venv: write .venv/bin/{name}")
        if name in SHELL_STATE:
            found.append(
                f"{command.where}: `{name}` changes the shell, which the docs test does not carry to the next "
                f"command; mark the block <!-- docs-test: skip REASON --> or do without it"
            )
        if program(words) == "skelarm-ros" and name.startswith(".venv/bin/"):
            sub = words[1] if len(words) > 1 else ""
            if sub not in ("run", *COMMANDS):
                found.append(f"{command.where}: skelarm-ros has no command '{sub}'")
            elif sub == "run" and (len(words) < 3 or words[2] not in EXECUTABLES):
                found.append(f"{command.where}: skelarm-ros run has no executable '{' '.join(words[2:3])}'")
    return found


def test_every_block_is_tagged_and_every_command_runs_from_the_clone() -> None:
    found = [problem for page in PAGES for problem in problems(page)]
    assert not found, "\n".join(found)


def test_the_command_rules_read_the_pages_commands() -> None:
    def command(text: str) -> Command:
        block = Block(REPO / "README.md", 1, "bash", text, None)
        return commands(block)[0]

    assert runs_until_stopped(command(".venv/bin/skelarm-ros launch sim namespace:=arm1 &")) == GRAPH_RUNS
    assert command(".venv/bin/skelarm-ros launch sim namespace:=arm1 &   # one").background
    assert runs_until_stopped(command(".venv/bin/skelarm-ros launch sim mode:=lockstep duration:=2.0")) is None
    assert runs_until_stopped(command(".venv/bin/skelarm-ros launch sim replay:=/tmp/run1")) is None
    assert runs_until_stopped(command(".venv/bin/skelarm-ros run simulator")) == SIMULATOR_STEPS
    lockstep = ".venv/bin/skelarm-ros run simulator --ros-args -p mode:=lockstep -p duration:=5.0"
    assert runs_until_stopped(command(lockstep)) == SIMULATOR_WAITS
    assert runs_until_stopped(command(".venv/bin/skelarm-ros run player /tmp/run1 --rate 0.5")) is None
    assert runs_until_stopped(command(".venv/bin/skelarm-ros run player run1 --ros-args -p use_sim_time:=true")) is None
    assert runs_until_stopped(command(".venv/bin/skelarm-ros run player /tmp/run1 -p")) == NODE_RUNS["player"]
    assert runs_until_stopped(command(".venv/bin/skelarm-ros run bag_to_log a -o b")) is None
    assert not_run(command("make demo   # set up")) is not None
    assert not_run(command(".venv/bin/skelarm-ros bench loop --quick")) is not None
    assert not_run(command(".venv/bin/python -m pytest test/test_fuzz.py")) is not None
    assert not_run(command(".venv/bin/skelarm-ros plot a.sklog.npz -o a.png")) is None
    assert (not_run(command("cd ~/ws && colcon build --packages-select skelarm_ros")) is None) is False
    assert not_run(command(".venv/bin/python -m colcon build --packages-select skelarm_ros")) is not None
    assert not_run(command(".venv/bin/python -m launch_testing.launch_test test/test_launch_file.py")) is not None
    assert [program(words) for words in command("A=1 .venv/bin/skelarm-ros plot x | head > y").simple] == [
        "skelarm-ros",
        "head",
    ]
    assert command_problems(command("skelarm-ros plot a.sklog.npz")), "a bare skelarm-ros is named"
    assert command_problems(command(".venv/bin/skelarm-ros run nothing"))
    assert not command_problems(command(".venv/bin/skelarm-ros run bag_to_log a -o b"))


# ---------------------------------------------------------------------------------------------
# Running the pages (slow: starts the documented commands)


@dataclass
class Started:
    """A command started in its own process group, its output going to ``log``."""

    command: Command
    process: subprocess.Popen[bytes]
    log: Path
    ready: str | None

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def failure(self, what: str) -> str:
        tail = "\n".join(self.output().splitlines()[-60:])
        return f"{self.command.where}: `{self.command.text}` {what}; its output (last lines):\n{tail}"

    def wait_ready(self) -> None:
        """Wait until the output shows the command runs; fail if it ends or stays silent."""
        assert self.ready is not None
        deadline = time.monotonic() + READY_TIMEOUT
        pattern = re.compile(self.ready)
        while not pattern.search(self.output()):
            code = self.process.poll()
            assert code is None, self.failure(f"ended (exit code {code}) before it showed it runs (/{self.ready}/)")
            assert time.monotonic() < deadline, self.failure(f"did not show that it runs (/{self.ready}/) in time")
            time.sleep(0.1)

    def stop(self, signum: int) -> int:
        """Signal the command's process group (as Ctrl-C or ``kill %1`` does) and wait for it to end."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signum)
        try:
            return self.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            what = f"did not end within {STOP_TIMEOUT} s of {signal.Signals(signum).name}"
            raise AssertionError(self.failure(what)) from None

    def finish(self) -> int:
        """Wait for a command that ends by itself."""
        try:
            return self.process.wait(timeout=ONE_SHOT_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(self.failure(f"did not end within {ONE_SHOT_TIMEOUT} s")) from None

    def check(self, code: int) -> None:
        assert code == 0, self.failure(f"exited {code}")
        assert TRACEBACK not in self.output(), self.failure("printed a traceback")

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=STOP_TIMEOUT)


def environment() -> dict[str, str]:
    """The test's environment with no ``.venv/bin`` on ``PATH``: commands spell the venv out, as on a fresh clone."""
    env = dict(os.environ)
    path = [entry for entry in env.get("PATH", "").split(os.pathsep) if not entry.rstrip("/").endswith(".venv/bin")]
    env["PATH"] = os.pathsep.join(path)
    env.pop("VIRTUAL_ENV", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def start(command: Command, folder: Path, number: int) -> Started:
    text = command.text.replace("/tmp/", f"{folder}/tmp/")
    log = folder / ".docs-test" / f"{number:03d}.log"
    with log.open("wb") as stream:
        process = subprocess.Popen(
            ["bash", "-c", text],
            cwd=folder,
            env=environment(),
            stdout=stream,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    return Started(command, process, log, runs_until_stopped(command))


def test_a_block_marked_same_runs_on_the_other_page_only_as_written_there() -> None:
    import dataclasses

    marked = [block for page in PAGES for block in blocks(page) if block.marker and block.marker[0] == "same"]
    assert marked, "no page marks a block `same PAGE`"
    block = marked[0]
    assert same_problems(block, block.marker[1]) == []
    first = commands(block)[0]
    changed = dataclasses.replace(block, text=block.text.replace(first.text, f"{first.text} --an-option-of-its-own"))
    assert same_problems(changed, block.marker[1]) == [
        f"{first.where}: `{first.text} --an-option-of-its-own` is not one of {block.marker[1]}'s commands; "
        "write it as there, or drop the marker"
    ]
    assert "another page runs" in same_problems(block, str(block.page.relative_to(REPO)))[0]


def run_page(page: Path, folder: Path) -> list[str]:
    """Run a page's blocks in order in ``folder``; return what was not run, with the reasons."""
    (folder / ".docs-test").mkdir()
    (folder / "tmp").mkdir()
    skipped: list[str] = []
    started: list[Started] = []
    try:
        for block in blocks(page):
            kind, value = block.marker or ("", "")
            if kind == "skip":
                skipped.append(f"{page.relative_to(REPO)}:{block.line}: block: {value}")
                continue
            if kind == "file":
                (folder / value).write_text(block.text + "\n", encoding="utf-8")  # as the page asks
                continue
            if kind == "same":
                skipped.append(f"{page.relative_to(REPO)}:{block.line}: block: its commands run in {value}")
                continue
            if block.language != "bash":
                continue
            background: list[Started] = []
            for command in commands(block):
                reason = not_run(command)
                if reason:
                    skipped.append(f"{command.where}: `{command.text}`: {reason}")
                    continue
                running = start(command, folder, len(started))
                started.append(running)
                if command.background:
                    background.append(running)
                elif running.ready:
                    running.wait_ready()
                    running.check(running.stop(signal.SIGINT))
                else:
                    running.check(running.finish())
            for running in background:
                if running.ready:
                    running.wait_ready()
                    running.check(running.stop(signal.SIGTERM))
                else:
                    running.check(running.finish())
    finally:
        for running in started:
            running.kill()
    return skipped


def saved_files() -> list[Block]:
    """The blocks the pages have the reader save as files (``<!-- docs-test: file NAME -->``)."""
    return [block for page in PAGES for block in blocks(page) if block.marker and block.marker[0] == "file"]


@pytest.fixture(scope="module")
def quick_start(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``demo_output/`` as the quick start's ``make demo`` leaves it (one run, copied into each page's folder)."""
    folder = tmp_path_factory.mktemp("quick-start")
    result = subprocess.run(
        [str(REPO / ".venv" / "bin" / "skelarm-ros"), "demo"],
        cwd=folder,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=ONE_SHOT_TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return folder / "demo_output"


COMMAND_PAGES = [page for page in PAGES if any(block.language == "bash" for block in blocks(page))]


@pytest.mark.slow
@pytest.mark.parametrize("page", COMMAND_PAGES, ids=[str(page.relative_to(REPO)) for page in COMMAND_PAGES])
def test_the_page_runs_as_written(page: Path, quick_start: Path, tmp_path: Path) -> None:
    folder = tmp_path / "clone"
    folder.mkdir()
    (folder / ".venv").symlink_to(REPO / ".venv")
    shutil.copytree(REPO / "config", folder / "config")
    shutil.copytree(quick_start, folder / "demo_output", symlinks=True)
    for block in saved_files():  # what any page has the reader save (my_arm.toml), as a reader of the docs has it
        (folder / block.marker[1]).write_text(block.text + "\n", encoding="utf-8")
    skipped = run_page(page, folder)
    for line in skipped:
        print("not run:", line)
    ran = any(not not_run(command) for block in blocks(page) if runs_here(block) for command in commands(block))
    if not ran and skipped:
        pytest.skip("; ".join(skipped))
