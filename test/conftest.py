"""Shared test fixtures: where the shared data is, and an isolated ROS environment."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import tempfile
import warnings
from pathlib import Path
from typing import IO

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("SKELARM_ROS_SHARED_DATA", REPO.parent / "shared" / "data"))
SCENARIOS = SHARED_DATA / "scenarios"
BAGS = SHARED_DATA / "bags"
BUNDLED = REPO / "config" / "scenarios"


def scenario_file(name: str) -> Path:
    """A scenario by name: the shared file where the shared data is, else the package's bundled copy of it.

    The bundled copies hold the same robots and tasks (their comments name this package's commands), so
    a test that needs an arm, not the shared files themselves, runs on a fresh clone without them.
    """
    shared = SCENARIOS / f"{name}.toml"
    return shared if shared.is_file() else BUNDLED / f"{name}.toml"


def robot_files() -> list[Path]:
    """Every shared scenario or robot file, else every bundled one, sorted."""
    return sorted(SCENARIOS.glob("*.toml")) or sorted(BUNDLED.glob("*.toml"))


def full_scenarios() -> list[Path]:
    """The shared full scenarios (robot + task + controller), sorted."""
    import tomllib

    def is_full(path: Path) -> bool:
        tables = tomllib.loads(path.read_text(encoding="utf-8"))
        return "task" in tables and "controller" in tables

    return sorted(path for path in SCENARIOS.glob("*.toml") if is_full(path))


@functools.cache
def reference_run(path: Path):
    """``skelarm.run_scenario`` of a scenario file, computed once per test session."""
    import skelarm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return skelarm.run_scenario(skelarm.load_scenario(path))


def installed_share() -> Path:
    """The installed package's share folder (``colcon build``); skips the calling test module where there is none."""
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

    try:
        return Path(get_package_share_directory("skelarm_ros"))
    except (PackageNotFoundError, OSError):
        pytest.skip(
            "skelarm_ros is not installed in the ament index (build it with colcon and source install/setup.bash)",
            allow_module_level=True,
        )


LAUNCH_TEST_SKIP = (
    "a launch_testing test: it runs under launch_test (`make test` does so where ROS 2's launch_testing and the "
    "installed package are there: python -m launch_testing.launch_test {path}); the launch_testing pytest plugin is "
    "kept out of this project's pytest runs (pytest.ini)"
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip, with the reason, what a launch_testing module holds, unless its own pytest plugin runs it."""
    if config.pluginmanager.hasplugin("launch_testing"):
        return
    for item in items:
        entry = getattr(getattr(item, "module", None), "generate_test_description", None)
        if any(mark.name == "launch_test" for mark in getattr(entry, "pytestmark", [])):
            where = os.path.relpath(item.path, config.invocation_params.dir)
            item.add_marker(pytest.mark.skip(reason=LAUNCH_TEST_SKIP.format(path=where)))


# Property tests explore new random cases on a developer's machine; in CI (CI=true) they
# replay one fixed sequence, so a landing never depends on what the dice found that day.
try:
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("ci", derandomize=True)
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        _hypothesis_settings.load_profile("ci")
except ImportError:  # pragma: no cover - hypothesis is a test dependency
    pass

TEST_DOMAINS = range(100, 200)  # the DDS domains test processes take, one each
EXTRA_DOMAINS = range(200, 230)  # more for a test that runs several graphs at once (test_signals_system.py)
DOMAIN_LOCKS = Path(tempfile.gettempdir()) / "skelarm-ros-test-domains"
_held_domain: list[IO[str]] = []  # the claimed domains' lock files, open (so locked) while this process runs


def claim_domain(domains: range = TEST_DOMAINS) -> int:
    """Return a DDS domain of ``domains`` that no other running test process holds, and hold it.

    A test process (a pytest run, or each of its pytest-xdist workers) locks the file of its domain in
    ``DOMAIN_LOCKS`` until it exits, so two test processes at once, of one checkout or of several, never
    share a domain. The search starts at a place set by the process id and by the domains already held.
    """
    DOMAIN_LOCKS.mkdir(exist_ok=True)
    start = (os.getpid() + len(_held_domain)) % len(domains)
    for offset in range(len(domains)):
        domain = domains[(start + offset) % len(domains)]
        lock = (DOMAIN_LOCKS / f"{domain}.lock").open("w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        _held_domain.append(lock)
        return domain
    msg = (
        f"every DDS domain {domains.start}-{domains.stop - 1} is held by a running test process "
        f"(lock files in {DOMAIN_LOCKS}); end some of those runs, or set ROS_DOMAIN_ID for a serial run"
    )
    raise RuntimeError(msg)


# Each test process gets its own DDS domain and log folder, on the local host only. A pytest-xdist worker
# always claims its own (its environment is the controlling run's, which the other workers share).
_xdist_worker = bool(os.environ.get("PYTEST_XDIST_WORKER"))
if _xdist_worker or "ROS_DOMAIN_ID" not in os.environ:
    os.environ["ROS_DOMAIN_ID"] = str(claim_domain())
if _xdist_worker or "ROS_LOG_DIR" not in os.environ:
    os.environ["ROS_LOG_DIR"] = tempfile.mkdtemp(prefix="skelarm-ros-log-")
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
# Nodes the tests start themselves get the DDS profile both launchers give a graph's nodes (docs/launch.md),
# so their ends wait for acknowledgements 0.1 s apart, not Fast DDS's default 3 s; test_short_run_system.py
# checks a run with a user's own profile as well.
os.environ.setdefault(
    "FASTRTPS_DEFAULT_PROFILES_FILE", str(Path(__file__).resolve().parents[1] / "config" / "fastdds_graph.xml")
)


@contextlib.contextmanager
def private_context():
    """A private rclpy context for in-process node tests, shut down at the end."""
    import rclpy

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        yield ctx
    finally:
        rclpy.try_shutdown(context=ctx)


@pytest.fixture
def context():
    """A private rclpy context for one test."""
    with private_context() as ctx:
        yield ctx


@pytest.fixture
def shared_scenarios() -> Path:
    if not SCENARIOS.is_dir():
        pytest.skip(f"the shared scenarios are not at {SCENARIOS} (set SKELARM_ROS_SHARED_DATA)")
    return SCENARIOS


def random_arm(rng, num_links: int, *, base: bool = True):
    """A random skelarm arm read through ``Skeleton.from_config`` (degrees, as a TOML file gives them)."""
    import skelarm

    links = []
    for _ in range(num_links):
        low = float(rng.uniform(-170.0, 0.0))
        links.append(
            {
                "length": float(rng.uniform(0.05, 1.0)),
                "mass": float(rng.uniform(0.1, 3.0)),
                "inertia": float(rng.uniform(0.0, 0.2)),
                "com": [float(rng.uniform(-0.1, 0.6)), float(rng.uniform(-0.1, 0.1))],
                "limits": [low, float(rng.uniform(low + 1.0, 175.0))],
            }
        )
    q0 = [float(rng.uniform(link["limits"][0], link["limits"][1])) for link in links]
    base_length = float(rng.uniform(0.0, 0.4)) if base else 0.0
    return skelarm.Skeleton.from_config({"skeleton": {"base_length": base_length, "link": links}, "initial": {"q": q0}})
