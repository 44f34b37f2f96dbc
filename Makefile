# rocketmq-conformance: `make run` runs the conformance suites against the embedded reference;
# `make test` runs the project's own tests. Both create .venv and install what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# the project's own tests on two workers (pytest-xdist; a module stays on one worker; xdist's order: tests/conftest.py)
TEST_WORKERS ?= 2
PYTEST_FLAGS ?= -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile --durations=25 --rmq-hypothesis-profile ci \
  -m "not real_release and not sdk_driver"

.PHONY: install browser driver-4x driver-node driver-go driver-java sdk-drivers run test bench bench-spark bench-soak real-gate real-matrix clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("Python 3.11+ is required, found " + sys.version.split()[0]) if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	@touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/rmqc run --target reference --spark-check --simulate-events 1000000

# headless Chromium renders the report in tests/test_reports.py; where it cannot be installed that test is
# not applicable (it says so), never passed
browser:
	@command -v chromium >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
	  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	  echo "make: headless Chromium could not be installed; the report rendering test will be not applicable"

# the 4.x SDK driver runs in its own environment: its package name `rocketmq` clashes with the 5.x SDK's
driver-4x: .venv-4x/.installed

# the SDK ships no librocketmq: the registry's rocketmq-python-cvs sdist carries one, taken out with its
# sha256 checked (drivers/install_librocketmq.py); without it the 4.x tests are not applicable, never passed
.venv-4x/.installed:
	$(PYTHON) -m venv .venv-4x
	.venv-4x/bin/python -m pip install --quiet rocketmq-client-python==2.0.0
	.venv-4x/bin/python -m pip download --quiet --no-deps --no-binary :all: rocketmq-python-cvs==2.1.0.3 -d .venv-4x/dl \
	  && .venv-4x/bin/python drivers/install_librocketmq.py .venv-4x/dl/rocketmq-python-cvs-2.1.0.3.tar.gz \
	     "$$(.venv-4x/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
	  || echo "make: librocketmq could not be installed; the 4.x SDK tests will be not applicable"
	@touch $@

# the official Node.js 5.x SDK, pinned in drivers/nodejs/package-lock.json, from the npm registry; without
# Node.js (and no apt-get to install it) the Node.js SDK tests are not applicable, never passed
driver-node: drivers/nodejs/node_modules/.installed

drivers/nodejs/node_modules/.installed: drivers/nodejs/package-lock.json drivers/nodejs/package.json
	@command -v npm >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
	  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; } || \
	  echo "make: Node.js could not be installed; the Node.js SDK tests will be not applicable"
	@if command -v npm >/dev/null 2>&1; then \
	  cd drivers/nodejs && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.installed || \
	  echo "make: rocketmq-client-nodejs could not be installed; the Node.js SDK tests will be not applicable"; fi

# the Java driver (drivers/java): the official 4.x client and 5.x client, versions pinned in its pom.xml, from Maven
# Central (offline once cached); without Java or Maven the Java SDK tests are not applicable, never passed
driver-java: drivers/java/target/.built

drivers/java/target/.built: drivers/java/pom.xml $(shell find drivers/java/src -type f 2>/dev/null)
	@if command -v mvn >/dev/null 2>&1 && command -v java >/dev/null 2>&1; then \
	  cd drivers/java && mvn -q -B package -DskipTests && touch target/.built || \
	  echo "make: the Java driver could not be built; the Java SDK tests will be not applicable"; \
	else echo "make: Java or Maven is missing; the Java SDK tests will be not applicable"; fi

# the official Go 5.x SDK (github.com/apache/rocketmq-clients/golang/v5, pinned in drivers/go/go.mod and go.sum)
# behind drivers/go, built with go into drivers/go/bin/ (offline once the modules are cached); without Go, or where
# the build fails, the Go SDK tests are not applicable, never passed
GO ?= $(shell command -v go 2>/dev/null || { test -x /usr/local/go/bin/go && echo /usr/local/go/bin/go; })

driver-go: drivers/go/bin/rmqc-go-driver

