"""The behaviour profiles' names, once for the whole project.

A profile is the set of expectations a target is held to: ``remoting-4.x`` (4.x clients over the
remoting protocol), ``grpc-5.x`` (proxy and 5.x SDKs), ``kafka-retry`` (the spring-kafka retry-topic
pattern seed 000 compares RocketMQ with) and ``docs`` (what the documentation says).
"""
from __future__ import annotations

REMOTING_4X = "remoting-4.x"
GRPC_5X = "grpc-5.x"
KAFKA_RETRY = "kafka-retry"
DOCS = "docs"

BROKER_PROFILES: tuple[str, ...] = (REMOTING_4X, GRPC_5X)
"""The profiles of RocketMQ itself: what a broker or proxy and its clients do (and what event logs name)."""

SPEC_PROFILES: tuple[str, ...] = (*BROKER_PROFILES, DOCS)
"""The profiles every behaviour states an expectation for in ``spec/behaviours``."""

REFERENCE_PROFILES: tuple[str, ...] = (*BROKER_PROFILES, KAFKA_RETRY)
"""The profiles the reference implementation runs."""
