"""What the name server and the broker answer to each remoting request code, over the shared model
(REMOTING-01). No I/O here: a handler takes a decoded request and returns the response command.

Read from rocketmq-all-4.9.8: ``namesrv/.../processor/DefaultRequestProcessor`` (route by topic, cluster
info), ``broker/.../processor/AdminBrokerProcessor`` (``updateAndCreateTopic``,
``updateAndCreateSubscriptionGroup``), ``broker/.../processor/SendMessageProcessor`` and
``common/.../protocol/header/SendMessageRequestHeaderV2`` (the one-letter fields), ``ClientManageProcessor``
(heart beat), ``RemotingSysResponseCode`` (``REQUEST_CODE_NOT_SUPPORTED``). The 5.x message-type attribute
is read as ``mqadmin updateTopic -a +message.type=FIFO`` sends it (TOPIC-05).
"""
from __future__ import annotations

import json
import struct
from typing import Callable, Protocol

from reference_impl.model.broker import Message, TopicConfig
from reference_impl.model.simulation import Simulation
from reference_impl.rules import (
    codes,
    message_id,
    retry5x,
    sql92,
    storage,
    topic_types,
    validation,
)
from reference_impl.rules import delay as delay_rules
from reference_impl.rules import filter as filter_rules
from reference_impl.rules import transaction as tx_rules

from ..model_service import RealTimeModel
from . import send_faults
from .codec import Command

# request codes (common/.../protocol/RequestCode.java@rocketmq-all-4.9.8)
SEND_MESSAGE, PULL_MESSAGE, QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET = 10, 11, 14, 15
UPDATE_AND_CREATE_TOPIC, GET_MAX_OFFSET, GET_MIN_OFFSET, HEART_BEAT, UNREGISTER_CLIENT = 17, 30, 31, 34, 35
CONSUMER_SEND_MSG_BACK, GET_CONSUMER_LIST_BY_GROUP = 36, 38
GET_BROKER_RUNTIME_INFO, SEARCH_OFFSET_BY_TIMESTAMP = 28, 29
LOCK_BATCH_MQ, UNLOCK_BATCH_MQ = 41, 42
END_TRANSACTION, CHECK_TRANSACTION_STATE, NOTIFY_CONSUMER_IDS_CHANGED = 37, 39, 40
GET_CONSUMER_RUNNING_INFO, SEND_BATCH_MESSAGE = 307, 320
CHECK_CLIENT_CONFIG, UPDATE_BROKER_CONFIG = 46, 25
FLAG_SUBSCRIPTION = 0x4
"""``PullSysFlag``: the pull carries its subscription; without it the broker uses the one of the group's heart beat."""
GET_ROUTEINFO_BY_TOPIC, GET_BROKER_CLUSTER_INFO = 105, 106
UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, SEND_MESSAGE_V2 = 200, 310
# response codes (RemotingSysResponseCode, ResponseCode)
SUCCESS, SYSTEM_ERROR, REQUEST_CODE_NOT_SUPPORTED, TOPIC_NOT_EXIST = 0, 1, 3, 17
PULL_NOT_FOUND, PULL_RETRY_IMMEDIATELY, PULL_OFFSET_MOVED, QUERY_NOT_FOUND = 19, 20, 21, 22
FLAG_COMMIT_OFFSET, FLAG_SUSPEND = 0x1, 0x2
"""``PullSysFlag``: the pull carries the consumer's offset to commit; hold a pull that finds nothing until a
message comes (long polling)."""
TIME_SCALE_KEY = "rmqcTimeScale"
"""A key only ``rmqc serve`` adds to the broker's runtime info: wall seconds per spec second (a real broker
has none, and runs at 1)."""
BROKER_SUSPEND_MAX_MS = 15_000
"""``BrokerConfig.brokerSuspendMaxTimeMillis``."""
CLUSTER = "DefaultCluster"
REBALANCE_LOCK_MAX_LIVE_MS = 60_000
"""``RebalanceLockManager.REBALANCE_LOCK_MAX_LIVE_TIME`` (``rocketmq.broker.rebalance.lockMaxLiveTime``)."""
V2_FIELDS = {"a": "producerGroup", "b": "topic", "c": "defaultTopic", "d": "defaultTopicQueueNums", "e": "queueId",
             "f": "sysFlag", "g": "bornTimestamp", "h": "flag", "i": "properties", "j": "reconsumeTimes",
             "k": "unitMode", "l": "maxReconsumeTimes", "m": "batch"}
"""``SendMessageRequestHeaderV2``: the short names the V2 send header uses for ``SendMessageRequestHeader``."""
NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR = "\x01", "\x02"
TRANSACTION_PREPARED_TYPE = delay_rules.TRANSACTION_PREPARED_TYPE
"""``MessageSysFlag.TRANSACTION_PREPARED_TYPE``: a half message."""
END_STATES = {8: "COMMIT_MESSAGE", 12: "ROLLBACK_MESSAGE", 0: "UNKNOW"}
"""``EndTransactionRequestHeader.commitOrRollback``: MessageSysFlag commit / rollback / not-type values."""
RUNNING_INFO_TIMEOUT_S = 5.0

Handler = Callable[["RemotingBroker", Command], "Command | None"]


def decode_properties(text: str) -> dict[str, str]:
    """``MessageDecoder.string2messageProperties``: name \\x01 value \\x02 ... (a part without \\x01 is skipped)."""
    out = {}
    for item in text.split(PROPERTY_SEPARATOR):
        name, sep, value = item.partition(NAME_VALUE_SEPARATOR)
        if sep:
            out[name] = value
    return out


