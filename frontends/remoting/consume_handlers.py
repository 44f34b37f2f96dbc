"""What the broker answers a consumer (REMOTING-01): pulls (``PullMessageProcessor``, long polling, TAG and
SQL92 filtering, FILTER-04, FILTER-06), consumer offsets and queue bounds (``ConsumerManageProcessor``,
``AdminBrokerProcessor``), heart beats and the group's client list (``ClientManageProcessor``), messages sent
back (RETRY-CONC-04), queue locks (``RebalanceLockManager``) and the consumer running info asked of a client,
read from rocketmq-all-4.9.8.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

from reference_impl.model.simulation import Simulation
from reference_impl.rules import filter as filter_rules
from reference_impl.rules import offsets as offset_rules
from reference_impl.rules import sql92

from .codec import Command
from .protocol import (
    GET_CONSUMER_RUNNING_INFO,
    GET_MAX_OFFSET,
    PULL_NOT_FOUND,
    PULL_OFFSET_MOVED,
    PULL_RETRY_IMMEDIATELY,
    SUCCESS,
    SYSTEM_ERROR,
    TOPIC_NOT_EXIST,
    _json,
)

if TYPE_CHECKING:
    from .handlers import RemotingBroker

FLAG_SUBSCRIPTION = 0x4
"""``PullSysFlag``: the pull carries its subscription; without it the broker uses the one of the group's heart beat."""
FLAG_COMMIT_OFFSET, FLAG_SUSPEND = 0x1, 0x2
"""``PullSysFlag``: the pull carries the consumer's offset to commit; hold a pull that finds nothing until a
message comes (long polling)."""
BROKER_SUSPEND_MAX_MS = 15_000
"""``BrokerConfig.brokerSuspendMaxTimeMillis``."""
REBALANCE_LOCK_MAX_LIVE_MS = 60_000
"""``RebalanceLockManager.REBALANCE_LOCK_MAX_LIVE_TIME`` (``rocketmq.broker.rebalance.lockMaxLiveTime``)."""
RUNNING_INFO_TIMEOUT_S = 5.0


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
    """``ConsumerManageProcessor.queryConsumerOffset`` (OFFSET-02): the committed offset; none committed and the
    queue's start still in memory gives 0; an empty queue gives 0 until 5.0.0 and QUERY_NOT_FOUND from 5.1.0 (the
    client then asks for the max offset, OFFSET-01)."""
    ext = request.ext
    with b.model.locked() as sim:
        topic = ext["topic"]
        queue_id = b.model_queue(sim, topic, int(ext["queueId"]))
        code, offset = offset_rules.broker_query_offset(
            sim.broker.offsets.get((ext["consumerGroup"], topic, queue_id)), 0, sim.broker.messages_in_memory,
            queue_empty=not _queue(sim, topic, queue_id), release=sim.release)
    if code != SUCCESS:
        return request.response(code, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
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
