# skelarm_ros: set-up, demo, tests and benchmarks on a machine without ROS 2.
# Every target sets up .venv/ first when needed (tools/setup-env).

VENV := .venv
PY := $(VENV)/bin/python
export ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST

.PHONY: env demo test test-quick lint bench clean

env:
	@bash tools/setup-env

# The demo replaces its own demo_output/ (--force) on every run.
demo: env
	@$(VENV)/bin/skelarm-ros demo --force

# Where ROS 2's launch_testing and the installed package are (a sourced colcon workspace), the launch tests
# run under launch_test first; pytest skips them, saying so (pytest.ini keeps launch_testing's plugin out).
LAUNCH_TESTS := test/test_launch_file.py
HAS_LAUNCH_TESTING := import launch_testing; from ament_index_python.packages import get_package_share_directory as share; share("skelarm_ros")

# pytest runs in two parts: what is not marked `serial` on $(TEST_WORKERS) pytest-xdist workers (each its own
# DDS domain and log folder, test/conftest.py; each takes a contiguous half of the tests and takes over the
# other's tail when done, so a module's shared start-up mostly runs once), then the `serial` tests alone, as their checks of timing need. Both parts always run; the target fails
# if either does (a part that selects no test, pytest's exit 5, is not a failure).
TEST_WORKERS ?= 2
pytest_in_two_parts = status=0; \
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal -m "$(if $(1),($(1)) and )not serial" || status=$$?; \
	$(PY) -m pytest -q -m "$(if $(1),($(1)) and )serial" || { code=$$?; [ $$code -eq 5 ] || status=$$code; }; \
	exit $$status

test: env lint
	@if $(PY) -c '$(HAS_LAUNCH_TESTING)' 2>/dev/null; then \
	  for launch_test in $(LAUNCH_TESTS); do $(PY) -m launch_testing.launch_test $$launch_test || exit 1; done; \
	fi
	@$(call pytest_in_two_parts,)

test-quick: env
	@$(call pytest_in_two_parts,not slow)

lint: env
	@$(VENV)/bin/ruff check skelarm_ros test launch setup.py
	@$(VENV)/bin/ruff format --check skelarm_ros test launch setup.py
	@$(VENV)/bin/mypy
	@$(VENV)/bin/lint-imports --no-cache

bench: env
	@$(VENV)/bin/skelarm-ros bench

clean:
	rm -rf build install log .pytest_cache .mypy_cache .ruff_cache demo_output
