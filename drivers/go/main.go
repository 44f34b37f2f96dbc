// rocketmq-conformance: the official Go 5.x SDK (github.com/apache/rocketmq-clients/golang/v5, pinned in go.mod)
// behind the driver protocol (spec/schemas/driver-protocol.schema.json).
//
//	drivers/go/bin/rmqc-go-driver --endpoint 127.0.0.1:8081 [--time-scale 0.01] [--epoch S]
//	    [--timestamp-base-ms MS] [--timestamp-scale X]
//
// JSON lines: commands on stdin, replies / events / asks on stdout. Every command is served on a goroutine of its
// own, so a push consumer's listener or a transaction checker can wait for the harness's answer while commands go
// on. Topics and groups are set up by the harness (adapters/golang.py, through the name server): this driver only
// runs SDK clients (producers: normal, FIFO, timed, transactional with a checker; simple and push consumers) and
// answers anything else NotApplicable.
//
// Time: the SDK runs on the wall clock; spec time = (CLOCK_MONOTONIC seconds - epoch) / time scale, where epoch is
// a Python time.monotonic() value of the harness (the same clock). A delivery timestamp of spec time T is sent as
// timestamp-base-ms + T * timestamp-scale, and a duration D (an invisible time) as D * timestamp-scale.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"golang.org/x/sys/unix"
)

const (
	sdkModule       = "github.com/apache/rocketmq-clients/golang/v5"
	sdkVersion      = "v5.1.4" // the version pinned in go.mod (checked by adapters/golang.py against go.mod)
	protocolVersion = 1
	profile         = "grpc-5.x"
	readyTimeout    = 15 * time.Second
	requestTimeout  = 3 * time.Second
	awaitDuration   = time.Second
)

var capabilities = []string{"send.sync", "delay.timer", "consumer.simple5x", "consumer.push5x",
	"consumer.push5x.fifo", "consumer.filter.tag", "transactions", "sdk.go"}

// ---- arguments and clocks ----------------------------------------------------------------------------------

type arguments struct {
	endpoint        string
	timeScale       float64
	epoch           float64
	epochGiven      bool
	timestampBaseMs float64
	timestampScale  float64
}

var args arguments

func monotonicS() float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		fail("CLOCK_MONOTONIC cannot be read: %v", err)
	}
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "rmqc-go-driver: "+format+"\n", a...)
	os.Exit(2)
}

func parseArgs(argv []string) arguments {
	a := arguments{endpoint: "127.0.0.1:8081", timeScale: 1, timestampBaseMs: float64(time.Now().UnixMilli()),
		timestampScale: 1}
	for i := 0; i < len(argv); i += 2 {
		if i+1 >= len(argv) {
			fail("option %s has no value", argv[i])
		}
		name, value := argv[i], argv[i+1]
		if name == "--endpoint" {
			a.endpoint = value
			continue
		}
		number, err := strconv.ParseFloat(value, 64)
		if err != nil {
			fail("option %s takes a number, not %q", name, value)
		}
		switch name {
		case "--time-scale":
			a.timeScale = number
		case "--epoch":
			a.epoch, a.epochGiven = number, true
		case "--timestamp-base-ms":
			a.timestampBaseMs = number
		case "--timestamp-scale":
			a.timestampScale = number
		default:
			fail("unknown option %s", name)
		}
	}
	if a.timeScale <= 0 || a.timestampScale <= 0 {
		fail("--time-scale and --timestamp-scale must be positive")
	}
	if !a.epochGiven {
		a.epoch = monotonicS()
	}
	return a
}

// nowMs is spec time in milliseconds.
func nowMs() int64 { return int64((monotonicS() - args.epoch) * 1000 / args.timeScale) }

// wireDuration is a duration the harness gives in spec ms, as the server takes it: rmqc serve reads spec ms, a real
// release's proxy wall ms (its clocks compressed through its keys); the same factor as a timestamp's.
func wireDuration(specMs float64) time.Duration {
	return time.Duration(specMs*args.timestampScale+0.5) * time.Millisecond
}

// specMs is a duration the SDK sent to the server, in spec ms.
func specMs(d time.Duration) int64 {
	return int64(float64(d.Milliseconds())/args.timestampScale + 0.5)
}

// sleepSpec waits ms of spec time on the wall clock.
func sleepSpec(ms float64) { time.Sleep(time.Duration(ms * args.timeScale * float64(time.Millisecond))) }

