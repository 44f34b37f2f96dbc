"""``rmqc soak``: drive a target for a long time with a stated workload and log what its real clients saw.

Producers (normal, FIFO with message groups, timed, transactional) send at a rate each; 5.x push or simple
consumer groups run a listener that fails with a stated probability and applies each key once (``APPLY``,
through a store all consumer processes share). A group with a ``consumer_restart`` fault runs its consumers
in processes of their own (``rmqc.soak_worker``), one of which is killed with SIGKILL and replaced; a
``consumer_scale`` fault adds consumer processes for a while and shuts them down. Every event goes to a
rolling Parquet log as it happens; ``_soak.json`` beside the parts states what the checks need to judge
the log (release, time scale, each group's ladder and maximum, crash windows). A progress line shows
rates, messages in flight and time left; Ctrl-C stops the sends cleanly. It works through the same
targets as ``rmqc run`` (``parse_target(...).build``), so the events are the clients'.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TextIO

from adapters.base import NotApplicable, Target, TargetError
from history.events import Event
from history.profiles import GRPC_5X
from history.rolling import RollingParquetWriter
from history.values import ListenerOutcome, LocalTransactionState
from history.views import MessageView
from reference_impl.rules import retry5x
from spark_checks.timing_model import processing_allowance_ms
from spec.loader import default_spec

from .soak_plan import (
    AppliedStore,
    GroupPlan,
    ProducerPlan,
    Workload,
    apply_event,
    soak_listener,
)
from .stall_probe import StallProbe

MANIFEST = "_soak.json"
STORE = "_applied.sqlite"
WORKER_READY_S = 60.0
COLLECT_EVERY_S = 0.5
SIMPLE_INVISIBLE_MS = 30_000
"""What a soak's simple consumer asks for at receive (RETRY-5X-09: at least 10 s)."""
QUIET_S = 10.0
"""After the last crash window, a settle with nothing finishing for this long is over."""


@dataclass
class SoakStats:
    sent: int = 0
    send_failed: int = 0
    send_unknown: int = 0  # sends whose outcome the client could not know (SEND_UNKNOWN: a timeout, a reset)
    events: int = 0
    kills: int = 0
    unreadable_lines: int = 0  # a consumer process's lines that could not be logged (see its _consumer-*.log)
    compacted_files: int = 0  # the files the log's parts were merged into when the soak ended
    finished: dict[str, int] = field(default_factory=dict)  # group -> messages acked or dead-lettered


def return_window_ms(time_scale: float, unseen_ms: int, wall_ms: float = 0.0) -> int:
    """How long after consumers go away what they held may come again (RETRY-5X-09): ``unseen_ms`` until
    the proxy may still take a handle of theirs for live, the renew scan that finds it is not, the cleared
    handle's invisible time, then the revive (RETRY-5X-11); plus ``wall_ms`` and the processing allowance,
    which are wall time."""
    spec = default_spec()
    renew = spec.get("RETRY-5X-09").defaults
    revive = spec.get("RETRY-5X-11").defaults
    return unseen_ms + int(renew["renewSchedulePeriodMillis"]) + int(renew["invisibleTimeMillisWhenClear"]) + \
        int(revive["reviveLagMs"]) + int(revive["reviveScanSlackMs"]) + \
        int((wall_ms + processing_allowance_ms()) / time_scale)


CLIENT_ROUTE_REFRESH_S = 30.0
"""How often a 5.x client reads its topics' routes again, in wall seconds (rocketmq-python-client 5.1.2
``ClientRouteManager.start_scheduler``: 10 s after start, then every 30 s; the Java client's
``ClientImpl.startUp`` the same): a push consumer takes a restarted broker's queues again only then, so what the
broker lost of its acks comes again up to that long after the broker is back (a FIFO line replayed 36 wall s after
a 5.5.0 broker's restart)."""


def crash_window_ms(time_scale: float, down_s: float) -> int:
    """After a consumer is killed: the broker takes it for gone once its channel expires (as a server on a
    time scale judges it, 120 s at scale 1), and it was down ``down_s``."""
    return return_window_ms(time_scale, retry5x.client_expiry_ms(time_scale), down_s * 1000)


