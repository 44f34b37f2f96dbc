"""A TCP fault proxy on loopback for the 5.x path (issue 50): it sits between a client and a server endpoint (a
RocketMQ proxy's gRPC port, say) and injects one fault at a time, each bounded in time:

- ``delay(ms, duration_s, jitter_ms)``: every chunk waits ``ms`` (+- ``jitter_ms``) in each direction, so a round
  trip takes about twice ``ms``; the order of the bytes is kept;
- ``reset(duration_s)``: the open connections are closed and new ones are reset (see the backends below);
- ``blackhole(duration_s)``: connections are accepted and kept but nothing is forwarded, so the client times out;
  at its end the connections that were open during it are closed (their bytes were dropped: the streams are
  broken), new ones forward again;
- ``heal()``: plain forwarding again.

A new fault ends the one before it. Each fault heals itself after its ``duration_s``; every fault is healed at
``close()``, at interpreter exit (``atexit``) and on SIGINT (then the previous SIGINT handler runs). ``events()`` is
the log of every fault with its start and end (``time.time()``), and a ``heal`` entry saying why each ended.

Everything binds 127.0.0.1, and the upstream must be 127.0.0.1 or localhost: anything else is a ``ValueError``.

Two backends serve the same API:

- ``toxiproxy``: Shopify's toxiproxy server, a Go module built by ``make fault-proxy`` into
  ``~/.cache/rocketmq-conformance/toxiproxy`` (or ``$RMQC_TOXIPROXY_DIR``), never into the project, driven through its
  HTTP API on a free loopback port: a ``latency`` toxic on both streams for a delay, ``reset_peer`` (timeout 0) for
  a reset, ``timeout`` (timeout 0: drop everything) for a black hole; healing removes the toxics. Its reset closes
  the open connections at once by turning the proxy off and on (toxiproxy closes them plainly: the client reads
  EOF), and resets a new connection with RST (SO_LINGER 0) at its first bytes. The server runs under a small
  ``sh`` watchdog that reads the pipe to its standard input: when this process closes the pipe, or dies however
  it dies, the server is killed.
- ``python``: an asyncio proxy of this module's own on a thread. Its reset closes every open connection with RST
  (SO_LINGER 0), both sides, and resets each new connection with RST as soon as it is accepted.

``backend="auto"`` takes toxiproxy where its binary is built, else the Python one.
"""
from __future__ import annotations

import asyncio
import atexit
import contextlib
import http.client
import json
import math
import os
import random
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

BACKENDS = ("toxiproxy", "python")
FAULTS = ("delay", "reset", "blackhole")
LOOPBACK = "127.0.0.1"
LOOPBACK_NAMES = ("127.0.0.1", "localhost")
TOXIPROXY_DIR_ENV = "RMQC_TOXIPROXY_DIR"
TOXIPROXY_BINARY = "toxiproxy-server"
MAX_FAULT_S = 3600.0
"""No fault lasts longer than this: a fault's ``duration_s`` is above 0 and at most this."""
API_TIMEOUT_S = 5.0
START_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 5.0
CHUNK = 65536
QUEUED_CHUNKS = 64
RST_LINGER = struct.pack("ii", 1, 0)


@dataclass
class FaultEvent:
    """One fault (or one heal) in the log: ``end_s`` is None while the fault is on, set when it ends."""

    kind: str
    start_s: float
    end_s: float | None
    target: str
    detail: dict[str, Any] = field(default_factory=dict)


class ToxiproxyMissing(FileNotFoundError):
    """The toxiproxy backend was asked for but its binary is not built."""


def toxiproxy_dir() -> Path:
    return Path(os.environ.get(TOXIPROXY_DIR_ENV) or Path.home() / ".cache" / "rocketmq-conformance" / "toxiproxy")


def toxiproxy_binary() -> Path | None:
    """The built ``toxiproxy-server`` (``make fault-proxy``), or None."""
    path = toxiproxy_dir() / TOXIPROXY_BINARY
    return path if path.is_file() and os.access(path, os.X_OK) else None


