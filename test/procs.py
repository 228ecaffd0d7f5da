"""Shared helpers of the system tests: start real processes, end them by id, watch topics with a probe.

Every process gets this test process's environment, which conftest gives its own
``ROS_DOMAIN_ID``, ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` and ``ROS_LOG_DIR``.
Waits are on conditions with deadlines; nothing sleeps a fixed time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from waiting import Spinning

NS = 1_000_000_000
START_TIMEOUT = 60.0  # wall seconds for processes to come up and find each other on a loaded machine


def start(command: Sequence[str], log: Path, env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start a process with its output (stdout and stderr) in ``log``."""
    environment = dict(os.environ if env is None else env)
    with log.open("wb") as stream:
        return subprocess.Popen(
            list(command), env=environment, stdout=stream, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )


def node_command(
    executable: str,
    parameters: Mapping[str, object] | None = None,
    *,
    namespace: str = "",
    ros_args: Sequence[str] = (),
) -> list[str]:
    """The command line of a node of this package: ``python -m skelarm_ros.cli run <executable> --ros-args ...``."""
    command = [sys.executable, "-m", "skelarm_ros.cli", "run", executable, "--ros-args"]
    if namespace:
        command += ["-r", f"__ns:=/{namespace.strip('/')}"]
    return [*command, *parameter_args(parameters or {}), *ros_args]


def parameter_args(parameters: Mapping[str, object]) -> list[str]:
    """``-p name:=value`` words for each parameter (after ``--ros-args``)."""
    return [word for name, value in parameters.items() for word in ("-p", f"{name}:={ros_value(value)}")]


def ros_value(value: object) -> str:
    """A parameter value as ``-p name:=value`` takes it (YAML: lists in brackets, booleans lower case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(ros_value(item) for item in value) + "]"
    return str(value)


def start_node(
    executable: str,
    log: Path,
    parameters: Mapping[str, object] | None = None,
    *,
    namespace: str = "",
    ros_args: Sequence[str] = (),
) -> subprocess.Popen[bytes]:
    """Start one of this package's nodes as a process (see :func:`node_command`)."""
    return start(node_command(executable, parameters, namespace=namespace, ros_args=ros_args), log)


def start_script(script: Path, log: Path, *args: str) -> subprocess.Popen[bytes]:
    """Run a Python file of the tests as a process (a stand-in node)."""
    return start([sys.executable, str(script), *args], log)


def end(process: subprocess.Popen[bytes], timeout: float = 10.0) -> int:
    """End a process we started, by its id: SIGINT, then SIGKILL after a bounded wait; return its exit code."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=timeout)
    return process.returncode


def kill(process: subprocess.Popen[bytes]) -> int:
    """SIGKILL a process we started and reap it; return its exit code."""
    if process.poll() is None:
        process.kill()
    return process.wait(timeout=30.0)


def wait_exit(process: subprocess.Popen[bytes], timeout: float) -> int | None:
    """The process's exit code once it ends within ``timeout`` seconds, else ``None``."""
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


def catches(pid: int, signum: int) -> bool:
    """Whether the process ``pid`` runs a handler of its own for ``signum`` (its ``SigCgt`` mask, from /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    caught = next((line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), "0")
    return bool(int(caught, 16) >> (signum - 1) & 1)


def logs(folder: Path) -> str:
    """Every ``*.log`` in ``folder``, for assertion messages."""
    return "\n".join(f"--- {path.name}\n{path.read_text(errors='replace')}" for path in sorted(folder.glob("*.log")))


def keep_all() -> Any:
    """Reliable, keep-all QoS: a probe that must see every message."""
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)


def best_effort(depth: int = 1000) -> Any:
    """Best-effort, keep-last QoS: a probe that reads a best-effort (sensor-data) publisher."""
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=ReliabilityPolicy.BEST_EFFORT)


def stamp_ns(message: Any) -> int:
    """A stamped message's header stamp in nanoseconds."""
    return message.header.stamp.sec * NS + message.header.stamp.nanosec


