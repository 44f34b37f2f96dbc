"""Class: the name of the topic a retried message is stored in. The 4.x retry topic gets a suffix; the
consumer subscribes to the same wrong name, so every delivery still comes on time."""
from reference_impl.rules import retry4x

retry4x.retry_topic = lambda group: f"%RETRY%{group}_RETRY"
