"""FIFO message groups: queue choice, broker OrderInfo, blocking and consumed counts (FIFO-01..07)."""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Sequence

from spec import versions

from . import codes
from .java_semantics import java_is_blank
from .primitives import (
    guava_consistent_hash,
    java_abs_int,
    java_rem,
    java_string_hash,
    sha256_mod,
    siphash24,
)

MAX_MESSAGE_GROUP_SIZE = 64


def proxy_queue_for_group(message_group: str, write_queue_count: int) -> int:
    """The proxy's authoritative queue index: Guava consistentHash of Java hashCode (FIFO-01)."""
    return guava_consistent_hash(java_string_hash(message_group), write_queue_count)


def java_client_queue_for_group(message_group: str, queue_count: int) -> int:
    """Java 5.x SDK: ``LongMath.mod(sipHash24(group), n)`` (FIFO-02)."""
    return siphash24(message_group.encode("utf-8")) % queue_count


def python_client_queue_for_group(message_group: str, queue_count: int) -> int:
    """Python 5.x SDK: ``int(sha256(group)) % n`` (FIFO-02)."""
    return sha256_mod(message_group, queue_count)


def select_queue_by_hash_4x(arg_hash: int, queue_count: int) -> int:
    """4.x ``SelectMessageQueueByHash``: Java remainder, then abs if negative (FIFO-03)."""
    value = java_rem(arg_hash, queue_count)
    return java_abs_int(value) if value < 0 else value


def message_group_error(group: str, max_size: int = MAX_MESSAGE_GROUP_SIZE) -> str | None:
    """The proxy's refusal of a message group, in ``SendMessageActivity.validateMessageGroup``'s order and
    words, or None (FIFO-07). Blank is ``StringUtils.isBlank`` (``Character.isWhitespace``: U+00A0 is not
    blank, U+001F is)."""
    if java_is_blank(group):
        return "message group cannot be the char sequence of whitespace"
    if len(group.encode("utf-8")) >= max_size:
        return f"message group exceed the max size {max_size}"
    if any(unicodedata.category(ch) == "Cc" for ch in group):
        return "message group cannot contain control character"
    return None


def validate_message_group(group: str, max_size: int = MAX_MESSAGE_GROUP_SIZE) -> int:
    """Proxy message-group check; returns OK or ILLEGAL_MESSAGE_GROUP (FIFO-07)."""
    return codes.OK if message_group_error(group, max_size) is None else codes.ILLEGAL_MESSAGE_GROUP


@dataclass
class OrderInfo:
    """The broker's record of the last ordered pop on one (topic@group, queue) (FIFO-04..06)."""

    offset_list: list[int]
    pop_time: int
    invisible_time: int
    attempt_id: str
    commit_bits: int = 0
    offset_next_visible_time: dict[int, int] = field(default_factory=dict)
    offset_consumed_count: dict[int, int] = field(default_factory=dict)

    @staticmethod
    def build_offset_list(offsets: Sequence[int]) -> list[int]:
        """``[first, o1-first, o2-first, ...]``; a single offset is kept as is (FIFO-04)."""
        if len(offsets) <= 1:
            return list(offsets)
        first = offsets[0]
        return [first] + [o - first for o in offsets[1:]]

    def queue_offset(self, index: int) -> int:
        if index == 0:
            return self.offset_list[0]
        return self.offset_list[0] + self.offset_list[index]

    def offsets(self) -> list[int]:
        return [self.queue_offset(i) for i in range(len(self.offset_list))]

    def is_acked(self, index: int) -> bool:
        return bool(self.commit_bits & (1 << index))

    def next_offset(self) -> int:
        """Queue offset of the first un-acked index, ``last + 1`` if all acked, -2 if empty (FIFO-04)."""
        if not self.offset_list:
            return -2
        for i in range(len(self.offset_list)):
            if not self.is_acked(i):
                return self.queue_offset(i)
        return self.queue_offset(len(self.offset_list) - 1) + 1

    def need_block(self, attempt_id: str, now: int, current_invisible_time: int) -> bool:
        """``OrderInfo.needBlock`` (FIFO-05)."""
        if not self.offset_list or attempt_id == self.attempt_id:
            return False
        invisible = self.invisible_time if self.invisible_time > 0 else current_invisible_time
        for i, offset in enumerate(self.offsets()):
            if self.is_acked(i):
                continue
            visible_at = self.offset_next_visible_time.get(offset, self.pop_time + invisible)
            if now < visible_at:
                return True
        return False


