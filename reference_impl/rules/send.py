"""Producer send semantics: defaults, the sync loop, retry codes, status mapping, async and oneway,
and the 5.x SDKs' attempts (SEND-4X-01..05, SEND-5X-01..03). Pure functions over scripted outcomes."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal, Sequence

from spec import versions

from . import codes, node5x
from .codes import RocketMQError

SEND_MSG_TIMEOUT_MS = 3000
RETRY_TIMES_WHEN_SEND_FAILED = 2
RETRY_TIMES_WHEN_SEND_ASYNC_FAILED = 2
COMPRESS_MSG_BODY_OVER_HOWMUCH = 4096
DEFAULT_TOPIC_QUEUE_NUMS = 4
CREATE_TOPIC_KEY = "TBW102"
MAX_ATTEMPTS_5X = 3

RETRY_RESPONSE_CODES = {
    "4.9.8": frozenset({codes.R_TOPIC_NOT_EXIST, codes.R_SERVICE_NOT_AVAILABLE, codes.R_SYSTEM_ERROR,
                        codes.R_NO_PERMISSION, codes.R_NO_BUYER_ID, codes.R_NOT_IN_CURRENT_UNIT}),
}
RETRY_RESPONSE_CODES["5.3.0"] = RETRY_RESPONSE_CODES["4.9.8"] | {codes.R_SYSTEM_BUSY, codes.R_GO_AWAY}

NOT_STORE_OK = {codes.R_FLUSH_DISK_TIMEOUT: "FLUSH_DISK_TIMEOUT", codes.R_FLUSH_SLAVE_TIMEOUT: "FLUSH_SLAVE_TIMEOUT",
                codes.R_SLAVE_NOT_AVAILABLE: "SLAVE_NOT_AVAILABLE"}


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".") if p.isdigit())  # idiom-ok: the project's release names


def retry_response_codes(version: str = "4.9.8") -> frozenset[int]:
    """``retryResponseCodes``; 5.3.0 adds SYSTEM_BUSY and GO_AWAY (SEND-4X-03)."""
    return RETRY_RESPONSE_CODES["5.3.0" if _version(version) >= (5, 3, 0) else "4.9.8"]


def send_status_for(code: int) -> str:
    """``processSendResponse``: a status, or MQBrokerException for other codes (SEND-4X-04)."""
    if code == codes.R_SUCCESS:
        return "SEND_OK"
    if code in NOT_STORE_OK:
        return NOT_STORE_OK[code]
    raise RocketMQError(code, "MQBrokerException")


Failure = Literal["remoting", "client", "timeout"]


@dataclass(frozen=True)
class Attempt:
    """What one attempt met: a broker response code, or a failure of the transport / client."""

    code: int | None = codes.R_SUCCESS
    failure: Failure | None = None
    cost_ms: int = 1
    broker: str = ""


@dataclass
class SendTrace:
    """The attempts a send made and how it ended (status, or error code and message)."""

    attempts: list[Attempt] = field(default_factory=list)
    status: str | None = None
    error_code: int | None = None
    error: str = ""
    budgets_ms: list[int] = field(default_factory=list)


def _attempts(outcomes: Sequence[Attempt] | Callable[[int, int], Attempt]) -> Callable[[int, int], Attempt | None]:
    if callable(outcomes):
        return outcomes
    return lambda i, budget: outcomes[i] if i < len(outcomes) else None


def sync_send(outcomes: Sequence[Attempt] | Callable[[int, int], Attempt],
              retry_times: int = RETRY_TIMES_WHEN_SEND_FAILED,
              timeout_ms: int = SEND_MSG_TIMEOUT_MS, retry_another_broker_when_not_store_ok: bool = False,
              version: str = "4.9.8") -> SendTrace:
    """``sendDefaultImpl`` for SYNC (SEND-4X-01, SEND-4X-02, SEND-4X-03, SEND-4X-04): up to 1 + retry_times
    attempts in one budget.

    ``outcomes[i]`` is what attempt i meets, or ``outcomes(i, budget_ms)`` makes attempt i (the model
    chooses the broker there). A timeout consumes the whole remaining budget.
    """
    next_attempt = _attempts(outcomes)
    trace = SendTrace()
    elapsed = 0
    last_status: str | None = None
    last_error: tuple[int, str] | None = None
    retry_codes = retry_response_codes(version)
    for i in range(1 + retry_times):
        if i > 0 and elapsed > timeout_ms:
            trace.error_code, trace.error = -1, "sendDefaultImpl call timeout"
            trace.status = None
            return trace
        budget = timeout_ms - elapsed
        attempt = next_attempt(i, budget)
        if attempt is None:
            break
        trace.budgets_ms.append(budget)
        trace.attempts.append(attempt)
        elapsed += (budget + attempt.cost_ms) if attempt.failure == "timeout" else attempt.cost_ms
        if attempt.failure is not None:
            last_error = ({"timeout": codes.C_ACCESS_BROKER_TIMEOUT, "remoting": codes.C_CONNECT_BROKER_EXCEPTION,
                           "client": codes.C_BROKER_NOT_EXIST_EXCEPTION}[attempt.failure], attempt.failure)
            continue
        assert attempt.code is not None
        try:
            status = send_status_for(attempt.code)
        except RocketMQError:
            if attempt.code in retry_codes:
                last_error = (attempt.code, "MQBrokerException")
                continue
            if last_status is not None:
                trace.status = last_status
                return trace
            trace.error_code, trace.error = attempt.code, "MQBrokerException"
            return trace
        if status == "SEND_OK" or not retry_another_broker_when_not_store_ok:
            trace.status = status
            return trace
        last_status = status
    if last_status is not None:
        trace.status = last_status
        return trace
    code, kind = last_error if last_error else (-1, "no attempt")
    trace.error_code = code
    trace.error = f"Send [{len(trace.attempts)}] times, still failed, cost [{elapsed}]ms ({kind})"
    return trace


def elapsed_ms(trace: SendTrace) -> int:
    """Time the attempts of a trace took: timeouts use their whole budget (SEND-4X-02)."""
    return sum((b + a.cost_ms) if a.failure == "timeout" else a.cost_ms for a, b in zip(trace.attempts, trace.budgets_ms))


def async_send(outcomes: Sequence[Attempt] | Callable[[int, int], Attempt],
               retry_times: int = RETRY_TIMES_WHEN_SEND_ASYNC_FAILED) -> SendTrace:
    """Async (SEND-4X-05): only transport failures are retried, up to retry_times more; a broker error
    response ends the send at once with ``onException``."""
    next_attempt = _attempts(outcomes)
    trace = SendTrace()
    for i in range(1 + retry_times):
        attempt = next_attempt(i, SEND_MSG_TIMEOUT_MS)
        if attempt is None:
            break
        trace.attempts.append(attempt)
        trace.budgets_ms.append(SEND_MSG_TIMEOUT_MS)
        if attempt.failure is None:
            assert attempt.code is not None
            try:
                trace.status = send_status_for(attempt.code)
            except RocketMQError:
                trace.error_code, trace.error = attempt.code, "onException: broker error"
            return trace
        if i == retry_times:
            break
    trace.error_code, trace.error = -1, "onException: transport failure"
    return trace


def oneway_send(outcomes: Sequence[Attempt] | Callable[[int, int], Attempt]) -> SendTrace:
    """Oneway: one attempt, no retry, no result (SEND-4X-01)."""
    attempt = _attempts(outcomes)(0, SEND_MSG_TIMEOUT_MS)
    return SendTrace(attempts=[attempt] if attempt else [], status=None, budgets_ms=[SEND_MSG_TIMEOUT_MS])


# ---- 5.x SDKs (SEND-5X-01..03) -----------------------------------------------------------------

REQUEST_CODE_NOT_SUPPORTED = 3
"""Remoting ``RemotingSysResponseCode.REQUEST_CODE_NOT_SUPPORTED``."""
LMQ_QUOTA_EXCEEDED, LITE_SUBSCRIPTION_QUOTA_EXCEEDED = 2017, 2018
"""Remoting ``ResponseCode`` codes of 5.5.0's lite topics."""


