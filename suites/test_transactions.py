"""Transactional messages through the target: half and op messages, commit and rollback, checks, discard."""
from __future__ import annotations

import pytest

from adapters.base import wall_budget_s
from history.profiles import BROKER_PROFILES
from history.values import LocalTransactionState as S
from reference_impl.rules import cpp4x
from reference_impl.rules.transaction import TRANSACTION_TIMEOUT_MS
from suites.checks import require
from suites.harness import drives_go_only, drives_java_client_only, drives_nodejs_only
from suites.tolerance import close_enough, tolerance_for

BOTH = pytest.mark.parametrize("profile", BROKER_PROFILES)


def _consume_all(target, topic="T", group="G"):
    from history.values import ListenerOutcome

    if target.profile == "remoting-4.x":
        return target.push_consumer_4x(group, topic, lambda v: ListenerOutcome.SUCCESS)
    return target.push_consumer_5x(group, topic, lambda v: ListenerOutcome.SUCCESS)


def _end_transaction(target, state):
    target.create_topic("T", message_type="TRANSACTION")
    _consume_all(target)
    target.transaction_producer("TP", check=lambda key, n: None, topics=["T"]).send_in_transaction("T", b"x", key="tx",
                                                                                    local_state=state)
    target.settle()


@BOTH
@pytest.mark.spec("TX-02")
@pytest.mark.parametrize("state,delivered", [(S.COMMIT_MESSAGE, 1), (S.ROLLBACK_MESSAGE, 0)])
def test_transaction_commit_and_rollback(make_target, profile, state, delivered):
    target = make_target(profile)
    _end_transaction(target, state)
    got = [e for e in target.events() if e.kind == "DELIVER" and e.key == "tx"]
    require(len(got) == delivered, "TX-02", f"{state.value}: delivered {len(got)} times, the spec says {delivered}")


@BOTH
@pytest.mark.spec("TX-01", "TX-05")
@pytest.mark.parametrize("state", [S.COMMIT_MESSAGE, S.ROLLBACK_MESSAGE])
def test_half_and_op_messages_are_stored(make_target, profile, state):
    """The half in RMQ_SYS_TRANS_HALF_TOPIC with its real topic; one op message tagged "d" per end. Read from the
    broker's store, or (a real broker, through a 4.x client) by an ordinary consumer of those topics: the halves of
    this test's topic, and the op messages whose body names such a half's queue offset (TX-05), as other sessions
    share the topics."""
    target = make_target(profile)
    if profile != "remoting-4.x":  # read through a 4.x client's pulls only: a 5.x target shows the broker's store
        target.require("inspect.broker")
    if "inspect.broker" in target.capabilities:
        _end_transaction(target, state)
        ops = target.stored_messages("RMQ_SYS_TRANS_OP_HALF_TOPIC")
        half = target.stored_messages("RMQ_SYS_TRANS_HALF_TOPIC")
    else:
        target.require("observe.stored", "observe.properties")
        _end_transaction(target, state)
        half = [{"properties": dict(m.properties), "queue_id": m.queue_id, "queue_offset": m.queue_offset}
                for m in target.read_stored("RMQ_SYS_TRANS_HALF_TOPIC") if m.properties.get("REAL_TOPIC") == "T"]
        mine = {(h["queue_id"], str(h["queue_offset"])) for h in half}
        ops = [{"properties": dict(m.properties)} for m in target.read_stored("RMQ_SYS_TRANS_OP_HALF_TOPIC")
               if any((m.queue_id, offset) in mine for offset in _op_offsets(m.body))]
    require(len(ops) == 1 and ops[0]["properties"].get("TAGS") == "d", "TX-05", f"op messages {ops}")
    require(half and half[0]["properties"].get("REAL_TOPIC") == "T", "TX-01", f"half messages {half}")


def _op_offsets(body: bytes) -> list[str]:
    """The half-queue offsets an op message's body names: one decimal offset (4.9.8 through 5.0.0), or from 5.1.0
    the offsets of a batch, each followed by ',' (TX-05's variants)."""
    return [o for o in body.decode("ascii", "replace").split(",") if o]


