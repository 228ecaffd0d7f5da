"""Recorder node: in-process (discovery, QoS, what a stop takes), as a process stopped or killed, under load."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import procs
import pytest
import skelarm
from ruamel.yaml import YAML

from skelarm_ros.bags.bag_to_log import bag_to_log
from skelarm_ros.bags.recording import LOST_KEY, STORAGES
from skelarm_ros.cli.graph import ARGUMENTS, RECORD_STORAGES, GraphError, describe

rclpy = pytest.importorskip("rclpy")
from rclpy.duration import Duration  # noqa: E402
from rclpy.event_handler import QoSSubscriptionEventType  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import (  # noqa: E402
    DurabilityPolicy,
    HistoryPolicy,
    QoSProfile,
    ReliabilityPolicy,
    qos_profile_sensor_data,
)
from rclpy.serialization import deserialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from waiting import wait_until  # noqa: E402

from skelarm_ros.nodes.recorder import Recorder, take_waiting  # noqa: E402

KEEP_ALL = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
WAIT = 30.0  # wall seconds for discovery and the recorder's thread on a loaded machine


def metadata(folder: Path) -> dict:
    return YAML(typ="safe").load((folder / "metadata.yaml").read_text())["rosbag2_bagfile_information"]


# -- the launch argument ---------------------------------------------------------------------------------


def test_record_storage_chooses_the_recorders_storage(tmp_path):
    assert tuple(STORAGES) == RECORD_STORAGES  # the graph offers what the recording writes
    assert ARGUMENTS["record_storage"].default == "sqlite3"
    specs = {spec.executable: spec for spec in describe({"record": str(tmp_path / "b"), "record_storage": "mcap"})}
    assert specs["recorder"].parameters["storage"] == "mcap"
    with pytest.raises(GraphError, match="record_storage 'db3' is not one of sqlite3, mcap"):
        describe({"record": str(tmp_path / "b"), "record_storage": "db3"})


# -- in-process ---------------------------------------------------------------------------------------------


@pytest.mark.ros
def test_take_waiting_takes_what_a_subscription_holds_without_an_executor(context):
    """The call rclpy's executors make; fails if a new rclpy changes it."""
    node = rclpy.create_node("take_test", context=context)
    try:
        subscription = node.create_subscription(String, "words", lambda _data: None, KEEP_ALL, raw=True)
        publisher = node.create_publisher(String, "words", KEEP_ALL)
        assert wait_until(lambda: publisher.get_subscription_count() == 1, WAIT)
        for word in ("one", "two", "three"):
            publisher.publish(String(data=word))
        assert publisher.wait_for_all_acked(Duration(seconds=10))
        taken = []
        while (data := take_waiting(subscription)) is not None:
            taken.append(deserialize_message(data, String).data)
        assert taken == ["one", "two", "three"]
    finally:
        node.destroy_node()


