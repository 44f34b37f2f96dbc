"""The remoting front end's sockets: a name server port and a broker port on loopback, on the model's event
loop (the gRPC front end's), every request answered by ``handlers`` in a worker thread (REMOTING-01). A pull
the broker may suspend is held on the loop, awaiting the model's changes, so it holds no thread.

A malformed frame closes its own connection and nothing else, as does a peer that sends part of a frame and
then nothing for ``partial_frame_s``; a request the handlers do not know is answered
REQUEST_CODE_NOT_SUPPORTED; a one-way request gets no answer.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import itertools
import logging
from concurrent.futures import ThreadPoolExecutor

from ..limits import ServeLimits
from ..model_service import RealTimeModel
from .codec import ONEWAY_FLAG, Command, FrameError, FrameSplitter, decode, encode
from .handlers import PULL_MESSAGE, SYSTEM_ERROR, RemotingBroker, pull_suspend_until_ms

log = logging.getLogger("rmqc.remoting")
READ_CHUNK = 64 * 1024
MAX_IN_FLIGHT = 64
"""Requests of one connection being answered at once; the connection reads no more until one is done."""


class RemotingServer:
    """Two listening sockets (name server, broker) over one ``RemotingBroker``."""

    def __init__(self, model: RealTimeModel, host: str = "127.0.0.1", namesrv_port: int = 0, broker_port: int = 0,
                 workers: int = 8, limits: ServeLimits | None = None) -> None:
        """``model`` must be started: its loop carries these sockets."""
        self.model, self.host = model, host
        self.limits = limits or ServeLimits()
        self._ports = (namesrv_port, broker_port)
        self.namesrv_port = self.broker_port = 0
        self.broker: RemotingBroker | None = None
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
        namesrv = await asyncio.start_server(self._serve, self.host, self._ports[0])
        broker = await asyncio.start_server(self._serve, self.host, self._ports[1])
        self._servers = [namesrv, broker]
        self.namesrv_port = namesrv.sockets[0].getsockname()[1]
        self.broker_port = broker.sockets[0].getsockname()[1]
        self.broker = RemotingBroker(self.model, f"{self.host}:{self.broker_port}", calls=self)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
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
                    task = asyncio.create_task(self._reply(request, writer, slots))
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
            if self.broker is not None:
                try:
                    await asyncio.get_running_loop().run_in_executor(self._executor, self.broker.connection_closed,
                                                                     connection)
                except RuntimeError:  # the server is stopping: nothing is left to tidy
                    pass

    async def _reply(self, request: Command, writer: asyncio.StreamWriter, slots: asyncio.Semaphore) -> None:
        try:
            response = await self._held_pull(request) if request.code == PULL_MESSAGE else None
            if response is None:
                response = await asyncio.get_running_loop().run_in_executor(self._executor, self._answer, request)
            if not request.is_oneway and not writer.is_closing():
                writer.write(encode(response))
                await writer.drain()
        except (ConnectionError, RuntimeError):
            pass  # the client went away
        finally:
            slots.release()

    async def _held_pull(self, request: Command) -> Command | None:
        """A pull with FLAG_SUSPEND, held on the loop until a message is at its offset or its suspension ends;
        None for a pull to answer at once (or a malformed one: the handler's answer)."""
        assert self.broker is not None
        try:
            until = pull_suspend_until_ms(self.broker, request)
        except (KeyError, ValueError):
            return None
        if until is None:
            return None
        while True:
            response = self.broker.pull_held(request, until)
            if response is not None:
                return response
            await self.model.changes(until, self.model.wall_seconds(until - self.model.spec_now_ms()) + 0.05,
                                     request.ext.get("topic"), int(request.ext.get("queueId", 0)))

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

    def _answer(self, request: Command) -> Command:
        assert self.broker is not None
        try:
            return self.broker.handle(request)
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