@BOTH
@pytest.mark.spec("TX-03", "TX-04", "CLAIM-09", "SDK-CPP-10")
@pytest.mark.parametrize("commit_on_check", [None, 1, 3, 15])
def test_unknown_transaction_is_checked_then_resolved_or_discarded(make_target, profile, commit_on_check, rmq_spec,
                                                                   rmq_release):
    """UNKNOW: checked once per interval (the release's transactionCheckInterval), at most 15 times, then
    discarded."""
    target = make_target(profile)
    interval = rmq_spec.get("TX-03").variant_at(rmq_release)["defaults"]["transactionCheckInterval"]
    expected_checks = commit_on_check or 15
    cpp = "sdk.cpp4x" in target.capabilities  # SDK-CPP-10: checks before the producer's first heartbeat are lost
    heard_late_ms = int(cpp4x.PRODUCER_HEARTBEAT_MS * target.client_timer_scale) if cpp else 0
    # a wall clock: budgeted, the C++ producer's first heartbeat too (the checks the client sees come after it)
    target.require_duration((expected_checks + 1) * interval + TRANSACTION_TIMEOUT_MS + heard_late_ms)
    target.create_topic("T", message_type="TRANSACTION")
    _consume_all(target)
    check = lambda key, n: S.COMMIT_MESSAGE if n == commit_on_check else S.UNKNOW  # noqa: E731
    target.transaction_producer("TP", check=check, topics=["T"]).send_in_transaction("T", b"x", key="tx", local_state=S.UNKNOW)
    target.settle()
    events = target.events()
    checks = [e.ts_ms for e in events if e.kind == "TX_CHECK"]
    if cpp and commit_on_check is None:
        require(1 <= len(checks) <= expected_checks, "TX-03",
                f"{len(checks)} checks at {checks}: the C++ client sees at most {expected_checks}, those after its "
                f"first heartbeat (SDK-CPP-10)")
    elif commit_on_check and "clock.virtual" not in target.capabilities:
        # on a wall clock the commit answering check k is in flight for a while, and a server late on its schedule
        # (a burst after a stall) may check again before it arrives: only within the wall's tolerance after check k
        in_flight = tolerance_for(target).allowed(interval)
        require(len(checks) >= expected_checks and all(t - checks[expected_checks - 1] <= in_flight
                                                       for t in checks[expected_checks:]), "TX-03",
                f"{len(checks)} checks at {checks}, the spec says {expected_checks} (and any more only while the "
                f"commit answering check {expected_checks} was in flight: within {in_flight:.0f} ms)")
    else:
        require(len(checks) == expected_checks, "TX-03",
                f"{len(checks)} checks at {checks}, the spec says {expected_checks}")
    if "clock.virtual" in target.capabilities:  # sent at 0: the scans fall on whole intervals
        require(checks == [interval * i for i in range(1, expected_checks + 1)], "TX-03",
                f"checks at {checks}, the spec says every {interval} ms")
    else:  # the scan's phase is the server's: the first check comes within one interval past the timeout
        half = next(e.ts_ms for e in events if e.kind == "TX_HALF")
        first = checks[0] - half
        require(TRANSACTION_TIMEOUT_MS - tolerance_for(target).allowed(interval) <= first
                and close_enough(target, min(first, interval + TRANSACTION_TIMEOUT_MS + heard_late_ms), first), "TX-03",
                f"first check {first} ms after the half, the spec says within {interval} ms past "
                f"the {TRANSACTION_TIMEOUT_MS} ms timeout" + (f" (and the C++ producer's first heartbeat, up to "
                                                             f"{heard_late_ms} ms: SDK-CPP-10)" if cpp else ""))
        # the server scans on a fixed schedule; on a wall clock a check can only reach the client late (a
        # burst while the SDK starts), never early: the schedule is where the earliest offsets sit, and
        # most checks must fall on it
        scheduled = checks[:expected_checks]  # not those sent while the answering commit was in flight
        offsets = [t - k * interval for k, t in enumerate(scheduled)]
        phase = min(offsets)
        late = [k + 1 for k, off in enumerate(offsets) if off - phase > tolerance_for(target).allowed(interval)]
        gaps = [b - a for a, b in zip(checks, checks[1:])]
        require(len(late) <= len(scheduled) // 3, "TX-03",
                f"checks {late} off a schedule of one every {interval} ms (gaps {gaps})")
    delivered = [e for e in events if e.kind == "DELIVER" and e.key == "tx"]
    if commit_on_check is None:
        require(not delivered, "TX-04", f"delivered {len(delivered)} times after {len(checks)} UNKNOW answers")
        if "inspect.broker" in target.capabilities:
            discarded = [e for e in events if e.kind == "TX_DISCARD"]
            require(len(discarded) == 1, "TX-04", f"discarded {len(discarded)} times")
            kept = target.stored_messages("TRANS_CHECK_MAX_TIME_TOPIC")
            require(len(kept) == 1 and kept[0]["queue_id"] == 0 and kept[0]["properties"].get("REAL_TOPIC") == "T",
                    "TX-04", f"TRANS_CHECK_MAX_TIME_TOPIC holds {kept}")
    else:
        require(len(delivered) == 1 and not [e for e in events if e.kind == "TX_DISCARD"], "TX-03",
                f"delivered {len(delivered)} times after a COMMIT answer to check {commit_on_check}")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("TX-03")
