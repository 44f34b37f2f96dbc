"""Class: rounding at the edges of timed delivery. A delivery time that is an exact multiple of the timer's
tick is kept, not moved one tick earlier."""
from reference_impl.rules import delay

delay.round_timer_deliver_ms = lambda deliver_ms, precision_ms=delay.TIMER_PRECISION_MS: \
    deliver_ms // precision_ms * precision_ms
