"""The TCP fault proxy (``adapters/fault_proxy.py``, issue 50) in front of an echo server on 127.0.0.1, through each
backend: plain forwarding, a delay, a reset, a black hole, each healed by ``heal()`` and by its own ``duration_s``;
a non-loopback upstream refused; the events' log; nothing left listening or running after ``close()``, at exit or
when its owner is killed; SIGINT heals. The toxiproxy backend's tests are not applicable where ``make fault-proxy``
has not built it."""
from __future__ import annotations

import contextlib
import math
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from adapters import fault_proxy
from adapters.fault_proxy import FaultEvent, FaultProxy

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = ("python", "toxiproxy")
OPEN_CONNECTION_ON_RESET = {"python": "rst", "toxiproxy": "eof"}
"""What a connection open when a reset starts reads: the Python backend resets it (RST, SO_LINGER 0) at once;
toxiproxy closes the open connections only by turning its proxy off and on, which closes them plainly (EOF). Both
reset a new connection with RST."""


class EchoServer:
    """Echoes every byte back, one thread a connection, on 127.0.0.1."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address: tuple[str, int] = self.listener.getsockname()[:2]
        self.connections: list[socket.socket] = []
        threading.Thread(target=self._accept, name="echo-accept", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(connection)
            threading.Thread(target=self._echo, args=(connection,), name="echo", daemon=True).start()

    @staticmethod
    def _echo(connection: socket.socket) -> None:
        with connection:
            while True:
                try:
                    data = connection.recv(65536)
                    if not data:
                        return
                    connection.sendall(data)
                except OSError:
                    return

    def close(self) -> None:
        self.listener.close()
        for connection in self.connections:
            connection.close()


@pytest.fixture(scope="module")
def echo() -> Iterator[tuple[str, int]]:
    server = EchoServer()
    yield server.address
    server.close()


def require(backend: str) -> None:
    if backend == "toxiproxy" and fault_proxy.toxiproxy_binary() is None:
        pytest.skip(f"toxiproxy is not built (make fault-proxy): no "
                    f"{fault_proxy.toxiproxy_dir() / fault_proxy.TOXIPROXY_BINARY}")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    require(request.param)
    return str(request.param)


@pytest.fixture
def proxy(backend: str, echo: tuple[str, int]) -> Iterator[FaultProxy]:
    with FaultProxy(echo, backend=backend) as made:
        yield made


def connect(proxy: FaultProxy, timeout: float = 2.0) -> socket.socket:
    return socket.create_connection(proxy.listen, timeout=timeout)


def round_trip(sock: socket.socket, payload: bytes = b"ping") -> float:
    """Send, read the echo back whole; the seconds it took."""
    started = time.monotonic()
    sock.sendall(payload)
    got = b""
    while len(got) < len(payload):
        chunk = sock.recv(65536)
        assert chunk, f"connection closed after {len(got)} of {len(payload)} echoed bytes"
        got += chunk
    assert got == payload
    return time.monotonic() - started


def assert_new_connection_reset(proxy: FaultProxy) -> None:
    """The kernel completes the handshake, then the proxy resets the connection: the client's connect (where the RST
    comes before it sees the handshake done: the Python backend resets at accept), first send or recv says so."""
    with pytest.raises(ConnectionResetError):
        with connect(proxy) as sock:
            sock.sendall(b"ping")
            sock.recv(1)


def wait_until(condition, timeout: float = 5.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return bool(condition())


def listening_ports() -> set[int]:
    """Every TCP port in LISTEN on this machine's IPv4 and IPv6 tables."""
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                if fields[3] == "0A":
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def children() -> set[int]:
    """This process's child processes (every thread's)."""
    found: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        with contextlib.suppress(OSError):
            found.update(int(pid) for pid in (task / "children").read_text().split())
    return found


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_plain_forwarding(proxy: FaultProxy, backend: str, echo: tuple[str, int]) -> None:
    assert proxy.backend == backend
    assert proxy.listen[0] == "127.0.0.1" and proxy.listen[1] != echo[1]
    assert proxy.target == f"tcp-proxy 127.0.0.1:{proxy.listen[1]} -> 127.0.0.1:{echo[1]}"
    with connect(proxy) as sock:
        assert round_trip(sock) < 1.0
        big = os.urandom(512 * 1024)
        sender = threading.Thread(target=sock.sendall, args=(big,))
        sender.start()
        got = b""
        while len(got) < len(big):
            chunk = sock.recv(65536)
            assert chunk
            got += chunk
        sender.join()
        assert got == big
    assert proxy.events() == []


