"""The remoting front end's sockets: a name server port and a broker port on loopback, asyncio in one
thread, every request answered by ``handlers`` in a worker thread (REMOTING-01).

A malformed frame closes its own connection and nothing else; a request the handlers do not know is
answered REQUEST_CODE_NOT_SUPPORTED; a one-way request gets no answer.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import itertools
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from ..model_service import RealTimeModel
from .codec import ONEWAY_FLAG, Command, FrameError, FrameSplitter, decode, encode
from .handlers import SYSTEM_ERROR, RemotingBroker

log = logging.getLogger("rmqc.remoting")
READ_CHUNK = 64 * 1024
MAX_IN_FLIGHT = 64
"""Requests of one connection being answered at once; the connection reads no more until one is done."""


class RemotingServer:
    """Two listening sockets (name server, broker) over one ``RemotingBroker``."""

    def __init__(self, model: RealTimeModel, host: str = "127.0.0.1", namesrv_port: int = 0, broker_port: int = 0,
                 workers: int = 32) -> None:
        self.model, self.host = model, host
        self._ports = (namesrv_port, broker_port)
        self.namesrv_port = self.broker_port = 0
        self.broker: RemotingBroker | None = None
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rmqc-remoting")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="rmqc-remoting-io", daemon=True)
        self._servers: list[asyncio.base_events.Server] = []
        self.connections_closed_for_bad_frames = 0
        self._connections = itertools.count(1)
        self._writers: dict[int, asyncio.StreamWriter] = {}
        self._awaited: dict[int, concurrent.futures.Future[Command]] = {}
        self._opaques = itertools.count(1 << 30)  # the broker's own requests: apart from the clients' opaques

    @property
    def namesrv_address(self) -> str:
        return f"{self.host}:{self.namesrv_port}"

    def start(self) -> "RemotingServer":
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._listen(), self._loop)
        future.result(timeout=10)
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
            response = await asyncio.get_running_loop().run_in_executor(self._executor, self._answer, request)
            if not request.is_oneway and not writer.is_closing():
                writer.write(encode(response))
                await writer.drain()
        except (ConnectionError, RuntimeError):
            pass  # the client went away
        finally:
            slots.release()

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

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        self._executor.shutdown(wait=False, cancel_futures=True)
