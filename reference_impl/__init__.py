"""The reference implementation of RocketMQ's documented behaviours: pure rules and a discrete-event model."""

VERSION = "0.1.0"
"""The version of the reference (and of rocketmq-conformance): what ``rmqc serve`` reports."""
