"""``rmqc simulate``: event logs at scale from the reference semantics, with faults of known counts.

A plan draws messages from stated distributions: send times, FIFO messages on their own topic (5.x),
delay levels, and how many times each consumer group fails each message. The bulk generator expands
every message's life with numpy from the profile's timing (``profiles.timing``); FIFO queues are
processed in order, one message after another. ``model_events`` runs the same plan through the
discrete-event model; for small plans the two agree (tests/test_simulate.py).
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from history.events import Event
from history.parquet import arrow_schema
from history.profiles import GRPC_5X, REMOTING_4X
from history.values import SETTLE_LIMIT_MS
from reference_impl.rules.fifo import proxy_queue_for_group

from .profiles import ProfileTiming, timing
from .timing_model import wait_model

STANDARD_TOPIC, FIFO_TOPIC = "T", "TF"
FIFO_GROUP = "GF"


@dataclass(frozen=True)
class Distributions:
    """The stated distributions a plan is drawn from."""

    profile: str = GRPC_5X
    groups: tuple[str, ...] = ("G1", "G2")
    spacing_ms: int = 3
    queues: int = 8
    p_fifo: float = 0.10           # 5.x only: message-group messages on the FIFO topic
    message_groups: int = 64
    p_delay: float = 0.05          # standard messages with a delay level 1..6
    p_fail: float = 0.10           # a group fails a standard message 1..max_fail times
    max_fail: int = 5
    p_always_fail: float = 0.005   # a group never succeeds: the ladder ends in the DLQ
    fifo_p_fail: float = 0.05
    fifo_max_fail: int = 3


@dataclass
class Plan:
    """Per-message arrays (send order) and per-group failure counts."""

    seed: int
    send_ms: np.ndarray
    fifo: np.ndarray
    message_group: np.ndarray       # int index, -1 when none
    delay_level: np.ndarray
    failures: dict[str, np.ndarray] = field(default_factory=dict)
    first_id: int = 1

    def __len__(self) -> int:
        return len(self.send_ms)


def plan_messages(count: int, seed: int, dist: Distributions, first_id: int = 1, start_ms: int = 0) -> Plan:
    rng = np.random.default_rng([seed, first_id])
    send = start_ms + (np.arange(count, dtype=np.int64) + first_id) * dist.spacing_ms
    fifo = (rng.random(count) < dist.p_fifo) if dist.profile == GRPC_5X else np.zeros(count, bool)
    mgroup = np.where(fifo, rng.integers(0, dist.message_groups, count), -1)
    delay = np.where(~fifo & (rng.random(count) < dist.p_delay), rng.integers(1, 7, count), 0)
    failures = {}
    for g in dist.groups:
        roll = rng.random(count)
        some = rng.integers(1, dist.max_fail + 1, count)
        f = np.where(roll < dist.p_always_fail, 99, np.where(roll < dist.p_always_fail + dist.p_fail, some, 0))
        failures[g] = np.where(fifo, 0, f)
    roll = rng.random(count)
    failures[FIFO_GROUP] = np.where(fifo & (roll < dist.fifo_p_fail), rng.integers(1, dist.fifo_max_fail + 1, count), 0)
    return Plan(seed, send, fifo, mgroup, delay.astype(np.int64), failures, first_id)


def msg_ids(seed: int, ids: np.ndarray) -> np.ndarray:
    """The model's id layout (``Simulation.new_msg_id``) for the given counters."""
    tag = f"7F000001{seed & 0xFFFF:04X}0000"
    return np.array([f"{tag}{i:016X}" for i in ids.tolist()], dtype=object)


# ---- the bulk generator ------------------------------------------------------------------------

