"""Class: the name of the dead-letter topic. ``%DLQ%`` followed by the group in lower case."""
from reference_impl.rules import retry4x

retry4x.dlq_topic = lambda group: f"%DLQ%{group.lower()}"
