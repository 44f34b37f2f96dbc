package main

// Simple and push consumers. A push consumer acks, nacks and forwards to the dead-letter queue inside the SDK, with
// no hook of its own for a program to see them; they are recorded from the gRPC calls the SDK makes (recorder.go).

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"sync"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
)

func logging() bool { return os.Getenv("RMQC_SDK_LOG") != "" }

func filterOf(m map[string]any) map[string]*rmq.FilterExpression {
	expression := str(options(m)["expression"])
	if expression == "" {
		expression = "*"
	}
	return map[string]*rmq.FilterExpression{str(m["topic"]): rmq.NewFilterExpression(expression)}
}

func viewJSON(mv *rmq.MessageView) map[string]any {
	attempt := int(mv.GetDeliveryAttempt())
	if attempt < 1 {
		attempt = 1
	}
	properties := map[string]string{}
	for k, v := range mv.GetProperties() {
		properties[k] = v
	}
	var tag, group any
	if t := mv.GetTag(); t != nil {
		tag = optional(*t)
	}
	if g := mv.GetMessageGroup(); g != nil {
		group = optional(*g)
	}
	return map[string]any{"msg_id": mv.GetMessageId(), "topic": mv.GetTopic(), "key": firstKey(mv.GetKeys()),
		"tags": tag, "body": base64.StdEncoding.EncodeToString(mv.GetBody()), "reconsume_times": attempt - 1,
		"delivery_attempt": attempt, "queue_id": -1, "queue_offset": mv.GetOffset(), "stored_topic": mv.GetTopic(),
		"message_group": group, "properties": properties, "receipt_handle": mv.GetReceiptHandle()}
}

// ---- simple consumers --------------------------------------------------------------------------------------

func cmdSimpleConsumer(s *session, m map[string]any) (map[string]any, error) {
	group, handle := str(m["group"]), str(m["handle"])
	consumer, err := rmq.NewSimpleConsumer(config(group), rmq.WithSimpleAwaitDuration(awaitDuration),
		rmq.WithSimpleSubscriptionExpressions(filterOf(m)))
	if err != nil {
		return nil, err
	}
	if err := start("simple consumer "+handle, consumer, consumer.Start, false); err != nil {
		return nil, err
	}
	id, _ := internals(consumer)
	register(handle, &entry{session: s, kind: "simple consumer", group: group, clientID: id, simple: consumer,
		stop: consumer.GracefulStop, views: map[string]*rmq.MessageView{}})
	return nil, nil
}

func simpleOf(m map[string]any) (*entry, error) {
	e, err := clientOf(m)
	if err == nil && e.simple == nil {
		err = na("%s is a %s, not a simple consumer", str(m["handle"]), e.kind)
	}
	return e, err
}

// messageNotFound is what the Go SDK's Receive returns when there is nothing to receive: the server's
// MESSAGE_NOT_FOUND as an error, where the Java client returns an empty list; a Go program reads it as "nothing".
const messageNotFound = 40401

func cmdReceive(s *session, m map[string]any) (map[string]any, error) {
	e, err := simpleOf(m)
	if err != nil {
		return nil, err
	}
	invisible := float64(intOf(m["invisible_ms"], 30000))
	received, err := e.simple.Receive(context.Background(), int32(intOf(m["max_messages"], 16)),
		wireDuration(max(0, invisible)))
	if err != nil && codeOf(err) != messageNotFound {
		return nil, err
	}
	views := []any{}
	for _, mv := range received {
		e.mu.Lock()
		e.views[mv.GetReceiptHandle()] = mv
		e.mu.Unlock()
		view := viewJSON(mv)
		emit(s, "DELIVER", map[string]any{"topic": mv.GetTopic(), "group": e.group, "msg_id": mv.GetMessageId(),
			"key": view["key"], "message_group": view["message_group"], "attempt": view["delivery_attempt"]})
		views = append(views, view)
	}
	return map[string]any{"views": views}, nil
}

// heldView is a copy of the SDK's message view carrying the view's own receipt handle: the SDK moves a view on to
// the handle a change of invisible time returned, while a caller may hold on to the old one (RETRY-5X-09).
func heldView(e *entry, m map[string]any) (*rmq.MessageView, error) {
	view, _ := m["view"].(map[string]any)
	handle := str(view["receipt_handle"])
	e.mu.Lock()
	held := e.views[handle]
	e.mu.Unlock()
	if held == nil {
		return nil, na("no message was received with the receipt handle %s", handle)
	}
	copied := *held
	copied.ReceiptHandle = handle
	return &copied, nil
}

