"""Scenario and robot tables: each problem with a link gets its one sentence."""

from __future__ import annotations

import copy

import pytest

from skelarm_ros.sim.scenario import ScenarioError, arm_from_config

LINK = {"length": 0.5, "mass": 1.0, "inertia": 0.02, "com": [0.25, 0.0], "limits": [-90.0, 90.0]}
ROBOT = {"skeleton": {"base_length": 0.1, "link": [dict(LINK), dict(LINK)]}, "initial": {"q": [0.0, 0.0]}}


def _with_second_link(**change: object) -> dict:
    config = copy.deepcopy(ROBOT)
    link = config["skeleton"]["link"][1]
    for key, value in change.items():
        if value is None:
            del link[key]
        else:
            link[key] = value
    return config


def test_a_good_robot_loads():
    arm = arm_from_config(copy.deepcopy(ROBOT), "robot")
    assert arm.num_joints == 2


@pytest.mark.parametrize(
    ("change", "sentence"),
    [
        ({"mass": None}, "robot: link 2 has no 'mass'; each [[skeleton.link]] needs length, mass and inertia"),
        ({"length": "long"}, "robot: link 2 'length' must be a number, got 'long'"),
        ({"inertia": float("inf")}, "robot: link 2 'inertia' must be finite, got inf"),
        ({"length": -0.5}, "robot: link 2 has length -0.5; a link length must be zero or positive (m)"),
        ({"mass": 0.0}, "robot: link 2 has mass 0.0; every link needs a positive mass (kg) for the dynamics"),
        ({"mass": -1}, "robot: link 2 has mass -1.0; every link needs a positive mass (kg) for the dynamics"),
        (
            {"inertia": -0.1},
            "robot: link 2 has inertia -0.1; a rotational inertia must be zero or positive (kg*m^2)",
        ),
        ({"com": [0.1]}, "robot: link 2 'com' must be a pair [a, b], got [0.1]"),
        ({"qmin": True}, "robot: link 2 'qmin' must be a number, got True"),
        (
            {"limits": [10.0, -10.0]},
            "robot: link 2 has limits [10.0, -10.0]; the lower limit must not exceed the upper",
        ),
        (
            {"armature": -0.1},
            "robot: link 2 has armature -0.1; an armature (the motor's inertia reflected through the gears) "
            "must be zero or positive (kg*m^2)",
        ),
        ({"viscous": "x"}, "robot: link 2 'viscous' must be a number, got 'x'"),
        (
            {"coulomb": -1},
            "robot: link 2 has coulomb -1.0; a Coulomb friction torque must be zero or positive (N*m)",
        ),
        # every number is read before any range is checked, so a wrong type is named first
        ({"length": -0.5, "mass": "heavy"}, "robot: link 2 'mass' must be a number, got 'heavy'"),
    ],
)
def test_each_link_problem_has_its_sentence(change, sentence):
    with pytest.raises(ScenarioError) as caught:
        arm_from_config(_with_second_link(**change), "robot")
    assert str(caught.value) == sentence


def test_zero_length_and_inertia_are_allowed():
    arm = arm_from_config(_with_second_link(length=0.0, inertia=0.0), "robot")
    assert arm.num_joints == 2


@pytest.mark.parametrize(
    ("config", "sentence"),
    [
        ({"skeleton": []}, "robot: [skeleton] must be a table, got []"),
        (
            {"skeleton": {"link": []}},
            "robot defines no links; add one [[skeleton.link]] table per link with length, mass and inertia",
        ),
        ({"skeleton": {"link": [1.0]}}, "robot: 'link' must be an array of tables ([[skeleton.link]]), got [1.0]"),
        (
            {"skeleton": {"base_length": "x", "link": [LINK]}},
            "robot: [skeleton].base_length must be a number, got 'x'",
        ),
    ],
)
def test_skeleton_table_problems_have_their_sentence(config, sentence):
    with pytest.raises(ScenarioError) as caught:
        arm_from_config(config, "robot")
    assert str(caught.value) == sentence


def test_the_drive_keys_are_read_per_joint_and_absent_keys_leave_skelarms_model():
    assert arm_from_config(copy.deepcopy(ROBOT), "robot").drive is None
    arm = arm_from_config(_with_second_link(armature=0.01, coulomb=0.2), "robot")
    assert arm.drive is not None
    assert arm.drive.armature.tolist() == [0.0, 0.01]
    assert arm.drive.viscous.tolist() == [0.0, 0.0]
    assert arm.drive.coulomb.tolist() == [0.0, 0.2]
    assert arm.drive.link_tables() == [{}, {"armature": 0.01, "coulomb": 0.2}]
    from skelarm_ros.sim.simulation import Simulation

    assert Simulation(arm).engine.drive is arm.drive  # the simulator honours them
