"""``rmqc serve`` holds many clients: past its client limit a call is answered (TOO_MANY_REQUESTS 42900 naming
the limit) and the clients within it keep working; clients that open Telemetry streams and never read, and a
remoting peer that stops in the middle of a frame, cost no thread and do not slow the others down."""
from __future__ import annotations

import socket
import statistics
import threading
import time

import grpc
import pytest
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as rpc
from rocketmq.grpc_protocol import service_pb2_grpc

from adapters.sdk5x import load_sdk
from frontends.grpc.server import ReferenceServer, ServeConfig
from frontends.limits import ClientTable, ServeLimits

TOPICS = ServeConfig(topics=[{"name": "T", "queues": 4}])
WARM_UP = 50
INVISIBLE_S = 1_000


def _server(**limits: float) -> ReferenceServer:
    return ReferenceServer(port=0, time_scale=0.01, config=TOPICS, remoting_ports=(0, 0),
                           limits=ServeLimits(**limits)).start()  # type: ignore[arg-type]


def _producer(sdk, address: str):
    producer = sdk.Producer(sdk.ClientConfiguration(address, sdk.Credentials(), request_timeout=3), tls_enable=False)
    producer.startup()
    return producer


def _send(sdk, producer, key: str) -> str:
    message = sdk.Message()
    message.topic, message.body, message.keys = "T", b"x", key
    return producer.send(message).message_id


def test_the_client_table_counts_and_forgets_clients():
    now = [0.0]
    table = ClientTable(ServeLimits(max_clients=2, max_receives_per_client=1, idle_client_s=10), clock=lambda: now[0])
    assert table.admit("a") is None and table.admit("b") is None and table.admit("a") is None
    refused = table.admit("c")
    assert refused and "--max-clients 2" in refused and "client c refused" in refused
    assert table.begin_receive("a") is None and "receives in flight" in table.begin_receive("a")
    table.leave("b")
    assert table.admit("c") is None  # b said goodbye: its place is free
    table.end_receive("a")
    now[0] = 11.0
    assert table.admit("d") is None  # a and c were idle past 10 s


@pytest.mark.spec("SEND-5X-03")
def test_clients_past_the_cap_get_42900_naming_the_limit_and_the_others_keep_working():
    """Three SDK producers fill a cap of 3; two more clients are answered on every call (42900 on unary calls,
    RESOURCE_EXHAUSTED on their Telemetry stream), each with the limit named, while the three go on sending.
    (The Python SDK turns a refused route into "failed to fetch topic" and drops the code: the extra clients
    here speak the protocol themselves.)"""
    sdk = load_sdk()
    server = _server(max_clients=3)
    producers = []
    channel = grpc.insecure_channel(server.address)
    stub = service_pb2_grpc.MessagingServiceStub(channel)
    try:
        producers = [_producer(sdk, server.address) for _ in range(3)]
        sent = [_send(sdk, p, f"in-{i}") for i, p in enumerate(producers)]
        for extra in ("extra-1", "extra-2"):
            metadata = (("x-mq-client-id", extra),)
            route = stub.QueryRoute(rpc.QueryRouteRequest(topic=pb.Resource(name="T")), metadata=metadata, timeout=5)
            assert route.status.code == 42900, route.status
            assert "its limit (--max-clients 3)" in route.status.message and extra in route.status.message
            message = pb.Message(topic=pb.Resource(name="T"), body=b"x")
            message.system_properties.message_id = f"{extra}-m"
            refused = stub.SendMessage(rpc.SendMessageRequest(messages=[message]), metadata=metadata, timeout=5)
            assert refused.status.code == 42900
            with pytest.raises(grpc.RpcError) as stream:
                list(stub.Telemetry(iter([rpc.TelemetryCommand(settings=pb.Settings(client_type=pb.PRODUCER))]),
                                    metadata=metadata, timeout=5))
            assert stream.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "--max-clients 3" in stream.value.details()
        sent += [_send(sdk, p, f"again-{i}") for i, p in enumerate(producers)]
        assert len(set(sent)) == 6 and server.sim.broker.stored_count("T") == 6
    finally:
        for p in producers:
            p.shutdown()
        channel.close()
        server.stop()


def _silent_telemetry(address: str, client: str, opened: threading.Event) -> tuple[grpc.Channel, object]:
    """A client that opens a Telemetry stream, says its settings and never reads an answer (the call is kept:
    dropped, it would be cancelled)."""
    channel = grpc.insecure_channel(address)
    stub = service_pb2_grpc.MessagingServiceStub(channel)
    never = threading.Event()

    def commands():
        yield rpc.TelemetryCommand(settings=pb.Settings(client_type=pb.PRODUCER))
        opened.set()
        never.wait(60)

    call = stub.Telemetry(commands(), metadata=(("x-mq-client-id", client),))  # its responses are never read
    return channel, call


