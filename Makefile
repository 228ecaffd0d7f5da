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

test: env lint
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
