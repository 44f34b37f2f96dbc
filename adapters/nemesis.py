"""Nemeses on the real processes of a release cluster the suite started (issue 50), as Jepsen's and OpenChaos's:
a broker killed with SIGKILL and started again on the same store, a broker or proxy stalled with SIGSTOP and let
go with SIGCONT (its clients time out meanwhile), the name server killed and started again, and, to show that
the checks bite, a broker started again on an emptied store (it loses what it had: no correct system does that).

Bounds: a nemesis acts only on the processes of the ``ReleaseCluster`` it is given (the suite started them, on
127.0.0.1), each fault ends by itself after its duration (a timer thread), and ``heal`` (called at exit, on
Ctrl-C through ``rmqc soak``, and by the soak's schedule) lets every stalled process go and starts every killed
one again. Every start and end of a fault is an ``Event`` of kind ``NEMESIS`` in the history, with the process,
its pid and the fault's place in the schedule, written through ``record``.

``Schedule`` draws the faults of a run from a seed (the same seed, the same faults at the same times), as
``rmqc soak --nemesis kill,pause[,every=60s][,seed=N]`` asks.
"""
from __future__ import annotations

import atexit
import os
import random
import re
import shutil
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from history.events import Event

from .release_cluster import Component, ReleaseCluster

KINDS = ("kill", "pause", "namesrv-kill", "proxy-pause", "empty-store")
"""``kill``: a broker (a master, by the schedule's draw) SIGKILLed and started again on its store after
``down_s``; ``pause``: a broker SIGSTOPped for ``down_s``; ``namesrv-kill``: the name server; ``proxy-pause``: the
5.x proxy stalled; ``empty-store``: a broker killed and started again on an emptied store (data loss, for the
checks' bite test only)."""
DEFAULT_EVERY_S = 60.0
DEFAULT_DOWN_S = 10.0
RECOVERY_ROOM_S = 20.0
"""A fault of a schedule ends this long before the sends do at least: a killed broker's restart (about 10-15 s) and
the sends after it, which its recovery time is measured from."""
MAX_DOWN_S = 120.0
"""No fault lasts longer than this, whatever is asked."""


class NemesisError(ValueError):
    """A ``--nemesis`` text or a fault that cannot be caused: one line saying why."""


@dataclass(frozen=True)
class Fault:
    """One fault of a schedule: what, on which process, when (seconds into the run) and for how long."""

    kind: str
    process: str
    at_s: float
    down_s: float
    number: int

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "process": self.process, "at_s": round(self.at_s, 3),
                "down_s": round(self.down_s, 3), "number": self.number}


@dataclass(frozen=True)
class NemesisPlan:
    """What ``--nemesis`` asked: the kinds, one fault every ``every_s`` seconds, each ``down_s`` long, the seed."""

    kinds: tuple[str, ...]
    every_s: float = DEFAULT_EVERY_S
    down_s: float = DEFAULT_DOWN_S
    seed: int = 1
    first_s: float | None = None
    """When the first fault comes (default: one period in)."""

    @classmethod
    def parse(cls, text: str) -> "NemesisPlan":
        kinds: list[str] = []
        options: dict[str, float] = {}
        for part in (p.strip() for p in text.split(",") if p.strip()):
            name, sep, value = part.partition("=")
            if not sep:
                if name not in KINDS:
                    raise NemesisError(f"--nemesis {text!r}: unknown fault {name!r}; known: {', '.join(KINDS)}")
                kinds.append(name)
                continue
            if name not in ("every", "down", "seed", "first"):
                raise NemesisError(f"--nemesis {text!r}: unknown option {name!r} (every=60s, down=10s, first=30s, "
                                   f"seed=1)")
            match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)?", value)
            if match is None:
                raise NemesisError(f"--nemesis {text!r}: {name}={value!r} is not a number of seconds (60s, 1.5m)")
            number = float(match.group(1)) * {"ms": 0.001, "s": 1, "m": 60, None: 1}[match.group(2)]
            options[name] = number
        if not kinds:
            raise NemesisError(f"--nemesis {text!r}: name at least one fault ({', '.join(KINDS)})")
        down = options.get("down", DEFAULT_DOWN_S)
        if not 0 < down <= MAX_DOWN_S:
            raise NemesisError(f"--nemesis {text!r}: down={down:g}s; a fault lasts more than 0 and at most "
                               f"{MAX_DOWN_S:g} s")
        every = options.get("every", DEFAULT_EVERY_S)
        if every <= down:
            raise NemesisError(f"--nemesis {text!r}: every={every:g}s must be longer than down={down:g}s")
        return cls(tuple(dict.fromkeys(kinds)), every, down, int(options.get("seed", 1)), options.get("first"))

    def schedule(self, duration_s: float, brokers: list[str], has_proxy: bool) -> list[Fault]:
        """The faults of a run of ``duration_s`` seconds, drawn from the seed: one every ``every_s`` (the kinds in
        turn), each on a broker drawn among ``brokers``; each ends ``RECOVERY_ROOM_S`` before the run does."""
        rng = random.Random(self.seed)
        faults: list[Fault] = []
        at = self.every_s if self.first_s is None else self.first_s
        number = 0
        while at + self.down_s + RECOVERY_ROOM_S <= duration_s:
            kind = self.kinds[number % len(self.kinds)]
            if kind == "proxy-pause" and not has_proxy:
                raise NemesisError("proxy-pause: this cluster has no proxy process of its own (a 5.x release in a "
                                   "topology of several brokers has one)")
            process = "namesrv" if kind == "namesrv-kill" else "proxy" if kind == "proxy-pause" else \
                rng.choice(brokers)
            faults.append(Fault(kind, process, at, self.down_s, number))
            number += 1
            at += self.every_s
        return faults


