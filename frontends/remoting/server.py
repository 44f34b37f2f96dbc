"""The remoting front end's sockets: a name server port and a port for each broker on loopback, on the model's
event loop (the gRPC front end's), every request answered by ``handlers`` in a worker thread (REMOTING-01). A pull
the broker may suspend is held on the loop, awaiting the model's changes, so it holds no thread.

Two brokers by default, ``broker-a`` and ``broker-b``, over the one model: every topic is on ``broker-a``; one made
on ``broker-b`` too (``mqadmin updateTopic -b`` on each) spans both, with the same queue numbers on each, so a
client's send retries have another broker to go to (QSEL-02, SEND-4X-02).

A malformed frame closes its own connection and nothing else, as does a peer that sends part of a frame and
then nothing for ``partial_frame_s``; a request the handlers do not know is answered
REQUEST_CODE_NOT_SUPPORTED; a one-way request gets no answer.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import functools
import itertools
import logging
from concurrent.futures import ThreadPoolExecutor

from ..limits import ServeLimits
from ..model_service import RealTimeModel
from .codec import ONEWAY_FLAG, Command, FrameError, FrameSplitter, decode, encode
from .handlers import PULL_MESSAGE, SYSTEM_ERROR, RemotingBroker, pull_suspend_until_ms
from .send_faults import AttemptLog, ScopedFaults

log = logging.getLogger("rmqc.remoting")
READ_CHUNK = 64 * 1024
MAX_IN_FLIGHT = 64
"""Requests of one connection being answered at once; the connection reads no more until one is done."""


BROKERS = 2
"""Brokers ``rmqc serve`` runs by default."""


class RemotingServer:
    """Listening sockets (the name server, each broker) over one ``RemotingBroker`` each; the name server's
    requests are the first broker's to answer."""

    def __init__(self, model: RealTimeModel, host: str = "127.0.0.1", namesrv_port: int = 0, broker_port: int = 0,
                 workers: int = 8, limits: ServeLimits | None = None, brokers: int = BROKERS) -> None:
        """``model`` must be started: its loop carries these sockets. ``broker_port`` is the first broker's; the
        others take free ports."""
        if not 1 <= brokers <= 26:
            raise ValueError(f"rmqc serve runs 1 to 26 brokers, not {brokers}")
        self.model, self.host = model, host
        self.limits = limits or ServeLimits()
        self._ports = (namesrv_port, broker_port)
        self._broker_count = brokers
        self.namesrv_port = self.broker_port = 0
        self.broker: RemotingBroker | None = None
        """the first broker (``broker-a``), which answers the name server's requests too"""
        self.brokers: list[RemotingBroker] = []
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rmqc-remoting")
        self._loop = model.loop
        self._servers: list[asyncio.base_events.Server] = []
        self.connections_closed_for_bad_frames = 0
        self.connections_closed_for_stalled_frames = 0
        self._connections = itertools.count(1)
        self._writers: dict[int, asyncio.StreamWriter] = {}
        self._awaited: dict[int, concurrent.futures.Future[Command]] = {}
        self._opaques = itertools.count(1 << 30)  # the broker's own requests: apart from the clients' opaques

    @property
    def namesrv_address(self) -> str:
        return f"{self.host}:{self.namesrv_port}"

    def start(self) -> "RemotingServer":
        self.model.run(self._listen(), timeout_s=10)
        return self

    async def _listen(self) -> None:
        cluster: list[tuple[str, str]] = []
        attempts, faults = AttemptLog(), ScopedFaults()
        for index in range(self._broker_count):
            broker = RemotingBroker(self.model, "", f"broker-{chr(ord('a') + index)}", self, index=index,
                                    cluster=cluster, attempts=attempts, faults=faults)
            server = await asyncio.start_server(functools.partial(self._serve, broker), self.host,
                                                self._ports[1] if index == 0 else 0)
            broker.broker_address = f"{self.host}:{server.sockets[0].getsockname()[1]}"
            cluster.append((broker.broker_name, broker.broker_address))
            self.brokers.append(broker)
            self._servers.append(server)
        self.broker = self.brokers[0]
        self.broker_port = int(self.broker.broker_address.rpartition(":")[2])
        namesrv = await asyncio.start_server(functools.partial(self._serve, self.broker), self.host, self._ports[0])
        self._servers.append(namesrv)
        self.namesrv_port = namesrv.sockets[0].getsockname()[1]

    @property
    def broker_addresses(self) -> list[str]:
        return [b.broker_address for b in self.brokers]

    async def _serve(self, broker: RemotingBroker, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        """Requests on one connection run side by side (a client pipelines them: a suspended pull must not
        hold its heart beats back), at most ``MAX_IN_FLIGHT`` at once; answers go out as they are ready."""
        splitter = FrameSplitter()
        slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        connection = next(self._connections)
        self._writers[connection] = writer
        tasks: set[asyncio.Task] = set()
        try:
            while True:
                if splitter.buffer:  # part of a frame came: the rest must follow in time
                    try:
                        data = await asyncio.wait_for(reader.read(READ_CHUNK), self.limits.partial_frame_s)
                    except asyncio.TimeoutError:
                        self.connections_closed_for_stalled_frames += 1
                        log.warning("closing %s: %d bytes of a frame, then nothing for %g s",
                                    writer.get_extra_info("peername"), len(splitter.buffer), self.limits.partial_frame_s)
                        return
                else:
                    data = await reader.read(READ_CHUNK)
                if not data:
                    return
                for payload in splitter.feed(data):
                    request = decode(payload)
                    request.connection = connection
                    if request.is_response:  # an answer to one of the broker's own requests
                        awaited = self._awaited.pop(request.opaque, None)
                        if awaited is not None and not awaited.done():
                            awaited.set_result(request)
                        continue
                    await slots.acquire()
                    task = asyncio.create_task(self._reply(broker, request, writer, slots))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
        except FrameError as exc:
            self.connections_closed_for_bad_frames += 1
            log.info("closing %s: %s", writer.get_extra_info("peername"), exc)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._writers.pop(connection, None)
            for task in tasks:
                task.cancel()
            writer.close()
            try:
                await asyncio.get_running_loop().run_in_executor(self._executor, broker.connection_closed, connection)
            except RuntimeError:  # the server is stopping: nothing is left to tidy
                pass

    async def _reply(self, broker: RemotingBroker, request: Command, writer: asyncio.StreamWriter,
                     slots: asyncio.Semaphore) -> None:
        """The answer, written back; a request its broker never answers (an injected timeout) gets none."""
        try:
            response = await self._held_pull(broker, request) if request.code == PULL_MESSAGE else None
            if response is None:
                response = await asyncio.get_running_loop().run_in_executor(self._executor, self._answer, broker,
                                                                            request)
            if response is not None and not request.is_oneway and not writer.is_closing():
                writer.write(encode(response))
                await writer.drain()
        except (ConnectionError, RuntimeError):
            pass  # the client went away
        finally:
            slots.release()

    async def _held_pull(self, broker: RemotingBroker, request: Command) -> Command | None:
        """A pull with FLAG_SUSPEND, held on the loop until a message is at its offset or its suspension ends;
        None for a pull to answer at once (or a malformed one: the handler's answer)."""
        try:
            until = pull_suspend_until_ms(broker, request)
            topic = request.ext.get("topic")
            with self.model.locked() as sim:
                queue_id = broker.model_queue(sim, str(topic), int(request.ext.get("queueId", 0)))
        except (KeyError, ValueError):
            return None
        if until is None:
            return None
        while True:
            response = broker.pull_held(request, until)
            if response is not None:
                return response
            await self.model.changes(until, self.model.wall_seconds(until - self.model.spec_now_ms()) + 0.05,
                                     topic, queue_id)

    # ---- the broker's calls to its clients (handlers.ClientCalls) ----

    def _write(self, connection: int, command: Command) -> None:
        """From any thread: queue ``command`` on the connection (gone: dropped, as a closed channel would)."""
        def write() -> None:
            writer = self._writers.get(connection)
            if writer is not None and not writer.is_closing():
                writer.write(encode(command))

        self._loop.call_soon_threadsafe(write)

    def notify(self, connection: int, request: Command) -> None:
        """A one-way request to a client (NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE)."""
        self._write(connection, dataclasses.replace(request, opaque=next(self._opaques), flag=ONEWAY_FLAG))

    def ask(self, connection: int, request: Command, timeout_s: float) -> Command | None:
        """A request to a client and its answer, or None after ``timeout_s`` (GET_CONSUMER_RUNNING_INFO)."""
        opaque = next(self._opaques)
        future: concurrent.futures.Future[Command] = concurrent.futures.Future()
        self._awaited[opaque] = future
        self._write(connection, dataclasses.replace(request, opaque=opaque, flag=0))
        try:
            return future.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError:
            return None
        finally:
            self._awaited.pop(opaque, None)

    def _answer(self, broker: RemotingBroker, request: Command) -> Command | None:
        try:
            return broker.handle(request)
        except Exception as exc:  # the server keeps serving whatever one request does
            log.exception("remoting request %s failed", request.code)
            return request.response(SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")

    def stop(self) -> None:
        async def close() -> None:
            for server in self._servers:
                server.close()
                await server.wait_closed()

        if not self._loop.is_closed() and self._loop.is_running():
            try:
                self.model.run(close(), timeout_s=10)
            except Exception as exc:  # stopping anyway
                log.info("remoting stop: %s", exc)
        self._executor.shutdown(wait=False, cancel_futures=True)
