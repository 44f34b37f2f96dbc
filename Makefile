# rocketmq-conformance: `make run` runs the conformance suites against the embedded reference;
# `make test` runs the project's own tests. Both create .venv and install what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_FLAGS ?= -q -p no:cacheprovider

.PHONY: install run test bench bench-spark clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("Python 3.11+ is required, found " + sys.version.split()[0]) if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	@touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/rmqc run --target reference --spark-check --simulate-events 1000000

test: install
	$(BIN)/python -m pytest $(PYTEST_FLAGS) tests suites

bench: install
	$(BIN)/python bench/reference_bench.py

bench-spark: install
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python bench/spark_bench.py --events 10000000

clean:
	rm -rf $(VENV) reports/out .hypothesis *.egg-info
