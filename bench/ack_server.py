"""The SDK's ceiling for ``bench/grpc_bench.py`` and ``bench/load_bench.py``: a 5.x server that stores
nothing but a queue and acknowledges everything. No model, no validation. On ``grpc.aio``, as ``rmqc serve``
is: a long poll or a Telemetry stream holds no thread, so hundreds of clients do not starve it.

    python bench/ack_server.py PORT
"""
from __future__ import annotations

import asyncio
import collections
import itertools
import sys
import time
import zlib

import grpc
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as rpc
from rocketmq.grpc_protocol import service_pb2_grpc

OK = pb.Status(code=pb.OK, message="OK")


class AckOnly(service_pb2_grpc.MessagingServiceServicer):
    def __init__(self, port: int) -> None:
        self.port = port
        self.queue: collections.deque = collections.deque()
        self.handles = itertools.count(1)

    async def QueryRoute(self, request, context):
        queue = pb.MessageQueue(topic=request.topic, id=0, permission=pb.READ_WRITE,
                                broker=pb.Broker(name="b", id=0, endpoints=pb.Endpoints(
                                    scheme=pb.IPv4, addresses=[pb.Address(host="127.0.0.1", port=self.port)])))
        queue.accept_message_types.extend([pb.NORMAL, pb.FIFO, pb.DELAY, pb.TRANSACTION])
        return rpc.QueryRouteResponse(status=OK, message_queues=[queue])

    async def QueryAssignment(self, request, context):
        route = await self.QueryRoute(request, context)
        response = rpc.QueryAssignmentResponse(status=OK)
        response.assignments.add(message_queue=route.message_queues[0])
        return response

    async def Heartbeat(self, request, context):
        return rpc.HeartbeatResponse(status=OK)

    async def NotifyClientTermination(self, request, context):
        return rpc.NotifyClientTerminationResponse(status=OK)

    async def Telemetry(self, request_iterator, context):
        async for command in request_iterator:
            settings = pb.Settings()
            settings.CopyFrom(command.settings)
            settings.metric.on = False
            settings.publishing.max_body_size = 4 * 1024 * 1024
            yield rpc.TelemetryCommand(status=OK, settings=settings)

    async def SendMessage(self, request, context):
        entries = []
        for m in request.messages:
            self.queue.append(m)
            entries.append(rpc.SendResultEntry(status=OK, message_id=m.system_properties.message_id))
        return rpc.SendMessageResponse(status=OK, entries=entries)

    async def ReceiveMessage(self, request, context):
        deadline = time.monotonic() + 1.0
        out = []
        while not out and time.monotonic() < deadline:
            while self.queue and len(out) < request.batch_size:
                try:
                    out.append(self.queue.popleft())
                except IndexError:
                    break
            if not out:
                await asyncio.sleep(0.001)
        if not out:
            yield rpc.ReceiveMessageResponse(status=pb.Status(code=pb.MESSAGE_NOT_FOUND, message="none"))
            return
        first = rpc.ReceiveMessageResponse()
        first.delivery_timestamp.GetCurrentTime()
        yield first
        for m in out:
            m.system_properties.receipt_handle = f"h{next(self.handles)}"
            m.system_properties.body_digest.type = pb.CRC32
            m.system_properties.body_digest.checksum = format(zlib.crc32(m.body) & 0xFFFFFFFF, "08X")
            m.system_properties.delivery_attempt = 1
            yield rpc.ReceiveMessageResponse(message=m)
        yield rpc.ReceiveMessageResponse(status=OK)

    async def AckMessage(self, request, context):
        return rpc.AckMessageResponse(status=OK, entries=[
            rpc.AckMessageResultEntry(message_id=e.message_id, receipt_handle=e.receipt_handle, status=OK)
            for e in request.entries])


async def serve(port: int) -> None:
    server = grpc.aio.server()
    port = server.add_insecure_port(f"127.0.0.1:{port}")
    service_pb2_grpc.add_MessagingServiceServicer_to_server(AckOnly(port), server)
    await server.start()
    print(f"ack-only server listening on 127.0.0.1:{port}", flush=True)
    await server.wait_for_termination()


def main() -> None:
    asyncio.run(serve(int(sys.argv[1]) if len(sys.argv) > 1 else 0))


if __name__ == "__main__":
    main()