@pytest.mark.ros
@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_a_stop_writes_everything_the_subscriptions_hold_with_the_publishers_qos(context, tmp_path, storage):
    """Nothing spins: every message reaches the bag through the stop's own take, as after SIGINT."""
    folder = tmp_path / "bag"
    overrides = [
        Parameter("output", value=str(folder)),
        Parameter("storage", value=storage),
        Parameter("topics", value=["joint_states", "tip", "robot_description"]),
    ]
    recorder = Recorder(context=context, namespace="/arm1", parameter_overrides=overrides)
    driver = rclpy.create_node("driver", namespace="/arm1", context=context)
    try:
        states = driver.create_publisher(JointState, "joint_states", KEEP_ALL)
        driver.create_publisher(JointState, "tip", qos_profile_sensor_data)
        description = driver.create_publisher(String, "robot_description", LATCHED)
        description.publish(String(data="<robot/>"))

        def subscribed() -> bool:
            recorder.discover()
            return set(recorder.recorded) == {"/arm1/joint_states", "/arm1/tip", "/arm1/robot_description"}

        assert wait_until(subscribed, WAIT), "the recorder did not subscribe to the three topics"
        assert wait_until(lambda: states.get_subscription_count() == 1, WAIT)
        for k in range(3000):  # more than the keep-last 1000 the recorder once had, never taken before the stop
            states.publish(JointState(name=["j1"], position=[float(k)]))
        # The latched description reaches a late reader on its own time: the stop writes what arrived.
        for publisher in (states, description):
            assert publisher.wait_for_all_acked(Duration(seconds=30))
        recorder.close()
    finally:
        driver.destroy_node()
        recorder.destroy_node()
    summary = recorder.summary
    assert summary is not None and summary.error == "" and summary.lost == {}
    assert summary.messages >= 3001 and summary.topics == 3
    meta = metadata(folder)
    counts = {entry["topic_metadata"]["name"]: entry["message_count"] for entry in meta["topics_with_message_count"]}
    assert counts["/arm1/joint_states"] == 3000 and counts["/arm1/robot_description"] == 1
    topics = {entry["topic_metadata"]["name"]: entry["topic_metadata"] for entry in meta["topics_with_message_count"]}
    assert [q["reliability"] for q in topics["/arm1/tip"]["offered_qos_profiles"]] == ["best_effort"]
    assert [q["durability"] for q in topics["/arm1/robot_description"]["offered_qos_profiles"]] == ["transient_local"]
    assert topics["/arm1/joint_states"]["type_description_hash"].startswith("RIHS01_")
    assert meta["ros_distro"] == "jazzy" and meta["custom_data"][LOST_KEY] == "0"


@pytest.mark.ros
def test_a_recorder_subscribes_keep_all_with_its_publishers_reliability(context, tmp_path):
    recorder = Recorder(context=context, parameter_overrides=[Parameter("output", value=str(tmp_path / "bag"))])
    driver = rclpy.create_node("driver", context=context)
    try:
        driver.create_publisher(JointState, "joint_states", qos_profile_sensor_data)
        driver.create_publisher(JointState, "joint_commands", KEEP_ALL)

        def both() -> bool:
            recorder.discover()
            return len(recorder.recorded) == 2

        assert wait_until(both, WAIT)
        for name, reliability in (("/joint_states", "BEST_EFFORT"), ("/joint_commands", "RELIABLE")):
            info = next(i for i in recorder.get_subscriptions_info_by_topic(name) if i.node_name == "recorder")
            assert info.qos_profile.reliability.name == reliability
            assert recorder.recorded[name].qos_profile.history == HistoryPolicy.KEEP_ALL
            kinds = [handler.event_type for handler in recorder.recorded[name].event_handlers]
            assert QoSSubscriptionEventType.RCL_SUBSCRIPTION_MESSAGE_LOST in kinds
    finally:
        recorder.close()
        driver.destroy_node()
        recorder.destroy_node()


@pytest.mark.ros
def test_the_recorder_keeps_its_own_graph_s_controller_channels_not_another_stack_s(context, tmp_path):
    from geometry_msgs.msg import PointStamped
    from std_msgs.msg import Float64

    recorder = Recorder(context=context, parameter_overrides=[Parameter("output", value=str(tmp_path / "bag"))])
    controller = rclpy.create_node("controller", context=context)  # this graph's controller, in the same namespace
    optimizer = rclpy.create_node("optimizer", context=context)  # another stack on the machine
    elsewhere = rclpy.create_node("tuner", namespace="/other_stack", context=context)
    try:
        controller.create_publisher(PointStamped, "controller/equilibrium", KEEP_ALL)
        controller.create_publisher(JointState, "controller/stiffness", KEEP_ALL)
        optimizer.create_publisher(Float64, "/controller/optimizer/regularization", KEEP_ALL)
        optimizer.create_publisher(String, "/controller/mode", KEEP_ALL)
        elsewhere.create_publisher(JointState, "/controller/gains", KEEP_ALL)
        others = {"/controller/optimizer/regularization", "/controller/mode", "/controller/gains"}

        def discovered() -> bool:
            recorder.discover()
            return others <= recorder.ignored and len(recorder.recorded) == 2

        assert wait_until(discovered, WAIT), (recorder.recorded, recorder.ignored)
        assert set(recorder.recorded) == {"/controller/equilibrium", "/controller/stiffness"}
    finally:
        recorder.close()
        for node in (controller, optimizer, elsewhere, recorder):
            node.destroy_node()
    assert recorder.summary is not None and recorder.summary.topics == 2


