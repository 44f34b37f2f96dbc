"""``rmqc.Admin``: a small JSON-over-gRPC side channel of ``rmqc serve`` (not part of RocketMQ).

A real cluster is configured with ``mqadmin``; the reference takes the same settings here, so the
grpc adapter can create topics and groups and learn the server's time scale. Against a real proxy
the methods answer UNIMPLEMENTED and the adapter falls back to what the route tells it.
"""
from __future__ import annotations

import json
from typing import Any, Callable

import grpc

from reference_impl.rules import codes, topic_types

from ..model_service import RealTimeModel

SERVICE = "rmqc.Admin"
METHODS = ("Info", "CreateTopic", "ConfigureGroup")
MESSAGE_TYPES = topic_types.TYPES + ("MIXED",)
"""Every type a topic can be given in some covered release (MIXED from 5.1.4; TOPIC-05)."""


def encode(value: Any) -> bytes:
    return json.dumps(value).encode()


def decode(data: bytes) -> Any:
    return json.loads(data.decode() or "{}")


class AdminService:
    """``rmqc serve``'s side channel: ``Info`` (time scale, release, where the remoting name server is) and,
    unless ``setup`` is off, the old ``CreateTopic`` / ``ConfigureGroup`` (set-up now goes through the
    remoting admin codes, issue 20)."""

    def __init__(self, model: RealTimeModel, version: str, namesrv: Callable[[], str | None] = lambda: None,
                 setup: bool = True) -> None:
        self.model = model
        self.version = version
        self.namesrv = namesrv
        self.setup = setup

    def Info(self, request: dict, context: grpc.ServicerContext) -> dict:
        with self.model.locked() as sim:
            return {"server": "rmqc serve", "version": self.version, "profile": sim.profile, "release": sim.release,
                    "time_scale": self.model.time_scale, "spec_now_ms": sim.clock.now_ms,
                    "wall_epoch_ms": self.model.wall_epoch_ms, "namesrv": self.namesrv()}

    def CreateTopic(self, request: dict, context: grpc.ServicerContext) -> dict:
        name = str(request.get("name", ""))
        message_type = str(request.get("message_type", "NORMAL"))
        with self.model.locked() as sim:
            known = topic_types.topic_types(sim.release)[1:]
            if not name or message_type not in known:
                return {"code": codes.BAD_REQUEST,
                        "message": f"need a name and a message_type in {known} (RocketMQ {sim.release})"}
            sim.broker.create_topic(name, int(request.get("read_queues", 4)), int(request.get("write_queues", 4)),
                                    int(request.get("perm", 6)), message_type)
        return {"code": codes.OK}

    def ConfigureGroup(self, request: dict, context: grpc.ServicerContext) -> dict:
        name = str(request.get("name", ""))
        if not name:
            return {"code": codes.BAD_REQUEST, "message": "need a group name"}
        with self.model.locked() as sim:
            group = sim.broker.group(name)
            group.retry_max_times = int(request.get("retry_max_times", group.retry_max_times))
            group.fifo = bool(request.get("fifo", group.fifo))
            group.retry_policy = str(request.get("retry_policy", group.retry_policy))
        return {"code": codes.OK}

    def handler(self) -> grpc.GenericRpcHandler:
        def unary(method: Callable[[dict, grpc.ServicerContext], dict]) -> grpc.RpcMethodHandler:
            return grpc.unary_unary_rpc_method_handler(method, request_deserializer=decode, response_serializer=encode)

        methods = METHODS if self.setup else ("Info",)
        return grpc.method_handlers_generic_handler(SERVICE, {m: unary(getattr(self, m)) for m in methods})
