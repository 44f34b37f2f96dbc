"""Area: transactions. The broker's check service wakes 15 s later than the release's
``transactionCheckInterval`` (TX-03)."""
from reference_impl.rules import transaction

_interval = transaction.check_interval_ms
transaction.check_interval_ms = lambda release=transaction.versions.LATEST: _interval(release) + 15_000
