# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The ``controller`` node's parameters (docs/controller.md's table is made from them).

This module imports neither rclpy nor numpy.
"""

from dataclasses import dataclass
from typing import Annotated, ClassVar

from skelarm_ros.interface import (
    COMMAND_INTERFACES,
    COMMANDS,
    CONTROLLER_MODELS,
    EFFORT,
    INTERFACES,
    MODEL_ARM,
    PLAN_FROM,
    PLAN_FROM_STATE,
    POSITION_MODES,
    REFERENCE,
    SLICE_RANGE,
    STATE_STAMPS,
    TIME_REVERSAL_MODES,
    check_time_slice,
)
from skelarm_ros.nodes.params.fields import Spec, choice, count, number, param, readers

RETIRED = {
    "min_subscribers": "name the command topic's readers in command_readers",
    "min_channel_subscribers": "name the controller/<channel> readers in channel_readers",
    "recorder_node": "name the recorder in command_readers and channel_readers",
    "wait_for_reader": "with live_arm, control waits for the command readers (any one when none is named)",
}


@dataclass(frozen=True)
class ControllerParams:
    """The controller's parameters: structural ones read-only; effort limits, time reversal and channels live."""

    retired: ClassVar[dict[str, str]] = RETIRED

    scenario: Annotated[
        str,
        param(
            "skelarm scenario TOML (path or bundled name; empty: bundled reach)",
            details="The same file the simulator reads.",
        ),
    ] = ""
    joint_names: Annotated[tuple[str, ...], param("joint names in the arm's order; empty: j1 ... jN")] = ()
    command_joints: Annotated[
        tuple[str, ...],
        param(
            "joint_names in the order the commands carry them (the driver's); empty: joint_names order",
            details="A driver's effort controller lists them in its `joints` parameter: the same names as "
            "`joint_names`, reordered.",
        ),
    ] = ()
    command_interface: Annotated[
        str,
        choice(
            COMMAND_INTERFACES,
            "commands: Float64MultiArray on effort_controller/commands (position_controller/commands, "
            "velocity_controller/commands); joint_commands: JointState on joint_commands",
            details="The same name and values as the simulator's. A `joint_commands` message carries the command in "
            "the field of `interface`.",
        ),
    ] = COMMANDS
    interface: Annotated[
        str,
        choice(
            INTERFACES,
            "what the driver takes: effort (torques), position or velocity (a servo's goals)",
            details="See [Servo arms](servo.md). The simulator's servo is the scenario's `[driver]`; the launch "
            "refuses an `interface` that is not it.",
        ),
    ] = EFFORT
    position_mode: Annotated[
        str,
        choice(
            POSITION_MODES,
            "how a servo's goal is made: a tracking controller's reference (reference), or any controller's torque "
            "through the servo's stiffness, goal = q + (tau + servo_kd dq) / servo_kp (stiffness)",
            details="With `interface` position or velocity; `stiffness` takes the servo's gains from the scenario's "
            "`[driver]`. See [Servo arms](servo.md).",
        ),
    ] = REFERENCE
    dt: Annotated[
        float,
        number(
            "control step handed to the controller; 0: the scenario's [simulator].dt",
            zero=True,
            details="Another value rebuilds the controller with it (MPC predicts with it).",
        ),
    ] = 0.0
    fast_model: Annotated[
        bool,
        param(
            "Pinocchio model for computed torque, inverse-dynamics PD and MPC", details="See [Fast model](#fast-model)."
        ),
    ] = True
    controller_model: Annotated[
        str,
        choice(
            CONTROLLER_MODELS,
            "model of computed torque, inverse-dynamics PD and MPC: arm (the scenario's grav_vec, the links' armature "
            "and friction) or skelarm (skelarm's own, gravity-free)",
            details="`skelarm` equals `skelarm.run_scenario` offline; both are the same for a scenario without "
            "gravity and drive keys. See [Driving a real arm](#driving-a-real-arm).",
        ),
    ] = MODEL_ARM
    plan_from: Annotated[
        str,
        choice(
            PLAN_FROM,
            "a tracking controller's reference starts at the first state it controls (state) or at the scenario's "
            "initial pose (scenario)",
            details="From the scenario's very pose both are the same plan (lockstep equals offline). See "
            "[Driving a real arm](#driving-a-real-arm).",
        ),
    ] = PLAN_FROM_STATE
    live_arm: Annotated[
        bool,
        param(
            "the arm is a real one behind a driver that holds the last command: only the newest joint state is "
            "kept, control waits for a command reader, a time line starts at the state after the one it was "
            "planned on, and a diverging arm is stopped with zero torque and exit code 1",
            details="The launch sets it with `hardware:=none`. Leave it false beside the simulator or a replay. "
            "See [Driving a real arm](#driving-a-real-arm).",
        ),
    ] = False
    soft_start: Annotated[
        float,
        number(
            "the controller's torque ramps in over the torque that holds the arm over this time at the start of "
            "control; 0: none",
            zero=True,
            live=True,
            details="The first command holds the arm where it is; the effort limits do not ramp. The launch sets "
            "1 s with `hardware:=none`. See [Driving a real arm](#driving-a-real-arm).",
        ),
    ] = 0.0
    state_timeout: Annotated[
        float,
        number(
            "no new joint state for this long: one zero command and a warning; 0: never",
            zero=True,
            live=True,
            details="Control resumes with the next state, restarting from it. The launch sets 0 in lockstep "
            "and in a shadow replay, where nothing holds a command.",
        ),
    ] = 0.25
    zero_on_stop: Annotated[
        bool,
        param(
            "publish zero torque as the last command when the node stops (a signal, a launch shutdown, an error)",
            details="A driver holds the last command it got. The launch sets it false in lockstep and in a shadow "
            "replay, where no arm holds a command and a recording ends with the run's own last command.",
        ),
    ] = True
    qos_depth: Annotated[
        int,
        count(
            "history depth of joint_states and the command topic",
            low=1,
            details="With `live_arm` joint_states keeps only the newest state (see "
            "[Driving a real arm](#driving-a-real-arm)).",
        ),
    ] = 10
    reliable_states: Annotated[
        bool,
        param(
            "read joint_states reliably (lockstep: every state answered); false takes best-effort drivers too",
            details='Best effort takes reliable and best-effort drivers alike (interfaces.md, "QoS"). The launch sets '
            "it in lockstep, where every state is answered.",
        ),
    ] = False
    effort_limits: Annotated[
        tuple[float, ...],
        param(
            "per-joint torque bounds (N*m) in place of the links' effort_limit; empty: the links' (none without)",
            live=True,
            details="One per joint, each positive, `inf` for none; every command is clamped to them.",
        ),
    ] = ()
    time_reversal: Annotated[
        str,
        choice(
            TIME_REVERSAL_MODES,
            "what a state stamped earlier than the previous one does",
            live=True,
            details="See [Time and reset](#time-and-reset).",
        ),
    ] = TIME_REVERSAL_MODES[0]
    state_stamps: Annotated[
        str,
        choice(
            STATE_STAMPS,
            "what times a joint state: its header's stamp, or the node's clock when it arrives",
            details="`arrival` is for a driver that does not stamp its states (every stamp zero, or one stamp "
            "repeated), which `header` refuses after the first: the time line then follows the node's clock "
            "(`/clock` with `use_sim_time`), and a `joint_commands` command still carries the state's own stamp. "
            "Not for lockstep or a replay, whose stamps are the time line.",
        ),
    ] = STATE_STAMPS[0]
    publish_channels: Annotated[bool, param("publish the controller's channels on controller/<channel>", live=True)] = (
        True
    )
    thread_priority: Annotated[
        int,
        count(
            "SCHED_FIFO priority (1-99) for the process's threads, if permitted; 0: none",
            99,
            details="As the simulator's ([simulator.md](simulator.md)).",
        ),
    ] = 0
    scheduler_slice: Annotated[
        float,
        Spec(
            "the CPU slice the process's threads ask Linux for under normal scheduling (s); 0: the kernel's",
            check=check_time_slice,
            low=0.0,
            high=SLICE_RANGE[1],
            details="As the simulator's ([simulator.md](simulator.md)): the controller answers each state as it "
            "comes, a short piece of work, in every mode.",
        ),
    ] = 0.0001
    command_readers: Annotated[
        tuple[str, ...],
        readers(
            "the nodes that read the command topic, waited for by name before the first command (held back in "
            "order until then); empty: none",
            details="Relative to the namespace or full, as the simulator's `state_readers` "
            "([simulator.md](simulator.md)): each named node needs a reader that can match, and every such reader "
            "matched. The launch names its simulator and its recorder, so a recording keeps the command of step 0. "
            "On a live arm (`live_arm`) control first waits for one reader, the driver's (a real driver's effort "
            "controller's name cannot be known), so the time line starts when commands can arrive.",
        ),
    ] = ()
    channel_readers: Annotated[
        tuple[str, ...],
        readers(
            "the nodes that read controller/<channel>, waited for by name as well; empty: none",
            details="The launch names its recorder.",
        ),
    ] = ()
