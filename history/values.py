"""The values a target speaks, whatever implements it: what a listener answers, what a local
transaction says. Rules, models, adapters and drivers all use these same enums."""
from __future__ import annotations

import enum


class ListenerOutcome(enum.Enum):
    """What a scripted listener does; the client maps it to a status (RETRY-CONC-01, ORDER-4X-01)."""

    SUCCESS = "SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"
    EXCEPTION = "EXCEPTION"
    NULL = "NULL"
    SUSPEND = "SUSPEND"  # orderly listeners only
    COMMIT = "COMMIT"
    ROLLBACK = "ROLLBACK"


class LocalTransactionState(enum.Enum):
    """A transaction checker's answer (TX-03)."""

    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"


CPP_4X_SDK = "cpp"
"""The ``sdk`` of a 4.x scenario or consumer that follows the C++ client's habits (SDK-CPP-01..03), not the
Java ``DefaultMQPushConsumer``'s."""
NODE_5X_SDK = "nodejs"
"""The ``sdk`` of a 5.x scenario, producer or consumer that follows the Node.js client's habits (SDK-NODE-*)."""


SETTLE_LIMIT_MS = 30 * 24 * 3_600_000
"""The most spec time a settle lets pass (``Target.settle``, a simulation run to idle): a month, far past any
ladder, check schedule or expiry."""


SEND_OUTCOMES = ("unreachable", "timeout", "timeout_after_store", "system_busy", "system_error",
                 "flush_disk_timeout", "message_illegal")
"""What an injected broker fault makes a send attempt meet (``Target.inject_send_fault``; SEND-4X-02, SEND-5X-01,
SEND-5X-02, SEND-5X-03)."""