drivers/go/bin/rmqc-go-driver: drivers/go/go.mod drivers/go/go.sum $(wildcard drivers/go/*.go)
	@if [ -n "$(GO)" ]; then \
	  cd drivers/go && GOFLAGS="-mod=mod -buildvcs=false" $(GO) build -o bin/rmqc-go-driver . || { rm -f bin/rmqc-go-driver; \
	  echo "make: the Go SDK driver could not be built; the Go SDK tests will be not applicable"; }; \
	else echo "make: Go is not installed (no go on PATH); the Go SDK tests will be not applicable"; fi

# the fault proxy's toxiproxy backend (adapters/fault_proxy.py, issue 50): Shopify's toxiproxy server, a Go module
# pinned here, built with go into ~/.cache/rocketmq-conformance/toxiproxy (or $RMQC_TOXIPROXY_DIR), never into the
# project; without Go, or where the build fails, the fault proxy runs its Python backend and the toxiproxy tests are
# not applicable, never passed
TOXIPROXY_MODULE := github.com/Shopify/toxiproxy/v2/cmd/server@v2.5.0
RMQC_TOXIPROXY_DIR ?= $(HOME)/.cache/rocketmq-conformance/toxiproxy

.PHONY: fault-proxy
fault-proxy: $(RMQC_TOXIPROXY_DIR)/toxiproxy-server

$(RMQC_TOXIPROXY_DIR)/toxiproxy-server:
	@if [ -n "$(GO)" ]; then \
	  rm -rf "$(RMQC_TOXIPROXY_DIR)/.build" && mkdir -p "$(RMQC_TOXIPROXY_DIR)/.build" && \
	  GOBIN="$(RMQC_TOXIPROXY_DIR)/.build" GOFLAGS="-mod=mod -buildvcs=false" $(GO) install $(TOXIPROXY_MODULE) && \
	  mv "$(RMQC_TOXIPROXY_DIR)/.build/server" "$@" && rm -rf "$(RMQC_TOXIPROXY_DIR)/.build" || { rm -f "$@"; \
	  echo "make: toxiproxy could not be built; the fault proxy's toxiproxy tests will be not applicable"; }; \
	else echo "make: Go is not installed (no go on PATH); the fault proxy's toxiproxy tests will be not applicable"; fi

# the release oracle (issue 35): each covered release's jars from Maven Central into ~/.cache/rocketmq-conformance/oracle
# and suites/java/ReleaseOracle.java compiled there; without Java or Maven its tests are not applicable, never passed
.PHONY: oracle
oracle: install
	-$(BIN)/python -m suites.release_oracle

# beside the project's own tests, which yield them the CPU (nice 10): their waits are on the wall clock, theirs are
# not. One at a time, about 20 minutes in all:
# - the real-release gate (tests/test_real_release.py: the newest covered 5.x release started from Maven Central and
#   held to its expectation file through the SDKs, the Java 4.x client among them, and the gate biting);
# - the SDK drivers' whole runs of the suites against rmqc serve (tests marked sdk_driver: the Java 4.x, Java 5.x and
#   Go clients). Run beside the project's tests all at once with the gate they made its timing tests flaky; one after
#   the other, behind the gate, they load the machine no more than the gate does.
BESIDE_LOG := reports/out/beside.log
BESIDE_TESTS := tests/test_real_release.py tests/test_real_nemesis.py
SDK_DRIVER_TESTS := tests/test_java_remoting.py tests/test_java_grpc.py tests/test_go_sdk.py
BESIDE_PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider --rmq-hypothesis-profile ci -rA
REAL_GATE := $(BESIDE_PYTEST) -m real_release $(BESIDE_TESTS)
SDK_DRIVERS := $(BESIDE_PYTEST) -m sdk_driver $(SDK_DRIVER_TESTS)

test: install browser driver-4x driver-node driver-java driver-go oracle fault-proxy
	@mkdir -p reports/out
	@echo "make test: the real-release gate and the SDK drivers' runs go beside the other tests (their output: $(BESIDE_LOG), shown at the end)"
	@{ $(REAL_GATE); gate=$$?; $(SDK_DRIVERS); sdk=$$?; test $$gate -eq 0 -a $$sdk -eq 0; } > $(BESIDE_LOG) 2>&1 & \
	beside=$$!; trap 'kill $$beside 2>/dev/null' INT TERM; \
	nice -n 10 $(BIN)/python -m pytest $(PYTEST_FLAGS) tests suites; own=$$?; \
	wait $$beside; real=$$?; echo "--- beside: the real-release gate ($(BESIDE_TESTS)), the SDK drivers ($(SDK_DRIVER_TESTS)), exit $$real ---"; \
	cat $(BESIDE_LOG); test $$own -eq 0 -a $$real -eq 0

bench: install
	$(BIN)/python bench/reference_bench.py

bench-spark: install
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python bench/spark_bench.py --events 10000000

bench-soak: install
	$(BIN)/python bench/soak_bench.py --events 1000000

# the SDK drivers' runs against rmqc serve alone (part of make test)
sdk-drivers: install driver-java driver-go
	$(SDK_DRIVERS)

# the real-release gate alone (part of make test)
real-gate: install driver-4x driver-java oracle
	$(REAL_GATE)

# every covered release x every SDK target that reaches it, soaks and Spark checks on real brokers: hours, not CI
real-matrix: install driver-4x driver-node driver-java driver-go
	SPARK_LOCAL_IP=127.0.0.1 $(BIN)/python bench/real_matrix.py

clean:
	rm -rf $(VENV) .venv-4x drivers/nodejs/node_modules drivers/go/bin drivers/java/target reports/out .hypothesis *.egg-info
