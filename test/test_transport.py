"""The Fast DDS profiles the package ships (the graph's timing, UDP only): where, what they set, when used."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

import pytest

from skelarm_ros.cli.transport import (
    PROFILES_FILE_VARIABLE,
    RANGE_VARIABLE,
    USER_PROFILE_VARIABLES,
    WORKING_FOLDER_PROFILE,
    graph_environment,
    graph_profile,
    udp_localhost_environment,
    udp_localhost_profile,
)

if TYPE_CHECKING:
    from pathlib import Path

NS = {"f": "http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles"}


def test_the_environment_points_at_the_profile_and_leaves_the_rest() -> None:
    base = {"ROS_DOMAIN_ID": "7", RANGE_VARIABLE: "LOCALHOST", "PATH": "/bin"}
    env = udp_localhost_environment(base)
    assert env[PROFILES_FILE_VARIABLE] == str(udp_localhost_profile())
    assert env[RANGE_VARIABLE] == "SYSTEM_DEFAULT"  # LOCALHOST would add rmw_fastrtps's shared memory again
    assert {key: env[key] for key in ("ROS_DOMAIN_ID", "PATH")} == {"ROS_DOMAIN_ID": "7", "PATH": "/bin"}
    assert base[RANGE_VARIABLE] == "LOCALHOST"  # a copy: the caller's mapping is unchanged


def test_the_profile_is_udp_on_loopback_only_and_the_default_participant() -> None:
    root = ET.parse(udp_localhost_profile()).getroot()
    transports = root.findall("f:transport_descriptors/f:transport_descriptor", NS)
    assert [t.findtext("f:type", namespaces=NS) for t in transports] == ["UDPv4"]
    assert [a.text for a in transports[0].findall("f:interfaceWhiteList/f:address", NS)] == ["127.0.0.1"]
    (participant,) = root.findall("f:participant", NS)
    assert participant.get("is_default_profile") == "true"
    rtps = participant.find("f:rtps", NS)
    assert rtps is not None
    assert rtps.findtext("f:useBuiltinTransports", namespaces=NS) == "false"  # no shared memory
    assert [t.text for t in rtps.findall("f:userTransports/f:transport_id", NS)] == [
        transports[0].findtext("f:transport_id", namespaces=NS)
    ]
    for where in ("metatrafficUnicastLocatorList", "initialPeersList"):
        addresses = rtps.findall(f"f:builtin/f:{where}/f:locator/f:udpv4/f:address", NS)
        assert [a.text for a in addresses] == ["127.0.0.1"], where
    assert rtps.find("f:builtin/f:metatrafficMulticastLocatorList", NS) is None


def _timing(path: Path) -> dict[str, str]:
    """The discovery and heartbeat settings of a profile: element path -> text."""
    root = ET.parse(path).getroot()
    (participant,) = [p for p in root.findall("f:participant", NS) if p.get("is_default_profile") == "true"]
    (writer,) = [w for w in root.findall("f:data_writer", NS) if w.get("is_default_profile") == "true"]
    announcements = "f:rtps/f:builtin/f:discovery_config/f:initialAnnouncements"
    return {
        "announcements": participant.findtext(f"{announcements}/f:count", namespaces=NS) or "",
        "announcement period": participant.findtext(f"{announcements}/f:period/f:nanosec", namespaces=NS) or "",
        "heartbeat sec": writer.findtext("f:times/f:heartbeatPeriod/f:sec", namespaces=NS) or "",
        "heartbeat nanosec": writer.findtext("f:times/f:heartbeatPeriod/f:nanosec", namespaces=NS) or "",
    }


def test_the_graph_profile_sets_fast_heartbeats_and_more_announcements_in_both_profiles() -> None:
    expected = {"announcements": "20", "announcement period": "100000000", "heartbeat sec": "0"}
    expected["heartbeat nanosec"] = "100000000"
    assert _timing(graph_profile()) == expected
    assert _timing(udp_localhost_profile()) == expected  # the UDP-only profile keeps the same timing
    root = ET.parse(graph_profile()).getroot()
    assert root.find("f:transport_descriptors", NS) is None  # transports stay as ROS sets them
    assert root.find("f:participant/f:rtps/f:useBuiltinTransports", NS) is None


def test_the_launchers_add_the_graph_profile_when_the_user_has_none(tmp_path: Path) -> None:
    assert graph_environment({"PATH": "/bin"}, tmp_path) == {PROFILES_FILE_VARIABLE: str(graph_profile())}
    fast = {"RMW_IMPLEMENTATION": "rmw_fastrtps_cpp"}
    assert graph_environment(fast, tmp_path) == {PROFILES_FILE_VARIABLE: str(graph_profile())}


@pytest.mark.parametrize("variable", USER_PROFILE_VARIABLES)
def test_a_users_own_profile_or_another_rmw_is_left_alone(tmp_path: Path, variable: str) -> None:
    assert graph_environment({variable: "/home/me/my_profile.xml"}, tmp_path) == {}
    assert graph_environment({"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"}, tmp_path) == {}
    (tmp_path / WORKING_FOLDER_PROFILE).write_text("<profiles/>", encoding="utf-8")
    assert graph_environment({}, tmp_path) == {}  # Fast DDS loads the working folder's file itself