def _json(data: object) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode("utf-8")


class ClientCalls(Protocol):
    """How the broker reaches a client on its connection (the server's side of broker-to-client calls)."""

    def notify(self, connection: int, request: Command) -> None: ...

    def ask(self, connection: int, request: Command, timeout_s: float) -> Command | None: ...


class NoClientCalls:
    def notify(self, connection: int, request: Command) -> None:
        pass

    def ask(self, connection: int, request: Command, timeout_s: float) -> Command | None:
        return None


class RemotingBroker:
    """The model as one name server and one broker speak for it."""

    def __init__(self, model: RealTimeModel, broker_address: str, broker_name: str = "broker-a",
                 calls: ClientCalls | None = None, *, index: int = 0,
                 cluster: list[tuple[str, str]] | None = None,
                 attempts: send_faults.AttemptLog | None = None,
                 faults: send_faults.ScopedFaults | None = None) -> None:
        """``index``: this broker's place among the served brokers (``broker-a`` is 0); ``cluster``: every served
        broker's (name, address), shared by them, which the name server answers; ``attempts``: the send attempts
        the served brokers took and ``faults`` the send faults injected into them (``send_faults``), shared by
        them."""
        self.model = model
        self.broker_address = broker_address
        self.broker_name = broker_name
        self.index = index
        self.cluster = cluster if cluster is not None else [(broker_name, broker_address)]
        self.attempts = attempts or send_faults.AttemptLog()
        self.faults = faults or send_faults.ScopedFaults()
        self.calls: ClientCalls = calls or NoClientCalls()
        self.consumers: dict[str, dict[str, int]] = {}
        """``ConsumerManager``: group -> client id -> the connection its last heart beat came on."""
        self.producers: dict[str, dict[str, int]] = {}
        """``ProducerManager``: group -> client id -> connection."""
        self.subscriptions: dict[tuple[str, str], tuple[str, str]] = {}
        """``ConsumerManager``'s subscription data: (group, topic) -> (expression type, expression), as the group's
        last heart beat said."""
        self.locks: dict[tuple[str, str, int], tuple[str, int]] = {}
        """``RebalanceLockManager``: (group, topic, queue id) -> (client id, spec ms of its last lock)."""

    def topic_here(self, sim: Simulation, topic: str) -> TopicConfig | None:
        """``topic``'s config if this broker keeps it: every topic is on ``broker-a``; a topic is on the broker of
        index k only once it was made there too (a topic on k + 1 brokers, ``TopicConfig.brokers``)."""
        config = sim.broker.topics.get(topic)
        return config if config is not None and self.index < config.brokers else None

    def model_queue(self, sim: Simulation, topic: str, queue_id: int) -> int:
        """The model's queue id of this broker's queue ``queue_id`` (``TopicConfig.global_queue_id``): the same on
        ``broker-a``; a topic not kept here maps to nothing stored (-1)."""
        if self.index == 0:
            return queue_id
        config = self.topic_here(sim, topic)
        return -1 if config is None else config.global_queue_id(self.broker_name, queue_id)

    def own_queue(self, sim: Simulation, topic: str, model_queue_id: int) -> int:
        """This broker's id of the model's queue (the inverse of ``model_queue``)."""
        if self.index == 0:
            return model_queue_id
        config = sim.broker.topics.get(topic)
        return model_queue_id if config is None else model_queue_id - self.index * config.stride

    def connection_closed(self, connection: int) -> None:
        """``ClientHousekeepingService.onChannelClose``: a closed connection's producers and consumers leave
        their groups; the consumers left in a changed group are told (NOTIFY_CONSUMER_IDS_CHANGED)."""
        with self.model.locked():
            for clients in self.producers.values():
                for client in [c for c, conn in clients.items() if conn == connection]:
                    del clients[client]
            for group, clients in self.consumers.items():
                gone = [c for c, conn in clients.items() if conn == connection]
                for client in gone:
                    del clients[client]
                if gone:
                    self.consumer_ids_changed(group)

    def consumer_ids_changed(self, group: str) -> None:
        """``Broker2Client.notifyConsumerIdsChanged``: a one-way request to every consumer of the group."""
        for connection in set(self.consumers.get(group, {}).values()):
            self.calls.notify(connection, Command(NOTIFY_CONSUMER_IDS_CHANGED, 0, 0, ext={"consumerGroup": group}))

    def check_transaction(self, message: Message, check_times: int) -> None:
        """``Broker2Client.checkProducerTransactionState``: a one-way CHECK_TRANSACTION_STATE with the half
        message as its body, to one connection of the half's producer group (none: nobody is asked)."""
        group = message.properties.get("PGROUP", "")
        connections = sorted(set(self.producers.get(group, {}).values()))
        if not connections:
            return
        uniq = message.properties.get("UNIQ_KEY", "")
        ext = {"tranStateTableOffset": str(message.queue_offset), "commitLogOffset": str(message.commit_offset),
               "msgId": uniq, "transactionId": uniq, "offsetMsgId": self.offset_msg_id(message.commit_offset)}
        self.calls.notify(connections[check_times % len(connections)],
                          Command(CHECK_TRANSACTION_STATE, 0, 0, ext=ext, body=self.commitlog_unit(message)))

    def commitlog_unit(self, m: Message) -> bytes:
        """A stored message as the commit log holds it and pulls and checks carry it (STORE-01), with its
        timestamps as epoch milliseconds."""
        queue_id = self.own_queue(self.model.sim, m.topic, m.queue_id)  # called with the model held
        return storage.encode_commitlog(storage.CommitLogMessage(
            m.topic, m.body, queue_id, 0, m.queue_offset, m.commit_offset,
            storage.reset_transaction_value(0, m.tran_type), self.model.spec_wall_ms(m.born_ms), ("127.0.0.1", 0),
            self.model.spec_wall_ms(m.store_ms), ("127.0.0.1", 0), m.reconsume_times, 0, dict(m.properties)))

    def offset_msg_id(self, commit_offset: int) -> str:
        """``MessageDecoder.createMessageId``: the store host and the commit-log offset."""
        host, _, port = self.broker_address.rpartition(":")
        return message_id.offset_msg_id(host, int(port), commit_offset)

    def pull_held(self, request: Command, until_ms: int) -> Command | None:
        """A suspended pull the server holds: its answer, or None while it waits (``pull_message``)."""
        return self._answered(request, lambda: pull_message(self, request, until_ms))

    def handle(self, request: Command) -> Command | None:
        handler = HANDLERS.get(request.code)
        if handler is None:
            return request.response(REQUEST_CODE_NOT_SUPPORTED, f" request type {request.code} not supported")
        return self._answered(request, lambda: handler(self, request))  # type: ignore[return-value]

    @staticmethod
    def _answered(request: Command, answer: Callable[[], Command | None]) -> Command | None:
        """A handler's answer; a missing or malformed header field is SYSTEM_ERROR naming the field."""
        try:
            return answer()
        except (KeyError, ValueError) as exc:
            return request.response(SYSTEM_ERROR, f"bad request {request.code}: {exc}")


