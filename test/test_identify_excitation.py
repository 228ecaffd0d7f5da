"""The excitation: a sum-of-sines reference inside the joint and effort limits, a controller plugin scenarios select."""

from __future__ import annotations

import importlib.metadata
import math
import warnings

import numpy as np
import pytest
import skelarm
from excite import sines_task, wide_arm

from skelarm_ros.identification import excitation
from skelarm_ros.identification.excitation import ExcitationError, build_controller, peak_torques, plan_reference
from skelarm_ros.sim.engine import ArmEngine, build_model, run_controlled


def _limits(arm):
    return (
        np.array([link.prop.qmin for link in arm.links[1:]]),
        np.array([link.prop.qmax for link in arm.links[1:]]),
    )


def test_the_reference_starts_and_ends_at_rest_and_its_derivatives_are_consistent():
    arm = wide_arm(np.random.default_rng(1), 3)
    reference = plan_reference(arm, sines_task(3, 6.0))
    q0, dq0, _ = reference.sample(0.0)
    np.testing.assert_array_equal(q0, arm.q)
    np.testing.assert_array_equal(dq0, 0.0)
    q_end, dq_end, _ = reference.sample(6.0)
    np.testing.assert_allclose(q_end, arm.q, atol=1e-12)
    np.testing.assert_allclose(dq_end, 0.0, atol=1e-12)
    times = np.linspace(0.0, 6.0, 60_001)
    q, dq, ddq = reference.sample_many(times)
    # central differences, away from the ends and from the fade's ends (where its third derivative jumps)
    inner = np.ones(len(times), dtype=bool)
    inner[[0, -1]] = False
    for edge in (reference.fade, 6.0 - reference.fade):
        inner &= np.abs(times - edge) > 2.5e-4
    np.testing.assert_allclose(np.gradient(q, times, axis=0)[inner], dq[inner], atol=2e-6)
    np.testing.assert_allclose(np.gradient(dq, times, axis=0)[inner], ddq[inner], atol=2e-5)
    assert np.max(np.abs(np.diff(ddq, axis=0))) < 0.05  # no jump in the acceleration (it moves ~0.02 per step)
    for t in (0.0, 0.4, 3.3, 5.9, 7.0):
        for one, many in zip(reference.sample(t), reference.sample_many(np.array([t])), strict=True):
            np.testing.assert_allclose(one, many[0], rtol=0.0, atol=1e-15)


def test_amplitudes_are_scaled_to_keep_the_margin_from_every_joint_limit():
    arm = wide_arm(np.random.default_rng(2), 2)
    arm.links[1].prop.qmin, arm.links[1].prop.qmax = math.radians(-30.0), math.radians(40.0)
    with pytest.warns(UserWarning, match="joint limits: joint 1"):
        reference = plan_reference(arm, sines_task(2, 8.0, amplitude=90.0))
    q, _, _ = reference.sample_many(np.linspace(0.0, 8.0, 8001))
    lower, upper = _limits(arm)
    margin = math.radians(5.0)
    assert np.all(q >= lower + margin - 1e-12)
    assert np.all(q <= upper - margin + 1e-12)


def test_effort_limits_scale_the_reference_and_clip_the_torque():
    arm = wide_arm(np.random.default_rng(3), 3)
    task = sines_task(3, 5.0)
    free = plan_reference(arm, task)
    model, _ = build_model(arm)
    limits = 0.2 * peak_torques(model, free)
    with pytest.warns(UserWarning, match="effort limits"):
        controller = build_controller({"law": "computed_torque", "effort_limits": limits.tolist()}, arm, task)
    assert np.all(peak_torques(model, controller.sines) <= 0.7 * limits * (1 + 1e-9))
    log = run_controlled(ArmEngine(arm, 0.002), arm.clone(), controller, duration=5.0)
    assert np.all(np.abs(log.channel("tau")) <= limits)


def test_optimized_phases_condition_the_regressor_no_worse_than_schroeder_phases():
    from skelarm_ros.identification.regressor import structure

    arm = wide_arm(np.random.default_rng(4), 3)
    plain = plan_reference(arm, sines_task(3, 10.0))
    task = sines_task(3, 10.0)
    task.params["phases"] = "optimized"
    task.params["candidates"] = 8
    chosen = plan_reference(arm, task)
    structured = structure(arm)
    times = np.arange(0.0, 10.0, 0.05)

    def condition(reference) -> float:
        matrix = structured.regressor(*reference.sample_many(times))[:, structured.active][:, structured.base_columns]
        return float(np.linalg.cond(matrix / np.linalg.norm(matrix, axis=0)))

    assert condition(chosen) <= condition(plain)


