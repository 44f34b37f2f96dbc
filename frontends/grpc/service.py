"""``apache.rocketmq.v2.MessagingService`` over the reference model: what a 5.x proxy answers.

Each handler validates like the proxy (codes from ``reference_impl.rules``), then calls the model's
broker under the real-time lock. A handler never raises into gRPC: an unexpected error becomes
``INTERNAL_SERVER_ERROR`` with its message, and the server keeps serving.

The service runs on ``grpc.aio`` on the model's event loop: a unary call is answered at once, a
long-polling receive awaits the model's changes and a Telemetry stream awaits its reader and its outbox,
so neither holds a thread. Every call is first admitted by the client table (``frontends.limits``).
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import AsyncIterator, Callable

import grpc
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as rpc
from rocketmq.grpc_protocol import service_pb2_grpc

from reference_impl.rules import codes, retry5x, topic_types, validation
from reference_impl.rules import delay as delay_rules
from reference_impl.rules import fifo as fifo_rules
from reference_impl.rules import filter as filter_rules
from reference_impl.rules import transaction as tx_rules
from reference_impl.rules.codes import RocketMQError

from ..limits import ClientTable, ServeLimits
from ..model_service import RealTimeModel
from .convert import (
    WallClock,
    backoff_policy,
    message_of,
    ms_of,
    route_queues,
    set_ms,
    status,
    stored_message_of,
)

log = logging.getLogger("rmqc.serve")

MAX_LONG_POLL_SPEC_MS = 20_000
MAX_LONG_POLL_WALL_S = 2.0
MAX_BATCH = 32


@dataclass
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8081
    auto_create: bool = True
    default_queues: int = 4
    long_polling_ms: int = retry5x.LONG_POLLING_TIMEOUT_MS
    limits: ServeLimits = field(default_factory=ServeLimits)


@dataclass
class ClientStream:
    """An open Telemetry stream: where server-initiated commands (transaction checks) go."""

    client_id: str
    client_type: int
    topics: frozenset[str] = frozenset()  # the topics a producer declared in its settings (TX-07)
    outbox: "asyncio.Queue[rpc.TelemetryCommand | None]" = field(default_factory=asyncio.Queue)


def _client_id(context: grpc.aio.ServicerContext) -> str:
    return dict(context.invocation_metadata() or ()).get("x-mq-client-id", "")


def _status_of(exc: Exception, handler: str) -> pb.Status:
    """A RocketMQError keeps its code; an illegal invisible time is 40011; anything else is
    INTERNAL_SERVER_ERROR with its message (and a log line), so the server survives any request."""
    if isinstance(exc, RocketMQError):
        return status(exc.code, exc.message)
    if isinstance(exc, retry5x.IllegalInvisibleTime):
        return status(codes.ILLEGAL_INVISIBLE_TIME, str(exc))
    log.error("%s failed", handler, exc_info=exc)
    return status(codes.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}")


def _guard(response_type: type) -> Callable:
    """An async unary handler around a synchronous one: the client is admitted first (a refusal is 42900 with
    the limit's reason), and a failure is answered in the response's status. The handler gets the client id
    read once from the call's metadata."""

    def wrap(handler: Callable) -> Callable:
        async def run(self: "MessagingService", request, context):
            try:
                client = _client_id(context)
                refused = self.clients.admit(client)
                if refused:
                    return response_type(status=status(codes.TOO_MANY_REQUESTS, refused))
                if client:
                    with self.model.locked():  # a heartbeat or any call: the client is online (RETRY-5X-09)
                        self.broker.client_seen(client)
                return handler(self, request, client)
            except Exception as exc:
                return response_type(status=_status_of(exc, handler.__name__))

        run.__name__ = handler.__name__
        return run

    return wrap


class MessagingService(service_pb2_grpc.MessagingServiceServicer):
    """The proxy front of the reference model."""

    def __init__(self, model: RealTimeModel, options: ServeOptions) -> None:
        self.model = model
        self.options = options
        self.broker = model.sim.broker
        self.wall = WallClock(model.wall_epoch_ms, model.spec_now_ms)
        self.streams: dict[str, ClientStream] = {}
        self._streams_lock = threading.Lock()
        self.clients = ClientTable(options.limits)
        self._tx_ids = itertools.count(1)
        self._round_robin = itertools.count()
        self.transactions: dict[str, object] = {}

    # ---- helpers ----------------------------------------------------------------------------

    def _topic(self, name: str, *, create: bool = True):
        if not name:
            raise RocketMQError(codes.ILLEGAL_TOPIC, "topic name is required")
        config = self.broker.topics.get(name)
        if config is not None:
            return config
        if name.startswith("%DLQ%") or name.startswith("%RETRY%"):
            raise RocketMQError(codes.TOPIC_NOT_FOUND, f"topic {name} not found")
        validation.check_topic_proxy(name, self.model.sim.release)
        if not (create and self.options.auto_create):
            raise RocketMQError(codes.TOPIC_NOT_FOUND, f"topic {name} not found")
        q = self.options.default_queues
        return self.broker.create_topic(name, q, q)

    def _group(self, name: str) -> str:
        """``GrpcValidator.validateConsumerGroup`` as the served release runs it (LIMIT-02)."""
        validation.check_group_proxy(name, self.model.sim.release)
        return name

    # ---- routing and sessions ---------------------------------------------------------------

    @_guard(rpc.QueryRouteResponse)
    def QueryRoute(self, request, client: str):
        # a 5.x proxy never auto-creates a topic through a route query: TOPIC_NOT_EXIST from the name server is
        # TOPIC_NOT_FOUND (40402) to the client (TOPIC-02); ``auto_create`` is the broker's on a send
        with self.model.locked():
            config = self._topic(request.topic.name, create=False)
            queues = route_queues(config, self.options.host, self.options.port, self.model.sim.release,
                                  request.topic.resource_namespace)
        return rpc.QueryRouteResponse(status=status(codes.OK), message_queues=queues)

    @_guard(rpc.HeartbeatResponse)
    def Heartbeat(self, request, client: str):
        return rpc.HeartbeatResponse(status=status(codes.OK))

    @_guard(rpc.QueryAssignmentResponse)
    def QueryAssignment(self, request, client: str):
        with self.model.locked():
            self._group(request.group.name)
            config = self._topic(request.topic.name)
            response = rpc.QueryAssignmentResponse(status=status(codes.OK))
            for broker_queue in route_queues(config, self.options.host, self.options.port, self.model.sim.release,
                                             request.topic.resource_namespace)[:1]:
                broker_queue.id = -1  # the proxy assigns a whole broker: pop picks the queue
                response.assignments.add(message_queue=broker_queue)
        return response

    @_guard(rpc.NotifyClientTerminationResponse)
    def NotifyClientTermination(self, request, client: str):
        self.clients.leave(client)
        with self.model.locked():  # CLIENT_UNREGISTER: its renewed handles are cleared (RETRY-5X-09)
            self.broker.client_gone(client)
        return rpc.NotifyClientTerminationResponse(status=status(codes.OK))

    async def Telemetry(self, request_iterator, context) -> None:  # type: ignore[override]
        """Answer each settings command with the server's settings; keep the stream for transaction checks. A
        reader that takes nothing for ``stalled_write_s`` is dropped; the stream costs no thread meanwhile."""
        client = _client_id(context)
        refused = self.clients.open_stream(client)
        if refused:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, refused)
        stream = ClientStream(client, 0)

        async def read() -> None:
            try:
                async for command in request_iterator:
                    if command.HasField("settings"):
                        stream.client_type = command.settings.client_type
                        stream.outbox.put_nowait(self._settings_answer(command.settings))
                        if command.settings.HasField("publishing"):
                            stream.topics = frozenset(t.name for t in command.settings.publishing.topics)
                            with self._streams_lock:
                                self.streams[stream.client_id] = stream
            except (grpc.RpcError, asyncio.CancelledError):  # the client went away
                pass
            except Exception:
                log.exception("Telemetry failed")
            finally:
                stream.outbox.put_nowait(None)

        reader = asyncio.get_running_loop().create_task(read())
        try:
            while True:
                command = await stream.outbox.get()
                if command is None or context.done():
                    return
                try:
                    await asyncio.wait_for(context.write(command), self.options.limits.stalled_write_s)
                except asyncio.TimeoutError:
                    log.warning("client %s: its Telemetry stream took nothing for %g s; dropped", client,
                                self.options.limits.stalled_write_s)
                    return
        finally:
            reader.cancel()
            self.clients.close_stream(client)
            with self._streams_lock:
                if self.streams.get(stream.client_id) is stream:
                    del self.streams[stream.client_id]

    def _settings_answer(self, asked: pb.Settings) -> rpc.TelemetryCommand:
        settings = pb.Settings()
        settings.CopyFrom(asked)
        settings.metric.on = False
        settings.ClearField("backoff_policy")
        if asked.HasField("subscription") and asked.subscription.group.name:
            with self.model.locked():
                group = self.broker.group(asked.subscription.group.name)
                consumer = group.settings()
            backoff_policy(settings.backoff_policy, consumer.backoff)
            settings.subscription.fifo = consumer.fifo
            settings.subscription.receive_batch_size = consumer.receive_batch_size
            set_ms(settings.subscription.long_polling_timeout, self.options.long_polling_ms)
        else:
            producer = retry5x.producer_settings()
            backoff_policy(settings.backoff_policy, producer.backoff)
            settings.publishing.max_body_size = producer.max_body_size
            settings.publishing.validate_message_type = producer.validate_message_type
        return rpc.TelemetryCommand(status=status(codes.OK), settings=settings)

    # ---- sending ----------------------------------------------------------------------------

    @_guard(rpc.SendMessageResponse)
    def SendMessage(self, request, client: str):
        if not request.messages:
            raise RocketMQError(codes.BAD_REQUEST, "no message to send")
        entries = []
        with self.model.locked():
            for message in request.messages:
                try:
                    entries.append(self._send_one(message, client))
                except RocketMQError as exc:
                    entries.append(rpc.SendResultEntry(status=status(exc.code, exc.message)))
        codes_seen = {e.status.code for e in entries}
        overall = status(codes.OK) if codes_seen == {codes.OK} else (
            entries[0].status if len(codes_seen) == 1 else status(30000, "multiple results"))
        return rpc.SendMessageResponse(status=overall, entries=entries)

    def _send_one(self, message: pb.Message, client: str) -> rpc.SendResultEntry:
        """Proxy checks (LIMIT-01, LIMIT-02, LIMIT-03, LIMIT-04, FIFO-07, DELAY-08), queue choice (FIFO-01),
        then the broker's put."""
        sp = message.system_properties
        topic = message.topic.name
        validation.check_topic_proxy(topic, self.model.sim.release)
        validation.check_body_proxy(message.body)
        props = dict(message.user_properties)
        validation.check_properties_proxy(props, sp.tag or None, list(sp.keys), self.model.sim.release)
        if not sp.message_id:
            raise RocketMQError(40009, "message id is required")
        group = sp.message_group if sp.HasField("message_group") else None
        group_error = None if group is None else fifo_rules.message_group_error(group)
        if group_error:
            raise RocketMQError(codes.ILLEGAL_MESSAGE_GROUP, group_error)
        now = self.model.sim.clock.now_ms
        deliver_ms = None
        if sp.HasField("delivery_timestamp"):
            deliver_ms = ms_of(sp.delivery_timestamp) - self.wall.epoch_ms
            if not delay_rules.proxy_delivery_time_legal(deliver_ms, now):
                raise RocketMQError(codes.ILLEGAL_DELIVERY_TIME, "delivery timestamp is more than a day ahead")
        config = self._topic(topic)
        props["UNIQ_KEY"] = sp.message_id
        if sp.tag:
            props["TAGS"] = sp.tag
        if sp.keys:
            props["KEYS"] = " ".join(sp.keys)
        if group is not None:
            props["__SHARDINGKEY"] = group
        if deliver_ms is not None:
            props["TIMER_DELIVER_MS"] = str(deliver_ms)
        if sp.message_type == pb.TRANSACTION:
            props["TRAN_MSG"] = "true"
        release = self.model.sim.release
        topic_types.proxy_check(topic, config.message_type, topic_types.message_type_of(props, release), release)
        queues = config.write_queues
        qid = fifo_rules.proxy_queue_for_group(group, queues) if group else next(self._round_robin) % queues
        born = ms_of(sp.born_timestamp) - self.wall.epoch_ms if sp.HasField("born_timestamp") else now
        if sp.message_type == pb.TRANSACTION:
            # the proxy puts the topic where the producer group goes: checks find producers by topic (TX-07)
            half = self.broker.put_half(topic, qid, message.body, props, sp.message_id,
                                        tx_rules.half_producer_group(topic, client, through_proxy=True))
            tx_id = f"tx-{next(self._tx_ids)}"
            self.transactions[tx_id] = half
            self.broker.tx_checkers[topic] = self._check_by_telemetry
            return rpc.SendResultEntry(status=status(codes.OK), message_id=sp.message_id, transaction_id=tx_id,
                                       offset=half.message.queue_offset)
        put = self.broker.put(topic, qid, message.body, props, sp.message_id, born_ms=born)
        if put.code != codes.R_SUCCESS or put.message is None:
            raise RocketMQError(40000 if put.code == codes.R_MESSAGE_ILLEGAL else codes.INTERNAL_SERVER_ERROR,
                                put.remark or f"broker answered {put.code}")
        self.model.sim.emit("SEND_OK", topic=topic, client_id=client, msg_id=sp.message_id,
                            key=sp.keys[0] if sp.keys else None, message_group=group, queue_id=put.message.queue_id,
                            queue_offset=put.message.queue_offset)
        return rpc.SendResultEntry(status=status(codes.OK), message_id=sp.message_id,
                                   offset=put.message.queue_offset)

    # ---- transactions (TX-01, TX-02, TX-03, TX-04, TX-05) ----

    def _check_by_telemetry(self, message, check_times: int) -> None:
        """A transaction check goes to the Telemetry stream of a producer that declared the half's topic (the
        producer group the proxy registered it under); with none the broker has no channel and nobody is
        asked. The answer comes back as ``EndTransaction`` (TX-03, TX-07)."""
        tx_id = next((t for t, h in self.transactions.items() if h.message is message), "")  # type: ignore[attr-defined]
        with self._streams_lock:
            stream = next((s for s in self.streams.values() if message.properties.get("PGROUP") in s.topics), None)
        if stream is None:
            log.info("transaction check of %s: no producer declared topic %s (channel is null)",
                     message.msg_id, message.properties.get("PGROUP"))
            return None
        command = rpc.TelemetryCommand()
        command.recover_orphaned_transaction_command.transaction_id = tx_id
        command.recover_orphaned_transaction_command.message.CopyFrom(
            stored_message_of(message, message.properties.get("REAL_TOPIC", message.topic), self.wall))
        command.recover_orphaned_transaction_command.message.system_properties.message_type = pb.TRANSACTION
        self.model.call_on_loop(stream.outbox.put_nowait, command)
        return None

    @_guard(rpc.EndTransactionResponse)
    def EndTransaction(self, request, client: str):
        """COMMIT or ROLLBACK ends the half; any other resolution is UNKNOWN and leaves it to the checks,
        with an OK answer, as the proxy does (TX-02, TX-03)."""
        validation.check_topic_proxy(request.topic.name, self.model.sim.release)
        if not request.transaction_id:
            raise RocketMQError(codes.INVALID_TRANSACTION_ID, "transaction id cannot be empty")
        with self.model.locked():
            half = self.transactions.get(request.transaction_id)
            if half is None or half.message.msg_id != request.message_id:  # type: ignore[attr-defined]
                raise RocketMQError(codes.INVALID_TRANSACTION_ID, f"transaction {request.transaction_id!r} of "
                                                                  f"message {request.message_id!r} is unknown")
            state = {pb.COMMIT: tx_rules.LocalTransactionState.COMMIT_MESSAGE,
                     pb.ROLLBACK: tx_rules.LocalTransactionState.ROLLBACK_MESSAGE}.get(
                request.resolution, tx_rules.LocalTransactionState.UNKNOW)
            error = self.broker.end_transaction(half, state, half.producer_group)  # type: ignore[attr-defined]
            if error:
                raise RocketMQError(codes.INVALID_TRANSACTION_ID, error)
        return rpc.EndTransactionResponse(status=status(codes.OK))

    # ---- consuming --------------------------------------------------------------------------

    async def ReceiveMessage(self, request, context) -> AsyncIterator[rpc.ReceiveMessageResponse]:  # type: ignore[override]
        client = _client_id(context)
        refused = self.clients.begin_receive(client)
        if refused:
            yield rpc.ReceiveMessageResponse(status=status(codes.TOO_MANY_REQUESTS, refused))
            return
        if client:
            with self.model.locked():  # the receive's arrival is a sign of life, not its pops (RETRY-5X-09)
                self.broker.client_seen(client)
        try:
            async for response in self._receive(request, context, client):
                yield response
        except Exception as exc:
            yield rpc.ReceiveMessageResponse(status=_status_of(exc, "ReceiveMessage"))
        finally:
            self.clients.end_receive(client)

    async def _receive(self, request, context, client: str) -> AsyncIterator[rpc.ReceiveMessageResponse]:
        """Pop with the proxy's invisible-time rules (RETRY-5X-09), long-polling until a message is visible:
        the wait is an await on the model's changes, not a parked thread."""
        # implements FILTER-02 through the rules it calls
        group = self._group(request.group.name)
        if request.batch_size <= 0:
            raise RocketMQError(codes.BAD_REQUEST, f"batch size {request.batch_size} must be positive")
        expression = request.filter_expression
        if expression.type == pb.SQL:
            raise RocketMQError(40010, "SQL92 filtering needs enablePropertyFilter=true on the broker")
        tags = filter_rules.parse_tag_expression(expression.expression or "*").tags
        invisible = retry5x.receive_invisible_ms(ms_of(request.invisible_duration), request.auto_renew)
        poll = MAX_LONG_POLL_SPEC_MS
        if request.HasField("long_polling_timeout"):
            poll = min(max(0, ms_of(request.long_polling_timeout)), MAX_LONG_POLL_SPEC_MS)
        with self.model.locked() as sim:
            config = self._topic(request.message_queue.topic.name, create=False)
            fifo = self.broker.group(group).fifo
            deadline = sim.clock.now_ms + poll
            give_up = time.monotonic() + min(MAX_LONG_POLL_WALL_S, self.model.wall_seconds(poll))
            # before 5.2.0 a revived message does not wake the poll: only a new message on the topic, or
            # the poll's end, makes the proxy pop again (RETRY-5X-11)
            retry_wakes = retry5x.retry_arrival_wakes_long_poll(sim.release)

        def over() -> bool:
            return sim.clock.now_ms >= deadline or time.monotonic() >= give_up or context.done()

        while True:
            if context.done():  # the client gave up: popping now would hide messages until they revive
                return
            with self.model.locked() as sim:
                flights = self.broker.pop(group, config.name, invisible, min(request.batch_size, MAX_BATCH),
                                          request.attempt_id or f"{client}-{sim.clock.now_ms}", fifo=fifo,
                                          auto_renew=request.auto_renew, tags=tags, client_id=client)
                stored = self.broker.stored_count(config.name)
            if flights or over():
                break
            while True:
                await self.model.changes(deadline, give_up - time.monotonic(), config.name, group=group)
                if retry_wakes or over() or self.broker.stored_count(config.name) != stored:
                    break
        with self.model.locked() as sim:
            out = [message_of(f, self.wall, request.message_queue.topic.resource_namespace) for f in flights]
            for flight in flights:
                m = flight.message
                sim.emit("DELIVER", topic=flight.origin_topic, group=group, client_id=client, msg_id=m.msg_id,
                         key=m.key, message_group=m.message_group, queue_id=m.queue_id, queue_offset=m.queue_offset,
                         attempt=retry5x.delivery_attempt(m.reconsume_times), detail={"stored_topic": m.topic})
            now_wall = self.wall(sim.clock.now_ms)
        if not out:
            yield rpc.ReceiveMessageResponse(status=status(codes.MESSAGE_NOT_FOUND, "no new message"))
            return
        first = rpc.ReceiveMessageResponse()
        set_ms(first.delivery_timestamp, now_wall)
        yield first
        for message in out:
            yield rpc.ReceiveMessageResponse(message=message)
        yield rpc.ReceiveMessageResponse(status=status(codes.OK))

    @_guard(rpc.AckMessageResponse)
    def AckMessage(self, request, client: str):
        self._group(request.group.name)
        if not request.entries:
            raise RocketMQError(codes.BAD_REQUEST, "no entry to ack")
        response = rpc.AckMessageResponse()
        with self.model.locked() as sim:
            for entry in request.entries:
                code = self.broker.ack(entry.receipt_handle) if entry.receipt_handle else codes.INVALID_RECEIPT_HANDLE
                message = "OK" if code == codes.OK else f"receipt handle {entry.receipt_handle!r} is invalid or expired"
                response.entries.add(message_id=entry.message_id, receipt_handle=entry.receipt_handle,
                                     status=status(code, message))
                if code == codes.OK:
                    sim.emit("ACK", topic=request.topic.name, group=request.group.name, client_id=client,
                             msg_id=entry.message_id)
        seen = {e.status.code for e in response.entries}
        response.status.CopyFrom(status(codes.OK) if seen == {codes.OK} else (
            response.entries[0].status if len(seen) == 1 else status(30000, "multiple results")))
        return response

    @_guard(rpc.ChangeInvisibleDurationResponse)
    def ChangeInvisibleDuration(self, request, client: str):
        self._group(request.group.name)
        with self.model.locked():
            code, receipt = self.broker.change_invisible_duration(request.receipt_handle,
                                                                  ms_of(request.invisible_duration))
        if code != codes.OK:
            return rpc.ChangeInvisibleDurationResponse(
                status=status(code, f"receipt handle {request.receipt_handle!r} is invalid or expired"))
        return rpc.ChangeInvisibleDurationResponse(status=status(codes.OK), receipt_handle=receipt or "")

    @_guard(rpc.ForwardMessageToDeadLetterQueueResponse)
    def ForwardMessageToDeadLetterQueue(self, request, client: str):
        self._group(request.group.name)
        with self.model.locked():
            code = self.broker.forward_in_flight_to_dlq(request.receipt_handle)
        message = "OK" if code == codes.OK else f"receipt handle {request.receipt_handle!r} is invalid or expired"
        return rpc.ForwardMessageToDeadLetterQueueResponse(status=status(code, message))

    # ---- not served -------------------------------------------------------------------------

    def _not_implemented(name: str, response_type: type):  # type: ignore[misc]
        async def handler(self, request, context):
            return response_type(status=status(codes.NOT_IMPLEMENTED, f"{name} is not served by the reference"))

        handler.__name__ = name
        return handler

    # PullMessage (server streaming) is left to the base class: gRPC UNIMPLEMENTED
    UpdateOffset = _not_implemented("UpdateOffset", rpc.UpdateOffsetResponse)
    GetOffset = _not_implemented("GetOffset", rpc.GetOffsetResponse)
    QueryOffset = _not_implemented("QueryOffset", rpc.QueryOffsetResponse)
    RecallMessage = _not_implemented("RecallMessage", rpc.RecallMessageResponse)
    SyncLiteSubscription = _not_implemented("SyncLiteSubscription", rpc.SyncLiteSubscriptionResponse)
