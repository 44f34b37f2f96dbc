"""What ``rmqc serve`` holds per client, and the limits that answer instead of starving.

A client (by its ``x-mq-client-id``) is admitted at its first call and counts until it says goodbye
(``NotifyClientTermination``), its streams close and it stays quiet for ``idle_client_s``. Past a limit the
call is answered, never left waiting: the caller gets RocketMQ's flow-control code 42900 TOO_MANY_REQUESTS
(or, for a stream the protocol cannot answer with a status, gRPC RESOURCE_EXHAUSTED) with a message naming
the limit and the option that sets it, and the server logs it once per client.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Callable

log = logging.getLogger("rmqc.serve")


@dataclass(frozen=True)
class ServeLimits:
    max_clients: int = 1024
    """Clients at once (``--max-clients``)."""
    max_streams_per_client: int = 8
    """Telemetry streams one client holds open (an SDK opens one per endpoint)."""
    max_receives_per_client: int = 64
    """Long-polling receives of one client in flight at once."""
    idle_client_s: float = 120.0
    """A client with no open stream and no call for this long has left."""
    stalled_write_s: float = 10.0
    """A stream whose reader takes nothing for this long is dropped."""
    partial_frame_s: float = 10.0
    """A remoting connection that sends part of a frame and then nothing for this long is closed."""


@dataclass
class ClientState:
    last_seen: float
    streams: int = 0
    receives: int = 0
    leaving: bool = False

    @property
    def busy(self) -> bool:
        return bool(self.streams or self.receives)


@dataclass
class ClientTable:
    """The clients the server holds now, and the limits' verdicts (a refusal reason, or None)."""

    limits: ServeLimits
    clock: Callable[[], float] = time.monotonic
    clients: dict[str, ClientState] = field(default_factory=dict)
    _told: set[tuple[str, str]] = field(default_factory=set)

    def _expire(self, now: float) -> None:
        idle = [c for c, s in self.clients.items()
                if not s.busy and (s.leaving or now - s.last_seen > self.limits.idle_client_s)]
        for client in idle:
            del self.clients[client]

    def _refuse(self, client: str, what: str, reason: str) -> str:
        if (client, what) not in self._told:  # logged once per client and limit
            self._told.add((client, what))
            log.warning("client %s refused: %s", client or "(no client id)", reason)
        return reason

    def admit(self, client: str) -> str | None:
        """A call of ``client``: None when it may go on, else why not."""
        now = self.clock()
        state = self.clients.get(client)
        if state is not None:
            state.last_seen = now
            state.leaving = False
            return None
        self._expire(now)
        if len(self.clients) >= self.limits.max_clients:
            return self._refuse(client, "clients", f"rmqc serve holds {len(self.clients)} clients, its limit "
                                                   f"(--max-clients {self.limits.max_clients}); client {client} refused")
        self.clients[client] = ClientState(now)
        return None

    def leave(self, client: str) -> None:
        """``NotifyClientTermination``: the client no longer counts once its streams are closed."""
        state = self.clients.get(client)
        if state is not None:
            state.leaving = True
            self._expire(self.clock())

    def _take(self, client: str, kind: str, limit: int, what: str) -> str | None:
        """One more stream or receive of ``client`` (``kind`` names the counter), unless past ``limit``."""
        refused = self.admit(client)
        if refused:
            return refused
        state = self.clients[client]
        held = getattr(state, kind)
        if held >= limit:
            return self._refuse(client, kind, f"client {client} holds {held} {what}, the limit per client ({limit})")
        setattr(state, kind, held + 1)
        return None

    def open_stream(self, client: str) -> str | None:
        return self._take(client, "streams", self.limits.max_streams_per_client, "Telemetry streams")

    def _give_back(self, client: str, kind: str) -> None:
        state = self.clients.get(client)
        if state is not None:
            setattr(state, kind, max(0, getattr(state, kind) - 1))
            state.last_seen = self.clock()

    def close_stream(self, client: str) -> None:
        self._give_back(client, "streams")

    def begin_receive(self, client: str) -> str | None:
        return self._take(client, "receives", self.limits.max_receives_per_client, "receives in flight")

    def end_receive(self, client: str) -> None:
        self._give_back(client, "receives")
