"""A geared arm simulated by MuJoCo, an engine independent of the twin's, behind a driver as real arms have.

The arm is the package's four-link reach arm (``reach_four_dof_robot``) turned into the
vertical plane, with its masses 5-10 % off the nominal ones, centres of mass and
inertias off too, and per joint a MuJoCo hinge ``armature`` (reflected motor inertia),
``damping`` (viscous friction) and ``frictionloss`` (Coulomb friction, MuJoCo's soft
constraint). MuJoCo integrates it with RK4 at 0.5 ms, so its motion is close to the
continuous one, not the semi-implicit Euler steps the twin's engine takes.

A driver runs at 250 Hz: each period it reads the encoders (quantised), the velocity
(with noise) and the motor torque it applied over the period (with noise), publishes
them as a ``sensor_msgs/JointState`` with its own joint names in its own order and two
gripper joints among them, hands the state to a controller, and applies the command
``delay`` seconds later (a command-to-torque lag). Runs are written as rosbag2 bags
with the states on ``/joint_states`` and the commands on ``/joint_commands``.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np
import skelarm
from bagwriter import NS, START, joint_state, write_bag
from excite import robot_tables, write_toml
from mujoco_arm import SIM_STEP, Servos, actuate, mujoco_xml

from skelarm_ros.identification import excitation
from skelarm_ros.sim.engine import set_joints
from skelarm_ros.sim.scenario import JointDrive, load_arm

NOMINAL = "reach_four_dof_robot"
GRAVITY = (0.0, -9.81)
ARM_JOINTS = ["shoulder_yaw", "shoulder", "elbow", "wrist"]  # the driver's names, in the arm's order
PUBLISHED = ["gripper_left", "wrist", "elbow", "gripper_right", "shoulder", "shoulder_yaw"]  # the driver's order
TRUE_DRIVE = JointDrive.of(
    4, armature=[0.1, 0.08, 0.03, 0.008], viscous=[0.3, 0.25, 0.1, 0.03], coulomb=[0.25, 0.2, 0.1, 0.03]
)
PERIOD = 0.004  # s: the driver's 250 Hz
DELAY = 0.004  # s: from a command to the motor torque
ENCODER = 2.0 * math.pi / 2**16  # rad per count at the joint
VELOCITY_NOISE = 0.02  # rad/s
EFFORT_NOISE = 0.02  # share of each joint's torque RMS
FREQUENCIES = [0.1, 0.23, 0.41, 0.67, 1.1]
HELDOUT_FREQUENCIES = [0.13, 0.31, 0.53, 0.83, 1.3]
WARNINGS: list[str] = []
"""MuJoCo's warnings (an arm blowing up), kept here instead of printed and written to MUJOCO_LOG.TXT."""
mujoco.set_mju_user_warning(WARNINGS.append)


def nominal() -> skelarm.Skeleton:
    """The package's four-link reach arm as its scenario gives it (the prior)."""
    return load_arm(NOMINAL).skeleton


def true_arm(seed: int = 4, base: skelarm.Skeleton | None = None) -> skelarm.Skeleton:
    """The real arm: the nominal one (or ``base``) with masses 5-10 % off, centres of mass and inertias off."""
    rng = np.random.default_rng(seed)
    arm = (nominal() if base is None else base).clone()
    for link in arm.links[1:]:
        prop = link.prop
        prop.m *= 1.0 + float(rng.choice([-1.0, 1.0]) * rng.uniform(0.05, 0.10))
        prop.rgx += float(rng.uniform(-0.08, 0.08)) * prop.length
        prop.rgy += float(rng.uniform(-0.03, 0.03)) * prop.length
        prop.i *= float(rng.uniform(0.8, 1.25))
    return arm


@dataclass
class Run:
    """What the driver saw and did, one row per period."""

    time: np.ndarray
    q: np.ndarray  # as the encoders read it (quantised)
    dq: np.ndarray  # with noise
    effort: np.ndarray  # motor torque over the period that ended at the frame, with noise
    command: np.ndarray  # the command computed from the frame's state
    true_q: np.ndarray
    notes: dict = field(default_factory=dict)


