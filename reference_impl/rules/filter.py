"""Message filtering: tag codes, tag expressions, where filtering happens (FILTER-01..03), and what the
broker answers to a SQL92 subscription (FILTER-04). The SQL92 language is ``sql92`` (FILTER-05, FILTER-06).
"""
from __future__ import annotations

from dataclasses import dataclass

from spec import versions

from . import codes, sql92
from .java_semantics import int32, java_split, java_trim
from .primitives import java_string_hash

SQL_NOT_ENABLED_REMARK = "The broker does not support consumer to filter message by SQL92"


# ---- tags (FILTER-01..03) -------------------------------------------------------------------------

def tags_code(tags: str | None) -> int:
    """``tagsString2tagsCode``: Java hashCode of the TAGS property, 0 when absent or empty (FILTER-01)."""
    return java_string_hash(tags) if tags else 0


@dataclass(frozen=True)
class TagSubscription:
    """``SubscriptionData`` for a TAG expression (FILTER-02)."""

    sub_string: str
    tags: frozenset[str]
    codes: frozenset[int]

    @property
    def all(self) -> bool:
        return self.sub_string == "*"


class TagExpressionError(Exception):
    """Java's ``Exception("subString split error")``: an expression made only of ``||`` separators."""


def parse_tag_expression(expression: str | None) -> TagSubscription:
    """``FilterAPI.buildSubscriptionData`` for TAG (FILTER-02).

    null, empty or exactly ``*`` subscribe to everything; otherwise ``String.split("\\|\\|")`` (trailing
    empty parts dropped), ``String.trim`` (every unit up to U+0020, nothing else), empty parts dropped. A
    ``*`` inside a list, or with spaces around it, is an ordinary tag. An expression of separators only
    splits into nothing and Java throws ``subString split error``
    (remoting/.../filter/FilterAPI.java#FilterAPI.buildSubscriptionData@rocketmq-all-5.3.3 L36-44,
    common/.../filter/FilterAPI.java#FilterAPI.buildSubscriptionData@rocketmq-all-4.9.8 L47-60).
    """
    if expression is None or expression == "" or expression == "*":
        return TagSubscription("*", frozenset(), frozenset())
    parts = java_split(expression, "||")
    if not parts:
        raise TagExpressionError("subString split error")
    tags = [java_trim(part) for part in parts]
    tags = [t for t in tags if t]
    return TagSubscription(expression, frozenset(tags), frozenset(java_string_hash(t) for t in tags))


def broker_tag_match(subscription: TagSubscription | None, tags_code_value: int | None) -> bool:
    """``ExpressionMessageFilter.isMatchedByConsumeQueue`` for TAG: a hash check only (FILTER-03). The
    consume queue's tags code is a ``long`` and Java compares its ``intValue()`` (the low 32 bits) with the
    subscription's codes (broker/.../filter/ExpressionMessageFilter.java#ExpressionMessageFilter.isMatchedByConsumeQueue
    @rocketmq-all-5.3.3 L80)."""
    if subscription is None or tags_code_value is None or subscription.all:
        return True
    return int32(tags_code_value) in subscription.codes


def client_tag_match(subscription: TagSubscription, tags: str | None) -> bool:
    """``PullAPIWrapper.processPullResult`` re-filter: exact string membership (FILTER-03)."""
    if not subscription.tags:
        return True
    return tags is not None and tags in subscription.tags


def proxy_tag_match(tag_set: frozenset[str], tags: str | None) -> bool:
    """5.x proxy ``FilterUtils.isTagMatched``: empty set matches; null tags never (FILTER-03)."""
    if not tag_set:
        return True
    return tags is not None and tags in tag_set


def delivered_to_tag_subscriber(subscription: TagSubscription, tags: str | None) -> bool:
    """Broker hash filter then client exact filter (FILTER-03)."""
    return broker_tag_match(subscription, tags_code(tags)) and client_tag_match(subscription, tags)


# ---- SQL92 at the broker (FILTER-04); the language itself is ``sql92`` (FILTER-05, FILTER-06) -------------

def sql_subscription_check(expression: str, enable_property_filter: bool,
                           release: str = versions.LATEST) -> tuple[int, str]:
    """What the broker answers to a SQL92 subscription: code and remark (FILTER-04, FILTER-05)."""
    if not enable_property_filter:
        return codes.R_SYSTEM_ERROR, SQL_NOT_ENABLED_REMARK
    try:
        sql92.compile_sql(expression, release)
    except sql92.SqlParseError as exc:
        return sql92.SUBSCRIPTION_PARSE_FAILED, f"Parse the consumer's subscription[{expression}] failed: {exc}"
    return codes.R_SUCCESS, ""


def sql_filters_retry_topic(filter_support_retry: bool = False) -> bool:
    """Retry topics are SQL-filtered only with ``filterSupportRetry`` (default false) (FILTER-04)."""
    return filter_support_retry