class Probe(Spinning):
    """An in-test node over real DDS in a private context, spun in bounded loops.

    Parameters
    ----------
    namespace : str, optional
        The probe's namespace; its relative topic names resolve in it.
    name : str, optional
        The node's name.
    """

    def __init__(self, namespace: str = "", name: str = "probe") -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, namespace=namespace, context=self.context)
        super().__init__(SingleThreadedExecutor(context=self.context))
        self.executor.add_node(self.node)
        self.subscriptions: list[Any] = []

    def record(self, message_type: Any, topic: str, qos: Any = None) -> list[Any]:
        """Subscribe to ``topic`` and return the list every message is appended to."""
        messages: list[Any] = []
        self.subscriptions.append(
            self.node.create_subscription(message_type, topic, messages.append, keep_all() if qos is None else qos)
        )
        return messages

    def call(self, client: Any, request: Any, timeout: float = 10.0) -> Any:
        """Call a service and return its answer."""
        self.spin_until(client.service_is_ready, timeout, f"service {client.srv_name}")
        future = client.call_async(request)
        self.spin_until(future.done, timeout, f"the answer of {client.srv_name}")
        return future.result()

    def publisher_nodes(self, topic: str) -> list[str]:
        """Fully qualified names of the nodes publishing ``topic`` (absolute name)."""
        return sorted(
            f"{info.node_namespace.rstrip('/')}/{info.node_name}"
            for info in self.node.get_publishers_info_by_topic(topic)
        )

    def subscriber_nodes(self, topic: str) -> list[str]:
        """Fully qualified names of the nodes subscribing ``topic`` (absolute name)."""
        return sorted(
            f"{info.node_namespace.rstrip('/')}/{info.node_name}"
            for info in self.node.get_subscriptions_info_by_topic(topic)
        )

    def close(self) -> None:
        """Destroy the subscriptions and the node, and shut the context down."""
        import rclpy

        try:
            for subscription in self.subscriptions:
                self.node.destroy_subscription(subscription)
            self.executor.shutdown()
            self.node.destroy_node()
        finally:
            rclpy.try_shutdown(context=self.context)


def in_session(session: int) -> list[int]:
    """The pids of the live processes (zombies left out) of the session ``session``, read from ``/proc``.

    A launch started in a session of its own (``start_new_session=True``) leads it, and every process it starts
    stays in it, whatever its process group and wherever it is re-parented when its parent ends: what is left in
    the session once the launch has ended is what it left running.
    """
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:  # it ended meanwhile
            continue
        fields = stat.rsplit(")", 1)[-1].split()  # state, ppid, pgrp, session, ...
        if fields[0] != "Z" and int(fields[3]) == session:
            found.append(int(entry))
    return found


STANDIN_DRIVER = Path(__file__).resolve().with_name("standin_driver.py")


def run_on_the_standin(driver: Mapping[str, object], arguments: Sequence[str], folder: Path, seconds: float) -> None:
    """Run a reach on the stand-in driver over ROS, and stop it; fail unless both ended with exit code 0.

    The stand-in driver (``standin_driver.py`` with the parameters ``driver``) and ``skelarm-ros
    launch sim`` with ``arguments`` (``hardware:=none`` and what the test gives) start; once the
    controller says control starts, the driver's joint states run ``seconds`` on, then the
    launch is stopped with SIGINT and the driver ended. Their output is in ``folder``
    (``driver.log``, ``launch.log``).
    """
    from sensor_msgs.msg import JointState

    probe = Probe()
    states = probe.record(JointState, "joint_states", best_effort())
    standin = start_script(STANDIN_DRIVER, folder / "driver.log", "--ros-args", *parameter_args(driver))
    log = folder / "launch.log"
    launch = start([sys.executable, "-m", "skelarm_ros.cli", "launch", "sim", *arguments], log)
    try:
        probe.spin_until(
            lambda: bool(states) and "has a reader; control starts" in log.read_text(),
            START_TIMEOUT,
            f"control and a state\n{log.read_text()}",
        )
        end_ns = stamp_ns(states[-1]) + round(seconds * NS)
        probe.spin_until(lambda: stamp_ns(states[-1]) >= end_ns, 60.0, "the end of the reach")
        launch.send_signal(signal.SIGINT)
        code = wait_exit(launch, 30.0)
    finally:
        codes = [end(launch), end(standin)]
        probe.close()
    assert code == 0 and codes == [0, 0], logs(folder)


def run_launch(arguments: Sequence[str], timeout: float = 180.0) -> str:
    """Run ``skelarm-ros launch sim`` with ``arguments`` to its end (a lockstep run's ``duration``); its output.

    Fails unless it exits with 0.
    """
    done = subprocess.run(
        [sys.executable, "-m", "skelarm_ros.cli", "launch", "sim", *arguments],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout
