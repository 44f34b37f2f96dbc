"""A driver for the 4.x SDK ``rocketmq-client-python`` (module ``rocketmq.client``, over librocketmq).

It runs in its own virtual environment (its package name ``rocketmq`` clashes with the 5.x SDK), so it
imports nothing from this project: the protocol (spec/schemas/driver-protocol.schema.json) is written
out here with the standard library. Usage, against a 4.x name server whose broker auto-creates topics:

    .venv-4x/bin/python drivers/remoting4x_driver.py --namesrv 127.0.0.1:9876

Capabilities: sync and one-way sends, delay levels, tag subscriptions, concurrent and orderly push
consumers, on the wall clock (spec time = wall time). Listeners are asked of the harness. Without
librocketmq the SDK cannot load: the driver says so on stderr and exits with code 3.
"""
from __future__ import annotations

import argparse
import base64
import itertools
import json
import os
import sys
import threading
import time
from typing import Any

REMOTING_4X = "remoting-4.x"  # a value of the driver protocol; this program imports nothing of the project

PROTOCOL_VERSION = 1
CAPABILITIES = ["send.sync", "send.oneway", "delay.level", "consumer.filter.tag", "consumer.push4x.concurrent",
                "consumer.push4x.orderly"]
EXIT_NO_LIBRARY = 3
LIBRARY_SHA256 = "ed3fce39f2b926637637a2b8b9122799f207b0cdf98dbd9110505bf43170fa30"
"""``rocketmq/librocketmq.so`` of the registry's rocketmq-python-cvs 2.1.0.3 (drivers/install_librocketmq.py)."""


def text(value: Any) -> str:
    """A value the SDK may hand over as bytes, as text."""
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


