"""Area: the 4.x delay levels. The broker's table makes level 1 two seconds, not one (DELAY-01)."""
from reference_impl.rules import delay

_parse = delay.parse_delay_levels


def _slow_first_level(level_string):
    table = _parse(level_string)
    if table.levels.get(1) == 1000:
        table = delay.DelayTable({**table.levels, 1: 2000}, table.max_level, table.ok)
    return table


delay.parse_delay_levels = _slow_first_level
