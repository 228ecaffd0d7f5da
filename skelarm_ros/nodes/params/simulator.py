# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""The ``simulator`` node's parameters (docs/simulator.md's table is made from them).

This module imports neither rclpy nor numpy.
"""

from dataclasses import dataclass
from typing import Annotated, ClassVar

from skelarm_ros.interface import COMMAND_INTERFACES, COMMANDS, MODES, REALTIME, SLICE_RANGE, check_time_slice
from skelarm_ros.nodes.params.fields import Spec, choice, count, number, param, readers

THREAD_PRIORITY = (
    "As ros2_control's controller manager offers it; needs real-time rights (`rtprio` in "
    "`/etc/security/limits.conf`, or `CAP_SYS_NICE`), else one warning and normal scheduling. Meant for realtime "
    "mode: in lockstep both nodes run flat out, and at real-time priority they leave little CPU to anything else. "
    "What it changes on time shares is in [benchmarks.md](benchmarks.md)."
)

SCHEDULER_SLICE = (
    "Linux 6.12 or later: under normal scheduling (no `thread_priority`) the process's threads ask the kernel for "
    "this slice (0.1-100 ms, no rights needed) instead of the kernel's (a base slice times a factor that grows with "
    "the cores: 1.4 ms on two cores with Linux 6.18), so a thread waking for its tick preempts CPU-bound work "
    "instead of waiting for the end of its slice; "
    "its share of the CPU stays as fair as before. An older kernel keeps its own slice (said once). "
    "What it changes on time shares is in [benchmarks.md](benchmarks.md#the-composed-graph)."
)

READERS = (
    "Relative to the namespace (`controller`) or full (`/plotter`). Step 0 goes out once each named node has a "
    "reader of the topic that can match (its type, a compatible QoS) and every such reader is matched, so none "
    "misses the start; a reader from outside the graph (`ros2 topic echo`, a plotter) never stands in for a named "
    "one. The launch names the nodes of its graph and those of `extra_readers` ([launch.md](launch.md))."
)
RETIRED = {
    "min_subscribers": "name the joint_states readers step 0 waits for in state_readers",
    "min_tip_subscribers": "name the tip readers step 0 waits for in tip_readers",
    "recorder_node": "name the recorder in state_readers and tip_readers",
    "start_settle": "name every reader step 0 waits for in state_readers and tip_readers (step 0 no longer settles)",
}


@dataclass(frozen=True)
class SimulatorParams:
    """The simulator's parameters: structural ones read-only, the timeouts and limits live."""

    retired: ClassVar[dict[str, str]] = RETIRED

    scenario: Annotated[
        str,
        param(
            "skelarm scenario or robot TOML (path or bundled name; empty: reach)",
            details="A bundled name is a file of `config/scenarios/` (`reach`, `four_dof_robot`, ...). It gives the "
            "robot, the initial state, `dt`, joint limits, gravity, and each joint's armature and friction "
            "(the per-link keys `armature`, `viscous`, `coulomb`: scenarios.md).",
        ),
    ] = ""
    dt: Annotated[
        float,
        number(
            "integration step; 0 takes the scenario's", zero=True, details="The scenario's is its `[simulator].dt`."
        ),
    ] = 0.0
    joint_names: Annotated[
        tuple[str, ...], param("joint names in arm order; empty for j1..jN", details="One distinct name per joint.")
    ] = ()
    mode: Annotated[
        str,
        choice(
            MODES,
            "realtime (a step every dt of the wall clock) or lockstep (each step waits for its command)",
            details="See [Modes](#modes).",
        ),
    ] = REALTIME
    command_interface: Annotated[
        str,
        choice(
            COMMAND_INTERFACES,
            "commands (Float64MultiArray on effort_controller/commands) or joint_commands (JointState by name, effort)",
            details="`commands` carries one value per joint in `joint_names` order; `joint_commands` is matched by "
            "name. Lockstep needs `joint_commands`. A servo arm's (the scenario's `[driver]` `interface` position or "
            "velocity, [servo.md](servo.md)) are its goals: on `position_controller/commands` or "
            "`velocity_controller/commands`, or in the `position` or `velocity` field of `joint_commands`.",
        ),
    ] = COMMANDS
    driver: Annotated[
        bool,
        param(
            "play the arm's driver the scenario's [driver] table describes: states at its rate, commands acting "
            "after its delay, its torque lag and noise; false: every step published exactly, each command at once",
            details="The launch sets it with `hardware:=twin` ([predict.md](predict.md)); without a `[driver]` "
            "table it changes nothing. The links' `effort_limit` saturates the applied torque either way "
            "([scenarios.md](scenarios.md#driver)), and a servo arm's servo turns its goals into torque either way "
            "([servo.md](servo.md)).",
        ),
    ] = False
    command_timeout: Annotated[
        float,
        number(
            "realtime: an older command gives zero torque (pauses not counted)",
            live=True,
            details="Nor does a stall of the step loop itself, a step more than half of this late (reliability.md, "
            '"Stalls of about 0.33 s"). One warning when it lapses, one info when commands resume.',
        ),
    ] = 0.5
    effort_limits: Annotated[
        tuple[float, ...],
        param(
            "per-joint torque limits (N*m) commands are clamped to; empty for none",
            live=True,
            details="One per joint, each > 0; `.inf` for a joint without a limit. A servo arm's servo torque is "
            "clamped to them.",
        ),
    ] = ()
    wrench_tolerance: Annotated[
        float,
        number(
            "largest tip force.z / torque taken as zero",
            "N or N*m",
            zero=True,
            live=True,
            details="A `tip_wrench` with a larger out-of-plane part is rejected.",
        ),
    ] = 1e-6
    publish_clock: Annotated[bool, param("publish simulated time on /clock")] = True
    real_time_factor: Annotated[
        float,
        number(
            "realtime: wall seconds between steps are dt/real_time_factor",
            "simulated s per wall s",
            details="Other nodes follow with `use_sim_time:=true`.",
        ),
    ] = 1.0
    lockstep_timeout: Annotated[
        float,
        number(
            "lockstep: longest wait for a step's command (and wrench)",
            live=True,
            details="Then the node logs what did not arrive and exits 1.",
        ),
    ] = 5.0
    duration: Annotated[
        float,
        number(
            "simulated seconds to run; 0 until stopped",
            zero=True,
            details="At the end the node waits until every reliable reader acknowledged the last state and exits 0.",
        ),
    ] = 0.0
    wait_for_wrench: Annotated[bool, param("lockstep: also wait for the tip_wrench stamped with each step's time")] = (
        False
    )
    state_readers: Annotated[
        tuple[str, ...],
        readers(
            "the nodes that read joint_states, waited for by name before step 0; empty: none",
            details=READERS + " In lockstep, and with `wait_for_controller`, every node publishing the commands "
            "is waited for as a joint_states reader too.",
        ),
    ] = ()
    tip_readers: Annotated[
        tuple[str, ...],
        readers(
            "the nodes that read tip, waited for by name before step 0; empty: none", details="As `state_readers`."
        ),
    ] = ()
    wait_for_controller: Annotated[
        bool,
        param(
            "realtime: publish step 0 only once a controller publishes commands",
            details="The launch sets it when it starts a controller; lockstep always waits.",
        ),
    ] = False
    thread_priority: Annotated[
        int,
        count(
            "SCHED_FIFO priority (1-99) for the process's threads, if permitted; 0: none", 99, details=THREAD_PRIORITY
        ),
    ] = 0
    scheduler_slice: Annotated[
        float,
        Spec(
            "realtime: the CPU slice the process's threads ask Linux for under normal scheduling (s); 0: the kernel's",
            check=check_time_slice,
            low=0.0,
            high=SLICE_RANGE[1],
            details=SCHEDULER_SLICE,
        ),
    ] = 0.0001
    markers_rate: Annotated[
        float,
        number(
            "rate of the markers for rviz (wall time); 0 turns them off",
            "Hz",
            zero=True,
            details="Arm, tip path, target and applied tip force, drawn only while someone listens.",
        ),
    ] = 30.0
