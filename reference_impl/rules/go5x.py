"""The Go 5.x client's own habits (``github.com/apache/rocketmq-clients/golang/v5`` v5.1.4, the ``golang/`` folder
of apache/rocketmq-clients at the tag ``golang/v5.1.4``), where it differs from what the spec states for the Java
and Python 5.x clients. Pure functions; the suites pick them for a target with the capability ``sdk.go``.

- SDK-GO-01: a producer declares every topic it sends to (``defaultProducer.send0`` adds the topic to the
  publishing settings before the route lookup syncs them), so a transactional producer is checked for its own
  halves without declaring topics (TX-07's "never asked" holds for the Java and Python clients).
- SDK-GO-02: a simple consumer's ``Ack`` returns an error only when the call itself fails; the server's status is
  not read, so an ack the server refuses (an expired receipt handle: INVALID_RECEIPT_HANDLE, RETRY-5X-09) reports
  success to the program.
"""
from __future__ import annotations

from typing import Sequence

from . import codes

SDK = "go"
"""The ``sdk`` value of a producer or consumer that follows these habits."""


def declared_topics(declared: Sequence[str], sent_to: Sequence[str]) -> frozenset[str]:
    """The topics a producer's settings name (SDK-GO-01): those given with ``WithTopics`` and every topic it sent
    to (``send0`` stores it in the settings' topics; ``getMessageQueues`` telemeters the settings)."""
    return frozenset(declared) | frozenset(sent_to)


def simple_ack_code(server_code: int, transport_failed: bool = False) -> int:
    """What a simple consumer's ``Ack`` tells the program (SDK-GO-02): OK whatever the server answered; only a
    failed call (no answer) is an error, which carries no RocketMQ code (-1)."""
    return -1 if transport_failed else codes.OK