def grpc_code_for_remoting(code: int, release: str = versions.LATEST) -> int:
    """The proxy's mapping of a broker code to a gRPC code, ``ResponseBuilder.RESPONSE_CODE_MAPPING``
    (SEND-5X-03): SUCCESS, SYSTEM_BUSY, REQUEST_CODE_NOT_SUPPORTED, SUBSCRIPTION_GROUP_NOT_EXIST and the client's
    ACCESS_BROKER_TIMEOUT in every 5.x release; from 5.5.0 also LMQ_QUOTA_EXCEEDED and
    LITE_SUBSCRIPTION_QUOTA_EXCEEDED (proxy/.../grpc/v2/common/ResponseBuilder.java@rocketmq-all-5.5.0 L46-53);
    anything else INTERNAL_SERVER_ERROR."""
    mapping = {codes.R_SUCCESS: codes.OK, codes.R_SYSTEM_BUSY: codes.TOO_MANY_REQUESTS,
               REQUEST_CODE_NOT_SUPPORTED: codes.NOT_IMPLEMENTED,
               codes.R_SUBSCRIPTION_GROUP_NOT_EXIST: codes.CONSUMER_GROUP_NOT_FOUND,
               codes.C_ACCESS_BROKER_TIMEOUT: codes.PROXY_TIMEOUT}
    if versions.holds(release, since="5.5.0"):
        mapping |= {LMQ_QUOTA_EXCEEDED: codes.LITE_TOPIC_QUOTA_EXCEEDED,
                    LITE_SUBSCRIPTION_QUOTA_EXCEEDED: codes.LITE_SUBSCRIPTION_QUOTA_EXCEEDED}
    return mapping.get(code, codes.INTERNAL_SERVER_ERROR)


