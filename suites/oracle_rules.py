"""Which reference rule is checked against which released Java method, and how (issue 35).

Each ``OracleCheck`` names a ``reference_impl.rules`` function, the Java method it models (``path#Class.method``
at the release tag), the artifact the class lives in, a Hypothesis strategy biased to Java's edges
(``suites.java_edges``) and a ``compare`` that runs both on one example and returns what each did, in one
comparable form. ``suites/test_release_oracle.py`` runs every check at every covered release; the spec's
behaviours name the same pairs in their ``upstream`` sources (``oracle: ...``), which
``tests/test_oracle_spec.py`` keeps in step with this table.
"""
from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass
from typing import Any, Callable

from hypothesis import strategies as st

from spec import versions

from reference_impl.rules import (allocation, codes, delay, filter as tag_filter, java_semantics, javacc, message_id,
                                  primitives, queue_selection, remoting, retry4x, retry5x, sql92, storage,
                                  topic_types, validation)
from reference_impl.rules.codes import RocketMQError
from reference_impl.rules.primitives import java_string_hash, to_int32
from suites import java_edges as edges
from suites import sql_oracle
from suites.release_oracle import Answer, Jvm, jbytes, jint, jlist, jlong

STRING = "java.lang.String"
MIXALL = "org.apache.rocketmq.common.MixAll"
UTILALL = "org.apache.rocketmq.common.UtilAll"
DECODER = "org.apache.rocketmq.common.message.MessageDecoder"
SYSFLAG = "org.apache.rocketmq.common.sysflag.MessageSysFlag"
MQ = "org.apache.rocketmq.common.message.MessageQueue"
FAQ = "\nFor more information, please visit the url"


def java_outcome(answer: Answer) -> tuple:
    """("ok", value) or ("raise", simple class name, first part of the message)."""
    if answer.thrown is None:
        return ("ok", answer.value)
    message = answer.message or ""
    return ("raise", answer.simple_thrown, message.split(FAQ)[0])


JAVA_NAME = {"IndexError": "ArrayIndexOutOfBoundsException", "TagExpressionError": "Exception"}
"""The Java exception a rule's exception stands for, where the rule names it otherwise."""