class GearedArm:
    """The MuJoCo arm and its driver (a tick every ``period``, commands acting ``delay`` after the state).

    With ``servos`` the joints have servos (:class:`mujoco_arm.Servos`): the commands are their goals.
    """

    def __init__(
        self,
        arm: skelarm.Skeleton | None = None,
        drive: JointDrive = TRUE_DRIVE,
        *,
        delay: float = DELAY,
        period: float = PERIOD,
        servos: Servos | None = None,
    ):
        self.arm = arm if arm is not None else true_arm()
        self.drive = drive
        self.delay = delay
        self.period = period
        self.model = mujoco.MjModel.from_xml_string(mujoco_xml(self.arm, drive, GRAVITY, servos=servos))
        self.data = mujoco.MjData(self.model)
        self.sub = round(period / SIM_STEP)

    def reset(self, q0) -> None:
        mujoco.mj_resetData(self.model, self.data)
        self.data.qpos[:] = q0
        mujoco.mj_forward(self.model, self.data)

    @property
    def t(self) -> float:
        """MuJoCo's time (s) since the last reset."""
        return float(self.data.time)

    def step(self, tau) -> np.ndarray:
        """One MuJoCo step of :data:`SIM_STEP` under the motor command ``tau`` (``None``: none yet); their torque."""
        actuate(self.model, self.data, tau)
        mujoco.mj_step(self.model, self.data)
        return self.data.actuator_force.copy()

    def drive_run(self, control, duration: float, q0, *, rng: np.random.Generator) -> Run:
        """Run ``control(t, q, dq) -> tau`` on the driver for ``duration`` seconds from rest at ``q0``."""
        self.reset(q0)
        n = self.arm.num_joints
        frames = round(duration / self.period) + 1
        lag = round(self.delay / SIM_STEP)
        pending: deque[tuple[int, np.ndarray]] = deque()
        applied = None  # no command yet: no torque
        last = np.zeros(n)
        rows = {key: np.zeros((frames, n)) for key in ("q", "dq", "effort", "command", "true_q")}
        for k in range(frames):
            t = k * self.period
            q, dq = self.data.qpos.copy(), self.data.qvel.copy()
            rows["true_q"][k] = q
            rows["q"][k] = np.round(q / ENCODER) * ENCODER
            rows["dq"][k] = dq + VELOCITY_NOISE * rng.standard_normal(n)
            rows["effort"][k] = last
            command = np.asarray(control(t, rows["q"][k], rows["dq"][k]), dtype=np.float64)
            rows["command"][k] = command
            pending.append((k * self.sub + lag, command))
            total = np.zeros(n)
            for s in range(self.sub):
                while pending and pending[0][0] <= k * self.sub + s:
                    applied = pending.popleft()[1]
                total += self.step(applied)
            last = total / self.sub
        effort = rows["effort"]
        effort += EFFORT_NOISE * np.sqrt(np.mean(effort**2, axis=0)) * rng.standard_normal(effort.shape)
        return Run(np.arange(frames) * self.period, **rows)

    def fall(self, q0, duration: float) -> np.ndarray:
        """Joint angles (rad) every driver period as the arm falls from rest at ``q0`` with no torque."""
        self.reset(q0)
        out = [self.data.qpos.copy()]
        for _ in range(round(duration / self.period)):
            self.data.ctrl[:] = 0.0
            for _ in range(self.sub):
                mujoco.mj_step(self.model, self.data)
            out.append(self.data.qpos.copy())
        return np.array(out)


def excitation_controller(frequencies=FREQUENCIES, duration: float = 20.0, seed: int = 1):
    """The package's excitation controller (computed torque on the nominal arm, with gravity) as a driver calls it."""
    arm = load_arm("excitation").skeleton
    arm.links[1].prop.qmin, arm.links[1].prop.qmax = -math.radians(90.0), math.radians(90.0)  # room for joint 1
    task = skelarm.Task.from_dict(
        {
            "type": "joint_trajectory_tracking",
            "reference": "sum_of_sines",
            "duration": duration,
            "frequencies": list(frequencies),
            "amplitudes": [60.0, 55.0, 70.0, 50.0],
            "phases": "schroeder",
            "seed": seed,
        }
    )
    params = {"law": "computed_torque", "kp": 100.0, "kd": 20.0, "grav_vec": list(GRAVITY)}
    controller = excitation.build_controller(params, arm, task)
    skeleton = arm.clone()

    def control(t: float, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        set_joints(skeleton, q, dq)
        controller.update(t, skeleton, PERIOD)
        return controller.control(t, skeleton)

    return control, arm.q.copy()


def holding_controller(q0, kp: float = 60.0, kd: float = 3.0):
    """A PD holding the arm at ``q0`` with gravity compensation of the nominal arm: an arm that does not move."""
    from skelarm_ros.sim.engine import ArmEngine

    engine = ArmEngine(nominal(), PERIOD, grav_vec=GRAVITY)
    target = np.asarray(q0, dtype=np.float64)

    def control(t: float, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        return engine.bias(target, np.zeros_like(target)) + kp * (target - q) - kd * dq

    return control


def prior_scenario(path: Path) -> Path:
    """The prior: the nominal arm's geometry and inertial parameters, gravity in the plane, no drive."""
    return write_toml(robot_tables(nominal(), simulator={"dt": 0.002, "grav_vec": list(GRAVITY)}), path)


def write_run(
    run: Run,
    path: Path,
    *,
    velocity: bool = True,
    effort: str = "measured",
    commands: bool = True,
    storage: str = "sqlite3",
) -> Path:
    """Write a run as the driver publishes it: joint states of six joints in its order, commands of the arm's.

    ``effort``: ``measured`` (the motor torque), ``zero`` (a placeholder of zeros), ``constant``
    (one value per joint), ``none`` (an empty effort field).
    """
    order = [ARM_JOINTS.index(name) if name in ARM_JOINTS else None for name in PUBLISHED]
    messages = []
    for k, t in enumerate(run.time):
        ns = round(t * NS)
        log = START + ns
        position = [0.0 if i is None else run.q[k, i] for i in order]
        speed = [0.0 if i is None else run.dq[k, i] for i in order] if velocity else []
        if effort == "measured":
            torque = [0.0 if i is None else run.effort[k, i] for i in order]
        elif effort == "zero":
            torque = [0.0] * len(order)
        elif effort == "constant":
            torque = [0.0 if i is None else 0.5 + i for i in order]
        else:
            torque = []
        state = joint_state(ns, names=PUBLISHED, position=position, velocity=speed, effort=torque)
        messages.append(("/joint_states", log, state))
        if commands:
            command = joint_state(ns, names=ARM_JOINTS, position=(), effort=run.command[k])
            messages.append(("/joint_commands", log + 200_000, command))
    return write_bag(path, messages, storage=storage)
