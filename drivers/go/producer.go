package main

// SDK clients by handle, their start-up, and the producers: sends, transactional sends and the checker.

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"reflect"
	"sort"
	"sync"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
)

type entry struct {
	session  *session
	kind     string
	group    string
	clientID string
	stop     func() error

	producer rmq.Producer
	simple   rmq.SimpleConsumer

	mu         sync.Mutex
	seqByGroup map[string]int
	views      map[string]*rmq.MessageView // receipt handle -> the message view received with it
}

var clients = map[string]*entry{} // guarded by stateLock

func clientOf(m map[string]any) (*entry, error) {
	stateLock.Lock()
	defer stateLock.Unlock()
	e := clients[str(m["handle"])]
	if e == nil {
		return nil, na("no SDK client has the handle %q", str(m["handle"]))
	}
	return e, nil
}

func register(handle string, e *entry) {
	stateLock.Lock()
	clients[handle] = e
	stateLock.Unlock()
}

func handlesOf(s *session) []string {
	stateLock.Lock()
	defer stateLock.Unlock()
	var handles []string
	for h, e := range clients {
		if e.session == s {
			handles = append(handles, h)
		}
	}
	sort.Strings(handles)
	return handles
}

func allHandles() []string {
	stateLock.Lock()
	defer stateLock.Unlock()
	var handles []string
	for h := range clients {
		handles = append(handles, h)
	}
	return handles
}

func shutdownHandles(handles []string) {
	var wg sync.WaitGroup
	for _, h := range handles {
		stateLock.Lock()
		e := clients[h]
		delete(clients, h)
		stateLock.Unlock()
		if e == nil {
			continue
		}
		forgetPush(e.clientID)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.stop(); err != nil && logging() {
				fmt.Fprintf(os.Stderr, "rmqc-go-driver: shutdown of %s: %v\n", h, err)
			}
		}()
	}
	wg.Wait()
}

func config(group string) *rmq.Config {
	return &rmq.Config{Endpoint: args.endpoint, ConsumerGroup: group} // no credentials: requests go unsigned
}

// internals reads an SDK client's defaultClient through reflection (read only): its client id, and whether its
// start-up has made the client manager a send needs.
func internals(client any) (clientID string, managed bool) {
	v := reflect.ValueOf(client)
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	cli := v.FieldByName("cli")
	if !cli.IsValid() || cli.IsNil() {
		return "", false
	}
	cli = cli.Elem()
	manager := cli.FieldByName("clientManager")
	return cli.FieldByName("clientID").String(), manager.IsValid() && !manager.IsNil()
}

// start runs the SDK's Start. A client that declares no topic (a producer the harness gives none) never finishes
// starting: its start-up waits for the server's settings, which only a topic's route sync asks for.
// Such a producer is started in the background, as a Go program that wants one must, and is usable once its client
// manager is up; its first send syncs the settings and lets the start-up return.
func start(what string, client any, run func() error, background bool) error {
	if !background {
		if err := run(); err != nil {
			return fmt.Errorf("%s failed to start: %w", what, err)
		}
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- run() }()
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("%s failed to start: %w", what, err)
			}
			return nil
		default:
		}
		if _, managed := internals(client); managed {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("%s did not start within %v", what, readyTimeout)
}

// ---- producers ---------------------------------------------------------------------------------------------

func checkSdk(o map[string]any) error {
	if sdk := str(o["sdk"]); sdk != "" && sdk != "go" {
		return na("this driver runs the Go SDK, not the %s one", sdk)
	}
	return nil
}

func topicsOf(m map[string]any) []string {
	var topics []string
	list, _ := m["topics"].([]any)
	for _, t := range list {
		if text := str(t); text != "" {
			topics = append(topics, text)
		}
	}
	return topics
}

