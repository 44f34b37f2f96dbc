"""Faults injected into the reference's logs of generated programs, as ``rmqc simulate --inject`` injects them
into simulated logs: each instance is placed where its check judges (a message owed to a group, a redelivery by
the client that failed the attempt before, a dead letter at the stated maximum), touches one (message, group)
of its own, and is caught by exactly one check, once (issue 36: completeness on generated-program logs).

The programs log no APPLY (no idempotent consumer), so ``duplicate-apply`` has no place here; the simulated
logs carry it.
"""
from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Callable, Iterable

from history.events import Event

Life = tuple[str, str, str]
"""(run, message id, group)."""
MESSAGE_KINDS = ("DELIVER", "CONSUME_OK", "CONSUME_FAIL", "ACK", "RETRY_SCHEDULED", "DLQ")


@dataclasses.dataclass
class _Log:
    events: list[Event]

    def __post_init__(self) -> None:
        self.lives: dict[Life, list[int]] = defaultdict(list)  # places of each life's rows, in log order
        self.starts: dict[tuple[str, str], list[Event]] = defaultdict(list)
        self.stops: dict[tuple[str, str | None], Event] = {}
        self.settled: dict[str, Event] = {}
        self.sends: dict[tuple[str, str], Event] = {}
        for i, e in enumerate(self.events):
            if e.kind in MESSAGE_KINDS and e.msg_id and e.group:
                self.lives[(e.run_id, e.msg_id, e.group)].append(i)
            elif e.kind == "CONSUMER_START":
                self.starts[(e.run_id, e.group or "")].append(e)
            elif e.kind == "CONSUMER_STOP":
                self.stops[(e.run_id, e.client_id)] = e
            elif e.kind == "SETTLED":
                self.settled[e.run_id] = e
            elif e.kind == "SEND_OK" and e.msg_id:
                self.sends.setdefault((e.run_id, e.msg_id), e)
        self.used: set[Life] = set()
        self.dropped: set[int] = set()  # places of the rows a fault took out of the log

    def drop(self, place: int) -> None:
        self.dropped.add(place)

    def result(self) -> list[Event]:
        return [e for i, e in enumerate(self.events) if i not in self.dropped]

    def rows(self, life: Life, *kinds: str) -> list[Event]:
        return [self.events[i] for i in self.lives[life]
                if i not in self.dropped and (not kinds or self.events[i].kind in kinds)]

    def changes(self, run: str, group: str) -> list[int]:
        """Times the group's members changed (a consumer started or stopped)."""
        starts = self.starts[(run, group)]
        return [e.ts_ms for e in starts] + [self.stops[(run, e.client_id)].ts_ms for e in starts
                                            if (run, e.client_id) in self.stops]

    def _stop_after_settle(self, run: str, client: str | None) -> bool:
        settled, stop = self.settled.get(run), self.stops.get((run, client))
        return settled is not None and (stop is None or (stop.ts_ms, stop.seq) > (settled.ts_ms, settled.seq))

    def stayed(self, run: str, group: str, client: str | None) -> bool:
        """The client is a push consumer of the group up at its run's settle."""
        return any(e.client_id == client and e.detail.get("consumer") == "push" for e in self.starts[(run, group)]) \
            and self._stop_after_settle(run, client)

    def owed(self, life: Life) -> bool:
        """A push consumer of the group, subscribed to every message, was up from before the send through the
        settle, and the message was visible before it (as ``consumers.Stated.owed`` states it)."""
        run, msg, group = life
        send, settled = self.sends.get((run, msg)), self.settled.get(run)
        if send is None or settled is None or send.delay_level or \
                send.ts_ms + (send.expected_delay_ms or 0) >= settled.ts_ms:  # a timed message by its time
            return False
        return any(e.detail.get("consumer") == "push" and e.detail.get("expression", "*") == "*"
                   and e.topic == send.topic and e.ts_ms < send.ts_ms and self._stop_after_settle(run, e.client_id)
                   for e in self.starts[(run, group)])

    def one_client(self, life: Life) -> bool:
        return len({e.client_id for e in self.rows(life, "DELIVER")}) == 1

    def standard(self, life: Life) -> bool:
        """Not in a FIFO line (moving its rows cannot reorder another message)."""
        return all(e.message_group is None for e in self.rows(life, "DELIVER"))

    def quiet(self, life: Life, since: int, until: int | None = None) -> bool:
        """No member of the life's group came or went from ``since`` to ``until`` (by default: to the settle,
        which the run's last stops follow)."""
        settled = self.settled.get(life[0])
        if until is None:
            if settled is None:
                return False
            until = settled.ts_ms - 1
        return not any(since <= t <= until for t in self.changes(life[0], life[2]))

    def take(self, count: int, name: str, fits: Callable[[Life], bool]) -> list[Life]:
        picked = [life for life in sorted(self.lives) if life not in self.used and fits(life)][:count]
        if len(picked) < count:
            raise ValueError(f"{name}={count}: the programs' log has only {len(picked)} places for it")
        self.used.update(picked)
        return picked

    def settle_later(self, run: str, by_ms: int) -> None:
        """The run's settle, and the stops that follow it, ``by_ms`` later: the harness waited longer (a reference
        run settles when nothing is left, so its last DLQ is at the settle's own millisecond)."""
        settled = self.settled[run]
        for i, e in enumerate(self.events):
            if e.run_id == run and e.kind in ("SETTLED", "CONSUMER_STOP") and (e.ts_ms, e.seq) >= (settled.ts_ms, settled.seq):
                self.events[i] = dataclasses.replace(e, ts_ms=e.ts_ms + by_ms)
        self.settled[run] = dataclasses.replace(settled, ts_ms=settled.ts_ms + by_ms)

    def shifted(self, life: Life, after_seq: int, by_ms: int) -> None:
        """Every row of the life from the one numbered ``after_seq`` on, ``by_ms`` later."""
        for i in self.lives[life]:
            e = self.events[i]
            if e.seq >= after_seq:
                self.events[i] = dataclasses.replace(e, ts_ms=e.ts_ms + by_ms)


