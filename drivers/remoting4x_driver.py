"""A driver for the 4.x SDK ``rocketmq-client-python`` 2.0.0 (module ``rocketmq.client``, over librocketmq).

It runs in its own virtual environment (its package name ``rocketmq`` clashes with the 5.x SDK), so it
imports nothing from this project: the protocol (spec/schemas/driver-protocol.schema.json) is written
out here with the standard library. Usage, against a 4.x name server:

    .venv-4x/bin/python drivers/remoting4x_driver.py --namesrv 127.0.0.1:9876 [--time-scale 0.01]

Every SDK client (a producer, a push consumer) lives in a worker process of its own, which this process
starts and relays for (the same script with ``--worker``). The C++ client behind the SDK refuses a second
consumer of one group in a process ("has been created before"), and the registry's build dies with SIGSEGV
inside ``PushConsumer.shutdown()`` every time (SDK-CPP-07): a worker writes out everything it saw and
answers the shutdown before calling it, so the crash costs neither an event nor a verdict, and the other
clients keep running. The worker's sockets close with it, so the broker drops its consumer at once.

Capabilities: sync and one-way sends, sends ordered by a sharding key, delay levels, tags, keys and
properties, transactions with a checker, concurrent and orderly push consumers, clustering and
broadcasting. The SDK runs on the wall clock; ``--time-scale`` is the server's (``rmqc serve``'s runtime
info says it), so spec time = wall time / time scale. Without librocketmq the SDK cannot load: the driver
says so on stderr and exits with code 3.
"""
from __future__ import annotations

import argparse
import base64
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from typing import Any, Callable

REMOTING_4X = "remoting-4.x"  # a value of the driver protocol; this program imports nothing of the project
PROTOCOL_VERSION = 1
SDK_VERSION = "2.0.0"
CAPABILITIES = ["send.sync", "send.oneway", "send.orderly", "delay.level", "consumer.filter.tag",
                "consumer.push4x.concurrent", "consumer.push4x.orderly", "consumer.push4x.broadcast",
                "transactions", "sdk.cpp4x"]
EXIT_NO_LIBRARY = 3
LIBRARY_SHA256 = "ed3fce39f2b926637637a2b8b9122799f207b0cdf98dbd9110505bf43170fa30"
"""``rocketmq/librocketmq.so`` of the registry's rocketmq-python-cvs 2.1.0.3 (drivers/install_librocketmq.py)."""
ASKS_PER_WORKER = 1_000_000
"""Worker k numbers its questions from k × this, so an answer finds its worker by its ask id."""
CLIENT_COMMANDS = ("producer", "transaction_producer", "push_consumer_4x")
"""Commands that create an SDK client: each gets a worker process."""


def text(value: Any) -> str:
    """A value the SDK hands over as bytes (keys, tags, body, id, topic), as text."""
    return value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else (value or "")


def library_check() -> str:
    """The sha256 of the librocketmq the SDK will load (the one beside its ``ffi.py``); a missing file or
    another hash raises ``OSError`` with one line."""
    import hashlib
    import importlib.util

    spec = importlib.util.find_spec("rocketmq")
    if spec is None or not spec.submodule_search_locations:
        raise OSError("rocketmq-client-python is not installed in this environment")
    path = os.path.join(list(spec.submodule_search_locations)[0], "librocketmq.so")
    if not os.path.exists(path):
        raise OSError(f"{path} is missing (make driver-4x installs it from the registry)")
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != LIBRARY_SHA256:
        raise OSError(f"{path} has sha256 {digest}, not the known build {LIBRARY_SHA256}; refused")
    return digest


class NotApplicableError(Exception):
    pass


class Clock:
    """Spec time of the run: wall time since ``epoch`` (a ``time.monotonic`` value, shared by the relay and
    its workers: one system clock) divided by the server's time scale."""

    def __init__(self, epoch: float, scale: float, wire_scale: float = 1.0) -> None:
        """``wire_scale``: the server's seconds per spec second in what a client writes into a message (a check
        immunity): 1 for ``rmqc serve``, which reads them as spec time; the time scale for a real release whose
        clocks the harness compressed through its keys."""
        self.epoch, self.scale, self.wire_scale = epoch, scale, wire_scale

    def now_ms(self) -> int:
        return int((time.monotonic() - self.epoch) * 1000 / self.scale)

    def sleep_ms(self, spec_ms: int) -> None:
        time.sleep(max(0, spec_ms) * self.scale / 1000)