def rule_outcome(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple:
    """("ok", value) or ("raise", exception class name, message) of a reference rule."""
    try:
        return ("ok", fn(*args, **kwargs))
    except RocketMQError as e:
        return ("raise", "RocketMQError", e.message)
    except Exception as e:  # noqa: BLE001 - any refusal is compared by kind
        return ("raise", JAVA_NAME.get(type(e).__name__, type(e).__name__), str(e))


def refused(outcome: tuple) -> tuple:
    """Only whether it refused, and the message when it did (for rules whose exception classes differ)."""
    return ("ok",) if outcome[0] == "ok" else ("raise", outcome[2])


@dataclass(frozen=True)
class OracleCheck:
    rule: str
    """``module.function`` of ``reference_impl.rules``."""
    spec_id: str
    java: str
    """``path#Class.method`` at the release tag."""
    artifact: str
    strategy: st.SearchStrategy
    compare: Callable[[Jvm, str, Any], tuple[Any, Any]]
    """(what the rule did, what Java did) for one example at one release."""
    since: str | None = None
    until: str | None = None
    """The releases the Java method (or the rule's model of it) exists in; outside them not applicable."""

    def holds(self, release: str) -> bool:
        return versions.holds(release, since=self.since, until=self.until)

    @property
    def name(self) -> str:
        return self.rule


CHECKS: list[OracleCheck] = []


def check(rule: str, spec_id: str, java: str, artifact: str, strategy: st.SearchStrategy,
          since: str | None = None, until: str | None = None) -> Callable:
    def register(compare: Callable[[Jvm, str, Any], tuple[Any, Any]]) -> Callable:
        CHECKS.append(OracleCheck(rule, spec_id, java, artifact, strategy, compare, since, until))
        return compare
    return register


# ---- names: topics and groups (LIMIT-01, LIMIT-02) -----------------------------------------------------------

@check("validation.check_topic_client_4x", "LIMIT-01",
       "client/src/main/java/org/apache/rocketmq/client/Validators.java#Validators.checkTopic", "client",
       st.one_of(edges.names(127), st.sampled_from(sorted(validation.NOT_ALLOWED_SEND_TOPICS))))
def _check_topic(jvm: Jvm, release: str, topic: str) -> tuple:
    theirs = java_outcome(jvm.call("org.apache.rocketmq.client.Validators", "checkTopic", topic, types=(STRING,)))
    if theirs[0] == "ok":  # checkMessage's next step
        theirs = java_outcome(jvm.call("org.apache.rocketmq.client.Validators", "isNotAllowedSendTopic", topic,
                                       types=(STRING,)))
    ours = rule_outcome(validation.check_topic_client_4x, topic)
    return refused(ours), refused(theirs)


@check("validation.check_group", "LIMIT-02",
       "client/src/main/java/org/apache/rocketmq/client/Validators.java#Validators.checkGroup", "client",
       edges.names(255))
def _check_group(jvm: Jvm, release: str, group: str) -> tuple:
    theirs = java_outcome(jvm.call("org.apache.rocketmq.client.Validators", "checkGroup", group, types=(STRING,)))
    return refused(rule_outcome(validation.check_group, group, release)), refused(theirs)


@check("validation.is_system_topic", "LIMIT-01",
       "common/src/main/java/org/apache/rocketmq/common/topic/TopicValidator.java#TopicValidator.isSystemTopic",
       "common", st.one_of(edges.names(127), st.sampled_from(sorted(validation.SYSTEM_TOPICS)),
                           edges.edge_text().map(lambda s: "rmq_sys_" + s)))
def _is_system_topic(jvm: Jvm, release: str, topic: str) -> tuple:
    theirs = jvm.call("org.apache.rocketmq.common.topic.TopicValidator", "isSystemTopic", topic, types=(STRING,))
    return rule_outcome(validation.is_system_topic, topic), java_outcome(theirs)


# ---- permissions (TOPIC-01) ------------------------------------------------------------------------------------

@check("validation.perm_to_string", "TOPIC-01",
       "common/src/main/java/org/apache/rocketmq/common/constant/PermName.java#PermName.perm2String", "common",
       edges.ints32())
def _perm_to_string(jvm: Jvm, release: str, perm: int) -> tuple:
    theirs = jvm.call("org.apache.rocketmq.common.constant.PermName", "perm2String", jint(perm), types=("int",))
    return rule_outcome(validation.perm_to_string, perm), java_outcome(theirs)


@check("validation.perm_valid", "TOPIC-01",
       "common/src/main/java/org/apache/rocketmq/common/constant/PermName.java#PermName.isValid", "common",
       edges.ints32(), since="5.0.0")
def _perm_valid(jvm: Jvm, release: str, perm: int) -> tuple:
    theirs = jvm.call("org.apache.rocketmq.common.constant.PermName", "isValid", jint(perm), types=("int",))
    return rule_outcome(validation.perm_valid, perm, release), java_outcome(theirs)


# ---- tags (FILTER-01..03) -----------------------------------------------------------------------------------------

TAG_TEXT = st.one_of(edges.edge_text(plain=tuple("ab*| ")), st.lists(st.sampled_from(["a", "b", " ", "||", "*", "|",
                                                                                      "\u00a0", "\x1f", "\t"]),
                                                                      max_size=6).map("".join))


@check("filter.tags_code", "FILTER-01",
       "common/src/main/java/org/apache/rocketmq/common/message/MessageExtBrokerInner.java"
       "#MessageExtBrokerInner.tagsString2tagsCode", "store", st.one_of(st.none(), TAG_TEXT))
def _tags_code(jvm: Jvm, release: str, tags: str | None) -> tuple:
    cls = ("org.apache.rocketmq.common.message.MessageExtBrokerInner", "org.apache.rocketmq.store.MessageExtBrokerInner")
    theirs = jvm.call(cls, "tagsString2tagsCode", tags, types=(STRING,))
    return rule_outcome(tag_filter.tags_code, tags), java_outcome(theirs)


FILTER_API = ("org.apache.rocketmq.remoting.protocol.filter.FilterAPI", "org.apache.rocketmq.common.filter.FilterAPI")


@check("filter.parse_tag_expression", "FILTER-02",
       "remoting/src/main/java/org/apache/rocketmq/remoting/protocol/filter/FilterAPI.java"
       "#FilterAPI.buildSubscriptionData", "client", st.one_of(st.none(), TAG_TEXT))
def _parse_tag_expression(jvm: Jvm, release: str, expression: str | None) -> tuple:
    answer = jvm.call(FILTER_API, "buildSubscriptionData", "T", expression, types=(STRING, STRING),
                      read=("getSubString", "getTagsSet", "getCodeSet"))
    theirs = java_outcome(answer)
    if theirs[0] == "ok":
        v = theirs[1]
        theirs = ("ok", (v["getSubString"], sorted(v["getTagsSet"]), sorted(v["getCodeSet"])))
    ours = rule_outcome(tag_filter.parse_tag_expression, expression)
    if ours[0] == "ok":
        ours = ("ok", (ours[1].sub_string, sorted(ours[1].tags), sorted(ours[1].codes)))
    return ours, theirs


@check("filter.proxy_tag_match", "FILTER-03",
       "proxy/src/main/java/org/apache/rocketmq/proxy/common/utils/FilterUtils.java#FilterUtils.isTagMatched",
       "proxy", st.tuples(st.frozensets(TAG_TEXT, max_size=3), st.one_of(st.none(), TAG_TEXT)))
def _proxy_tag_match(jvm: Jvm, release: str, example: tuple) -> tuple:
    tag_set, tags = example
    theirs = jvm.call("org.apache.rocketmq.proxy.common.utils.FilterUtils", "isTagMatched", {"set": sorted(tag_set)},
                      tags, types=("java.util.Set", STRING))
    return rule_outcome(tag_filter.proxy_tag_match, tag_set, tags), java_outcome(theirs)


# ---- retry and dead-letter topics (RETRY-CONC-05) ----------------------------------------------------------------

@check("retry4x.retry_topic", "RETRY-CONC-05",
       "common/src/main/java/org/apache/rocketmq/common/MixAll.java#MixAll.getRetryTopic", "common", edges.edge_text())
def _retry_topic(jvm: Jvm, release: str, group: str) -> tuple:
    return (rule_outcome(retry4x.retry_topic, group),
            java_outcome(jvm.call(MIXALL, "getRetryTopic", group, types=(STRING,))))


@check("retry4x.dlq_topic", "RETRY-CONC-05",
       "common/src/main/java/org/apache/rocketmq/common/MixAll.java#MixAll.getDLQTopic", "common", edges.edge_text())
def _dlq_topic(jvm: Jvm, release: str, group: str) -> tuple:
    return (rule_outcome(retry4x.dlq_topic, group),
            java_outcome(jvm.call(MIXALL, "getDLQTopic", group, types=(STRING,))))


# ---- Java's own classes the rules restate (PRIM-01, DELAY-02, FILTER-06, RETRY-CONC-04) --------------------------

@check("primitives.java_split", "DELAY-02", "java.base/java/lang/String.java#String.split", "common",
       st.tuples(edges.edge_text(plain=tuple("ab ,")), st.sampled_from([" ", ","])))
def _java_split(jvm: Jvm, release: str, example: tuple) -> tuple:
    text, sep = example
    return (rule_outcome(primitives.java_split, text, sep),
            java_outcome(jvm.call(STRING, "split", sep, types=(STRING,), target=text)))


@check("primitives.java_trim", "FILTER-06", "java.base/java/lang/String.java#String.trim", "common",
       edges.edge_text())
def _java_trim(jvm: Jvm, release: str, text: str) -> tuple:
    return rule_outcome(primitives.java_trim, text), java_outcome(jvm.call(STRING, "trim", target=text))


@check("primitives.java_string_hash", "PRIM-01", "java.base/java/lang/String.java#String.hashCode", "common",
       edges.edge_text(max_size=20))
def _java_string_hash(jvm: Jvm, release: str, text: str) -> tuple:
    return rule_outcome(primitives.java_string_hash, text), java_outcome(jvm.call(STRING, "hashCode", target=text))


@check("primitives.java_string_compare", "FILTER-06", "java.base/java/lang/String.java#String.compareTo", "common",
       st.tuples(edges.edge_text(), edges.edge_text()))
def _java_string_compare(jvm: Jvm, release: str, example: tuple) -> tuple:
    a, b = example
    theirs = java_outcome(jvm.call(STRING, "compareTo", b, types=(STRING,), target=a))
    sign = ("ok", (theirs[1] > 0) - (theirs[1] < 0)) if theirs[0] == "ok" else theirs
    return rule_outcome(primitives.java_string_compare, a, b), sign


@check("primitives.java_parse_long", "DELAY-02", "java.base/java/lang/Long.java#Long.parseLong", "common",
       edges.number_text())
def _java_parse_long(jvm: Jvm, release: str, text: str) -> tuple:
    ours = rule_outcome(primitives.java_parse_long, text)
    theirs = java_outcome(jvm.call("java.lang.Long", "parseLong", text, types=(STRING,)))
    return ours[:2] if ours[0] == "ok" else ("raise",), theirs[:2] if theirs[0] == "ok" else ("raise",)


@check("primitives.java_is_blank", "RETRY-CONC-04",
       "common/src/main/java/org/apache/rocketmq/common/UtilAll.java#UtilAll.isBlank", "common",
       st.one_of(st.none(), edges.edge_text(plain=(" ", "a"))))
def _java_is_blank(jvm: Jvm, release: str, text: str | None) -> tuple:
    return (rule_outcome(primitives.java_is_blank, text),
            java_outcome(jvm.call(UTILALL, "isBlank", text, types=(STRING,))))


@check("primitives.java_boolean_value_of", "FILTER-06", "java.base/java/lang/Boolean.java#Boolean.valueOf",
       "common", st.one_of(edges.edge_text(plain=tuple("trueTRUE")), st.sampled_from(["true", "TRUE", "tRuE",
                                                                                       "true ", "\u0131rue"])))
def _java_boolean_value_of(jvm: Jvm, release: str, text: str) -> tuple:
    theirs = jvm.call("java.lang.Boolean", "parseBoolean", text, types=(STRING,))
    return rule_outcome(primitives.java_boolean_value_of, text), java_outcome(theirs)


# ---- message ids and stored bytes (MSGID-01, STORE-01, STORE-04, STORE-06, STORE-07, STORE-09) ------------------

HEX_TEXT = st.one_of(st.text(alphabet=st.sampled_from(list("0123456789abcdefABCDEFgz\u00e9\U0001F600")), max_size=40),
                     st.sampled_from([32, 33, 56, 64]).flatmap(
                         lambda n: st.text(alphabet=st.sampled_from(list("0123456789ABCDEF")), min_size=n, max_size=n)))


@check("message_id.hex_to_bytes", "MSGID-01",
       "common/src/main/java/org/apache/rocketmq/common/UtilAll.java#UtilAll.string2bytes", "common", HEX_TEXT)
def _hex_to_bytes(jvm: Jvm, release: str, text: str) -> tuple:
    theirs = java_outcome(jvm.call(UTILALL, "string2bytes", text, types=(STRING,)))
    if theirs[0] == "ok":
        theirs = ("ok", None if theirs[1] is None else bytes.fromhex(theirs[1]["bytes"]))
    ours = rule_outcome(message_id.hex_to_bytes, text)
    if ours[0] == "ok" and text == "":  # string2bytes gives null for ""
        ours = ("ok", None)
    return ours, theirs


@check("message_id.decode_offset_msg_id", "MSGID-01",
       "common/src/main/java/org/apache/rocketmq/common/message/MessageDecoder.java#MessageDecoder.decodeMessageId",
       "common", HEX_TEXT)
def _decode_offset_msg_id(jvm: Jvm, release: str, text: str) -> tuple:
    answer = jvm.call(DECODER, "decodeMessageId", text, types=(STRING,), read=("getAddress", "getOffset"))
    if answer.thrown is not None:
        theirs: tuple = ("raise", {"NullPointerException": "NullIdError", "BufferUnderflowException":
                                   "BufferUnderflowError", "IllegalArgumentException": "PortOutOfRangeError"}
                         .get(answer.simple_thrown or "", answer.simple_thrown))
    else:
        address = answer.value["getAddress"]["string"]  # InetSocketAddress.toString: "/host:port", "/[v6]:port"
        host, port = address.lstrip("/").rsplit(":", 1)
        host = host.strip("[]")
        theirs = ("ok", (host, int(port), answer.value["getOffset"]))
    ours = rule_outcome(message_id.decode_offset_msg_id, text)
    return (ours if ours[0] == "ok" else ours[:2]), theirs


@check("storage.body_crc", "STORE-01", "common/src/main/java/org/apache/rocketmq/common/UtilAll.java#UtilAll.crc32",
       "common", st.binary(max_size=64))
def _body_crc(jvm: Jvm, release: str, body: bytes) -> tuple:
    return rule_outcome(storage.body_crc, body), java_outcome(jvm.call(UTILALL, "crc32", jbytes(body),
                                                                       types=("byte[]",)))


@check("storage.offset_to_file_name", "STORE-06",
       "common/src/main/java/org/apache/rocketmq/common/UtilAll.java#UtilAll.offset2FileName", "common", edges.longs())
def _offset_to_file_name(jvm: Jvm, release: str, offset: int) -> tuple:
    return (rule_outcome(storage.offset_to_file_name, offset),
            java_outcome(jvm.call(UTILALL, "offset2FileName", jlong(offset), types=("long",))))


PROPERTY_TEXT = st.text(alphabet=st.sampled_from(["a", "b", "\u0001", "\u0002", "\n", "\U0001F600", "="]), max_size=12)


@check("storage.string_to_properties", "STORE-04",
       "common/src/main/java/org/apache/rocketmq/common/message/MessageDecoder.java"
       "#MessageDecoder.string2messageProperties", "common", st.one_of(PROPERTY_TEXT, st.dictionaries(
           edges.edge_text(4), edges.edge_text(4), max_size=3).map(storage.properties_to_string)))
def _string_to_properties(jvm: Jvm, release: str, text: str) -> tuple:
    theirs = java_outcome(jvm.call(DECODER, "string2messageProperties", text, types=(STRING,)))
    if theirs[0] == "ok":
        theirs = ("ok", dict(tuple(kv) for kv in theirs[1]))
    return rule_outcome(storage.string_to_properties, text), theirs


@check("storage.properties_to_string", "STORE-04",
       "common/src/main/java/org/apache/rocketmq/common/message/MessageDecoder.java"
       "#MessageDecoder.messageProperties2String", "common",
       st.dictionaries(edges.edge_text(4), st.one_of(st.none(), edges.edge_text(4)), max_size=1))
def _properties_to_string(jvm: Jvm, release: str, props: dict) -> tuple:
    theirs = jvm.call(DECODER, "messageProperties2String", {"map": [[k, v] for k, v in props.items()]},
                      types=("java.util.Map",))
    return rule_outcome(storage.properties_to_string, props, release), java_outcome(theirs)


@check("storage.index_key_hash", "STORE-07",
       "store/src/main/java/org/apache/rocketmq/store/index/IndexFile.java#IndexFile.indexKeyHashMethod", "store",
       st.one_of(edges.edge_text(20), st.sampled_from(["polygenelubricants", "GydZG_", "DESIGNING WORKHOUSES"])))
def _index_key_hash(jvm: Jvm, release: str, key: str) -> tuple:
    theirs = jvm.call("org.apache.rocketmq.store.index.IndexFile", "indexKeyHashMethod", key, types=(STRING,),
                      target={"alloc": "org.apache.rocketmq.store.index.IndexFile"})
    return rule_outcome(storage.index_key_hash, key), java_outcome(theirs)


@check("storage.transaction_value", "STORE-09",
       "common/src/main/java/org/apache/rocketmq/common/sysflag/MessageSysFlag.java#MessageSysFlag.getTransactionValue",
       "common", edges.ints32())
def _transaction_value(jvm: Jvm, release: str, flag: int) -> tuple:
    return (rule_outcome(storage.transaction_value, flag),
            java_outcome(jvm.call(SYSFLAG, "getTransactionValue", jint(flag), types=("int",))))


@check("storage.reset_transaction_value", "STORE-09",
       "common/src/main/java/org/apache/rocketmq/common/sysflag/MessageSysFlag.java"
       "#MessageSysFlag.resetTransactionValue", "common", st.tuples(edges.ints32(), edges.ints32()))
def _reset_transaction_value(jvm: Jvm, release: str, example: tuple) -> tuple:
    flag, kind = example
    theirs = jvm.call(SYSFLAG, "resetTransactionValue", jint(flag), jint(kind), types=("int", "int"))
    return rule_outcome(storage.reset_transaction_value, flag, kind), java_outcome(theirs)


@check("storage.cal_msg_length", "STORE-01",
       "store/src/main/java/org/apache/rocketmq/store/CommitLog.java#CommitLog.calMsgLength", "store",
       st.tuples(edges.ints32(), st.integers(0, 255), edges.ints32(), st.sampled_from([0, 0x10, 0x20, 0x30])))
def _cal_msg_length(jvm: Jvm, release: str, example: tuple) -> tuple:
    body, topic, props, flag = example
    if jvm.release.release in ("4.9.8", "5.0.0"):
        theirs = jvm.call("org.apache.rocketmq.store.CommitLog", "calMsgLength", jint(flag), jint(body), jint(topic),
                          jint(props), types=("int", "int", "int", "int"))
    else:
        version = {"enum": "org.apache.rocketmq.common.message.MessageVersion", "name": "MESSAGE_VERSION_V1"}
        theirs = jvm.call("org.apache.rocketmq.store.MessageExtEncoder", "calMsgLength", version, jint(flag),
                          jint(body), jint(topic), jint(props),
                          types=("org.apache.rocketmq.common.message.MessageVersion", "int", "int", "int", "int"))
    return rule_outcome(storage.cal_msg_length, body, topic, props, flag), java_outcome(theirs)


# ---- the delay table (DELAY-02, DELAY-05) ------------------------------------------------------------------------

LEVEL_TEXT = st.one_of(
    st.lists(st.builds(lambda n, u: f"{n}{u}", edges.longs(), st.sampled_from(["s", "m", "h", "d", "x", ""])),
             max_size=5).map(" ".join),
    st.text(alphabet=st.sampled_from(list("15smhd +-\n\t") + ["\u0663", "\U0001D7CE", "\u00a0"]), max_size=16))


def _schedule_service(jvm: Jvm, levels: str) -> dict:
    """A ScheduleMessageService made without its constructor, holding just what parseDelayLevel reads."""
    store_config = {"alloc": "org.apache.rocketmq.store.config.MessageStoreConfig", "set": {"messageDelayLevel": levels}}
    table = {"new": "java.util.concurrent.ConcurrentSkipListMap" if versions.holds(jvm.release.release, since="5.3.3")
             else "java.util.concurrent.ConcurrentHashMap"}
    if jvm.release.release == "4.9.8":
        store = {"alloc": "org.apache.rocketmq.store.DefaultMessageStore", "set": {"messageStoreConfig": store_config}}
        return {"alloc": "org.apache.rocketmq.store.schedule.ScheduleMessageService",
                "set": {"defaultMessageStore": store, "delayLevelTable": table}}
    broker = {"alloc": "org.apache.rocketmq.broker.BrokerController", "set": {"messageStoreConfig": store_config}}
    return {"alloc": "org.apache.rocketmq.broker.schedule.ScheduleMessageService",
            "set": {"brokerController": broker, "delayLevelTable": table}}


def _schedule_class(jvm: Jvm) -> str:
    return ("org.apache.rocketmq.store.schedule.ScheduleMessageService" if jvm.release.release == "4.9.8"
            else "org.apache.rocketmq.broker.schedule.ScheduleMessageService")


@check("delay.parse_delay_levels", "DELAY-02",
       "broker/src/main/java/org/apache/rocketmq/broker/schedule/ScheduleMessageService.java"
       "#ScheduleMessageService.parseDelayLevel", "store", LEVEL_TEXT)
def _parse_delay_levels(jvm: Jvm, release: str, text: str) -> tuple:
    if release != "4.9.8":
        jvm.require("broker", "ScheduleMessageService (rocketmq-broker)")
    # the service goes through Objects.requireNonNull so that ``read`` can call parseDelayLevel, then read
    # the table it filled
    answer = jvm.call("java.util.Objects", "requireNonNull", _schedule_service(jvm, text), types=("java.lang.Object",),
                      read=("parseDelayLevel", "delayLevelTable", "maxDelayLevel"))
    if answer.thrown is not None:
        return ("raise",), ("raise", answer.thrown)
    v = answer.value
    table = delay.parse_delay_levels(text)
    return ((dict(table.levels), table.max_level, table.ok),
            ({int(k): int(ms) for k, ms in v["delayLevelTable"]}, v["maxDelayLevel"], v["parseDelayLevel"]))


PROXY_CONFIG = "org.apache.rocketmq.proxy.config.ProxyConfig"


@check("delay.proxy_uses_delay_level", "DELAY-09",
       "proxy/src/main/java/org/apache/rocketmq/proxy/config/ProxyConfig.java#ProxyConfig.isUseDelayLevel", "proxy",
       st.just(None), since="5.0.0")
def _proxy_uses_delay_level(jvm: Jvm, release: str, _: None) -> tuple:
    """The default of a ProxyConfig made as the proxy makes it, before any key is read."""
    theirs = jvm.call(PROXY_CONFIG, "isUseDelayLevel", target={"new": PROXY_CONFIG})
    return rule_outcome(delay.proxy_uses_delay_level, release), java_outcome(theirs)


# ---- remoting, retry policies, selection, allocation ------------------------------------------------------------

@check("remoting.header_word", "REMOTING-01",
       "remoting/src/main/java/org/apache/rocketmq/remoting/protocol/RemotingCommand.java"
       "#RemotingCommand.markProtocolType", "remoting", st.tuples(st.sampled_from([0, 1]), edges.ints32()))
def _header_word(jvm: Jvm, release: str, example: tuple) -> tuple:
    kind, length = example
    serialize = {"enum": "org.apache.rocketmq.remoting.protocol.SerializeType", "name": ["JSON", "ROCKETMQ"][kind]}
    theirs = jvm.call("org.apache.rocketmq.remoting.protocol.RemotingCommand", "markProtocolType", jint(length),
                      serialize, types=("int", "org.apache.rocketmq.remoting.protocol.SerializeType"))
    return rule_outcome(lambda: to_int32(remoting.header_word(kind, length))), java_outcome(theirs)


POLICY = ("org.apache.rocketmq.remoting.protocol.subscription.CustomizedRetryPolicy",
          "org.apache.rocketmq.common.subscription.CustomizedRetryPolicy")


@check("retry5x.server_customized_delay_ms", "RETRY-5X-02",
       "remoting/src/main/java/org/apache/rocketmq/remoting/protocol/subscription/CustomizedRetryPolicy.java"
       "#CustomizedRetryPolicy.nextDelayDuration", "common", edges.ints32(), since="5.0.0")
def _server_customized_delay_ms(jvm: Jvm, release: str, rt: int) -> tuple:
    cls = jvm.resolve_class(POLICY)
    theirs = jvm.call(cls, "nextDelayDuration", jint(rt), types=("int",), target={"new": cls})
    return rule_outcome(retry5x.server_customized_delay_ms, rt), java_outcome(theirs)


@check("fifo.select_queue_by_hash_4x", "FIFO-03",
       "client/src/main/java/org/apache/rocketmq/client/producer/selector/SelectMessageQueueByHash.java"
       "#SelectMessageQueueByHash.select", "client", st.tuples(edges.edge_text(), st.integers(1, 40)))
def _select_by_hash(jvm: Jvm, release: str, example: tuple) -> tuple:
    from reference_impl.rules import fifo

    arg, count = example
    queues = jlist([{"new": MQ, "types": [STRING, STRING, "int"], "args": ["T", "b", jint(i)]} for i in range(count)])
    theirs = jvm.call("org.apache.rocketmq.client.producer.selector.SelectMessageQueueByHash", "select", queues,
                      None, arg, types=("java.util.List", "org.apache.rocketmq.common.message.Message",
                                        "java.lang.Object"),
                      target={"new": "org.apache.rocketmq.client.producer.selector.SelectMessageQueueByHash"},
                      read=("getQueueId",))
    theirs_t = java_outcome(theirs)
    if theirs_t[0] == "ok":
        theirs_t = ("ok", theirs_t[1]["getQueueId"])
    return rule_outcome(fifo.select_queue_by_hash_4x, java_string_hash(arg), count), theirs_t


ALLOCATE = "org.apache.rocketmq.client.consumer.rebalance."
CIDS = st.lists(st.sampled_from(["c0", "c1", "c2", "c3", "10.0.0.1@1", "10.0.0.2@1", "z"]), min_size=1, max_size=5,
                unique=True)


def _allocate(strategy: str, fn: Callable) -> Callable[[Jvm, str, Any], tuple]:
    def compare(jvm: Jvm, release: str, example: tuple) -> tuple:
        nqueues, cids, index = example
        cids = sorted(cids)
        current = cids[index % len(cids)]
        mqs = [allocation.MessageQueue("T", f"b{i % 3}", i) for i in range(nqueues)]
        mqs = sorted(mqs)
        java_mqs = jlist([{"new": MQ, "types": [STRING, STRING, "int"], "args": [q.topic, q.broker_name,
                                                                                    jint(q.queue_id)]} for q in mqs])
        theirs = java_outcome(jvm.call(ALLOCATE + strategy, "allocate", "G", current, java_mqs, jlist(cids),
                                       types=(STRING, STRING, "java.util.List", "java.util.List"),
                                       target={"new": ALLOCATE + strategy}))
        if theirs[0] == "ok":
            theirs = ("ok", sorted(q["string"] for q in theirs[1]))
        ours = rule_outcome(fn, mqs, cids, current)
        if ours[0] == "raise" and theirs[0] == "raise":  # ValueError / IllegalArgumentException: a refusal
            return ("raise",), ("raise",)
        if ours[0] == "ok":
            ours = ("ok", sorted(f"MessageQueue [topic={q.topic}, brokerName={q.broker_name}, queueId={q.queue_id}]"
                                 for q in ours[1]))
        return ours, theirs
    return compare


for _name, _fn, _id in (("AllocateMessageQueueAveragely", allocation.allocate_averagely, "ALLOC-01"),
                        ("AllocateMessageQueueAveragelyByCircle", allocation.allocate_by_circle, "ALLOC-02"),
                        ("AllocateMessageQueueConsistentHash", allocation.allocate_consistent_hash, "ALLOC-03")):
    check(f"allocation.{_fn.__name__}", _id,
          f"client/src/main/java/org/apache/rocketmq/client/consumer/rebalance/{_name}.java#{_name}.allocate",
          "client", st.tuples(st.integers(0, 12), CIDS, st.integers(0, 10)))(_allocate(_name, _fn))


# ---- issue 35, second round: the rules the first round left out ---------------------------------------------------

@check("delay.compute_deliver_timestamp", "DELAY-05",
       "broker/src/main/java/org/apache/rocketmq/broker/schedule/ScheduleMessageService.java"
       "#ScheduleMessageService.computeDeliverTimestamp", "store",
       st.tuples(st.one_of(st.just(delay.DEFAULT_MESSAGE_DELAY_LEVEL), LEVEL_TEXT),
                 st.one_of(st.integers(-1, 20), edges.ints32()), edges.longs()))
def _compute_deliver_timestamp(jvm: Jvm, release: str, example: tuple) -> tuple:
    levels, level, store_timestamp = example
    if release != "4.9.8":
        jvm.require("broker", "ScheduleMessageService (rocketmq-broker)")
    table = delay.parse_delay_levels(levels)  # parseDelayLevel is checked on its own (DELAY-02)
    java_table = {"new": "java.util.concurrent.ConcurrentSkipListMap", "types": ["java.util.Map"],
                  "args": [{"map": [[jint(k), jlong(ms)] for k, ms in table.levels.items()]}]}
    service = {"alloc": _schedule_class(jvm), "set": {"delayLevelTable": java_table}}
    theirs = jvm.call(_schedule_class(jvm), "computeDeliverTimestamp", jint(level), jlong(store_timestamp),
                      types=("int", "long"), target=service)
    return rule_outcome(delay.compute_deliver_timestamp, level, store_timestamp, table), java_outcome(theirs)


BATCH_MESSAGE = st.fixed_dictionaries(
    {"topic": st.sampled_from(["T", "U", "%RETRY%g", "%RETRY%", "t%RETRY%", ""])},
    optional={"delay_level": st.one_of(st.integers(-2, 3), edges.ints32()), "wait_store_msg_ok": st.booleans(),
              "delay_ms": st.one_of(st.integers(-1, 2), edges.longs()), "delay_sec": st.integers(-1, 2),
              "deliver_ms": st.one_of(st.integers(-1, 2), edges.longs())})
BATCH_PROPERTIES = {"delay_level": "DELAY", "wait_store_msg_ok": "WAIT", "delay_ms": "TIMER_DELAY_MS",
                    "delay_sec": "TIMER_DELAY_SEC", "deliver_ms": "TIMER_DELIVER_MS"}


def _java_message(topic: str, properties: dict, body: bytes | None = b"x") -> dict:
    """A ``Message`` made without its constructor: topic, body and properties as given."""
    return {"alloc": "org.apache.rocketmq.common.message.Message",
            "set": {"topic": topic, "body": None if body is None else jbytes(body),
                    "properties": {"map": [[k, v] for k, v in properties.items()]}}}


@check("delay.check_batch", "DELAY-07",
       "common/src/main/java/org/apache/rocketmq/common/message/MessageBatch.java#MessageBatch.generateFromList",
       "common", st.lists(BATCH_MESSAGE, max_size=4))
def _check_batch(jvm: Jvm, release: str, messages: list) -> tuple:
    java_messages = [_java_message(m["topic"], {BATCH_PROPERTIES[k]: str(v).lower() if isinstance(v, bool) else str(v)
                                                for k, v in m.items() if k != "topic"}) for m in messages]
    answer = jvm.call("org.apache.rocketmq.common.message.MessageBatch", "generateFromList", jlist(java_messages),
                      types=("java.util.Collection",))
    if answer.thrown is None:
        theirs: tuple = ("ok",)
    elif answer.simple_thrown == "UnsupportedOperationException":
        theirs = ("raise", answer.message)
    else:  # an empty list: first.getTopic() on null
        theirs = ("raise", answer.simple_thrown)
    ours = rule_outcome(delay.check_batch, messages, release)
    if ours[0] == "raise":
        ours = ("raise", "NullPointerException" if ours[2].startswith("NullPointerException") else ours[2])
    return (("ok",) if ours[0] == "ok" else ours), theirs


TOPIC_CONFIG = "org.apache.rocketmq.common.TopicConfig"
TYPE_NAMES = st.one_of(st.none(), st.sampled_from(["NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED", "UNSPECIFIED",
                                                   "normal", "Normal", " NORMAL", "NORMAL\n", "", "LITE"]),
                       edges.edge_text(6, plain=tuple("NORMALFIX")))


def _message_or_raise(outcome: tuple) -> tuple:
    return outcome if outcome[0] == "ok" else ("raise", outcome[2])


@check("topic_types.topic_message_type", "TOPIC-05",
       "common/src/main/java/org/apache/rocketmq/common/TopicConfig.java#TopicConfig.getTopicMessageType", "common",
       TYPE_NAMES, since="5.0.0")
def _topic_message_type(jvm: Jvm, release: str, attribute: str | None) -> tuple:
    attributes = [] if attribute is None else [["message.type", attribute]]
    theirs = jvm.call(TOPIC_CONFIG, "getTopicMessageType",
                      target={"alloc": TOPIC_CONFIG, "set": {"attributes": {"map": attributes}}})
    return (_message_or_raise(rule_outcome(topic_types.topic_message_type, attribute, release)),
            _message_or_raise(java_outcome(theirs)))


TYPE_PROPERTIES = st.dictionaries(
    st.sampled_from(["TRAN_MSG", "DELAY", "TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS", "__SHARDINGKEY",
                     "KEYS", "TAGS"]),
    st.one_of(st.sampled_from(["true", "TRUE", "True", "true ", "false", "", "1", "0"]), edges.edge_text(4)),
    max_size=4)


@check("topic_types.message_type_of", "TOPIC-05",
       "common/src/main/java/org/apache/rocketmq/common/attribute/TopicMessageType.java"
       "#TopicMessageType.parseFromMessageProperty", "common", TYPE_PROPERTIES, since="5.0.0")
def _message_type_of(jvm: Jvm, release: str, properties: dict) -> tuple:
    if release == "5.0.0":  # proxy/.../processor/AbstractProcessor.java#AbstractProcessor.parseFromMessageExt
        jvm.require("proxy", "AbstractProcessor.parseFromMessageExt (rocketmq-proxy)")
        theirs = jvm.call("org.apache.rocketmq.proxy.processor.AbstractProcessor", "parseFromMessageExt",
                          _java_message("T", properties), types=("org.apache.rocketmq.common.message.Message",),
                          target={"alloc": "org.apache.rocketmq.proxy.processor.ProducerProcessor"})
    else:
        theirs = jvm.call("org.apache.rocketmq.common.attribute.TopicMessageType", "parseFromMessageProperty",
                          {"map": [[k, v] for k, v in properties.items()]}, types=("java.util.Map",))
    return rule_outcome(topic_types.message_type_of, properties, release), java_outcome(theirs)


EXPONENTIAL = ("org.apache.rocketmq.remoting.protocol.subscription.ExponentialRetryPolicy",
               "org.apache.rocketmq.common.subscription.ExponentialRetryPolicy")
POLICY_LONGS = st.one_of(st.sampled_from([0, 1, 2, 3, 10, 1000, 5000, 7_200_000]), edges.longs(), st.integers(-3, 64))


@check("retry5x.server_exponential_delay_ms", "RETRY-5X-02",
       "remoting/src/main/java/org/apache/rocketmq/remoting/protocol/subscription/ExponentialRetryPolicy.java"
       "#ExponentialRetryPolicy.nextDelayDuration", "common",
       st.tuples(st.one_of(st.integers(-2, 40), edges.ints32()), POLICY_LONGS, POLICY_LONGS, POLICY_LONGS),
       since="5.0.0")
def _server_exponential_delay_ms(jvm: Jvm, release: str, example: tuple) -> tuple:
    rt, initial, maximum, multiplier = example
    cls = jvm.resolve_class(EXPONENTIAL)
    policy = {"new": cls, "types": ["long", "long", "long"], "args": [jlong(initial), jlong(maximum), jlong(multiplier)]}
    theirs = jvm.call(cls, "nextDelayDuration", jint(rt), types=("int",), target=policy)
    return (rule_outcome(retry5x.server_exponential_delay_ms, rt, initial, maximum, multiplier),
            java_outcome(theirs))


SUBSCRIPTION_DATA = ("org.apache.rocketmq.remoting.protocol.heartbeat.SubscriptionData",
                     "org.apache.rocketmq.common.protocol.heartbeat.SubscriptionData")
TAGS_CODES = st.one_of(st.none(), edges.longs(), TAG_TEXT.map(tag_filter.tags_code),
                       st.tuples(TAG_TEXT.map(tag_filter.tags_code), st.sampled_from([1, -1, 2, 1 << 20]))
                       .map(lambda pair: pair[0] + (pair[1] << 32)))


@check("filter.broker_tag_match", "FILTER-03",
       "broker/src/main/java/org/apache/rocketmq/broker/filter/ExpressionMessageFilter.java"
       "#ExpressionMessageFilter.isMatchedByConsumeQueue", "broker",
       st.tuples(st.one_of(st.none(), TAG_TEXT, st.sampled_from(["a||b", "*", "a || *"])), TAGS_CODES))
def _broker_tag_match(jvm: Jvm, release: str, example: tuple) -> tuple:
    expression, code = example
    if expression is None:
        subscription, java_subscription = None, None
    else:
        try:
            subscription = tag_filter.parse_tag_expression(expression)
        except tag_filter.TagExpressionError:  # no subscription to filter by (FILTER-02 checks the refusal)
            return ("skip",), ("skip",)
        java_subscription = {"call": {"class": jvm.resolve_class(FILTER_API), "method": "buildSubscriptionData",
                                      "types": [STRING, STRING], "args": ["T", expression]}}
    emf = "org.apache.rocketmq.broker.filter.ExpressionMessageFilter"
    target = {"new": emf, "types": [jvm.resolve_class(SUBSCRIPTION_DATA), "org.apache.rocketmq.broker.filter."
                                    "ConsumerFilterData", "org.apache.rocketmq.broker.filter.ConsumerFilterManager"],
              "args": [java_subscription, None, None]}
    theirs = jvm.call(emf, "isMatchedByConsumeQueue", None if code is None else jlong(code), None,
                      types=("java.lang.Long", "org.apache.rocketmq.store.ConsumeQueueExt$CqExtUnit"), target=target)
    return rule_outcome(tag_filter.broker_tag_match, subscription, code), java_outcome(theirs)


_DESC = re.compile(r"^CODE: (-?\d+)\s+DESC: (.*)$", re.S)


def _client_exception(answer: Answer) -> tuple:
    """An MQClientException as (code, message): its message is ``CODE: n  DESC: text`` and the FAQ link."""
    outcome = java_outcome(answer)
    if outcome[0] == "ok":
        return ("ok",)
    m = _DESC.match(outcome[2])
    return ("raise", answer.code, m.group(2) if m else outcome[2])


@check("validation.check_body_client", "LIMIT-03",
       "client/src/main/java/org/apache/rocketmq/client/Validators.java#Validators.checkMessage", "client",
       st.tuples(st.one_of(st.none(), st.binary(max_size=18)),
                 st.one_of(st.integers(-2, 20), st.sampled_from([edges.INT_MIN, edges.INT_MAX, 4 * 1024 * 1024]))))
def _check_body_client(jvm: Jvm, release: str, example: tuple) -> tuple:
    body, max_size = example
    producer = {"alloc": "org.apache.rocketmq.client.producer.DefaultMQProducer",
                "set": {"maxMessageSize": jint(max_size)}}
    theirs = jvm.call("org.apache.rocketmq.client.Validators", "checkMessage", _java_message("T", {}, body), producer,
                      types=("org.apache.rocketmq.common.message.Message",
                             "org.apache.rocketmq.client.producer.DefaultMQProducer"))
    ours = rule_outcome(validation.check_body_client, body, max_size)
    return (("ok",) if ours[0] == "ok" else ("raise", _code_of(validation.check_body_client, body, max_size),
                                             ours[2])), _client_exception(theirs)


def _code_of(fn: Callable[..., Any], *args: Any) -> Any:
    try:
        fn(*args)
    except RocketMQError as e:
        return e.code
    return None


KEY_BUILDER = "org.apache.rocketmq.common.KeyBuilder"


@check("retry4x.pop_retry_topic_v1", "RETRY-CONC-05",
       "common/src/main/java/org/apache/rocketmq/common/KeyBuilder.java#KeyBuilder.buildPopRetryTopicV1", "common",
       st.tuples(edges.edge_text(), edges.edge_text()), since="5.0.0")
def _pop_retry_topic_v1(jvm: Jvm, release: str, example: tuple) -> tuple:
    group, topic = example
    # before 5.3.3 the one form is buildPopRetryTopic(topic, cid)
    method = "buildPopRetryTopicV1" if versions.holds(release, since="5.3.3") else "buildPopRetryTopic"
    theirs = jvm.call(KEY_BUILDER, method, topic, group, types=(STRING, STRING))
    return rule_outcome(retry4x.pop_retry_topic_v1, group, topic), java_outcome(theirs)


@check("retry4x.pop_retry_topic_v2", "RETRY-CONC-05",
       "common/src/main/java/org/apache/rocketmq/common/KeyBuilder.java#KeyBuilder.buildPopRetryTopicV2", "common",
       st.tuples(edges.edge_text(), edges.edge_text()), since="5.3.3")
def _pop_retry_topic_v2(jvm: Jvm, release: str, example: tuple) -> tuple:
    group, topic = example
    theirs = jvm.call(KEY_BUILDER, "buildPopRetryTopicV2", topic, group, types=(STRING, STRING))
    return rule_outcome(retry4x.pop_retry_topic_v2, group, topic), java_outcome(theirs)


TOPIC_VALIDATOR = "org.apache.rocketmq.common.topic.TopicValidator"
REMOTING_COMMAND = "org.apache.rocketmq.remoting.protocol.RemotingCommand"


@check("validation.check_topic_broker_4x", "LIMIT-01",
       "common/src/main/java/org/apache/rocketmq/common/topic/TopicValidator.java#TopicValidator.validateTopic",
       "common", st.one_of(edges.names(127), st.sampled_from(sorted(validation.NOT_ALLOWED_SEND_TOPICS))),
       until="4.9.8")
def _check_topic_broker_4x(jvm: Jvm, release: str, topic: str,
                           rule: Callable[[str], None] = validation.check_topic_broker_4x) -> tuple:
    # broker/.../processor/AbstractSendMessageProcessor.java#msgCheck@rocketmq-all-4.9.8 L175-180: validateTopic,
    # then isNotAllowedSendTopic, each filling the response in
    theirs: tuple = ("ok",)
    for method in ("validateTopic", "isNotAllowedSendTopic"):
        answer = jvm.call(TOPIC_VALIDATOR, method, topic, {"new": REMOTING_COMMAND}, types=(STRING, REMOTING_COMMAND),
                          read=("getCode", "getRemark"), of=1)
        v = answer.value
        if v["return"] is (method == "isNotAllowedSendTopic"):
            theirs = ("raise", v["getCode"], v["getRemark"])
            break
    ours = rule_outcome(rule, topic)
    return (("ok",) if ours[0] == "ok" else ("raise", _code_of(rule, topic), ours[2])), theirs


@check("validation.check_topic_broker", "LIMIT-01",
       "common/src/main/java/org/apache/rocketmq/common/topic/TopicValidator.java#TopicValidator.validateTopic",
       "common", st.one_of(edges.names(127), st.sampled_from(sorted(validation.NOT_ALLOWED_SEND_TOPICS)),
                           edges.names(255).map(lambda s: "%RETRY%" + s), st.just("%DLQ%" + "a" * 249)))
def _check_topic_broker(jvm: Jvm, release: str, topic: str) -> tuple:
    # Up to 5.0.0 TopicValidator fills msgCheck's response in (code and remark); later validateTopic answers
    # a ValidateTopicResult (valid, remark) and msgCheck chooses the code, which is not compared here
    if versions.holds(release, until="5.0.0"):
        return _check_topic_broker_4x(jvm, release, topic, lambda t: validation.check_topic_broker(t, release))
    answer = jvm.call(TOPIC_VALIDATOR, "validateTopic", topic, types=(STRING,), read=("isValid", "getRemark"))
    theirs: tuple = ("ok",)
    if not answer.value["isValid"]:
        theirs = ("raise", answer.value["getRemark"])
    elif jvm.call(TOPIC_VALIDATOR, "isNotAllowedSendTopic", topic, types=(STRING,)).value:
        theirs = ("raise", codes.R_NO_PERMISSION)
    ours = rule_outcome(validation.check_topic_broker, topic, release)
    if ours[0] == "raise":
        code = _code_of(validation.check_topic_broker, topic, release)
        ours = ("raise", code if code == codes.R_NO_PERMISSION else ours[2])
    return (("ok",) if ours[0] == "ok" else ours), theirs


@check("java_semantics.java_chars_in_table", "LIMIT-01",
       "common/src/main/java/org/apache/rocketmq/common/topic/TopicValidator.java"
       "#TopicValidator.isTopicOrGroupIllegal", "common", edges.edge_text(16))
def _java_chars_in_table(jvm: Jvm, release: str, text: str) -> tuple:
    theirs = java_outcome(jvm.call(TOPIC_VALIDATOR, "isTopicOrGroupIllegal", text, types=(STRING,)))
    return rule_outcome(java_semantics.java_chars_in_table, text), ("ok", not theirs[1]) if theirs[0] == "ok" else theirs


@check("java_semantics.java_length", "LIMIT-01", "java.base/java/lang/String.java#String.length", "common",
       edges.edge_text(20))
def _java_length(jvm: Jvm, release: str, text: str) -> tuple:
    return rule_outcome(java_semantics.java_length, text), java_outcome(jvm.call(STRING, "length", target=text))


@check("remoting.split_header_word", "REMOTING-01",
       "remoting/src/main/java/org/apache/rocketmq/remoting/protocol/RemotingCommand.java"
       "#RemotingCommand.getHeaderLength", "remoting", edges.ints32())
def _split_header_word(jvm: Jvm, release: str, word: int) -> tuple:
    kind = java_outcome(jvm.call(REMOTING_COMMAND, "getProtocolType", jint(word), types=("int",)))
    length = java_outcome(jvm.call(REMOTING_COMMAND, "getHeaderLength", jint(word), types=("int",)))
    ours = rule_outcome(remoting.split_header_word, word)
    if ours[0] == "ok":  # SerializeType.valueOf(byte): JSON is 0, ROCKETMQ 1, anything else null
        ours = ("ok", ({0: "JSON", 1: "ROCKETMQ"}.get(ours[1][0]), ours[1][1]))
    return ours, ("ok", (kind[1], length[1])) if kind[0] == length[0] == "ok" else (kind, length)


@check("validation.check_group_proxy", "LIMIT-02",
       "proxy/src/main/java/org/apache/rocketmq/proxy/grpc/v2/common/GrpcValidator.java"
       "#GrpcValidator.validateConsumerGroup", "proxy",
       st.one_of(edges.names(255), edges.edge_text().map(lambda s: "CID_RMQ_SYS_" + s)), since="5.0.0")
def _check_group_proxy(jvm: Jvm, release: str, group: str) -> tuple:
    validator = "org.apache.rocketmq.proxy.grpc.v2.common.GrpcValidator"
    answer = jvm.call(validator, "validateConsumerGroup", group, types=(STRING,),
                      target={"call": {"class": validator, "method": "getInstance"}})
    theirs: tuple = ("ok",) if answer.thrown is None else ("raise", answer.code, answer.message)
    ours = rule_outcome(validation.check_group_proxy, group, release)
    if ours[0] == "ok":
        ours = ("ok",)
    else:
        code = _code_of(validation.check_group_proxy, group, release)
        ours = ("raise", "ILLEGAL_CONSUMER_GROUP" if code == codes.ILLEGAL_CONSUMER_GROUP else code, ours[2])
    return ours, theirs


MACHINE_ROOM_BROKERS = st.lists(st.sampled_from(["IDC1@b0", "IDC2@b1", "IDC1@b2", "b3", "IDC1@", "@b4", "IDC1@b@c",
                                                 "IDC3@b5", "IDC1@@"]), min_size=0, max_size=5)


@check("allocation.allocate_by_machine_room", "ALLOC-06",
       "client/src/main/java/org/apache/rocketmq/client/consumer/rebalance/AllocateMessageQueueByMachineRoom.java"
       "#AllocateMessageQueueByMachineRoom.allocate", "client",
       st.tuples(MACHINE_ROOM_BROKERS, st.integers(1, 3), CIDS, st.integers(0, 10),
                 st.frozensets(st.sampled_from(["IDC1", "IDC2", "", "b0"]), max_size=3)))
def _allocate_by_machine_room(jvm: Jvm, release: str, example: tuple) -> tuple:
    brokers, per_broker, cids, index, idcs = example
    cids = sorted(cids)
    current = cids[index % len(cids)]
    mqs = sorted(allocation.MessageQueue("T", b, q) for b in brokers for q in range(per_broker))
    java_mqs = jlist([{"new": MQ, "types": [STRING, STRING, "int"], "args": [q.topic, q.broker_name, jint(q.queue_id)]}
                      for q in mqs])
    cls = ALLOCATE + "AllocateMessageQueueByMachineRoom"
    theirs = java_outcome(jvm.call(cls, "allocate", "G", current, java_mqs, jlist(cids),
                                   types=(STRING, STRING, "java.util.List", "java.util.List"),
                                   target={"alloc": cls, "set": {"consumeridcs": {"set": sorted(idcs)}}}))
    if theirs[0] == "ok":
        theirs = ("ok", [q["string"] for q in theirs[1]])
    ours = rule_outcome(allocation.allocate_by_machine_room, mqs, cids, current, idcs)
    if ours[0] == "ok":
        ours = ("ok", [f"MessageQueue [topic={q.topic}, brokerName={q.broker_name}, queueId={q.queue_id}]"
                       for q in ours[1]])
    if ours[0] == "raise" and theirs[0] == "raise":
        return ("raise",), ("raise",)
    return ours, theirs


# ---- the JDK's and Guava's methods the rules restate (PRIM-01..03, DELAY-02, FILTER-06, RETRY-5X-04) ----------------

def jdouble(x: float) -> dict[str, str]:
    """A double as ``Double.valueOf`` reads it, exactly (hexadecimal)."""
    if math.isnan(x):
        return {"double": "NaN"}
    if math.isinf(x):
        return {"double": "Infinity" if x > 0 else "-Infinity"}
    return {"double": x.hex()}


def from_jdouble(v: Any) -> float:
    return float(v["double"])


def double_bits(x: float) -> int:
    return struct.unpack(">q", struct.pack(">d", x))[0]


DOUBLES = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([0.0, -0.0, 1.0, -1.0, 5e-324, 1.7976931348623157e308, math.nan, math.inf,
                                     -math.inf, 2.0 ** 63, 0.5, 1e-3, 1e7]))


