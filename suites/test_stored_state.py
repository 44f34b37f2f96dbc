"""What a broker stores, read back through public means: retry and dead-letter topics consumed by an ordinary
consumer of a group of its own, the properties their copies carry, the identity a listener sees across
redeliveries, and queries by key and id.

A broker can deliver on time and still store a retried message under the wrong name, drop its origin id or
keep a property it must clear; only reading the store shows it. Targets that cannot read something say so
(``observe.stored``, ``observe.properties``, ``observe.query``) and the test is not applicable."""
from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from history.values import ListenerOutcome
from history.views import MessageView
from suites.checks import require
from suites.scenario import MessagePlan, ScriptedListener
from suites.strategies import at_most

GROUP, TOPIC = "G", "T"
RETRY_4X = "%RETRY%" + GROUP          # MixAll.getRetryTopic (RETRY-CONC-05): spelled out, not taken from a rule
DLQ = "%DLQ%" + GROUP                 # MixAll.getDLQTopic (RETRY-CONC-05)
POP_RETRY_V1 = f"%RETRY%{GROUP}_{TOPIC}"  # a 5.x pop retry topic, v1 naming (RETRY-CONC-05)


class Recorder:
    """The suites' scripted listener (each message fails its first ``failures`` deliveries with
    RECONSUME_LATER), keeping every view it was given."""

    def __init__(self, failures: dict[str, int]) -> None:
        self.script = ScriptedListener(MessagePlan(key, f) for key, f in failures.items())
        self.views: list[MessageView] = []
        self._lock = threading.Lock()

    def __call__(self, view: MessageView) -> ListenerOutcome:
        with self._lock:  # a wall-clock target's consumers call from several threads
            self.views.append(view)
            return self.script(view)

    def of(self, key: str) -> list[MessageView]:
        with self._lock:
            return [v for v in self.views if v.key == key]


def _consume_4x(target, failures: list[int], **options) -> tuple[dict[str, int], Recorder]:
    """A one-queue topic, a 4.x push consumer of ``GROUP`` failing message ``m<i>`` ``failures[i]`` times, and
    the messages sent, each with the body ``body of m<i>``."""
    target.create_topic(TOPIC, read_queues=1, write_queues=1)
    keys = {f"m{i}": f for i, f in enumerate(failures)}
    listener = Recorder(keys)
    target.push_consumer_4x(GROUP, TOPIC, listener, **options)
    producer = target.producer()
    one_at_a_time = "sdk.cpp4x" in target.capabilities
    for i, key in enumerate(keys):
        if one_at_a_time and i:  # SDK-CPP-09: the C++ client answers for a whole pull batch; one message a pull
            _until_delivered(target, listener, f"m{i - 1}")
        producer.send(TOPIC, f"body of {key}".encode(), key=key)
    return keys, listener


def _until_delivered(target, listener: Recorder, key: str, most_ms: int = 300_000) -> None:
    """Let time pass until ``key`` was delivered once, at most ``most_ms`` of spec time (a 4.x consumer on a
    real broker pulls only after its first rebalance)."""
    until = target.now_ms() + most_ms
    while not listener.of(key) and target.now_ms() < until:
        target.advance(500)


def _by_key(views: list[MessageView]) -> dict[str, list[MessageView]]:
    out: dict[str, list[MessageView]] = {}
    for view in views:
        out.setdefault(view.key or "", []).append(view)
    return {k: sorted(v, key=lambda x: x.reconsume_times) for k, v in out.items()}


scripts_4x = st.integers(1, 3).flatmap(lambda most: st.tuples(
    st.just(most), st.lists(st.integers(0, most + 1), min_size=1, max_size=3)))