def test_delay_slows_every_round_trip_until_healed(proxy: FaultProxy) -> None:
    with connect(proxy) as sock:
        round_trip(sock)
        event = proxy.delay(300, duration_s=10)
        assert (event.kind, event.end_s) == ("delay", None)
        took = round_trip(sock)
        assert 0.3 <= took < 2.0
        assert took >= 0.55, f"300 ms each way is about 600 ms a round trip, took {took:.3f} s"
        proxy.heal()
        assert event.end_s is not None
        assert round_trip(sock) < 0.5
        jittered = proxy.delay(200, duration_s=10, jitter_ms=100)
        took = round_trip(sock)
        assert 0.2 - 0.01 <= took < 2.0, took  # each way 100..300 ms
        assert jittered.detail["jitter_ms"] == 100
    with connect(proxy) as fresh:  # a connection opened during a delay is delayed too
        assert round_trip(fresh) >= 0.19


def test_reset_closes_open_connections_and_resets_new_ones(proxy: FaultProxy, backend: str) -> None:
    with connect(proxy) as opened:
        round_trip(opened)
        proxy.reset(duration_s=10)
        if OPEN_CONNECTION_ON_RESET[backend] == "rst":
            with pytest.raises(ConnectionResetError):
                opened.recv(1)
        else:
            assert opened.recv(1) == b""  # closed at once, without the client sending a byte
    assert_new_connection_reset(proxy)
    proxy.heal()
    with connect(proxy) as after:
        assert round_trip(after) < 1.0


def test_blackhole_forwards_nothing_until_healed(proxy: FaultProxy) -> None:
    with connect(proxy) as opened, connect(proxy) as idle:
        round_trip(opened)
        proxy.blackhole(duration_s=10)
        opened.settimeout(0.5)
        opened.sendall(b"lost")
        with pytest.raises(TimeoutError):
            opened.recv(1)
        with connect(proxy, timeout=0.5) as fresh:  # accepted and kept, and silent
            fresh.sendall(b"lost too")
            with pytest.raises(TimeoutError):
                fresh.recv(1)
            proxy.heal()
            fresh.settimeout(2)
            assert fresh.recv(1) == b""  # its bytes were dropped: closed at the heal
        opened.settimeout(2)
        assert opened.recv(1) == b""
        idle.settimeout(2)
        assert idle.recv(1) == b""  # open during the black hole: closed too (as toxiproxy does)
    with connect(proxy) as after:
        assert round_trip(after) < 1.0


@pytest.mark.parametrize("kind", ["delay", "reset", "blackhole"])
def test_a_fault_heals_itself_after_its_duration(proxy: FaultProxy, kind: str) -> None:
    duration = 1.5 if kind == "delay" else 0.8  # the delayed round trip (0.6 s) ends well before the fault
    if kind == "delay":
        event = proxy.delay(300, duration_s=duration)
        with connect(proxy) as sock:
            assert round_trip(sock) >= 0.55
    elif kind == "reset":
        event = proxy.reset(duration_s=duration)
        assert_new_connection_reset(proxy)
    else:
        event = proxy.blackhole(duration_s=duration)
        with connect(proxy, timeout=0.3) as sock:
            sock.sendall(b"ping")
            with pytest.raises(TimeoutError):
                sock.recv(1)
    assert event.end_s is None
    assert wait_until(lambda: event.end_s is not None, timeout=5)
    assert event.end_s is not None and duration <= event.end_s - event.start_s < duration + 1.5
    heal = proxy.events()[-1]
    assert (heal.kind, heal.detail["reason"], heal.detail["healed"]) == ("heal", "expired", kind)
    with connect(proxy) as sock:
        assert round_trip(sock) < 0.5