def _stalled_frame(host: str, port: int) -> socket.socket:
    """A remoting peer that announces a 1,000-byte frame, sends 10 of it, and stops."""
    sock = socket.create_connection((host, port))
    sock.sendall((1000).to_bytes(4, "big") + b"\x00" * 10)
    return sock


def _round_trips(sdk, address: str, n: int) -> tuple[list[float], int, int]:
    """``n`` sends through one producer, received by one simple consumer: send latencies (ms), sent, received."""
    producer = _producer(sdk, address)
    consumer = sdk.SimpleConsumer(sdk.ClientConfiguration(address, sdk.Credentials(), request_timeout=3), "G",
                                  {"T": sdk.FilterExpression()}, await_duration=1)
    consumer.startup()
    try:
        for i in range(WARM_UP):  # connections, routes and settings first: only steady sends are timed
            _send(sdk, producer, f"warm-{i}")
        latencies = []
        for i in range(n):
            start = time.perf_counter()
            _send(sdk, producer, f"k{i}")
            latencies.append((time.perf_counter() - start) * 1000)
        received: set[str] = set()
        wanted = {f"k{i}" for i in range(n)}
        deadline = time.monotonic() + 60
        while not wanted <= received and time.monotonic() < deadline:
            # invisible for 1,000 virtual s: 10 s of wall at the servers' time scale of 0.01, so a batch of 32
            # acked one by one on a loaded machine is acked within it (20 s was 0.2 s of wall: a slow batch's
            # last acks came after its handles expired, 40013)
            for m in consumer.receive(32, INVISIBLE_S):
                received.update(m.keys)
                consumer.ack(m)
        return latencies, n, len(received & wanted)
    finally:
        producer.shutdown()
        consumer.shutdown()


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98]


def test_silent_streams_and_a_stalled_frame_slow_nobody_down():
    """The same sends and receives on an undisturbed server and on one beside 20 silent Telemetry streams and a
    stalled remoting frame: nothing lost, and the disturbed p99 within 2x the undisturbed one (p99 of a few
    hundred millisecond sends is noisy on a shared machine: up to three pairs of runs are measured, and one
    within the bound is enough; a server that parked a thread per stream would miss it in every pair)."""
    sdk = load_sdk()
    calm_server, server = _server(), _server(partial_frame_s=1.0)
    channels, sockets = [], []
    try:
        for i in range(20):
            opened = threading.Event()
            channels.append(_silent_telemetry(server.address, f"silent-{i}", opened))
            assert opened.wait(10)
        assert server.remoting is not None
        sockets.append(_stalled_frame("127.0.0.1", server.remoting.broker_port))
        pairs = []
        for _ in range(3):
            calm, sent, got = _round_trips(sdk, calm_server.address, 300)
            assert got == sent, f"undisturbed: lost {sent - got}"
            disturbed, sent, got = _round_trips(sdk, server.address, 300)
            assert got == sent == 300, f"disturbed: lost {sent - got}"
            pairs.append((_p99(calm), _p99(disturbed), statistics.median(calm), statistics.median(disturbed)))
            if pairs[-1][1] <= 2 * pairs[-1][0]:
                break
        print("\nsend p99 undisturbed / beside 20 silent streams and a stalled frame (p50): " + "; ".join(
            f"{a:.2f} / {b:.2f} ms ({c:.2f} / {d:.2f})" for a, b, c, d in pairs))
        assert pairs[-1][1] <= 2 * pairs[-1][0], pairs
        deadline = time.monotonic() + 10
        while server.remoting.connections_closed_for_stalled_frames < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.remoting.connections_closed_for_stalled_frames == 1
        assert sockets[0].recv(16) == b""  # the server closed it
        server_threads = [t.name for t in threading.enumerate() if t.name.startswith("rmqc")]
        assert len(server_threads) <= 20, server_threads  # two loops and their remoting workers: none per stream
    finally:
        for channel, _ in channels:
            channel.close()
        for sock in sockets:
            sock.close()
        server.stop()
        calm_server.stop()


def _scripted_events(seed: int) -> list[tuple]:
    """One client's calls in a fixed order against a fresh server: the events the model recorded, without
    their wall-dependent times."""
    from google.protobuf.duration_pb2 import Duration

    server = ReferenceServer(port=0, time_scale=0.01, config=TOPICS, seed=seed).start()
    channel = grpc.insecure_channel(server.address)
    stub = service_pb2_grpc.MessagingServiceStub(channel)
    metadata = (("x-mq-client-id", "scripted"),)
    try:
        queue = stub.QueryRoute(rpc.QueryRouteRequest(topic=pb.Resource(name="T")), metadata=metadata,
                                timeout=5).message_queues[0]
        for i in range(6):
            message = pb.Message(topic=pb.Resource(name="T"), body=b"x")
            message.system_properties.message_id = f"m{i}"
            message.system_properties.keys.append(f"k{i}")
            assert stub.SendMessage(rpc.SendMessageRequest(messages=[message]), metadata=metadata,
                                    timeout=5).status.code == 20000
        received = [r.message for r in stub.ReceiveMessage(rpc.ReceiveMessageRequest(
            group=pb.Resource(name="G"), message_queue=queue, filter_expression=pb.FilterExpression(expression="*"),
            batch_size=4, invisible_duration=Duration(seconds=30)), metadata=metadata, timeout=10)
            if r.HasField("message")]
        for m in received[:2]:
            stub.AckMessage(rpc.AckMessageRequest(group=pb.Resource(name="G"), topic=pb.Resource(name="T"),
                                                  entries=[rpc.AckMessageEntry(message_id=m.system_properties.message_id,
                                                                               receipt_handle=m.system_properties.receipt_handle)]),
                            metadata=metadata, timeout=5)
        with server.model.locked() as sim:
            return [(e.kind, e.topic, e.group, e.msg_id, e.key, e.queue_id, e.queue_offset, e.attempt)
                    for e in sim.recorder.events]
    finally:
        channel.close()
        server.stop()


