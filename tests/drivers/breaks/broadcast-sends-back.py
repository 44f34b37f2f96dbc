"""Class: consumer modes that must never send back. A broadcasting consumer sends a failed message back
like a clustering one."""
from reference_impl.model import consumer4x

_consume = consumer4x.PushConsumer4x._consume_concurrently


def _sending_back(self, key, message, reconsume_times):
    broadcasting, self.broadcasting = self.broadcasting, False
    try:
        _consume(self, key, message, reconsume_times)
    finally:
        self.broadcasting = broadcasting


consumer4x.PushConsumer4x._consume_concurrently = _sending_back