class Driver:
    def __init__(self, sdk: Any, namesrv: str, auto_create: bool) -> None:
        self.sdk, self.namesrv, self.auto_create = sdk, namesrv, auto_create
        self.out_lock = threading.Lock()
        self.started = time.monotonic()
        self.sessions: dict[str, dict[str, Any]] = {}
        self.handles: dict[str, Any] = {}
        self.answers: dict[int, dict[str, Any]] = {}
        self.answered = threading.Condition()
        self.ask_ids = itertools.count(1)
        self.seq = itertools.count()

    def write(self, message: dict[str, Any]) -> None:
        with self.out_lock:
            sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
            sys.stdout.flush()

    def now_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    def emit(self, target: str, kind: str, **fields: Any) -> None:
        s = self.sessions[target]
        row = {"run_id": s["run_id"], "target": "rocketmq-client-python", "profile": s["profile"], "seq": next(self.seq),
               "ts_ms": self.now_ms(), "kind": kind, **{k: v for k, v in fields.items() if v is not None}}
        self.write({"event": row, "target": target})

    def ask(self, question: dict[str, Any]) -> dict[str, Any]:
        """Listener callbacks run on the SDK's threads: they wait for the main loop to hand the answer over."""
        ask_id = next(self.ask_ids)
        self.write({**question, "ask_id": ask_id})
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
                continue
            if message.get("cmd") == "bye":
                self.shutdown_all()
                self.write({"reply": message.get("id"), "ok": True})
                return
            threading.Thread(target=self.serve, args=(message,), daemon=True).start()

    def serve(self, message: dict[str, Any]) -> None:
        try:
            handler = getattr(self, "cmd_" + str(message.get("cmd")), None)
            if handler is None:
                raise NotApplicableError(f"rocketmq-client-python has no {message.get('cmd')!r} in this driver")
            self.write({"reply": message.get("id"), "ok": True, **(handler(message) or {})})
        except NotApplicableError as exc:
            self.write({"reply": message.get("id"), "ok": False, "error": {"type": "NotApplicable", "message": str(exc)}})
        except Exception as exc:  # the SDK's errors carry no RocketMQ code: -1 as the client's own
            self.write({"reply": message.get("id"), "ok": False,
                        "error": {"type": "RocketMQError", "code": -1, "message": f"{type(exc).__name__}: {exc}"}})

    def shutdown_all(self) -> None:
        for handle in list(self.handles.values()):
            try:
                handle.shutdown()
            except Exception:
                pass

    # ---- commands -----------------------------------------------------------------------------

    def cmd_hello(self, m: dict[str, Any]) -> dict[str, Any]:
        return {"protocol": PROTOCOL_VERSION, "driver": "rocketmq-client-python", "version": "2.0.0",
                "profiles": [REMOTING_4X], "clock": "wall", "time_scale": 1.0, "library_sha256": LIBRARY_SHA256}

    def cmd_open(self, m: dict[str, Any]) -> dict[str, Any]:
        if m["profile"] != REMOTING_4X:
            raise NotApplicableError(f"the 4.x SDK runs {REMOTING_4X}, not {m['profile']}")
        self.sessions[m["target"]] = {"profile": m["profile"], "run_id": m.get("run_id", "run")}
        return {"capabilities": CAPABILITIES, "version": "2.0.0"}

    def cmd_close(self, m: dict[str, Any]) -> None:
        for name in [h for h in self.handles if h.startswith(m["target"] + "-")]:
            try:
                self.handles.pop(name).shutdown()
            except Exception:
                pass

    def cmd_create_topic(self, m: dict[str, Any]) -> None:
        if not self.auto_create:
            raise NotApplicableError(f"create topic {m['name']} with mqadmin first (or start the driver with "
                                     f"--auto-create against a broker with autoCreateTopicEnable=true)")

    def cmd_now(self, m: dict[str, Any]) -> dict[str, Any]:
        return {"now_ms": self.now_ms()}

    def cmd_advance(self, m: dict[str, Any]) -> dict[str, Any]:
        time.sleep(int(m["ms"]) / 1000)
        return {"now_ms": self.now_ms()}

    def cmd_settle(self, m: dict[str, Any]) -> dict[str, Any]:
        time.sleep(min(int(m["max_ms"]), 5000) / 1000)  # a wall clock: let retries in flight happen
        return {"now_ms": self.now_ms()}

    def cmd_producer(self, m: dict[str, Any]) -> None:
        producer = self.sdk.Producer(m.get("group", "P"))
        producer.set_name_server_address(self.namesrv)
        producer.start()
        self.handles[m["handle"]] = producer

    def cmd_send(self, m: dict[str, Any]) -> dict[str, Any]:
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
        producer = self.handles[m["handle"]]
        self.emit(m["target"], "SEND_INVOKE", topic=m["topic"], key=o.get("key"), delay_level=o.get("delay_level"))
        if o.get("mode", "sync") == "oneway":
            producer.send_oneway(message)
            return {"result": {"status": "SEND_OK", "msg_id": "", "topic": m["topic"]}}
        if o.get("mode", "sync") != "sync":
            raise NotApplicableError(f"this driver sends sync and oneway, not {o.get('mode')}")
        result = producer.send_sync(message)
        status = "SEND_OK" if int(result.status) == 0 else result.status.name
        self.emit(m["target"], "SEND_OK", topic=m["topic"], key=o.get("key"), msg_id=result.msg_id,
                  queue_offset=result.offset, delay_level=o.get("delay_level"))
        return {"result": {"status": status, "msg_id": result.msg_id, "topic": m["topic"], "queue_offset": result.offset}}

    def cmd_push_consumer_4x(self, m: dict[str, Any]) -> None:
        o = m.get("options", {})
        if o.get("broadcasting") or o.get("expression_type", "TAG") != "TAG":
            raise NotApplicableError("this driver runs clustering consumers with tag subscriptions")
        consumer = self.sdk.PushConsumer(m["group"], orderly=bool(o.get("orderly")))
        consumer.set_name_server_address(self.namesrv)
        target, handle, group = m["target"], m["handle"], m["group"]

        def on_message(msg: Any) -> Any:
            # the SDK hands id, topic, keys, tags and body to listeners as bytes
            view = {"msg_id": text(msg.id), "topic": text(msg.topic), "key": text(msg.keys) or None,
                    "tags": text(msg.tags) or None, "body": base64.b64encode(msg.body or b"").decode(),
                    "reconsume_times": msg.reconsume_times,
                    "delivery_attempt": msg.reconsume_times + 1, "queue_id": msg.queue_id,
                    "queue_offset": msg.queue_offset, "stored_topic": text(msg.topic)}
            self.emit(target, "DELIVER", topic=view["topic"], group=group, msg_id=view["msg_id"], key=view["key"],
                      queue_id=msg.queue_id, queue_offset=msg.queue_offset, attempt=view["delivery_attempt"])
            answer = self.ask({"ask": "consume", "target": target, "consumer": handle, "view": view})
            ok = answer.get("outcome") == "SUCCESS"
            self.emit(target, "CONSUME_OK" if ok else "CONSUME_FAIL", topic=view["topic"], group=group,
                      msg_id=view["msg_id"],
                      key=view["key"], attempt=view["delivery_attempt"], detail={"outcome": answer.get("outcome", "")})
            return self.sdk.ConsumeStatus.CONSUME_SUCCESS if ok else self.sdk.ConsumeStatus.RECONSUME_LATER

        consumer.subscribe(m["topic"], on_message, o.get("expression", "*"))
        consumer.start()
        self.handles[handle] = consumer

    def cmd_shutdown(self, m: dict[str, Any]) -> None:
        self.handles.pop(m["handle"]).shutdown()


class NotApplicableError(Exception):
    pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namesrv", default="127.0.0.1:9876")
    parser.add_argument("--auto-create", action="store_true", help="the broker creates topics on first use")
    args = parser.parse_args()
    try:
        library_check()
        from rocketmq import client as sdk
    except (ImportError, OSError) as exc:  # the SDK loads librocketmq through ctypes when imported
        sys.stderr.write(f"rocketmq-client-python cannot load librocketmq: {exc}\n")
        return EXIT_NO_LIBRARY
    Driver(sdk, args.namesrv, args.auto_create).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
