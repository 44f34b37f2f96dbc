"""Area: the 4.x send-back. The broker's CONSUMER_SEND_MSG_BACK dead-letters a message one reconsume early:
it compares ``reconsumeTimes + 1`` with the maximum (RETRY-CONC-04)."""
from reference_impl.rules import retry4x

_send_back = retry4x.consumer_send_msg_back


def _early(group, origin_topic, reconsume_times, properties, msg_id, delay_level, max_reconsume_times, **kwargs):
    limit = kwargs.get("group_retry_max_times", retry4x.DEFAULT_RETRY_MAX_TIMES) if max_reconsume_times is None \
        else max_reconsume_times
    if reconsume_times + 1 >= limit:
        delay_level = -1  # the DLQ branch
    return _send_back(group, origin_topic, reconsume_times, properties, msg_id, delay_level, max_reconsume_times,
                      **kwargs)


retry4x.consumer_send_msg_back = _early
