"""Geared arms simulated by MuJoCo, an engine independent of the twin's, behind drivers as real arms have.

Two labs share one harness (:class:`Lab`):

- :data:`FOUR_LINK`: the package's four-link reach arm (``reach_four_dof_robot``) turned
  into the vertical plane, its masses 5-10 % off the nominal ones, centres of mass and
  inertias off too, behind a 250 Hz driver that applies each command 4 ms late;
- :data:`THREE_LINK`: the geared three-link arm of the bundled ``excitation_vertical``
  scenario (1.4 m, 9 kg: a lab arm whose gravity torques are tens of N*m), its masses,
  centres of mass and inertias off the same way, behind a 500 Hz driver whose current
  loop lags each command by 1.5 ms (first order), publishing three arm joints and two
  gripper fingers.

Per joint the arm has a MuJoCo hinge ``armature`` (reflected motor inertia), ``damping``
(viscous friction) and ``frictionloss`` (Coulomb friction, MuJoCo's soft constraint).
MuJoCo integrates it with RK4 on substeps of the driver's sample, so its motion is close
to the continuous one, not the semi-implicit Euler steps the twin's engine takes.

Each period the driver reads the encoders (16 bits per revolution at the joint), the
velocity (with noise) and the motor torque it applied over the period (with noise and,
when the lab says so, a constant bias), publishes them as a ``sensor_msgs/JointState``
with its own joint names in its own order (gripper joints among them), hands the state to
a controller, and applies the command after its delay and current-loop lag. Runs are
written as rosbag2 bags with the states on ``/joint_states`` and the commands on
``/joint_commands``.
"""

from __future__ import annotations

import fcntl
import math
import os
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path

import mujoco
import numpy as np
import skelarm
from bagwriter import NS, START, joint_state, write_bag
from excite import robot_tables, write_toml

from skelarm_ros.identification import excitation
from skelarm_ros.sim.engine import ArmEngine, set_joints
from skelarm_ros.sim.mjcf import mujoco_xml
from skelarm_ros.sim.scenario import JointDrive, load_arm, load_scenario

GRAVITY = (0.0, -9.81)
ENCODER_BITS = 16
FREQUENCIES = [0.1, 0.23, 0.41, 0.67, 1.1]
HELDOUT_FREQUENCIES = [0.13, 0.31, 0.53, 0.83, 1.3]
LAB_FREQUENCIES = [0.2, 0.45, 0.8, 1.3, 2.0]  # a lab's multisine: up to 2 Hz, as an identification run excites
LAB_HELDOUT_FREQUENCIES = [0.17, 0.37, 0.65, 1.1, 1.7]
WARNINGS: list[str] = []
"""MuJoCo's warnings (an arm blowing up), kept here instead of printed and written to MUJOCO_LOG.TXT."""
mujoco.set_mju_user_warning(WARNINGS.append)


@dataclass(frozen=True)
class Lab:
    """An arm and its driver: what the tests simulate and the prior they identify it from.

    Attributes
    ----------
    nominal : str
        The bundled scenario whose arm is the nominal one (the prior's).
    joints : list[str]
        The driver's names of the arm's joints, first joint first.
    published : list[str]
        The names the driver publishes, in its order (gripper joints among them).
    drive : JointDrive
        The true armature, viscous and Coulomb friction.
    period, sim_step : float
        The driver's sample and MuJoCo's substep (s).
    delay, torque_lag : float
        From a command to the motor (s), and the current loop's first-order time constant (s).
    velocity_noise : float
        rad/s.
    effort_noise : float
        Share of each joint's torque RMS.
    effort_bias : tuple[float, ...]
        Added to the published effort per joint (N*m): the torque sensor's bias.
    gravity : tuple[float, float]
        Planar gravity (m/s^2): the vertical plane, or ``(0, 0)`` for an arm moving horizontally.
    seed : int
        Of the true arm's deviations from the nominal one.
    """

    nominal: str
    joints: list[str]
    published: list[str]
    drive: JointDrive
    period: float
    sim_step: float
    delay: float = 0.0
    torque_lag: float = 0.0
    velocity_noise: float = 0.02
    effort_noise: float = 0.02
    effort_bias: tuple[float, ...] = ()
    gravity: tuple[float, float] = GRAVITY
    seed: int = 4

    def nominal_arm(self) -> skelarm.Skeleton:
        """The nominal arm as its scenario gives it (the prior)."""
        return load_arm(self.nominal).skeleton

    def true_arm(self) -> skelarm.Skeleton:
        """The real arm: the nominal one with masses 5-10 % off, centres of mass and inertias off."""
        return true_arm(self.seed, self.nominal_arm())

    def biased(self, bias: float) -> Lab:
        """The same lab with a torque sensor reading ``bias`` N*m high on every arm joint."""
        return replace(self, effort_bias=(bias,) * len(self.joints))

    def horizontal(self) -> Lab:
        """The same lab with the arm moving in the horizontal plane (no gravity in the plane)."""
        return replace(self, gravity=(0.0, 0.0))

    def prior_scenario(self, path: Path, **tables) -> Path:
        """The prior: the nominal arm's geometry and inertias, the lab's gravity, no drive; ``tables`` added."""
        config = robot_tables(self.nominal_arm(), simulator={"dt": 0.002, "grav_vec": list(self.gravity)}, **tables)
        return write_toml(config, path)