@pytest.mark.ros
def test_a_recording_that_cannot_write_ends_the_run_with_code_1_and_says_why(context, tmp_path, monkeypatch):
    from rosbags.rosbag2 import Writer

    from skelarm_ros.bags import recording

    class FullDisk(Writer):
        def write(self, connection, timestamp, data) -> None:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(recording, "Writer", FullDisk)
    recorder = Recorder(context=context, parameter_overrides=[Parameter("output", value=str(tmp_path / "bag"))])
    driver = rclpy.create_node("driver", context=context)
    try:
        states = driver.create_publisher(JointState, "joint_states", KEEP_ALL)

        def subscribed() -> bool:
            recorder.discover()
            return states.get_subscription_count() == 1

        assert wait_until(subscribed, WAIT)

        def failed() -> bool:
            states.publish(JointState(name=["j1"], position=[0.0]))
            recorder.drain(0.1)
            return recorder.finished.done()

        assert wait_until(failed, WAIT), "the run did not end when the bag could not be written"
        assert recorder.finished.result() == 1
    finally:
        recorder.close()
        driver.destroy_node()
        recorder.destroy_node()
    assert recorder.summary is not None and "No space left on device" in recorder.summary.error
    assert not (tmp_path / "bag" / "metadata.yaml").exists()


@pytest.mark.ros
def test_an_existing_output_is_refused_with_one_sentence(context, tmp_path):
    (tmp_path / "bag").mkdir()
    with pytest.raises(ValueError, match="exists already; choose another folder for the bag"):
        Recorder(context=context, parameter_overrides=[Parameter("output", value=str(tmp_path / "bag"))])


# -- a real process -------------------------------------------------------------------------------------------


