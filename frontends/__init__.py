"""The reference's network front ends (``rmqc serve``): each a thin translation of one wire protocol onto
one shared, lock-guarded model service (``model_service.RealTimeModel``) over the reference model.

- ``grpc``: the RocketMQ 5.x ``apache.rocketmq.v2.MessagingService``, as a 5.x proxy answers it;
- ``process``: start a server process and read the address it listens on (tests, benchmarks).
"""