func startProducer(s *session, m map[string]any, topics []string, checker *rmq.TransactionChecker, what string) error {
	opts := []rmq.ProducerOption{}
	if len(topics) > 0 {
		opts = append(opts, rmq.WithTopics(topics...))
	}
	if checker != nil {
		opts = append(opts, rmq.WithTransactionChecker(checker))
	}
	producer, err := rmq.NewProducer(config(""), opts...)
	if err != nil {
		return err
	}
	handle := str(m["handle"])
	if err := start(what+" "+handle, producer, producer.Start, len(topics) == 0); err != nil {
		return err
	}
	id, _ := internals(producer)
	register(handle, &entry{session: s, kind: what, clientID: id, producer: producer, stop: producer.GracefulStop,
		seqByGroup: map[string]int{}})
	return nil
}

func cmdProducer(s *session, m map[string]any) (map[string]any, error) {
	if err := checkSdk(options(m)); err != nil {
		return nil, err
	}
	return nil, startProducer(s, m, nil, nil, "producer")
}

func cmdTransactionProducer(s *session, m map[string]any) (map[string]any, error) {
	handle := str(m["handle"])
	var lock sync.Mutex
	checks := map[string]int{}
	checker := &rmq.TransactionChecker{Check: func(mv *rmq.MessageView) rmq.TransactionResolution {
		key := firstKey(mv.GetKeys())
		lock.Lock()
		checks[mv.GetMessageId()]++
		n := checks[mv.GetMessageId()]
		lock.Unlock()
		common := map[string]any{"topic": mv.GetTopic(), "msg_id": mv.GetMessageId(), "key": key}
		emit(s, "TX_CHECK", with(common, "detail", map[string]string{"check_times": fmt.Sprint(n)}))
		answer := ask(s, map[string]any{"ask": "check", "producer": handle, "key": key, "n": n})
		state := str(answer["state"])
		if state != "COMMIT_MESSAGE" && state != "ROLLBACK_MESSAGE" {
			return rmq.UNKNOWN
		}
		emit(s, "TX_END", with(common, "detail", map[string]string{"state": state, "source": "SERVER_CHECK"}))
		if state == "COMMIT_MESSAGE" {
			return rmq.COMMIT
		}
		return rmq.ROLLBACK
	}}
	return nil, startProducer(s, m, topicsOf(m), checker, "transaction producer")
}

func firstKey(keys []string) any {
	if len(keys) == 0 {
		return nil
	}
	return keys[0]
}

// with is a copy of fields with one more.
func with(fields map[string]any, k string, v any) map[string]any {
	out := map[string]any{k: v}
	for key, value := range fields {
		out[key] = value
	}
	return out
}

func optional(text string) any {
	if text == "" {
		return nil
	}
	return text
}

// message builds the SDK message of a send's options, as a Go program would: keys, a tag, a message group (FIFO),
// a delivery timestamp (a timed message) and user properties.
func message(m map[string]any) (*rmq.Message, map[string]any, error) {
	o := options(m)
	if o["delay_level"] != nil && o["delay_level"] != float64(0) {
		return nil, o, na("the Go 5.x SDK has no delay levels (it sends delivery timestamps)")
	}
	if mode := str(o["mode"]); mode != "" && mode != "sync" {
		return nil, o, na("this driver sends with the Go SDK's blocking Send only, not %s", mode)
	}
	if err := checkSdk(o); err != nil {
		return nil, o, err
	}
	if o["immunity_seconds"] != nil {
		return nil, o, na("the Go 5.x SDK sets no check immunity time")
	}
	body, err := base64.StdEncoding.DecodeString(str(m["body"]))
	if err != nil {
		return nil, o, fmt.Errorf("the body is not base64: %w", err)
	}
	msg := &rmq.Message{Topic: str(m["topic"]), Body: body}
	if key := str(o["key"]); key != "" {
		msg.SetKeys(key)
	}
	if tags := str(o["tags"]); tags != "" {
		msg.SetTag(tags)
	}
	if group := str(o["message_group"]); group != "" {
		msg.SetMessageGroup(group)
	}
	if properties, ok := o["properties"].(map[string]any); ok {
		for k, v := range properties {
			if text, isText := v.(string); isText {
				msg.AddProperty(k, text)
			} else {
				msg.AddProperty(k, fmt.Sprint(v))
			}
		}
	}
	if at, ok := o["delivery_timestamp_ms"].(float64); ok {
		wallMs := args.timestampBaseMs + at*args.timestampScale
		msg.SetDelayTimestamp(time.Unix(0, int64(wallMs*1e6)))
	}
	return msg, o, nil
}

