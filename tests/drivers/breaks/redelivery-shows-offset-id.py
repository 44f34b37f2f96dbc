"""Class: identity across retries. A redelivered message shows the id of the copy it was read from (its
topic and offset) instead of the id the producer was given."""
import dataclasses

from reference_impl.model import consumer4x

_view = consumer4x.PushConsumer4x._view


def _offset_id(self, message, reconsume_times):
    view = _view(self, message, reconsume_times)
    if reconsume_times == 0:
        return view
    return dataclasses.replace(view, msg_id=f"{message.topic}:{message.queue_id}:{message.queue_offset}")


consumer4x.PushConsumer4x._view = _offset_id