@check("primitives.java_abs_int", "PRIM-01", "java.base/java/lang/Math.java#Math.abs", "common", edges.ints32())
def _java_abs_int(jvm: Jvm, release: str, n: int) -> tuple:
    return (rule_outcome(primitives.java_abs_int, n),
            java_outcome(jvm.call("java.lang.Math", "abs", jint(n), types=("int",))))


@check("primitives.java_char_digit", "DELAY-02", "java.base/java/lang/Character.java#Character.digit", "common",
       st.one_of(st.characters(max_codepoint=0xFFFF), st.sampled_from(list("09\u0663\uff17\u00b2\u2460\ud800a"))))
def _java_char_digit(jvm: Jvm, release: str, unit: str) -> tuple:
    theirs = jvm.call("java.lang.Character", "digit", {"char": unit}, jint(10), types=("char", "int"))
    return rule_outcome(primitives.java_char_digit, unit), java_outcome(theirs)


@check("primitives.java_double_compare", "FILTER-06", "java.base/java/lang/Double.java#Double.compare", "common",
       st.tuples(DOUBLES, DOUBLES))
def _java_double_compare(jvm: Jvm, release: str, example: tuple) -> tuple:
    a, b = example
    theirs = jvm.call("java.lang.Double", "compare", jdouble(a), jdouble(b), types=("double", "double"))
    return rule_outcome(primitives.java_double_compare, a, b), java_outcome(theirs)


