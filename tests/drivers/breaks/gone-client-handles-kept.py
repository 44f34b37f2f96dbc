"""Class: receipt handles. A proxy that takes a consumer's ``NotifyClientTermination`` but keeps renewing the
handles it held: a FIFO message waiting for a local retry when its consumer shut down stays blocked until
the renewals stop (hours) instead of coming back a second later (RETRY-5X-09)."""
from reference_impl.model import broker


def _forgetful(self, client_id):
    self._gone_clients.add(client_id)


broker.Broker.client_gone = _forgetful
