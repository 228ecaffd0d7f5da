"""A short recorded lockstep launch ends quickly and loses nothing, with the graph's DDS profile or a user's own.

``skelarm-ros launch sim mode:=lockstep duration:=... record:=...`` as a user tuning a
controller runs it again and again: it exits 0, the simulator, the controller and the
recorder say their summary lines, the recorder has every state and every command, and the
controller answered every state. With a user's own Fast DDS profile (Fast DDS's 3-s
heartbeat) the end waits longer for the readers' acknowledgements, and loses nothing either.
How fast it ends is the benchmark's to show (``skelarm-ros bench startup``), not a test's.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

import pytest
from procs import START_TIMEOUT
from test_launcher_system import Launch

from skelarm_ros.bags.reader import read_messages
from skelarm_ros.cli.transport import USER_PROFILE_VARIABLES
from skelarm_ros.interface import stamp_to_nanoseconds
from skelarm_ros.sim.run import SimulatorSummary

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.slow

pytest.importorskip("rclpy")

DURATION = 1.0  # simulated s
DT_NS = 2_000_000  # the bundled reach's step
USERS_OWN = """<?xml version="1.0" encoding="UTF-8" ?>
<profiles xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles">
    <participant profile_name="users_own" is_default_profile="true">
        <rtps><name>users_own</name></rtps>
    </participant>
</profiles>
"""


def stamps(bag: Path, topic: str) -> list[int]:
    """The header stamps (ns) of a recorded topic, in log order."""
    return [stamp_to_nanoseconds(m.header.stamp.sec, m.header.stamp.nanosec) for *_, m in read_messages(bag, [topic])]


@pytest.mark.parametrize("profile", ["graph", "users_own"])
def test_a_short_recorded_lockstep_run_loses_nothing_and_ends_with_0(tmp_path, monkeypatch, profile):
    for variable in USER_PROFILE_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    if profile == "users_own":
        (tmp_path / "users_own.xml").write_text(USERS_OWN, encoding="utf-8")
        monkeypatch.setenv(USER_PROFILE_VARIABLES[0], str(tmp_path / "users_own.xml"))
    bag = tmp_path / "run"
    run = Launch("mode:=lockstep", f"duration:={DURATION}", f"record:={bag}", cwd=tmp_path)
    try:
        code = run.wait(START_TIMEOUT + 60.0)
    finally:
        run.end()
    output = run.output()
    assert code == 0, output
    summary = SimulatorSummary.read(output)
    steps = round(DURATION * 1e9 / DT_NS)
    assert summary is not None and [line.steps for line in summary.time_lines] == [steps], output
    states = steps + 1  # step 0's state and one after each step
    assert "every reliable reader took the last states" in output, output
    said = re.search(r"^\[controller\] .*stopped by a signal; sent (\d+) commands", output, re.M)
    assert said is not None, output
    sent = int(said[1])
    closing = [line for line in run.lines if line.startswith("[recorder]") and f"closed {bag}" in line]
    assert len(closing) == 1 and "none lost" in closing[0], output
    counts = Counter(topic for topic, *_ in read_messages(bag))
    assert counts["/joint_states"] == counts["/tip"] == states, counts  # every state the simulator sent
    assert counts["/joint_commands"] == sent, counts  # every command the controller sent
    assert [n for topic, n in counts.items() if topic.startswith("/controller/")] == [states, states], counts
    recorded_states = stamps(bag, "/joint_states")
    assert recorded_states == [k * DT_NS for k in range(states)]
    answered = stamps(bag, "/joint_commands")
    assert answered[:states] == recorded_states  # the controller answered every state, in order
