"""The control core: fast model twins, the control loop's time line, targets, plugins."""

from __future__ import annotations

import copy
import importlib.metadata
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import skelarm
from conftest import full_scenarios, reference_run
from skelarm.control import (
    ComputedTorque,
    InverseDynamicsFeedforwardPD,
    JointPD,
    SampledJointReference,
    TrackingController,
)
from skelarm.mpc import JointSpaceMPC

from skelarm_ros import control
from skelarm_ros.control import loop as loop_module
from skelarm_ros.control import plugins, restarts, settings, skelarm_internals, twins
from skelarm_ros.control.loop import ControlLoop, build_control_loop, channel_columns, command_order
from skelarm_ros.control.restarts import Replan, Restart
from skelarm_ros.control.twins import (
    FastComputedTorque,
    FastInverseDynamicsPD,
    FastJointSpaceMPC,
    FastSampledJointReference,
    has_fast_model,
    with_fast_model,
)
from skelarm_ros.interface import NANOSECONDS, seconds_to_stamp
from skelarm_ros.sim.conversions import Rejected
from skelarm_ros.sim.engine import ArmEngine, run_controlled, sync_skeleton
from skelarm_ros.sim.scenario import ScenarioError, load_scenario, resolve_scenario

TOLERANCE = 1e-9


def _quiet_load(name: str) -> skelarm.Scenario:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_scenario(name)


def _build(scenario: skelarm.Scenario, params: dict) -> skelarm.Controller:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return skelarm.build_controller(params, skeleton=scenario.skeleton, task=scenario.task, dt=0.002)


@pytest.fixture(params=["reach", "reach_four_dof_robot"])
def arm_scenario(request) -> skelarm.Scenario:
    return _quiet_load(request.param)


# -- fast twins ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["computed_torque", "inverse_dynamics_pd"])
def test_fast_twin_equals_skelarm_on_random_states(arm_scenario, kind):
    slow = _build(arm_scenario, {"type": kind, "kp": 120.0, "kd": 17.0})
    fast = with_fast_model(copy.deepcopy(slow), arm_scenario.skeleton, 0.002)
    assert type(fast) in (FastComputedTorque, FastInverseDynamicsPD)
    assert fast.reference is not None and np.array_equal(fast.kp, slow.kp)
    rng = np.random.default_rng(7)
    skeleton = arm_scenario.skeleton.clone()
    n = skeleton.num_joints
    for _ in range(40):
        sync_skeleton(skeleton, rng.uniform(-2.0, 2.0, n), rng.uniform(-3.0, 3.0, n))
        t = float(rng.uniform(0.0, 2.5))
        expected = slow.control(t, skeleton)
        got = fast.control(t, skeleton)
        np.testing.assert_allclose(got, expected, rtol=0.0, atol=1e-10)
        for name, value in slow.log_channels().items():
            np.testing.assert_array_equal(fast.log_channels()[name], value)


