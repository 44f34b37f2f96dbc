"""Filters: tag and SQL92 subscriptions, property-based against an independent oracle and through the target."""
from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from history.profiles import BROKER_PROFILES
from history.values import ListenerOutcome
from reference_impl.rules import sql92
from reference_impl.rules.codes import RocketMQError
from spec import versions
from suites import sql_oracle
from suites.checks import require


@pytest.mark.reference_rule
@pytest.mark.spec("FILTER-05", "FILTER-06")
@pytest.mark.parametrize("release", ["5.0.0", versions.LATEST])
@given(tree=sql_oracle.trees, props=sql_oracle.property_maps)
@example(tree=("cmpprop", "=", "a", "b"), props={})  # two missing properties are equal: TRUE
@example(tree=("rcmp", "=", 5, "a"), props={})  # a missing property on the right of = is FALSE, not null
@example(tree=("rcmp", "=", True, "c"), props={"c": "true"})  # the Boolean is cast to String: an error
@example(tree=("cmp", ">", "a", 2.5), props={"a": "NaN"})  # Double.compareTo puts NaN above everything
@example(tree=("cmp", "=", "a", 3), props={"a": "\u0663"})  # Integer.valueOf reads any script's digits
@example(tree=("cmp", ">", "a", 2.5), props={"a": "0x1p3"})  # Double.valueOf reads hexadecimal
@example(tree=("or", ("neg", ">", "b", 1), ("cmp", "=", "a", 10)), props={"a": "10", "b": "x"})  # -'x' is null
@example(tree=("not", ("and", ("cmp", "<", "a", 5), ("cmp", ">", "c", 1))), props={"a": "10", "c": "2.5"})  # short-circuit
def test_sql_evaluation_matches_the_oracle(release, tree, props):
    """Every selector the oracle can build evaluates as the Java classes of the release do. Before 5.1.3
    CONTAINS, STARTSWITH and ENDSWITH are names, so a parenthesised test of them does not compile."""
    text = sql_oracle.render(tree)
    if sql_oracle.has_string_tests(tree) and not versions.holds(release, since="5.1.3"):
        with pytest.raises(sql92.SqlParseError):
            sql92.compile_sql(text, release)
        return
    expr = sql92.compile_sql(text, release)
    try:
        want = sql_oracle.evaluate(tree, props)
        error = False
    except sql_oracle.OracleError:
        want, error = None, True
    try:
        got = sql92.sql_evaluate(expr, props)
        got_error = False
    except sql92.SqlEvaluationError:
        got, got_error = None, True
    require((got, got_error) == (want, error), "FILTER-06", f"{text} over {props} ({release}): reference {got} "
            f"(error {got_error}), spec {want} (error {error})")
    require(sql92.sql_matches(expr, props) == sql_oracle.matches(tree, props), "FILTER-06",
            f"{text} over {props}: match decision differs")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("FILTER-04", "FILTER-05", "FILTER-06")
@given(tree=sql_oracle.trees, messages=st.lists(sql_oracle.property_maps, min_size=1, max_size=6))
def test_sql_subscription_delivers_exactly_the_matching_messages(make_target, rmq_release, tree, messages):
    """The broker delivers the messages the selector matches; before 5.1.3 a parenthesised CONTAINS,
    STARTSWITH or ENDSWITH does not compile, so the subscription is refused (SUBSCRIPTION_PARSE_FAILED)."""
    target = make_target()
    target.create_topic("T", read_queues=1, write_queues=1)
    target.configure_broker(enable_property_filter=True)
    seen = []
    listener = lambda v: seen.append(v.key) or ListenerOutcome.SUCCESS  # noqa: E731
    text = sql_oracle.render(tree)
    if sql_oracle.has_string_tests(tree) and not versions.holds(rmq_release, since="5.1.3"):
        with pytest.raises(RocketMQError) as refused:
            target.push_consumer_4x("G", "T", listener, expression=text, expression_type="SQL92")
        require(refused.value.code == 23, "FILTER-05", f"{text} on {rmq_release}: {refused.value}")
        return
    target.push_consumer_4x("G", "T", listener, expression=text, expression_type="SQL92")
    producer = target.producer()
    for i, props in enumerate(messages):
        producer.send("T", b"x", key=f"m{i}", properties=props)
    target.settle()
    want = [f"m{i}" for i, props in enumerate(messages) if sql_oracle.matches(tree, {**props, "KEYS": f"m{i}"})]
    require(seen == want, "FILTER-06", f"{text}: delivered {seen}, spec {want}")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("FILTER-04", "FILTER-05")
def test_sql_subscription_rejections(target):
    target.create_topic("T")
    listener = lambda v: ListenerOutcome.SUCCESS  # noqa: E731
    with pytest.raises(RocketMQError) as disabled:
        target.push_consumer_4x("G", "T", listener, expression="a > 5", expression_type="SQL92")
    require(disabled.value.code == 1 and "does not support consumer to filter message by SQL92" in disabled.value.message,
            "FILTER-04", f"{disabled.value}")
    target.configure_broker(enable_property_filter=True)
    with pytest.raises(RocketMQError) as malformed:
        target.push_consumer_4x("G", "T", listener, expression="a BETWEEN 10 AND 1", expression_type="SQL92")
    require(malformed.value.code == 23 and "Illegal values of between" in malformed.value.message, "FILTER-05",
            f"{malformed.value}")


TAGS = st.sampled_from([None, "TagA", "TagB", "Aa", "BB", "*"])


@pytest.mark.spec("FILTER-01", "FILTER-02", "FILTER-03")
@pytest.mark.parametrize("profile", BROKER_PROFILES)
@given(expression=st.sampled_from(["*", "", "TagA", "TagA || TagB", "Aa", " * ", "TagA||*", "BB ||"]),
       tags=st.lists(TAGS, min_size=1, max_size=6))
def test_tag_subscription(make_target, profile, expression, tags):
    """Exactly the messages whose TAGS string is in the subscription (or everything for '*'/empty)."""
    target = make_target(profile)
    target.create_topic("T", read_queues=1, write_queues=1)
    seen = []
    listener = lambda v: seen.append(v.key) or ListenerOutcome.SUCCESS  # noqa: E731
    if profile == "remoting-4.x":
        target.push_consumer_4x("G", "T", listener, expression=expression)
    else:
        target.push_consumer_5x("G", "T", listener, expression=expression)
    producer = target.producer()
    for i, tag in enumerate(tags):
        producer.send("T", b"x", key=f"m{i}", tags=tag)
    target.settle()
    wanted = None if expression.strip() in ("", "*") and expression in ("", "*") else \
        {t.strip() for t in expression.split("||") if t.strip()}
    want = [f"m{i}" for i, tag in enumerate(tags) if wanted is None or (tag is not None and tag in wanted)]
    require(sorted(seen) == sorted(want), "FILTER-03", f"subscription {expression!r} over tags {tags}: got {seen}, spec {want}")
