"""Class: a client-side clamp left out. The orderly consumer suspends a queue for exactly the time it was given,
without ``Math.max(10, Math.min(30000, ...))`` (ORDER-4X-02)."""
from reference_impl.rules import orderly4x

orderly4x.suspend_time_ms = lambda context_suspend_ms=-1, consumer_suspend_ms=orderly4x.DEFAULT_SUSPEND_MS: \
    consumer_suspend_ms if context_suspend_ms == -1 else context_suspend_ms
