"""The UDP-only loopback profile with real processes: the realtime pair runs on it, without shared memory.

With ``config/fastdds_udp_localhost.xml`` (docs/reliability.md, "Stalls of about 0.33 s")
the simulator and the controller find each other and the controller commands the arm;
neither maps a Fast DDS shared-memory port, and every UDP socket they hold is bound to
127.0.0.1. The same run without the profile (rmw_fastrtps with
``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``) maps shared-memory ports: the check tells
the two apart.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
from pathlib import Path

import procs
import pytest
from procs import START_TIMEOUT

from skelarm_ros.cli.transport import udp_localhost_environment

pytestmark = pytest.mark.slow

pytest.importorskip("rclpy")

COUNTER = Path(__file__).with_name("state_counter.py")
COMMANDED = 100  # commanded joint states the counter waits for


def shared_memory_ports(pid: int) -> list[str]:
    """The Fast DDS shared-memory ports a process maps."""
    with open(f"/proc/{pid}/maps", encoding="utf-8") as maps:
        return sorted({line.split()[-1] for line in maps if "/dev/shm/fastrtps_port" in line})


def udp_addresses(pid: int) -> set[str]:
    """The local addresses of the UDP sockets a process holds (IPv6 ones as they are written in /proc)."""
    owned = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            owned.add(target[len("socket:[") : -1])
    addresses = set()
    for table in ("/proc/net/udp", "/proc/net/udp6"):
        with open(table, encoding="utf-8") as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                if fields[9] in owned:
                    address = fields[1].split(":")[0]
                    if len(address) == 8:  # IPv4, little-endian hex
                        address = socket.inet_ntoa(struct.pack("<I", int(address, 16)))
                    addresses.add(address)
    return addresses


@pytest.mark.parametrize("profile", [True, False], ids=["udp_profile", "default"])
def test_the_realtime_pair_runs_on_the_udp_profile_without_shared_memory(tmp_path: Path, profile: bool) -> None:
    env = udp_localhost_environment(os.environ) if profile else dict(os.environ)
    processes = []
    try:
        for name in ("controller", "simulator"):
            processes.append(procs.start(procs.node_command(name, namespace="arm1"), tmp_path / f"{name}.log", env))
        counter = procs.start(
            [sys.executable, str(COUNTER), "/arm1/joint_states", str(COMMANDED), str(START_TIMEOUT)],
            tmp_path / "counter.log",
            env,
        )
        processes.append(counter)
        assert procs.wait_exit(counter, START_TIMEOUT + 30.0) == 0, procs.logs(tmp_path)  # commands flowed
        nodes = {"controller": processes[0].pid, "simulator": processes[1].pid}
        ports = {name: shared_memory_ports(pid) for name, pid in nodes.items()}
        addresses = {name: udp_addresses(pid) for name, pid in nodes.items()}
    finally:
        codes = [procs.end(process) for process in processes]
    assert codes == [0, 0, 0], procs.logs(tmp_path)
    if profile:
        assert ports == {"controller": [], "simulator": []}
        assert addresses == {"controller": {"127.0.0.1"}, "simulator": {"127.0.0.1"}}
    else:
        assert all(ports.values()), ports