@pytest.mark.parametrize("upstream", [("10.0.0.1", 9876), ("192.168.1.10", 8081), ("8.8.8.8", 53),
                                      ("example.com", 80), ("0.0.0.0", 8081), ("::1", 8081), ("", 8081),
                                      ("127.0.0.1.example.com", 80)])
@pytest.mark.parametrize("backend_name", ["python", "toxiproxy", "auto"])
def test_a_non_loopback_upstream_is_refused(upstream: tuple[str, int], backend_name: str) -> None:
    threads, kids = threading.active_count(), children()
    with pytest.raises(ValueError, match="loopback"):
        FaultProxy(upstream, backend=backend_name)
    assert (threading.active_count(), children()) == (threads, kids)  # nothing started


@pytest.mark.parametrize("upstream", [("127.0.0.1", 0), ("127.0.0.1", 70000), ("127.0.0.1", "8081"),
                                      ("127.0.0.1", True), "127.0.0.1:8081", ("127.0.0.1",), None])
def test_a_malformed_upstream_is_refused(upstream: object) -> None:
    with pytest.raises(ValueError):
        FaultProxy(upstream, backend="python")  # type: ignore[arg-type]


def test_localhost_is_loopback(backend: str, echo: tuple[str, int]) -> None:
    with FaultProxy(("localhost", echo[1]), backend=backend) as made:
        assert made.upstream == ("127.0.0.1", echo[1])
        with connect(made) as sock:
            round_trip(sock)


def test_bad_fault_arguments_are_refused(proxy: FaultProxy) -> None:
    for duration in (0, -1, math.inf, math.nan, fault_proxy.MAX_FAULT_S + 1, "1", True):
        with pytest.raises(ValueError, match="duration_s"):
            proxy.blackhole(duration)  # type: ignore[arg-type]
    for ms in (-1, 1.5, "300", True):
        with pytest.raises(ValueError, match="ms"):
            proxy.delay(ms, duration_s=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="jitter_ms"):
        proxy.delay(10, duration_s=1, jitter_ms=-5)
    with pytest.raises(ValueError, match="backend"):
        FaultProxy(("127.0.0.1", 1), backend="docker")
    assert proxy.events() == []


def test_events_log_each_fault_with_its_start_and_end(proxy: FaultProxy) -> None:
    before = time.time()
    delay = proxy.delay(50, duration_s=10, jitter_ms=5)
    blackhole = proxy.blackhole(duration_s=10)  # ends the delay
    proxy.heal()
    proxy.heal()  # nothing on: nothing logged
    reset = proxy.reset(duration_s=0.3)
    assert wait_until(lambda: reset.end_s is not None)
    last = proxy.delay(20, duration_s=10)
    proxy.close()
    events = proxy.events()
    assert [e.kind for e in events] == ["delay", "heal", "blackhole", "heal", "reset", "heal", "delay", "heal"]
    assert [e.detail["reason"] for e in events if e.kind == "heal"] == ["replaced", "heal", "expired", "close"]
    assert [e.detail["healed"] for e in events if e.kind == "heal"] == ["delay", "blackhole", "reset", "delay"]
    assert events[0] is delay and events[2] is blackhole and events[4] is reset and events[6] is last
    assert all(isinstance(e, FaultEvent) and e.target == proxy.target for e in events)
    assert all(e.detail["backend"] == proxy.backend for e in events)
    faults, heals = events[0::2], events[1::2]
    for fault, heal in zip(faults, heals):
        assert fault.end_s is not None and before <= fault.start_s <= fault.end_s <= time.time()
        assert heal.start_s == heal.end_s == fault.end_s
    assert delay.detail == {"ms": 50, "jitter_ms": 5, "directions": "both", "duration_s": 10.0,
                            "backend": proxy.backend}
    assert reset.detail["duration_s"] == 0.3 and 0.3 <= reset.end_s - reset.start_s < 2.0  # type: ignore[operator]
    events.clear()
    assert len(proxy.events()) == 8  # a copy of the log