def test_fast_mpc_prediction_and_cost_equal_skelarm(arm_scenario):
    slow = _build(arm_scenario, {"type": "mpc", "horizon": 3})
    fast = with_fast_model(copy.deepcopy(slow), arm_scenario.skeleton, 0.002)
    assert isinstance(fast, FastJointSpaceMPC)
    skeleton = arm_scenario.skeleton.clone()
    slow.reset(skeleton)
    fast.reset(skeleton)
    rng = np.random.default_rng(3)
    n = skeleton.num_joints
    for _ in range(20):
        q, dq, tau = rng.uniform(-2.0, 2.0, n), rng.uniform(-3.0, 3.0, n), rng.uniform(-5.0, 5.0, n)
        predicted = skelarm_internals.mpc_predict(fast, q, dq, tau)
        np.testing.assert_allclose(predicted, skelarm_internals.mpc_predict(slow, q, dq, tau), rtol=0.0, atol=1e-10)
        plan = rng.uniform(-5.0, 5.0, 3 * n)
        q_ref, dq_ref = rng.uniform(-1.0, 1.0, (4, n)), rng.uniform(-1.0, 1.0, (4, n))
        expected = skelarm_internals.mpc_rollout_cost(slow, plan, q, dq, q_ref, dq_ref)
        cost = skelarm_internals.mpc_rollout_cost(fast, plan, q, dq, q_ref, dq_ref)
        assert cost == pytest.approx(expected, rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("path", full_scenarios(), ids=lambda path: path.stem)
def test_fast_reference_samples_equal_skelarms_to_the_bit(path, shared_scenarios):
    scenario = _quiet_load(str(path))
    controller = with_fast_model(scenario.controller, scenario.skeleton, scenario.simulator.dt)
    reference = getattr(controller, "reference", None)
    if not isinstance(reference, SampledJointReference):
        pytest.skip(f"{path.stem}'s controller ({type(controller).__name__}) samples no joint reference")
    assert type(reference) is FastSampledJointReference
    times = reference.times
    rng = np.random.default_rng(11)
    probes = [
        *times[:50].tolist(),  # on the samples
        *((times[:-1] + times[1:]) / 2)[:50].tolist(),  # between them
        *rng.uniform(-0.5, float(times[-1]) + 0.5, 400).tolist(),  # anywhere, before and after too
        float(times[-1]),
        math.nextafter(float(times[-1]), -math.inf),
        -0.0,
        math.inf,
        -math.inf,
        math.nan,
    ]
    for t in probes:
        got = reference.sample(t)
        expected = SampledJointReference.sample(reference, t)
        assert [a.tobytes() for a in got] == [b.tobytes() for b in expected], t


@pytest.mark.parametrize(
    "params",
    [
        {"type": "mpc", "horizon": 3, "max_iter": 5},
        {"type": "mpc", "horizon": 4, "max_iter": 8, "tau_max": 0.01, "limit_weight": 5.0},  # bounds hit
    ],
)
def test_fast_mpc_batched_gradient_gives_the_same_torque_as_scipys_one_by_one(arm_scenario, params):
    built = _build(arm_scenario, params)
    batched = with_fast_model(copy.deepcopy(built), arm_scenario.skeleton, 0.002)
    one_by_one = copy.deepcopy(batched)
    engine = ArmEngine(arm_scenario.skeleton, 0.002)
    skeleton = arm_scenario.skeleton.clone()
    batched.reset(skeleton)
    one_by_one.reset(skeleton)
    for k in range(12):
        sync_skeleton(skeleton, engine.q, engine.dq)
        torque = batched.control(k * 0.002, skeleton)
        expected = JointSpaceMPC.control(one_by_one, k * 0.002, skeleton)  # scipy evaluates each point itself
        assert torque.tobytes() == expected.tobytes()
        channels, expected_channels = batched.log_channels(), one_by_one.log_channels()
        assert channels.keys() == expected_channels.keys() == {"q_ref", "error"}
        for name, value in expected_channels.items():
            assert np.asarray(channels[name]).tobytes() == np.asarray(value).tobytes(), name
        engine.step(torque)


def test_only_skelarms_own_model_based_types_get_a_twin(arm_scenario):
    class MyComputedTorque(skelarm.ComputedTorque):
        pass

    base = _build(arm_scenario, {"type": "computed_torque"})
    mine = MyComputedTorque(base.reference, kp=1.0, kd=1.0)
    assert has_fast_model(base)
    assert not has_fast_model(mine)
    assert with_fast_model(mine, arm_scenario.skeleton, 0.002) is mine
    reaching = _build(arm_scenario, {"type": "virtual_spring_damper"})
    assert with_fast_model(reaching, arm_scenario.skeleton, 0.002) is reaching


# -- skelarm's internals the twins rely on ------------------------------------------------------------

_WRAPPED = {
    ComputedTorque: {"type": "computed_torque"},
    InverseDynamicsFeedforwardPD: {"type": "inverse_dynamics_pd"},
    JointSpaceMPC: {"type": "mpc", "horizon": 3, "max_iter": 3},
}


def test_every_twin_is_listed_in_the_adapter():
    assert set(skelarm_internals.EXPECTED) == set(_WRAPPED)
    for cls in _WRAPPED:
        assert has_fast_model(object.__new__(cls))


@pytest.mark.parametrize("cls", list(_WRAPPED), ids=lambda cls: cls.__name__)
def test_skelarms_controllers_have_the_state_their_twins_were_written_for(arm_scenario, cls):
    """Fails, naming the attribute or method, when the installed skelarm moves an internal a twin relies on."""
    controller = _build(arm_scenario, _WRAPPED[cls])
    assert type(controller) is cls
    changes = skelarm_internals.state_changes(controller)
    assert not changes, "; ".join(changes) + ": update skelarm_ros/control/skelarm_internals.py and the twins"
    skeleton = arm_scenario.skeleton.clone()
    controller.reset(skeleton)
    for k in range(3):  # nothing new appears while it runs either
        controller.update(k * 0.002, skeleton, 0.002)
        controller.control(k * 0.002, skeleton)
    changes = skelarm_internals.state_changes(controller)
    assert not changes, "; ".join(changes) + " (after running): update skelarm_ros/control/skelarm_internals.py"
    assert set(controller.log_channels()) == {"q_ref", "error"}


def test_no_other_control_module_names_skelarms_private_state():
    private = set()
    for internals in skelarm_internals.EXPECTED.values():
        private |= {name for name in internals.attributes | set(internals.methods) if name.startswith("_")}
    overridden = {"_predict", "_rollout_cost"}  # the MPC twin's way in, listed in EXPECTED too
    for module in (loop_module, plugins, restarts, settings, twins, control):
        text = Path(module.__file__).read_text(encoding="utf-8")
        named = {name for name in private - overridden if re.search(rf"\b{name}\b", text)}
        assert not named, f"{module.__name__} names skelarm's private {sorted(named)}; go through skelarm_internals"


def test_mpc_state_the_adapter_reads_and_writes(arm_scenario):
    controller = _build(arm_scenario, _WRAPPED[JointSpaceMPC])
    skeleton = arm_scenario.skeleton.clone()
    assert skelarm_internals.mpc_joint_limits(controller) == (None, None)
    warm = skelarm_internals.mpc_warm_start(controller, skeleton)  # resets a controller never reset
    assert warm.shape == (3, skeleton.num_joints) and not warm.any()
    lower, upper = skelarm_internals.mpc_joint_limits(controller)
    np.testing.assert_array_equal(lower, [link.prop.qmin for link in skeleton.links[1:]])
    np.testing.assert_array_equal(upper, [link.prop.qmax for link in skeleton.links[1:]])
    q_ref, error = np.full(skeleton.num_joints, 0.5), np.full(skeleton.num_joints, -0.25)
    skelarm_internals.mpc_keep(controller, warm + 1.0, q_ref, error)
    assert skelarm_internals.mpc_warm_start(controller, skeleton) is not warm  # kept, not reset again
    np.testing.assert_array_equal(skelarm_internals.mpc_warm_start(controller, skeleton), warm + 1.0)
    assert controller.log_channels() == {"q_ref": q_ref, "error": error}  # what skelarm's own code logs


def test_take_over_moves_the_whole_state_into_the_twin(arm_scenario):
    controller = _build(arm_scenario, {"type": "computed_torque", "kp": 50.0})
    fast = skelarm_internals.take_over(controller, FastComputedTorque)
    assert type(fast) is FastComputedTorque
    assert vars(fast) == vars(controller)
    assert fast.reference is controller.reference


def test_a_skelarm_with_other_internals_keeps_its_own_model_with_a_warning(arm_scenario, monkeypatch):
    renamed = _build(arm_scenario, {"type": "computed_torque"})
    renamed._tracking_error = renamed.__dict__.pop("_error")
    with pytest.warns(UserWarning, match=r"no longer has the attribute\(s\) \['_error'\]") as caught:
        assert with_fast_model(renamed, arm_scenario.skeleton, 0.002) is renamed
    message = str(caught[0].message)
    assert "has attribute(s) ['_tracking_error'] its fast twin does not know" in message
    assert "ComputedTorque keeps skelarm's own model" in message

    monkeypatch.delattr(TrackingController, "_store")
    stored = _build(arm_scenario, {"type": "inverse_dynamics_pd"})
    with pytest.warns(
        UserWarning, match=r"InverseDynamicsFeedforwardPD no longer has the method _store\(q_ref, error\)"
    ):
        assert with_fast_model(stored, arm_scenario.skeleton, 0.002) is stored

    def predict(self, q, dq, torque):
        return q

    monkeypatch.setattr(JointSpaceMPC, "_predict", predict)
    mpc = _build(arm_scenario, _WRAPPED[JointSpaceMPC])
    with pytest.warns(
        UserWarning, match=r"JointSpaceMPC._predict now takes \(q, dq, torque\) instead of \(q, dq, tau\)"
    ):
        assert with_fast_model(mpc, arm_scenario.skeleton, 0.002) is mpc


def test_the_package_re_exports_the_owning_modules_names():
    owners = (loop_module, plugins, restarts, settings, twins)
    for name in control.__all__:
        owner = next(module for module in owners if hasattr(module, name))
        assert getattr(control, name) is getattr(owner, name), name


def _scenario_params():
    marks = {"periodic_curve_four_dof_robot": [pytest.mark.slow]}
    return [pytest.param(path, id=path.stem, marks=marks.get(path.stem, [])) for path in full_scenarios()]


@pytest.mark.parametrize("path", _scenario_params())
def test_fast_model_run_equals_skelarm_reference(path, shared_scenarios):
    scenario = _quiet_load(str(path))
    controller = with_fast_model(scenario.controller, scenario.skeleton, scenario.simulator.dt)
    engine = ArmEngine(scenario.skeleton, scenario.simulator.dt, enforce_limits=scenario.simulator.enforce_limits)
    log = run_controlled(engine, scenario.skeleton.clone(), controller, duration=scenario.task.duration)
    reference = reference_run(path)
    assert log.times.shape == reference.times.shape
    for channel in ("q", "dq", "tau"):
        np.testing.assert_allclose(log.channel(channel), reference.channel(channel), rtol=0.0, atol=TOLERANCE)


# -- the control loop -------------------------------------------------------------------------------


def _drive(loop: ControlLoop, engine: ArmEngine, steps: int, *, names=None, origin_ns: int = 0):
    """Run the loop against the engine as a lockstep simulator would; return (times, q, dq, tau)."""
    names = names or loop.joint_names
    rows = []
    for _ in range(steps + 1):
        sec, nanosec = seconds_to_stamp(engine.t)
        out = loop.control(names, engine.q.tolist(), engine.dq.tolist(), origin_ns + sec * NANOSECONDS + nanosec)
        rows.append((out.t, engine.q.copy(), engine.dq.copy(), out.torque))
        engine.step(out.torque)
    return rows


@pytest.mark.parametrize("stem", ["reach", "multi_target", "periodic_curve"])
def test_loop_on_stamped_states_reproduces_the_reference(stem, shared_scenarios):
    path = shared_scenarios / f"{stem}.toml"
    loop, problems = build_control_loop(path)
    assert problems == []
    scenario = _quiet_load(str(path))
    engine = ArmEngine(scenario.skeleton, loop.dt, enforce_limits=scenario.simulator.enforce_limits)
    reference = reference_run(path)
    rows = _drive(loop, engine, len(reference.times) - 1)
    np.testing.assert_array_equal([row[0] for row in rows], reference.times)
    np.testing.assert_allclose([row[1] for row in rows], reference.channel("q"), rtol=0.0, atol=TOLERANCE)
    np.testing.assert_allclose([row[3] for row in rows], reference.channel("tau"), rtol=0.0, atol=TOLERANCE)


def test_loop_maps_joints_by_name_and_ignores_extra_ones():
    loop, _ = build_control_loop("reach")
    first = loop.control(["j1", "j2"], [0.1, 0.2], [0.0, 0.0], 0)
    other, _ = build_control_loop("reach")
    swapped = other.control(["gripper", "j2", "j1"], [9.0, 0.2, 0.1], [9.0, 0.0, 0.0], 0)
    np.testing.assert_array_equal(first.torque, swapped.torque)
    assert set(first.channels) == {"q_ref", "error"}


def test_command_joints_put_the_torque_in_the_drivers_order():
    loop, _ = build_control_loop("reach", joint_names=["shoulder", "elbow"], command_joints=["elbow", "shoulder"])
    assert loop.command_joints == ["elbow", "shoulder"]
    torque = loop.control(["elbow", "shoulder"], [0.2, 0.1], [0.0, 0.0], 0).torque
    np.testing.assert_array_equal(loop.command_torque(torque), torque[::-1])
    same, _ = build_control_loop("reach", joint_names=["shoulder", "elbow"])
    assert same.command_joints == ["shoulder", "elbow"]
    np.testing.assert_array_equal(same.command_torque(torque), torque)
    assert command_order(["a", "b", "c"], ["c", "a", "b"]) == [2, 0, 1]


@pytest.mark.parametrize("bad", [["elbow"], ["elbow", "elbow"], ["elbow", "wrist"], ["elbow", "shoulder", "x"]])
def test_command_joints_must_reorder_the_joint_names(bad):
    with pytest.raises(ValueError, match="command_joints"):
        build_control_loop("reach", joint_names=["shoulder", "elbow"], command_joints=bad)


@pytest.mark.parametrize(
    ("names", "positions", "velocities", "words"),
    [
        (["j1"], [0.1], [0.0], "lacks joint"),
        (["j1", "j2"], [0.1, float("nan")], [0.0, 0.0], "NaN"),
        (["j1", "j2"], [0.1, 0.2], [0.0, float("inf")], "NaN or infinite velocity"),
        (["j1", "j2"], [0.1, 0.2], [], "velocity values"),
        (["j1", "j1"], [0.1, 0.2], [0.0, 0.0], "twice"),
    ],
)
def test_loop_rejects_bad_states_and_counts_them(names, positions, velocities, words):
    loop, _ = build_control_loop("reach")
    with pytest.raises(Rejected, match=words):
        loop.control(names, positions, velocities, 5)
    assert loop.rejected == 1
    assert loop.control(["j1", "j2"], [0.1, 0.2], [0.0, 0.0], 5).t == 0.0  # the loop carries on


def test_duplicate_stamp_is_rejected():
    loop, _ = build_control_loop("reach")
    loop.control(["j1", "j2"], [0.1, 0.2], [0.0, 0.0], 1000)
    with pytest.raises(Rejected, match="repeats the previous stamp"):
        loop.control(["j1", "j2"], [0.1, 0.2], [0.0, 0.0], 1000)
    assert loop.rejected == 1


def test_time_reversal_reset_restarts_the_time_line():
    loop, _ = build_control_loop("reach")
    scenario = _quiet_load("reach")
    engine = ArmEngine(scenario.skeleton, loop.dt)
    first = _drive(loop, engine, 50)
    engine = ArmEngine(scenario.skeleton, loop.dt)  # the simulator was reset: time starts at 0 again
    again = _drive(loop, engine, 50)
    assert loop.restarts == 1
    assert again[0][0] == 0.0
    np.testing.assert_allclose([row[3] for row in again], [row[3] for row in first], rtol=0.0, atol=1e-12)


def test_restarts_due_at_one_state_add_up_as_the_table_says():
    assert set(restarts.RESTARTS) == set(Restart)
    first = restarts.combined([Restart.FIRST])
    assert (first.replan, first.ramp, first.far_start, first.counts) == (Replan.MOVED, True, True, False)
    both = restarts.combined([Restart.NEW_TARGET, Restart.TIME_REVERSAL])
    assert (both.replan, both.ramp, both.far_start, both.counts) == (Replan.TARGET, True, False, True)
    assert restarts.combined([Restart.FIRST, Restart.NEW_TARGET]).counts is False  # a target before the first state
    with pytest.raises(ValueError, match="no restart is due"):
        restarts.combined([])


def test_each_output_names_the_restarts_it_prepared():
    loop, _ = build_control_loop("reach")
    state = (["j1", "j2"], [0.1, 0.2], [0.0, 0.0])
    assert loop.control(*state, 1_000_000).restart == {Restart.FIRST}
    assert loop.control(*state, 3_000_000).restart == frozenset()
    assert loop.set_target("", 0.3, 0.2)
    loop.hold()
    assert loop.control(*state, 2_000_000).restart == {Restart.HOLD, Restart.TIME_REVERSAL, Restart.NEW_TARGET}
    np.testing.assert_array_equal(loop.followed_target(), [0.3, 0.2])
    assert loop.restarts == 1


def test_settings_are_one_record_checked_where_it_is_made():
    from skelarm_ros.nodes.params.controller import ControllerParams

    assert settings.ControlSettings.of(ControllerParams()) == settings.ControlSettings()  # every setting a parameter
    made = settings.ControlSettings.of(settings.ControlSettings(), soft_start=0.5, joint_names=["a", "b"])
    assert (made.soft_start, made.joint_names) == (0.5, ("a", "b"))
    with pytest.raises(TypeError, match="'soft_stat' is not a setting of the control loop; its settings are"):
        settings.ControlSettings.of(made, soft_stat=1.0)
    with pytest.raises(TypeError, match="object has no 'joint_names', a setting of the control loop"):
        settings.ControlSettings.of(object())
    with pytest.raises(ValueError, match="plan_from 'here' is not one of"):
        settings.ControlSettings(plan_from="here")
    with pytest.raises(ValueError, match="soft_start"):
        build_control_loop("reach", soft_start=-1.0)


def test_a_running_loop_takes_only_the_live_settings():
    loop, _ = build_control_loop("reach")
    loop.tune(settings.ControlSettings.of(loop.settings, soft_start=0.3, effort_limits=[1.0, 2.0]))
    assert loop.soft_start == 0.3
    np.testing.assert_array_equal(loop.effort_limits, [1.0, 2.0])
    with pytest.raises(ValueError, match="plan_from cannot change on a running control loop; only effort_limits"):
        loop.tune(settings.ControlSettings.of(loop.settings, plan_from="scenario"))
    assert loop.settings.soft_start == 0.3


def test_building_a_loop_reads_the_scenario_once(monkeypatch):
    import tomllib

    reads = []
    load = tomllib.load
    monkeypatch.setattr(tomllib, "load", lambda stream: reads.append(stream.name) or load(stream))
    build_control_loop("reach")
    assert reads == [str(resolve_scenario("reach"))]


def test_time_reversal_reject_rejects_earlier_states():
    loop, _ = build_control_loop("reach", time_reversal="reject")
    loop.control(["j1", "j2"], [0.1, 0.2], [0.0, 0.0], 2_000_000)
    with pytest.raises(Rejected, match="earlier than the previous"):
        loop.control(["j1", "j2"], [0.1, 0.2], [0.0, 0.0], 1_000_000)
    assert loop.control(["j1", "j2"], [0.1, 0.2], [0.0, 0.0], 4_000_000).t == pytest.approx(0.002)
    with pytest.raises(ValueError, match="time_reversal 'rewind' is not one of reset, reject"):
        loop.set_time_reversal("rewind")


def test_time_off_the_step_grid_comes_from_the_stamp():
    loop, _ = build_control_loop("reach")
    loop.control(["j1", "j2"], [0.1, 0.2], [0.0, 0.0], 7 * NANOSECONDS)
    assert loop.control(["j1", "j2"], [0.1, 0.2], [0.0, 0.0], 7 * NANOSECONDS + 3_100_000).t == pytest.approx(0.0031)


def test_effort_limits_clamp_and_are_validated():
    loop, _ = build_control_loop("reach", effort_limits=[0.5, 0.25])
    scenario = _quiet_load("reach")
    free, _ = build_control_loop("reach")
    state = (["j1", "j2"], [-1.0, 2.5], [3.0, -3.0], 0)
    unclamped = free.control(*state).torque
    assert np.abs(unclamped).max() > 0.5
    np.testing.assert_array_equal(loop.control(*state).torque, np.clip(unclamped, [-0.5, -0.25], [0.5, 0.25]))
    with pytest.raises(
        ValueError, match="effort_limits has 1 values but the arm has 2 joints; give one limit per joint"
    ):
        loop.set_effort_limits([1.0])
    with pytest.raises(ValueError, match="effort_limits must be positive"):
        loop.set_effort_limits([1.0, float("nan")])
    loop.set_effort_limits([])
    assert loop.effort_limits is None
    assert scenario.skeleton.num_joints == 2


def test_channel_columns():
    joints = ["a", "b"]
    assert channel_columns("endpoint", [1.0, 2.0], joints) is None
    assert channel_columns("q_ref", [1.0, 2.0], joints) == joints
    assert channel_columns("stiffness", 3.0, joints) == ["stiffness"]
    assert channel_columns("gains", [1.0, 2.0, 3.0], joints) == ["gains1", "gains2", "gains3"]


# -- targets -----------------------------------------------------------------------------------------


def _reach_until(loop: ControlLoop, engine: ArmEngine, target, seconds: float) -> float:
    _drive(loop, engine, round(seconds / loop.dt), origin_ns=loop.last_stamp + 1 if loop.last_stamp else 0)
    return float(np.linalg.norm(engine.endpoint(engine.q) - np.asarray(target)))


def test_reaching_controller_follows_a_new_target(shared_scenarios):
    path = shared_scenarios / "multi_target.toml"
    loop, _ = build_control_loop(path)
    scenario = _quiet_load(str(path))
    engine = ArmEngine(scenario.skeleton, loop.dt)
    target_a = scenario.task.target
    assert _reach_until(loop, engine, target_a, 3.0) < 0.03
    loop.set_target("base", 0.3, 1.2)
    controller = loop.controller
    assert _reach_until(loop, engine, [0.3, 1.2], 3.0) < 0.03
    assert loop.controller is controller  # same controller, new target
    np.testing.assert_array_equal(controller.target, [0.3, 1.2])
    assert loop.restarts == 1


def test_tracking_controller_replans_for_a_new_target():
    loop, _ = build_control_loop("reach")
    scenario = _quiet_load("reach")
    engine = ArmEngine(scenario.skeleton, loop.dt)
    _reach_until(loop, engine, scenario.task.target, 0.5)
    new = np.array([0.9, 0.9])
    loop.set_target("", *new)
    error = _reach_until(loop, engine, new, scenario.task.duration + 0.2)
    assert isinstance(loop.controller, FastComputedTorque)
    assert error < 1e-3


@pytest.mark.parametrize("scenario", ["reach", "multi_target"])
def test_a_target_published_again_and_again_is_not_new(scenario, shared_scenarios):
    """A publisher repeating the target at 10 Hz for 6 s moves the tip there once, not 60 restarts."""
    path = shared_scenarios / f"{scenario}.toml"
    loop, _ = build_control_loop(path)
    engine = ArmEngine(_quiet_load(str(path)).skeleton, loop.dt)
    goal = np.array([0.3, 1.0])
    every = round(0.1 / loop.dt)  # 10 Hz
    _drive(loop, engine, 1)
    news = []
    for _ in range(60):
        news.append(loop.set_target("base", *(goal + 1e-7)))  # the same point, to within the tolerance
        _drive(loop, engine, every, origin_ns=loop.last_stamp + 1)
    assert news == [True] + [False] * 59
    assert loop.restarts == 1
    assert float(np.linalg.norm(engine.endpoint(engine.q) - goal)) < 0.03
    moved = goal + np.array([2e-6, 0.0])
    assert loop.set_target("base", *moved)  # moved beyond the tolerance: new
    assert not loop.set_target("base", *moved)  # and waiting to apply: the same


def test_the_scenarios_own_target_is_not_new():
    loop, _ = build_control_loop("reach")
    assert not loop.set_target("base", *_quiet_load("reach").task.target)
    assert loop.restarts == 0


@pytest.mark.parametrize(
    ("frame", "point", "words"),
    [
        ("world", (1.0, 1.0, 0.0), "frame 'world'"),
        ("base", (float("nan"), 1.0, 0.0), "NaN"),
        ("base", (1.0, 1.0, 0.5), "plane z=0"),
    ],
)
def test_bad_targets_are_rejected(frame, point, words):
    loop, _ = build_control_loop("reach")
    with pytest.raises(Rejected, match=words):
        loop.set_target(frame, *point)
    assert loop.rejected == 1


def test_task_without_a_point_target_rejects_targets(shared_scenarios):
    loop, _ = build_control_loop(shared_scenarios / "periodic_curve.toml")
    with pytest.raises(Rejected, match="no point target"):
        loop.set_target("base", 1.0, 0.0)


# -- building, plugins -----------------------------------------------------------------------------


def _scenario_with_controller(tmp_path, table: str):
    text = resolve_scenario("reach").read_text(encoding="utf-8")
    head = text.split("[controller]")[0]
    path = tmp_path / "scenario.toml"
    path.write_text(head + "[controller]\n" + table, encoding="utf-8")
    return path


class _Hold(skelarm.Controller):
    """A plugin controller: torque = -gain * q."""

    def __init__(self, gain: float) -> None:
        self.gain = gain

    def control(self, t, skeleton):
        return -self.gain * skeleton.q


class _FakeEntryPoint:
    def __init__(self, name, builder=None, error=None):
        self.name, self.value, self._builder, self._error = name, f"fake_plugins:{name}", builder, error

    def load(self):
        if self._error is not None:
            raise self._error
        return self._builder


@pytest.fixture
def plugin_registry(monkeypatch):
    def install(*entries):
        def fake_entry_points(*, group):
            return list(entries) if group == plugins.PLUGIN_GROUP else []

        monkeypatch.setattr(importlib.metadata, "entry_points", fake_entry_points)

    with plugins.registry_restored():
        yield install


def test_the_registry_is_as_it_was_after_a_block_that_registered_types():
    before = skelarm.controller_types()
    with plugins.registry_restored():
        skelarm.register_controller("held_for_a_while", lambda params, skeleton, task: _Hold(0.0))
        assert "held_for_a_while" in skelarm.controller_types()
    assert skelarm.controller_types() == before


def test_plugin_controller_is_registered_and_built(tmp_path, plugin_registry):
    plugin_registry(
        _FakeEntryPoint("hold", lambda params, skeleton, task: _Hold(float(params["gain"]))),
        _FakeEntryPoint("broken", error=ImportError("no module named fake_plugins")),
        _FakeEntryPoint("joint_pd", lambda params, skeleton, task: _Hold(0.0)),
    )
    path = _scenario_with_controller(tmp_path, 'type = "hold"\ngain = 3.0\n')
    loop, problems = build_control_loop(path)
    assert "hold" in skelarm.controller_types()
    assert len(problems) == 2
    assert "'broken'" in problems[0] and "failed to load" in problems[0]
    assert "replace skelarm's built-in type 'joint_pd'" in problems[1]
    np.testing.assert_allclose(loop.control(["j1", "j2"], [0.5, -0.25], [0.0, 0.0], 0).torque, [-1.5, 0.75])
    assert isinstance(_build(_quiet_load("reach"), {"type": "joint_pd"}), JointPD)  # the built-in stays


def test_unknown_controller_type_names_the_known_ones(tmp_path, plugin_registry):
    plugin_registry()
    path = _scenario_with_controller(tmp_path, 'type = "hold"\n')
    with pytest.raises(ScenarioError, match=r"unknown controller type 'hold'; choose from \[.*'computed_torque'"):
        build_control_loop(path)


def test_dt_parameter_rebuilds_with_that_step():
    loop, _ = build_control_loop("reach", dt=0.001)
    assert loop.dt == 0.001
    assert loop.controller.engine.dt == 0.001
    with pytest.raises(ValueError, match=r"dt must be zero or a positive number \(s\), got -1.0"):
        build_control_loop("reach", dt=-1.0)


def test_fast_model_can_be_turned_off():
    loop, _ = build_control_loop("reach", fast_model=False)
    assert type(loop.controller) is skelarm.ComputedTorque


def test_joint_space_controllers_skip_the_skeletons_kinematics_without_changing_a_torque(monkeypatch):
    def run() -> list[np.ndarray]:
        loop, _ = build_control_loop("reach_four_dof_robot")
        scenario = _quiet_load("reach_four_dof_robot")
        return [row[3] for row in _drive(loop, ArmEngine(scenario.skeleton, loop.dt), 200)]

    skipped = run()
    assert twins.reads_joints_only(build_control_loop("reach")[0].controller)
    monkeypatch.setattr(loop_module, "reads_joints_only", lambda _controller: False)
    np.testing.assert_array_equal(skipped, run())
