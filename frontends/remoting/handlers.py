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
from typing import Callable

from reference_impl.model.simulation import Simulation
from reference_impl.rules import codes, topic_types

from ..model_service import RealTimeModel
from .codec import Command

# request codes (common/.../protocol/RequestCode.java@rocketmq-all-4.9.8)
SEND_MESSAGE, UPDATE_AND_CREATE_TOPIC, HEART_BEAT, UNREGISTER_CLIENT = 10, 17, 34, 35
GET_ROUTEINFO_BY_TOPIC, GET_BROKER_CLUSTER_INFO = 105, 106
UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, SEND_MESSAGE_V2 = 200, 310
# response codes (RemotingSysResponseCode, ResponseCode)
SUCCESS, SYSTEM_ERROR, REQUEST_CODE_NOT_SUPPORTED, TOPIC_NOT_EXIST = 0, 1, 3, 17
CLUSTER = "DefaultCluster"
V2_FIELDS = {"a": "producerGroup", "b": "topic", "c": "defaultTopic", "d": "defaultTopicQueueNums", "e": "queueId",
             "f": "sysFlag", "g": "bornTimestamp", "h": "flag", "i": "properties", "j": "reconsumeTimes",
             "k": "unitMode", "l": "maxReconsumeTimes", "m": "batch"}
"""``SendMessageRequestHeaderV2``: the short names the V2 send header uses for ``SendMessageRequestHeader``."""
NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR = "\x01", "\x02"

Handler = Callable[["RemotingBroker", Command], Command]


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


class RemotingBroker:
    """The model as one name server and one broker speak for it."""

    def __init__(self, model: RealTimeModel, broker_address: str, broker_name: str = "broker-a") -> None:
        self.model = model
        self.broker_address = broker_address
        self.broker_name = broker_name

    def handle(self, request: Command) -> Command:
        handler = HANDLERS.get(request.code)
        if handler is None:
            return request.response(REQUEST_CODE_NOT_SUPPORTED, f" request type {request.code} not supported")
        try:
            return handler(self, request)
        except (KeyError, ValueError) as exc:  # a missing or malformed header field
            return request.response(SYSTEM_ERROR, f"bad request {request.code}: {exc}")

    def _sim(self) -> Simulation:
        return self.model.sim


def get_route(b: RemotingBroker, request: Command) -> Command:
    """``DefaultRequestProcessor.getRouteInfoByTopic``: queue data and broker data, or TOPIC_NOT_EXIST."""
    topic = request.ext["topic"]
    with b.model.locked() as sim:
        config = sim.broker.topics.get(topic)
        if config is None:
            return request.response(TOPIC_NOT_EXIST, f"No topic route info in name server for the topic: {topic}")
        route = {"orderTopicConf": None, "filterServerTable": {},
                 "queueDatas": [{"brokerName": b.broker_name, "readQueueNums": config.read_queues,
                                 "writeQueueNums": config.write_queues, "perm": config.perm, "topicSysFlag": 0}],
                 "brokerDatas": [{"cluster": CLUSTER, "brokerName": b.broker_name,
                                  "brokerAddrs": {"0": b.broker_address}}]}
    return request.response(SUCCESS, body=_json(route))


def get_cluster_info(b: RemotingBroker, request: Command) -> Command:
    """``DefaultRequestProcessor.getBrokerClusterInfo``: one cluster of one broker."""
    info = {"brokerAddrTable": {b.broker_name: {"cluster": CLUSTER, "brokerName": b.broker_name,
                                                "brokerAddrs": {"0": b.broker_address}}},
            "clusterAddrTable": {CLUSTER: [b.broker_name]}}
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
    with b.model.locked() as sim:
        message_type = _message_type_attribute(ext.get("attributes"))
        try:
            topic_types.topic_message_type(message_type, sim.release)
        except ValueError as exc:
            return request.response(SYSTEM_ERROR, str(exc))
        sim.broker.create_topic(topic, int(ext.get("readQueueNums", 16)), int(ext.get("writeQueueNums", 16)),
                                int(ext.get("perm", 6)), message_type)
    return request.response(SUCCESS)


def update_group(b: RemotingBroker, request: Command) -> Command:
    """``AdminBrokerProcessor.updateAndCreateSubscriptionGroup``: the body is a ``SubscriptionGroupConfig``."""
    try:
        config = json.loads(request.body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"the body is not a SubscriptionGroupConfig: {exc}") from None
    if not isinstance(config, dict) or not isinstance(config.get("groupName"), str):
        raise ValueError("the SubscriptionGroupConfig has no groupName")
    with b.model.locked() as sim:
        group = sim.broker.group(config["groupName"])
        group.retry_max_times = int(config.get("retryMaxTimes", group.retry_max_times))
        group.fifo = bool(config.get("consumeMessageOrderly", group.fifo))
        policy = config.get("groupRetryPolicy")
        if isinstance(policy, dict) and policy.get("type") in ("CUSTOMIZED", "EXPONENTIAL"):
            group.retry_policy = policy["type"]
    return request.response(SUCCESS)


def send_message(b: RemotingBroker, request: Command) -> Command:
    """``SendMessageProcessor.sendMessage``: store the message, answer its offset message id, queue and offset."""
    ext = request.ext if request.code == SEND_MESSAGE else {V2_FIELDS.get(k, k): v for k, v in request.ext.items()}
    topic, queue_id = ext["topic"], int(ext.get("queueId", 0))
    properties = decode_properties(ext.get("properties", ""))
    with b.model.locked() as sim:
        config = sim.broker.topics.get(topic)
        if config is None:
            return request.response(TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!")
        msg_id = properties.get("UNIQ_KEY") or sim.new_msg_id()
        put = sim.broker.put(topic, queue_id % config.write_queues, request.body, properties, msg_id,
                             born_ms=sim.clock.now_ms)
        if put.code != codes.R_SUCCESS or put.message is None:
            return request.response(put.code, put.remark or "store failed")
        sim.emit("SEND_OK", topic=topic, msg_id=msg_id, key=properties.get("KEYS"), queue_id=put.message.queue_id,
                 queue_offset=put.message.queue_offset)
        answer = {"msgId": msg_id, "queueId": str(put.message.queue_id), "queueOffset": str(put.message.queue_offset)}
    return request.response(SUCCESS, ext=answer)


def heart_beat(b: RemotingBroker, request: Command) -> Command:
    """``ClientManageProcessor.heartBeat``: accepted (the consumers' subscriptions come with issue 20's pull)."""
    return request.response(SUCCESS)


HANDLERS: dict[int, Handler] = {
    GET_ROUTEINFO_BY_TOPIC: get_route, GET_BROKER_CLUSTER_INFO: get_cluster_info,
    UPDATE_AND_CREATE_TOPIC: update_topic, UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: update_group,
    SEND_MESSAGE: send_message, SEND_MESSAGE_V2: send_message, HEART_BEAT: heart_beat, UNREGISTER_CLIENT: heart_beat,
}