"""(maxReconsumeTimes, failures per message): some messages succeed, some retry, some reach the DLQ."""


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("RETRY-CONC-04", "RETRY-CONC-05", "RETRY-CONC-09", "RETRY-CONC-11", "DELAY-06", "MSGID-02")
@at_most(8)
@given(script=scripts_4x)
def test_4x_retry_and_dead_letter_copies_are_stored_as_the_spec_says(make_target, script) -> None:
    """A concurrent consumer fails message k ``f_k`` times with ``maxReconsumeTimes = m``. Then:
    ``%RETRY%G`` holds one copy per send-back below the maximum, with reconsume times 1..min(f, m),
    RETRY_TOPIC = T, one ORIGIN_MESSAGE_ID for all copies of a message, and no DELAY (cleared when the
    schedule service writes it back, DELAY-06); ``%DLQ%G`` holds exactly the messages that failed more than
    m times, once each, with reconsume times m + 1; the listener sees every redelivery under the original
    topic and the first delivery's id."""
    most, failures = script
    target = make_target()
    target.require("consumer.push4x.concurrent", "observe.stored")
    keys, listener = _consume_4x(target, failures, max_reconsume_times=most)
    target.require_duration(sum(10_000 * 6 ** i for i in range(most)) + 60_000)
    target.settle()
    retried = _by_key(target.read_stored(RETRY_4X))
    dead = _by_key(target.read_stored(DLQ))
    props = "observe.properties" in target.capabilities
    for key, f in keys.items():
        copies, letters = retried.get(key, []), dead.get(key, [])
        require([c.reconsume_times for c in copies] == list(range(1, min(f, most) + 1)), "RETRY-CONC-04",
                f"{key} failed {f} times (max {most}): {RETRY_4X} holds copies with reconsume times "
                f"{[c.reconsume_times for c in copies]}")
        want_dead = [most + 1] if f > most else []
        require([d.reconsume_times for d in letters] == want_dead, "RETRY-CONC-04",
                f"{key} failed {f} times (max {most}): {DLQ} holds {[d.reconsume_times for d in letters]}, "
                f"want reconsume times {want_dead}")
        for copy in copies + letters:
            require(copy.body == f"body of {key}".encode(), "RETRY-CONC-04", f"a stored copy of {key} lost its body")
            require(copy.topic in (RETRY_4X, DLQ), "RETRY-CONC-05",
                    f"a copy of {key} read from a system topic says topic {copy.topic!r}")
        if props:
            origins = {c.properties.get("ORIGIN_MESSAGE_ID") for c in copies + letters}
            require(len(origins) <= 1 and None not in origins, "RETRY-CONC-04",
                    f"the copies of {key} carry ORIGIN_MESSAGE_ID {origins}: one, kept from the first copy")
            for copy in copies + letters:
                require(copy.properties.get("RETRY_TOPIC") == TOPIC, "RETRY-CONC-04",
                        f"a copy of {key} carries RETRY_TOPIC {copy.properties.get('RETRY_TOPIC')!r}, not {TOPIC!r}")
                require("DELAY" not in copy.properties, "DELAY-06",
                        f"a copy of {key} in {copy.topic} still carries DELAY={copy.properties.get('DELAY')}")
        seen = listener.of(key)
        require(len(seen) == min(f, most) + 1, "RETRY-CONC-04", f"{key} delivered {len(seen)} times")
        require(all(v.topic == TOPIC for v in seen), "RETRY-CONC-09",
                f"{key}'s listener saw topics {[v.topic for v in seen]}: a redelivery shows the original topic")
        require(len({v.msg_id for v in seen}) == 1, "MSGID-02",
                f"{key}'s listener saw ids {[v.msg_id for v in seen]}: a redelivery keeps the client's id")
        require([v.reconsume_times for v in seen] == list(range(len(seen))), "RETRY-CONC-04",
                f"{key}'s listener saw reconsume times {[v.reconsume_times for v in seen]}")
        for copy in copies + letters:
            require(copy.msg_id == seen[0].msg_id, "MSGID-02",
                    f"a stored copy of {key} has id {copy.msg_id}, the listener saw {seen[0].msg_id}")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("RETRY-CONC-04", "RETRY-CONC-05")