@check("primitives.java_double_to_long_bits", "FILTER-06",
       "java.base/java/lang/Double.java#Double.doubleToLongBits", "common", DOUBLES)
def _java_double_to_long_bits(jvm: Jvm, release: str, x: float) -> tuple:
    theirs = jvm.call("java.lang.Double", "doubleToLongBits", jdouble(x), types=("double",))
    return rule_outcome(primitives.java_double_to_long_bits, x), java_outcome(theirs)


@check("primitives.java_parse_double", "FILTER-06", "java.base/java/lang/Double.java#Double.valueOf", "common",
       st.one_of(edges.number_text(), DOUBLES.map(repr), st.sampled_from(["0x1.8p1", "1e400", "-1e-400", "1.5f",
                                                                           " 2d\n", "0x.p1", ".e1", "1_0"])))
def _java_parse_double(jvm: Jvm, release: str, text: str) -> tuple:
    theirs = java_outcome(jvm.call("java.lang.Double", "valueOf", text, types=(STRING,)))
    theirs = ("ok", double_bits(from_jdouble(theirs[1]))) if theirs[0] == "ok" else ("raise",)
    ours = rule_outcome(primitives.java_parse_double, text)
    return ("ok", double_bits(ours[1])) if ours[0] == "ok" else ("raise",), theirs


