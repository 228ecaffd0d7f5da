"""A scenario's [driver] table and its links' limits: read, checked, each problem one sentence."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from skelarm_ros.sim.driver import KEY_NAMES, DriverSpec
from skelarm_ros.sim.scenario import JointLimits, ScenarioError, arm_from_config
from skelarm_ros.sim.urdf import arm_urdf
from skelarm_ros.sim.urdf_reader import URDFError, joint_limits_from_urdf, skeleton_from_urdf

LINK = {"length": 0.5, "mass": 1.0, "inertia": 0.02, "com": [0.25, 0.0], "limits": [-90.0, 90.0]}
ROBOT = {"skeleton": {"base_length": 0.1, "link": [dict(LINK), dict(LINK)]}, "initial": {"q": [0.0, 0.0]}}


def _arm(driver=None, **second_link):
    config = copy.deepcopy(ROBOT)
    config["skeleton"]["link"][1].update(second_link)
    if driver is not None:
        config["driver"] = driver
    return arm_from_config(config, "scenario file 'arm.toml'")


def test_without_a_driver_table_there_is_no_driver_and_without_limit_keys_no_limits():
    arm = _arm()
    assert arm.driver is None
    assert arm.limits is None


def test_every_driver_key_is_optional_and_the_defaults_add_nothing():
    spec = _arm({}).driver
    assert spec == spec  # a frozen record
    assert spec.rate is None and spec.command_delay == 0.0 and spec.torque_lag == 0.0
    assert not spec.has_noise and not spec.servo
    np.testing.assert_array_equal(spec.encoder_ticks, [0.0, 0.0])
    np.testing.assert_array_equal(spec.profile_velocity, [math.inf, math.inf])
    assert spec.period(0.002) == 0.002
    assert spec.table() == {}


def test_a_per_joint_key_takes_one_number_for_all_or_one_per_joint_and_the_table_reads_back():
    table = {
        "rate": 250,
        "command_delay": 0.004,
        "position_noise": 1e-4,
        "velocity_noise": [0.02, 0.01],
        "encoder_ticks": 65536,
        "torque_lag": 0.0015,
        "effort_bias": [0.5, -0.25],
        "seed": 7,
    }
    spec = _arm(table).driver
    np.testing.assert_array_equal(spec.position_noise, [1e-4, 1e-4])
    np.testing.assert_array_equal(spec.velocity_noise, [0.02, 0.01])
    assert spec.period(0.002) == pytest.approx(0.004)
    again = _arm(spec.table()).driver
    for name in KEY_NAMES:
        np.testing.assert_array_equal(getattr(again, name), getattr(spec, name))


def test_a_servo_driver_takes_its_gains_per_joint():
    spec = _arm({"interface": "position", "servo_kp": [200.0, 2.0], "servo_kd": [5.0, 0.05]}).driver
    assert spec.servo
    np.testing.assert_array_equal(spec.servo_kp, [200.0, 2.0])


@pytest.mark.parametrize(
    ("table", "sentence"),
    [
        ({"rat": 250}, "scenario file 'arm.toml': [driver] has no key 'rat'; the nearest is 'rate' (the keys are"),
        ({"comand_delay": 0.1}, "[driver] has no key 'comand_delay'; the nearest is 'command_delay'"),
        ({"rate": 0}, "[driver].rate must be positive (Hz), got 0.0"),
        ({"rate": "fast"}, "[driver].rate must be a finite number (Hz), got 'fast'"),
        ({"command_delay": -0.001}, "[driver].command_delay must be zero or positive (s), got -0.001"),
        ({"position_noise": [1e-4, 1e-4, 1e-4]}, "[driver].position_noise has 3 values but the arm has 2 joints"),
        ({"effort_noise": float("nan")}, "[driver].effort_noise must be a finite number (N*m), got nan"),
        ({"encoder_ticks": 1000.5}, "[driver].encoder_ticks must be whole numbers above 0 (per revolution)"),
        ({"seed": -1}, "[driver].seed must be a whole number, zero or more, got -1"),
        ({"interface": "torque"}, "[driver].interface 'torque' is not one of effort, position, velocity"),
        ({"servo_kp": 100.0}, "[driver].servo_kp is a servo's setting but the driver takes effort"),
        ({"interface": "position"}, '[driver] interface = "position" needs servo_kp above 0 on every joint'),
        ({"interface": "velocity", "servo_kv": [1.0, 0.0]}, 'interface = "velocity" needs servo_kv above 0'),
        (5, "[driver] must be a table of keys"),
    ],
)
def test_a_bad_driver_table_is_refused_in_one_sentence(table, sentence):
    with pytest.raises(ScenarioError) as refused:
        _arm(table)
    assert sentence in str(refused.value)
    assert "\n" not in str(refused.value)


def test_link_limits_are_read_inf_where_a_link_has_none():
    arm = _arm(effort_limit=30, velocity_limit=3.0)
    np.testing.assert_array_equal(arm.limits.effort, [math.inf, 30.0])
    np.testing.assert_array_equal(arm.limits.velocity, [math.inf, 3.0])
    assert arm.limits.has_effort and arm.limits.has_velocity
    assert arm.limits.link_tables() == [{}, {"effort_limit": 30.0, "velocity_limit": 3.0}]


@pytest.mark.parametrize(
    ("change", "sentence"),
    [
        ({"effort_limit": 0.0}, "link 2 has effort_limit 0.0; the largest torque the joint's drive gives must be"),
        (
            {"velocity_limit": -3},
            "velocity_limit -3.0; the fastest the joint may turn must be a positive number (rad/s), or leave",
        ),
        ({"effort_limit": "big"}, "link 2 'effort_limit' must be a number, got 'big'"),
    ],
)
def test_a_bad_link_limit_is_refused_in_one_sentence(change, sentence):
    with pytest.raises(ScenarioError) as refused:
        _arm(**change)
    assert sentence in str(refused.value)


def test_the_description_carries_the_links_limits_and_a_urdf_gives_them_back():
    arm = _arm(effort_limit=30.0, velocity_limit=3.0)
    urdf = arm_urdf(arm, ["shoulder", "elbow"])
    _, names = skeleton_from_urdf(urdf)
    limits = joint_limits_from_urdf(urdf, names)
    assert limits.effort[1] == 30.0 and limits.velocity[1] == 3.0
    overridden = joint_limits_from_urdf(arm_urdf(arm, ["shoulder", "elbow"], [5.0, 6.0]), names)
    np.testing.assert_array_equal(overridden.effort, [5.0, 6.0])


def test_a_urdf_joint_without_limits_has_none():
    urdf = """<robot name="r"><link name="base"/><link name="l1"><inertial><mass value="1"/>
    <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0.1"/></inertial></link>
    <joint name="a" type="continuous"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/></joint>
    <joint name="b" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="0" velocity="2.5"/></joint></robot>"""
    limits = joint_limits_from_urdf(urdf, ["a", "b"])
    np.testing.assert_array_equal(limits.effort, [math.inf, math.inf])
    np.testing.assert_array_equal(limits.velocity, [math.inf, 2.5])
    with pytest.raises(URDFError, match="the URDF has no joint 'c'"):
        joint_limits_from_urdf(urdf, ["c"])


def test_joint_limits_of_values_are_checked():
    assert not JointLimits.none(2).has_effort
    with pytest.raises(ValueError, match="effort_limit must be a positive number"):
        JointLimits.of(2, effort=[1.0, 0.0])
    assert DriverSpec.ideal(3).table() == {}


def test_the_docs_table_of_driver_names_every_key():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "scenarios.md").read_text(encoding="utf-8")
    table = page.split("## `[driver]`")[1].split("\n## ")[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    named = {name.strip(" `") for row in rows for name in row.split("|")[1].split(",")}
    assert named == set(KEY_NAMES)
