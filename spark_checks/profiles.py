"""What each profile says about delivery timing, read from the spec's own data (RETRY-CONC-06/-07,
RETRY-5X-01/-06/-07/-11, DELAY-01). Shared by the bulk generator and the checks."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from history.profiles import BROKER_PROFILES, GRPC_5X, REMOTING_4X
from spec.loader import default_spec

_UNITS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def _durations(text: str) -> list[int]:
    return [int(tok[:-1]) * _UNITS[tok[-1]] for tok in text.split()]


@dataclass(frozen=True)
class ProfileTiming:
    """Waits between deliveries and where the DLQ comes, for one profile."""

    name: str
    max_deliveries: int
    waits_ms: tuple[int, ...]        # wait before delivery k + 1, index k - 1
    dlq_after_last_ms: int           # from the last failed delivery to the DLQ (standard consumers)
    delay_levels_ms: tuple[int, ...]
    revive_lag_ms: int = 0           # 5.x standard consumers: each redelivery comes this much later (RETRY-5X-11)

    def wait_before(self, attempt: int) -> int | None:
        """The documented wait before ``attempt`` (2..max_deliveries), else None."""
        if 2 <= attempt <= self.max_deliveries:
            return self.waits_ms[attempt - 2]
        return None


@lru_cache(maxsize=None)
def timing(profile: str) -> ProfileTiming:
    spec = default_spec()
    levels = _durations(spec.get("DELAY-01").defaults["messageDelayLevel"])
    if profile == REMOTING_4X:
        retries = int(spec.get("RETRY-CONC-06").defaults["concurrentEffective"])
        waits = tuple(levels[min(3 + rt, len(levels)) - 1] for rt in range(retries))
        return ProfileTiming(profile, retries + 1, waits, 0, tuple(levels))
    if profile == GRPC_5X:
        d = spec.get("RETRY-5X-01").defaults
        durations = _durations(d["customizedNext"])
        attempts = int(d["max_attempts"])
        lag = int(spec.get("RETRY-5X-11").defaults["reviveLagMs"])
        return ProfileTiming(profile, attempts, tuple(durations[: attempts - 1]), durations[attempts - 1] + lag,
                             tuple(levels), lag)
    raise ValueError(f"no timing for profile {profile!r}; known: {', '.join(BROKER_PROFILES)}")
