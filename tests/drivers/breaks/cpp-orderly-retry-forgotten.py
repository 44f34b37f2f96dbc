"""Class: FIFO bookkeeping of an SDK. The 4.x C++ client's orderly consumer, after a failed delivery,
suspends the queue but forgets to consume the message again: the queue stays blocked and the message is
never delivered a second time (SDK-CPP-03 says it comes back after 1 s)."""
from reference_impl.model import consumer4x


def _forgetting(self, key, message, view, rt):
    if self._deliver(view).name == "SUCCESS":
        self._local_rt.pop((key, message.queue_offset), None)
        self._commit(key, message.queue_offset + 1)
        return True
    self._suspended_until[key] = self.sim.clock.now_ms + 1000
    return False


consumer4x.PushConsumer4x._consume_orderly_cpp = _forgetting
