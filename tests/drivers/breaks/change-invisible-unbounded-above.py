"""Class: a range left out. The proxy takes a change of invisible duration beyond ``maxInvisibleTimeMills``
(12 h) instead of refusing it with ILLEGAL_INVISIBLE_TIME (RETRY-5X-09)."""
from reference_impl.rules import retry5x

_change = retry5x.change_invisible_ms
retry5x.change_invisible_ms = lambda requested_ms: requested_ms if requested_ms > retry5x.MAX_INVISIBLE_MS \
    else _change(requested_ms)
