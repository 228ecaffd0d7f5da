"""The UDP-only loopback profile the package ships: where it is, what it sets, what the file says."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from skelarm_ros.cli.transport import (
    PROFILES_FILE_VARIABLE,
    RANGE_VARIABLE,
    udp_localhost_environment,
    udp_localhost_profile,
)

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
