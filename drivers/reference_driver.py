"""The reference driver: the in-process reference behind the driver protocol, so the whole protocol is
exercised here (``rmqc run --target "driver:python -m drivers.reference_driver"``).

It reads JSON-lines commands on stdin and writes replies, events (event-log v1 rows) and asks on
stdout. Listeners are either the harness's own (``"listener": "ask"``: every delivery is asked for an
outcome) or a script the driver runs itself (``"listener": {"script": ...}``, see ``ScriptListener``).
Commands that arrive while the driver waits for an answer (a listener that sends, say) are served
first, so the protocol nests the way the calls do.
"""
from __future__ import annotations

import json
import sys
from typing import Any, Callable, Iterator, Mapping, TextIO

from adapters.base import NotApplicable
from adapters.driver import REFERENCE_IMPLEMENTATION
from adapters.driver_codec import (
    PROTOCOL_VERSION,
    body_from_json,
    error_to_json,
    event_to_json,
    result_to_json,
    view_from_json,
    view_to_json,
)
from adapters.targets import reference_target
from history.profiles import REFERENCE_PROFILES
from history.values import ListenerOutcome, LocalTransactionState
from history.views import MessageView
from reference_impl import VERSION
from spec import versions


class ScriptListener:
    """A listener the driver runs without asking: ``{"default": OUTCOME, "keys": {KEY: [OUTCOME, ...]}}``
    gives each key's outcomes in delivery order (the last one repeats), others the default."""

    def __init__(self, script: Mapping[str, Any]) -> None:
        self.default = ListenerOutcome[script.get("default", "SUCCESS")]
        self.keys = {k: [ListenerOutcome[o] for o in v] for k, v in (script.get("keys") or {}).items()}
        self.seen: dict[str, int] = {}

    def __call__(self, view: MessageView) -> ListenerOutcome:
        outcomes = self.keys.get(view.key or "")
        if not outcomes:
            return self.default
        n = self.seen[view.key or ""] = self.seen.get(view.key or "", 0) + 1
        return outcomes[min(n, len(outcomes)) - 1]


