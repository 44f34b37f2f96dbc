"""Between the model's records and the ``apache.rocketmq.v2`` messages. Pure functions, no state.

The stubs are the ones the official SDK package ships (``rocketmq.grpc_protocol``).
"""
from __future__ import annotations

import hashlib
from typing import Mapping

from rocketmq.grpc_protocol import definition_pb2 as pb

from reference_impl.model.broker import InFlight, Message, TopicConfig
from reference_impl.rules import retry5x, topic_types

SYSTEM_PROPERTY_KEYS = ("UNIQ_KEY", "KEYS", "TAGS", "__SHARDINGKEY", "TIMER_DELIVER_MS", "TIMER_OUT_MS",
                        "REAL_TOPIC", "REAL_QID", "RETRY_TOPIC", "ORIGIN_MESSAGE_ID", "DELAY", "TRAN_MSG", "PGROUP",
                        "MSG_TYPE", "ORIGIN_GROUP")
"""Properties the model keeps that travel in ``SystemProperties`` (or not at all), not as user properties."""

MESSAGE_TYPE_NAMES = {"NORMAL": pb.NORMAL, "FIFO": pb.FIFO, "DELAY": pb.DELAY, "TRANSACTION": pb.TRANSACTION,
                      "PRIORITY": pb.PRIORITY, "LITE": pb.LITE}


def status(code: int, message: str = "OK") -> pb.Status:
    return pb.Status(code=code, message=message)


def ms_of(value) -> int:
    """A protobuf ``Duration`` or ``Timestamp`` in milliseconds."""
    return value.seconds * 1000 + value.nanos // 1_000_000


def set_ms(target, ms: int) -> None:
    """Fill a protobuf ``Duration`` or ``Timestamp`` from milliseconds."""
    target.seconds = ms // 1000
    target.nanos = (ms % 1000) * 1_000_000


def endpoints(host: str, port: int) -> pb.Endpoints:
    ends = pb.Endpoints(scheme=pb.IPv4)
    ends.addresses.add(host=host, port=port)
    return ends


def accept_types(config: TopicConfig, release: str) -> list[int]:
    """The route's accepted message types of a topic's queues (TOPIC-05)."""
    return [MESSAGE_TYPE_NAMES.get(name, pb.MESSAGE_TYPE_UNSPECIFIED)
            for name in topic_types.route_accept_types(config.message_type, release)]


def route_queues(config: TopicConfig, host: str, port: int, release: str,
                 namespace: str = "") -> list[pb.MessageQueue]:
    """One ``MessageQueue`` per queue of the topic on each broker, master broker id 0, READ_WRITE."""
    out = []
    for broker in config.broker_names():
        for qid in range(max(config.read_queues, config.write_queues)):
            readable, writable = qid < config.read_queues, qid < config.write_queues
            permission = pb.READ_WRITE if readable and writable else (pb.READ if readable else pb.WRITE)
            queue = pb.MessageQueue(topic=pb.Resource(name=config.name, resource_namespace=namespace),
                                    id=qid, permission=permission,
                                    broker=pb.Broker(name=broker, id=0, endpoints=endpoints(host, port)))
            queue.accept_message_types.extend(accept_types(config, release))
            out.append(queue)
    return out


def backoff_policy(target: pb.RetryPolicy, policy: retry5x.BackoffPolicy) -> None:
    """``Settings.backoff_policy`` as the proxy sends it (RETRY-5X-01)."""
    target.max_attempts = policy.max_attempts
    if policy.strategy == "CUSTOMIZED":
        for ms in policy.customized_ms:
            set_ms(target.customized_backoff.next.add(), ms)
    else:
        set_ms(target.exponential_backoff.initial, policy.initial_ms)
        set_ms(target.exponential_backoff.max, policy.max_ms)
        target.exponential_backoff.multiplier = policy.multiplier


def user_properties(properties: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in properties.items() if k not in SYSTEM_PROPERTY_KEYS}


def stored_message_of(m: Message, topic: str, wall_of: "WallClock", namespace: str = "") -> pb.Message:
    """A stored message as the protocol carries it: an MD5 body digest in upper-case hex, IDENTITY encoding, no
    receipt (``proxy/.../grpc/v2/common/GrpcConverter.java#GrpcConverter.buildMessage`` at rocketmq-all-5.0.0
    through 5.3.3: ``BinaryUtil.generateMd5``; the Node.js SDK discards a message whose digest does not check)."""
    out = pb.Message(topic=pb.Resource(name=topic, resource_namespace=namespace), body=m.body)
    out.user_properties.update(user_properties(m.properties))
    sp = out.system_properties
    sp.message_id = m.properties.get("UNIQ_KEY", m.msg_id)
    if m.tags:
        sp.tag = m.tags
    if m.properties.get("KEYS"):
        sp.keys.extend(m.properties["KEYS"].split(" "))
    sp.body_digest.type = pb.MD5
    sp.body_digest.checksum = hashlib.md5(m.body).hexdigest().upper()
    sp.body_encoding = pb.IDENTITY
    sp.message_type = pb.FIFO if m.message_group else (pb.DELAY if "TIMER_DELIVER_MS" in m.properties else pb.NORMAL)
    set_ms(sp.born_timestamp, wall_of(m.born_ms))
    set_ms(sp.store_timestamp, wall_of(m.store_ms))
    sp.store_host = "127.0.0.1:10911"
    sp.queue_id = m.queue_id
    sp.queue_offset = m.queue_offset
    sp.delivery_attempt = retry5x.delivery_attempt(m.reconsume_times)
    if m.message_group:
        sp.message_group = m.message_group
    if "TIMER_DELIVER_MS" in m.properties:
        set_ms(sp.delivery_timestamp, wall_of(int(m.properties["TIMER_DELIVER_MS"])))
    return out


def message_of(flight: InFlight, wall_of: "WallClock", namespace: str = "") -> pb.Message:
    """A popped message as ``ReceiveMessage`` streams it: the stored message with its receipt handle."""
    out = stored_message_of(flight.message, flight.origin_topic, wall_of, namespace)
    out.system_properties.receipt_handle = flight.receipt
    set_ms(out.system_properties.invisible_duration, max(0, flight.visible_at - wall_of.now_spec_ms()))
    return out


class WallClock:
    """Spec instants as epoch milliseconds: ``wall_of(spec_ms)``; ``now_spec_ms()`` for durations."""

    def __init__(self, epoch_ms: int, now_spec_ms) -> None:
        self.epoch_ms = epoch_ms
        self.now_spec_ms = now_spec_ms

    def __call__(self, spec_ms: int) -> int:
        return self.epoch_ms + spec_ms
