"""Names on a shared server: each session suffixes its topics and groups, so runs and Hypothesis examples
against one long-lived server never see each other's messages, offsets or consumers; what the suites see
is the logical name again (retry and dead-letter topics included)."""
from __future__ import annotations

import re
import uuid

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,100}$")
SYSTEM_PREFIXES = ("%RETRY%", "%DLQ%")
RESERVED = frozenset({"TBW102", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC",
                      "TRANS_CHECK_MAX_TIME_TOPIC", "OFFSET_MOVED_EVENT", "SELF_TEST_TOPIC", "BenchmarkTest"})
"""Names whose meaning is the name itself (the default topic, system topics): never suffixed."""


class SessionNames:
    def __init__(self, tag: str | None = None) -> None:
        """``tag``: another session's, to share its names (a soak's consumer processes); new by default."""
        self.tag = tag or uuid.uuid4().hex[:6]
        self._real: dict[str, str] = {}
        self._logical: dict[str, str] = {}

    def real(self, name: str) -> str:
        """The name on the server: suffixed when the suffixed name is still a legal one."""
        for prefix in SYSTEM_PREFIXES:
            if name.startswith(prefix):
                pair = _known_pair(name[len(prefix):], self._real)
                if pair:  # a 5.x pop retry topic, %RETRY%group_topic (RETRY-CONC-05)
                    return f"{prefix}{self.real(pair[0])}_{self.real(pair[1])}"
                return prefix + self.real(name[len(prefix):])
        if name in RESERVED:
            return name
        if name in self._real:
            return self._real[name]
        real = f"{name}-{self.tag}" if _NAME.match(name) else name
        self._real[name], self._logical[real] = real, name
        return real

    def logical(self, real: str) -> str:
        for prefix in SYSTEM_PREFIXES:
            if real.startswith(prefix):
                pair = _known_pair(real[len(prefix):], self._logical)
                if pair:
                    return f"{prefix}{self.logical(pair[0])}_{self.logical(pair[1])}"
                return prefix + self.logical(real[len(prefix):])
        return self._logical.get(real, real)


def _known_pair(name: str, known: dict[str, str]) -> tuple[str, str] | None:
    """``name`` as ``left_right`` where both sides are names this session knows, or None."""
    if name in known:
        return None
    for at, char in enumerate(name):
        if char == "_" and name[:at] in known and name[at + 1:] in known:
            return name[:at], name[at + 1:]
    return None
