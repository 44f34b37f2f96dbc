"""A simple consumer's receive, tried again a second apart until something comes (5.x suites): a receive sent
before the broker makes a message visible comes back empty, on a wall clock as on a virtual one."""
from __future__ import annotations

from typing import Any

from adapters.base import Target


def receive_soon(target: Target, consumer: Any, max_messages: int, invisible_ms: int, tries: int = 5) -> list:
    """What ``consumer`` receives within ``tries`` receives one second apart; an empty list when all were empty.
    An SDK's refusal is raised as it comes."""
    views: list = []
    for attempt in range(tries):
        if attempt:
            target.advance(1000)
        views = consumer.receive(max_messages, invisible_ms=invisible_ms)
        if views:
            break
    return views
