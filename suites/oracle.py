"""What the spec says a trace must look like, restated from the spec's own data.

The oracle reads parameters from ``spec/behaviours/*.yaml`` (defaults of DELAY-01, RETRY-CONC-06,
ORDER-4X-02, RETRY-5X-01) and restates the documented formulas in a few lines each, independently
of ``reference_impl``. A broken reference rule therefore disagrees with the oracle and fails the
suite, even when the target under test is the reference itself.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from history.values import CPP_4X_SDK, NODE_5X_SDK
from spec import versions
from spec.loader import Spec, default_spec

INT_MAX = 2**31 - 1
_UNITS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def spec_durations_ms(text: str) -> list[int]:
    """``"1s 5s 10s"`` -> ``[1000, 5000, 10000]`` (the format of DELAY-01 and RETRY-5X-01 defaults)."""
    return [int(tok[:-1]) * _UNITS[tok[-1]] for tok in text.split()]


@dataclass(frozen=True)
class Expected:
    """The documented life of one message in one consumer group."""

    deliveries: int
    waits_ms: tuple[int, ...]    # wait before delivery 2, 3, ...
    final: str                   # CONSUMED, DLQ or DROPPED
    spec_ids: tuple[str, ...]


@dataclass(frozen=True)
class Oracle:
    spec: Spec
    configured_delay_levels_ms: tuple[int, ...] | None = None
    """The target's own ``messageDelayLevel`` table (spec ms) where its server was configured with another
    (``adapters.base.BrokerTiming``); DELAY-02 says the broker takes its table from that key."""
    configured_customized_ms: tuple[int, ...] | None = None
    """The retry ladder the target's groups were given (RETRY-5X-01's ``customizedRetryPolicy.next``)."""

    @property
    def delay_table_ms(self) -> list[int]:
        """DELAY-01: level i has the i-th token's delay."""
        if self.configured_delay_levels_ms is not None:
            return list(self.configured_delay_levels_ms)
        return spec_durations_ms(self.spec.get("DELAY-01").defaults["messageDelayLevel"])

    def level_delay_ms(self, level: int) -> int:
        table = self.delay_table_ms
        return table[min(level, len(table)) - 1]

    def concurrent_max(self, max_reconsume_times: int) -> int:
        """RETRY-CONC-06: -1 means the documented concurrent default."""
        d = self.spec.get("RETRY-CONC-06").defaults
        return int(d["concurrentEffective"]) if max_reconsume_times == -1 else max_reconsume_times

    def orderly_max(self, max_reconsume_times: int) -> int:
        d = self.spec.get("RETRY-CONC-06").defaults
        return int(d["orderlyEffective"]) if max_reconsume_times == -1 else max_reconsume_times

    def orderly_suspend_ms(self) -> int:
        d = self.spec.get("ORDER-4X-02").defaults
        return max(int(d["clampMinMs"]), min(int(d["clampMaxMs"]), int(d["suspendCurrentQueueTimeMillis"])))

    def customized_ms(self) -> list[int]:
        if self.configured_customized_ms is not None:
            return list(self.configured_customized_ms)
        return spec_durations_ms(self.spec.get("RETRY-5X-01").defaults["customizedNext"])

    def max_attempts(self, retry_max_times: int | None = None) -> int:
        """RETRY-5X-01: max_attempts = retryMaxTimes + 1."""
        d = self.spec.get("RETRY-5X-01").defaults
        return (int(d["retryMaxTimes"]) if retry_max_times is None else retry_max_times) + 1

    # ---- per consumer kind ------------------------------------------------------------------

    def push4x_concurrent(self, failures: int, max_reconsume_times: int = -1) -> Expected:
        """RETRY-CONC-04/-06/-07: the k-th retry waits level 3 + rt; DLQ when rt reaches max."""
        limit = self.concurrent_max(max_reconsume_times)
        retries = min(failures, limit)
        waits = tuple(self.level_delay_ms(3 + rt) for rt in range(retries))
        final = "CONSUMED" if failures <= limit else "DLQ"
        return Expected(retries + 1, waits, final, ("RETRY-CONC-04", "RETRY-CONC-06", "RETRY-CONC-07"))

    def push4x_broadcast(self, failures: int) -> Expected:
        """RETRY-CONC-02: no retry in broadcasting; a failure is dropped."""
        return Expected(1, (), "CONSUMED" if failures == 0 else "DROPPED", ("RETRY-CONC-02",))

    def push4x_orderly(self, failures: int, max_reconsume_times: int = -1, sdk: str = "java") -> Expected:
        """ORDER-4X-02/-03: local retry every suspend time; DLQ once rt reaches a finite max. The C++ client
        (SDK-CPP-03): 1 s while rt is at most 15, then 5 s, for ever."""
        if sdk == CPP_4X_SDK:
            d = self.spec.get("SDK-CPP-03").defaults
            waits = tuple(int(d["shortRetryMs"]) if rt <= int(d["shortRetriesUpToReconsumeTimes"])
                          else int(d["longRetryMs"]) for rt in range(failures))
            return Expected(failures + 1, waits, "CONSUMED", ("SDK-CPP-03",))
        limit = self.orderly_max(max_reconsume_times)
        retries = min(failures, limit)
        waits = tuple([self.orderly_suspend_ms()] * retries)
        return Expected(retries + 1, waits, "CONSUMED" if failures <= limit else "DLQ",
                        ("ORDER-4X-02", "ORDER-4X-03"))

    def push5x(self, failures: int, retry_max_times: int | None = None, sdk: str = "java") -> Expected:
        """RETRY-5X-06/-07: attempt n fails -> visible again after durations[n-1]; DLQ at max attempts. The Node.js
        client keeps no customized policy and nacks with 0 ms (SDK-NODE-01): the server redelivers at once."""
        attempts = self.max_attempts(retry_max_times)
        delivered = min(failures + 1, attempts)
        final = "CONSUMED" if failures < attempts else "DLQ"
        if sdk == NODE_5X_SDK:
            nack = int(self.spec.get("SDK-NODE-01").defaults["nackWithoutPolicyMs"])
            return Expected(delivered, (nack,) * (delivered - 1), final, ("SDK-NODE-01", "RETRY-5X-06", "RETRY-5X-07"))
        durations = self.customized_ms()
        waits = tuple(durations[min(n, len(durations)) - 1] for n in range(1, delivered))
        return Expected(delivered, waits, final, ("RETRY-5X-01", "RETRY-5X-06", "RETRY-5X-07"))

    def push5x_fifo(self, failures: int, retry_max_times: int | None = None, sdk: str = "java") -> Expected:
        """RETRY-5X-08: local retries with the same waits, then forward to the DLQ. The Node.js client, with no
        policy from a customized backoff, has one attempt: the first failure is forwarded (SDK-NODE-01)."""
        if sdk == NODE_5X_SDK:
            attempts = int(self.spec.get("SDK-NODE-01").defaults["fifoMaxAttemptsWithoutPolicy"])
            return Expected(min(failures + 1, attempts), (), "CONSUMED" if failures < attempts else "DLQ",
                            ("SDK-NODE-01", "RETRY-5X-08", "FIFO-04"))
        e = self.push5x(failures, retry_max_times)
        return Expected(e.deliveries, e.waits_ms, e.final, ("RETRY-5X-08", "FIFO-04"))

    def kafka_retry(self, failures: int, max_retry_count: int | None = None) -> Expected:
        """KAFKA-01/02: the same fixed delay before every retry; the dead topic once the count reaches max."""
        d1, d2 = self.spec.get("KAFKA-01").defaults, self.spec.get("KAFKA-02").defaults
        limit = int(d1["maxRetryCount"]) if max_retry_count is None else max_retry_count
        retries = min(failures, limit)
        return Expected(retries + 1, tuple([int(d2["retryDelayMs"])] * retries),
                        "CONSUMED" if failures <= limit else "DLQ", ("KAFKA-01", "KAFKA-02", "KAFKA-03"))

    def expected(self, consumer: str, failures: int, *, max_reconsume_times: int = -1,
                 retry_max_times: int | None = None, sdk: str = "java") -> Expected:
        if consumer == "push4x-orderly":
            return self.push4x_orderly(failures, max_reconsume_times, sdk)
        if consumer == "push4x-concurrent":
            return self.push4x_concurrent(failures, max_reconsume_times)
        if consumer == "push4x-broadcast":
            return self.push4x_broadcast(failures)
        if consumer == "push5x":
            return self.push5x(failures, retry_max_times, sdk)
        if consumer == "push5x-fifo":
            return self.push5x_fifo(failures, retry_max_times, sdk)
        if consumer == "kafka-retry":
            return self.kafka_retry(failures, retry_max_times)
        raise ValueError(f"unknown consumer kind {consumer!r}")


@lru_cache(maxsize=1)
def default_oracle() -> Oracle:
    return Oracle(default_spec())


def oracle_for(target: object) -> Oracle:
    """The oracle for a target: the spec's defaults, with the delay table and retry ladder the target's server
    was configured with where they differ (``Target.broker_timing``)."""
    timing = getattr(target, "broker_timing", None)
    if timing is None or timing.is_default:
        return default_oracle()
    return Oracle(default_spec(), timing.delay_levels_ms, timing.customized_next_ms)


def release_of(target: object) -> str:
    """The release a target behaves as (the spec's newest when it does not say)."""
    return getattr(target, "release", None) or versions.LATEST
