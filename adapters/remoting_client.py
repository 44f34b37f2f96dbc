"""A small remoting client on the standard library's sockets: the admin codes ``mqadmin`` sends, and any
request a test needs to drive (REMOTING-01).

An unreachable or silent server fails within the timeout with an error naming the address and the cause.
"""
from __future__ import annotations

import itertools
import json
import re
import socket
import struct
from typing import Any, Callable, Sequence

from frontends.remoting import handlers as codes
from frontends.remoting import send_faults
from frontends.remoting.codec import JSON, Command, FrameSplitter, decode, encode

GET_ALL_TOPIC_CONFIG = 21
"""``RequestCode.GET_ALL_TOPIC_CONFIG`` (common/.../protocol/RequestCode.java@rocketmq-all-4.9.8)."""
FLAG_SUBSCRIPTION = 0x4
"""``PullSysFlag.FLAG_SUBSCRIPTION``: the pull carries its own subscription expression."""
from reference_impl.rules.storage import CommitLogMessage, decode_commitlog


class RemotingClientError(ConnectionError):
    """The server could not be reached or did not answer in time."""


class AdminRefused(RemotingClientError):
    """A broker answered an admin request with an error code (an illegal name, a setting it does not allow)."""


class RemotingClient:
    """One connection; requests are answered in order (the server answers each before the next)."""

    def __init__(self, address: str, timeout_s: float = 5.0, serialize: int = JSON) -> None:
        host, _, port = address.rpartition(":")
        self.address, self.timeout_s, self.serialize = address, timeout_s, serialize
        try:
            self.sock = socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s)
        except (OSError, ValueError) as exc:
            raise RemotingClientError(f"cannot reach {address}: {exc}") from None
        self._opaques = itertools.count(1)
        self._splitter = FrameSplitter()
        self._pending: list[bytes] = []

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "RemotingClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def call(self, code: int, ext: dict[str, Any] | None = None, body: bytes = b"", oneway: bool = False) -> Command:
        """Send a request and wait for its answer (none for a one-way request: the request comes back)."""
        request = Command(code, next(self._opaques), 2 if oneway else 0,
                          ext={k: str(v) for k, v in (ext or {}).items()}, body=body, serialize=self.serialize)
        try:
            self.sock.sendall(encode(request))
            if oneway:
                return request
            return self._receive(lambda c: c.is_response and c.opaque == request.opaque)
        except socket.timeout:
            raise RemotingClientError(f"{self.address} did not answer request {code} within {self.timeout_s} s") from None
        except OSError as exc:
            raise RemotingClientError(f"{self.address}: {exc}") from None

    def next_request(self, timeout_s: float | None = None) -> Command:
        """The next request the server sent this client (a broker-to-client call), waiting for one."""
        self.sock.settimeout(timeout_s or self.timeout_s)
        try:
            return self._receive(lambda c: not c.is_response)
        except socket.timeout:
            raise RemotingClientError(f"{self.address} sent no request within {timeout_s or self.timeout_s} s") from None
        finally:
            self.sock.settimeout(self.timeout_s)

    def _receive(self, wanted: Callable[[Command], bool]) -> Command:
        """The first frame received (or kept from earlier reads) that is ``wanted``; the others stay kept."""
        while True:
            for payload in self._pending:
                command = decode(payload)
                if wanted(command):
                    self._pending.remove(payload)
                    return command
            data = self.sock.recv(65536)
            if not data:
                raise RemotingClientError(f"{self.address} closed the connection")
            self._pending += self._splitter.feed(data)

    def reply(self, request: Command, code: int, ext: dict[str, Any] | None = None, body: bytes = b"") -> None:
        """Answer a broker-to-client request."""
        self.sock.sendall(encode(request.response(code, None, {k: str(v) for k, v in (ext or {}).items()}, body)))

    # ---- the admin codes mqadmin sends ----

    def create_topic(self, topic: str, read_queues: int = 4, write_queues: int = 4, perm: int = 6,
                     message_type: str | None = None) -> Command:
        ext: dict[str, Any] = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": read_queues,
                               "writeQueueNums": write_queues, "perm": perm, "topicFilterType": "SINGLE_TAG",
                               "topicSysFlag": 0, "order": "false"}
        if message_type:
            ext["attributes"] = f"+message.type={message_type}"
        return self.call(codes.UPDATE_AND_CREATE_TOPIC, ext)

    def create_group(self, group: str, retry_max_times: int = 16, orderly: bool = False,
                     retry_policy: str | None = None, retry_ladder_ms: Sequence[int] | None = None,
                     retry_queue_nums: int = 1) -> Command:
        """``retry_ladder_ms``: the group's ``customizedRetryPolicy.next`` (5.x, RETRY-5X-01), as
        ``mqadmin updateSubGroup -p`` sets it; ``retry_queue_nums``: its ``retryQueueNums`` (0 or less: the
        broker answers a send-back without storing it, RETRY-CONC-04)."""
        config: dict[str, Any] = {"groupName": group, "consumeEnable": True, "consumeFromMinEnable": True,
                                  "retryQueueNums": retry_queue_nums, "retryMaxTimes": retry_max_times,
                                  "consumeMessageOrderly": orderly}
        if retry_policy or retry_ladder_ms:  # 5.x SubscriptionGroupConfig.groupRetryPolicy
            config["groupRetryPolicy"] = {"type": retry_policy or "CUSTOMIZED"}
            if retry_ladder_ms:
                config["groupRetryPolicy"]["customizedRetryPolicy"] = {"next": [int(ms) for ms in retry_ladder_ms]}
        return self.call(codes.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=json.dumps(config).encode())

    def route(self, topic: str) -> dict[str, Any] | None:
        answer = self.call(codes.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        return fastjson_loads(answer.body) if answer.code == codes.SUCCESS else None

    def broker_addresses(self) -> list[str]:
        """The master address of every broker the name server knows (``GET_BROKER_CLUSTER_INFO``), in the order
        of their names."""
        return [address for _, address in self.broker_table()]

    def broker_table(self) -> list[tuple[str, str]]:
        """(name, master address) of every broker the name server knows, by name."""
        answer = self.call(codes.GET_BROKER_CLUSTER_INFO)
        if answer.code != codes.SUCCESS:
            raise RemotingClientError(f"{self.address}: cluster info answered {answer.code} {answer.remark}")
        table = fastjson_loads(answer.body).get("brokerAddrTable", {})
        return sorted((str(data.get("brokerName", name)), data["brokerAddrs"]["0"]) for name, data in table.items()
                      if "0" in data.get("brokerAddrs", {}))

    def every_broker_address(self) -> list[str]:
        """Every broker address the name server knows, masters and slaves (a release cluster's readiness)."""
        answer = self.call(codes.GET_BROKER_CLUSTER_INFO)
        if answer.code != codes.SUCCESS:
            raise RemotingClientError(f"{self.address}: cluster info answered {answer.code} {answer.remark}")
        table = fastjson_loads(answer.body).get("brokerAddrTable", {})
        return sorted(str(a) for data in table.values() for a in (data.get("brokerAddrs") or {}).values())

    def inject_send_fault(self, outcome: str, count: int, scope: str = "", clear: bool = False) -> Command:
        """``rmqc serve``'s own request: this broker's next ``count`` send attempts for topics ending with ``scope``
        meet ``outcome``, or (``clear``) the scope's faults go (``frontends.remoting.send_faults``); a real broker
        answers REQUEST_CODE_NOT_SUPPORTED."""
        ext: dict[str, Any] = {"outcome": outcome, "count": count, "scope": scope}
        if clear:
            ext["clear"] = "true"
        return self.call(send_faults.INJECT_SEND_FAULT, ext)

    def send_attempts(self, uniq_id: str | None, key: str | None) -> list[dict[str, Any]] | None:
        """``rmqc serve``'s log of the send attempts of one message (by client id, else key), oldest first; None
        from a broker that keeps none (a real one)."""
        ext = {k: v for k, v in (("uniqId", uniq_id), ("key", key)) if v}
        answer = self.call(send_faults.SEND_ATTEMPTS, ext)
        if answer.code != codes.SUCCESS:
            return None
        return list(json.loads(answer.body.decode("utf-8") or "[]"))

    def runtime_info(self) -> dict[str, str]:
        """A broker's ``GET_BROKER_RUNTIME_INFO`` table."""
        answer = self.call(codes.GET_BROKER_RUNTIME_INFO)
        if answer.code != codes.SUCCESS:
            raise RemotingClientError(f"{self.address}: runtime info answered {answer.code} {answer.remark}")
        return dict(fastjson_loads(answer.body).get("table", {}))

    def max_offset(self, topic: str, queue_id: int) -> int:
        answer = self.call(codes.GET_MAX_OFFSET, {"topic": topic, "queueId": queue_id})
        return int(answer.ext.get("offset", 0)) if answer.code == codes.SUCCESS else 0

    def topic_read_queues(self, topic: str) -> int | None:
        """How many read queues this broker has for ``topic`` (``GET_ALL_TOPIC_CONFIG``), None when it has no such
        topic or does not answer the code: for topics a broker keeps without a route on the name server (a 5.x
        pop retry topic, ``%RETRY%group_topic``)."""
        answer = self.call(GET_ALL_TOPIC_CONFIG)
        if answer.code != codes.SUCCESS:
            return None
        config = fastjson_loads(answer.body).get("topicConfigTable", {}).get(topic)
        return int(config.get("readQueueNums", 0)) if config else None

    def pull(self, group: str, topic: str, queue_id: int, offset: int, most: int = 32,
             expression: str = "*") -> tuple[int, list[CommitLogMessage], int]:
        """One pull without suspension: the code, the messages and the next offset to pull from. The pull carries
        its subscription (``PullSysFlag.FLAG_SUBSCRIPTION``), as a client pulls before its first heart beat: a
        real broker answers SUBSCRIPTION_NOT_EXIST (24) to a group it has no subscription of otherwise."""
        answer = self.call(codes.PULL_MESSAGE, {
            "consumerGroup": group, "topic": topic, "queueId": queue_id, "queueOffset": offset,
            "maxMsgNums": most, "sysFlag": FLAG_SUBSCRIPTION, "commitOffset": 0, "suspendTimeoutMillis": 0,
            "subscription": expression, "subVersion": 0, "expressionType": "TAG"})
        messages = commitlog_units(answer.body) if answer.code == codes.SUCCESS else []
        return answer.code, messages, int(answer.ext.get("nextBeginOffset", offset))

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> int:
        """``UPDATE_CONSUMER_OFFSET``, as ``mqadmin`` and a 4.x consumer commit an offset; the broker's code."""
        return self.call(codes.UPDATE_CONSUMER_OFFSET, {"consumerGroup": group, "topic": topic, "queueId": queue_id,
                                                        "commitOffset": offset}).code


def commitlog_units(body: bytes) -> list[CommitLogMessage]:
    """A pull's body: commit-log units one after the other, each led by its total size."""
    out, pos = [], 0
    while pos + 4 <= len(body):
        size = struct.unpack_from(">i", body, pos)[0]
        if size <= 0 or pos + size > len(body):
            raise RemotingClientError(f"a pulled message unit of {size} bytes overruns the body ({len(body)} bytes)")
        out.append(decode_commitlog(body[pos:pos + size]))
        pos += size
    return out


_BARE_KEY = re.compile(rb"([{,])\s*(-?\d+)\s*:")


def fastjson_loads(body: bytes) -> Any:
    """JSON as a Java broker's fastjson writes it: a map with number keys (``brokerAddrs``) has them bare."""
    return json.loads(_BARE_KEY.sub(rb'\1"\2":', body))


class RemotingAdmin:
    """What ``mqadmin updateTopic`` / ``updateSubGroup`` do: ask the name server for the brokers, then send
    the admin request to every master."""

    def __init__(self, namesrv: str, timeout_s: float = 5.0) -> None:
        self.namesrv, self.timeout_s = namesrv, timeout_s

    def brokers(self) -> list[str]:
        return [address for _, address in self.broker_table()]

    def broker_table(self) -> list[tuple[str, str]]:
        """(name, address) of every master the name server knows, by name."""
        with RemotingClient(self.namesrv, self.timeout_s) as ns:
            brokers = ns.broker_table()
        if not brokers:
            raise RemotingClientError(f"the name server {self.namesrv} knows no broker")
        return brokers

    def time_scale(self) -> float:
        """``rmqc serve``'s time scale from its brokers' runtime info; 1 for a real broker (no such key)."""
        with RemotingClient(self.brokers()[0], self.timeout_s) as broker:
            return float(broker.runtime_info().get(codes.TIME_SCALE_KEY, 1.0))

    def _each_broker(self, action: Any, first: int | None = None) -> None:
        """``action`` on every master, or on the ``first`` few by name."""
        for address in self.brokers()[:first]:
            with RemotingClient(address, self.timeout_s) as broker:
                answer = action(broker)
                if answer.code != codes.SUCCESS:
                    raise AdminRefused(f"{address} refused the admin request: {answer.code} {answer.remark}")

    def create_topic(self, topic: str, read_queues: int, write_queues: int, perm: int,
                     message_type: str | None, brokers: int = 1) -> None:
        """On the first ``brokers`` masters by name, as ``mqadmin updateTopic -b ADDRESS`` on each: a topic the
        harness makes is on one broker unless a test asks for more (on ``rmqc serve``, whose second broker
        keeps only the topics made on it too)."""
        self._each_broker(lambda b: b.create_topic(topic, read_queues, write_queues, perm, message_type), brokers)

    def create_group(self, group: str, retry_max_times: int, orderly: bool, retry_policy: str | None,
                     retry_ladder_ms: Sequence[int] | None = None, retry_queue_nums: int = 1) -> None:
        self._each_broker(lambda b: b.create_group(group, retry_max_times, orderly, retry_policy, retry_ladder_ms,
                                                   retry_queue_nums))

    def _queues_of(self, topic: str) -> list[tuple[str | None, int]]:
        """Each broker address that keeps ``topic`` and its read queue count: from the name server's route, or
        where it has none (a 5.x pop retry topic, kept by brokers to themselves) from each broker."""
        with RemotingClient(self.namesrv, self.timeout_s) as ns:
            route = ns.route(topic)
        if route:
            addresses = {b["brokerName"]: b["brokerAddrs"].get("0") for b in route.get("brokerDatas", [])}
            return [(addresses.get(q["brokerName"]), int(q.get("readQueueNums", 0))) for q in route.get("queueDatas", [])]
        where: list[tuple[str | None, int]] = []
        for address in self.brokers():
            with RemotingClient(address, self.timeout_s) as broker:
                where.append((address, broker.topic_read_queues(topic) or 0))
        return where

    def start_group_at_first(self, topic: str, group: str) -> int:
        """Commit ``group``'s offset 0 in every queue of ``topic``, as ``mqadmin`` can: a new 5.x group would
        otherwise start its first pop at a queue's last message where offset 0 is not in memory, or always
        before 5.1.4 (RETRY-5X-10). How many queues the topic has (0 while it does not exist); a broker's
        refusal leaves that queue to the release's own start."""
        queues = 0
        for address, read_queues in self._queues_of(topic):
            if address:
                with RemotingClient(address, self.timeout_s) as broker:
                    for queue_id in range(read_queues):
                        broker.commit_offset(group, topic, queue_id, 0)
                        queues += 1
        return queues

    def read_topic(self, topic: str, group: str, most: int = 100_000) -> list[CommitLogMessage]:
        """Every message ``topic`` stores, pulled from offset 0 of each queue of its route as ``group``, as a
        4.x pull consumer reads it (every property shown); nothing when the name server has no route."""
        out: list[CommitLogMessage] = []
        for address, read_queues in self._queues_of(topic):
            if not address or not read_queues:
                continue
            with RemotingClient(address, self.timeout_s) as broker:
                for queue_id in range(read_queues):
                    offset = 0
                    while len(out) < most:
                        code, messages, offset = broker.pull(group, topic, queue_id, offset)
                        if code != codes.SUCCESS or not messages:
                            break
                        out.extend(messages)
        return out
