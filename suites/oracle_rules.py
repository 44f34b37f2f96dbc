"""Which reference rule is checked against which released Java method, and how (issue 35).

Each ``OracleCheck`` names a ``reference_impl.rules`` function, the Java method it models (``path#Class.method``
at the release tag), the artifact the class lives in, a Hypothesis strategy biased to Java's edges
(``suites.java_edges``) and a ``compare`` that runs both on one example and returns what each did, in one
comparable form. ``suites/test_release_oracle.py`` runs every check at every covered release; the spec's
behaviours name the same pairs in their ``upstream`` sources (``oracle: ...``), which
``tests/test_oracle_spec.py`` keeps in step with this table.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from hypothesis import strategies as st

from spec import versions

from reference_impl.rules import (allocation, delay, filter as tag_filter, message_id, primitives, remoting,
                                  retry4x, retry5x, storage, validation)
from reference_impl.rules.codes import RocketMQError
from reference_impl.rules.primitives import java_string_hash, to_int32
from suites import java_edges as edges
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

    @property
    def name(self) -> str:
        return self.rule


CHECKS: list[OracleCheck] = []


def check(rule: str, spec_id: str, java: str, artifact: str, strategy: st.SearchStrategy,
          since: str | None = None) -> Callable:
    def register(compare: Callable[[Jvm, str, Any], tuple[Any, Any]]) -> Callable:
        CHECKS.append(OracleCheck(rule, spec_id, java, artifact, strategy, compare, since))
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
    table = {"new": "java.util.concurrent.ConcurrentSkipListMap" if jvm.release.release == "5.3.3"
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


def oracle_line(c: OracleCheck) -> str:
    """The ``upstream`` source line of the check's behaviour that names the Java method the rule is checked
    against (``rmqc spec show ID`` prints it)."""
    releases = ", ".join(r for r in versions.COVERED if not c.since or versions.holds(r, since=c.since))
    return (f"oracle: `reference_impl.rules.{c.rule}` is checked against `{c.java}` at {releases} where Maven "
            f"Central serves rocketmq-{c.artifact} (suites/test_release_oracle.py)")
