"""``skelarm-ros plot``: a run drawn to an image, headless, with clear errors for bad logs."""

from __future__ import annotations

import tomllib
import warnings
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
import skelarm
from conftest import reference_run, scenario_file
from matplotlib.patches import Circle
from matplotlib.quiver import Quiver

from skelarm_ros import cli
from skelarm_ros.cli.plot import load_log, plot_log
from skelarm_ros.sim.engine import ArmEngine, run_controlled
from skelarm_ros.sim.markers import goals_from_config

REACH = scenario_file("reach")


def titles(figure) -> list[str]:
    return [ax.get_title() for ax in figure.axes]


def plane_axes(figure):
    (ax,) = [ax for ax in figure.axes if ax.get_title() == "Arm in the plane (base frame)"]
    return ax


def check_png(path: Path) -> None:
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = matplotlib.image.imread(path)
    assert image.shape[0] > 400 and image.shape[1] > 600


@pytest.fixture
def reach_log(tmp_path: Path) -> Path:
    path = tmp_path / "reach.sklog.npz"
    reference_run(REACH).save(path)
    return path


@pytest.fixture
def push_log(tmp_path: Path) -> Path:
    """A reach pushed sideways for 0.3 s, with an ``ext_force`` channel."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scenario = skelarm.load_scenario(REACH)
    engine = ArmEngine(scenario.skeleton, scenario.simulator.dt)
    extra = skelarm.scenario.scenario_run_metadata(scenario, dt=engine.dt, enforce_limits=True, duration=1.0)
    log = run_controlled(
        engine,
        scenario.skeleton.clone(),
        scenario.controller,
        duration=1.0,
        force=lambda t: np.array([-15.0, 5.0]) * (0.3 <= t < 0.6),
        extra=extra,
    )
    path = tmp_path / "push.sklog.npz"
    log.save(path)
    return path


def test_plot_of_a_shared_scenario_run_writes_a_png(reach_log: Path, tmp_path: Path, capsys) -> None:
    output = tmp_path / "reach.png"
    assert cli.main(["plot", str(reach_log), "-o", str(output)]) == 0
    assert f"wrote {output}" in capsys.readouterr().out
    check_png(output)


def test_figure_shows_the_arm_the_tip_path_and_the_target_with_its_tolerance(reach_log: Path) -> None:
    log = load_log(reach_log)
    target = tomllib.loads(REACH.read_text())["task"]["target"]
    goals = goals_from_config(log.extra["source_config"])
    assert len(goals) == 1 and goals[0].tolerance == target["tolerance"]
    figure = plot_log(log, skeleton=log.build_skeleton(), goals=goals)
    assert titles(figure) == [
        "Joint angles",
        "Joint torques",
        "Tip distance to the target",
        "Arm in the plane (base frame)",
    ]
    plane = plane_axes(figure)
    rings = [patch for patch in plane.patches if isinstance(patch, Circle)]
    assert [(ring.center, ring.radius) for ring in rings] == [(tuple(target["pos"]), target["tolerance"])]
    (path,) = [line for line in plane.lines if line.get_label() == "tip path"]
    end = np.array([path.get_xdata()[-1], path.get_ydata()[-1]])
    assert np.linalg.norm(end - target["pos"]) < target["tolerance"]  # the reach ends at its target
    angles = figure.axes[0]
    q_end = np.rad2deg(log.channel("q")[-1])
    assert [line.get_ydata()[-1] for line in angles.lines[:2]] == pytest.approx(q_end)


def test_a_log_with_a_tip_force_gets_a_force_panel_and_arrows(push_log: Path, tmp_path: Path) -> None:
    output = tmp_path / "push.png"
    assert cli.main(["plot", str(push_log), "-o", str(output)]) == 0
    check_png(output)
    log = load_log(push_log)
    figure = plot_log(log, skeleton=log.build_skeleton(), goals=goals_from_config(log.extra["source_config"]))
    assert "External tip force (base frame)" in titles(figure)
    force_ax = figure.axes[titles(figure).index("External tip force (base frame)")]
    fx = force_ax.lines[0].get_ydata()
    assert fx.min() == -15.0 and fx[0] == 0.0
    (arrows,) = [item for item in plane_axes(figure).collections if isinstance(item, Quiver)]
    assert np.allclose(arrows.U, -15.0) and np.allclose(arrows.V, 5.0)


def test_log_without_skeleton_takes_the_arm_from_scenario(tmp_path: Path, capsys) -> None:
    source = reference_run(REACH)
    bare = skelarm.StateLog(producer="recorder")  # no skeleton, no scenario: as from a bag of a real arm
    for t, q, tau in zip(source.times[::50], source.channel("q")[::50], source.channel("tau")[::50], strict=True):
        bare.record(float(t), q=q, tau=tau)
    path = tmp_path / "bare.sklog.npz"
    bare.save(path)
    assert cli.main(["plot", str(path)]) == 0  # default output next to the log
    err = capsys.readouterr().err
    assert "note: the log embeds no skeleton, so the arm and its tip path are not drawn; pass --scenario" in err
    assert "note: the log carries no task with a target (a scenario's [task]), so no target, tolerance ring" in err
    check_png(tmp_path / "bare.png")
    assert titles(plot_log(load_log(path))) == ["Joint angles", "Joint torques"]
    assert cli.main(["plot", str(path), "--scenario", str(REACH), "-o", str(tmp_path / "with.png")]) == 0
    assert "note:" not in capsys.readouterr().err  # the scenario gives both
    check_png(tmp_path / "with.png")


def test_an_existing_image_is_replaced_only_with_force(tmp_path: Path, capsys) -> None:
    path = tmp_path / "run.sklog.npz"
    reference_run(REACH).save(path)
    picture = tmp_path / "run.png"
    picture.write_bytes(b"an older picture")
    assert cli.main(["plot", str(path)]) == 1
    assert capsys.readouterr().err == (
        f"skelarm-ros plot: error: '{picture}' exists already; choose another path, or pass --force to replace it\n"
    )
    assert picture.read_bytes() == b"an older picture"
    assert cli.main(["plot", str(path), "--force"]) == 0
    check_png(picture)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "does not exist; pass a .sklog.npz"),
        (b"not an npz archive", "is not a readable skelarm .sklog.npz log"),
        ("no_q", "has no 'q' channel (joint angles), only ['tau']"),
    ],
)
def test_bad_logs_give_one_clear_sentence(tmp_path: Path, capsys, content, expected: str) -> None:
    path = tmp_path / "run.sklog.npz"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content == "no_q":
        log = skelarm.StateLog()
        log.record(0.0, tau=[1.0, 2.0])
        log.save(path)
    assert cli.main(["plot", str(path), "-o", str(tmp_path / "out.png")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("skelarm-ros plot: error: ") and expected in err
    assert "Traceback" not in err
    assert not (tmp_path / "out.png").exists()


def test_missing_output_folder_is_named(reach_log: Path, tmp_path: Path, capsys) -> None:
    assert cli.main(["plot", str(reach_log), "-o", str(tmp_path / "nowhere" / "x.png")]) == 1
    assert "does not exist; create it" in capsys.readouterr().err