class Lines:
    """JSON lines out on stdout, one writer at a time; commands in on stdin, each served on its own thread."""

    def __init__(self) -> None:
        self.out_lock = threading.Lock()

    def write(self, message: dict[str, Any]) -> None:
        self.write_line(json.dumps(message, separators=(",", ":")))

    def write_line(self, line: str) -> None:
        with self.out_lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def reply(self, message: dict[str, Any], work: Callable[[dict[str, Any]], dict[str, Any] | None]) -> None:
        try:
            self.write({"reply": message.get("id"), "ok": True, **(work(message) or {})})
        except NotApplicableError as exc:
            self.write({"reply": message.get("id"), "ok": False, "error": {"type": "NotApplicable", "message": str(exc)}})
        except Exception as exc:  # the SDK's errors carry no RocketMQ code: -1 as the client's own
            self.write({"reply": message.get("id"), "ok": False,
                        "error": {"type": "RocketMQError", "code": -1, "message": f"{type(exc).__name__}: {exc}"}})


# ---- the relay: the protocol's sessions and clock; one worker per SDK client ---------------------------


class Worker:
    """One worker process and the thread that relays its lines."""

    def __init__(self, relay: "Relay", number: int, handle: str) -> None:
        self.relay, self.number, self.handle = relay, number, handle
        argv = [sys.executable, os.path.abspath(__file__), "--worker", "--namesrv", relay.namesrv,
                "--time-scale", repr(relay.clock.scale), "--wire-scale", repr(relay.clock.wire_scale),
                "--epoch", repr(relay.clock.epoch),
                "--ask-base", str(number * ASKS_PER_WORKER)]
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.lock = threading.Lock()
        threading.Thread(target=self.pump, daemon=True).start()

    def send(self, message: dict[str, Any]) -> None:
        try:
            with self.lock:
                assert self.process.stdin is not None
                self.process.stdin.write(json.dumps(message, separators=(",", ":")) + "\n")
                self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            if "id" in message:
                self.relay.lines.write({"reply": message["id"], "ok": False, "error": {
                    "type": "RocketMQError", "code": -1,
                    "message": f"the SDK client {self.handle} is gone (worker exit code {self.process.poll()})"}})

    def pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            line = line.strip()
            if not line:
                continue
            message = json.loads(line)
            if "event" in message:  # one sequence over every worker of the run
                message["event"]["seq"] = next(self.relay.seq)
                self.relay.lines.write(message)
            else:
                self.relay.lines.write_line(line)
        code = self.process.wait()
        if code != 0 and not self.relay.stopping:
            sys.stderr.write(f"worker of {self.handle} exited with code {code}"
                             f"{' (SIGSEGV, SDK-CPP-07)' if code == -11 else ''}\n")


