"""Class: properties of the stored copies. The schedule service writes a retried message back to its real
topic without clearing DELAY."""
from reference_impl.rules import delay

_restore = delay.restore_from_schedule


def _keeping_delay(properties):
    placed = _restore(properties)
    return delay.StoredPlacement(placed.topic, placed.queue_id, {**placed.properties, "DELAY": properties["DELAY"]})


delay.restore_from_schedule = _keeping_delay
