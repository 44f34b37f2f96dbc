"""The project's own tests run on two workers in ``make test`` (pytest-xdist, ``--dist loadfile``: a module's tests
and its module fixtures stay on one worker). A worker takes the next module when it is free, in collection order
(``--no-loadscope-reorder``: by default xdist puts the modules with the most tests first, which sends the single-test
modules that take minutes last), so the modules that take minutes go first: started last, one of them would keep a
worker busy alone at the end."""
from __future__ import annotations

import pytest

LONG_MODULES = ("test_driver", "test_sdk_matrix", "test_mutate", "test_remoting_run", "test_soak", "test_blame",
                "test_spark_checks", "test_broken_targets", "test_grpc_sdk", "test_spark_cluster", "test_serve_versions",
                "test_cli", "test_reports", "test_broken_rules")
"""The slowest modules, slowest first (``make test`` prints its 25 slowest tests: keep this in step with them)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long modules first, in the order above; every other test after them in its collected order."""
    rank = {name: i for i, name in enumerate(LONG_MODULES)}

    def order(indexed: tuple[int, pytest.Item]) -> tuple[int, int]:
        index, item = indexed
        module = item.module.__name__.rpartition(".")[2] if item.module else ""
        return rank.get(module, len(rank)), index

    items[:] = [item for _, item in sorted(enumerate(items), key=order)]