def test_a_dead_letter_is_found_by_key_and_by_id(make_target) -> None:
    """An admin's query finds the dead letter in ``%DLQ%G`` by the key it was sent with and by its id."""
    target = make_target()
    target.require("consumer.push4x.concurrent", "observe.query")
    target.create_topic(TOPIC, read_queues=1, write_queues=1)
    target.push_consumer_4x(GROUP, TOPIC, Recorder({"dead": 99}), max_reconsume_times=0)
    sent = target.producer().send(TOPIC, b"x", key="dead")
    target.settle()
    by_key = target.query_messages(DLQ, key="dead")
    require([m.key for m in by_key] == ["dead"], "RETRY-CONC-04", f"{DLQ} by key 'dead': {by_key}")
    require(target.query_messages(TOPIC, key="dead") != [], "RETRY-CONC-04", "the original is no longer stored")
    by_id = target.query_messages(DLQ, msg_id=sent.msg_id)
    require(len(by_id) == 1 and by_id[0].reconsume_times == 1, "RETRY-CONC-04",
            f"{DLQ} by id {sent.msg_id}: {by_id} (max 0: dead-lettered at once with reconsume times 1)")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("RETRY-CONC-04")
def test_a_group_without_retry_queues_drops_what_its_consumer_sends_back(make_target) -> None:
    """``retryQueueNums = 0``: the broker answers the send-back SUCCESS and stores nothing, so a failed message
    is neither retried nor dead-lettered, and the consumer moves on; a message that did not fail is consumed
    as always. A target that cannot read its store is judged by the deliveries alone."""
    target = make_target()
    target.require("consumer.push4x.concurrent")
    target.configure_group(GROUP, retry_queue_nums=0)
    keys, listener = _consume_4x(target, [1, 0])
    target.settle()
    for key in keys:
        require(len(listener.of(key)) == 1, "RETRY-CONC-04",
                f"{key} delivered {len(listener.of(key))} times; a group without retry queues gets no retry")
    for topic in ((RETRY_4X, DLQ) if "observe.stored" in target.capabilities else ()):
        stored = target.read_stored(topic)
        require(stored == [], "RETRY-CONC-04",
                f"{topic} holds {[m.key for m in stored]}: with retryQueueNums 0 a send-back stores nothing")