def get_route(b: RemotingBroker, request: Command) -> Command:
    """``DefaultRequestProcessor.getRouteInfoByTopic``: queue data and broker data of every served broker that keeps
    the topic, or TOPIC_NOT_EXIST."""
    topic = request.ext["topic"]
    with b.model.locked() as sim:
        config = sim.broker.topics.get(topic)
        if config is None:
            return request.response(TOPIC_NOT_EXIST, f"No topic route info in name server for the topic: {topic}")
        kept = b.cluster[:config.brokers]
        route = {"orderTopicConf": None, "filterServerTable": {},
                 "queueDatas": [{"brokerName": name, "readQueueNums": config.read_queues,
                                 "writeQueueNums": config.write_queues, "perm": config.perm, "topicSysFlag": 0}
                                for name, _ in kept],
                 "brokerDatas": [{"cluster": CLUSTER, "brokerName": name, "brokerAddrs": {"0": address}}
                                 for name, address in kept]}
    return request.response(SUCCESS, body=_json(route))


def get_cluster_info(b: RemotingBroker, request: Command) -> Command:
    """``DefaultRequestProcessor.getBrokerClusterInfo``: one cluster of the served brokers."""
    info = {"brokerAddrTable": {name: {"cluster": CLUSTER, "brokerName": name, "brokerAddrs": {"0": address}}
                                for name, address in b.cluster},
            "clusterAddrTable": {CLUSTER: [name for name, _ in b.cluster]}}
    return request.response(SUCCESS, body=_json(info))


def _message_type_attribute(attributes: str | None) -> str:
    """``+message.type=FIFO`` (the ``attributes`` field of an update-topic request), NORMAL without one."""
    for part in (attributes or "").split(","):
        name, _, value = part.strip().lstrip("+").partition("=")
        if name == "message.type" and value:
            return value
    return "NORMAL"


def update_topic(b: RemotingBroker, request: Command) -> Command:
    """``AdminBrokerProcessor.updateAndCreateTopic``: queue numbers, perm and the 5.x message type."""
    ext = request.ext
    topic = ext["topic"]
    read_queues, write_queues = int(ext.get("readQueueNums", 16)), int(ext.get("writeQueueNums", 16))
    with b.model.locked() as sim:
        message_type = _message_type_attribute(ext.get("attributes"))
        try:
            topic_types.topic_message_type(message_type, sim.release)
        except ValueError as exc:
            return request.response(SYSTEM_ERROR, str(exc))
        known = sim.broker.topics.get(topic)
        brokers = known.brokers if known is not None else 1
        if b.index > 0:  # the same topic on one more broker: the model keeps one queue layout for all of them
            if known is None or b.index > known.brokers or (known.read_queues, known.write_queues) != \
                    (read_queues, write_queues):
                return request.response(SYSTEM_ERROR, f"rmqc serve makes {topic} on {b.broker_name} only after "
                                        "the brokers before it, with the same queue numbers")
            brokers = max(brokers, b.index + 1)
        sim.broker.create_topic(topic, read_queues, write_queues, int(ext.get("perm", 6)), message_type, brokers)
    return request.response(SUCCESS)


def update_group(b: RemotingBroker, request: Command) -> Command:
    """``AdminBrokerProcessor.updateAndCreateSubscriptionGroup``: the body is a ``SubscriptionGroupConfig``."""
    try:
        config = json.loads(request.body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"the body is not a SubscriptionGroupConfig: {exc}") from None
    if not isinstance(config, dict) or not isinstance(config.get("groupName"), str):
        raise ValueError("the SubscriptionGroupConfig has no groupName")
    policy = config.get("groupRetryPolicy")
    retry = retry5x.group_retry_policy(policy) if isinstance(policy, dict) else None
    with b.model.locked() as sim:
        group = sim.broker.group(config["groupName"])
        group.retry_max_times = int(config.get("retryMaxTimes", group.retry_max_times))
        group.fifo = bool(config.get("consumeMessageOrderly", group.fifo))
        group.retry_queue_nums = int(config.get("retryQueueNums", group.retry_queue_nums))
        if retry is not None:
            group.retry_policy, group.customized_next_ms, group.exponential_ms = retry
    return request.response(SUCCESS)


