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
from driverbags import PRISMATIC_MANY, franka_ros1, many_joints, many_joints_names, servo_arm
from matplotlib.patches import Circle
from matplotlib.quiver import Quiver

from skelarm_ros import cli
from skelarm_ros.cli.plot import PlotError, draw, load_log, plot_log
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
    # Joints of unknown kind (no arm, no description) are drawn as recorded, not as angles and torques.
    figure = plot_log(load_log(path))
    assert titles(figure) == ["Joint positions", "Joint efforts"]
    assert [ax.get_ylabel() for ax in figure.axes] == ["position (as recorded)", "effort (as recorded)"]
    assert titles(plot_log(load_log(path), skeleton=skelarm.load_scenario(REACH).skeleton))[:2] == [
        "Joint angles",
        "Joint torques",
    ]
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


def test_draw_writes_the_image_and_returns_what_it_cannot_show(tmp_path: Path) -> None:
    bare = skelarm.StateLog(producer="recorder")
    bare.record(0.0, q=[0.1, 0.2], tau=[0.0, 0.0])
    bare.record(0.1, q=[0.2, 0.3], tau=[1.0, 0.0])
    log = tmp_path / "bare.sklog.npz"
    bare.save(log)
    notes = draw(log, tmp_path / "bare.png")
    check_png(tmp_path / "bare.png")
    assert [note.split(",")[0] for note in notes] == [
        "the log embeds no skeleton",
        "the log carries no task with a target (a scenario's [task])",
    ]
    assert draw(log, tmp_path / "with.png", scenario=REACH) == []
    with pytest.raises(PlotError, match=r"^cannot draw '.*bare.sklog.npz' to '.*bare.nope': "):
        draw(log, tmp_path / "bare.nope")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bare.png", "bare.sklog.npz", "with.png"]


def test_missing_output_folder_is_named(reach_log: Path, tmp_path: Path, capsys) -> None:
    assert cli.main(["plot", str(reach_log), "-o", str(tmp_path / "nowhere" / "x.png")]) == 1
    assert "does not exist; create it" in capsys.readouterr().err


# -- many joints, and joints of other kinds ---------------------------------------------------------------