func cmdAck(s *session, m map[string]any) (map[string]any, error) {
	e, err := simpleOf(m)
	if err != nil {
		return nil, err
	}
	mv, err := heldView(e, m)
	if err != nil {
		return nil, err
	}
	if err := e.simple.Ack(context.Background(), mv); err != nil {
		return map[string]any{"code": codeOf(err)}, nil
	}
	emit(s, "ACK", map[string]any{"topic": mv.GetTopic(), "group": e.group, "msg_id": mv.GetMessageId(),
		"key": firstKey(mv.GetKeys()), "attempt": max(1, int(mv.GetDeliveryAttempt()))})
	return map[string]any{"code": 20000}, nil
}

func cmdChangeInvisibleDuration(s *session, m map[string]any) (map[string]any, error) {
	e, err := simpleOf(m)
	if err != nil {
		return nil, err
	}
	mv, err := heldView(e, m)
	if err != nil {
		return nil, err
	}
	if err := e.simple.ChangeInvisibleDuration(mv, wireDuration(float64(intOf(m["invisible_ms"], 0)))); err != nil {
		return map[string]any{"code": codeOf(err), "receipt_handle": nil}, nil
	}
	e.mu.Lock()
	e.views[mv.GetReceiptHandle()] = mv // the SDK put the new handle on the message view
	e.mu.Unlock()
	return map[string]any{"code": 20000, "receipt_handle": mv.GetReceiptHandle()}, nil
}

// ---- push consumers ----------------------------------------------------------------------------------------

type seenMessage struct {
	key     any
	attempt int
}

type pushEntry struct {
	session   *session
	group     string
	mu        sync.Mutex
	seen      map[string]seenMessage
	receiving chan struct{}
	once      sync.Once
}

var (
	pushLock sync.Mutex
	pushes   = map[string]*pushEntry{} // client id -> the push consumer's record
)

func pushOf(clientID string) *pushEntry {
	pushLock.Lock()
	defer pushLock.Unlock()
	return pushes[clientID]
}

func forgetPush(clientID string) {
	pushLock.Lock()
	delete(pushes, clientID)
	pushLock.Unlock()
}

func (p *pushEntry) seenOf(msgID string) seenMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[msgID]
}

func cmdPushConsumer(s *session, m map[string]any) (map[string]any, error) {
	if err := checkSdk(options(m)); err != nil {
		return nil, err
	}
	group, handle := str(m["group"]), str(m["handle"])
	if listener, _ := m["listener"].(string); listener != "ask" {
		return nil, na("this driver asks the harness for every outcome (listener \"ask\"), not a script")
	}
	record := &pushEntry{session: s, group: group, seen: map[string]seenMessage{}, receiving: make(chan struct{})}
	consume := func(mv *rmq.MessageView) rmq.ConsumerResult {
		view := viewJSON(mv)
		record.mu.Lock()
		record.seen[mv.GetMessageId()] = seenMessage{key: view["key"], attempt: view["delivery_attempt"].(int)}
		record.mu.Unlock()
		common := map[string]any{"topic": mv.GetTopic(), "group": group, "msg_id": mv.GetMessageId(),
			"key": view["key"], "attempt": view["delivery_attempt"]}
		emit(s, "DELIVER", with(with(common, "message_group", view["message_group"]), "detail",
			map[string]string{"reconsume_times": fmt.Sprint(view["reconsume_times"])}))
		answer := ask(s, map[string]any{"ask": "consume", "consumer": handle, "view": view})
		outcome := str(answer["outcome"])
		if outcome == "SUCCESS" {
			emit(s, "CONSUME_OK", with(common, "detail", map[string]string{"outcome": outcome}))
			return rmq.SUCCESS
		}
		emit(s, "CONSUME_FAIL", with(common, "detail", map[string]string{"outcome": fmt.Sprint(answer["outcome"])}))
		return rmq.FAILURE
	}
	consumer, err := rmq.NewPushConsumer(config(group), rmq.WithPushSubscriptionExpressions(filterOf(m)),
		rmq.WithPushMessageListener(&rmq.FuncMessageListener{Consume: consume}))
	if err != nil {
		return nil, err
	}
	id, _ := internals(consumer)
	pushLock.Lock()
	pushes[id] = record
	pushLock.Unlock()
	if err := start("push consumer "+handle, consumer, consumer.Start, false); err != nil {
		forgetPush(id)
		return nil, err
	}
	register(handle, &entry{session: s, kind: "push consumer", group: group, clientID: id, stop: consumer.GracefulStop})
	// ready once its assignment arrived and its first receive is out: before that no delivery time means anything
	select {
	case <-record.receiving:
		return nil, nil
	case <-time.After(readyTimeout):
		return nil, fmt.Errorf("push consumer %s got no queue assignment within %v", handle, readyTimeout)
	}
}
