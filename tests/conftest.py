"""The project's own tests run on two workers in ``make test`` (pytest-xdist, ``--dist loadfile``: a module's tests
and its module fixtures stay on one worker). xdist hands out the modules with the most tests first, so the single-test
modules that wait on wall clocks (the SDKs' runs against ``rmqc serve``, the soaks) come last, when the real-release
gate and the SDK drivers beside them have mostly finished. Started first instead (``--no-loadscope-reorder``), beside
the gate's brokers starting, they missed their timing on a fresh clone (RETRY-5X-09 at time scale 0.001, TX-03's
check count, the gate's ORDER-4X-02). Among modules with as many tests, the long ones go first."""
from __future__ import annotations

import pytest

LONG_MODULES = ("test_driver", "test_sdk_matrix", "test_mutate", "test_remoting_run", "test_soak", "test_blame",
                "test_spark_checks", "test_broken_targets", "test_grpc_sdk", "test_spark_cluster", "test_serve_versions",
                "test_cli", "test_reports", "test_broken_rules")
"""The slowest modules, slowest first, for modules with as many tests (``make test`` prints its 25 slowest tests)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long modules first, in the order above; every other test after them in its collected order."""
    rank = {name: i for i, name in enumerate(LONG_MODULES)}

    def order(indexed: tuple[int, pytest.Item]) -> tuple[int, int]:
        index, item = indexed
        module = item.module.__name__.rpartition(".")[2] if item.module else ""
        return rank.get(module, len(rank)), index

    items[:] = [item for _, item in sorted(enumerate(items), key=order)]
