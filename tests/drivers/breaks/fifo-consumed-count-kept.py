"""Class: FIFO bookkeeping. The broker does not count a new ordered pop of the same offsets as one more
consumption, so a redelivered FIFO message shows its first delivery attempt again (FIFO-06)."""
from reference_impl.rules import fifo

_merge = fifo.merge_consumed_count


def _kept(previous, new_offsets, attempt_id):
    if previous is None:
        return {}
    return {o: previous.offset_consumed_count.get(o, 0) for o in new_offsets if o in set(previous.offsets())}


fifo.merge_consumed_count = _kept