def loopback_upstream(upstream: object) -> tuple[str, int]:
    """``(host, port)`` with the host 127.0.0.1 or localhost (given as 127.0.0.1), or a ``ValueError`` naming why."""
    try:
        host, port = upstream  # type: ignore[misc]
    except (TypeError, ValueError):
        raise ValueError(f"fault proxy upstream must be a (host, port) pair, got {upstream!r}") from None
    if not isinstance(host, str) or host.strip().lower() not in LOOPBACK_NAMES:
        raise ValueError(f"fault proxy upstream must be on loopback (127.0.0.1 or localhost), got {host!r}: "
                         "the fault proxy never forwards off this machine")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"fault proxy upstream port must be an int in 1..65535, got {port!r}")
    return LOOPBACK, port


def _duration(duration_s: float) -> float:
    if isinstance(duration_s, bool) or not isinstance(duration_s, (int, float)) or not math.isfinite(duration_s) \
            or not 0 < duration_s <= MAX_FAULT_S:
        raise ValueError(f"a fault's duration_s must be above 0 and at most {MAX_FAULT_S:g} s, got {duration_s!r}")
    return float(duration_s)


def _millis(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_FAULT_S * 1000:
        raise ValueError(f"{name} must be an int of milliseconds, 0 or more, got {value!r}")
    return value


class _Engine(Protocol):
    listen: tuple[str, int]

    def apply(self, kind: str, params: dict[str, Any]) -> None: ...

    def heal(self) -> None: ...

    def stop(self) -> None: ...


class FaultProxy:
    """A TCP proxy on 127.0.0.1 in front of ``upstream`` that injects faults; a context manager."""

    def __init__(self, upstream: tuple[str, int], *, backend: str = "auto") -> None:
        self.upstream = loopback_upstream(upstream)
        if backend not in ("auto", *BACKENDS):
            raise ValueError(f"fault proxy backend must be one of auto, {', '.join(BACKENDS)}; got {backend!r}")
        if backend == "auto":
            backend = "toxiproxy" if toxiproxy_binary() else "python"
        self._lock = threading.RLock()
        self._events: list[FaultEvent] = []
        self._active: FaultEvent | None = None
        self._timer: threading.Timer | None = None
        self._closed = False
        engine: _Engine
        if backend == "toxiproxy":
            binary = toxiproxy_binary()
            if binary is None:
                raise ToxiproxyMissing(f"toxiproxy is not built (make fault-proxy): no "
                                       f"{toxiproxy_dir() / TOXIPROXY_BINARY}")
            engine = _Toxiproxy(binary, self.upstream)
        else:
            engine = _AsyncioProxy(self.upstream)
        self._engine = engine
        self.backend: str = backend
        self.listen: tuple[str, int] = engine.listen
        self.target = f"tcp-proxy {self.listen[0]}:{self.listen[1]} -> {self.upstream[0]}:{self.upstream[1]}"
        _register(self)

    # -- faults
    def delay(self, ms: int, duration_s: float, jitter_ms: int = 0) -> FaultEvent:
        """Every chunk waits ``ms`` (+- ``jitter_ms``) in each direction, for ``duration_s``."""
        params = {"ms": _millis("ms", ms), "jitter_ms": _millis("jitter_ms", jitter_ms), "directions": "both"}
        return self._begin("delay", _duration(duration_s), params)

    def reset(self, duration_s: float) -> FaultEvent:
        """The open connections are closed and new ones reset, for ``duration_s``."""
        return self._begin("reset", _duration(duration_s), {})

    def blackhole(self, duration_s: float) -> FaultEvent:
        """Connections are kept but nothing is forwarded, for ``duration_s``."""
        return self._begin("blackhole", _duration(duration_s), {})

    def heal(self) -> None:
        """Plain forwarding again (the fault on, if any, ends now)."""
        self._heal("heal", quiet=False)

    def events(self) -> list[FaultEvent]:
        """Every fault so far and every heal, in order (a fault's ``end_s`` is None while it is on)."""
        with self._lock:
            return list(self._events)

    def close(self) -> None:
        """Heal, stop forwarding, close every connection and the listening socket, end the child process."""
        self._shutdown("close")

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FaultProxy({self.target}, backend={self.backend}{', closed' if self._closed else ''})"

    # -- the log and the timers
    def _begin(self, kind: str, duration_s: float, params: dict[str, Any]) -> FaultEvent:
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self.target}: the fault proxy is closed")
            if self._active is not None:
                self._end("replaced", quiet=False)
            detail = {**params, "duration_s": duration_s, "backend": self.backend}
            event = FaultEvent(kind, time.time(), None, self.target, detail)
            self._events.append(event)
            self._active = event
            try:
                self._engine.apply(kind, params)
            except BaseException:
                self._end("failed", quiet=True)
                raise
            timer = threading.Timer(duration_s, self._expire, args=(event,))
            timer.daemon = True
            timer.name = f"fault-proxy {kind} timer"
            self._timer = timer
            timer.start()
            return event

    def _expire(self, event: FaultEvent) -> None:
        with self._lock:
            if self._active is event and not self._closed:
                self._end("expired", quiet=True)

    def _heal(self, reason: str, *, quiet: bool) -> None:
        with self._lock:
            if self._closed:
                return
            self._end(reason, quiet=quiet)

    def _end(self, reason: str, *, quiet: bool) -> None:
        """Heal the engine (whatever it has on) and end the fault on, if any, logging a heal for it."""
        if self._timer is not None and self._timer is not threading.current_thread():
            self._timer.cancel()
        self._timer = None
        active, self._active = self._active, None
        try:
            self._engine.heal()
        except Exception:
            if not quiet:
                raise
        finally:
            if active is not None:
                now = time.time()
                active.end_s = now
                self._events.append(FaultEvent("heal", now, now, self.target,
                                               {"healed": active.kind, "reason": reason, "backend": self.backend}))

    def _shutdown(self, reason: str) -> None:
        with self._lock:
            if self._closed:
                return
            try:
                self._end(reason, quiet=True)
            finally:
                self._closed = True
                try:
                    self._engine.stop()
                finally:
                    _unregister(self)