@check("primitives.ieee_pow", "RETRY-5X-04", "java.base/java/lang/Math.java#Math.pow", "common",
       st.tuples(st.one_of(DOUBLES, st.integers(-70, 70).map(float)), st.one_of(DOUBLES, st.integers(-40, 1100)
                                                                               .map(float))))
def _ieee_pow(jvm: Jvm, release: str, example: tuple) -> tuple:
    base, exponent = example
    theirs = java_outcome(jvm.call("java.lang.Math", "pow", jdouble(base), jdouble(exponent),
                                   types=("double", "double")))
    ours = rule_outcome(primitives.ieee_pow, base, exponent)
    if ours[0] == theirs[0] == "ok":
        # Math.pow's contract is the exact power within 1 ulp (HotSpot's intrinsic is not always correctly
        # rounded, 41.0 ** 10.0 is one such); the special cases (NaN, infinities, zeros) are exact
        a, b = double_bits(ours[1]), double_bits(from_jdouble(theirs[1]))
        both_nan = math.isnan(ours[1]) and math.isnan(from_jdouble(theirs[1]))
        close = both_nan or a == b or ((a < 0) == (b < 0) and abs(a - b) == 1 and not math.isinf(ours[1])
                                       and not math.isinf(from_jdouble(theirs[1])))
        return ("ok", True), ("ok", close or (a, b))
    return ours, theirs