class ConsumerProcess:
    """One consumer of a group in a process of its own (``python -m rmqc.soak_worker``): its events come
    back line by line as they happen, so a SIGKILL loses none that were written."""

    def __init__(self, soak: "Soak", plan: GroupPlan, number: int) -> None:
        self.soak, self.plan, self.number = soak, plan, number
        config = {"target": soak.target_text, "run_id": soak.run_id, "epoch": soak.epoch,
                  "names": soak.target.names.tag, "fifo": soak.workload.topics()[plan.topic] == "FIFO",
                  "plan": dataclasses.asdict(plan), "seed": soak.workload.seed * 1000 + number,
                  "store": str(soak.out / STORE)}
        self.stderr = open(soak.out / f"_consumer-{plan.group}-{number}.log", "wb")
        self.process = subprocess.Popen([sys.executable, "-m", "rmqc.soak_worker", json.dumps(config)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                                        cwd=str(Path(__file__).resolve().parent.parent))
        self.ready = threading.Event()
        self.reader = threading.Thread(target=self._read, name=f"soak-consumer-{number}", daemon=True)
        self.reader.start()
        if not self.ready.wait(WORKER_READY_S):
            self.kill()
            raise TargetError(f"consumer process {number} of {plan.group} did not start within {WORKER_READY_S:g} s; "
                              f"see {self.stderr.name}")

    def _read(self) -> None:
        """Drain the worker's stdout to its end whatever a line holds: a reader that stopped would fill the
        pipe, block the worker's listener, and leave a live-looking client holding its messages for ever."""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a kill
            try:
                if data.get("ready"):
                    self.ready.set()
                elif "kind" in data:
                    self.soak.record(Event(**data))
            except Exception as exc:  # counted, and said in the consumer's log; the pipe is drained on
                self.soak.stats.unreadable_lines += 1
                self.stderr.write(f"soak: line not logged ({type(exc).__name__}: {exc}): {line[:300]!r}\n".encode())
                self.stderr.flush()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.reader.join(5)

    def stop(self) -> None:
        """Shut down as a user would (the SDK's shutdown), or kill after 30 s."""
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(b"stop\n")
            self.process.stdin.flush()
            self.process.wait(30)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()
        self.reader.join(5)
        self.stderr.close()


class Soak:
    """One soak: the target, its clients, the log and the counters."""

    def __init__(self, target: Target, target_text: str, workload: Workload, out: Path, roll_s: float = 2.0,
                 run_id: str = "soak", nemesis: Any = None) -> None:
        """``nemesis``: an ``adapters.nemesis.NemesisPlan`` to run against the release cluster the target drives."""
        self.target, self.target_text, self.workload, self.out = target, target_text, workload, Path(out)
        self.run_id = run_id
        self.log = RollingParquetWriter(self.out, roll_s)
        self.store = AppliedStore(self.out / STORE)
        self.random = random.Random(workload.seed)
        self.stats = SoakStats()
        self.epoch = getattr(target, "epoch_monotonic", None)
        self.time_scale: float = getattr(target, "time_scale", 1.0)
        self._lock = threading.Lock()
        self._keys = itertools.count()
        self._producers: list[tuple[ProducerPlan, Any]] = []
        self._credit: list[float] = []
        self._processes: dict[str, list[ConsumerProcess]] = {}
        self._numbers = itertools.count(1)
        self._sent_to: dict[str, int] = {}                  # topic -> messages sent
        self._finished: dict[str, set[str]] = {g.group: set() for g in workload.groups}
        self._last_attempt: dict[tuple[str, str], int] = {}  # (group, msg_id) -> last attempt delivered
        self._open_halves: set[str] = set()                  # transaction halves not yet committed or rolled back
        self._faults = sorted(workload.faults, key=lambda f: f.at_s)
        self._restarts: list[tuple[float, GroupPlan]] = []
        self.crash_windows: list[dict[str, Any]] = []
        self._finished_seen, self._finished_changed = 0, time.monotonic()
        self._collecting = threading.Lock()
        self._simple_threads: list[threading.Thread] = []
        self._simple_stop = threading.Event()
        self._simple_errors: list[str] = []
        self._scaled: list[tuple[float, GroupPlan, list[ConsumerProcess]]] = []
        self._collector_stop = threading.Event()
        self.started_at = time.monotonic()
        self.stopping = False
        self.nemesis_plan = nemesis
        self.nemesis: Any = None          # adapters.nemesis.Nemesis, once started
        self._schedule: Any = None        # adapters.nemesis.ScheduleRunner
        self._send_outcomes: list[tuple[int, bool]] = []  # (ts_ms, succeeded) of every send, for recovery times
        self._nemesis_events: list[dict[str, Any]] = []
        self.stalls = StallProbe(self.target.now_ms)  # the process's own stalls, judged apart by the timing checks

    # ---- set-up -------------------------------------------------------------------------------

    def start(self) -> None:
        w = self.workload
        if self.nemesis_plan is not None:
            cluster = getattr(self.target, "cluster", None)
            if cluster is None:
                raise NotApplicable(f"{self.target.name}: a nemesis acts only on processes the suite started "
                                    "(--target release:V)")
            from adapters.nemesis import Nemesis

            self.nemesis = Nemesis(cluster, self.record, self.target.now_ms, self.run_id, self.target.name,
                                   self.nemesis_plan.seed)
        restarted = w.own_process_groups()
        if w.needs_processes() and self.epoch is None:
            raise NotApplicable(f"{self.target.name}: consumers in processes of their own (a restart fault, "
                                "own_process) log on one clock; this target does not share its clock (use grpc://)")
        topics = w.topics()
        for plan in w.groups:
            if plan.kind == "simple" and (topics[plan.topic] == "FIFO" or plan.group in restarted):
                raise NotApplicable(f"group {plan.group}: the soak's simple consumers read standard topics in "
                                    "the soak's own process")
        cluster = getattr(self.target, "cluster", None)
        masters = cluster.plan.topology.masters if cluster is not None else 1
        for topic, message_type in topics.items():  # on every master: a killed one leaves the topic on the others
            self.target.create_topic(topic, message_type=message_type, **({"brokers": masters} if masters > 1 else {}))
        for plan in w.groups:
            self.target.configure_group(plan.group, retry_max_times=plan.retry_max_times,
                                        fifo=topics[plan.topic] == "FIFO", retry_ladder_ms=plan.retry_ladder_ms)
        self.write_manifest()
        for plan in w.groups:
            for _ in range(plan.instances):
                self._start_consumer(plan, own_process=plan.group in restarted)
        for plan in w.producers:
            for _ in range(plan.count):
                producer = self.target.transaction_producer("SoakTxP", self._check_transaction, [plan.topic_name]) \
                    if plan.kind == "transactional" else self.target.producer()
                self._producers.append((plan, producer))
                self._credit.append(0.0)

    @staticmethod
    def _check_transaction(key: str | None, times: int) -> LocalTransactionState:
        """A half left UNKNOWN is committed when the server asks (TX-03)."""
        return LocalTransactionState.COMMIT_MESSAGE

    def _start_consumer(self, plan: GroupPlan, own_process: bool) -> None:
        if own_process:
            self._processes.setdefault(plan.group, []).append(ConsumerProcess(self, plan, next(self._numbers)))
            return
        listener = soak_listener(plan, random.Random(self.random.random()), self.store,
                                 lambda view, group=plan.group: self.record(
                                     apply_event(view, group, self.target.now_ms(), self.run_id, self.target.name)))
        if plan.kind == "simple":
            consumer = self.target.simple_consumer_5x(plan.group, plan.topic)
            thread = threading.Thread(target=self._simple_loop, args=(plan, consumer, listener), daemon=True,
                                      name=f"soak-simple-{plan.group}")
            self._simple_threads.append(thread)
            thread.start()
            return
        self.target.push_consumer_5x(plan.group, plan.topic, listener)

    def _simple_loop(self, plan: GroupPlan, consumer: Any, listener: Callable[[MessageView], Any]) -> None:
        """An application's simple consumer: receive, run the listener, ack, or change the invisible time to
        the ladder's wait for the attempt (whole seconds, as the Python SDK sends it)."""
        waits = self._group_statement(plan, False)["ladder_ms"]
        while not self._simple_stop.is_set():
            try:
                views = consumer.receive(16, SIMPLE_INVISIBLE_MS)
            except Exception as exc:  # the soak goes on; the log shows what was not consumed
                self._simple_errors.append(f"{plan.group}: receive: {exc}")
                time.sleep(0.5)
                continue
            for view in views:
                outcome = listener(view)
                ok = outcome is ListenerOutcome.SUCCESS
                self.record(Event(kind="CONSUME_OK" if ok else "CONSUME_FAIL", ts_ms=self.target.now_ms(),
                                  run_id=self.run_id, target=self.target.name, profile=GRPC_5X, topic=view.topic,
                                  group=plan.group, msg_id=view.msg_id, key=view.key,
                                  attempt=view.delivery_attempt, detail={"outcome": outcome.value}))
                if ok:
                    consumer.ack(view)
                else:
                    wait = waits[min(view.delivery_attempt, len(waits)) - 1]
                    consumer.change_invisible_duration(view, wait)

    def manifest(self) -> dict[str, Any]:
        topics = self.workload.topics()
        return {
            "run_id": self.run_id, "target": self.target_text, "profile": GRPC_5X,
            "release": getattr(self.target, "release", None) or "5.3.3",
            "time_scale": self.time_scale,
            # a real release's durations no key compresses (its revive lag): wall ms at any scale (RETRY-5X-11)
            "wall_fixed_ms": dict((getattr(self.target, "release_record", None) or {}).get("wall_fixed_ms", {})),
            "sdk": dict(zip(("name", "version"), getattr(self.target, "client_library", None) or ())) or None,
            "groups": {g.group: self._group_statement(g, topics[g.topic] == "FIFO") for g in self.workload.groups},
            "crash_windows": self.crash_windows,
            "stalls": self.stalls.statement(),
            "workload": json.loads(json.dumps(dataclasses.asdict(self.workload))),
            "stats": dataclasses.asdict(self.stats),
            **({"nemesis": self.nemesis_statement()} if self.nemesis_plan is not None else {}),
        }

    def nemesis_statement(self) -> dict[str, Any]:
        """The fault schedule (its seed replays it), what was caused and when, what could not be, the topology
        and the recovery time of each fault (issue 50)."""
        from .soak_recovery import spans, summary

        plan = self.nemesis_plan
        cluster = getattr(self.target, "cluster", None)
        return {
            "plan": {"kinds": list(plan.kinds), "every_s": plan.every_s, "down_s": plan.down_s, "seed": plan.seed},
            "topology": cluster.plan.topology.as_json() if cluster is not None else None,
            "schedule": [f.as_json() for f in (self._schedule.faults if self._schedule else [])],
            "caused": list(self.nemesis.done) if self.nemesis is not None else [],
            "errors": (list(self._schedule.errors) if self._schedule else []) +
                      (list(self.nemesis.errors) if self.nemesis is not None else []),
            "recovery": summary(spans(self._nemesis_events), self._send_outcomes, self.time_scale),
            "indeterminate_sends": self.stats.send_unknown,
        }

    def _group_statement(self, plan: GroupPlan, fifo: bool) -> dict[str, Any]:
        """What the group was configured with on the broker, and the waits its client takes from that: the
        nominal waits the checks judge against."""
        configured = plan.retry_ladder_ms or retry5x.DEFAULT_CUSTOMIZED_NEXT_MS
        settings = retry5x.consumer_settings(plan.retry_max_times, "CUSTOMIZED", configured, fifo=fifo)
        sdk = "nodejs" if "sdk.nodejs" in self.target.capabilities else "python"
        policy = retry5x.sdk_consumer_policy(sdk, settings)
        if plan.kind == "simple":  # the application waits the ladder, in the whole seconds the SDK sends
            policy = retry5x.SdkRetryPolicy(settings.backoff.max_attempts,
                                            tuple(1000 * s for s in retry5x.python_customized_durations_s(configured)))
        waits = [policy.next_attempt_delay_ms(a) for a in range(1, settings.backoff.max_attempts)]
        return {"topic": plan.topic, "fifo": fifo, "configured_ladder_ms": list(configured), "ladder_ms": waits,
                # a FIFO consumer dead-letters by its own count (RETRY-5X-08), the server by the group's
                "max_deliveries": policy.max_attempts if fifo else settings.backoff.max_attempts, "sdk": sdk,
                "kind": plan.kind,
                "why": "RETRY-5X-01: max_attempts = retryMaxTimes + 1 and the ladder set on the group "
                       "(customizedRetryPolicy.next); ladder_ms: the wait before each next attempt as this SDK "
                       "takes it from that (RETRY-5X-03..06, SDK-NODE-01/02)"}

    def write_manifest(self) -> None:
        final, temporary = self.out / MANIFEST, self.out / f".{MANIFEST}.tmp"
        temporary.write_text(json.dumps(self.manifest(), indent=2))
        os.replace(temporary, final)

    # ---- events -------------------------------------------------------------------------------

    def record(self, event: Event) -> None:
        """Log one event (from this process's target or a consumer process) and count it."""
        with self._lock:
            key = (event.group or "", event.msg_id or "")
            if event.kind == "DELIVER" and event.attempt:
                self._last_attempt[key] = max(self._last_attempt.get(key, 0), event.attempt)
            elif event.kind == "DLQ" and not (event.attempt or 0) >= 1:
                # the dead letter's reader saw no delivery when a consumer process had them
                event = dataclasses.replace(event, attempt=max(1, self._last_attempt.get(key, 1)))
            elif event.topic and (event.kind == "SEND_OK" or (event.kind == "TX_END" and
                                                              (event.detail or {}).get("state") == "COMMIT_MESSAGE")):
                self._sent_to[event.topic] = self._sent_to.get(event.topic, 0) + 1
            if event.kind in ("SEND_OK", "SEND_FAIL", "SEND_UNKNOWN"):
                self._send_outcomes.append((event.ts_ms, event.kind == "SEND_OK"))
                if event.kind == "SEND_UNKNOWN":
                    self.stats.send_unknown += 1
            elif event.kind == "NEMESIS":
                self._nemesis_events.append({"ts_ms": event.ts_ms, **dict(event.detail)})
                if event.detail.get("phase") == "end":
                    self._fault_windows(event)
            if event.kind == "TX_HALF" and event.msg_id:
                self._open_halves.add(event.msg_id)
            elif event.kind == "TX_END" and event.msg_id:
                self._open_halves.discard(event.msg_id)
            if event.kind in ("ACK", "DLQ") and event.group in self._finished and event.msg_id:
                done = self._finished[event.group]
                if event.msg_id not in done:
                    done.add(event.msg_id)
                    self.stats.finished[event.group] = len(done)
            self.stats.events += 1
        self.log.append(event)

    def _fault_windows(self, end: Event) -> None:
        """A fault on a broker, its proxy or the name server is a crash window for every group (issue 50): from its
        start to its end and then as long as after a consumer's crash, since what a killed or stalled broker held
        (popped, in flight) comes again only once its handles are taken for gone and revived (RETRY-5X-09,
        RETRY-5X-11), and the clients' next route refresh after it (``CLIENT_ROUTE_REFRESH_S``). Redeliveries and
        their lateness there are counted apart, as the checks do for crashes."""
        start = next((e["ts_ms"] for e in reversed(self._nemesis_events)
                      if e.get("number") == end.detail.get("number") and e.get("phase") == "start"), end.ts_ms)
        for plan in self.workload.groups:
            self.crash_windows.append({
                "group": plan.group, "kind": f"nemesis-{end.detail.get('fault')}", "from_ms": int(start),
                "to_ms": end.ts_ms + crash_window_ms(self.time_scale, CLIENT_ROUTE_REFRESH_S),
                "why": f"{end.detail.get('fault')} of {end.detail.get('process')} (nemesis fault "
                       f"{end.detail.get('number')}): what the process held comes again once it is taken for gone "
                       f"and revived (RETRY-5X-09, RETRY-5X-11)"})

    def collect(self) -> None:
        with self._collecting:
            try:
                drained = self.target.drain_events()
            except Exception as exc:  # noqa: BLE001 - a target that cannot be read now is read at the next collect
                self._simple_errors.append(f"collect: {type(exc).__name__}: {exc}"[:300])
                drained = []
            for event in drained:
                self.record(event)
            self.log.maybe_roll()

    def _collect_meanwhile(self) -> None:
        """Draining the target reads the dead-letter topics (a long poll of up to a second each when they are
        empty): it runs beside the sends, not in their loop."""
        while not self._collector_stop.wait(COLLECT_EVERY_S):
            self.collect()

    def _only_unseen_acks_left(self) -> bool:
        """Every crash window has ended and nothing finished for a while: what is left was acked by a consumer
        killed before it logged the ack (the server holds nothing more to deliver)."""
        if not self.crash_windows or self.target.now_ms() < max(w["to_ms"] for w in self.crash_windows):
            return False
        with self._lock:
            finished = sum(len(done) for done in self._finished.values())
            if finished != self._finished_seen:
                self._finished_seen, self._finished_changed = finished, time.monotonic()
            return time.monotonic() - self._finished_changed > QUIET_S

    def in_flight(self) -> int:
        """Messages some group has yet to finish, and transaction halves the server has yet to resolve (from
        the sends logged so far: the collector drains the target every half second)."""
        with self._lock:
            return len(self._open_halves) + sum(max(0, self._sent_to.get(g.topic, 0) - len(self._finished[g.group]))
                                                for g in self.workload.groups)

    # ---- running ------------------------------------------------------------------------------

    def send_round(self) -> None:
        """One tick's sends: each producer its rate's share (fractions carried over)."""
        w = self.workload
        for i, (plan, producer) in enumerate(self._producers):
            self._credit[i] += plan.rate_per_s * w.tick_ms / 1000
            while self._credit[i] >= 1:
                self._credit[i] -= 1
                n = next(self._keys)
                options: dict[str, Any] = {"key": f"k{n}"}
                if plan.kind == "fifo":
                    options["message_group"] = f"g{n % plan.message_groups}"
                elif plan.kind == "timed":
                    options["delivery_timestamp_ms"] = self.target.now_ms() + plan.delay_ms
                try:
                    if plan.kind == "transactional":
                        draw = self.random.random()
                        state = LocalTransactionState.ROLLBACK_MESSAGE if draw < plan.rollback_fraction else \
                            None if draw < plan.rollback_fraction + plan.unknown_fraction else \
                            LocalTransactionState.COMMIT_MESSAGE
                        producer.send_in_transaction(plan.topic_name, f"soak {n}".encode(), key=options["key"],
                                                     local_state=state)
                    else:
                        producer.send(plan.topic_name, f"soak {n}".encode(), **options)
                    self.stats.sent += 1
                except Exception:
                    self.stats.send_failed += 1

    def apply_faults(self, elapsed_s: float) -> None:
        while self._faults and self._faults[0].at_s <= elapsed_s:
            fault = self._faults.pop(0)
            plan = next(g for g in self.workload.groups if g.group == fault.group)
            if fault.kind == "consumer_scale":
                extra = [ConsumerProcess(self, plan, next(self._numbers)) for _ in range(fault.count)]
                self._scaled.append((elapsed_s + fault.for_s, plan, extra))
                continue
            victims = self._processes.get(fault.group) or []
            if not victims:
                continue
            killed_at = self.target.now_ms()
            victims.pop(0).kill()
            self.stats.kills += 1
            self.crash_windows.append({
                "group": fault.group, "kind": fault.kind, "from_ms": killed_at,
                "to_ms": killed_at + crash_window_ms(self.time_scale, fault.down_s),
                "why": "consumer killed (SIGKILL): what it held comes again once the broker takes it for gone "
                       "and the proxy clears its handles (RETRY-5X-09), through the revive (RETRY-5X-11)"})
            self._restarts.append((elapsed_s + fault.down_s, plan))
            self.write_manifest()
        for due in [r for r in self._restarts if r[0] <= elapsed_s]:
            self._restarts.remove(due)
            self._start_consumer(due[1], own_process=True)
        for due in [s for s in self._scaled if s[0] <= elapsed_s]:
            self._scaled.remove(due)
            self._scale_down(due[1], due[2])

    def _scale_down(self, plan: GroupPlan, processes: list[ConsumerProcess]) -> None:
        """Shut the extra consumers down as a user does; what they held comes again once the proxy clears
        their handles (RETRY-5X-09): a window like a crash's, from the shutdown to that return."""
        stopped_at = self.target.now_ms()
        for process in processes:
            process.stop()
        # a receive of theirs still held may take messages up to the long-poll clamp (20 s) after the shutdown;
        # the next renew scan clears those
        back = return_window_ms(self.time_scale, retry5x.LONG_POLLING_TIMEOUT_MS)
        self.crash_windows.append({
            "group": plan.group, "kind": "consumer_scale", "from_ms": stopped_at, "to_ms": self.target.now_ms() + back,
            "why": "consumers shut down: the proxy clears their handles at once (RETRY-5X-09) and what they held "
                   "comes again through the revive (RETRY-5X-11)"})
        self.write_manifest()

    def run(self, duration_s: float, max_messages: int | None, progress: TextIO | None, settle_s: float = 180.0,
            clock: Callable[[], float] = time.monotonic, max_events: int | None = None) -> SoakStats:
        """Send for ``duration_s`` of wall time (or until ``max_messages`` sends or ``max_events`` events
        logged), then wait up to ``settle_s`` until every group has finished every message it should get; log
        everything and close."""
        started = self.started_at = clock()
        last_line = 0.0
        tick_s = self.workload.tick_ms * self.time_scale / 1000

        def line(phase: str, left_s: float) -> None:
            nonlocal last_line
            if progress is None or clock() - last_line < 1.0:
                return
            last_line = clock()
            elapsed = max(1e-6, clock() - started)
            progress.write(f"\rrmqc soak: {phase} {elapsed:5.0f} s, sent {self.stats.sent} "
                           f"({self.stats.sent / elapsed:.1f}/s), in flight {self.in_flight()}, "
                           f"{self.stats.events} events ({self.stats.events / elapsed:.0f}/s), {left_s:.0f} s left   ")
            progress.flush()

        collector = threading.Thread(target=self._collect_meanwhile, name="soak-collector", daemon=True)
        collector.start()
        self.stalls.start()
        if self.nemesis is not None:
            from adapters.nemesis import ScheduleRunner

            faults = self.nemesis_plan.schedule(duration_s, self.nemesis.brokers(),
                                                not self.nemesis.cluster.plan.topology.single
                                                and self.nemesis.cluster.plan.with_proxy)
            self._schedule = ScheduleRunner(self.nemesis, faults, started).start()
            self.write_manifest()
        rounds = itertools.count(1)
        while not self.stopping and clock() - started < duration_s and \
                (max_messages is None or self.stats.sent < max_messages) and \
                (max_events is None or self.stats.events < max_events):
            self.send_round()
            self.apply_faults(clock() - started)
            self.log.maybe_roll()
            # rounds keep to their times: a round that took long is followed at once, not a tick later
            time.sleep(max(0.0, started + next(rounds) * tick_s - clock()))
            line("sending", duration_s - (clock() - started))
        if self._schedule is not None:  # every fault ends before the settle: the cluster is whole again
            self._schedule.stop()
        # every send is logged before the settle counts what is in flight: a SEND_OK still in the target
        # when the consumers' acks are already counted made a group look finished, and the settle ended
        # before a crash window's messages came back
        self.collect()
        settle_until = clock() + settle_s
        while not self.stopping and (self._restarts or self._scaled or self.in_flight()) and clock() < settle_until \
                and not self._only_unseen_acks_left():
            self.apply_faults(clock() - started)
            time.sleep(min(0.2, tick_s or 0.2))
            line("settling", settle_until - clock())
        for processes in self._processes.values():
            for process in processes:
                process.stop()
        for _, plan, extra in self._scaled:
            self._scale_down(plan, extra)
        self._simple_stop.set()
        for thread in self._simple_threads:
            thread.join(5)
        self._collector_stop.set()
        collector.join()
        self.collect()
        self.stalls.stop()
        self.log.close()
        parts = self.log.parts
        self.stats.compacted_files = self.log.compact()
        self.write_manifest()
        self.store.close()
        if progress is not None:
            for error in self._simple_errors[:5]:
                progress.write(f"\nrmqc soak: {error}")
            progress.write(f"\nrmqc soak: sent {self.stats.sent} ({self.stats.send_failed} failed), "
                           f"{self.log.written} events in {parts} parts (compacted into "
                           f"{self.stats.compacted_files or parts} files), {self.in_flight()} unfinished, "
                           f"{clock() - started:.0f} s\n")
        return self.stats


def run_soak(target: Target, target_text: str, workload: Workload, out: Path, duration_s: float,
             max_messages: int | None = None, roll_s: float = 2.0, progress: TextIO | None = sys.stderr,
             settle_s: float = 180.0, max_events: int | None = None, nemesis: Any = None) -> SoakStats:
    """A whole soak; Ctrl-C (SIGINT) stops the sends and the nemesis (every fault healed), logs what was seen and
    closes the target."""
    soak = Soak(target, target_text, workload, out, roll_s, nemesis=nemesis)

    def stop(*_: Any) -> None:
        soak.stopping = True

    previous = signal.signal(signal.SIGINT, stop)
    try:
        soak.start()
        return soak.run(duration_s, max_messages, progress, settle_s, max_events=max_events)
    finally:
        signal.signal(signal.SIGINT, previous)
        if soak._schedule is not None:
            soak._schedule.stop()
        for processes in soak._processes.values():
            for process in processes:
                if process.process.poll() is None:
                    process.kill()
        target.close()
