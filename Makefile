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

test: env lint
	@if $(PY) -c '$(HAS_LAUNCH_TESTING)' 2>/dev/null; then \
	  for launch_test in $(LAUNCH_TESTS); do $(PY) -m launch_testing.launch_test $$launch_test || exit 1; done; \
	fi
	@$(PY) -m pytest -q

test-quick: env
	@$(PY) -m pytest -q -m "not slow"

lint: env
	@$(VENV)/bin/ruff check skelarm_ros test launch setup.py
	@$(VENV)/bin/ruff format --check skelarm_ros test launch setup.py
	@$(VENV)/bin/mypy
	@$(VENV)/bin/lint-imports --no-cache

bench: env
	@$(VENV)/bin/skelarm-ros bench

clean:
	rm -rf build install log .pytest_cache .mypy_cache .ruff_cache demo_output