@check("primitives.guava_consistent_hash", "PRIM-02",
       "guava/src/com/google/common/hash/Hashing.java#Hashing.consistentHash", "common",
       st.tuples(edges.longs(), st.one_of(st.integers(1, 64), st.sampled_from([edges.INT_MAX, 0, -1]))),
       since="5.0.0")
def _guava_consistent_hash(jvm: Jvm, release: str, example: tuple) -> tuple:
    key, buckets = example
    theirs = java_outcome(jvm.call("com.google.common.hash.Hashing", "consistentHash", jlong(key), jint(buckets),
                                   types=("long", "int")))
    ours = rule_outcome(primitives.guava_consistent_hash, key, buckets)
    return (ours if ours[0] == "ok" else ("raise",)), (theirs if theirs[0] == "ok" else ("raise",))


@check("primitives.siphash24", "PRIM-03", "guava/src/com/google/common/hash/Hashing.java#Hashing.sipHash24",
       "common", st.binary(max_size=40), since="5.0.0")
def _siphash24(jvm: Jvm, release: str, data: bytes) -> tuple:
    function = {"call": {"class": "com.google.common.hash.Hashing", "method": "sipHash24"}}
    hashed = {"call": {"class": "com.google.common.hash.HashFunction", "method": "hashBytes", "types": ["byte[]"],
                       "args": [jbytes(data)], "target": function}}
    theirs = jvm.call("com.google.common.hash.HashCode", "asLong", target=hashed)
    return rule_outcome(primitives.siphash24, data), java_outcome(theirs)


@check("message_id.java_host_address", "MSGID-01", "java.base/java/net/InetAddress.java#InetAddress.getByAddress",
       "common", st.one_of(st.binary(min_size=4, max_size=4), st.binary(min_size=16, max_size=16),
                           st.binary(min_size=4, max_size=4).map(lambda b: bytes(10) + b"\xff\xff" + b),
                           st.sampled_from([bytes(16), bytes(15) + b"\x01", bytes(4)])))
def _java_host_address(jvm: Jvm, release: str, raw: bytes) -> tuple:
    address = {"call": {"class": "java.net.InetAddress", "method": "getByAddress", "types": ["byte[]"],
                        "args": [jbytes(raw)]}}
    theirs = jvm.call("java.net.InetAddress", "getHostAddress", target=address)
    return rule_outcome(message_id.java_host_address, raw), java_outcome(theirs)


@check("message_id.uniq_id_is_ipv6", "MSGID-02",
       "common/src/main/java/org/apache/rocketmq/common/message/MessageClientIDSetter.java"
       "#MessageClientIDSetter.getIPFromID", "common",
       st.one_of(HEX_TEXT, st.sampled_from([32, 55, 56, 57, 58]).flatmap(
           lambda n: st.text(alphabet=st.sampled_from(list("0123456789abcdefABCDEF ")), min_size=n, max_size=n))))
def _uniq_id_is_ipv6(jvm: Jvm, release: str, msg_id: str) -> tuple:
    answer = jvm.call("org.apache.rocketmq.common.message.MessageClientIDSetter", "getIPFromID", msg_id,
                      types=(STRING,))
    theirs = ("raise", answer.simple_thrown) if answer.thrown else ("ok", len(bytes.fromhex(answer.value["bytes"])) == 16)
    ours = rule_outcome(message_id.uniq_id_is_ipv6, msg_id)
    return (ours if ours[0] == "ok" else ("raise", {"NullIdError": "NullPointerException"}.get(ours[1], ours[1]))), \
        theirs


TYPE_VALUES = st.sampled_from(["UNSPECIFIED", "NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED", "PRIORITY", "LITE"])


@check("topic_types.proxy_check", "TOPIC-05",
       "proxy/src/main/java/org/apache/rocketmq/proxy/processor/validator/DefaultTopicMessageTypeValidator.java"
       "#DefaultTopicMessageTypeValidator.validate", "proxy", st.tuples(TYPE_VALUES, TYPE_VALUES), since="5.0.0")
def _proxy_check(jvm: Jvm, release: str, example: tuple) -> tuple:
    topic_type, message_type = example
    if not {topic_type, message_type} <= set(topic_types.topic_types(release)):
        return ("skip",), ("skip",)  # no such TopicMessageType in the release (topic_message_type checks that)
    enum = "org.apache.rocketmq.common.attribute.TopicMessageType"
    cls = "org.apache.rocketmq.proxy.processor.validator.DefaultTopicMessageTypeValidator"
    answer = jvm.call(cls, "validate", {"enum": enum, "name": topic_type}, {"enum": enum, "name": message_type},
                      types=(enum, enum), target={"new": cls})
    theirs = ("ok",) if answer.thrown is None else ("raise", answer.code, answer.message)
    ours = rule_outcome(topic_types.proxy_check, "T", topic_type, message_type, release)
    if ours[0] == "raise":
        code = _code_of(topic_types.proxy_check, "T", topic_type, message_type, release)
        ours = ("raise", "MESSAGE_PROPERTY_CONFLICT_WITH_TYPE" if code == topic_types.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
                else code, ours[2])
    return (("ok",) if ours[0] == "ok" else ours), theirs


@check("transaction.check_interval_ms", "TX-03",
       "common/src/main/java/org/apache/rocketmq/common/BrokerConfig.java#BrokerConfig.getTransactionCheckInterval",
       "common", st.just(None))
def _check_interval_ms(jvm: Jvm, release: str, _: None) -> tuple:
    from reference_impl.rules import transaction

    theirs = jvm.call("org.apache.rocketmq.common.BrokerConfig", "getTransactionCheckInterval",
                      target={"new": "org.apache.rocketmq.common.BrokerConfig"})
    return rule_outcome(transaction.check_interval_ms, release), java_outcome(theirs)


# ---- issue 35, third round: routes, latency, retry codes, the proxy's code map, the SQL92 parser ------------------

ROUTE = ("org.apache.rocketmq.remoting.protocol.route.", "org.apache.rocketmq.common.protocol.route.")
CLIENT_INSTANCE = "org.apache.rocketmq.client.impl.factory.MQClientInstance"
BROKER_NAMES = st.sampled_from(["a", "b", "B", "", "b\n", "\u00e9", "\uff17", "\U0001F600", "\ud800", "b0", "a b"])
QUEUE_NUMS = st.one_of(st.integers(-1, 4), st.sampled_from([edges.INT_MIN, -2]))
PERMS = st.one_of(st.integers(0, 7), st.sampled_from([edges.INT_MIN, -1, 8, 10]))
ROUTES = st.tuples(
    st.lists(st.tuples(BROKER_NAMES, QUEUE_NUMS, QUEUE_NUMS, PERMS), max_size=5),
    st.frozensets(BROKER_NAMES, max_size=6),  # the brokers whose BrokerData has a master (id 0)
    st.frozensets(BROKER_NAMES, max_size=6))  # the brokers with no BrokerData at all
SORTED_ROUTES = st.permutations(["\uff17", "\U0001F600", "\ue000", "a", "\u00e9"]).map(
    lambda names: ([(n, 1, 1, 6) for n in names], frozenset(names), frozenset()))
"""Writable routes whose broker names order differently by UTF-16 unit and by code point."""
ORDER_CONF = st.one_of(st.none(), st.lists(st.sampled_from(["b", ":", ";", "2", "0", "-1", "x", " 1", "\u0663", "",
                                                            "2147483648", "1:", "a:3"]), max_size=6).map("".join))


def _java_route(jvm: Jvm, example: tuple, order_conf: str | None = None) -> tuple[dict, list]:
    """A ``TopicRouteData`` made without its constructor, and the rule's ``QueueData`` list for it."""
    datas, masters, absent = example
    route_pkg = jvm.resolve_class(tuple(p + "TopicRouteData" for p in ROUTE)).rsplit(".", 1)[0] + "."
    qds = [{"alloc": route_pkg + "QueueData", "set": {"brokerName": name, "readQueueNums": jint(r),
                                                      "writeQueueNums": jint(w), "perm": jint(p)}}
           for name, r, w, p in datas]
    names = list(dict.fromkeys(name for name, *_ in datas))
    bds = [{"alloc": route_pkg + "BrokerData", "set": {"brokerName": name, "brokerAddrs": {
        "map": [[jlong(0 if name in masters else 1), "127.0.0.1:10911"]]}}} for name in names if name not in absent]
    route = {"alloc": route_pkg + "TopicRouteData", "set": {"orderTopicConf": order_conf, "queueDatas": jlist(qds),
                                                           "brokerDatas": jlist(bds)}}
    ours = [queue_selection.QueueData(name, r, w, p, name in masters and name not in absent) for name, r, w, p in datas]
    return route, ours


def _queue_strings(queues: list) -> list[str]:
    return [f"MessageQueue [topic={q.topic}, brokerName={q.broker_name}, queueId={q.queue_id}]" for q in queues]


@check("queue_selection.publish_queues", "QSEL-03",
       "client/src/main/java/org/apache/rocketmq/client/impl/factory/MQClientInstance.java"
       "#MQClientInstance.topicRouteData2TopicPublishInfo", "client",
       st.one_of(st.tuples(ROUTES, ORDER_CONF), st.tuples(SORTED_ROUTES, st.none())))
def _publish_queues(jvm: Jvm, release: str, example: tuple) -> tuple:
    routes, order_conf = example
    route, qds = _java_route(jvm, routes, order_conf)
    theirs = java_outcome(jvm.call(CLIENT_INSTANCE, "topicRouteData2TopicPublishInfo", "T", route,
                                   types=(STRING, jvm.resolve_class(tuple(p + "TopicRouteData" for p in ROUTE))),
                                   read=("getMessageQueueList",)))
    theirs = ("ok", [q["string"] for q in theirs[1]["getMessageQueueList"]]) if theirs[0] == "ok" else theirs[:2]
    ours = rule_outcome(queue_selection.publish_queues, "T", qds, order_conf)
    # the rule's ValueError stands for Integer.parseInt's NumberFormatException
    ours = ("ok", _queue_strings(ours[1])) if ours[0] == "ok" else \
        ("raise", {"ValueError": "NumberFormatException"}.get(ours[1], ours[1]))
    return ours, theirs


@check("queue_selection.subscribe_queues", "QSEL-03",
       "client/src/main/java/org/apache/rocketmq/client/impl/factory/MQClientInstance.java"
       "#MQClientInstance.topicRouteData2TopicSubscribeInfo", "client", ROUTES)
def _subscribe_queues(jvm: Jvm, release: str, example: tuple) -> tuple:
    route, qds = _java_route(jvm, example)
    theirs = java_outcome(jvm.call(CLIENT_INSTANCE, "topicRouteData2TopicSubscribeInfo", "T", route,
                                   types=(STRING, jvm.resolve_class(tuple(p + "TopicRouteData" for p in ROUTE)))))
    theirs = ("ok", sorted(q["string"] for q in theirs[1])) if theirs[0] == "ok" else theirs[:2]
    ours = rule_outcome(queue_selection.subscribe_queues, "T", qds)
    ours = ("ok", sorted(set(_queue_strings(ours[1])))) if ours[0] == "ok" else ours[:2]
    return ours, theirs


