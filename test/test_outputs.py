"""One rule for every tool's output: an existing one is refused with one sentence, --force replaces it, never half."""

from __future__ import annotations

import io
import os
import stat
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest
import skelarm
from conftest import reference_run
from excite import excitation_run, save, wide_arm

from skelarm_ros.bags import bag_to_log, log_to_bag
from skelarm_ros.cli import compare, demo, plot
from skelarm_ros.identification import identify
from skelarm_ros.outputs import OutputExists, check_new, process_umask, write_atomically, write_folder_atomically
from skelarm_ros.sim.scenario import resolve_scenario

REACH = resolve_scenario("reach")


def sentence(path: Path) -> str:
    return f"'{path}' exists already; choose another path, or pass --force to replace it"


def test_check_new_refuses_what_exists_and_a_missing_folder(tmp_path: Path) -> None:
    there = tmp_path / "there.png"
    there.write_text("old")
    with pytest.raises(OutputExists, match="^" + sentence(there).replace("(", r"\(").replace(")", r"\)") + "$"):
        check_new(there)
    assert check_new(there, force=True) == there
    with pytest.raises(ValueError, match=r"the folder '.*/nowhere' of '.*' does not exist; create it"):
        check_new(tmp_path / "nowhere" / "x.png")


def test_a_write_that_fails_leaves_the_old_output_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("old")

    def fails(temporary: Path) -> None:
        temporary.write_text("half")
        raise RuntimeError("the disk is full")

    with pytest.raises(RuntimeError):
        write_atomically(path, fails)
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
    write_atomically(path, lambda temporary: temporary.write_text("new"))
    assert path.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_a_folder_is_replaced_whole_or_not_at_all(tmp_path: Path) -> None:
    folder = tmp_path / "bag"
    folder.mkdir()
    (folder / "old.db3").write_text("old")

    def fails(work: Path) -> None:
        work.mkdir()
        (work / "new.mcap").write_text("half")
        raise RuntimeError("stopped")

    with pytest.raises(RuntimeError):
        write_folder_atomically(folder, fails)
    assert [p.name for p in folder.iterdir()] == ["old.db3"] and sorted(p.name for p in tmp_path.iterdir()) == ["bag"]

    def writes(work: Path) -> None:
        work.mkdir()
        (work / "new.mcap").write_text("new")

    write_folder_atomically(folder, writes)
    assert [p.name for p in folder.iterdir()] == ["new.mcap"] and sorted(p.name for p in tmp_path.iterdir()) == ["bag"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A reach as a log and as a bag."""
    folder = tmp_path_factory.mktemp("recorded")
    log = folder / "reach.sklog.npz"
    reference_run(REACH).save(log)
    bag = folder / "bag"
    log_to_bag.log_to_bag(log, bag)
    return log, bag


def run(main, argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        code = main(argv)
    return code, err.getvalue()


@pytest.mark.parametrize("tool", ["bag_to_log", "log_to_bag", "plot", "compare", "identify"])
def test_every_tool_refuses_an_existing_output_and_replaces_it_with_force(
    tmp_path: Path, recorded: tuple[Path, Path], tool: str
) -> None:
    log, bag = recorded
    output = tmp_path / {"log_to_bag": "out", "identify": "twin.toml", "bag_to_log": "out.sklog.npz"}.get(
        tool, "out.png"
    )
    if tool == "log_to_bag":
        output.mkdir()
        (output / "marker").write_text("old")
    else:
        output.write_text("old")
    argv = {
        "bag_to_log": [str(bag), "-o", str(output)],
        "log_to_bag": [str(log), "-o", str(output)],
        "plot": [str(log), "-o", str(output)],
        "compare": [str(bag), str(bag), "-o", str(output)],
        "identify": [str(log), "-o", str(output), "--scenario", "reach", "--no-plot"],
    }[tool]
    main = {"bag_to_log": bag_to_log.main, "log_to_bag": log_to_bag.main, "plot": plot.main}.get(tool)
    main = main or {"compare": compare.main, "identify": identify.main}[tool]
    code, err = run(main, argv)
    assert code == 1 and sentence(output) in err and err.count("\n") == 1, err
    assert (output / "marker").exists() if tool == "log_to_bag" else output.read_text() == "old"
    if tool == "identify":
        return  # a reach is not an exciting run: --force gets past the rule, not the identification
    code, err = run(main, [*argv, "--force"])
    assert code == 0, err
    assert not (output / "marker").exists() if tool == "log_to_bag" else output.read_bytes() != b"old"


TOOLS = {
    "bag_to_log": bag_to_log.main,
    "log_to_bag": log_to_bag.main,
    "identify": identify.main,
    "skelarm-ros plot": plot.main,
    "skelarm-ros compare": compare.main,
    "skelarm-ros demo": demo.main,
}


@pytest.mark.parametrize("prog", list(TOOLS))
def test_every_tool_ends_the_same_way_on_a_bad_command_line_and_on_help(prog: str) -> None:
    main = TOOLS[prog]
    code, err = run(main, ["--no-such-option"])
    assert code == 2 and err.startswith(f"usage: {prog} ") and f"\n{prog}: error: " in err, err
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["--help"]) == 0
    assert out.getvalue().startswith(f"usage: {prog} ") and "--force" in out.getvalue()


def test_a_log_converted_with_its_scenario_is_plotted_with_the_target_and_the_distance(
    tmp_path: Path, recorded: tuple[Path, Path]
) -> None:
    _, bag = recorded
    log = tmp_path / "with_task.sklog.npz"
    assert run(bag_to_log.main, [str(bag), "-o", str(log), "--scenario", "reach"])[0] == 0
    assert skelarm.StateLog.load(log).extra["source_config"]["task"]["type"] == "reaching"
    code, err = run(plot.main, [str(log), "-o", str(tmp_path / "with_task.png")])
    assert code == 0 and "note:" not in err, err
    loaded = plot.load_log(log)
    skeleton, goals = plot.arm_and_goals(loaded, None)
    figure = plot.plot_log(loaded, skeleton=skeleton, goals=goals)
    assert "Tip distance to the target" in [ax.get_title() for ax in figure.axes]


@pytest.fixture(params=[0o022, 0o077], ids=["umask022", "umask077"])
def umask(request: pytest.FixtureRequest):
    """The process's umask set for one test, and put back after it."""
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_process_umask_reads_the_umask_without_changing_it(umask: int) -> None:
    assert process_umask() == umask
    assert process_umask() == umask


def test_every_output_follows_the_umask_as_open_and_mkdir_would(
    tmp_path: Path, recorded: tuple[Path, Path], umask: int
) -> None:
    log, bag = recorded
    file_mode, folder_mode = 0o666 & ~umask, 0o777 & ~umask
    runs = {
        "out.sklog.npz": (bag_to_log.main, [str(bag), "-o"]),
        "out.png": (plot.main, [str(log), "-o"]),
        "compare.png": (compare.main, [str(bag), str(bag), "-o"]),
    }
    for name, (main, argv) in runs.items():
        code, err = run(main, [*argv, str(tmp_path / name)])
        assert code == 0, err
        assert mode(tmp_path / name) == file_mode, name
    folder = tmp_path / "bag_out"
    assert run(log_to_bag.main, [str(log), "-o", str(folder)])[0] == 0
    assert mode(folder) == folder_mode
    assert {mode(file) for file in folder.iterdir()} == {file_mode}
    rng = np.random.default_rng(21)
    exciting = save(excitation_run(wide_arm(rng, 2), duration=2.0), tmp_path / "exciting.sklog.npz")
    twin = tmp_path / "twin.toml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code, err = run(identify.main, [str(exciting), "-o", str(twin)])
    assert code == 0, err
    assert mode(twin) == mode(tmp_path / "twin.png") == file_mode
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".")]  # no temporary left
