"""Area: the 5.x push consumer's nack. The client asks its retry policy for the next attempt's delay instead of
this attempt's, so every wait is the one after it (RETRY-5X-06)."""
from reference_impl.rules import retry5x

retry5x.nack_invisible_ms = lambda policy, attempt: policy.next_attempt_delay_ms(attempt + 1)
