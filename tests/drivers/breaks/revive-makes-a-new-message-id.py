"""Area: message ids. The revive service writes a revived 5.x message under a new message id instead of the
one the producer gave it (MSGID-03)."""
import dataclasses

from reference_impl.model import broker

_revive = broker.Broker._revive


def _renamed(self, flight):
    flight.message = dataclasses.replace(flight.message, msg_id=flight.message.msg_id[:-4] + "FFFF")
    _revive(self, flight)


broker.Broker._revive = _renamed
