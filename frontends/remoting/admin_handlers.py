"""What the name server and the broker's admin side answer (REMOTING-01): route by topic and cluster info
(``namesrv/.../processor/DefaultRequestProcessor``), ``AdminBrokerProcessor``'s ``updateAndCreateTopic``,
``updateAndCreateSubscriptionGroup``, ``updateBrokerConfig`` and ``getBrokerRuntimeInfo``, and
``ClientManageProcessor.checkClientConfig`` (FILTER-04, FILTER-05), read from rocketmq-all-4.9.8. The 5.x
message-type attribute is read as ``mqadmin updateTopic -a +message.type=FIFO`` sends it (TOPIC-05).
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

from reference_impl.rules import retry5x, sql92, topic_types

from .codec import Command
from .protocol import SUCCESS, SYSTEM_ERROR, TOPIC_NOT_EXIST, _json

if TYPE_CHECKING:
    from .handlers import RemotingBroker

TIME_SCALE_KEY = "rmqcTimeScale"
"""A key only ``rmqc serve`` adds to the broker's runtime info: wall seconds per spec second (a real broker
has none, and runs at 1)."""
CLUSTER = "DefaultCluster"


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