# -- healed at exit and on SIGINT
_LIVE: set[FaultProxy] = set()
_REGISTRY_LOCK = threading.Lock()
_previous_sigint: Any = None
_sigint_installed = False


def _register(proxy: FaultProxy) -> None:
    global _previous_sigint, _sigint_installed
    with _REGISTRY_LOCK:
        _LIVE.add(proxy)
        if not _sigint_installed and threading.current_thread() is threading.main_thread():
            _previous_sigint = signal.getsignal(signal.SIGINT)
            signal.signal(signal.SIGINT, _on_sigint)
            _sigint_installed = True


def _unregister(proxy: FaultProxy) -> None:
    global _sigint_installed
    with _REGISTRY_LOCK:
        _LIVE.discard(proxy)
        if _LIVE or not _sigint_installed or threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGINT) is _on_sigint:
            signal.signal(signal.SIGINT, _previous_sigint if _previous_sigint is not None else signal.SIG_DFL)
        _sigint_installed = False


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    """Heal every live proxy, then do what the handler before ours did."""
    for proxy in list(_LIVE):
        with contextlib.suppress(Exception):
            proxy._heal("sigint", quiet=True)
    previous = _previous_sigint
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_IGN:
        return
    elif previous == signal.SIG_DFL:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    else:
        raise KeyboardInterrupt


@atexit.register
def _close_all() -> None:
    for proxy in list(_LIVE):
        with contextlib.suppress(Exception):
            proxy._shutdown("atexit")


# -- the toxiproxy backend
_WATCHDOG = """"$@" </dev/null &
server=$!
cat >/dev/null
kill "$server" 2>/dev/null
wait "$server"
"""
"""Runs toxiproxy in the background and waits for EOF on standard input (our pipe), then kills it."""
PROXY_NAME = "rmqc-fault"
TOXICS = {"delay": "latency", "reset": "reset_peer", "blackhole": "timeout"}
STREAMS = ("upstream", "downstream")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


