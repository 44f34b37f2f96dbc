"""What the broker answers to a send (REMOTING-01): one message (``SendMessageProcessor.sendMessage``, with
``SendMessageRequestHeaderV2``'s one-letter fields; a topic made from the default topic, TOPIC-02; the
store's properties limit, LIMIT-04; a send to a retry topic, RETRY-CONC-11), a batch (``sendBatchMessage``,
DELAY-07), a half message and its end (``EndTransactionProcessor``, TX-01, TX-02), read from
rocketmq-all-4.9.8; each send attempt goes through this broker's injected send faults and is logged
(``send_faults``).
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Callable

from reference_impl.model.broker import Message
from reference_impl.model.simulation import Simulation
from reference_impl.rules import codes, validation
from reference_impl.rules import delay as delay_rules
from reference_impl.rules import transaction as tx_rules

from . import send_faults
from .codec import Command
from .protocol import SEND_MESSAGE, SUCCESS, SYSTEM_ERROR, TOPIC_NOT_EXIST, decode_properties

if TYPE_CHECKING:
    from .handlers import RemotingBroker

V2_FIELDS = {"a": "producerGroup", "b": "topic", "c": "defaultTopic", "d": "defaultTopicQueueNums", "e": "queueId",
             "f": "sysFlag", "g": "bornTimestamp", "h": "flag", "i": "properties", "j": "reconsumeTimes",
             "k": "unitMode", "l": "maxReconsumeTimes", "m": "batch"}
"""``SendMessageRequestHeaderV2``: the short names the V2 send header uses for ``SendMessageRequestHeader``."""
TRANSACTION_PREPARED_TYPE = delay_rules.TRANSACTION_PREPARED_TYPE
"""``MessageSysFlag.TRANSACTION_PREPARED_TYPE``: a half message."""
END_STATES = {8: "COMMIT_MESSAGE", 12: "ROLLBACK_MESSAGE", 0: "UNKNOW"}
"""``EndTransactionRequestHeader.commitOrRollback``: MessageSysFlag commit / rollback / not-type values."""


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