@dataclass
class Columns:
    """Event columns being built for one chunk."""

    kind: list[np.ndarray] = field(default_factory=list)
    ts: list[np.ndarray] = field(default_factory=list)
    topic: list[np.ndarray] = field(default_factory=list)
    group: list[np.ndarray] = field(default_factory=list)
    msg: list[np.ndarray] = field(default_factory=list)      # message index into the chunk
    attempt: list[np.ndarray] = field(default_factory=list)
    queue: list[np.ndarray] = field(default_factory=list)

    def add(self, kind, ts, topic, group, msg, attempt, queue) -> None:
        n = len(ts)
        self.kind.append(np.full(n, kind, dtype=object) if isinstance(kind, str) else kind)
        self.ts.append(np.asarray(ts, dtype=np.int64))
        self.topic.append(np.full(n, topic, dtype=object) if isinstance(topic, str) else topic)
        self.group.append(np.full(n, group, dtype=object) if isinstance(group, (str, type(None))) else group)
        self.msg.append(np.asarray(msg, dtype=np.int64))
        self.attempt.append(np.asarray(attempt, dtype=np.float64) if attempt is not None else np.full(n, np.nan))
        self.queue.append(np.asarray(queue, dtype=np.float64) if queue is not None else np.full(n, np.nan))

    def concat(self) -> dict[str, np.ndarray]:
        return {name: np.concatenate(getattr(self, name)) if getattr(self, name) else np.array([])
                for name in ("kind", "ts", "topic", "group", "msg", "attempt", "queue")}


class FifoQueues:
    """Per-queue completion times of the FIFO group, carried across chunks."""

    def __init__(self) -> None:
        self.busy_until: dict[int, int] = {}


def _lives(cols: Columns, t_first: np.ndarray, failures: np.ndarray, msg: np.ndarray, topic: str, group: str,
           t: ProfileTiming, dlq_extra_ms: int, queue: np.ndarray, lag_ms: int = 0) -> np.ndarray:
    """Expand deliveries, consume results, APPLY and DLQ for one group; returns completion times. Each
    redelivery comes ``lag_ms`` after its wait (the 5.x revive of standard consumers, RETRY-5X-11)."""
    cum = np.concatenate([[0], np.cumsum(np.asarray(t.waits_ms) + lag_ms)]).astype(np.int64)  # attempt k+1 from the first
    deliveries = np.minimum(failures, t.max_deliveries - 1) + 1
    rows = np.repeat(np.arange(len(msg)), deliveries)
    starts = np.cumsum(deliveries) - deliveries
    attempt = np.arange(len(rows)) - np.repeat(starts, deliveries) + 1
    ts = t_first[rows] + cum[attempt - 1]
    ok = attempt > failures[rows]
    cols.add("DELIVER", ts, topic, group, msg[rows], attempt, queue[rows])
    cols.add(np.where(ok, "CONSUME_OK", "CONSUME_FAIL").astype(object), ts, topic, group, msg[rows], attempt, None)
    cols.add("APPLY", ts[ok], topic, group, msg[rows][ok], None, None)
    dead = failures >= t.max_deliveries
    last = t_first + cum[deliveries - 1]
    if dead.any():
        cols.add("DLQ", last[dead] + dlq_extra_ms, f"%DLQ%{group}", group, msg[dead], deliveries[dead], np.zeros(dead.sum()))
    return np.where(dead, last + dlq_extra_ms, last)