class ReferenceDriver:
    def __init__(self, stdin: TextIO, stdout: TextIO) -> None:
        self.stdin, self.stdout = stdin, stdout
        self.targets: dict[str, Any] = {}  # ReferenceTarget, or KafkaPatternTarget for kafka-retry
        self.flushed: dict[str, int] = {}
        self.handles: dict[str, Any] = {}
        self._asks = iter(range(1, 1 << 62))

    # ---- wire ---------------------------------------------------------------------------------

    def write(self, message: Mapping[str, Any]) -> None:
        self.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
        self.stdout.flush()

    def lines(self) -> Iterator[dict[str, Any]]:
        for line in self.stdin:
            if line.strip():
                yield json.loads(line)

    def flush_events(self) -> None:
        for name, target in self.targets.items():
            events = target.events()
            for event in events[self.flushed[name]:]:
                self.write({"event": event_to_json(event), "target": name})
            self.flushed[name] = len(events)

    def ask(self, question: dict[str, Any]) -> dict[str, Any]:
        """Ask the harness (a listener outcome, a transaction check) and serve commands until it answers."""
        ask_id = next(self._asks)
        self.flush_events()
        self.write({**question, "ask_id": ask_id})
        for message in self.lines():
            if message.get("cmd") == "answer" and message.get("ask_id") == ask_id:
                return message
            self.serve(message)
        raise SystemExit(0)  # the harness went away mid-ask

    def run(self) -> None:
        for message in self.lines():
            if message.get("cmd") == "bye":
                self.write({"reply": message.get("id"), "ok": True})
                return
            self.serve(message)

    def serve(self, message: dict[str, Any]) -> None:
        try:
            handler = getattr(self, "cmd_" + str(message.get("cmd")), None)
            if handler is None:
                raise NotApplicable(f"the reference driver has no command {message.get('cmd')!r}")
            answer = handler(message) or {}
            self.flush_events()
            self.write({"reply": message.get("id"), "ok": True, **answer})
        except Exception as exc:  # every failure is a reply, never a dead driver
            self.flush_events()
            self.write({"reply": message.get("id"), "ok": False, "error": error_to_json(exc)})

    # ---- commands -----------------------------------------------------------------------------

    def cmd_hello(self, m: dict[str, Any]) -> dict[str, Any]:
        return {"protocol": PROTOCOL_VERSION, "driver": "reference", "version": VERSION,
                "implementation": REFERENCE_IMPLEMENTATION,
                "profiles": list(REFERENCE_PROFILES), "clock": "virtual", "time_scale": 1.0}

    def cmd_open(self, m: dict[str, Any]) -> dict[str, Any]:
        target = reference_target(m["profile"], run_id=m.get("run_id", "run"), seed=int(m.get("seed", 0)),
                                  release=m.get("release", versions.LATEST))
        self.targets[m["target"]] = target
        self.flushed[m["target"]] = 0
        return {"capabilities": sorted(target.capabilities), "version": target.version}

    def cmd_close(self, m: dict[str, Any]) -> None:
        self.flush_events()
        self.targets.pop(m["target"], None)
        self.flushed.pop(m["target"], None)

    def _t(self, m: dict[str, Any]) -> Any:
        return self.targets[m["target"]]

    def cmd_create_topic(self, m: dict[str, Any]) -> None:
        self._t(m).create_topic(m["name"], **m.get("options", {}))

    def cmd_update_topic(self, m: dict[str, Any]) -> None:
        self._t(m).update_topic(m["name"], **m.get("options", {}))

    def cmd_configure_group(self, m: dict[str, Any]) -> None:
        self._t(m).configure_group(m["name"], **m.get("options", {}))

    def cmd_configure_broker(self, m: dict[str, Any]) -> None:
        self._t(m).configure_broker(**m.get("settings", {}))

    def cmd_inject_fault(self, m: dict[str, Any]) -> None:
        self._t(m).inject_fault(m["name"], m.get("count", 1))

    def cmd_inject_send_fault(self, m: dict[str, Any]) -> None:
        self._t(m).inject_send_fault(m["broker"], m["outcome"], m.get("count", 1))

    def cmd_stored_messages(self, m: dict[str, Any]) -> dict[str, Any]:
        return {"messages": self._t(m).stored_messages(m["topic"])}

    def cmd_read_stored(self, m: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [view_to_json(v) for v in self._t(m).read_stored(m["topic"])]}

    def cmd_query_messages(self, m: dict[str, Any]) -> dict[str, Any]:
        found = self._t(m).query_messages(m["topic"], key=m.get("key"), msg_id=m.get("msg_id"))
        return {"messages": [view_to_json(v) for v in found]}

    def cmd_now(self, m: dict[str, Any]) -> dict[str, Any]:
        return {"now_ms": self._t(m).now_ms()}

    def cmd_advance(self, m: dict[str, Any]) -> dict[str, Any]:
        self._t(m).advance(int(m["ms"]))
        return {"now_ms": self._t(m).now_ms()}

    def cmd_settle(self, m: dict[str, Any]) -> dict[str, Any]:
        self._t(m).settle(int(m["max_ms"]))
        return {"now_ms": self._t(m).now_ms()}

    def cmd_step(self, m: dict[str, Any]) -> dict[str, Any]:
        """Run the next pending action if it is due by ``deadline_ms``; else move the clock there."""
        clock = self._t(m).sim.clock
        ran = clock.step_until(int(m["deadline_ms"]))
        return {"ran": ran, "now_ms": clock.now_ms}

    def _listener(self, m: dict[str, Any]) -> Callable[[MessageView], ListenerOutcome]:
        spec = m.get("listener", "ask")
        if isinstance(spec, dict):
            return ScriptListener(spec.get("script", {}))
        handle = m["handle"]

        def asked(view: MessageView) -> ListenerOutcome:
            answer = self.ask({"ask": "consume", "target": m["target"], "consumer": handle, "view": view_to_json(view)})
            return ListenerOutcome[answer["outcome"]]

        return asked

    def cmd_producer(self, m: dict[str, Any]) -> None:
        self.handles[m["handle"]] = self._t(m).producer(m.get("group", "P"), **m.get("options", {}))

    def cmd_transaction_producer(self, m: dict[str, Any]) -> None:
        def check(key: str | None, n: int) -> LocalTransactionState | None:
            answer = self.ask({"ask": "check", "target": m["target"], "producer": m["handle"], "key": key, "n": n})
            return None if answer.get("state") is None else LocalTransactionState[answer["state"]]

        self.handles[m["handle"]] = self._t(m).transaction_producer(m.get("group", "TP"), check,
                                                                          m.get("topics", []))

    def cmd_push_consumer_4x(self, m: dict[str, Any]) -> None:
        self.handles[m["handle"]] = self._t(m).push_consumer_4x(m["group"], m["topic"], self._listener(m),
                                                                **m.get("options", {}))

    def cmd_push_consumer_5x(self, m: dict[str, Any]) -> None:
        self.handles[m["handle"]] = self._t(m).push_consumer_5x(m["group"], m["topic"], self._listener(m),
                                                                **m.get("options", {}))

    def cmd_simple_consumer_5x(self, m: dict[str, Any]) -> None:
        self.handles[m["handle"]] = self._t(m).simple_consumer_5x(m["group"], m["topic"], **m.get("options", {}))

    def cmd_send(self, m: dict[str, Any]) -> dict[str, Any]:
        options = dict(m.get("options", {}))
        result = self.handles[m["handle"]].send(m["topic"], body_from_json(m.get("body")), **options)
        return {"result": result_to_json(result)}

    def cmd_send_batch(self, m: dict[str, Any]) -> dict[str, Any]:
        messages = [{**item, "body": body_from_json(item.get("body"))} if "body" in item else item
                    for item in m["messages"]]
        return {"results": [result_to_json(r) for r in self.handles[m["handle"]].send_batch(messages)]}

    def cmd_send_in_transaction(self, m: dict[str, Any]) -> None:
        options = dict(m.get("options", {}))
        if options.get("local_state") is not None:
            options["local_state"] = LocalTransactionState[options["local_state"]]
        self.handles[m["handle"]].send_in_transaction(m["topic"], body_from_json(m.get("body")), **options)

    def cmd_receive(self, m: dict[str, Any]) -> dict[str, Any]:
        views = self.handles[m["handle"]].receive(int(m.get("max_messages", 16)), int(m.get("invisible_ms", 30_000)))
        return {"views": [view_to_json(v) for v in views]}

    def cmd_ack(self, m: dict[str, Any]) -> dict[str, Any]:
        return {"code": self.handles[m["handle"]].ack(view_from_json(m["view"]))}

    def cmd_change_invisible_duration(self, m: dict[str, Any]) -> dict[str, Any]:
        code, receipt = self.handles[m["handle"]].change_invisible_duration(view_from_json(m["view"]),
                                                                            int(m["invisible_ms"]))
        return {"code": code, "receipt_handle": receipt}

    def cmd_shutdown(self, m: dict[str, Any]) -> None:
        self.handles[m["handle"]].shutdown()

    def cmd_crash(self, m: dict[str, Any]) -> None:
        self.handles[m["handle"]].crash()

    def cmd_consumer_state(self, m: dict[str, Any]) -> dict[str, Any]:
        """A 4.x push consumer's rebalance state: its id, its queues and its in-memory offsets."""
        c = self.handles[m["handle"]]
        return {"client_id": c.client_id, "assigned": [list(q) for q in sorted(c.assigned)],
                "offsets": [[t, q, o] for (t, q), o in sorted(c.offsets.items())]}

    def cmd_committed_offset(self, m: dict[str, Any]) -> dict[str, Any]:
        """The consume offset the broker stores for a group on a queue."""
        return {"offset": self._t(m).committed_offset(m["group"], m["topic"], int(m["queue_id"]))}

def main() -> int:
    ReferenceDriver(sys.stdin, sys.stdout).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