FOUR_LINK = Lab(
    nominal="reach_four_dof_robot",
    joints=["shoulder_yaw", "shoulder", "elbow", "wrist"],
    published=["gripper_left", "wrist", "elbow", "gripper_right", "shoulder", "shoulder_yaw"],
    drive=JointDrive.of(
        4, armature=[0.1, 0.08, 0.03, 0.008], viscous=[0.3, 0.25, 0.1, 0.03], coulomb=[0.25, 0.2, 0.1, 0.03]
    ),
    period=0.004,
    sim_step=0.0005,
    delay=0.004,
)
TRUE_DRIVE = FOUR_LINK.drive


def true_arm(seed: int = 4, base: skelarm.Skeleton | None = None) -> skelarm.Skeleton:
    """A real arm: ``base`` (the four-link nominal arm) with masses 5-10 % off, centres of mass and inertias off."""
    rng = np.random.default_rng(seed)
    arm = (FOUR_LINK.nominal_arm() if base is None else base).clone()
    for link in arm.links[1:]:
        prop = link.prop
        prop.m *= 1.0 + float(rng.choice([-1.0, 1.0]) * rng.uniform(0.05, 0.10))
        prop.rgx += float(rng.uniform(-0.08, 0.08)) * prop.length
        prop.rgy += float(rng.uniform(-0.03, 0.03)) * prop.length
        prop.i *= float(rng.uniform(0.8, 1.25))
    return arm


THREE_LINK = Lab(
    nominal="excitation_vertical",
    joints=["shoulder", "elbow", "wrist"],
    published=["finger_left", "wrist", "shoulder", "finger_right", "elbow"],
    drive=JointDrive.of(3, armature=[0.3, 0.15, 0.03], viscous=[1.0, 0.5, 0.1], coulomb=[1.5, 0.8, 0.2]),
    period=0.002,
    sim_step=0.0005,
    torque_lag=0.0015,
)


@dataclass
class Run:
    """What the driver saw and did, one row per period."""

    time: np.ndarray
    q: np.ndarray  # as the encoders read it (quantised)
    dq: np.ndarray  # with noise
    effort: np.ndarray  # motor torque over the period that ended at the frame, with noise and the sensor's bias
    command: np.ndarray  # the command computed from the frame's state
    true_q: np.ndarray
    notes: dict = field(default_factory=dict)


