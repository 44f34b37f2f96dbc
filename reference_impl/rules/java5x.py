"""The Java 5.x client's own habits (``org.apache.rocketmq:rocketmq-client-java`` 5.2.0, the ``java/`` folder of
apache/rocketmq-clients at the tag ``java-5.2.0``), where they differ from what the other statements say. Pure
functions; the suites pick them for a target that drives the Java client alone (``suites.harness``).

- SDK-JAVA5-01: a producer declares every topic it sends to (``ProducerImpl.send`` adds it to the settings' topics
  before the route lookup), so a transactional producer is checked for its own halves without declaring topics.
- SDK-JAVA5-02: the client refuses a body over the settings' maximum and a message type its topic does not accept
  itself (no response code: -1), before the proxy could answer MESSAGE_BODY_TOO_LARGE or ILLEGAL_MESSAGE_GROUP.
"""
from __future__ import annotations

from typing import Sequence

MAX_BODY_FROM_PROXY = 4 * 1024 * 1024
"""``publishing.max_body_size`` of a 5.x proxy's settings (SDK-JAVA5-02's ``maxBodySizeFromProxy``)."""
BODY_TOO_LARGE = "Message body size exceeds the threshold, max size={} bytes"
TYPE_NOT_ACCEPTED = "Current message type not match with topic accept message types"


def declared_topics(declared: Sequence[str], sent_to: Sequence[str]) -> frozenset[str]:
    """The topics a producer's settings name (SDK-JAVA5-01): those it was built with and every topic it sent to."""
    return frozenset(declared) | frozenset(sent_to)


def client_refusal(body_size: int, message_type: str, topic_accepts: Sequence[str],
                   max_body: int = MAX_BODY_FROM_PROXY) -> tuple[int, str] | None:
    """What the client itself answers a send (SDK-JAVA5-02), in its order: a body over ``max_body``
    (``PublishingMessageImpl``), then a message type the topic's queues do not accept (``ProducerImpl.send0``);
    None when the send reaches the proxy. Both refusals carry no response code (-1)."""
    if body_size > max_body:
        return -1, BODY_TOO_LARGE.format(max_body)
    if topic_accepts and message_type not in topic_accepts:
        return -1, TYPE_NOT_ACCEPTED
    return None
