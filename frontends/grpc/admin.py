"""``rmqc.Admin``: a small JSON-over-gRPC side channel of ``rmqc serve`` (not part of RocketMQ).

It tells the grpc adapter the server's time scale, release and where its remoting name server is (the
set-up then goes through the remoting admin codes, as with ``mqadmin``). A real proxy answers
UNIMPLEMENTED, and the adapter takes the name server from ``--namesrv``.
"""
from __future__ import annotations

import json
from typing import Any, Callable

import grpc

from reference_impl.rules import topic_types

from ..model_service import RealTimeModel

SERVICE = "rmqc.Admin"
METHODS = ("Info",)
MESSAGE_TYPES = topic_types.TYPES + ("PRIORITY", "LITE", "MIXED")
"""Every type a topic can be given in some covered release (MIXED from 5.1.4, PRIORITY and LITE from 5.5.0;
TOPIC-05)."""


def encode(value: Any) -> bytes:
    return json.dumps(value).encode()


def decode(data: bytes) -> Any:
    return json.loads(data.decode() or "{}")


class AdminService:
    """``rmqc serve``'s side channel: ``Info`` only (time scale, release, where the remoting name server is).
    Topics and groups are set up through the remoting admin codes, as against a real broker."""

    def __init__(self, model: RealTimeModel, version: str, namesrv: Callable[[], str | None] = lambda: None) -> None:
        self.model = model
        self.version = version
        self.namesrv = namesrv

    async def Info(self, request: dict, context: grpc.aio.ServicerContext) -> dict:
        with self.model.locked() as sim:
            return {"server": "rmqc serve", "version": self.version, "profile": sim.profile, "release": sim.release,
                    "time_scale": self.model.time_scale, "spec_now_ms": sim.clock.now_ms,
                    "wall_epoch_ms": self.model.wall_epoch_ms, "namesrv": self.namesrv()}

    def handler(self) -> grpc.GenericRpcHandler:
        def unary(method: Callable[..., Any]) -> grpc.RpcMethodHandler:
            return grpc.unary_unary_rpc_method_handler(method, request_deserializer=decode, response_serializer=encode)

        return grpc.method_handlers_generic_handler(SERVICE, {m: unary(getattr(self, m)) for m in METHODS})
