"""Class: properties of the stored copies. The send-back stores RETRY_TOPIC = the retry topic itself, not the
topic the message came from."""
import dataclasses

from reference_impl.rules import retry4x

_send_back = retry4x.consumer_send_msg_back


def _wrong_retry_topic(*args, **kwargs):
    result = _send_back(*args, **kwargs)
    if not result.stored:
        return result
    return dataclasses.replace(result, properties={**result.properties, "RETRY_TOPIC": retry4x.retry_topic(args[0])})


retry4x.consumer_send_msg_back = _wrong_retry_topic
