"""The reference model over the RocketMQ 5.x gRPC protocol: the messaging service, its conversions to and
from protobuf, the server that hosts it."""