@pytest.mark.parametrize(
    ("params", "task_change", "words"),
    [
        ({"law": "fast"}, {}, "unknown [controller].law 'fast'"),
        ({"kp": [1.0, 2.0]}, {}, "[controller].kp has 2 values for 3 joints"),
        ({"effort_limits": [1.0, -1.0, 1.0]}, {}, "effort_limits must be positive"),
        ({"headroom": 1.0}, {}, "[controller].headroom is 1.0"),
        ({}, {"reference": None}, 'reference = "sum_of_sines"'),
        ({}, {"frequencies": None}, "needs 'frequencies'"),
        ({}, {"frequencies": [0.5, -1.0]}, "frequencies must all be positive"),
        ({}, {"amplitudes": [[1.0, 2.0]]}, "[task].amplitudes has shape [1, 2]"),
        ({}, {"offsets": [179.0, 0.0, 0.0]}, "excitation offset of joint 1"),
        ({}, {"phases": "random"}, "unknown [task].phases 'random'"),
        ({}, {"fade": 10.0}, "[task].fade is 10.0 s"),
    ],
)
def test_bad_tables_get_one_sentence(params, task_change, words):
    arm = wide_arm(np.random.default_rng(5), 3)
    task = sines_task(3, 4.0)
    for key, value in task_change.items():
        if value is None:
            task.params.pop(key)
        else:
            task.params[key] = value
    with pytest.raises(ExcitationError) as caught:
        build_controller(params, arm, task)
    assert words in str(caught.value)


def test_the_controller_is_an_entry_point_and_the_bundled_scenarios_run_inside_their_limits():
    entries = importlib.metadata.entry_points(group="skelarm_ros.controllers")
    assert [entry.value for entry in entries if entry.name == "excitation"] == [
        "skelarm_ros.identification.excitation:build_controller"
    ]
    from skelarm_ros.control import build_control_loop
    from skelarm_ros.sim.scenario import load_arm

    for name in ("excitation", "excitation_heldout", "excitation_cad_guess", "excitation_vertical"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # nothing scaled: the bundled tables fit their arms
            loop, problems = build_control_loop(name)
        assert problems == []
        assert isinstance(loop.controller, excitation.ExcitationController)
        arm = load_arm(name)
        duration = loop.task.duration
        engine = ArmEngine(arm.skeleton, arm.dt, grav_vec=arm.grav_vec)
        log = run_controlled(engine, arm.skeleton.clone(), loop.controller, duration=duration)
        lower, upper = _limits(arm.skeleton)
        q = log.channel("q")
        assert np.all(q > lower) and np.all(q < upper), name
        limits = np.array(loop.controller.effort_limits)
        assert np.all(np.abs(log.channel("tau")) <= limits), name
        assert np.all(np.ptp(q, axis=0) > math.radians(10.0)), name  # every joint moves


def test_the_vertical_excitation_sweeps_every_link_wide_enough_to_separate_the_offsets_from_gravity():
    from skelarm_ros.identification.offsets import SWEEP, link_sweeps
    from skelarm_ros.sim.scenario import load_arm

    arm = load_arm("excitation_vertical")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no narrow link to warn about
        controller = build_controller(
            arm.config["controller"], arm.skeleton, skelarm.Task.from_dict(arm.config["task"])
        )
    q, _, _ = controller.sines.sample_many(np.arange(0.0, controller.sines.duration, 0.01))
    sweeps = [sweep.sweep for sweep in link_sweeps(q, arm.skeleton)]
    assert min(sweeps) > 1.5 * SWEEP, np.degrees(sweeps)


def test_an_excitation_under_gravity_says_which_links_its_postures_hold_too_narrowly():
    from skelarm_ros.sim.scenario import load_arm

    arm = load_arm("excitation_vertical").skeleton
    arm.set_state(q=np.radians([40.0, 30.0, -20.0]))
    task = sines_task(3, 10.0, amplitude=20.0)
    params = {"law": "pd", "grav_vec": [0.0, -9.81]}
    with pytest.warns(UserWarning) as caught:
        build_controller(params, arm, task)
    (message,) = [str(item.message) for item in caught]
    assert message.startswith("the excitation cannot tell the joints' torque offsets from gravity: it holds link 1 ")
    assert "sweeping each over 91 deg or more would separate them" in message
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        build_controller({"law": "pd"}, arm, task)  # no gravity: nothing to separate the offsets from
    arm.links[1].prop.qmin, arm.links[1].prop.qmax = np.radians(25.0), np.radians(55.0)
    with pytest.warns(UserWarning) as caught:
        build_controller(params, arm, task)
    said = [str(item.message) for item in caught]
    assert any("scaled to stay inside the joint limits: joint 1" in words for words in said), said
    assert any("the joint limits allow link 1 only 30 deg" in words for words in said), said


def test_skelarm_scenarios_accept_the_task():
    task = skelarm.Task.from_dict({"type": "joint_trajectory_tracking", "reference": "sum_of_sines", "duration": 3.0})
    assert task.target is None
    assert task.params["reference"] == excitation.REFERENCE_KIND
