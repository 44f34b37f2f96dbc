"""Class: a range left out. The proxy takes a receive's invisible time below ``minInvisibleTimeMillsForRecv``
(10 s) instead of refusing it with ILLEGAL_INVISIBLE_TIME (RETRY-5X-09)."""
from reference_impl.rules import retry5x

_receive = retry5x.receive_invisible_ms


def _no_lower_bound(requested_ms, auto_renew, proxy_auto_renew=True):
    if not auto_renew and 0 < requested_ms < retry5x.MIN_INVISIBLE_FOR_RECEIVE_MS:
        return requested_ms
    return _receive(requested_ms, auto_renew, proxy_auto_renew)


retry5x.receive_invisible_ms = _no_lower_bound
