"""The remoting protocol's vocabulary that the broker and every handler module share (REMOTING-01): the
request codes (``RequestCode``) and response codes (``RemotingSysResponseCode``, ``ResponseCode``) of
rocketmq-all-4.9.8, the message-properties text (``MessageDecoder.string2messageProperties``) and the JSON
bodies the handlers answer. No I/O, and nothing of the model here.
"""
from __future__ import annotations

import json

# request codes (common/.../protocol/RequestCode.java@rocketmq-all-4.9.8)
SEND_MESSAGE, PULL_MESSAGE, QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET = 10, 11, 14, 15
UPDATE_AND_CREATE_TOPIC, GET_MAX_OFFSET, GET_MIN_OFFSET, HEART_BEAT, UNREGISTER_CLIENT = 17, 30, 31, 34, 35
CONSUMER_SEND_MSG_BACK, GET_CONSUMER_LIST_BY_GROUP = 36, 38
GET_BROKER_RUNTIME_INFO, SEARCH_OFFSET_BY_TIMESTAMP = 28, 29
LOCK_BATCH_MQ, UNLOCK_BATCH_MQ = 41, 42
END_TRANSACTION, CHECK_TRANSACTION_STATE, NOTIFY_CONSUMER_IDS_CHANGED = 37, 39, 40
GET_CONSUMER_RUNNING_INFO, SEND_BATCH_MESSAGE = 307, 320
CHECK_CLIENT_CONFIG, UPDATE_BROKER_CONFIG = 46, 25
GET_ROUTEINFO_BY_TOPIC, GET_BROKER_CLUSTER_INFO = 105, 106
UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, SEND_MESSAGE_V2 = 200, 310
# response codes (RemotingSysResponseCode, ResponseCode)
SUCCESS, SYSTEM_ERROR, REQUEST_CODE_NOT_SUPPORTED, TOPIC_NOT_EXIST = 0, 1, 3, 17
PULL_NOT_FOUND, PULL_RETRY_IMMEDIATELY, PULL_OFFSET_MOVED, QUERY_NOT_FOUND = 19, 20, 21, 22
NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR = "\x01", "\x02"


def decode_properties(text: str) -> dict[str, str]:
    """``MessageDecoder.string2messageProperties``: name \\x01 value \\x02 ... (a part without \\x01 is skipped)."""
    out = {}
    for item in text.split(PROPERTY_SEPARATOR):
        name, sep, value = item.partition(NAME_VALUE_SEPARATOR)
        if sep:
            out[name] = value
    return out


def _json(data: object) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode("utf-8")