def test_close_leaves_nothing_listening_or_running(backend: str, echo: tuple[str, int]) -> None:
    kids = children()
    made = FaultProxy(echo, backend=backend)
    port = made.listen[1]
    assert port in listening_ports()
    engine = made._engine  # what runs it: toxiproxy's watchdog and server in their own session, or a thread
    if backend == "toxiproxy":
        group, api_port = engine.process.pid, engine.api_port  # type: ignore[attr-defined]
        assert group_alive(group) and api_port in listening_ports() and group in children()
    else:
        thread = engine._thread  # type: ignore[attr-defined]
        assert thread.is_alive()
    sock = connect(made)
    round_trip(sock)
    made.blackhole(duration_s=30)
    made.close()
    assert port not in listening_ports()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(made.listen, timeout=2).close()
    try:
        assert sock.recv(1) == b""
    except ConnectionResetError:
        pass  # closed either way
    finally:
        sock.close()
    if backend == "toxiproxy":
        assert not group_alive(group) and api_port not in listening_ports()
    else:
        assert not thread.is_alive()
    assert children() == kids
    assert made.events()[-1].detail["reason"] == "close"
    made.close()  # a second close does nothing
    with pytest.raises(RuntimeError, match="closed"):
        made.delay(10, duration_s=1)


def test_sigint_heals_then_runs_the_handler_before(backend: str, echo: tuple[str, int]) -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers are set in the main thread only; this test runs in another")
    original = signal.getsignal(signal.SIGINT)
    seen: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    recorder = signal.getsignal(signal.SIGINT)
    try:
        with FaultProxy(echo, backend=backend) as made:
            event = made.blackhole(duration_s=30)
            signal.raise_signal(signal.SIGINT)
            assert wait_until(lambda: bool(seen), timeout=2)
            assert seen == [signal.SIGINT] and event.end_s is not None
            assert made.events()[-1].detail["reason"] == "sigint"
            with connect(made) as sock:
                assert round_trip(sock) < 1.0
        assert signal.getsignal(signal.SIGINT) is recorder  # put back when the last proxy closed
    finally:
        signal.signal(signal.SIGINT, original)


OWNER = """
import atexit, sys, time
sys.path.insert(0, {root!r})
proxy = None
atexit.register(lambda: print("EVENTS", [(e.kind, e.detail.get("reason")) for e in proxy.events()], flush=True))
from adapters.fault_proxy import FaultProxy  # its exit handler, registered after ours, runs before it
proxy = FaultProxy(("127.0.0.1", {port}), backend={backend!r})
proxy.blackhole(duration_s=60)
process = getattr(proxy._engine, "process", None)
print("LISTEN", proxy.listen[1], "GROUP", process.pid if process else 0, flush=True)
{then}
"""


def owner(backend: str, port: int, then: str) -> subprocess.Popen[str]:
    script = textwrap.dedent(OWNER).format(root=str(ROOT), port=port, backend=backend, then=then)
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=ROOT)


def test_exit_heals_and_ends_everything(backend: str, echo: tuple[str, int]) -> None:
    process = owner(backend, echo[1], then="")  # exits without close()
    try:
        out, _ = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0, out
    words = out.split("\n")[0].split()
    port, group = int(words[1]), int(words[3])
    assert "EVENTS [('blackhole', None), ('heal', 'atexit')]" in out
    assert port not in listening_ports()
    if backend == "toxiproxy":
        assert not group_alive(group)


def test_toxiproxy_dies_with_its_owner(echo: tuple[str, int]) -> None:
    require("toxiproxy")
    process = owner("toxiproxy", echo[1], then="time.sleep(60)")
    try:
        assert process.stdout is not None
        words = process.stdout.readline().split()
        port, group = int(words[1]), int(words[3])
        assert group_alive(group) and port in listening_ports()
        process.kill()  # no atexit, no close: the watchdog reads EOF and ends the server
        process.wait(timeout=10)
        assert wait_until(lambda: not group_alive(group), timeout=10)
        assert port not in listening_ports()
    finally:
        process.kill()
        process.wait(timeout=10)