@pytest.mark.profile("grpc-5.x")
@pytest.mark.spec("RETRY-5X-07", "RETRY-5X-10", "RETRY-CONC-04", "RETRY-CONC-05", "MSGID-03")
@at_most(4)
@given(most=st.integers(1, 2), acked_at=st.integers(1, 4))
def test_5x_pop_retry_copies_and_the_dead_letter_are_stored_as_the_spec_says(make_target, most: int,
                                                                             acked_at: int) -> None:
    """A simple consumer lets each delivery's invisible time run out until attempt ``acked_at``, with
    ``retryMaxTimes = most``. Each revive writes a copy to the pop retry topic ``%RETRY%G_T`` with the
    reconsume times of the attempt it leads to (RETRY-5X-10), the last attempt's too; the pop that takes
    that one past the maximum forwards it to ``%DLQ%G`` (RETRY-5X-07); every delivery and copy keeps the id the
    producer was given."""
    target = make_target()
    target.require("consumer.simple5x", "observe.stored")
    target.create_topic(TOPIC, read_queues=1, write_queues=1)
    target.configure_group(GROUP, retry_max_times=most)
    consumer = target.simple_consumer_5x(GROUP, TOPIC)
    sent = target.producer().send(TOPIC, b"x", key="k")
    invisible = 10_000
    target.require_duration((most + 1) * (invisible + 10_000) + 60_000)
    attempts: list[MessageView] = []
    for _ in range((most + 1) * 25 + 10):  # bounded: every attempt's window, receiving every second
        for view in consumer.receive(16, invisible_ms=invisible):
            attempts.append(view)
            if view.delivery_attempt >= acked_at:
                consumer.ack(view)
        if (attempts and attempts[-1].delivery_attempt >= acked_at) or len(attempts) > most:
            break
        target.advance(1000)
    for _ in range(30):  # the consumer goes on receiving: the pop that takes the last revived copy dead-letters it
        target.advance(1000)
        attempts += consumer.receive(16, invisible_ms=invisible)
    dead = acked_at > most + 1
    want = list(range(1, min(acked_at, most + 1) + 1))
    require([v.delivery_attempt for v in attempts] == want, "RETRY-5X-10",
            f"attempts {[v.delivery_attempt for v in attempts]}, want {want}")
    require({v.msg_id for v in attempts} == {sent.msg_id}, "MSGID-03",
            f"deliveries with ids {[v.msg_id for v in attempts]}; the producer was given {sent.msg_id}")
    require(all(v.topic == TOPIC for v in attempts), "RETRY-5X-10",
            f"deliveries show topics {[v.topic for v in attempts]}: a retried message shows its own topic")
    copies = target.read_stored(POP_RETRY_V1)
    # a revive writes every expired attempt back, the last too: the pop that takes it forwards it to the DLQ
    revived = list(range(1, len(want) + (1 if dead else 0)))
    require(sorted(c.reconsume_times for c in copies) == revived, "RETRY-5X-10",
            f"{POP_RETRY_V1} holds reconsume times {sorted(c.reconsume_times for c in copies)}, want {revived}")
    letters = target.read_stored(DLQ)
    require(len(letters) == (1 if dead else 0), "RETRY-5X-07", f"{DLQ} holds {len(letters)} messages")
    for copy in copies + letters:
        require(copy.msg_id == sent.msg_id and copy.body == b"x", "RETRY-5X-10",
                f"a stored copy has id {copy.msg_id} and body {copy.body!r}")
    if "observe.properties" in target.capabilities:
        for copy in copies:  # the revive copies the properties as they are and adds only 1ST_POP_TIME
            require("RETRY_TOPIC" not in copy.properties and "ORIGIN_MESSAGE_ID" not in copy.properties,
                    "RETRY-5X-10", f"a revived copy (reconsume times {copy.reconsume_times}) carries "
                    f"{ {k: v for k, v in copy.properties.items() if k in ('RETRY_TOPIC', 'ORIGIN_MESSAGE_ID')} }")
            require(copy.properties.get("1ST_POP_TIME", "").isdigit(), "RETRY-5X-10",
                    f"a revived copy has no 1ST_POP_TIME: {dict(copy.properties)}")
        firsts = {c.properties.get("1ST_POP_TIME") for c in copies}
        require(len(firsts) <= 1, "RETRY-5X-10", f"the revived copies carry 1ST_POP_TIME {firsts}: the first pop's")
        for letter in letters:  # forwarded from the copy in the pop retry topic: its topic is the one stored
            require(bool(letter.properties.get("RETRY_TOPIC")) and bool(letter.properties.get("ORIGIN_MESSAGE_ID")),
                    "RETRY-CONC-04", f"a dead letter carries no RETRY_TOPIC or ORIGIN_MESSAGE_ID: "
                    f"{dict(letter.properties)}")


@pytest.mark.profile("remoting-4.x")
@pytest.mark.spec("RETRY-CONC-02", "RETRY-CONC-10")
@at_most(4)
@given(failures=st.lists(st.integers(0, 3), min_size=1, max_size=3))
def test_a_broadcasting_consumer_sends_nothing_back(make_target, failures: list[int]) -> None:
    """BROADCASTING drops a failed message (it is only logged) and subscribes to no retry topic: however often
    its listener fails, nothing reaches ``%RETRY%G`` or ``%DLQ%G``, and each message is delivered once."""
    target = make_target()
    target.require("consumer.push4x.broadcast", "observe.stored")
    keys, listener = _consume_4x(target, failures, broadcasting=True)
    target.require_duration(60_000)
    target.settle(60_000)
    for topic in (RETRY_4X, DLQ):
        stored = target.read_stored(topic)
        require(stored == [], "RETRY-CONC-02",
                f"a broadcasting consumer's failures left {len(stored)} messages in {topic}: "
                f"{sorted(m.key or '' for m in stored)}")
    for key in keys:
        require(len(listener.of(key)) == 1, "RETRY-CONC-02", f"{key} delivered {len(listener.of(key))} times")