class _Toxiproxy:
    """``toxiproxy-server -host 127.0.0.1 -port P`` under the watchdog, one proxy in it, toxics on both streams."""

    def __init__(self, binary: Path, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.process: subprocess.Popen[bytes] | None = None
        self._log = tempfile.TemporaryFile(prefix="toxiproxy-")
        failures = []
        for _ in range(3):  # a free port can be taken between the probe and the server's bind
            self.api_port = _free_port()
            try:
                self._start(binary)
                break
            except RuntimeError as exc:
                failures.append(str(exc))
                self._stop_process()
        else:
            self._log.close()
            raise RuntimeError("toxiproxy-server did not start: " + " | ".join(failures))
        try:
            created = self._call("POST", "/proxies", {"name": PROXY_NAME, "listen": f"{LOOPBACK}:0",
                                                      "upstream": f"{upstream[0]}:{upstream[1]}", "enabled": True})
            host, _, port = str(created["listen"]).rpartition(":")
            if host != LOOPBACK:
                raise RuntimeError(f"toxiproxy listens on {created['listen']}, not on {LOOPBACK}")
            self.listen = (host, int(port))
        except BaseException:
            self.stop()
            raise

    def _start(self, binary: Path) -> None:
        env = {**os.environ, "LOG_LEVEL": os.environ.get("LOG_LEVEL", "warn")}
        self._log.seek(0)
        self._log.truncate()
        self.process = subprocess.Popen(
            ["sh", "-c", _WATCHDOG, "toxiproxy-watchdog", str(binary), "-host", LOOPBACK, "-port", str(self.api_port)],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self._log, env=env, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                self._call("GET", "/version")
                return
            except (OSError, http.client.HTTPException):
                if self.process.poll() is not None:
                    break
                time.sleep(0.05)
        self._log.seek(0)
        said = self._log.read().decode(errors="replace").strip().splitlines()
        raise RuntimeError(f"no answer on {LOOPBACK}:{self.api_port} within {START_TIMEOUT_S:g} s"
                           + (f" ({said[-1]})" if said else ""))

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        connection = http.client.HTTPConnection(LOOPBACK, self.api_port, timeout=API_TIMEOUT_S)
        try:
            payload = None if body is None else json.dumps(body)
            connection.request(method, path, body=payload, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            text = response.read()
        finally:
            connection.close()
        if response.status >= 300:
            raise RuntimeError(f"toxiproxy {method} {path}: HTTP {response.status} {text.decode(errors='replace')}")
        if not text:
            return None
        try:
            return json.loads(text)
        except ValueError:
            return text.decode(errors="replace")

    def apply(self, kind: str, params: dict[str, Any]) -> None:
        toxic = TOXICS[kind]
        attributes: dict[str, int] = {"timeout": 0}
        if kind == "delay":
            attributes = {"latency": params["ms"], "jitter": params["jitter_ms"]}
        for stream in STREAMS:
            self._call("POST", f"/proxies/{PROXY_NAME}/toxics",
                       {"name": f"{kind}_{stream}", "type": toxic, "stream": stream, "toxicity": 1.0,
                        "attributes": attributes})
        if kind == "reset":  # toxiproxy closes the open connections only when it stops the proxy
            self._call("POST", f"/proxies/{PROXY_NAME}", {"enabled": False})
            self._call("POST", f"/proxies/{PROXY_NAME}", {"enabled": True})

    def heal(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        toxics = self._call("GET", f"/proxies/{PROXY_NAME}/toxics") or []
        for toxic in toxics:
            self._call("DELETE", f"/proxies/{PROXY_NAME}/toxics/{toxic['name']}")
        proxy = self._call("GET", f"/proxies/{PROXY_NAME}")
        if not proxy.get("enabled", True):
            self._call("POST", f"/proxies/{PROXY_NAME}", {"enabled": True})

    def stop(self) -> None:
        try:
            self._stop_process()
        finally:
            self._log.close()

    def _stop_process(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()  # the watchdog kills the server and exits
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # its session: the watchdog, the server, nothing else
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)


# -- the Python backend
def _rst(writer: asyncio.StreamWriter) -> None:
    """Close with RST: SO_LINGER 0, then abort."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RST_LINGER)
    writer.transport.abort()


class _Link:
    """One client connection and its upstream connection."""

    def __init__(self, client: asyncio.StreamWriter, blackholed: bool) -> None:
        self.client = client
        self.server: asyncio.StreamWriter | None = None
        self.blackholed = blackholed
        self.dead = False

    def writers(self) -> list[asyncio.StreamWriter]:
        return [w for w in (self.client, self.server) if w is not None]

    def reset(self) -> None:
        self.dead = True
        for writer in self.writers():
            _rst(writer)

    def abort(self) -> None:
        self.dead = True
        for writer in self.writers():
            writer.transport.abort()

    def close(self) -> None:
        self.dead = True
        for writer in self.writers():
            if not writer.is_closing():
                writer.close()


class _AsyncioProxy:
    """The proxy on its own event loop in a daemon thread; the fault state is changed on that loop only."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._mode: str | None = None
        self._params: dict[str, Any] = {}
        self._links: set[_Link] = set()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-proxy", daemon=True)
        self._thread.start()
        try:
            self._server = self._run(asyncio.start_server(self._handle, LOOPBACK, 0))
        except BaseException:
            self._halt()
            raise
        self.listen = tuple(self._server.sockets[0].getsockname()[:2])  # type: ignore[assignment]

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(API_TIMEOUT_S)

    def apply(self, kind: str, params: dict[str, Any]) -> None:
        self._run(self._apply(kind, params))

    def heal(self) -> None:
        if self._loop.is_running():
            self._run(self._heal())

    def stop(self) -> None:
        try:
            if self._loop.is_running():
                self._run(self._shutdown())
        finally:
            self._halt()

    def _halt(self) -> None:
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(API_TIMEOUT_S)
        if not self._thread.is_alive():
            self._loop.close()

    async def _apply(self, kind: str, params: dict[str, Any]) -> None:
        self._mode, self._params = kind, params
        for link in list(self._links):
            if kind == "reset":
                link.reset()
            elif kind == "blackhole":
                link.blackholed = True

    async def _heal(self) -> None:
        self._mode, self._params = None, {}
        for link in list(self._links):
            if link.blackholed:  # its bytes were dropped: the stream is broken
                link.close()

    async def _shutdown(self) -> None:
        self._server.close()
        for link in list(self._links):
            link.abort()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._server.wait_closed(), API_TIMEOUT_S)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._mode == "reset":
            _rst(writer)
            return
        link = _Link(writer, blackholed=self._mode == "blackhole")
        self._links.add(link)
        try:
            try:
                up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(*self.upstream),
                                                              CONNECT_TIMEOUT_S)
            except (OSError, asyncio.TimeoutError):
                link.close()
                return
            link.server = up_writer
            if link.dead:  # reset or closed while connecting
                link.reset()
                return
            await asyncio.gather(self._pump(link, reader, up_writer), self._pump(link, up_reader, writer))
        except (asyncio.CancelledError, Exception):  # cancelled at close: ends quietly (asyncio logs a cancelled
            link.abort()                               # connection handler as an error)
        finally:
            self._links.discard(link)
            link.close()

    async def _pump(self, link: _Link, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        """One direction: read chunks, drop them in a black hole, else queue them with the time each is due."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue(QUEUED_CHUNKS)
        sender = asyncio.ensure_future(self._send(link, queue, sink))
        last_due = 0.0
        try:
            while not link.dead:
                try:
                    data = await source.read(CHUNK)
                except OSError:  # the peer reset: so does the proxy to the other side
                    link.reset()
                    break
                if not data or link.dead:
                    break
                if self._mode == "blackhole":
                    link.blackholed = True
                    continue
                due = loop.time()
                if self._mode == "delay":
                    wait_ms = self._params["ms"] + random.uniform(-self._params["jitter_ms"], self._params["jitter_ms"])
                    due += max(0.0, wait_ms) / 1000.0
                last_due = due = max(due, last_due)
                await queue.put((due, data))
            await queue.put(None)
            await sender
        finally:
            if not sender.done():
                sender.cancel()

    async def _send(self, link: _Link, queue: asyncio.Queue[tuple[float, bytes] | None],
                    sink: asyncio.StreamWriter) -> None:
        """Write each chunk when it is due; after a failure keep taking chunks (so the reader never blocks)."""
        loop = asyncio.get_running_loop()
        broken = False
        while True:
            item = await queue.get()
            if item is None:
                if not broken and not link.dead and sink.can_write_eof():
                    with contextlib.suppress(OSError, RuntimeError):
                        sink.write_eof()
                return
            if broken:
                continue
            due, data = item
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if link.dead:
                broken = True
                continue
            try:
                sink.write(data)
                await sink.drain()
            except (OSError, RuntimeError):
                broken = True
                link.abort()
