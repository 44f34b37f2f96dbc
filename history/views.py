"""What clients hand to listeners and callers: message views and send results."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from history.values import ListenerOutcome


@dataclass(frozen=True)
class MessageView:
    """A delivered message as a listener sees it."""

    msg_id: str
    topic: str
    key: str | None
    tags: str | None
    body: bytes
    reconsume_times: int
    delivery_attempt: int
    queue_id: int
    queue_offset: int
    stored_topic: str
    message_group: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    receipt_handle: str | None = None


Listener = Callable[[MessageView], ListenerOutcome]
"""A scripted listener: given the delivery, what the user's code does."""


@dataclass(frozen=True)
class SendResult:
    status: str                 # SEND_OK, or the failure name
    msg_id: str
    topic: str
    queue_id: int | None = None
    queue_offset: int | None = None
    code: int = 0
    remark: str = ""
    attempts: tuple[str, ...] = ()
    offset_msg_id: str | None = None
    """The broker's id of the stored message (a 4.x ``SendResult.offsetMsgId``: store host and commit-log offset,
    MSGID-01), where the client shows it."""
