"""Area: the 4.x orderly consumer. A failed orderly consume suspends its queue a second longer than the
suspend time it was given (ORDER-4X-02)."""
from reference_impl.rules import orderly4x

_suspend = orderly4x.suspend_time_ms
orderly4x.suspend_time_ms = lambda context_suspend_ms=-1, consumer_suspend_ms=orderly4x.DEFAULT_SUSPEND_MS: \
    _suspend(context_suspend_ms, consumer_suspend_ms) + 1000