@dataclass(frozen=True)
class GrpcAttempt:
    code: int = codes.OK          # gRPC code of the response, or
    network_error: bool = False   # a transport failure


@dataclass
class Send5xTrace:
    attempts: list[GrpcAttempt] = field(default_factory=list)
    waits_ms: list[float] = field(default_factory=list)
    ok: bool = False
    error_code: int | None = None


def send_5x(outcomes: Sequence[GrpcAttempt] | Callable[[int], GrpcAttempt], sdk: str,
            max_attempts: int = MAX_ATTEMPTS_5X, settings_synced: bool = True,
            backoff: tuple[float, float, float] = (10, 1000, 2),
            sleep: Callable[[float], None] = lambda ms: None) -> Send5xTrace:
    """The 5.x SDKs' send attempts (SEND-5X-01, SEND-5X-02).

    Failures are retried at once, up to ``max_attempts``. TooManyRequests (42900) differs by SDK: the
    Java client waits ``getNextAttemptDelay(attempt + 1)`` of the server's exponential policy (0 before
    the settings sync); the Python client never retries it; the Node.js client waits the policy read in
    whole seconds as milliseconds (SDK-NODE-02). ``outcomes(n)`` makes attempt n (1-based).
    """
    from .retry5x import java_exponential_delay_ms

    next_attempt = outcomes if callable(outcomes) else (lambda n: outcomes[n - 1] if n <= len(outcomes) else None)
    trace = Send5xTrace()
    for attempt_no in range(1, max_attempts + 1):
        outcome = next_attempt(attempt_no)
        if outcome is None:
            break
        trace.attempts.append(outcome)
        if not outcome.network_error and outcome.code == codes.OK:
            trace.ok = True
            return trace
        trace.error_code = None if outcome.network_error else outcome.code
        flow_control = not outcome.network_error and outcome.code == codes.TOO_MANY_REQUESTS
        if flow_control and sdk == "python":
            return trace
        if attempt_no >= max_attempts:
            break
        if not (flow_control and settings_synced):
            wait: float = 0
        elif sdk == node5x.SDK:  # SDK-NODE-02: the backoff in whole seconds, used as milliseconds
            wait = node5x.publishing_retry_delay_ms(attempt_no + 1, backoff)
        else:
            wait = java_exponential_delay_ms(attempt_no + 1, *backoff)
        trace.waits_ms.append(wait)
        if wait:
            sleep(wait)
    return trace


def java_5x_send(outcomes: Sequence[GrpcAttempt], max_attempts: int = MAX_ATTEMPTS_5X, settings_synced: bool = True,
                 backoff: tuple[float, float, float] = (10, 1000, 2)) -> Send5xTrace:
    """Java ``ProducerImpl.send0`` over scripted outcomes (SEND-5X-01)."""
    return send_5x(outcomes, "java", max_attempts, settings_synced, backoff)


def python_5x_send(outcomes: Sequence[GrpcAttempt], max_attempts: int = MAX_ATTEMPTS_5X) -> Send5xTrace:
    """Python ``Producer`` over scripted outcomes (SEND-5X-02)."""
    return send_5x(outcomes, "python", max_attempts)
