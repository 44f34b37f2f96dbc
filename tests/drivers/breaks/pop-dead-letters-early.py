"""Area: the 5.x dead letter. The proxy's pop filter of a standard (not FIFO) receive dead-letters a message one
attempt early, at ``reconsumeTimes + 1 >= maxAttempts`` (RETRY-5X-07). (The standard pop passes whether the tag
matched; the FIFO pop does not: only the standard path is broken.)"""
from reference_impl.rules import retry5x

_pop_filter = retry5x.pop_filter


def _early(reconsume_times, max_attempts, *tag_matches):
    return _pop_filter(reconsume_times + (1 if tag_matches else 0), max_attempts, *tag_matches)


retry5x.pop_filter = _early