// sent runs the SDK's send; a failure is logged as SEND_FAIL (its code and text) and goes on to the reply.
func sent(s *session, fields map[string]any, send func() ([]*rmq.SendReceipt, error)) (*rmq.SendReceipt, error) {
	receipts, err := send()
	if err == nil && len(receipts) == 0 {
		err = fmt.Errorf("the SDK returned no send receipt")
	}
	if err != nil {
		text := err.Error()
		if len(text) > 300 {
			text = text[:300]
		}
		emit(s, "SEND_FAIL", with(fields, "detail", map[string]string{"code": fmt.Sprint(codeOf(err)), "remark": text}))
		return nil, err
	}
	return receipts[0], nil
}

func cmdSend(s *session, m map[string]any) (map[string]any, error) {
	e, err := clientOf(m)
	if err != nil {
		return nil, err
	}
	if e.producer == nil {
		return nil, na("%s is a %s, not a producer", str(m["handle"]), e.kind)
	}
	msg, o, err := message(m)
	if err != nil {
		return nil, err
	}
	group := str(o["message_group"])
	e.mu.Lock()
	groupSeq := e.seqByGroup[group]
	e.seqByGroup[group] = groupSeq + 1
	e.mu.Unlock()
	topic := str(m["topic"])
	common := map[string]any{"topic": topic, "key": o["key"], "message_group": optional(group), "producer_seq": groupSeq}
	emit(s, "SEND_INVOKE", with(common, "detail", map[string]string{"mode": "sync", "sdk": "go"}))
	receipt, err := sent(s, common, func() ([]*rmq.SendReceipt, error) { return e.producer.Send(context.Background(), msg) })
	if err != nil {
		return nil, err
	}
	detail := map[string]string{"mode": "sync", "status": "SEND_OK"}
	if tags := str(o["tags"]); tags != "" {
		detail["tags"] = tags
	}
	ok := with(common, "detail", detail)
	ok["msg_id"], ok["queue_offset"] = receipt.MessageID, receipt.Offset
	emit(s, "SEND_OK", ok)
	return map[string]any{"result": map[string]any{"status": "SEND_OK", "msg_id": receipt.MessageID, "topic": topic,
		"queue_offset": receipt.Offset}}, nil
}

func cmdSendInTransaction(s *session, m map[string]any) (map[string]any, error) {
	e, err := clientOf(m)
	if err != nil {
		return nil, err
	}
	if e.producer == nil {
		return nil, na("%s is a %s, not a producer", str(m["handle"]), e.kind)
	}
	msg, o, err := message(m)
	if err != nil {
		return nil, err
	}
	topic := str(m["topic"])
	transaction := e.producer.BeginTransaction()
	fields := map[string]any{"topic": topic, "key": o["key"]}
	emit(s, "SEND_INVOKE", with(fields, "detail", map[string]string{"mode": "transaction", "sdk": "go"}))
	receipt, err := sent(s, fields, func() ([]*rmq.SendReceipt, error) {
		return e.producer.SendWithTransaction(context.Background(), msg, transaction)
	})
	if err != nil {
		return nil, err
	}
	common := map[string]any{"topic": topic, "msg_id": receipt.MessageID, "key": o["key"]}
	state := str(o["local_state"])
	if state == "" {
		state = "UNKNOW"
	}
	emit(s, "TX_HALF", with(common, "detail", map[string]string{"real_topic": topic,
		"transaction_id": receipt.TransactionId, "local_state": state}))
	switch state {
	case "COMMIT_MESSAGE":
		err = transaction.Commit()
	case "ROLLBACK_MESSAGE":
		err = transaction.RollBack()
	}
	if err != nil {
		return nil, err
	}
	if state == "COMMIT_MESSAGE" || state == "ROLLBACK_MESSAGE" {
		emit(s, "TX_END", with(common, "detail", map[string]string{"state": state, "source": "CLIENT"}))
	}
	return map[string]any{"result": map[string]any{"status": "SEND_OK", "msg_id": receipt.MessageID, "topic": topic}}, nil
}
