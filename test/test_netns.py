"""The two-hosts helpers without creating anything: environments, names, command lines."""

from __future__ import annotations

import pytest

from skelarm_ros.cli import netns


def test_multicast_discovery_is_subnet_over_udp_only() -> None:
    base = {"PATH": "/bin", "ROS_STATIC_PEERS": "10.0.0.9", "ROS_LOCALHOST_ONLY": "1", "ROS_DOMAIN_ID": "3"}
    env = netns.dds_environment(base, domain_id=42, discovery=netns.MULTICAST, peer="10.254.1.2")
    assert env == {
        "PATH": "/bin",
        "ROS_DOMAIN_ID": "42",
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET",
        "FASTDDS_BUILTIN_TRANSPORTS": "UDPv4",
    }


def test_static_peers_discovery_is_localhost_plus_the_other_host() -> None:
    env = netns.dds_environment({}, domain_id=7, discovery=netns.STATIC_PEERS, peer="10.254.1.1", udp_only=False)
    assert env == {"ROS_DOMAIN_ID": "7", "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "ROS_STATIC_PEERS": "10.254.1.1"}


def test_an_unknown_discovery_is_named_with_the_choices() -> None:
    with pytest.raises(ValueError, match=r"unknown discovery 'dns'; choose from \['multicast', 'static_peers'\]"):
        netns.dds_environment({}, domain_id=0, discovery="dns", peer="x")


def test_a_pair_has_two_hosts_on_one_private_slash_30() -> None:
    pair = netns.HostPair(subnet=17)
    assert (pair.a.address, pair.b.address) == ("10.254.17.1", "10.254.17.2")
    assert pair.a.namespace.startswith(netns.PREFIX) and pair.a.namespace.endswith("-a")
    assert pair.peer(pair.a) == pair.b and pair.peer(pair.b) == pair.a
    assert len(pair.a.interface) <= 15  # Linux interface names
    assert str(pair.a.shm).startswith("/dev/shm/")
    with pytest.raises(ValueError, match="subnet must be 0-255"):
        netns.HostPair(subnet=256)


def test_the_command_execs_through_to_the_program_with_the_hosts_own_shm() -> None:
    pair = netns.HostPair(subnet=3)
    command = pair.command(pair.b, ["python", "-m", "x", "--flag"])
    assert command[:4] == ["ip", "netns", "exec", pair.b.namespace]
    assert f"SKELARM_HOST_SHM={pair.b.shm}" in command
    script = command[command.index("-c") + 1]
    assert script.endswith('exec "$0" "$@"')  # the program replaces the shell: its id is the process's
    assert command[-4:] == ["python", "-m", "x", "--flag"]