FAULT = "org.apache.rocketmq.client.latency."
LATENCY_STEPS = (50, 100, 550, 1000, 1800, 2000, 3000, 5000, 10000, 15000, 30000)


@check("queue_selection.not_available_duration", "SEND-4X-06",
       "client/src/main/java/org/apache/rocketmq/client/latency/MQFaultStrategy.java"
       "#MQFaultStrategy.computeNotAvailableDuration", "client",
       st.one_of(edges.longs(), st.sampled_from(LATENCY_STEPS).flatmap(lambda n: st.sampled_from([n - 1, n, n + 1]))))
def _not_available_duration(jvm: Jvm, release: str, latency: int) -> tuple:
    if versions.holds(release, since="5.1.4"):  # 5.1.4 builds it from a client config, a resolver and a detector
        strategy = {"new": FAULT + "MQFaultStrategy",
                    "types": ["org.apache.rocketmq.client.ClientConfig", FAULT + "Resolver", FAULT + "ServiceDetector"],
                    "args": [{"new": "org.apache.rocketmq.client.ClientConfig"}, None, None]}
    else:
        strategy = {"new": FAULT + "MQFaultStrategy"}
    theirs = jvm.call(FAULT + "MQFaultStrategy", "computeNotAvailableDuration", jlong(latency), types=("long",),
                      target=strategy)
    return rule_outcome(queue_selection.not_available_duration, latency, release), java_outcome(theirs)


RESPONSE_CODES = st.one_of(st.integers(-2, 30), st.sampled_from([200, 201, 204, 205, 206, 207, 208, 209, 210, 211,
                                                                  10001, 10002, 10003, 10004, 10005, 10006, 10007,
                                                                  215, 254, 2022, 2023, 2024]), edges.ints32())


@check("send.retry_response_codes", "SEND-4X-03",
       "client/src/main/java/org/apache/rocketmq/client/producer/DefaultMQProducer.java"
       "#DefaultMQProducer.getRetryResponseCodes", "client", RESPONSE_CODES)
def _retry_response_codes(jvm: Jvm, release: str, code: int) -> tuple:
    from reference_impl.rules import send

    producer = "org.apache.rocketmq.client.producer.DefaultMQProducer"
    theirs = java_outcome(jvm.call(producer, "getRetryResponseCodes", target={"new": producer}))
    ours = rule_outcome(send.retry_response_codes, release)
    return ((ours[0], sorted(ours[1]), code in ours[1]) if ours[0] == "ok" else ours,
            (theirs[0], sorted(theirs[1]), code in theirs[1]) if theirs[0] == "ok" else theirs)


@check("send.grpc_code_for_remoting", "SEND-5X-03",
       "proxy/src/main/java/org/apache/rocketmq/proxy/grpc/v2/common/ResponseBuilder.java#ResponseBuilder.buildCode",
       "proxy", RESPONSE_CODES, since="5.0.0")
def _grpc_code_for_remoting(jvm: Jvm, release: str, code: int) -> tuple:
    from reference_impl.rules import send

    builder = "org.apache.rocketmq.proxy.grpc.v2.common.ResponseBuilder"
    built = {"call": {"class": builder, "method": "buildCode", "types": ["int"], "args": [jint(code)],
                      "target": {"call": {"class": builder, "method": "getInstance"}}}}
    theirs = jvm.call("apache.rocketmq.v2.Code", "getNumber", target=built)
    return rule_outcome(send.grpc_code_for_remoting, code, release), java_outcome(theirs)


SELECTOR_PARSER = "org.apache.rocketmq.filter.parser.SelectorParser"
CONSTANT = "org.apache.rocketmq.filter.expression.ConstantExpression"
SQL_TOKENS = st.sampled_from(["a", "b", ">", "=", "<>", "<=", "AND", "OR", "NOT", "and", "(", ")", "'x'", "'",
                              "''", "'a''b'", "1", "1L", "007", "2147483648", "9223372036854775807",
                              "9223372036854775808", "1.5", ".5", "1e309", "0.0", "4.9e-324", "2e-324", "BETWEEN",
                              "IN", "IS", "NULL", "TRUE", "FALSE", "CONTAINS", "STARTSWITH", ",", "-", "+", " ", "\n",
                              "\t", "\u00e9", "\U0001F600", "--", "/*", "*/", "$x", "_", "\x00", "\u00a0", "0x1"])
SQL_TEXT = st.one_of(st.lists(SQL_TOKENS, max_size=8).map(" ".join), st.lists(SQL_TOKENS, max_size=8).map("".join),
                     sql_oracle.trees.map(sql_oracle.render))


def _java_filter_error(answer: Answer) -> tuple:
    """A refused selector: MQFilterException's message is its cause's ``toString``; a ParseException's first
    sentence (the expected tokens after it are the parser's)."""
    cause, _, message = (answer.message or "").partition(": ")
    if cause.endswith("NumberFormatException"):  # the rule keeps this cause's simple name before its message
        message = "NumberFormatException: " + message
    return ("raise", message.split("\n")[0] if message.startswith("Encountered") else message)


def _ours_filter_error(outcome: tuple) -> tuple:
    return ("raise", outcome[2]) if outcome[1] in ("SqlParseError", "_NoMatch") else outcome


@check("sql92.compile_sql", "FILTER-05",
       "filter/src/main/java/org/apache/rocketmq/filter/parser/SelectorParser.java#SelectorParser.parse", "filter",
       SQL_TEXT, since="5.0.0")
def _compile_sql(jvm: Jvm, release: str, text: str) -> tuple:
    answer = jvm.call(SELECTOR_PARSER, "parse", text, types=(STRING,))
    theirs = ("ok", answer.value["string"]) if answer.thrown is None else _java_filter_error(answer)
    ours = rule_outcome(sql92.compile_sql, text, release)
    return (("ok", str(ours[1])) if ours[0] == "ok" else _ours_filter_error(ours)), theirs


SQL_PROPERTIES = st.dictionaries(st.sampled_from(sql_oracle.NAMES),
                                 st.one_of(st.sampled_from(sql_oracle.VALUES), edges.number_text(), edges.edge_text(4)),
                                 max_size=3)


@check("sql92.sql_matches", "FILTER-06",
       "broker/src/main/java/org/apache/rocketmq/broker/filter/ExpressionMessageFilter.java"
       "#ExpressionMessageFilter.isMatchedByCommitLog", "broker", st.tuples(SQL_TEXT, SQL_PROPERTIES), since="5.0.0")
def _sql_matches(jvm: Jvm, release: str, example: tuple) -> tuple:
    text, props = example
    parsed = jvm.call(SELECTOR_PARSER, "parse", text, types=(STRING,))
    if parsed.thrown is not None:
        theirs: tuple = ("raise",)
    else:  # isMatchedByCommitLog: the value of evaluate on the message's properties, matched when Boolean TRUE
        context = {"new": "org.apache.rocketmq.broker.filter.MessageEvaluationContext", "types": ["java.util.Map"],
                   "args": [{"map": [[k, v] for k, v in props.items()]}]}
        answer = jvm.call("org.apache.rocketmq.filter.expression.Expression", "evaluate", context,
                          types=("org.apache.rocketmq.filter.expression.EvaluationContext",),
                          target={"call": {"class": SELECTOR_PARSER, "method": "parse", "types": [STRING],
                                           "args": [text]}})
        theirs = ("ok", answer.thrown is None and answer.value is True)
    ours = rule_outcome(sql92.sql_matches, text, props, release)
    return (ours if ours[0] == "ok" else ("raise",)), theirs


@check("sql92.create_from_decimal", "FILTER-05",
       "filter/src/main/java/org/apache/rocketmq/filter/expression/ConstantExpression.java"
       "#ConstantExpression.createFromDecimal", "filter",
       st.one_of(edges.longs().map(lambda n: str(abs(n))), st.sampled_from(["0", "9223372036854775808", "2147483648",
                                                                             "2147483647L", "99999999999999999999l"]),
                 st.builds(lambda n, s: f"{n}{s}", st.integers(0, 2 ** 70), st.sampled_from(["", "l", "L"]))),
       since="5.0.0")
def _create_from_decimal(jvm: Jvm, release: str, image: str) -> tuple:
    created = {"call": {"class": CONSTANT, "method": "createFromDecimal", "types": [STRING], "args": [image]}}
    answer = jvm.call(CONSTANT, "getValue", target=created)
    if answer.thrown is None:  # the value and its class (Integer or Long)
        boxed = jvm.call("java.lang.Object", "getClass", target={"call": {"class": CONSTANT, "method": "getValue",
                                                                          "target": created}})
        theirs: tuple = ("ok", answer.value, boxed.value["string"].rsplit(".", 1)[-1])
    else:
        theirs = ("raise", f"{answer.simple_thrown}: {answer.message}")
    ours = rule_outcome(sql92.create_from_decimal, image)
    return (("ok", ours[1].value, sql92.java_type(ours[1].value)) if ours[0] == "ok" else ("raise", ours[2])), theirs


FLOAT_IMAGES = st.one_of(st.floats(min_value=0, allow_nan=False, allow_infinity=False).map(repr),
                         st.sampled_from(["0.0", "1e309", "1.7976931348623157e308", "1.7976931348623159e308",
                                          "4.9e-324", "2e-324", "3e-324", "2.4703282292062328e-324", ".5", "5.",
                                          "1e-400", "00.1e+01"]))


@check("sql92.create_float", "FILTER-05",
       "filter/src/main/java/org/apache/rocketmq/filter/expression/ConstantExpression.java"
       "#ConstantExpression.createFloat", "filter", FLOAT_IMAGES, since="5.0.0")
def _create_float(jvm: Jvm, release: str, image: str) -> tuple:
    answer = jvm.call(CONSTANT, "createFloat", image, types=(STRING,), read=("getValue",))
    theirs = (("ok", double_bits(from_jdouble(answer.value["getValue"]))) if answer.thrown is None
              else ("raise", answer.message))
    ours = rule_outcome(sql92.create_float, image)
    return (("ok", double_bits(ours[1].value)) if ours[0] == "ok" else ("raise", ours[2])), theirs


