"""Class: FIFO bookkeeping. The Python SDK's FIFO consumer numbers its local attempts on from the server's
delivery attempt, as Java does, instead of from 1 (RETRY-5X-08)."""
from reference_impl.rules import retry5x

retry5x.counts_from_server_attempt = lambda sdk: True