class GearedArm:
    """A lab's MuJoCo arm and its driver."""

    def __init__(self, lab: Lab = FOUR_LINK, arm: skelarm.Skeleton | None = None):
        self.lab = lab
        self.arm = arm if arm is not None else lab.true_arm()
        self.model = mujoco.MjModel.from_xml_string(mujoco_xml(self.arm, lab.drive, lab.gravity, step=lab.sim_step))
        self.data = mujoco.MjData(self.model)
        self.sub = round(lab.period / lab.sim_step)

    def reset(self, q0) -> None:
        mujoco.mj_resetData(self.model, self.data)
        self.data.qpos[:] = q0
        mujoco.mj_forward(self.model, self.data)

    def drive_run(self, control, duration: float, q0, *, rng: np.random.Generator) -> Run:
        """Run ``control(t, q, dq) -> tau`` on the driver for ``duration`` seconds from rest at ``q0``."""
        lab = self.lab
        self.reset(q0)
        n = self.arm.num_joints
        frames = round(duration / lab.period) + 1
        lag = round(lab.delay / lab.sim_step)
        follow = 1.0 - math.exp(-lab.sim_step / lab.torque_lag) if lab.torque_lag > 0.0 else 1.0
        encoder = 2.0 * math.pi / 2**ENCODER_BITS
        pending: deque[tuple[int, np.ndarray]] = deque()
        wanted = np.zeros(n)
        last = np.zeros(n)
        rows = {key: np.zeros((frames, n)) for key in ("q", "dq", "effort", "command", "true_q")}
        for k in range(frames):
            t = k * lab.period
            q, dq = self.data.qpos.copy(), self.data.qvel.copy()
            rows["true_q"][k] = q
            rows["q"][k] = np.round(q / encoder) * encoder
            rows["dq"][k] = dq + lab.velocity_noise * rng.standard_normal(n)
            rows["effort"][k] = last
            command = np.asarray(control(t, rows["q"][k], rows["dq"][k]), dtype=np.float64)
            rows["command"][k] = command
            pending.append((k * self.sub + lag, command))
            total = np.zeros(n)
            for s in range(self.sub):
                while pending and pending[0][0] <= k * self.sub + s:
                    wanted = pending.popleft()[1]
                self.data.ctrl[:] += follow * (wanted - self.data.ctrl)  # the current loop's lag
                mujoco.mj_step(self.model, self.data)
                total += self.data.actuator_force
            last = total / self.sub
        effort = rows["effort"]
        effort += lab.effort_noise * np.sqrt(np.mean(effort**2, axis=0)) * rng.standard_normal(effort.shape)
        if lab.effort_bias:
            effort += np.asarray(lab.effort_bias)
        return Run(np.arange(frames) * lab.period, **rows)

    def fall(self, q0, duration: float) -> np.ndarray:
        """Joint angles (rad) every driver period as the arm falls from rest at ``q0`` with no torque."""
        self.reset(q0)
        out = [self.data.qpos.copy()]
        for _ in range(round(duration / self.lab.period)):
            self.data.ctrl[:] = 0.0
            for _ in range(self.sub):
                mujoco.mj_step(self.model, self.data)
            out.append(self.data.qpos.copy())
        return np.array(out)