class Relay:
    def __init__(self, namesrv: str, clock: Clock) -> None:
        self.namesrv, self.clock = namesrv, clock
        self.lines = Lines()
        self.sessions: dict[str, dict[str, Any]] = {}
        self.workers: dict[str, Worker] = {}
        self.numbers = itertools.count(1)
        self.seq = itertools.count()
        self.stopping = False

    def run(self) -> None:
        for line in sys.stdin:
            if not line.strip():
                continue
            message = json.loads(line)
            cmd = message.get("cmd")
            if cmd == "answer":
                worker = next((w for w in self.workers.values()
                               if w.number == int(message["ask_id"]) // ASKS_PER_WORKER), None)
                if worker is not None:
                    worker.send(message)
            elif cmd == "bye":
                self.stop_workers(list(self.workers))
                self.lines.write({"reply": message.get("id"), "ok": True})
                return
            elif cmd in CLIENT_COMMANDS:
                worker = self.workers[message["handle"]] = Worker(self, next(self.numbers), message["handle"])
                worker.send({**message, "session": self.sessions.get(message.get("target", ""), {})})
            elif message.get("handle") in self.workers:
                self.workers[message["handle"]].send(message)
            else:
                threading.Thread(target=self.lines.reply, args=(message, self.serve), daemon=True).start()

    def stop_workers(self, handles: list[str]) -> None:
        self.stopping = True
        workers = [self.workers.pop(h) for h in handles if h in self.workers]
        for worker in workers:
            worker.send({"cmd": "bye"})
        for worker in workers:
            try:
                worker.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                worker.process.kill()
        self.stopping = False

    def serve(self, m: dict[str, Any]) -> dict[str, Any] | None:
        cmd = m.get("cmd")
        if cmd == "hello":
            return {"protocol": PROTOCOL_VERSION, "driver": "rocketmq-client-python", "version": SDK_VERSION,
                    "profiles": [REMOTING_4X], "clock": "wall", "time_scale": self.clock.scale,
                    "library_sha256": LIBRARY_SHA256}
        if cmd == "open":
            if m["profile"] != REMOTING_4X:
                raise NotApplicableError(f"the 4.x SDK runs {REMOTING_4X}, not {m['profile']}")
            self.sessions[m["target"]] = {"profile": m["profile"], "run_id": m.get("run_id", "run"),
                                          "target": m["target"]}
            return {"capabilities": CAPABILITIES, "version": SDK_VERSION}
        if cmd == "close":
            self.stop_workers([h for h in self.workers if h.startswith(m["target"] + "-")])
            return None
        if cmd == "now":
            return {"now_ms": self.clock.now_ms()}
        if cmd in ("advance", "settle"):
            self.clock.sleep_ms(int(m.get("ms", m.get("max_ms", 0))) if cmd == "advance"
                                else min(int(m["max_ms"]), 5000))
            return {"now_ms": self.clock.now_ms()}
        if cmd == "step":  # a wall clock: things happen by themselves; wait a little towards the deadline
            left = int(m["deadline_ms"]) - self.clock.now_ms()
            if left > 0:
                time.sleep(min(left * self.clock.scale / 1000, 0.01))
            return {"ran": self.clock.now_ms() < int(m["deadline_ms"]), "now_ms": self.clock.now_ms()}
        if cmd in ("send", "send_in_transaction", "shutdown", "crash"):
            raise NotApplicableError(f"no SDK client has the handle {m.get('handle')!r}")
        raise NotApplicableError(f"rocketmq-client-python has no {cmd!r} in this driver (topics and groups are set "
                                 f"up by the harness through the name server)")


# ---- a worker: one SDK client ----------------------------------------------------------------------------


class WorkerClient:
    """The SDK client of one worker process: commands from the relay, events and questions back."""

    def __init__(self, sdk: Any, namesrv: str, clock: Clock, ask_base: int) -> None:
        self.sdk, self.namesrv, self.clock = sdk, namesrv, clock
        self.lines = Lines()
        self.client: Any = None
        self.session: dict[str, Any] = {}
        self.answers: dict[int, dict[str, Any]] = {}
        self.answered = threading.Condition()
        self.ask_ids = itertools.count(ask_base + 1)
        self.pending_checks: dict[str, int] = {}

    def emit(self, kind: str, **fields: Any) -> None:
        row = {"run_id": self.session.get("run_id", "run"), "target": "rocketmq-client-python",
               "profile": REMOTING_4X, "seq": 0, "ts_ms": self.clock.now_ms(), "kind": kind,
               **{k: v for k, v in fields.items() if v is not None}}
        self.lines.write({"event": row, "target": self.session.get("target", "")})

    def ask(self, question: dict[str, Any]) -> dict[str, Any]:
        """Listener callbacks run on the SDK's threads: they wait for the relay to hand the answer over."""
        ask_id = next(self.ask_ids)
        self.lines.write({**question, "target": self.session.get("target", ""), "ask_id": ask_id})
        with self.answered:
            while ask_id not in self.answers:
                self.answered.wait()
            return self.answers.pop(ask_id)

    def run(self) -> None:
        for line in sys.stdin:
            if not line.strip():
                continue
            message = json.loads(line)
            if message.get("cmd") == "answer":
                with self.answered:
                    self.answers[message["ask_id"]] = message
                    self.answered.notify_all()
            elif message.get("cmd") == "bye":
                self.finish()
            else:
                threading.Thread(target=self.lines.reply, args=(message, self.serve), daemon=True).start()

    def finish(self, reply_to: Any = None) -> None:
        """Everything seen is written; then the SDK's shutdown, which may crash this process (SDK-CPP-07)."""
        if reply_to is not None:
            self.lines.write({"reply": reply_to, "ok": True})
        sys.stdout.flush()
        if self.client is not None:
            self.client.shutdown()
        os._exit(0)

    def serve(self, m: dict[str, Any]) -> dict[str, Any] | None:
        handler = getattr(self, "cmd_" + str(m.get("cmd")), None)
        if handler is None:
            raise NotApplicableError(f"rocketmq-client-python has no {m.get('cmd')!r} in this driver")
        return handler(m)

    def cmd_producer(self, m: dict[str, Any]) -> None:
        self.session = m["session"]
        self.client = self.sdk.Producer(m.get("group", "P"))
        self.client.set_name_server_address(self.namesrv)
        self.client.start()

    def cmd_transaction_producer(self, m: dict[str, Any]) -> None:
        self.session = m["session"]
        handle = m["handle"]

        def check(message: Any) -> Any:
            key = text(message.keys) or None
            self.pending_checks[key or ""] = n = self.pending_checks.get(key or "", 0) + 1
            self.emit("TX_CHECK", topic=text(message.topic), key=key, msg_id=text(message.id), attempt=n)
            answer = self.ask({"ask": "check", "producer": handle, "key": key, "n": n})
            return self._tx_status(answer.get("state"))

        self.client = self.sdk.TransactionMQProducer(m.get("group", "TP"), check)
        self.client.set_name_server_address(self.namesrv)
        self.client.start()

    def _tx_status(self, state: str | None) -> Any:
        """The protocol's LocalTransactionState name as the SDK's TransactionStatus."""
        names = {"COMMIT_MESSAGE": "COMMIT", "ROLLBACK_MESSAGE": "ROLLBACK"}
        return getattr(self.sdk.TransactionStatus, names.get(state or "", "UNKNOWN"))

    def _message(self, m: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        o = m.get("options", {})
        message = self.sdk.Message(m["topic"])
        message.set_body(base64.b64decode(m.get("body") or ""))
        if o.get("key"):
            message.set_keys(o["key"])
        if o.get("tags"):
            message.set_tags(o["tags"])
        if o.get("delay_level"):
            message.set_delay_time_level(int(o["delay_level"]))
        for k, v in (o.get("properties") or {}).items():
            message.set_property(k, v)
        if o.get("immunity_seconds") is not None:  # MessageConst.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS
            message.set_property("CHECK_IMMUNITY_TIME_IN_SECONDS",
                                 str(int(round(o["immunity_seconds"] * self.clock.wire_scale))))
        return message, o

    def cmd_send(self, m: dict[str, Any]) -> dict[str, Any]:
        message, o = self._message(m)
        mode = o.get("mode", "sync")
        if o.get("message_group") and mode == "sync":
            mode = "orderly"  # a 4.x ordered send: the queue is chosen by the sharding key
        self.emit("SEND_INVOKE", topic=m["topic"], key=o.get("key"), delay_level=o.get("delay_level"))
        if mode == "oneway":
            self.client.send_oneway(message)
            return {"result": {"status": "SEND_OK", "msg_id": "", "topic": m["topic"]}}
        if mode == "orderly":
            result = self.client.send_orderly_with_sharding_key(message, o.get("message_group") or o.get("key") or "")
        elif mode == "sync":
            result = self.client.send_sync(message)
        else:
            raise NotApplicableError(f"the 4.x Python SDK sends sync, oneway and orderly, not {mode}")
        status = "SEND_OK" if int(result.status) == 0 else result.status.name
        self.emit("SEND_OK", topic=m["topic"], key=o.get("key"), msg_id=result.msg_id, queue_offset=result.offset,
                  delay_level=o.get("delay_level"), detail={"tags": o["tags"]} if o.get("tags") else None)
        return {"result": {"status": status, "msg_id": result.msg_id, "topic": m["topic"],
                           "queue_offset": result.offset}}

    def cmd_send_in_transaction(self, m: dict[str, Any]) -> dict[str, Any]:
        message, o = self._message(m)
        self.emit("SEND_INVOKE", topic=m["topic"], key=o.get("key"))
        result = self.client.send_message_in_transaction(message, lambda msg, args: self._tx_status(o.get("local_state")))
        self.emit("TX_HALF", topic=m["topic"], key=o.get("key"), msg_id=result.msg_id,
                  detail={"local_state": o.get("local_state") or "UNKNOW",
                          **({"immunity_seconds": str(o["immunity_seconds"])} if o.get("immunity_seconds") else {})})
        return {"result": {"status": "SEND_OK", "msg_id": result.msg_id, "topic": m["topic"]}}

    def cmd_push_consumer_4x(self, m: dict[str, Any]) -> None:
        self.session = m["session"]
        o = m.get("options", {})
        if o.get("expression_type", "TAG") != "TAG":
            raise NotApplicableError("the 4.x Python SDK subscribes by tag only")
        if int(o.get("max_reconsume_times", -1)) != -1:
            raise NotApplicableError("the 4.x Python SDK cannot set maxReconsumeTimes (the C++ default 16 holds)")
        model = self.sdk.MessageModel.BROADCASTING if o.get("broadcasting") else self.sdk.MessageModel.CLUSTERING
        consumer = self.sdk.PushConsumer(m["group"], orderly=bool(o.get("orderly")), message_model=model)
        consumer.set_name_server_address(self.namesrv)
        handle, group = m["handle"], m["group"]

        def on_message(msg: Any) -> Any:
            view = {"msg_id": text(msg.id), "topic": text(msg.topic), "key": text(msg.keys) or None,
                    "tags": text(msg.tags) or None, "body": base64.b64encode(msg.body or b"").decode(),
                    "reconsume_times": msg.reconsume_times, "delivery_attempt": msg.reconsume_times + 1,
                    "queue_id": msg.queue_id, "queue_offset": msg.queue_offset, "stored_topic": text(msg.topic)}
            self.emit("DELIVER", topic=view["topic"], group=group, msg_id=view["msg_id"], key=view["key"],
                      queue_id=msg.queue_id, queue_offset=msg.queue_offset, attempt=view["delivery_attempt"])
            answer = self.ask({"ask": "consume", "consumer": handle, "view": view})
            ok = answer.get("outcome") == "SUCCESS"
            self.emit("CONSUME_OK" if ok else "CONSUME_FAIL", topic=view["topic"], group=group, msg_id=view["msg_id"],
                      key=view["key"], attempt=view["delivery_attempt"], detail={"outcome": answer.get("outcome", "")})
            return self.sdk.ConsumeStatus.CONSUME_SUCCESS if ok else self.sdk.ConsumeStatus.RECONSUME_LATER

        consumer.subscribe(m["topic"], on_message, o.get("expression", "*"))
        consumer.start()
        self.client = consumer

    def cmd_shutdown(self, m: dict[str, Any]) -> None:
        self.finish(reply_to=m.get("id"))

    def cmd_crash(self, m: dict[str, Any]) -> None:
        self.lines.write({"reply": m.get("id"), "ok": True})
        os._exit(9)  # no shutdown, no unregister: the broker sees the connection close


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--namesrv", default="127.0.0.1:9876")
    parser.add_argument("--time-scale", type=float, default=1.0, help="the server's wall seconds per spec second")
    parser.add_argument("--wire-scale", type=float, default=1.0,
                        help="the server's seconds per spec second in message properties (1: rmqc serve)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--epoch", type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--ask-base", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    clock = Clock(time.monotonic() if args.epoch is None else args.epoch, args.time_scale, args.wire_scale)
    try:
        library_check()
        if args.worker:
            from rocketmq import (
                client as sdk,  # the SDK loads librocketmq through ctypes when imported
            )
    except (ImportError, OSError) as exc:
        sys.stderr.write(f"rocketmq-client-python cannot load librocketmq: {exc}\n")
        return EXIT_NO_LIBRARY
    if args.worker:
        WorkerClient(sdk, args.namesrv, clock, args.ask_base).run()
    else:
        Relay(args.namesrv, clock).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