def _jvalue(value: Any) -> Any:
    """A selector value as the oracle boxes it: Integer, Long (``sql92.JavaLong``), Double, Boolean, String."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, sql92.JavaLong):
        return jlong(value)
    if isinstance(value, int):
        return jint(value)
    return jdouble(value)


SQL_VALUES = st.one_of(st.none(), st.booleans(), edges.ints32(), edges.longs().map(sql92.JavaLong), DOUBLES,
                       edges.edge_text(6, plain=tuple("ab'")))


@check("sql92.java_text", "FILTER-05",
       "filter/src/main/java/org/apache/rocketmq/filter/expression/ConstantExpression.java"
       "#ConstantExpression.toString", "filter", SQL_VALUES, since="5.0.0")
def _java_text(jvm: Jvm, release: str, value: Any) -> tuple:
    constant = {"new": CONSTANT, "types": ["java.lang.Object"], "args": [_jvalue(value)]}
    ours, theirs = rule_outcome(sql92.java_text, value), java_outcome(jvm.call(CONSTANT, "toString", target=constant))
    if isinstance(value, float) and ours[0] == theirs[0] == "ok":
        # Double.toString's digits depend on the JDK (primitives.java_double_to_string follows JDK 19+, the
        # oracle's is 17): compared as the double the text denotes and its notation
        return ((ours[1].count("E"), double_bits(float(ours[1]))),
                (theirs[1].count("E"), double_bits(float(theirs[1]))))
    return ours, theirs


@check("sql92.java_equals", "FILTER-06", "java.base/java/lang/Object.java#Object.equals", "filter",
       st.tuples(SQL_VALUES.filter(lambda v: v is not None), SQL_VALUES.filter(lambda v: v is not None)),
       since="5.0.0")
def _java_equals(jvm: Jvm, release: str, example: tuple) -> tuple:
    a, b = example
    theirs = jvm.call("java.lang.Object", "equals", _jvalue(b), types=("java.lang.Object",), target=_jvalue(a))
    return rule_outcome(sql92.java_equals, a, b), java_outcome(theirs)


@check("javacc.escape", "FILTER-05",
       "filter/src/main/java/org/apache/rocketmq/filter/parser/ParseException.java#ParseException.add_escapes",
       "filter", edges.edge_text(16, plain=tuple("ab\\'\"\b\f")), since="5.0.0")
def _escape(jvm: Jvm, release: str, text: str) -> tuple:
    theirs = jvm.call("org.apache.rocketmq.filter.parser.ParseException", "add_escapes", text, types=(STRING,))
    return rule_outcome(javacc.escape, text), java_outcome(theirs)


def oracle_line(c: OracleCheck) -> str:
    """The ``upstream`` source line of the check's behaviour that names the Java method the rule is checked
    against (``rmqc spec show ID`` prints it)."""
    releases = ", ".join(r for r in versions.COVERED if c.holds(r))
    return (f"oracle: `reference_impl.rules.{c.rule}` is checked against `{c.java}` at {releases} where Maven "
            f"Central serves rocketmq-{c.artifact} (suites/test_release_oracle.py)")


# ---- the rules that model a Java method but are not checked here, and why (issue 35) -------------------------------

CPP = "models rocketmq-client-cpp, a C++ SDK: there is no class of a RocketMQ server artifact to call"
NODE = "models the Node.js SDK (rocketmq-client-nodejs): there is no Java class to call"
GO = "models the Go 5.x SDK (github.com/apache/rocketmq-clients/golang/v5): there is no Java class to call"
PYTHON = "models the Python 5.x SDK: there is no Java class to call"
CLIENT_JAVA = ("models rocketmq-client-java, the 5.x gRPC SDK, which is not one of a release's server artifacts "
               "(its versions are not the release's)")
SQL92_STEP = ("is one step of SelectorParser.parse taking the Expression trees the parser builds (the oracle's JSON "
              "values build a ConstantExpression or a PropertyExpression, not the parser's anonymous subclasses); "
              "its check and message are compared through `reference_impl.rules.sql92.compile_sql`, whose drawn "
              "selectors reach it at every release with rocketmq-filter")
ENCOUNTERED = ("is the first sentence of ParseException.initialise, a private method reading the parser's "
               "expected-token tables as a failed parse leaves them; it is compared through "
               "`reference_impl.rules.sql92.compile_sql`, as the first line of every refused selector's message")

NOT_CHECKED: dict[str, str] = {
    "allocation.prepare": "needs a started consumer: RebalanceImpl.rebalanceByTopic reads the route and the "
                          "consumer ids a running name server and broker hand it",
    "cpp4x.orderly_retry_delay_ms": CPP,
    "cpp4x.send_attempts": CPP,
    "cpp4x.concurrent_batch": CPP,
    "cpp4x.producer_known_at_ms": CPP,
    "delay.restore_from_schedule": "needs a message as a running store decodes it (hosts, timestamps, flags): "
                                   "ScheduleMessageService.messageTimeup is reached only from the delivery task",
    "delay.route_timer_message": "needs a started broker: HookUtils.handleScheduleMessage reads the broker's timer "
                                 "message store and configuration",
    "delay.delay_level_for_timestamp": "reads the wall clock: ProxyConfig.computeDelayLevel subtracts "
                                       "System.currentTimeMillis()",
    "fifo.java_client_queue_for_group": CLIENT_JAVA,
    "fifo.message_group_error": "takes the gRPC protocol's protobuf Message (SendMessageActivity."
                                "validateMessageGroup), which the oracle's JSON values cannot build",
    "fifo.change_sets_next_visible_time": "needs a started broker: the order info lives in its "
                                          "ConsumerOrderInfoManager",
    "fifo.order_info_per_offset": "needs a started broker: the order info lives in its ConsumerOrderInfoManager",
    "fifo.commit_and_next": "needs a started orderly consumer whose ProcessQueue holds pulled messages",
    "fifo.local_proxy_reconsume_times": "needs a started proxy and broker: LocalMessageService.popMessage reads the "
                                        "count in the callback of a pop its broker answers",
    "filter.client_tag_match": "needs a pull result from a running broker: PullAPIWrapper.processPullResult decodes "
                               "the pulled bytes before it filters",
    "filter.sql_filters_retry_topic": "a broker setting (filterSupportRetry) read inside a running broker's pull "
                                      "path, with no method of its own",
    "javacc.encountered": ENCOUNTERED,
    "kafka_pattern.on_failure": "models the Kafka-style retry pattern (KAFKA-01), not a RocketMQ class",
    "message_id.offset_msg_id": "MessageDecoder.createMessageId takes ByteBuffers the oracle's JSON values cannot "
                                "build; its inverse, decodeMessageId, is checked",
    "message_id.uniq_id": "depends on the wall clock, the process id and a counter (MessageClientIDSetter."
                          "createUniqID): no two calls agree",
    "message_id.set_uniq_id": "MessageClientIDSetter.setUniqID makes a new id from the clock when the message has "
                              "none",
    "message_id.message_id_version": CLIENT_JAVA,
    "node5x.duration_seconds": NODE,
    "node5x.exponential_delay_ms": NODE,
    "node5x.consumer_policy": NODE,
    "node5x.nack_invisible_ms": NODE,
    "node5x.fifo_max_attempts": NODE,
    "node5x.fifo_local_attempts": NODE,
    "node5x.message_type_mismatch": NODE,
    "node5x.declared_topics": NODE,
    "node5x.startup_awaits_settings": NODE,
    "node5x.push_ack_retry_ms": NODE,
    "node5x.simple_ack_raises": NODE,
    "go5x.declared_topics": GO,
    "go5x.simple_ack_code": GO,
    "java5x.declared_topics": CLIENT_JAVA,
    "java5x.client_refusal": CLIENT_JAVA,
    "offsets.compute_pull_from_where": "needs a started consumer and broker: computePullFromWhereWithException asks "
                                       "the broker for the stored offset",
    "offsets.broker_query_offset": "needs a started broker's consumer offset manager and message store",
    "offsets.get_message_status": "needs a started message store (DefaultMessageStore.getMessage)",
    "orderly4x.check_reconsume_times": "needs a started orderly push consumer (ConsumeMessageOrderlyService)",
    "orderly4x.process_consume_result": "needs a started orderly push consumer (ConsumeMessageOrderlyService)",
    "orderly4x.lock_expired": "reads the wall clock (System.currentTimeMillis() in ProcessQueue.isLockExpired)",
    "primitives.java_double_to_string": "follows the JDK 19+ Double.toString (the fewest digits); what a JVM prints "
                                        "depends on its JDK (the oracle's here is 17, whose FloatingDecimal gives a "
                                        "longer tail for a few values), not on the release",
    "queue_selection.select_one": "starts from a random index kept per thread (ThreadLocalIndex)",
    "queue_selection.java_take_message_queues": CLIENT_JAVA,
    "queue_selection.select_with_latency_fault": "needs the latency state a running producer gathers, and a random "
                                                 "start index",
    "retry4x.fallback_republish_properties": "needs a started push consumer (sendMessageBack after a failed "
                                             "CONSUMER_SEND_MSG_BACK)",
    "retry4x.handle_retry_and_dlq": "needs a started broker: handleRetryAndDLQ reads its subscription groups and "
                                    "creates topics",
    "retry4x.topic_seen_by_listener": "needs a started push consumer (resetRetryAndNamespace)",
    "retry4x.offset_after_remove": "needs two calls on one ProcessQueue (putMessage, then removeMessage); the "
                                   "oracle's calls share no object",
    "retry5x.consumer_settings": "needs a started proxy: mergeSubscriptionData reads the broker's subscription group",
    "retry5x.group_retry_policy": "needs a started proxy: the settings manager merges the broker's subscription "
                                  "group",
    "retry5x.offline_since_ms": "the timing of a running broker's channel scan and a running proxy's renew task",
    "retry5x.producer_settings": "needs a started proxy (mergeProducerData)",
    "retry5x.cleared_visible_at_ms": "needs a started proxy (ReceiptHandleProcessor.clearGroup)",
    "retry5x.java_customized_delay_ms": CLIENT_JAVA,
    "retry5x.java_exponential_delay_ms": CLIENT_JAVA,
    "retry5x.retry_arrival_wakes_long_poll": "needs a started broker's long-polling service",
    "retry5x.revived_properties": "needs a started broker's revive service and store",
    "retry5x.pop_init_offset": "needs a started broker's offset manager and store",
    "send.send_status_for": "decodes a running broker's response (MQClientAPIImpl.processSendResponse)",
    "send.sync_send": "the send loop of a started producer against a running name server and broker",
    "send.async_send": "the send loop of a started producer against a running name server and broker",
    "send.java_5x_send": CLIENT_JAVA,
    "sql92.as_boolean": SQL92_STEP,
    "sql92.create_equal": SQL92_STEP,
    "sql92.create_between": SQL92_STEP,
    "storage.assigns_queue_offset": "needs a started message store (DefaultMessageStore.assignOffset)",
    "storage.stored_queue_offset": "needs a started message store (CommitLog.doAppend)",
    "storage.encode_commitlog": "needs a started message store (CommitLog.doAppend)",
    "topic_types.route_accept_types": "answers with the gRPC protocol's protobuf types for a route a running name "
                                      "server gives (RouteActivity.parseTopicMessageType)",
    "topic_types.sdk_check": CLIENT_JAVA + "; and the Python and Node.js SDKs",
    "transaction.commit_or_rollback_flag": "needs a started broker (EndTransactionProcessor)",
    "validation.auto_create_topic": "needs a started broker's topic config manager "
                                    "(createTopicInSendMessageMethod)",
    "validation.check_send_queue_id": "needs a started broker: msgCheck reads its topic config",
    "validation.check_body_python_5x": PYTHON,
    "retry5x.revive_reconsume_times": "needs a started broker's revive service and store",
    "storage.index_keys": "needs a started message store's IndexService (IndexService.buildIndex)",
    "transaction.transactional_send_properties": "needs a started transaction producer: sendMessageInTransaction "
                                                 "sends the half message to a running broker",
    "validation.check_properties_proxy": "takes the gRPC protocol's protobuf Message (SendMessageActivity."
                                         "buildMessageProperty), which the oracle's JSON values cannot build",
}
"""``module.function`` of ``reference_impl.rules`` -> why the release oracle does not check it."""

CITES_JAVA = re.compile(r"\.java\b|#[a-z][A-Za-z0-9]+|\b[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*\.(?!js\b)[a-z][A-Za-z0-9]*\b"
                        r"|``[a-z]+[A-Z][A-Za-z0-9]*``")
"""A docstring that cites a Java method: a ``.java`` path, a ``#method``, a ``Class.method`` or a double-quoted
``camelCase`` name."""


def not_checked_line(rule: str) -> str:
    """The ``upstream`` source line of a behaviour saying why its rule is not checked against the release."""
    return f"oracle: not checked: `reference_impl.rules.{rule}` {NOT_CHECKED[rule]}"