ORDER_INFO_PER_OFFSET_SINCE = "5.1.0"


def order_info_per_offset(release: str) -> bool:
    """Whether the broker's order info keeps a consumed count per offset and blocks a queue by each popped
    message's own next visible time (``OrderInfo.needBlock``, FIFO-05/06): from 5.1.0. At 5.0.0 it keeps one
    count per queue (``ConsumerOrderInfoManager.update``: the same offsets popped again count one more, others
    reset it to 0) and blocks while the last pop is younger than the *new* receive's invisible time
    (``checkBlock``); the model does not follow 5.0.0 there."""
    return versions.holds(release, since=ORDER_INFO_PER_OFFSET_SINCE)


CHANGE_SETS_NEXT_VISIBLE_SINCE = "5.1.0"


def change_sets_next_visible_time(release: str) -> bool:
    """Whether a change of invisible time on an ordered message sets that offset's next visible time in the
    queue's ``OrderInfo`` (``ChangeInvisibleTimeProcessor.processChangeInvisibleTimeForOrder`` ->
    ``ConsumerOrderInfoManager.updateNextVisibleTime``), so the queue unblocks then: from 5.1.0. At 5.0.0 the
    processor has no ordered branch and the queue stays blocked until the pop's own invisible time ends
    (FIFO-05)."""
    return versions.holds(release, since=CHANGE_SETS_NEXT_VISIBLE_SINCE)


def commit_and_next(info: OrderInfo | None, queue_offset: int, pop_time: int) -> int:
    """``commitAndNext`` (FIFO-04): the next offset to consume, or -1 / -2 for the special cases."""
    if info is None:
        return queue_offset + 1
    if not info.offset_list:
        return -1
    if pop_time != info.pop_time:
        return -2
    offsets = info.offsets()
    if queue_offset not in offsets:
        return -1
    info.commit_bits |= 1 << offsets.index(queue_offset)
    return info.next_offset()


def merge_consumed_count(previous: OrderInfo | None, new_offsets: Sequence[int], attempt_id: str) -> dict[int, int]:
    """Per-offset consumed counts after a new ordered pop (FIFO-06)."""
    if previous is None:
        return {}
    if previous.attempt_id == attempt_id:
        return dict(previous.offset_consumed_count)
    prev_offsets = set(previous.offsets())
    return {o: previous.offset_consumed_count.get(o, 0) + 1 for o in new_offsets if o in prev_offsets}


def min_consumed_count(counts: dict[int, int], offsets: Sequence[int]) -> int:
    """Per-queue minimum of the counts; 0 if some offset has none (FIFO-06)."""
    return min((counts.get(o, 0) for o in offsets), default=0)


def fifo_delivery_attempt(consumed_count: int) -> int:
    """A FIFO message's delivery attempt is its consumed count + 1 (FIFO-06)."""
    return consumed_count + 1


def local_proxy_reconsume_times(counts: dict[int, int], offsets: Sequence[int], stored: int) -> int:
    """The ``reconsumeTimes`` a proxy in local mode gives every message of an ordered pop (FIFO-06): the pop's
    per-queue minimum count when it is above 0, else the message's stored value
    (``LocalMessageService.popMessage@rocketmq-all-5.5.0`` reads the count by ``topic@queueId``, never by offset)."""
    count = min_consumed_count(counts, offsets)
    return count if count > 0 else stored
