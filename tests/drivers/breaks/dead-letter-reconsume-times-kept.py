"""Class: properties of the stored copies. A dead letter is stored with the reconsume times of the delivery
that failed, not one more."""
import dataclasses

from reference_impl.rules import retry4x

_send_back = retry4x.consumer_send_msg_back


def _kept(*args, **kwargs):
    result = _send_back(*args, **kwargs)
    if result.stored and result.topic and result.topic.startswith("%DLQ%"):
        return dataclasses.replace(result, reconsume_times=result.reconsume_times - 1)
    return result


retry4x.consumer_send_msg_back = _kept