def committed_states(folder: Path) -> int:
    """Messages on /joint_states committed to the recorder's sqlite3 file so far."""
    files = list(folder.glob("*.db3"))
    if not files:
        return 0
    try:
        with sqlite3.connect(f"file:{files[0]}?mode=ro", uri=True) as db:
            row = db.execute(
                "SELECT count(*) FROM messages JOIN topics ON topics.id = messages.topic_id "
                "WHERE topics.name = '/joint_states'"
            ).fetchone()
    except sqlite3.Error:
        return 0
    return int(row[0])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("stop", "storage"),
    [(signal.SIGINT, "sqlite3"), (signal.SIGTERM, "sqlite3"), (signal.SIGKILL, "sqlite3"), (signal.SIGINT, "mcap")],
    ids=["SIGINT", "SIGTERM", "SIGKILL", "SIGINT-mcap"],
)
def test_recording_survives_stop_and_converts(tmp_path, stop, storage):
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor

    folder = tmp_path / "bag"
    env = dict(os.environ)
    command = [sys.executable, "-m", "skelarm_ros.nodes.recorder", "--ros-args", "-p", f"output:={folder}"]
    proc = subprocess.Popen(
        [*command, "-p", f"storage:={storage}"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    context = Context()
    rclpy.init(context=context)
    node = rclpy.create_node("probe", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    publisher = node.create_publisher(JointState, "joint_states", KEEP_ALL)
    published = 0
    try:
        deadline = time.monotonic() + 60.0

        def enough() -> bool:
            if storage == "sqlite3":
                return committed_states(folder) >= 30
            return publisher.get_subscription_count() >= 1 and published >= 300

        while not enough():
            assert time.monotonic() < deadline, "the recorder committed fewer than 30 joint states in 60 s"
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            msg = JointState(name=["j1", "j2"], position=[0.1 * published, 0.2], velocity=[0.0, 0.0])
            msg.effort = [0.0, 0.0]
            msg.header.stamp.sec, msg.header.stamp.nanosec = 1, published * 1000
            if publisher.get_subscription_count() >= 1:
                publisher.publish(msg)
                published += 1
            executor.spin_once(timeout_sec=0.02)
        assert publisher.wait_for_all_acked(Duration(seconds=30))
        proc.send_signal(stop)
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    output = proc.stdout.read().decode() if proc.stdout else ""
    if stop != signal.SIGKILL:  # stopped cleanly: the bag is complete, with every message published
        assert code == 0, output
        assert (folder / "metadata.yaml").is_file()
        assert f"{published} messages on 1 topic, none lost" in output, output
        assert "Traceback" not in output and "FATAL" not in output and "Failed to publish" not in output
    else:
        assert not (folder / "metadata.yaml").exists()
    summary = bag_to_log(folder, tmp_path / "out.sklog.npz")
    log = skelarm.StateLog.load(tmp_path / "out.sklog.npz")
    assert summary.frames >= 30 and log.extra["joint_names"] == ["j1", "j2"]
    if stop != signal.SIGKILL:
        assert summary.frames == published
    assert log.channel("q")[0, 1] == 0.2


# -- under load ------------------------------------------------------------------------------------------------

BUSY_DURATION = 3.0  # simulated s of each arm's lockstep run
DT = 0.002  # the bundled reach's step


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("arms", [2, 4])
def test_busy_lockstep_recordings_keep_every_frame(tmp_path, arms):
    """Arms in lockstep side by side, each recorded, beside two CPU-bound processes: every frame in every bag."""
    hogs = [procs.start([sys.executable, "-c", "while True: pass"], tmp_path / f"hog{k}.log") for k in range(2)]
    launches = {}
    try:
        for k in range(1, arms + 1):
            storage = RECORD_STORAGES[k % 2]  # arm1 mcap, arm2 sqlite3, ...
            command = [sys.executable, "-m", "skelarm_ros.cli", "launch", "sim", f"namespace:=arm{k}"]
            command += ["mode:=lockstep", f"duration:={BUSY_DURATION}", f"record:={tmp_path / f'arm{k}'}"]
            launches[k] = procs.start([*command, f"record_storage:={storage}"], tmp_path / f"arm{k}.log")
        codes = {k: procs.wait_exit(launch, 60.0 + 120.0 * arms) for k, launch in launches.items()}
    finally:
        for launch in launches.values():
            procs.end(launch, timeout=30.0)
        for hog in hogs:
            procs.kill(hog)
    assert codes == dict.fromkeys(launches, 0), f"exit codes (None: still running) {codes}\n{procs.logs(tmp_path)}"
    frames = round(BUSY_DURATION / DT) + 1
    summaries = {k: bag_to_log(tmp_path / f"arm{k}", tmp_path / f"arm{k}.sklog.npz") for k in launches}
    counts = {k: summary.frames for k, summary in summaries.items()}
    assert counts == dict.fromkeys(launches, frames), f"frames per arm (of {frames}): {counts}"
    for k, summary in summaries.items():
        assert not any(summary.masked.values()), f"arm{k}: masked {summary.masked}"
        log = skelarm.StateLog.load(tmp_path / f"arm{k}.sklog.npz")
        assert log.times.tolist() == pytest.approx([n * DT for n in range(frames)], abs=1e-9)
        meta = metadata(tmp_path / f"arm{k}")
        assert meta["storage_identifier"] == RECORD_STORAGES[k % 2]
        custom = meta["custom_data"]
        assert custom[LOST_KEY] == "0" and json.loads(custom["skelarm_ros.messages_lost_by_topic"]) == {}
        said = (tmp_path / f"arm{k}.log").read_text(errors="replace")
        assert "none lost" in said
        assert "every thread of this process runs at nice 10" in said  # the lockstep recorder yields to the loop
