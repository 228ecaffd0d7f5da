# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""Two hosts on one Linux machine: two network namespaces joined by a veth pair.

A lab runs the simulator on one machine and the controller on another; the two
hosts' tests and benchmarks stand that up on one machine: each "host" is a network
namespace of its own, with only a loopback and one end of a veth pair, addressed in
a private /30 of ``10.254.0.0/16``. Nothing is added to the machine's own network:
every address and route lives inside the namespaces, and removing the namespaces
removes the veth pair with them.

Network namespaces alone share ``/dev/shm``, where Fast DDS keeps its shared-memory
segments; each host gets a ``/dev/shm`` of its own (a folder of the machine's
``/dev/shm``, bind-mounted over it in each process's mount namespace, which
``ip netns exec`` gives every process), so the processes of one host share memory as
on one machine, and DDS traffic between the hosts can only cross the veth.

:func:`dds_environment` gives the ROS 2 / Fast DDS environment of a node on one of
two hosts, for each way of discovering the other (docs/hosts.md).

Creating namespaces needs ``CAP_SYS_ADMIN`` and ``CAP_NET_ADMIN`` (root);
:func:`unavailable` says why they cannot be created where they cannot.

This module does not import rclpy.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from types import TracebackType

PREFIX = "skelarm-"
"""Names of the namespaces made here: ``skelarm-<pid>-<n>-a`` and ``-b`` (``<pid>`` the creating process)."""
MULTICAST = "multicast"
"""Discovery by multicast on the subnet (``ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET``), over UDP only."""
STATIC_PEERS = "static_peers"
"""Discovery by unicast to the other host only (``LOCALHOST`` and ``ROS_STATIC_PEERS``): no multicast needed."""
DISCOVERY = (MULTICAST, STATIC_PEERS)
_SHM = Path("/dev/shm")
_OWN_SHM = 'mount --bind "$SKELARM_HOST_SHM" /dev/shm && exec "$0" "$@"'
_NAME = re.compile(rf"^{re.escape(PREFIX)}(\d+)-\d+-[ab]$")
_pairs = itertools.count()
_TIMEOUT = 30.0  # s for one ip command
RUNNING_TIMEOUT = 30.0
"""Seconds to wait for both veth ends to run (carrier, operstate ``UP``) after they are set up."""


class NamespaceError(RuntimeError):
    """The two hosts could not be set up (the ``ip`` command's own words follow)."""


@dataclass(frozen=True)
class Host:
    """One of the two hosts: its network namespace, its end of the veth pair, its address."""

    namespace: str
    interface: str
    address: str

    @property
    def shm(self) -> Path:
        """The folder that is ``/dev/shm`` on this host."""
        return _SHM / self.namespace


def dds_environment(
    base: Mapping[str, str], *, domain_id: int, discovery: str, peer: str, udp_only: bool = True
) -> dict[str, str]:
    """Return the environment of a node on one of two hosts.

    Parameters
    ----------
    base : Mapping[str, str]
        The environment to start from (``os.environ``); its ``ROS_STATIC_PEERS``,
        ``ROS_AUTOMATIC_DISCOVERY_RANGE`` and ``ROS_LOCALHOST_ONLY`` are replaced.
    domain_id : int
        ``ROS_DOMAIN_ID`` (0-232), the same on both hosts.
    discovery : str
        :data:`MULTICAST` (``ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET``) or
        :data:`STATIC_PEERS` (``LOCALHOST`` with ``ROS_STATIC_PEERS`` set to ``peer``).
    peer : str
        The other host's address (used by :data:`STATIC_PEERS`).
    udp_only : bool, optional
        Set ``FASTDDS_BUILTIN_TRANSPORTS=UDPv4``: Fast DDS then has no shared-memory
        transport (it has effect with :data:`MULTICAST`; in ``LOCALHOST`` mode
        rmw_fastrtps sets up its transports itself).

    Returns
    -------
    dict[str, str]
        The environment.

    Raises
    ------
    ValueError
        If ``discovery`` is not one of :data:`DISCOVERY`.
    """
    if discovery not in DISCOVERY:
        msg = f"unknown discovery '{discovery}'; choose from {list(DISCOVERY)}"
        raise ValueError(msg)
    env = {key: value for key, value in base.items() if key not in ("ROS_STATIC_PEERS", "ROS_LOCALHOST_ONLY")}
    env["ROS_DOMAIN_ID"] = str(domain_id)
    if discovery == MULTICAST:
        env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "SUBNET"
    else:
        env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
        env["ROS_STATIC_PEERS"] = peer
    if udp_only:
        env["FASTDDS_BUILTIN_TRANSPORTS"] = "UDPv4"
    return env


def _ip(*args: str) -> str:
    """Run ``ip ARGS`` and return its output; raise :class:`NamespaceError` with its words if it fails."""
    try:
        done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        msg = f"'ip {' '.join(args)}' could not run ({error})"
        raise NamespaceError(msg) from None
    if done.returncode != 0:
        msg = f"'ip {' '.join(args)}' failed: {done.stderr.strip() or f'exit {done.returncode}'}"
        raise NamespaceError(msg)
    return done.stdout


def _operstate(host: Host) -> str:
    (link,) = json.loads(_ip("-n", host.namespace, "-j", "link", "show", "dev", host.interface))
    return str(link.get("operstate", "UNKNOWN"))