def test_serve_is_deterministic_for_a_seed():
    """The model behind the event loop is one serialized entry point: the same calls in the same order give
    the same history."""
    first = _scripted_events(7)
    assert [k for k, *_ in first].count("SEND_OK") == 6 and "DELIVER" in [k for k, *_ in first]
    assert first == _scripted_events(7)


def test_a_stream_whose_reader_takes_nothing_is_dropped():
    """A producer's Telemetry stream whose client never reads: the server's writes to it stop at the
    transport's flow-control window (bounded memory) and after ``stalled_write_s`` the stream is dropped."""
    server = _server(stalled_write_s=1.0)
    opened = threading.Event()
    channel = grpc.insecure_channel(server.address)
    stub = service_pb2_grpc.MessagingServiceStub(channel)
    never = threading.Event()

    def commands():
        settings = pb.Settings(client_type=pb.PRODUCER)
        settings.publishing.topics.add(name="T")
        yield rpc.TelemetryCommand(settings=settings)
        opened.set()
        never.wait(60)

    call = stub.Telemetry(commands(), metadata=(("x-mq-client-id", "deaf"),))
    try:
        assert opened.wait(10)
        deadline = time.monotonic() + 10
        while "deaf" not in server.service.streams and time.monotonic() < deadline:
            time.sleep(0.02)
        stream = server.service.streams["deaf"]
        big = rpc.TelemetryCommand(status=pb.Status(code=pb.OK, message="x" * 65536))
        for _ in range(400):  # 26 MB: far past any window the client's transport opens without reading
            server.model.call_on_loop(stream.outbox.put_nowait, big)
        deadline = time.monotonic() + 20
        while "deaf" in server.service.streams and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "deaf" not in server.service.streams, "the stalled stream is still held"
        assert server.service.clients.clients.get("deaf") is None or not server.service.clients.clients["deaf"].streams
    finally:
        never.set()
        call.cancel()
        channel.close()
        server.stop()


def test_a_stored_message_wakes_every_pull_on_its_queue_and_one_pop_per_group():
    """Aimed wake-ups: every pull held on the queue (each is a consumer's own cursor: broadcasting peers
    both want it), and one waiting pop of each group popping the topic; not the pops of other topics."""
    import asyncio

    from frontends.model_service import RealTimeModel
    from history.profiles import GRPC_5X
    from reference_impl.model.simulation import Simulation

    model = RealTimeModel(Simulation(GRPC_5X, run_id="wake"), time_scale=1.0)
    model.sim.broker.create_topic("T", 1, 1)
    model.sim.broker.create_topic("U", 1, 1)
    model.start()
    try:
        async def scenario() -> dict[str, float]:
            woken: dict[str, float] = {}
            start = asyncio.get_running_loop().time()

            async def wait(name: str, **key: object) -> None:
                await model.changes(model.spec_now_ms() + 60_000, 2.0, **key)  # type: ignore[arg-type]
                woken[name] = asyncio.get_running_loop().time() - start

            waits = [asyncio.create_task(wait(n, **k)) for n, k in (
                ("pull-1", {"topic": "T", "queue_id": 0}), ("pull-2", {"topic": "T", "queue_id": 0}),
                ("pop-a1", {"topic": "T", "group": "A"}), ("pop-a2", {"topic": "T", "group": "A"}),
                ("pop-b", {"topic": "T", "group": "B"}), ("pop-u", {"topic": "U", "group": "A"}))]
            await asyncio.sleep(0.05)
            with model.locked() as sim:
                sim.broker.put("T", 0, b"x", {}, "m1", born_ms=sim.clock.now_ms)
            await asyncio.gather(*waits)
            return woken

        woken = model.run(scenario(), timeout_s=10)
        soon = {name for name, at in woken.items() if at < 1.0}
        assert {"pull-1", "pull-2", "pop-b"} <= soon, woken
        assert len(soon & {"pop-a1", "pop-a2"}) == 1 and "pop-u" not in soon, woken
    finally:
        model.stop()