def generate_chunk(plan: Plan, dist: Distributions, fifo_state: FifoQueues) -> dict[str, np.ndarray]:
    t = timing(dist.profile)
    cols = Columns()
    n = len(plan)
    idx = np.arange(n)
    std, fifo = ~plan.fifo, plan.fifo
    topics = np.where(fifo, FIFO_TOPIC, STANDARD_TOPIC).astype(object)
    cols.add("SEND_INVOKE", plan.send_ms, topics, None, idx, None, None)
    cols.add("SEND_OK", plan.send_ms, topics, None, idx, None, None)
    levels = np.array((0,) + t.delay_levels_ms, dtype=np.int64)
    first = plan.send_ms + levels[np.minimum(plan.delay_level, len(levels) - 1)]
    std_idx = idx[std]
    for g in dist.groups:
        _lives(cols, first[std], plan.failures[g][std], std_idx, STANDARD_TOPIC, g, t, t.dlq_after_last_ms,
               np.zeros(len(std_idx)), t.revive_lag_ms)
    if fifo.any():
        fifo_idx = idx[fifo]
        groups = plan.message_group[fifo]
        queue_of = {int(m): proxy_queue_for_group(f"mg{m}", dist.queues) for m in np.unique(groups)}
        queues = np.array([queue_of[int(m)] for m in groups], dtype=np.int64)
        failures = plan.failures[FIFO_GROUP][fifo]
        cum = np.concatenate([[0], np.cumsum(t.waits_ms)]).astype(np.int64)
        span = cum[np.minimum(failures, t.max_deliveries - 1)]
        starts = np.empty(len(fifo_idx), dtype=np.int64)
        busy = fifo_state.busy_until
        for k, (q, sent, dur) in enumerate(zip(queues.tolist(), plan.send_ms[fifo].tolist(), span.tolist())):
            start = max(sent, busy.get(q, 0))
            starts[k] = start
            busy[q] = start + dur
        _lives(cols, starts, failures, fifo_idx, FIFO_TOPIC, FIFO_GROUP, t, 0, queues)
    return cols.concat()


# ---- faults --------------------------------------------------------------------------------------

class _Chunk:
    """One chunk's columns being faulted: rows to drop, rows to add, the (group, message) lives already
    used by a fault (each instance is caught by exactly one check), and where each fault may go."""

    def __init__(self, columns: dict[str, np.ndarray], plan: Plan, rng: np.random.Generator, profile: str) -> None:
        self.c = {k: v.copy() for k, v in columns.items()}
        self.plan = plan
        self.keep = np.ones(len(self.c["ts"]), bool)
        self.extra: list[dict[str, np.ndarray]] = []
        self.used: set[tuple[str, int]] = set()
        self.t = timing(profile)
        kind, group = self.c["kind"], self.c["group"]
        std_groups = [g for g in np.unique(group[kind == "DELIVER"].astype(str)) if g != FIFO_GROUP]
        order = rng.permutation(len(plan))
        plain = [(g, int(m)) for m in order for g in std_groups if not plan.fifo[m]]
        # (group, msg) lives: successes at the first attempt, retried successes, and DLQs
        self.ok_first = [(g, m) for g, m in plain if plan.delay_level[m] == 0 and plan.failures[g][m] == 0]
        self.retried = [(g, m) for g, m in plain
                        if plan.delay_level[m] == 0 and 1 <= plan.failures[g][m] < self.t.max_deliveries]
        self.dead = [(g, m) for g, m in plain if plan.failures[g][m] >= self.t.max_deliveries]

    def late_shift_ms(self, wait: int) -> int:
        """How much later a retry must come to be late by the timing model: past its window and the noise
        band, with a second to spare."""
        model = wait_model("retry-5x" if self.t.name == GRPC_5X else "retry-4x")
        return model.slack_ms + int(model.band(wait)) + 1000

    def take(self, candidates: list[tuple[str, int]], n: int, name: str) -> list[tuple[str, int]]:
        picked = []
        for cand in candidates:
            if len(picked) == n:
                break
            if cand not in self.used:
                self.used.add(cand)
                picked.append(cand)
        if len(picked) < n:
            raise ValueError(f"--inject {name}={n}: the plan has only {len(picked)} places for it; "
                             f"simulate more events or inject fewer")
        return picked

    def rows(self, g: str, m: int, kinds: Sequence[str] | None = None, at: int | None = None) -> np.ndarray:
        c = self.c
        sel = (c["group"] == g) & (c["msg"] == m)
        if kinds is not None:
            sel &= np.isin(c["kind"], kinds)
        if at is not None:
            sel &= c["attempt"] == at
        return np.flatnonzero(sel)

    def copy_rows(self, r: np.ndarray, **changes: np.ndarray) -> None:
        """Add a copy of rows ``r`` with some columns changed."""
        self.extra.append({k: v[r] for k, v in self.c.items()} | changes)

    def result(self) -> dict[str, np.ndarray]:
        out = {k: v[self.keep] for k, v in self.c.items()}
        for e in self.extra:
            out = {k: np.concatenate([out[k], e[k]]) for k in out}
        return out


