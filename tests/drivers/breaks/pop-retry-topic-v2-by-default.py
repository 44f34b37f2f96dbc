"""Class: the 5.x pop retry topic's name. The ``+`` form (v2) with enableRetryTopicV2 at its default false."""
from reference_impl.rules import retry4x

retry4x.pop_retry_topic_v1 = lambda group, topic: f"%RETRY%{group}+{topic}"