@dataclass
class _Active:
    fault: Fault
    component: Component
    started: float
    timer: threading.Timer | None = None


@dataclass
class Nemesis:
    """Causes faults on ``cluster``'s processes and undoes them; every start and end is recorded."""

    cluster: ReleaseCluster
    record: Callable[[Event], None]
    now_ms: Callable[[], int]
    run_id: str = "run"
    target: str = ""
    seed: int = 1
    active: dict[str, _Active] = field(default_factory=dict)
    done: list[dict[str, Any]] = field(default_factory=list)
    """Each ended fault: its schedule entry, when it started and ended (wall seconds since the epoch), the pids."""
    errors: list[str] = field(default_factory=list)
    """Faults that could not be ended (a restart that failed: the process's cause and log lines)."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        atexit.register(self.heal)

    def brokers(self) -> list[str]:
        """The broker processes of the cluster by name (``broker-a-0``, ...; ``broker`` or ``proxy`` for a single
        broker, whose process holds the proxy in local mode)."""
        plan = self.cluster.plan
        if plan.topology.single:
            return ["proxy" if plan.with_proxy else "broker"]
        return [n.label for n in plan.nodes()]

    # ---- faults ---------------------------------------------------------------------------------

    def cause(self, fault: Fault) -> None:
        """Start ``fault``; it ends by itself after ``fault.down_s`` (a timer), or at ``heal``."""
        with self._lock:
            if fault.process in self.active:
                raise NemesisError(f"{fault.process} is already under {self.active[fault.process].fault.kind}")
            component = self.cluster.component(fault.process)
            if component.exited() is not None:
                raise NemesisError(f"{fault.process} is not running (exit {component.exited()})")
            pid = component.process.pid
            if fault.kind in ("kill", "namesrv-kill", "empty-store"):
                os.killpg(pid, signal.SIGKILL)
                component.process.wait(10)
            elif fault.kind in ("pause", "proxy-pause"):
                os.killpg(pid, signal.SIGSTOP)
            else:
                raise NemesisError(f"unknown fault {fault.kind!r}")
            active = _Active(fault, component, time.time())
            self.active[fault.process] = active
            self._event(fault, "start", pid)
            active.timer = threading.Timer(fault.down_s, self._end_quietly, args=(fault.process,))
            active.timer.daemon = True
            active.timer.start()

    def end(self, process: str) -> None:
        """End the fault on ``process``: SIGCONT a stalled one; start a killed one again on its store (an emptied
        one for ``empty-store``) and wait until it answers."""
        with self._lock:
            active = self.active.pop(process, None)
            if active is None:
                return
            if active.timer is not None:
                active.timer.cancel()
            fault, component = active.fault, active.component
            pid = component.process.pid
            if fault.kind in ("pause", "proxy-pause"):
                try:
                    os.killpg(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
                new_pid = pid
            else:
                if fault.kind == "empty-store":
                    self._empty_store(process)
                new_pid = self.cluster.restart(process).process.pid
            ended = time.time()
            self._event(fault, "end", new_pid, {"down_ms": str(int((ended - active.started) * 1000))})
            self.done.append({**fault.as_json(), "started": active.started, "ended": ended, "pid": pid,
                              "pid_after": new_pid})

    def _end_quietly(self, process: str) -> None:
        """``end`` from the fault's timer: a restart that fails is recorded, not raised in a thread."""
        try:
            self.end(process)
        except Exception as exc:  # noqa: BLE001
            self.errors.append(f"ending the fault on {process}: {type(exc).__name__}: {exc}"[:1000])

    def heal(self) -> None:
        """End every fault under way (at exit, on Ctrl-C, at the end of a schedule)."""
        for process in list(self.active):
            try:
                self.end(process)
            except Exception:  # noqa: BLE001 - healing goes on for the others; the cluster's stop follows
                pass

    def _empty_store(self, process: str) -> None:
        plan = self.cluster.plan
        node = next((n for n in plan.nodes() if n.label == process), None)
        store = plan.node_store(node) if node is not None else plan.store
        for child in ("commitlog", "consumequeue", "index", "config", "checkpoint", "abort", "timerwheel",
                      "timerlog", "timercheck", "timermetrics"):
            path = store / child
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            elif path.exists():
                path.unlink()

    def _event(self, fault: Fault, phase: str, pid: int, extra: dict[str, str] | None = None) -> None:
        self.record(Event(kind="NEMESIS", ts_ms=self.now_ms(), run_id=self.run_id, target=self.target,
                          detail={"fault": fault.kind, "phase": phase, "process": fault.process, "pid": str(pid),
                                  "number": str(fault.number), "seed": str(self.seed),
                                  "down_s": f"{fault.down_s:g}", **(extra or {})}))


class ScheduleRunner:
    """Runs a schedule of faults against a nemesis, from a thread, until its end or ``stop``."""

    def __init__(self, nemesis: Nemesis, faults: list[Fault], started_monotonic: float) -> None:
        self.nemesis, self.faults, self.started = nemesis, list(faults), started_monotonic
        self.errors: list[str] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="nemesis", daemon=True)

    def start(self) -> "ScheduleRunner":
        self.thread.start()
        return self

    def _run(self) -> None:
        for fault in self.faults:
            wait = self.started + fault.at_s - time.monotonic()
            if self._stop.wait(max(0.0, wait)):
                return
            try:
                self.nemesis.cause(fault)
            except Exception as exc:  # noqa: BLE001 - a fault that could not be caused is said, the run goes on
                self.errors.append(f"fault {fault.number} ({fault.kind} {fault.process}): {exc}")

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(5)
        self.nemesis.heal()


__all__ = ["Nemesis", "NemesisPlan", "NemesisError", "Fault", "ScheduleRunner", "KINDS"]
