"""The reference model served over the RocketMQ 5.x gRPC protocol (``rmqc serve``)."""