def _delivered(log: _Log, life: Life) -> bool:
    return bool(log.rows(life, "DELIVER"))


def _lost(log: _Log, count: int) -> None:
    def fits(life: Life) -> bool:  # dead letters are left to the DLQ faults
        # a FIFO message may go too: the next in its line then follows the one before, done before it began
        return log.owed(life) and _delivered(log, life) and not log.rows(life, "DLQ")

    for life in log.take(count, "lost", fits):
        for i in log.lives[life]:
            log.drop(i)


def _duplicate_delivery(log: _Log, count: int) -> None:
    def fits(life: Life) -> bool:
        rows = log.rows(life)
        last = [e for e in rows if e.kind == "DELIVER"][-1:] if rows else []
        ok = [e for e in rows if e.kind == "CONSUME_OK"]
        return bool(last and ok and ok[-1].attempt == last[0].attempt and not log.rows(life, "DLQ")
                    and log.standard(life) and log.quiet(life, rows[0].ts_ms, ok[-1].ts_ms + 1))

    for life in log.take(count, "duplicate-delivery", fits):
        last = log.rows(life, "DELIVER")[-1]
        again = [dataclasses.replace(e, ts_ms=e.ts_ms + 1) for e in log.rows(life, "DELIVER", "CONSUME_OK", "ACK")
                 if e.attempt == last.attempt and e.seq >= last.seq]
        log.events.extend(again)


def _judged_retries(log: _Log, life: Life) -> list[tuple[Event, Event, int]]:
    """(delivery, the failed delivery before it, the wait its client asked for) of the life's redeliveries
    the retry check judges late as well as early."""
    out, rows = [], log.rows(life, "DELIVER", "CONSUME_FAIL", "RETRY_SCHEDULED")
    deliveries = [e for e in rows if e.kind == "DELIVER"]
    for prev, e in zip(deliveries, deliveries[1:]):
        failed = any(r.kind == "CONSUME_FAIL" and r.attempt == prev.attempt and r.seq > prev.seq for r in rows)
        asked = [r.expected_delay_ms for r in rows if r.kind == "RETRY_SCHEDULED" and r.attempt == e.attempt
                 and prev.seq < r.seq < e.seq]
        if failed and asked and asked[-1] and e.attempt == (prev.attempt or 0) + 1 and e.client_id == prev.client_id:
            out.append((e, prev, int(asked[-1])))
    return out


