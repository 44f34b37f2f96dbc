"""The vocabulary every part of rocketmq-conformance speaks: the event record and its Parquet form
(``events``, ``parquet``), the views on a trace (``trace``), what clients hand to listeners and callers
(``views``), the values a target speaks (``values``) and the profile names (``profiles``).

It imports nothing of the project's own: the reference, the adapters, the suites, the Spark checks and
the drivers all import it, and it imports none of them.
"""
