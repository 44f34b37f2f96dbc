"""The discrete-event model on a real clock: spec time runs ``1 / time_scale`` times faster than wall time.

Every duration and timestamp that crosses the protocol is spec time: an invisible duration of 10 s
at ``time_scale`` 0.01 keeps a message hidden for 100 ms of wall time.

One asyncio event loop, in a thread of its own, is the model's serialized entry point: the front ends'
servers (``grpc.aio``, the remoting sockets) run on it, a ticker task runs what falls due, and whoever
waits for the model to change (a long-polling receive, a suspended pull) awaits a wake-up instead of
parking a thread. Wake-ups are aimed: a message stored on a topic wakes, per consumer group popping that
topic, one waiter per message (each group gets each message once: waking every waiter of the server would
have hundreds of long polls pop again on every send), and every pull held on its queue (each pull is a
consumer's own cursor: a broadcasting consumer wants the message as much as its peer); what the ticker runs
(a revive, a delay falling due) wakes them all. The model's lock stays, so that the few calls made from other threads (a remoting
handler that must ask a client, a test poking the broker) are serialized with the loop's.
"""
from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import threading
import time
from contextlib import contextmanager
from typing import Any, Coroutine, Iterator, TypeVar

from reference_impl.model.simulation import Simulation
from reference_impl.rules import retry5x

MAX_TICK_WAIT_S = 0.25
T = TypeVar("T")