// ---- the wire ----------------------------------------------------------------------------------------------

var (
	outLock sync.Mutex
	stdout  = bufio.NewWriter(os.Stdout)
)

func write(message map[string]any) {
	line, err := json.Marshal(message)
	if err != nil {
		line, _ = json.Marshal(map[string]any{"reply": message["reply"], "ok": false,
			"error": map[string]any{"type": "RocketMQError", "code": -1, "message": "unencodable: " + err.Error()}})
	}
	outLock.Lock()
	defer outLock.Unlock()
	stdout.Write(line)
	stdout.WriteByte('\n')
	stdout.Flush()
}

type notApplicable struct{ reason string }

func (n notApplicable) Error() string { return n.reason }

func na(format string, a ...any) error { return notApplicable{fmt.Sprintf(format, a...)} }

// errorOf is a reply's error: NotApplicable, or the SDK's error with its RocketMQ status code (-1: the SDK's own).
func errorOf(err error) map[string]any {
	if n, ok := err.(notApplicable); ok {
		return map[string]any{"type": "NotApplicable", "message": n.reason}
	}
	message := err.Error()
	if len(message) > 2000 {
		message = message[:2000]
	}
	return map[string]any{"type": "RocketMQError", "code": codeOf(err), "message": message}
}

func codeOf(err error) int {
	if status, ok := rmq.AsErrRpcStatus(err); ok && status.GetCode() != 0 {
		return int(status.GetCode())
	}
	return -1
}

// ---- asks --------------------------------------------------------------------------------------------------

var (
	askLock sync.Mutex
	askIds  int
	waiting = map[int]chan map[string]any{}
)

// ask writes a question for the harness and waits for its answer (the reader hands it over).
func ask(s *session, question map[string]any) map[string]any {
	askLock.Lock()
	askIds++
	id := askIds
	answer := make(chan map[string]any, 1)
	waiting[id] = answer
	askLock.Unlock()
	question["target"], question["ask_id"] = s.name, id
	write(question)
	return <-answer
}

func answered(m map[string]any) {
	id := intOf(m["ask_id"], -1)
	askLock.Lock()
	answer, ok := waiting[id]
	delete(waiting, id)
	askLock.Unlock()
	if ok {
		answer <- m
	}
}

// ---- sessions and events -----------------------------------------------------------------------------------

type session struct {
	name  string
	runID string
}

var (
	stateLock sync.Mutex
	sessions  = map[string]*session{}
	seq       int64
)

func emit(s *session, kind string, fields map[string]any) {
	stateLock.Lock()
	n := seq
	seq++
	stateLock.Unlock()
	row := map[string]any{"run_id": s.runID, "target": sdkModule, "profile": profile, "seq": n, "ts_ms": nowMs(),
		"kind": kind}
	for k, v := range fields {
		if v != nil {
			row[k] = v
		}
	}
	write(map[string]any{"event": row, "target": s.name})
}

// ---- reading commands --------------------------------------------------------------------------------------

func str(v any) string {
	text, _ := v.(string)
	return text
}

func intOf(v any, fallback int) int {
	if number, ok := v.(float64); ok {
		return int(number)
	}
	return fallback
}

func options(m map[string]any) map[string]any {
	o, _ := m["options"].(map[string]any)
	if o == nil {
		o = map[string]any{}
	}
	return o
}

type handler func(s *session, m map[string]any) (map[string]any, error)

var commands map[string]handler

func init() {
	commands = map[string]handler{
		"open":  cmdOpen,
		"close": cmdClose,
		"now":   func(*session, map[string]any) (map[string]any, error) { return map[string]any{"now_ms": nowMs()}, nil },
		"advance": func(_ *session, m map[string]any) (map[string]any, error) {
			sleepSpec(float64(intOf(m["ms"], 0)))
			return map[string]any{"now_ms": nowMs()}, nil
		},
		"settle": func(_ *session, m map[string]any) (map[string]any, error) {
			sleepSpec(float64(min(intOf(m["max_ms"], 0), 5000)))
			return map[string]any{"now_ms": nowMs()}, nil
		},
		"step": func(_ *session, m map[string]any) (map[string]any, error) {
			// a wall clock: things happen by themselves; wait a little towards the deadline
			deadline := int64(intOf(m["deadline_ms"], 0))
			if left := deadline - nowMs(); left > 0 {
				time.Sleep(min(time.Duration(float64(left)*args.timeScale*float64(time.Millisecond)), 10*time.Millisecond))
			}
			now := nowMs()
			return map[string]any{"ran": now < deadline, "now_ms": now}, nil
		},
		"producer":                  cmdProducer,
		"transaction_producer":      cmdTransactionProducer,
		"send":                      cmdSend,
		"send_in_transaction":       cmdSendInTransaction,
		"simple_consumer_5x":        cmdSimpleConsumer,
		"receive":                   cmdReceive,
		"ack":                       cmdAck,
		"change_invisible_duration": cmdChangeInvisibleDuration,
		"push_consumer_5x":          cmdPushConsumer,
		"shutdown": func(s *session, m map[string]any) (map[string]any, error) {
			if _, err := clientOf(m); err != nil {
				return nil, err
			}
			shutdownHandles([]string{str(m["handle"])})
			return nil, nil
		},
	}
}