def _send_header(request: Command) -> dict[str, str]:
    return request.ext if request.code == SEND_MESSAGE else {V2_FIELDS.get(k, k): v for k, v in request.ext.items()}


def send_message(b: RemotingBroker, request: Command) -> Command | None:
    """A send as ``_store_sent`` answers it, through this broker's injected send faults, logged (``send_faults``)."""
    properties = decode_properties(_send_header(request).get("properties", ""))
    return _attempt(b, request, [(properties.get("UNIQ_KEY", ""), properties.get("KEYS"))],
                    lambda: _store_sent(b, request))


def _attempt(b: RemotingBroker, request: Command, messages: list[tuple[str, str | None]],
             store: Callable[[], Command]) -> Command | None:
    """One send attempt on this broker: an injected fault for its topic, taken by this broker's name
    (``send_faults.ScopedFaults``), decides whether it is stored and what it is answered (no answer: None), and
    the attempt is logged for each of its ``messages`` (client id, key)."""
    fault = b.faults.take(b.broker_name, request.ext.get("topic") or request.ext.get("b") or "")
    code, stores = (SUCCESS, True) if fault is None else send_faults.send_fault(b.broker_name, fault)
    answer = store() if stores else None
    if answer is not None and answer.code != SUCCESS:  # the store refused it: that is the answer
        code = answer.code
    elif answer is not None and code not in (SUCCESS, None):  # stored, answered as injected (FLUSH_DISK_TIMEOUT)
        answer = request.response(code, "injected by rmqc serve", dict(answer.ext))
    elif answer is None and code is not None:  # refused as injected
        answer = request.response(code, f"injected by rmqc serve: {fault}")
    if code is None:
        answer = send_faults.NO_ANSWER
    for uniq_id, key in messages:
        b.attempts.add(b.broker_name, uniq_id, key, "timeout" if code is None else str(code),
                       stores and code in (SUCCESS, None, codes.R_FLUSH_DISK_TIMEOUT))
    return answer


def _store_sent(b: RemotingBroker, request: Command) -> Command:
    """``SendMessageProcessor.sendMessage``: store the message, answer its offset message id, queue and offset."""
    ext = _send_header(request)
    topic = ext["topic"]
    properties = decode_properties(ext.get("properties", ""))
    with b.model.locked() as sim:
        config = b.topic_here(sim, topic)
        if config is None and b.index > 0:
            return request.response(TOPIC_NOT_EXIST, f"topic[{topic}] not exist on {b.broker_name}, apply first please!")
        if config is None:  # msgCheck -> createTopicInSendMessageMethod from the default topic (TOPIC-02)
            default = sim.broker.topics.get(ext.get("defaultTopic", ""))
            try:
                made = validation.auto_create_topic(topic, None if default is None else validation.TopicConfig(
                    default.name, default.read_queues, default.write_queues, default.perm),
                    int(ext.get("defaultTopicQueueNums", 4)))
            except codes.RocketMQError as exc:
                return request.response(TOPIC_NOT_EXIST, exc.message)
            config = sim.broker.create_topic(topic, made.read_queues, made.write_queues, made.perm)
        try:
            validation.check_properties_store(ext.get("properties", ""))  # LIMIT-04, the store's limit
        except codes.RocketMQError as exc:
            return request.response(exc.code, exc.message)
        msg_id = properties.get("UNIQ_KEY") or sim.new_msg_id()
        queue_id = b.model_queue(sim, topic, int(ext.get("queueId", 0)) % config.write_queues)
        if properties.get("TRAN_MSG") == "true" and int(ext.get("sysFlag", 0)) & TRANSACTION_PREPARED_TYPE:
            # SendMessageProcessor -> TransactionalMessageService.prepareMessage; PGROUP names the producer group
            group = tx_rules.half_producer_group(topic, properties.get("PGROUP") or ext.get("producerGroup", ""),
                                                 through_proxy=False)
            immunity = properties.get("CHECK_IMMUNITY_TIME_IN_SECONDS")
            half = sim.broker.put_half(topic, queue_id, request.body, properties, msg_id, group,
                                       int(immunity) if immunity and immunity.isdigit() else None)
            message = half.message
            sim.broker.tx_checkers[group] = b.check_transaction
            _note_sent(sim, topic, message, properties)
        else:
            # handleRetryAndDLQ (RETRY-CONC-11): a send to %RETRY%group carries its reconsume times (and the
            # client's max) in the header; past the max the message goes to %DLQ%group
            retry = topic.startswith("%RETRY%")
            stored = _store(sim, topic, queue_id, request.body, properties, msg_id,
                            header_reconsume_times=int(ext.get("reconsumeTimes") or 0) if retry else None,
                            header_max_reconsume_times=int(ext["maxReconsumeTimes"])
                            if retry and ext.get("maxReconsumeTimes") not in (None, "") else None)
            if isinstance(stored, tuple):
                return request.response(*stored)
            message = stored
        answer = {"msgId": b.offset_msg_id(message.commit_offset),
                  "queueId": str(b.own_queue(sim, topic, message.queue_id)), "queueOffset": str(message.queue_offset)}
    return request.response(SUCCESS, ext=answer)