def _lost(x: _Chunk, count: int, name: str) -> None:
    for g, m in x.take(x.ok_first, count, name):
        x.keep[x.rows(g, m)] = False


def _duplicate(kinds: Sequence[str]) -> Callable[[_Chunk, int, str], None]:
    def duplicate(x: _Chunk, count: int, name: str) -> None:
        for g, m in x.take(x.ok_first, count, name):
            r = x.rows(g, m, kinds)
            x.copy_rows(r, ts=x.c["ts"][r] + 1)
    return duplicate


def _shifted_retry(early: bool) -> Callable[[_Chunk, int, str], None]:
    def shifted(x: _Chunk, count: int, name: str) -> None:
        for g, m in x.take(x.retried, count, name):
            last = int(x.plan.failures[g][m]) + 1
            wait = x.t.wait_before(last) or 1000
            r = np.concatenate([x.rows(g, m, at=last), x.rows(g, m, ["APPLY"])])
            # late: past the timing model's latest edge and its noise band (spec/timing_model.yaml)
            x.c["ts"][r] += -(wait // 2) if early else max(wait, x.late_shift_ms(wait))
    return shifted


def _dlq_early(x: _Chunk, count: int, name: str) -> None:
    for g, m in x.take(x.dead, count, name):
        x.keep[x.rows(g, m, ["DELIVER", "CONSUME_FAIL"], at=x.t.max_deliveries)] = False


def _dlq_missing(x: _Chunk, count: int, name: str) -> None:
    for g, m in x.take(x.dead, count, name):
        x.keep[x.rows(g, m, ["DLQ"])] = False


def _delivered_after_dlq(x: _Chunk, count: int, name: str) -> None:
    for g, m in x.take(x.dead, count, name):
        r = x.rows(g, m, ["DLQ"])
        x.copy_rows(r, kind=np.array(["DELIVER"], dtype=object), ts=x.c["ts"][r] + 1000,
                    topic=np.array([STANDARD_TOPIC], dtype=object), attempt=np.array([x.t.max_deliveries + 1.0]))


def _reorder(x: _Chunk, count: int, name: str) -> None:
    plan = x.plan
    by_group: dict[int, list[int]] = {}
    for m in np.flatnonzero(plan.fifo):
        by_group.setdefault(int(plan.message_group[m]), []).append(int(m))
    pairs = []
    for members in by_group.values():
        for a, b in zip(members[0::3], members[1::3]):  # disjoint pairs, never adjacent to another
            if plan.failures[FIFO_GROUP][a] == 0 and plan.failures[FIFO_GROUP][b] == 0:
                pairs.append((a, b))
    picked = 0
    for a, b in pairs:
        if picked == count:
            break
        if (FIFO_GROUP, a) in x.used or (FIFO_GROUP, b) in x.used:
            continue
        ra, rb = x.rows(FIFO_GROUP, a), x.rows(FIFO_GROUP, b)
        ta, tb = x.c["ts"][ra][0], x.c["ts"][rb][0]
        if ta == tb:
            continue
        x.used.update({(FIFO_GROUP, a), (FIFO_GROUP, b)})
        x.c["ts"][ra], x.c["ts"][rb] = tb, ta
        picked += 1
    if picked < count:
        raise ValueError(f"--inject reorder={count}: the plan has only {picked} FIFO pairs; "
                         f"reorder needs --profile {GRPC_5X} and more events")


FAULT_FUNCTIONS: dict[str, Callable[[_Chunk, int, str], None]] = {
    "lost": _lost,
    "duplicate-delivery": _duplicate(["DELIVER", "CONSUME_OK"]),
    "duplicate-apply": _duplicate(["APPLY"]),
    "reorder": _reorder,
    "early-retry": _shifted_retry(early=True),
    "late-retry": _shifted_retry(early=False),
    "dlq-early": _dlq_early,
    "dlq-missing": _dlq_missing,
    "delivered-after-dlq": _delivered_after_dlq,
}
"""Each fault: applied ``count`` times to one chunk, each instance caught by exactly one check."""
FAULTS = tuple(FAULT_FUNCTIONS)


def inject(columns: dict[str, np.ndarray], plan: Plan, faults: dict[str, int], rng: np.random.Generator,
           profile: str) -> dict[str, int]:
    """Apply each fault ``count`` times to one chunk (``FAULT_FUNCTIONS``), in place; returns the counts."""
    chunk = _Chunk(columns, plan, rng, profile)
    done: dict[str, int] = {}
    for name, count in faults.items():
        if count <= 0:
            continue
        if name not in FAULT_FUNCTIONS:
            raise ValueError(f"unknown fault {name!r}; known: {', '.join(FAULTS)}")
        FAULT_FUNCTIONS[name](chunk, count, name)
        done[name] = count
    columns.clear()
    columns.update(chunk.result())
    return done


# ---- writing -------------------------------------------------------------------------------------

def to_table(columns: dict[str, np.ndarray], plan: Plan, run_id: str, profile: str, seq_start: int):
    import pyarrow as pa

    n = len(columns["ts"])
    order = np.lexsort((columns["msg"], columns["ts"]))
    col = {k: v[order] for k, v in columns.items()}
    m = col["msg"]
    ids = msg_ids(plan.seed, plan.first_id + m)
    attempt = col["attempt"]
    queue = col["queue"]
    mg = plan.message_group[m]
    is_send = np.isin(col["kind"], ["SEND_INVOKE", "SEND_OK"])
    producer_seq = np.where(mg >= 0, plan.first_id + m, np.nan)
    data = {
        "run_id": pa.array([run_id] * n, pa.string()),
        "target": pa.array(["simulate"] * n, pa.string()),
        "profile": pa.array([profile] * n, pa.string()),
        "seq": pa.array(np.arange(seq_start, seq_start + n, dtype=np.int64)),
        "ts_ms": pa.array(col["ts"]),
        "kind": pa.array(col["kind"].astype(str), pa.string()),
        "topic": pa.array(col["topic"].astype(str), pa.string()),
        "group": pa.array([None if g is None else str(g) for g in col["group"]], pa.string()),
        "client_id": pa.array([None] * n, pa.string()),
        "queue_id": pa.array(np.where(np.isnan(queue), None, queue).tolist(), pa.int32()),
        "queue_offset": pa.array([None] * n, pa.int64()),
        "msg_id": pa.array(ids.tolist(), pa.string()),
        "key": pa.array([f"k{plan.first_id + i}" for i in m.tolist()], pa.string()),
        "message_group": pa.array([None if x < 0 else f"mg{x}" for x in mg.tolist()], pa.string()),
        "producer_seq": pa.array(np.where(np.isnan(producer_seq), None, producer_seq).tolist(), pa.int64()),
        "attempt": pa.array(np.where(np.isnan(attempt), None, attempt).tolist(), pa.int32()),
        "delay_level": pa.array(np.where(is_send & (plan.delay_level[m] > 0), plan.delay_level[m], None).tolist(), pa.int32()),
        "expected_delay_ms": pa.array([None] * n, pa.int64()),
        "tx_state": pa.array([None] * n, pa.string()),
        "detail": pa.array([[]] * n, pa.map_(pa.string(), pa.string())),
    }
    return pa.table(data, schema=arrow_schema())


def simulate(events: int, out: Path, *, seed: int = 1, profile: str = GRPC_5X, faults: dict[str, int] | None = None,
             run_id: str | None = None, chunk_messages: int = 200_000, progress: bool = True) -> dict[str, object]:
    """Write about ``events`` events to ``out/run_id=<id>/part-*.parquet``; returns a summary."""
    import pyarrow.parquet as pq

    dist = Distributions(profile=profile)
    run_id = run_id or f"sim-{seed}"
    target_dir = Path(out) / f"run_id={run_id}"
    target_dir.mkdir(parents=True, exist_ok=True)
    fifo_state = FifoQueues()
    written, part, first_id = 0, 0, 1
    injected: dict[str, int] = {}
    pending = dict(faults or {})
    started = time.perf_counter()
    rng = np.random.default_rng(seed + 7)
    per_message = 2 + 3 * len(dist.groups) * (1 - dist.p_fifo) + 3 * dist.p_fifo
    while written < events:
        remaining = events - written
        count = max(1, min(chunk_messages, int(remaining / per_message) + 1))
        plan = plan_messages(count, seed, dist, first_id)
        columns = generate_chunk(plan, dist, fifo_state)
        if pending:
            injected.update(inject(columns, plan, pending, rng, profile))
            pending = {}
        table = to_table(columns, plan, run_id, profile, written)
        pq.write_table(table.drop(["run_id"]), target_dir / f"part-{part:05d}.parquet")
        written += table.num_rows
        part += 1
        first_id += count
        per_message = written / (first_id - 1)  # calibrate the chunk size on what this plan produces
        if progress:
            rate = written / max(1e-9, time.perf_counter() - started)
            print(f"\rsimulate: {written:,}/{events:,} events ({100 * min(written, events) / events:.0f}%), "
                  f"{rate:,.0f} events/s", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    return {"run_id": run_id, "events": written, "messages": first_id - 1, "parts": part, "injected": injected,
            "path": str(target_dir), "seconds": round(time.perf_counter() - started, 2)}


# ---- the same plan through the discrete-event model ------------------------------------------------

def model_events(plan: Plan, dist: Distributions) -> list[Event]:
    """Run a plan through the discrete-event model with idempotent consumers that emit APPLY."""
    from history.values import ListenerOutcome
    from reference_impl.model.simulation import Simulation

    sim = Simulation(dist.profile, seed=plan.seed)
    # 5.x topics are typed (TOPIC-05): the standard topic takes normal and delayed messages
    sim.broker.create_topic(STANDARD_TOPIC, 1, 1, message_type="MIXED" if dist.profile == GRPC_5X else "NORMAL")
    if dist.profile == GRPC_5X:
        sim.broker.create_topic(FIFO_TOPIC, dist.queues, dist.queues, message_type="FIFO")
        sim.broker.group(FIFO_GROUP).fifo = True
    seen: dict[tuple[str, str], int] = {}
    store: set[tuple[str, str]] = set()

    def listener_for(group: str):
        def listener(view):
            index = int(view.key[1:]) - plan.first_id
            n = seen.get((group, view.key), 0) + 1
            seen[(group, view.key)] = n
            if n <= plan.failures[group][index]:
                return ListenerOutcome.RECONSUME_LATER
            if (group, view.key) not in store:  # idempotency token, then the unique key (seed 004)
                store.add((group, view.key))
                sim.emit("APPLY", topic=view.topic, group=group, msg_id=view.msg_id, key=view.key,
                         message_group=view.message_group)
            return ListenerOutcome.SUCCESS
        return listener

    for g in dist.groups:
        if dist.profile == REMOTING_4X:
            sim.push_consumer_4x(g, STANDARD_TOPIC, listener_for(g))
        else:
            sim.push_consumer_5x(g, STANDARD_TOPIC, listener_for(g))
    if dist.profile == GRPC_5X:
        sim.push_consumer_5x(FIFO_GROUP, FIFO_TOPIC, listener_for(FIFO_GROUP))
    producer = sim.producer()
    for i in range(len(plan)):
        sim.advance(int(plan.send_ms[i]) - sim.clock.now_ms)
        key = f"k{plan.first_id + i}"
        if plan.fifo[i]:
            producer.send(FIFO_TOPIC, b"x", key=key, message_group=f"mg{plan.message_group[i]}")
        else:
            producer.send(STANDARD_TOPIC, b"x", key=key, delay_level=int(plan.delay_level[i]))
    sim.run_until_idle(SETTLE_LIMIT_MS)
    return sim.recorder.events
