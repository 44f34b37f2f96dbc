"""Class: what a listener sees on a redelivery. The consumer hands the listener the retry topic instead of
restoring RETRY_TOPIC."""
from reference_impl.rules import retry4x

retry4x.topic_seen_by_listener = lambda topic, properties, group: topic