def test_immunity_property_delays_the_first_check(target, rmq_spec, rmq_release):
    interval = rmq_spec.get("TX-03").variant_at(rmq_release)["defaults"]["transactionCheckInterval"]
    first_scan_after_immunity = (120_000 // interval + 1) * interval  # an age of exactly 120 s is not past it
    target.require_duration(120_000 + 2 * interval)  # a wall clock: budgeted
    target.create_topic("T", message_type="TRANSACTION")
    producer = target.transaction_producer("TP", check=lambda key, n: S.ROLLBACK_MESSAGE, topics=["T"])
    producer.send_in_transaction("T", b"x", key="tx", local_state=S.UNKNOW, immunity_seconds=120)
    target.settle()
    events = target.events()
    checks = [e.ts_ms for e in events if e.kind == "TX_CHECK"]
    if "clock.virtual" in target.capabilities:  # sent at 0: the scans fall on whole intervals
        require(checks == [first_scan_after_immunity], "TX-03",
                f"checks at {checks}: with 120 s immunity and {interval} ms scans the first check is the scan at "
                f"{first_scan_after_immunity} ms")
        return
    # a wall clock: the scans' phase is the server's; the one check comes at the first scan past the immunity
    half = next(e.ts_ms for e in events if e.kind == "TX_HALF")
    slack = tolerance_for(target).allowed(interval)
    require(len(checks) == 1 and 120_000 - slack <= checks[0] - half <= 120_000 + interval + slack, "TX-03",
            f"checks {[c - half for c in checks]} ms after the half: with 120 s immunity and {interval} ms scans "
            f"the one check is the first scan past 120000 ms")


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("TX-07", "SDK-NODE-06", "SDK-GO-01", "SDK-JAVA5-01")
def test_a_producer_that_declares_no_topic_is_never_checked(target, rmq_spec, rmq_release):
    """The proxy registers a producer under the topics it declares; a half's checks go to a producer of the
    half's topic. One that declared none is never asked, though its half waits for checks. The clients whose send
    declares the topic (SDK-NODE-06, SDK-JAVA5-01, SDK-GO-01) are asked: for them the wait ends at the first
    check, bounded by twice the window (and the test's wall budget), since on a wall clock a loaded machine can
    delay it past one scan."""
    interval = rmq_spec.get("TX-03").variant_at(rmq_release)["defaults"]["transactionCheckInterval"]
    habit = next(((sid, name) for drives, sid, name in ((drives_nodejs_only, "SDK-NODE-06", "Node.js"),
                                                        (drives_java_client_only, "SDK-JAVA5-01", "Java 5.x"),
                                                        (drives_go_only, "SDK-GO-01", "Go"))
                  if drives(target)), None)
    window = 3 * interval + TRANSACTION_TIMEOUT_MS
    target.create_topic("T", message_type="TRANSACTION")
    asked = []
    producer = target.transaction_producer("TP", check=lambda key, n: asked.append(n) or S.COMMIT_MESSAGE)
    producer.send_in_transaction("T", b"x", key="tx", local_state=S.UNKNOW)
    if habit is None:
        target.settle(window)
        require(asked == [], "TX-07", f"a producer that declared no topic was asked {len(asked)} times")
        return
    waited = 0
    budget_ms = wall_budget_s() * 1000 / target.time_scale
    while not asked and waited < min(2 * window, budget_ms):  # its send declared the topic: asked, and commits
        target.advance(interval)
        waited += interval
    sid, name = habit
    seen = sum(1 for e in target.events() if e.kind == "TX_CHECK")  # the client's own record of checks it took
    require(asked[:1] == [1], sid, f"the {name} producer was asked {len(asked)} times in {waited} ms after its "
                                   f"half (the first check is due within {window} ms; the client recorded {seen})")
