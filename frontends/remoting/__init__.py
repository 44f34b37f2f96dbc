"""The remoting protocol front end: RocketMQ's 4.x name server and broker protocol over the same model as
``rmqc serve``'s gRPC front end (issue 20)."""