func cmdOpen(_ *session, m map[string]any) (map[string]any, error) {
	if p := str(m["profile"]); p != profile {
		return nil, na("the Go 5.x SDK runs %s, not %s", profile, p)
	}
	runID := str(m["run_id"])
	if runID == "" {
		runID = "run"
	}
	stateLock.Lock()
	sessions[str(m["target"])] = &session{name: str(m["target"]), runID: runID}
	stateLock.Unlock()
	return map[string]any{"capabilities": capabilities, "version": sdkVersion}, nil
}

func cmdClose(s *session, m map[string]any) (map[string]any, error) {
	shutdownHandles(handlesOf(s))
	stateLock.Lock()
	delete(sessions, s.name)
	stateLock.Unlock()
	return nil, nil
}

func serve(m map[string]any) {
	id := m["id"]
	reply := func(fields map[string]any, err error) {
		if err != nil {
			write(map[string]any{"reply": id, "ok": false, "error": errorOf(err)})
			return
		}
		out := map[string]any{"reply": id, "ok": true}
		for k, v := range fields {
			out[k] = v
		}
		write(out)
	}
	defer func() { // a panic in the SDK or here fails this command, not the driver
		if p := recover(); p != nil {
			fmt.Fprintf(os.Stderr, "rmqc-go-driver: %v failed: %v\n", m["cmd"], p)
			reply(nil, fmt.Errorf("driver panic: %v", p))
		}
	}()
	cmd := str(m["cmd"])
	if cmd == "hello" {
		reply(map[string]any{"protocol": protocolVersion, "driver": sdkModule, "version": sdkVersion,
			"profiles": []string{profile}, "clock": "wall", "time_scale": args.timeScale}, nil)
		return
	}
	command, ok := commands[cmd]
	if !ok {
		reply(nil, na("the Go SDK driver has no %q (topics and groups are set up by the harness through the name "+
			"server; the Go 5.x SDK has no 4.x consumers, batches, one-way sends or inspection of the broker)", cmd))
		return
	}
	stateLock.Lock()
	s := sessions[str(m["target"])]
	stateLock.Unlock()
	if s == nil && cmd != "open" {
		reply(nil, na("no open session %q", str(m["target"])))
		return
	}
	reply(command(s, m))
}

func main() {
	args = parseArgs(os.Args[1:])
	// the SDK logs under ~/logs/rocketmq and writes TLS by default: keep its log out of the user's home and speak
	// plaintext gRPC, as a proxy started without TLS takes it
	home := os.Getenv("RMQC_SDK_HOME")
	if home == "" {
		home = filepath.Join(os.TempDir(), "rmqc-sdk-home")
	}
	os.Setenv("rocketmq.client.logRoot", filepath.Join(home, "logs", "rocketmq"))
	if os.Getenv("RMQC_SDK_LOG") == "" {
		os.Setenv("rocketmq.client.logLevel", "error")
	}
	rmq.ResetLogger()
	rmq.EnableSsl = false
	installRecorder()

	input := bufio.NewScanner(os.Stdin)
	input.Buffer(make([]byte, 1<<20), 64<<20)
	for input.Scan() {
		line := input.Bytes()
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			fmt.Fprintf(os.Stderr, "rmqc-go-driver: not a JSON line: %.200s\n", line)
			continue
		}
		switch str(m["cmd"]) {
		case "answer":
			answered(m)
		case "bye":
			shutdownHandles(allHandles())
			write(map[string]any{"reply": m["id"], "ok": true})
			os.Exit(0)
		default:
			go serve(m)
		}
	}
	os.Exit(0)
}