def _driver_calls(controller, arm: skelarm.Skeleton, period: float):
    """A skelarm controller as a driver calls it: ``control(t, q, dq) -> tau`` each period."""
    skeleton = arm.clone()

    def control(t: float, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        set_joints(skeleton, q, dq)
        controller.update(t, skeleton, period)
        return controller.control(t, skeleton)

    return control


def sines(duration: float, frequencies, amplitudes, **keys) -> skelarm.Task:
    """A sum-of-sines task (degrees), as an excitation scenario's ``[task]`` gives it."""
    return skelarm.Task.from_dict(
        {
            "type": "joint_trajectory_tracking",
            "reference": "sum_of_sines",
            "duration": duration,
            "frequencies": list(frequencies),
            "amplitudes": list(amplitudes),
            "phases": "schroeder",
            **keys,
        }
    )


def excitation_controller(frequencies=FREQUENCIES, duration: float = 20.0, lab: Lab = FOUR_LINK):
    """The package's excitation for the lab's arm (computed torque on the nominal arm, with gravity).

    The four-link arm takes the bundled ``excitation`` scenario's arm as its model (its first
    joint given room); the three-link arm its own scenario, ``excitation_vertical``, whose
    task is kept but for the frequencies and the duration.
    """
    if lab.nominal == THREE_LINK.nominal:
        setup = load_arm(lab.nominal)
        arm, table = setup.skeleton, dict(setup.config["task"])
        task = skelarm.Task.from_dict({**table, "duration": duration, "frequencies": list(frequencies)})
        params = {key: value for key, value in setup.config["controller"].items() if key != "type"}
    else:
        arm = load_arm("excitation").skeleton
        arm.links[1].prop.qmin, arm.links[1].prop.qmax = -math.radians(90.0), math.radians(90.0)  # room for joint 1
        task = sines(duration, frequencies, [60.0, 55.0, 70.0, 50.0])
        params = {"law": "computed_torque", "kp": 100.0, "kd": 20.0, "grav_vec": list(GRAVITY)}
    controller = excitation.build_controller(params, arm, task)
    return _driver_calls(controller, arm, lab.period), arm.q.copy()


def lab_pd(lab: Lab, posture_deg, amplitudes_deg, frequencies=LAB_FREQUENCIES, duration: float = 20.0):
    """A lab's own PD (no model) tracking a multisine of the given amplitudes about a posture (degrees)."""
    arm = lab.nominal_arm()
    arm.set_state(q=np.radians(posture_deg))
    task = sines(duration, frequencies, amplitudes_deg)
    gains = {"law": "pd", "kp": [900.0, 450.0, 60.0], "kd": [60.0, 25.0, 2.0]}
    controller = excitation.build_controller(gains, arm, task)
    return _driver_calls(controller, arm, lab.period), arm.q.copy()


def holding_controller(q0, lab: Lab = FOUR_LINK, kp: float = 60.0, kd: float = 3.0):
    """A PD holding the arm at ``q0`` with gravity compensation of the nominal arm: an arm that does not move."""
    engine = ArmEngine(lab.nominal_arm(), lab.period, grav_vec=lab.gravity)
    target = np.asarray(q0, dtype=np.float64)

    def control(t: float, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        return engine.bias(target, np.zeros_like(target)) + kp * (target - q) - kd * dq

    return control


def write_run(
    run: Run,
    path: Path,
    *,
    lab: Lab = FOUR_LINK,
    velocity: bool = True,
    effort: str = "measured",
    commands: bool = True,
    storage: str = "sqlite3",
) -> Path:
    """Write a run as the lab's driver publishes it: joint states of every joint in its order, the arm's commands.

    ``effort``: ``measured`` (the motor torque), ``zero`` (a placeholder of zeros), ``constant``
    (one value per joint), ``none`` (an empty effort field).
    """
    order = [lab.joints.index(name) if name in lab.joints else None for name in lab.published]
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
        state = joint_state(ns, names=lab.published, position=position, velocity=speed, effort=torque)
        messages.append(("/joint_states", log, state))
        if commands:
            command = joint_state(ns, names=lab.joints, position=(), effort=run.command[k])
            messages.append(("/joint_commands", log + 200_000, command))
    return write_bag(path, messages, storage=storage)


def shared_folder(tmp_path_factory, name: str, build) -> Path:
    """A folder ``build(folder)`` fills once per test session, however many pytest-xdist workers ask for it.

    The MuJoCo runs and their bags are made by the first worker that needs them (the others
    wait on a lock) in the session's own temporary folder, which every worker shares.
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's folder, above each worker's
    folder = root / f"shared-{name}"
    folder.mkdir(exist_ok=True)
    with (root / f"shared-{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = folder / "done"
        if not done.exists():
            build(folder)
            done.touch()
    return folder


def tip_errors(path: Path, angles: np.ndarray) -> np.ndarray:
    """The tip's distance (m) from the scenario's target at each row of joint ``angles`` (rad)."""
    setup, target = load_arm(path), load_scenario(path).task.target
    engine = ArmEngine(setup.skeleton, setup.dt)
    return np.array([math.dist(engine.endpoint(q), target) for q in angles])


def reach_behind_driver(path: Path, period: float, delay: float, duration: float = 2.0) -> tuple[np.ndarray, int]:
    """A three-link scenario's reach of ``duration`` s on its arm in MuJoCo (horizontal, no drive), behind a driver
    of ``period`` whose commands act ``delay`` after their state.

    The controller is the one the graph gives a real arm's driver (hardware:=none). Returns
    the tip's distance from the scenario's target at each tick, and MuJoCo's count of unstable steps.
    """
    from skelarm_ros.cli.predict import twin_loop

    setup = load_arm(path)
    loop, _ = twin_loop({"scenario": str(path), "hardware": "none", "mode": "realtime"})
    lab = replace(THREE_LINK, drive=JointDrive.ideal(3), delay=delay, period=period, torque_lag=0.0, gravity=(0.0, 0.0))
    arm = GearedArm(lab, setup.skeleton)  # in the horizontal plane, as the scenario
    names = loop.joint_names

    def control(t: float, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        return loop.control(names, q.tolist(), dq.tolist(), round(t * 1e9)).torque

    run = arm.drive_run(control, duration, setup.skeleton.q, rng=np.random.default_rng(0))
    return tip_errors(path, run.true_q), arm.data.warning[mujoco.mjtWarning.mjWARN_BADQACC].number
