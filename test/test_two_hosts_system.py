"""Two hosts: the simulator in one network namespace, the controller in another, joined by a veth pair.

Each namespace has a loopback, its end of the veth and a private 10.254.x.0/30 address,
and every process a /dev/shm of its own (``skelarm_ros.cli.netns``), so the DDS traffic
between the two hosts can only cross the veth, as between two machines. Skipped with the
reason where namespaces cannot be created (they need root).
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import procs
import pytest
import skelarm
from conftest import reference_run

from skelarm_ros.cli import netns
from skelarm_ros.sim.engine import ArmEngine
from skelarm_ros.sim.scenario import load_arm

pytestmark = pytest.mark.slow

TOLERANCE = 1e-9
PROBE = Path(__file__).with_name("joint_state_probe.py")
READERS = ["controller", "joint_state_probe"]  # the simulator's joint_states readers, by name
ISOLATION_WAIT = 10.0  # s the far host listens for a simulator it must not hear


@pytest.fixture
def hosts():
    reason = netns.unavailable()
    if reason is not None:
        pytest.skip(reason)
    with netns.HostPair() as pair:
        yield pair


def environment(hosts: netns.HostPair, host: netns.Host, discovery: str) -> dict[str, str]:
    domain = int(os.environ["ROS_DOMAIN_ID"])
    return netns.dds_environment(os.environ, domain_id=domain, discovery=discovery, peer=hosts.peer(host).address)


def start_on(hosts: netns.HostPair, host: netns.Host, command: list[str], log: Path, env: dict[str, str]):
    return procs.start(hosts.command(host, command), log, env)


def probe_command(frames: int, output: Path, timeout: float) -> list[str]:
    return [sys.executable, str(PROBE), "--frames", str(frames), "--output", str(output), "--timeout", str(timeout)]


@pytest.mark.parametrize("discovery", netns.DISCOVERY)
def test_lockstep_across_two_hosts_equals_the_offline_run(discovery, hosts, shared_scenarios, tmp_path):
    path = shared_scenarios / "reach.toml"
    reference = reference_run(path)
    frames, duration = len(reference.times), float(reference.times[-1])
    here, there = environment(hosts, hosts.a, discovery), environment(hosts, hosts.b, discovery)
    received = hosts.received_packets(hosts.a)
    common = {"scenario": path, "command_interface": "joint_commands"}
    timeout = procs.START_TIMEOUT + frames * 0.05
    processes = []
    try:
        # the probe listens on the controller's host: every state it records crossed the veth
        probe = start_on(
            hosts, hosts.b, probe_command(frames, tmp_path / "states.npz", timeout), tmp_path / "probe.log", there
        )
        processes.append(probe)
        simulator_command = procs.node_command(
            "simulator", {**common, "mode": "lockstep", "duration": duration, "state_readers": READERS}
        )
        simulator = start_on(hosts, hosts.a, simulator_command, tmp_path / "simulator.log", here)
        processes.append(simulator)
        controller = start_on(
            hosts, hosts.b, procs.node_command("controller", common), tmp_path / "controller.log", there
        )
        processes.append(controller)
        assert procs.wait_exit(simulator, timeout) == 0, procs.logs(tmp_path)
        assert procs.wait_exit(probe, 30.0) == 0, procs.logs(tmp_path)
    finally:
        codes = [procs.end(process) for process in processes]
    assert codes == [0, 0, 0], procs.logs(tmp_path)
    assert f"ran {frames - 1} steps" in (tmp_path / "simulator.log").read_text()
    # the commands of every step came back over the veth
    assert hosts.received_packets(hosts.a) - received >= frames - 1
    states = np.load(tmp_path / "states.npz")
    np.testing.assert_allclose(states["stamp"], reference.times, rtol=0.0, atol=1e-9)
    np.testing.assert_allclose(states["q"], reference.channel("q"), rtol=0.0, atol=TOLERANCE)
    np.testing.assert_allclose(states["dq"], reference.channel("dq"), rtol=0.0, atol=TOLERANCE)
    np.testing.assert_array_equal(states["effort"][0], 0.0)
    np.testing.assert_allclose(states["effort"][1:], reference.channel("tau")[:-1], rtol=0.0, atol=TOLERANCE)


def test_realtime_reach_across_two_hosts(hosts, shared_scenarios, tmp_path):
    path = shared_scenarios / "reach.toml"
    arm = load_arm(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        task = skelarm.load_scenario(path).task
    duration = task.duration + 0.5
    frames = int(duration / arm.dt)  # the states up to the run's last few steps
    here, there = environment(hosts, hosts.a, netns.MULTICAST), environment(hosts, hosts.b, netns.MULTICAST)
    common = {"scenario": path, "command_interface": "joint_commands"}
    simulator_parameters = {
        **common,
        "mode": "realtime",
        "duration": duration,
        "state_readers": READERS,
        "wait_for_controller": True,
    }
    processes = []
    try:
        probe = start_on(
            hosts, hosts.b, probe_command(frames, tmp_path / "states.npz", procs.START_TIMEOUT + 3 * duration),
            tmp_path / "probe.log", there,
        )  # fmt: skip
        processes.append(probe)
        simulator = start_on(
            hosts, hosts.a, procs.node_command("simulator", simulator_parameters), tmp_path / "simulator.log", here
        )
        processes.append(simulator)
        processes.append(
            start_on(hosts, hosts.b, procs.node_command("controller", common), tmp_path / "controller.log", there)
        )
        assert procs.wait_exit(probe, procs.START_TIMEOUT + 3 * duration + 30.0) == 0, procs.logs(tmp_path)
        assert procs.wait_exit(simulator, 30.0) == 0, procs.logs(tmp_path)  # it stops by itself after duration
    finally:
        codes = [procs.end(process) for process in processes]
    assert codes == [0, 0, 0], procs.logs(tmp_path)
    states = np.load(tmp_path / "states.npz")
    assert states["stamp"][-1] >= task.duration
    tip = ArmEngine(arm.skeleton, arm.dt).endpoint(states["q"][-1])
    assert math.dist(tip, task.target) < task.tolerance, (tip, procs.logs(tmp_path))


def test_localhost_discovery_without_peers_keeps_the_hosts_apart(hosts, shared_scenarios, tmp_path):
    """The negative: what makes the runs above meet is the discovery set-up, not a path around the veth."""
    path = shared_scenarios / "reach.toml"
    apart = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "FASTDDS_BUILTIN_TRANSPORTS": "UDPv4"}
    apart.pop("ROS_STATIC_PEERS", None)
    processes = []
    try:
        simulator = start_on(
            hosts, hosts.a, procs.node_command("simulator", {"scenario": path, "mode": "realtime"}),
            tmp_path / "simulator.log", apart,
        )  # fmt: skip
        processes.append(simulator)
        near = start_on(hosts, hosts.a, probe_command(5, tmp_path / "near.npz", 60.0), tmp_path / "near.log", apart)
        far = start_on(
            hosts, hosts.b, probe_command(1, tmp_path / "far.npz", ISOLATION_WAIT), tmp_path / "far.log", apart
        )
        processes += [near, far]
        assert procs.wait_exit(near, 90.0) == 0, procs.logs(tmp_path)  # the simulator publishes on its host
        assert procs.wait_exit(far, ISOLATION_WAIT + 60.0) == 2, procs.logs(tmp_path)
    finally:
        codes = [procs.end(process) for process in processes]
    assert codes == [0, 0, 2], procs.logs(tmp_path)
    assert int(np.load(tmp_path / "far.npz")["publishers"]) == 0
    assert "PROBE 0 states, 0 publishers; nodes seen: ['/joint_state_probe']" in (tmp_path / "far.log").read_text()


def test_host_pairs_are_removed_on_failure_too():
    reason = netns.unavailable()
    if reason is not None:
        pytest.skip(reason)
    pair = netns.HostPair()
    with pytest.raises(RuntimeError, match="inside"), pair:
        assert {pair.a.namespace, pair.b.namespace} <= set(netns.namespaces())
        raise RuntimeError("a failure inside")
    assert not {pair.a.namespace, pair.b.namespace} & set(netns.namespaces())