class RealTimeModel:
    """A ``Simulation`` whose virtual clock follows the wall clock, scaled, behind one event loop."""

    def __init__(self, sim: Simulation, time_scale: float = 1.0) -> None:
        if not time_scale > 0:
            raise ValueError(f"--time-scale must be > 0, got {time_scale}")
        self.sim = sim
        self.time_scale = time_scale
        # the clients heartbeat on their own (wall) clock: a live one must not look silent (RETRY-5X-09)
        sim.broker.client_expiry_ms = retry5x.client_expiry_ms(time_scale)
        self.lock = threading.RLock()
        """Serializes the loop's calls with the few made from other threads; nobody waits on it."""
        self._t0 = time.monotonic()
        self.wall_epoch_ms = int(time.time() * 1000)
        self.loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._pulse: asyncio.Future[None] | None = None
        """The ticker's wake-up: anything changed, maybe an earlier action is due."""
        self._waiters: set[asyncio.Future[None]] = set()
        self._group_waiters: dict[tuple[str, str], collections.deque[asyncio.Future[None]]] = \
            collections.defaultdict(collections.deque)
        """Pops waiting on a topic, by (topic, group): one per stored message and group is woken."""
        self._groups_of: dict[str, set[str]] = collections.defaultdict(set)
        self._queue_waiters: dict[tuple[str, int], set[asyncio.Future[None]]] = collections.defaultdict(set)
        """Pulls held on a (topic, queue id): all woken by a message stored there."""
        self._arrivals: collections.Counter[tuple[str, int]] = collections.Counter()
        self._ticker: asyncio.Task[None] | None = None
        self._stopping = False
        sim.broker.on_append.append(self._arrived)

    # ---- time -------------------------------------------------------------------------------

    def spec_now_ms(self) -> int:
        """Spec time since the server started."""
        return int((time.monotonic() - self._t0) * 1000 / self.time_scale)

    def spec_wall_ms(self, spec_ms: int | None = None) -> int:
        """A spec instant as an epoch timestamp (what the protocol's timestamps carry)."""
        return self.wall_epoch_ms + (self.spec_now_ms() if spec_ms is None else spec_ms)

    def spec_ms_of_wall(self, wall_ms: int) -> int:
        return wall_ms - self.wall_epoch_ms

    def wall_seconds(self, spec_ms: int) -> float:
        """How long ``spec_ms`` of spec time takes on the wall clock."""
        return max(0.0, spec_ms * self.time_scale / 1000)

    def _sync(self) -> bool:
        """Run every model action due by now; True when any ran."""
        clock = self.sim.clock
        now = self.spec_now_ms()
        due = clock.next_due_ms()
        clock.run_until(now)
        clock.now_ms = max(clock.now_ms, now)
        return due is not None and due <= now

    @contextmanager
    def locked(self) -> Iterator[Simulation]:
        """Hold the model at the current spec time; on the way out the ticker looks again (an action may be due
        sooner) and every message stored meanwhile wakes its waiters (``_wake_arrivals``)."""
        with self.lock:
            self._sync()
            yield self.sim
        self._after_change()

    def _arrived(self, topic: str, queue_id: int) -> None:
        self._arrivals[(topic, queue_id)] += 1

    # ---- waiting for a change, without a thread ---------------------------------------------

    def on_loop(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def call_on_loop(self, fn: Any, *args: Any) -> None:
        """Call ``fn(*args)`` on the loop: at once when already on it, else soon (an asyncio queue's put, say)."""
        if self.on_loop() or self._thread is None:
            fn(*args)
        else:
            try:
                self.loop.call_soon_threadsafe(fn, *args)
            except RuntimeError:  # the loop is closing
                pass

    def _after_change(self) -> None:
        if self._thread is not None and not self.loop.is_closed():
            self.call_on_loop(self._wake_arrivals)

    def _wake_arrivals(self) -> None:
        """On the loop: the ticker; for each message stored, every pull held on its queue and one waiting pop of
        each group popping its topic."""
        pulse, self._pulse = self._pulse, None
        if pulse is not None and not pulse.done():
            pulse.set_result(None)
        with self.lock:
            arrivals, self._arrivals = self._arrivals, collections.Counter()
        for (topic, queue_id), count in arrivals.items():
            for waiter in self._queue_waiters.pop((topic, queue_id), ()):
                if not waiter.done():
                    waiter.set_result(None)
            for group in self._groups_of.get(topic, ()):
                waiters, left = self._group_waiters.get((topic, group)), count
                while waiters and left > 0:
                    waiter = waiters.popleft()
                    if not waiter.done():
                        waiter.set_result(None)
                        left -= 1

    def _wake_all(self) -> None:
        """On the loop: every waiter (what the ticker ran may concern any of them)."""
        for waiter in list(self._waiters):
            if not waiter.done():
                waiter.set_result(None)
        self._wake_arrivals()

    async def changes(self, deadline_spec_ms: int, max_wall_s: float, topic: str | None = None,
                      queue_id: int | None = None, group: str | None = None) -> None:
        """On the loop: return when a message arrived for this waiter (a pull held on ``topic``'s queue
        ``queue_id``, or a pop of ``group`` on ``topic``), the ticker ran something, the model's next action fell
        due, or the deadline passed (``max_wall_s`` bounds it on the wall clock)."""
        now = self.spec_now_ms()
        due = self.sim.clock.next_due_ms()
        until = deadline_spec_ms if due is None else min(deadline_spec_ms, due)
        waiter: asyncio.Future[None] = self.loop.create_future()
        self._waiters.add(waiter)
        if topic is not None and queue_id is not None:
            self._queue_waiters[(topic, queue_id)].add(waiter)
        elif topic is not None and group is not None:
            self._groups_of[topic].add(group)
            self._group_waiters[(topic, group)].append(waiter)
        try:
            await asyncio.wait_for(waiter, max(0.0, min(max_wall_s, self.wall_seconds(until - now) + 0.0005)))
        except asyncio.TimeoutError:
            pass
        finally:
            self._waiters.discard(waiter)
            if topic is not None and queue_id is not None:
                self._queue_waiters.get((topic, queue_id), set()).discard(waiter)
            elif topic is not None and group is not None:
                waiters = self._group_waiters[(topic, group)]
                if len(waiters) > 2 * len(self._waiters) + 16:  # drop those that timed out
                    self._group_waiters[(topic, group)] = collections.deque(w for w in waiters if not w.done())
        with self.lock:
            ran = self._sync()
        if ran:
            self._wake_all()

    # ---- the loop and its ticker ------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self.loop.run_forever, name="rmqc-serve-loop", daemon=True)
        self._thread.start()
        self._ticker = self.run(self._start_ticker())

    async def _start_ticker(self) -> "asyncio.Task[None]":
        return asyncio.get_running_loop().create_task(self._tick())

    def run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float | None = 30.0) -> T:
        """Run ``coroutine`` on the loop from another thread and return its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=timeout_s)

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> "concurrent.futures.Future[T]":
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def stop(self) -> None:
        self._stopping = True
        if self._thread is None or not self._thread.is_alive():
            return

        async def cancel() -> None:
            self._wake_all()
            if self._ticker is not None:
                self._ticker.cancel()
                try:
                    await self._ticker
                except asyncio.CancelledError:
                    pass

        try:
            self.run(cancel(), timeout_s=5)
        except (concurrent.futures.TimeoutError, RuntimeError):
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)

    async def _tick(self) -> None:
        """Run what falls due as it falls due, and wake the waiters when anything ran."""
        while not self._stopping:
            with self.lock:
                ran = self._sync()
                due = self.sim.clock.next_due_ms()
            if ran:
                self._wake_all()
            wait = MAX_TICK_WAIT_S if due is None else min(MAX_TICK_WAIT_S,
                                                           self.wall_seconds(due - self.spec_now_ms()))
            await self._pulse_or(max(wait, 0.0005))

    async def _pulse_or(self, wait_s: float) -> None:
        """The ticker's wait: until the next change (maybe an earlier action is due now) or ``wait_s``."""
        if self._pulse is None or self._pulse.done():
            self._pulse = self.loop.create_future()
        try:
            await asyncio.wait_for(asyncio.shield(self._pulse), wait_s)
        except asyncio.TimeoutError:
            pass