def _wait_running(host: Host, deadline: float) -> None:
    """Wait until ``host``'s veth end runs (operstate ``UP``, which the kernel sets a moment after the link is up).

    Fast DDS lists the network interfaces once, when a participant is created, and only
    the running ones: a node started before this would announce no address on the veth
    and never be reached from the other host. The kernel applies the carrier change
    asynchronously, later still while other network namespaces are being created or
    removed.
    """
    while (state := _operstate(host)) != "UP":
        if time.monotonic() > deadline:
            msg = f"{host.interface} in {host.namespace} is still {state} after {RUNNING_TIMEOUT} s; it never ran"
            raise NamespaceError(msg)
        time.sleep(0.02)  # polling the kernel's link state; nothing to wait on instead


def namespaces() -> list[str]:
    """Return the network namespaces of the machine (`ip netns list`)."""
    return [line.split()[0] for line in _ip("netns", "list").splitlines() if line.strip()]


def remove_stale() -> list[str]:
    """Remove the namespaces made here by processes that no longer run (a run killed before it cleaned up).

    Returns
    -------
    list[str]
        The namespaces removed.
    """
    removed = []
    for name in namespaces():
        found = _NAME.match(name)
        if found is None:
            continue
        try:
            os.kill(int(found.group(1)), 0)
        except ProcessLookupError:
            with contextlib.suppress(NamespaceError):
                _ip("netns", "delete", name)
                removed.append(name)
            shutil.rmtree(_SHM / name, ignore_errors=True)
        except PermissionError:
            continue  # alive, someone else's
    return removed


def unavailable() -> str | None:
    """Return why two hosts cannot be set up here, or ``None`` when they can.

    Creates and removes one namespace to find out.
    """
    if shutil.which("ip") is None:
        return "the 'ip' command (iproute2) is not installed"
    name = f"{PREFIX}{os.getpid()}-{next(_pairs)}-a"
    try:
        _ip("netns", "add", name)
    except NamespaceError as error:
        return f"network namespaces cannot be created here ({error}); they need root (CAP_SYS_ADMIN, CAP_NET_ADMIN)"
    try:
        _ip("netns", "delete", name)
    except NamespaceError as error:
        return f"a network namespace could be created but not removed ({error})"
    return None


class HostPair:
    """Two network namespaces joined by a veth pair, made on entering and removed on leaving (also on failure).

    Entering returns once both veth ends run (see :func:`_wait_running`), so a node
    started right away lists the veth among its interfaces.

    Parameters
    ----------
    subnet : int | None, optional
        The third byte of the pair's /30, ``10.254.<subnet>.0/30`` (0-255); by default
        one derived from the process id. The addresses live only in the namespaces.

    Examples
    --------
    >>> with HostPair() as pair:  # doctest: +SKIP
    ...     simulator = subprocess.Popen(pair.command(pair.a, ["python", "-m", "..."]))
    """

    def __init__(self, subnet: int | None = None) -> None:
        number = next(_pairs)
        third = (os.getpid() + number) % 256 if subnet is None else subnet
        if not 0 <= third <= 255:
            msg = f"subnet must be 0-255 (the third byte of 10.254.x.0/30), got {third}"
            raise ValueError(msg)
        tag = f"{os.getpid()}-{number}"
        short = f"{os.getpid() % 100000}{number % 100}"  # interface names have at most 15 characters
        self.a = Host(f"{PREFIX}{tag}-a", f"skv{short}a", f"10.254.{third}.1")
        self.b = Host(f"{PREFIX}{tag}-b", f"skv{short}b", f"10.254.{third}.2")

    def __enter__(self) -> Self:
        remove_stale()
        try:
            for host in (self.a, self.b):
                host.shm.mkdir()
                host.shm.chmod(0o1777)  # as /dev/shm itself
                _ip("netns", "add", host.namespace)
            _ip(
                "link", "add", self.a.interface, "netns", self.a.namespace, "type", "veth",
                "peer", "name", self.b.interface, "netns", self.b.namespace,
            )  # fmt: skip
            for host in (self.a, self.b):
                _ip("-n", host.namespace, "address", "add", f"{host.address}/30", "dev", host.interface)
                _ip("-n", host.namespace, "link", "set", "lo", "up")
                _ip("-n", host.namespace, "link", "set", host.interface, "up")
            deadline = time.monotonic() + RUNNING_TIMEOUT
            for host in (self.a, self.b):
                _wait_running(host, deadline)
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.remove()

    def remove(self) -> None:
        """Remove both namespaces (and so the veth pair) and their ``/dev/shm``; what is already gone is skipped."""
        present = set(namespaces())
        for host in (self.a, self.b):
            shutil.rmtree(host.shm, ignore_errors=True)
            if host.namespace in present:
                _ip("netns", "delete", host.namespace)

    def peer(self, host: Host) -> Host:
        """Return the other host."""
        return self.b if host == self.a else self.a

    @staticmethod
    def command(host: Host, argv: Sequence[str]) -> list[str]:
        """Return the command line running ``argv`` on ``host``, with the host's own ``/dev/shm``.

        ``ip netns exec``, ``env``, ``sh`` and the command replace one another (``exec``),
        so the process started is the command itself: its id is the one to end it by.
        """
        return [
            "ip", "netns", "exec", host.namespace, "env", f"SKELARM_HOST_SHM={host.shm}",
            "sh", "-c", _OWN_SHM, *argv,
        ]  # fmt: skip

    @staticmethod
    def received_packets(host: Host) -> int:
        """Return the packets ``host`` has received on its end of the veth pair."""
        (link,) = json.loads(_ip("-n", host.namespace, "-j", "-s", "link", "show", "dev", host.interface))
        return int(link["stats64"]["rx"]["packets"])