def _store(sim: Simulation, topic: str, queue_id: int, body: bytes, properties: dict[str, str],
           msg_id: str, header_reconsume_times: int | None = None,
           header_max_reconsume_times: int | None = None) -> Message | tuple[int, str]:
    """One message into the model's store, noted as sent; or the store's refusal (code, remark). The header's
    reconsume times matter on a send to a retry topic (``SendMessageProcessor.handleRetryAndDLQ``)."""
    put = sim.broker.put(topic, queue_id, body, properties, msg_id, born_ms=sim.clock.now_ms,
                         header_reconsume_times=header_reconsume_times,
                         header_max_reconsume_times=header_max_reconsume_times)
    if put.code != codes.R_SUCCESS or put.message is None:
        return put.code, put.remark or "store failed"
    _note_sent(sim, topic, put.message, properties)
    return put.message


def _note_sent(sim: Simulation, topic: str, message: Message, properties: dict[str, str]) -> None:
    """The server's event log: a send stored (a half under the topic it was sent to)."""
    sim.emit("SEND_OK", topic=topic, msg_id=message.msg_id, key=properties.get("KEYS"),
             queue_id=message.queue_id, queue_offset=message.queue_offset)


def decode_batch_body(body: bytes) -> list[tuple[bytes, dict[str, str]]]:
    """``MessageDecoder.encodeMessages``' layout, one unit after another: total size, magic, body CRC, flag,
    body length and body, properties length (2 bytes) and properties; (body, properties) of each."""
    out, pos = [], 0
    while pos < len(body):
        if pos + 20 > len(body):
            raise ValueError(f"a batch unit at byte {pos} is truncated")
        total, _magic, _crc, _flag, body_length = struct.unpack_from(">iiiii", body, pos)
        end = pos + total
        if total < 22 or end > len(body) or body_length < 0 or pos + 20 + body_length + 2 > end:
            raise ValueError(f"a batch unit at byte {pos} has sizes {total} / {body_length} past the body")
        payload = body[pos + 20:pos + 20 + body_length]
        props_length = struct.unpack_from(">h", body, pos + 20 + body_length)[0]
        start = pos + 22 + body_length
        properties = decode_properties(body[start:start + props_length].decode("utf-8", "replace"))
        out.append((payload, properties))
        pos = end
    return out


def send_batch(b: RemotingBroker, request: Command) -> Command | None:
    """A batch as ``_store_batch`` answers it, through this broker's send faults: one attempt of every unit."""
    units = decode_batch_body(request.body)
    return _attempt(b, request, [(p.get("UNIQ_KEY", ""), p.get("KEYS")) for _, p in units],
                    lambda: _store_batch(b, request, units))


