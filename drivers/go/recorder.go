package main

// What a push consumer does inside the SDK, recorded from its gRPC calls: its first receive (the consumer is
// ready), and the acks, nacks (a change of invisible duration) and dead-letter forwards the server accepted.
//
// The SDK dials every connection with its package-level connection options (conn_options.go, defaultConnOptions),
// which are not exported: this file reaches them with go:linkname, pinned to the layout of v5.1.4 and checked at
// start-up, and adds two interceptors. Each call carries its client's id in the x-mq-client-id header.

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"
	_ "unsafe" // go:linkname

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// connOptions mirrors the SDK's connOptions (conn_options.go at golang/v5.1.4) field for field.
type connOptions struct {
	MaxCallSendMsgSize int
	MaxCallRecvMsgSize int
	TLS                *tls.Config
	DialOptions        []grpc.DialOption
	Context            context.Context
	DialTimeout        time.Duration
	Logger             *zap.Logger
}

//go:linkname sdkConnOptions github.com/apache/rocketmq-clients/golang/v5.defaultConnOptions
var sdkConnOptions connOptions

const (
	service         = "/apache.rocketmq.v2.MessagingService/"
	clientIDHeader  = "x-mq-client-id"
	sdkSendMsgLimit = 2 * 1024 * 1024
)

func installRecorder() {
	if sdkConnOptions.MaxCallSendMsgSize != sdkSendMsgLimit || sdkConnOptions.DialTimeout != 5*time.Second ||
		sdkConnOptions.TLS == nil || sdkConnOptions.Logger == nil {
		fail("the SDK's connection options are not laid out as in golang/v5.1.4; the push consumer recorder " +
			"cannot be installed")
	}
	sdkConnOptions.DialOptions = append(sdkConnOptions.DialOptions,
		grpc.WithChainUnaryInterceptor(recordUnary), grpc.WithChainStreamInterceptor(recordStream))
}

func clientIDOf(ctx context.Context) string {
	md, ok := metadata.FromOutgoingContext(ctx)
	if !ok {
		return ""
	}
	if values := md.Get(clientIDHeader); len(values) > 0 {
		return values[0]
	}
	return ""
}

func recordStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
	streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	stream, err := streamer(ctx, desc, cc, method, opts...)
	if err == nil && method == service+"ReceiveMessage" {
		if p := pushOf(clientIDOf(ctx)); p != nil {
			p.once.Do(func() { close(p.receiving) })
		}
	}
	return stream, err
}

func recordUnary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker,
	opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	if err != nil {
		return err
	}
	p := pushOf(clientIDOf(ctx))
	if p == nil {
		return nil
	}
	switch request := req.(type) {
	case *v2.AckMessageRequest:
		if reply.(*v2.AckMessageResponse).GetStatus().GetCode() == v2.Code_OK {
			for _, e := range request.GetEntries() {
				seen := p.seenOf(e.GetMessageId())
				emit(p.session, "ACK", map[string]any{"topic": request.GetTopic().GetName(), "group": p.group,
					"msg_id": e.GetMessageId(), "key": seen.key, "attempt": attemptOrNil(seen.attempt)})
			}
		}
	case *v2.ChangeInvisibleDurationRequest:
		if reply.(*v2.ChangeInvisibleDurationResponse).GetStatus().GetCode() == v2.Code_OK {
			seen := p.seenOf(request.GetMessageId())
			emit(p.session, "RETRY_SCHEDULED", map[string]any{"topic": request.GetTopic().GetName(), "group": p.group,
				"msg_id": request.GetMessageId(), "key": seen.key, "attempt": max(1, seen.attempt) + 1,
				"expected_delay_ms": specMs(request.GetInvisibleDuration().AsDuration()),
				"detail": map[string]string{"via": "change_invisible_duration"}})
		}
	case *v2.ForwardMessageToDeadLetterQueueRequest:
		if reply.(*v2.ForwardMessageToDeadLetterQueueResponse).GetStatus().GetCode() == v2.Code_OK {
			seen := p.seenOf(request.GetMessageId())
			emit(p.session, "RETRY_SCHEDULED", map[string]any{"topic": request.GetTopic().GetName(), "group": p.group,
				"msg_id": request.GetMessageId(), "key": seen.key, "attempt": attemptOrNil(seen.attempt),
				"detail": map[string]string{"via": "forward_to_dlq",
					"max_delivery_attempts": fmt.Sprint(request.GetMaxDeliveryAttempts())}})
		}
	}
	return nil
}

func attemptOrNil(attempt int) any {
	if attempt < 1 {
		return nil
	}
	return attempt
}