def _shifted_retry(early: bool) -> Callable[[_Log, int], None]:
    def shift(log: _Log, count: int) -> None:
        def fits(life: Life) -> bool:
            judged = _judged_retries(log, life)
            settled = log.settled.get(life[0])
            return bool(judged) and log.standard(life) and not log.rows(life, "DLQ") and judged[0][2] >= 1000 and \
                settled is not None and \
                log.quiet(life, judged[0][1].ts_ms) and judged[0][0].ts_ms + 3 * judged[0][2] + 60_000 < settled.ts_ms

        for life in log.take(count, "early-retry" if early else "late-retry", fits):
            e, prev, asked = _judged_retries(log, life)[0]
            interval = e.ts_ms - prev.ts_ms
            # early: half the wait asked, far below the window's noise band; late: well past any window's end
            log.shifted(life, e.seq, (asked // 2 - interval) if early else (3 * asked + 60_000))
    return shift


def _dead(log: _Log, life: Life) -> bool:
    """Dead-lettered at the stated maximum by one push client up at the settle, nothing delivered after."""
    run, _, group = life
    dlq, deliveries = log.rows(life, "DLQ"), log.rows(life, "DELIVER")
    if not dlq or not deliveries or not log.one_client(life) or not log.standard(life):
        return False
    maxima = {e.attempt for e in log.starts[(run, group)]}
    last = deliveries[-1]
    return len(maxima) == 1 and last.attempt == next(iter(maxima)) and last.ts_ms <= dlq[0].ts_ms and \
        log.stayed(run, group, last.client_id) and log.quiet(life, deliveries[0].ts_ms)


def _dlq_missing(log: _Log, count: int) -> None:
    for life in log.take(count, "dlq-missing", lambda l: _dead(log, l)):
        for i in log.lives[life]:
            if log.events[i].kind == "DLQ":
                log.drop(i)


def _dlq_early(log: _Log, count: int) -> None:
    for life in log.take(count, "dlq-early", lambda l: _dead(log, l) and len(log.rows(l, "DELIVER")) > 1):
        last = log.rows(life, "DELIVER")[-1]
        for i in log.lives[life]:
            e = log.events[i]
            if e.attempt == last.attempt and e.kind in ("DELIVER", "CONSUME_FAIL") and e.seq >= last.seq:
                log.drop(i)


def _delivered_after_dlq(log: _Log, count: int) -> None:
    def fits(life: Life) -> bool:  # nobody came or went up to the delivery it gains
        if not _dead(log, life):
            return False
        first, dlq = log.rows(life, "DELIVER")[0], log.rows(life, "DLQ")[0]
        return log.quiet(life, first.ts_ms, dlq.ts_ms + 1)

    for life in log.take(count, "delivered-after-dlq", fits):
        last, dlq = log.rows(life, "DELIVER")[-1], log.rows(life, "DLQ")[0]
        log.events.append(dataclasses.replace(last, ts_ms=dlq.ts_ms + 1, seq=dlq.seq + 1))
        log.settle_later(life[0], 1000)


def _reorder(log: _Log, count: int) -> None:
    lines: dict[tuple[str, str, str], list[Life]] = defaultdict(list)  # every delivered message of a FIFO line
    for life in sorted(log.lives):
        delivered = log.rows(life, "DELIVER")
        if delivered and delivered[0].message_group and (life[0], life[1]) in log.sends:
            lines[(life[0], life[2], delivered[0].message_group)].append(life)

    def simple(life: Life) -> bool:  # delivered once, and that once succeeded
        return len(log.rows(life, "DELIVER")) == 1 and bool(log.rows(life, "CONSUME_OK")) and not log.rows(life, "DLQ")

    picked = 0
    for line in lines.values():
        line.sort(key=lambda l: log.sends[(l[0], l[1])].producer_seq or 0)
        for a, b in zip(line[0::3], line[1::3]):  # disjoint neighbours, never beside another pair
            if picked == count:
                return
            if not (simple(a) and simple(b)):
                continue
            ta, tb = log.rows(a, "DELIVER")[0].ts_ms, log.rows(b, "DELIVER")[0].ts_ms
            if ta == tb or a in log.used or b in log.used:
                continue
            log.used.update({a, b})
            log.shifted(a, 0, tb - ta)
            log.shifted(b, 0, ta - tb)
            picked += 1
    if picked < count:
        raise ValueError(f"reorder={count}: the programs' log has only {picked} FIFO pairs for it")


FAULTS: dict[str, Callable[[_Log, int], None]] = {
    "lost": _lost, "duplicate-delivery": _duplicate_delivery, "reorder": _reorder,
    "early-retry": _shifted_retry(early=True), "late-retry": _shifted_retry(early=False),
    "dlq-early": _dlq_early, "dlq-missing": _dlq_missing, "delivered-after-dlq": _delivered_after_dlq,
}


def inject(events: Iterable[Event], faults: dict[str, int]) -> list[Event]:
    """``events`` with each fault applied ``count`` times, each instance on a (message, group) of its own."""
    log = _Log(list(events))
    for name, count in faults.items():
        FAULTS[name](log, count)
    return log.result()