def _store_batch(b: RemotingBroker, request: Command, units: list[tuple[bytes, dict[str, str]]]) -> Command:
    """``SendMessageProcessor.sendBatchMessage``: the units of the body stored in order in one queue; a
    delayed or transactional batch is MESSAGE_ILLEGAL (DELAY-07); the answer's ``msgId`` lists every unit's
    offset message id, comma-separated, and ``queueOffset`` is the first's."""
    ext = {V2_FIELDS.get(k, k): v for k, v in request.ext.items()}
    topic, queue_id = ext["topic"], int(ext.get("queueId", 0))
    batch_properties = decode_properties(ext.get("properties", ""))
    if not units:
        return request.response(codes.R_MESSAGE_ILLEGAL, "the batch is empty")
    tran_type = TRANSACTION_PREPARED_TYPE if batch_properties.get("TRAN_MSG") == "true" else 0
    if delay_rules.store_rejects_batch(tran_type, int(batch_properties.get("DELAY", "0") or 0)):
        return request.response(codes.R_MESSAGE_ILLEGAL, "some delayed or transactional messages in the batch")
    with b.model.locked() as sim:
        config = b.topic_here(sim, topic)
        if config is None:
            return request.response(TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!")
        stored = []
        for payload, properties in units:
            message = _store(sim, topic, b.model_queue(sim, topic, queue_id % config.write_queues), payload,
                             properties, properties.get("UNIQ_KEY") or sim.new_msg_id())
            if isinstance(message, tuple):
                return request.response(*message)
            stored.append(message)
        own_queue = b.own_queue(sim, topic, stored[0].queue_id)
    return request.response(SUCCESS, ext={"msgId": ",".join(b.offset_msg_id(m.commit_offset) for m in stored),
                                          "queueId": str(own_queue), "queueOffset": str(stored[0].queue_offset)})


def _queue(sim: Simulation, topic: str, queue_id: int) -> list:
    return sim.broker.queues.get((topic, queue_id), [])


def pull_suspend_until_ms(b: RemotingBroker, request: Command) -> int | None:
    """The spec instant up to which the broker may hold a pull with FLAG_SUSPEND (its ``suspendTimeoutMillis``,
    at most 15 s); None for a pull it answers at once."""
    ext = request.ext
    if not int(ext.get("sysFlag", 0)) & FLAG_SUSPEND:
        return None
    wait_ms = min(int(ext.get("suspendTimeoutMillis", BROKER_SUSPEND_MAX_MS)), BROKER_SUSPEND_MAX_MS)
    with b.model.locked() as sim:
        return sim.clock.now_ms + wait_ms


def pull_message(b: RemotingBroker, request: Command, held_until_ms: int | None = None) -> Command | None:
    """``PullMessageProcessor.processRequest`` over ``DefaultMessageStore.getMessage``: up to ``maxMsgNums``
    messages from ``queueOffset`` as commit-log units; at the end of the queue a suspended pull waits up to
    ``suspendTimeoutMillis`` (at most 15 s) for a message, then PULL_NOT_FOUND; an offset past the end or
    before the start is PULL_OFFSET_MOVED with the offset to use. Subscription filtering comes later.

    The waiting is the server's (it holds the pull without a thread): while ``held_until_ms`` has not passed
    and nothing is at the offset this answers None, and the server asks again when the model changes."""
    ext = request.ext
    topic, offset = ext["topic"], int(ext["queueOffset"])
    most = max(1, min(int(ext.get("maxMsgNums", 32)), 32))
    suspend = int(ext.get("sysFlag", 0)) & FLAG_SUSPEND
    with b.model.locked() as sim:
        if b.topic_here(sim, topic) is None:
            return request.response(TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!")
        queue_id = b.model_queue(sim, topic, int(ext["queueId"]))
        if suspend and int(ext.get("sysFlag", 0)) & FLAG_COMMIT_OFFSET and "commitOffset" in ext:
            # storeOffsetEnable: a pull the broker may suspend commits the offset it carries
            sim.broker.offsets[(ext["consumerGroup"], topic, queue_id)] = int(ext["commitOffset"])
        if held_until_ms is not None and suspend and offset == len(_queue(sim, topic, queue_id)) \
                and sim.clock.now_ms < held_until_ms:
            return None
        queue = _queue(sim, topic, queue_id)
        bounds = {"minOffset": "0", "maxOffset": str(len(queue)), "suggestWhichBrokerId": "0"}
        if offset < 0 or offset > len(queue):
            moved = 0 if offset < 0 else len(queue)
            return request.response(PULL_OFFSET_MOVED, "the offset is outside the queue",
                                    {**bounds, "nextBeginOffset": str(moved)})
        if offset == len(queue):
            return request.response(PULL_NOT_FOUND, "no new message", {**bounds, "nextBeginOffset": str(offset)})
        kind, expression = ext.get("expressionType") or "TAG", ext.get("subscription")
        known = b.subscriptions.get((ext.get("consumerGroup", ""), topic))
        if not int(ext.get("sysFlag", 0)) & FLAG_SUBSCRIPTION and known and known[0] == "SQL92":
            kind, expression = known  # the heart beat's (a tag subscription is filtered again by its client)
        wanted = filter_rules.parse_tag_expression(expression) if kind == "TAG" else None
        # SQL92 (ExpressionMessageFilter, FILTER-06): the broker evaluates the message's properties; not on a retry
        # topic (filterSupportRetry is off by default, FILTER-04)
        sql = None
        if kind == "SQL92" and not topic.startswith("%RETRY%") and sim.broker.enable_property_filter:
            try:
                sql = sql92.compile_sql(expression or "", sim.release)
            except sql92.SqlParseError as exc:
                return request.response(sql92.SUBSCRIPTION_PARSE_FAILED, str(exc))
        scanned = queue[offset:offset + most * 4]  # like getMessage, scan on past the units the filter drops
        batch = [m for m in scanned
                 if (wanted is None or filter_rules.broker_tag_match(wanted, filter_rules.tags_code(m.tags)))
                 and (sql is None or sql92.sql_matches(sql, m.properties))][:most]
        next_offset = batch[-1].queue_offset + 1 if len(batch) == most else offset + len(scanned)
        if not batch:
            return request.response(PULL_RETRY_IMMEDIATELY, "no matched message",
                                    {**bounds, "nextBeginOffset": str(next_offset)})
        body = b"".join(b.commitlog_unit(m) for m in batch)
    return request.response(SUCCESS, ext={**bounds, "nextBeginOffset": str(next_offset)}, body=body)


def query_consumer_offset(b: RemotingBroker, request: Command) -> Command:
    """``ConsumerManageProcessor.queryConsumerOffset``: the committed offset; none committed and the queue's
    start still in memory (this broker's queues never leave it) gives 0."""
    ext = request.ext
    with b.model.locked() as sim:
        queue_id = b.model_queue(sim, ext["topic"], int(ext["queueId"]))
        offset = sim.broker.offsets.get((ext["consumerGroup"], ext["topic"], queue_id), 0)
    return request.response(SUCCESS, ext={"offset": str(offset)})


def update_consumer_offset(b: RemotingBroker, request: Command) -> Command:
    """``ConsumerManageProcessor.updateConsumerOffset``."""
    ext = request.ext
    with b.model.locked() as sim:
        queue_id = b.model_queue(sim, ext["topic"], int(ext["queueId"]))
        sim.broker.offsets[(ext["consumerGroup"], ext["topic"], queue_id)] = int(ext["commitOffset"])
    return request.response(SUCCESS)


def queue_bound(b: RemotingBroker, request: Command) -> Command:
    """``AdminBrokerProcessor.getMaxOffset`` / ``getMinOffset``: the queue's end, or 0."""
    with b.model.locked() as sim:
        topic = request.ext["topic"]
        end = len(_queue(sim, topic, b.model_queue(sim, topic, int(request.ext["queueId"]))))
    return request.response(SUCCESS, ext={"offset": str(end if request.code == GET_MAX_OFFSET else 0)})


def heart_beat(b: RemotingBroker, request: Command) -> Command:
    """``ClientManageProcessor.heartBeat``: each consumer group in the ``HeartbeatData`` registers the client
    and gets its ``%RETRY%group`` topic (``createTopicInSendMessageBackMethod``, the group's retry queues)."""
    try:
        data = json.loads(request.body.decode("utf-8") or "{}")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"the body is not HeartbeatData: {exc}") from None
    client = str(data.get("clientID", ""))
    with b.model.locked() as sim:
        for producer in data.get("producerDataSet") or ():
            if producer.get("groupName"):
                b.producers.setdefault(str(producer["groupName"]), {})[client] = request.connection
        for consumer in data.get("consumerDataSet") or ():
            group = str(consumer.get("groupName", ""))
            if not group:
                continue
            config = sim.broker.group(group)
            sim.broker.ensure_topic(f"%RETRY%{group}", config.retry_queue_nums)
            for subscription in consumer.get("subscriptionDataSet") or ():
                if subscription.get("topic"):
                    b.subscriptions[(group, str(subscription["topic"]))] = (
                        str(subscription.get("expressionType") or "TAG"), str(subscription.get("subString") or "*"))
            known = b.consumers.setdefault(group, {})
            joined = client not in known
            known[client] = request.connection
            if joined:  # ConsumerManager.registerConsumer: a new channel changes the group
                b.consumer_ids_changed(group)
    return request.response(SUCCESS)


def unregister_client(b: RemotingBroker, request: Command) -> Command:
    """``ClientManageProcessor.unregisterClient``: the client leaves its consumer group."""
    group = request.ext.get("consumerGroup")
    if group:
        with b.model.locked():
            if b.consumers.get(group, {}).pop(request.ext.get("clientID", ""), None) is not None:
                b.consumer_ids_changed(group)
    producer_group = request.ext.get("producerGroup")
    if producer_group:
        with b.model.locked():
            b.producers.get(producer_group, {}).pop(request.ext.get("clientID", ""), None)
    return request.response(SUCCESS)


def consumer_list(b: RemotingBroker, request: Command) -> Command:
    """``ConsumerManageProcessor.getConsumerListByGroup``: the group's client ids, or SYSTEM_ERROR."""
    group = request.ext["consumerGroup"]
    with b.model.locked():
        ids = sorted(b.consumers.get(group, {}))
    if not ids:
        return request.response(SYSTEM_ERROR, f"no consumer for this group, {group}")
    return request.response(SUCCESS, body=_json({"consumerIdList": ids}))


def send_back(b: RemotingBroker, request: Command) -> Command:
    """``SendMessageProcessor.consumerSendMsgBack``: the message at ``offset`` goes back with its delay level
    (to the retry topic, or the DLQ past the maximum) by the model's rule (RETRY-CONC-04)."""
    ext = request.ext
    if b.faults.take_send_back(ext["group"]):
        return request.response(SYSTEM_ERROR, "injected by rmqc serve: send_back")
    with b.model.locked() as sim:
        offset = int(ext["offset"])
        if not 0 <= offset < len(sim.broker.commit_log):
            return request.response(SYSTEM_ERROR, f"look message by offset failed, {offset}")
        message = sim.broker.commit_log[offset]
        max_times = int(ext["maxReconsumeTimes"]) if "maxReconsumeTimes" in ext else None
        code = sim.broker.consumer_send_msg_back(ext["group"], message, ext.get("originTopic") or message.topic,
                                                 int(ext.get("delayLevel", 0)), max_times)
    return request.response(code)


def _queues_of(body: bytes) -> tuple[str, str, list[dict]]:
    data = json.loads(body.decode("utf-8") or "{}")
    if not isinstance(data, dict) or not isinstance(data.get("mqSet"), list):
        raise ValueError("the body has no mqSet")
    return str(data.get("consumerGroup", "")), str(data.get("clientId", "")), data["mqSet"]


def lock_batch(b: RemotingBroker, request: Command) -> Command:
    """``AdminBrokerProcessor.lockBatchMQ`` over ``RebalanceLockManager.tryLockBatch``: each queue free, held
    by the same client, or held past ``REBALANCE_LOCK_MAX_LIVE_MS`` is (re)locked to the client and named
    in ``lockOKMQSet``; queues another client holds are left out."""
    group, client, queues = _queues_of(request.body)
    granted = []
    with b.model.locked() as sim:
        now = sim.clock.now_ms
        for mq in queues:
            key = (group, str(mq["topic"]), b.model_queue(sim, str(mq["topic"]), int(mq["queueId"])))
            holder = b.locks.get(key)
            if holder is None or holder[0] == client or now - holder[1] > REBALANCE_LOCK_MAX_LIVE_MS:
                b.locks[key] = (client, now)
                granted.append(mq)
    return request.response(SUCCESS, body=_json({"lockOKMQSet": granted}))


def unlock_batch(b: RemotingBroker, request: Command) -> Command:
    """``AdminBrokerProcessor.unlockBatchMQ``: the client's locks on these queues go."""
    group, client, queues = _queues_of(request.body)
    with b.model.locked() as sim:
        for mq in queues:
            key = (group, str(mq["topic"]), b.model_queue(sim, str(mq["topic"]), int(mq["queueId"])))
            if b.locks.get(key, ("",))[0] == client:
                del b.locks[key]
    return request.response(SUCCESS)


def search_offset(b: RemotingBroker, request: Command) -> Command:
    """``AdminBrokerProcessor.searchOffsetByTimestamp`` (``ConsumeQueue.getOffsetInQueueByTime``): the first
    offset whose message was stored at or after the time; the queue's end when none was."""
    ext = request.ext
    wanted = int(ext["timestamp"])
    with b.model.locked() as sim:
        queue = _queue(sim, ext["topic"], b.model_queue(sim, ext["topic"], int(ext["queueId"])))
        offset = next((m.queue_offset for m in queue if b.model.spec_wall_ms(m.store_ms) >= wanted), len(queue))
    return request.response(SUCCESS, ext={"offset": str(offset)})


def end_transaction(b: RemotingBroker, request: Command) -> Command:
    """``EndTransactionProcessor.processRequest``: commit or roll back the half at ``commitLogOffset``; an
    unknown state leaves it to the checks (TX-01, TX-02). Usually one-way."""
    ext = request.ext
    state = END_STATES.get(int(ext.get("commitOrRollback", 0)), "UNKNOW")
    with b.model.locked() as sim:
        offset = int(ext["commitLogOffset"])
        half = next((h for h in sim.broker.halves if h.message.commit_offset == offset), None)
        if half is None:
            return request.response(SYSTEM_ERROR, "Find prepared transaction message failed")
        error = sim.broker.end_transaction(half, tx_rules.LocalTransactionState[state],  # type: ignore[arg-type]
                                           ext.get("producerGroup", ""))
    return request.response(SYSTEM_ERROR, error) if error else request.response(SUCCESS)


def consumer_running_info(b: RemotingBroker, request: Command) -> Command:
    """``AdminBrokerProcessor.getConsumerRunningInfo``: the request goes on to the client's connection
    (``Broker2Client.callClient``) and its answer comes back; a client not connected is SYSTEM_ERROR."""
    ext = request.ext
    with b.model.locked():
        connection = b.consumers.get(ext["consumerGroup"], {}).get(ext["clientId"])
    if connection is None:
        return request.response(SYSTEM_ERROR, f"The Consumer <{ext['consumerGroup']}> <{ext['clientId']}> not online")
    answer = b.calls.ask(connection, Command(GET_CONSUMER_RUNNING_INFO, 0, 0, ext=dict(ext)), RUNNING_INFO_TIMEOUT_S)
    if answer is None:
        return request.response(SYSTEM_ERROR, f"the consumer {ext['clientId']} did not answer in time")
    return request.response(answer.code, answer.remark, dict(answer.ext), answer.body)


def update_broker_config(b: RemotingBroker, request: Command) -> Command:
    """``AdminBrokerProcessor.updateBrokerConfig`` (``mqadmin updateBrokerConfig``): the body is a properties
    text; the keys this broker models take effect (``enablePropertyFilter``), the others are kept as a broker
    keeps a key it does not use."""
    text = request.body.decode("utf-8", "replace")
    settings = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and not line.lstrip().startswith("#"):
            settings[name.strip()] = value.strip()
    with b.model.locked() as sim:
        if "enablePropertyFilter" in settings:
            sim.broker.enable_property_filter = settings["enablePropertyFilter"].lower() == "true"
    return request.response(SUCCESS)


def check_client_config(b: RemotingBroker, request: Command) -> Command:
    """``ClientManageProcessor.checkClientConfig``: a consumer that subscribes by other than a tag asks at its
    start whether the broker filters that way (``enablePropertyFilter``) and whether its expression compiles
    (FILTER-04, FILTER-05); the remark is the compiler's own message."""
    try:
        data = json.loads(request.body.decode("utf-8") or "{}")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"the body is not a CheckClientRequestBody: {exc}") from None
    subscription = data.get("subscriptionData") or {}
    kind = subscription.get("expressionType") or "TAG"
    if kind == "TAG":  # ExpressionType.isTagType
        return request.response(SUCCESS)
    with b.model.locked() as sim:
        enabled, release = sim.broker.enable_property_filter, sim.release
    if not enabled:
        return request.response(SYSTEM_ERROR, f"The broker does not support consumer to filter message by {kind}")
    try:
        sql92.compile_sql(str(subscription.get("subString") or ""), release)
    except sql92.SqlParseError as exc:
        return request.response(sql92.SUBSCRIPTION_PARSE_FAILED, str(exc))
    return request.response(SUCCESS)


