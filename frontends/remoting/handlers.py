"""What the name server and the broker answer to each remoting request code, over the shared model
(REMOTING-01). No I/O here: a handler takes a decoded request and returns the response command. This module
holds ``RemotingBroker`` (one served broker's state, its calls to its clients and ``handle``) and
``HANDLERS``, the request code -> handler table over every handler of ``admin_handlers``, ``send_handlers``
and ``consume_handlers`` (the codes are in ``protocol``); a code without a handler is
``REQUEST_CODE_NOT_SUPPORTED`` (``RemotingSysResponseCode``, rocketmq-all-4.9.8). Every name those modules
held here before they were split out is re-exported, so it is imported from here as before.
"""
from __future__ import annotations

from typing import Callable, Protocol

from reference_impl.model.broker import Message, TopicConfig
from reference_impl.model.simulation import Simulation
from reference_impl.rules import message_id, storage

from ..model_service import RealTimeModel
from . import send_faults
from .admin_handlers import (
    CLUSTER,
    TIME_SCALE_KEY,
    check_client_config,
    get_cluster_info,
    get_route,
    runtime_info,
    update_broker_config,
    update_group,
    update_topic,
)
from .codec import Command
from .consume_handlers import (
    BROKER_SUSPEND_MAX_MS,
    FLAG_COMMIT_OFFSET,
    FLAG_SUBSCRIPTION,
    FLAG_SUSPEND,
    REBALANCE_LOCK_MAX_LIVE_MS,
    RUNNING_INFO_TIMEOUT_S,
    consumer_list,
    consumer_running_info,
    heart_beat,
    lock_batch,
    pull_message,
    pull_suspend_until_ms,
    query_consumer_offset,
    queue_bound,
    search_offset,
    send_back,
    unlock_batch,
    unregister_client,
    update_consumer_offset,
)
from .protocol import (
    CHECK_CLIENT_CONFIG,
    CHECK_TRANSACTION_STATE,
    CONSUMER_SEND_MSG_BACK,
    END_TRANSACTION,
    GET_BROKER_CLUSTER_INFO,
    GET_BROKER_RUNTIME_INFO,
    GET_CONSUMER_LIST_BY_GROUP,
    GET_CONSUMER_RUNNING_INFO,
    GET_MAX_OFFSET,
    GET_MIN_OFFSET,
    GET_ROUTEINFO_BY_TOPIC,
    HEART_BEAT,
    LOCK_BATCH_MQ,
    NAME_VALUE_SEPARATOR,
    NOTIFY_CONSUMER_IDS_CHANGED,
    PROPERTY_SEPARATOR,
    PULL_MESSAGE,
    PULL_NOT_FOUND,
    PULL_OFFSET_MOVED,
    PULL_RETRY_IMMEDIATELY,
    QUERY_CONSUMER_OFFSET,
    QUERY_NOT_FOUND,
    REQUEST_CODE_NOT_SUPPORTED,
    SEARCH_OFFSET_BY_TIMESTAMP,
    SEND_BATCH_MESSAGE,
    SEND_MESSAGE,
    SEND_MESSAGE_V2,
    SUCCESS,
    SYSTEM_ERROR,
    TOPIC_NOT_EXIST,
    UNLOCK_BATCH_MQ,
    UNREGISTER_CLIENT,
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
    UPDATE_AND_CREATE_TOPIC,
    UPDATE_BROKER_CONFIG,
    UPDATE_CONSUMER_OFFSET,
    decode_properties,
)
from .send_handlers import (
    END_STATES,
    TRANSACTION_PREPARED_TYPE,
    V2_FIELDS,
    decode_batch_body,
    end_transaction,
    send_batch,
    send_message,
)

__all__ = [
    # protocol: request and response codes, the properties text
    "SEND_MESSAGE", "PULL_MESSAGE", "QUERY_CONSUMER_OFFSET", "UPDATE_CONSUMER_OFFSET", "UPDATE_AND_CREATE_TOPIC",
    "GET_MAX_OFFSET", "GET_MIN_OFFSET", "HEART_BEAT", "UNREGISTER_CLIENT", "CONSUMER_SEND_MSG_BACK",
    "GET_CONSUMER_LIST_BY_GROUP", "GET_BROKER_RUNTIME_INFO", "SEARCH_OFFSET_BY_TIMESTAMP", "LOCK_BATCH_MQ",
    "UNLOCK_BATCH_MQ", "END_TRANSACTION", "CHECK_TRANSACTION_STATE", "NOTIFY_CONSUMER_IDS_CHANGED",
    "GET_CONSUMER_RUNNING_INFO", "SEND_BATCH_MESSAGE", "CHECK_CLIENT_CONFIG", "UPDATE_BROKER_CONFIG",
    "GET_ROUTEINFO_BY_TOPIC", "GET_BROKER_CLUSTER_INFO", "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP", "SEND_MESSAGE_V2",
    "SUCCESS", "SYSTEM_ERROR", "REQUEST_CODE_NOT_SUPPORTED", "TOPIC_NOT_EXIST", "PULL_NOT_FOUND",
    "PULL_RETRY_IMMEDIATELY", "PULL_OFFSET_MOVED", "QUERY_NOT_FOUND", "NAME_VALUE_SEPARATOR", "PROPERTY_SEPARATOR",
    "decode_properties",
    # admin_handlers
    "TIME_SCALE_KEY", "CLUSTER", "get_route", "get_cluster_info", "update_topic", "update_group",
    "update_broker_config", "check_client_config", "runtime_info",
    # send_handlers
    "V2_FIELDS", "TRANSACTION_PREPARED_TYPE", "END_STATES", "send_message", "decode_batch_body", "send_batch",
    "end_transaction",
    # consume_handlers
    "FLAG_SUBSCRIPTION", "FLAG_COMMIT_OFFSET", "FLAG_SUSPEND", "BROKER_SUSPEND_MAX_MS", "REBALANCE_LOCK_MAX_LIVE_MS",
    "RUNNING_INFO_TIMEOUT_S", "pull_suspend_until_ms", "pull_message", "query_consumer_offset",
    "update_consumer_offset", "queue_bound", "heart_beat", "unregister_client", "consumer_list", "send_back",
    "lock_batch", "unlock_batch", "search_offset", "consumer_running_info",
    # here
    "Handler", "ClientCalls", "NoClientCalls", "RemotingBroker", "HANDLERS",
]

Handler = Callable[["RemotingBroker", Command], "Command | None"]


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
