"""The driver protocol's values as JSON (``spec/schemas/driver-protocol.schema.json``): message views,
send results, events in the event-log schema, and errors. Shared by the harness side
(``adapters.driver``) and the drivers, so both read and write the same shapes.

One JSON object per line. The harness writes commands ``{"id", "cmd", ...}``; a driver writes
``{"event": {...}, "target": T}`` as things happen, ``{"ask": "consume" | "check", "ask_id", ...}``
when it needs the harness's listener or transaction check (answered by ``{"cmd": "answer", "ask_id",
...}``), and exactly one ``{"reply": id, "ok": true, ...}`` or ``{"reply": id, "ok": false, "error":
{...}}`` per command.
"""
from __future__ import annotations

import base64
import dataclasses
from typing import Any, Mapping

from history.events import Event
from history.views import MessageView, SendResult
from reference_impl.rules import codes
from reference_impl.rules.delay import BatchRejected, TimerMessageIllegal
from reference_impl.rules.retry5x import IllegalInvisibleTime
from reference_impl.rules.sql92 import SqlParseError

from .base import NotApplicable

PROTOCOL_VERSION = 1


class DriverError(RuntimeError):
    """The driver failed in a way the protocol has no better word for; the message is the driver's."""


def body_to_json(body: bytes) -> str:
    return base64.b64encode(body).decode("ascii")


def body_from_json(text: str | None) -> bytes:
    return base64.b64decode(text or "")


def view_to_json(view: MessageView) -> dict[str, Any]:
    out = dataclasses.asdict(view)
    out["body"] = body_to_json(view.body)
    out["properties"] = dict(view.properties)
    return out


VIEW_DEFAULTS: Mapping[str, Any] = {"key": None, "tags": None, "queue_id": -1, "queue_offset": -1}
"""What a view the schema lets a driver leave out stands for (an SDK that does not show the queue, say)."""


def view_from_json(data: Mapping[str, Any]) -> MessageView:
    """A view as the schema has it: the fields it requires, the others defaulted (``stored_topic``: the topic)."""
    known = {f.name for f in dataclasses.fields(MessageView)}
    return MessageView(**{**VIEW_DEFAULTS, "stored_topic": data.get("topic"),
                          **{k: v for k, v in data.items() if k in known}, "body": body_from_json(data.get("body"))})


def result_to_json(result: SendResult) -> dict[str, Any]:
    out = dataclasses.asdict(result)
    out["attempts"] = list(result.attempts)
    return out


def result_from_json(data: Mapping[str, Any]) -> SendResult:
    return SendResult(**{**data, "attempts": tuple(data.get("attempts", ()))})


def event_to_json(event: Event) -> dict[str, Any]:
    out = dataclasses.asdict(event)
    out["detail"] = dict(event.detail)
    return out


def event_from_json(data: Mapping[str, Any], target: str | None = None) -> Event:
    fields = {k: v for k, v in data.items() if k in _EVENT_FIELDS}
    if target is not None:
        fields["target"] = target
    return Event(**fields)


_EVENT_FIELDS = {f.name for f in dataclasses.fields(Event)}

# errors a target may raise that suites look at: rebuilt by name on the harness side
_ERRORS: dict[str, type[BaseException]] = {
    "NotApplicable": NotApplicable, "BatchRejected": BatchRejected, "TimerMessageIllegal": TimerMessageIllegal,
    "SqlParseError": SqlParseError, "IllegalInvisibleTime": IllegalInvisibleTime, "ValueError": ValueError,
}


def error_to_json(exc: BaseException) -> dict[str, Any]:
    known = next((c.__name__ for c in type(exc).__mro__ if c.__name__ in _ERRORS), type(exc).__name__)
    out: dict[str, Any] = {"type": known, "message": str(exc)}  # a subclass travels as the error it refines
    if isinstance(exc, codes.RocketMQError):
        out.update(code=exc.code, message=exc.message)
    elif getattr(exc, "code", None) is not None:
        out["code"] = exc.code  # type: ignore[attr-defined]
    return out


def error_from_json(data: Mapping[str, Any]) -> BaseException:
    """The exception a driver reported, as the suites expect to catch it."""
    kind, message = data.get("type", "Error"), data.get("message", "")
    if "code" in data and isinstance(data["code"], int) and kind not in _ERRORS:
        return codes.RocketMQError(data["code"], message)  # RocketMQError or an SDK's coded error
    if kind in _ERRORS:
        return _ERRORS[kind](message)
    return DriverError(f"{kind}: {message}")