def runtime_info(b: RemotingBroker, request: Command) -> Command:
    """``AdminBrokerProcessor.getBrokerRuntimeInfo``: a ``KVTable`` of the broker's figures; here the version,
    the message count put so far and ``rmqcTimeScale`` (``TIME_SCALE_KEY``)."""
    with b.model.locked() as sim:
        table = {"brokerVersionDesc": f"V{sim.release.replace('.', '_')}", "msgPutTotalTodayNow":
                 str(len(sim.broker.commit_log)), TIME_SCALE_KEY: repr(b.model.time_scale)}
    return request.response(SUCCESS, body=_json({"table": table}))


HANDLERS: dict[int, Handler] = {
    GET_ROUTEINFO_BY_TOPIC: get_route, GET_BROKER_CLUSTER_INFO: get_cluster_info,
    UPDATE_AND_CREATE_TOPIC: update_topic, UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: update_group,
    SEND_MESSAGE: send_message, SEND_MESSAGE_V2: send_message, HEART_BEAT: heart_beat,
    UNREGISTER_CLIENT: unregister_client, GET_CONSUMER_LIST_BY_GROUP: consumer_list, CONSUMER_SEND_MSG_BACK: send_back,
    PULL_MESSAGE: pull_message, QUERY_CONSUMER_OFFSET: query_consumer_offset,
    UPDATE_CONSUMER_OFFSET: update_consumer_offset, GET_MAX_OFFSET: queue_bound, GET_MIN_OFFSET: queue_bound,
    GET_BROKER_RUNTIME_INFO: runtime_info, LOCK_BATCH_MQ: lock_batch, UNLOCK_BATCH_MQ: unlock_batch,
    SEARCH_OFFSET_BY_TIMESTAMP: search_offset, END_TRANSACTION: end_transaction,
    GET_CONSUMER_RUNNING_INFO: consumer_running_info, SEND_BATCH_MESSAGE: send_batch,
    CHECK_CLIENT_CONFIG: check_client_config, UPDATE_BROKER_CONFIG: update_broker_config,
    send_faults.INJECT_SEND_FAULT: lambda b, r: send_faults.inject(r, b.broker_name, b.faults),
    send_faults.SEND_ATTEMPTS: lambda b, r: send_faults.attempts_answer(r, b.attempts),
}