def drawn_without_warnings(figure, path: Path) -> None:
    """Save the figure with every warning an error (constrained layout that gives up warns)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        figure.savefig(path, dpi=60)


def legends_fit(figure) -> None:
    """Every legend lies inside the figure, whole."""
    renderer = figure.canvas.get_renderer()
    box = figure.bbox
    for ax in figure.axes:
        legend = ax.get_legend()
        if legend is not None:
            extent = legend.get_window_extent(renderer)
            assert box.x0 <= extent.x0 and extent.x1 <= box.x1 + 1 and box.y0 <= extent.y0 and extent.y1 <= box.y1 + 1


def converted(tmp_path: Path, bag: Path) -> skelarm.StateLog:
    from skelarm_ros.bags.bag_to_log import bag_to_log

    out = tmp_path / f"{bag.name}.sklog.npz"
    bag_to_log(bag, out)
    return load_log(out)


def test_a_robot_of_42_joints_is_drawn_in_readable_groups_each_joint_once_with_its_units(tmp_path: Path) -> None:
    log = converted(tmp_path, many_joints(tmp_path / "pr2", count=42))
    names = many_joints_names(42)
    figure = plot_log(log, title="pr2")
    drawn_without_warnings(figure, tmp_path / "pr2.png")
    legends_fit(figure)
    labelled: list[str] = []
    for ax in figure.axes:
        lines = [line for line in ax.lines if not line.get_label().startswith("_")]
        assert len(lines) <= 8  # a group's colours stay apart
        assert len({line.get_color() for line in lines}) == len(lines)
        if ax.get_legend() is not None:
            labelled += [text.get_text() for text in ax.get_legend().get_texts()]
    assert sorted(labelled) == sorted(names)  # every joint named once, in the legend beside its row
    by_label = {ax.get_ylabel(): ax for ax in figure.axes}
    assert set(by_label) == {"position (m)", "force (N)", "joint angle (deg)", "torque (N*m)"}
    sliding = [line.get_label() for ax in figure.axes if ax.get_ylabel() == "force (N)" for line in ax.lines]
    assert sorted(sliding) == sorted(PRISMATIC_MANY)
    image = matplotlib.image.imread(tmp_path / "pr2.png")
    assert image.shape[0] > image.shape[1] * 0.8  # rows of groups, not one crowded panel


def test_an_arm_with_gripper_fingers_shows_the_fingers_in_metres_and_newtons(tmp_path: Path) -> None:
    log = converted(tmp_path, franka_ros1(tmp_path / "franka.bag", frames=30))
    figure = plot_log(log)
    drawn_without_warnings(figure, tmp_path / "franka.png")
    labels = {ax.get_title(): ax.get_ylabel() for ax in figure.axes}
    assert labels == {
        "Joint angles (7 joints)": "joint angle (deg)",
        "Joint torques (7 joints)": "torque (N*m)",
        "Sliding joints: positions (2 joints)": "position (m)",
        "Sliding joints: forces (2 joints)": "force (N)",
    }
    fingers = next(ax for ax in figure.axes if ax.get_ylabel() == "position (m)")
    assert max(max(line.get_ydata()) for line in fingers.lines) < 0.05  # metres as recorded, not degrees


def test_joints_of_unknown_kind_are_drawn_in_the_units_recorded(tmp_path: Path) -> None:
    from skelarm_ros.bags.bag_to_log import bag_to_log

    bag = servo_arm(tmp_path / "flight", frames=40)
    out = tmp_path / "flight.sklog.npz"
    bag_to_log(bag, out, joint_topic="/servo/out/state")
    log = load_log(out)
    figure = plot_log(log)
    assert [ax.get_ylabel() for ax in figure.axes] == ["position (rad or m)", "effort (N*m or N)"]
    q = log.channel("q")
    assert figure.axes[0].lines[0].get_ydata() == pytest.approx(q[:, 0])  # not turned into degrees


def test_a_comparison_of_42_joints_is_drawn_in_small_panels_with_a_legend_that_fits(tmp_path: Path) -> None:
    from skelarm_ros.bags.efforts import Efforts, compare_commands
    from skelarm_ros.cli.compare import plot_comparison

    names = many_joints_names(42)
    stamps = np.arange(50, dtype=np.int64) * 10_000_000
    values = np.sin(np.arange(50)[:, None] * 0.1 + np.arange(42))
    recorded = Efforts(tmp_path / "run", "/joint_commands", names, stamps, values)
    shadow = Efforts(tmp_path / "shadow", "/joint_commands", names, stamps, values + 0.01 * np.arange(42))
    figure = plot_comparison(recorded, shadow, compare_commands(recorded, shadow))
    drawn_without_warnings(figure, tmp_path / "compare.png")
    legends_fit(figure)
    assert sorted(ax.get_title() for ax in figure.axes if ax.get_title()) == sorted(names)


def test_a_servo_arms_goals_are_drawn_dotted_over_its_angles_in_each_joints_colour(tmp_path: Path) -> None:
    from skelarm_ros.bags.bag_to_log import bag_to_log

    bag = servo_arm(tmp_path / "flight", frames=40)  # goals 0.01 rad above the angles, on /servo/in/references
    out = tmp_path / "flight.sklog.npz"
    bag_to_log(bag, out, joint_topic="/servo/out/state", command_topic="/servo/in/references")
    log = load_log(out)
    positions = plot_log(log).axes[0]
    dotted = [line for line in positions.lines if line.get_linestyle() == ":" and len(line.get_xdata())]
    solid = [line for line in positions.lines if line.get_linestyle() == "-"]
    assert [line.get_color() for line in dotted] == [line.get_color() for line in solid]
    np.testing.assert_allclose(dotted[0].get_ydata(), log.channel("goal_position")[:, 0])
    assert "servo's goal (dotted)" in [text.get_text() for text in positions.get_legend().get_texts()]
