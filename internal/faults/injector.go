package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Kind is one kind of request-level fault.
type Kind string

// The kinds of fault an Injector injects (see the package's doc).
const (
	Latency          Kind = "latency"
	Throttle         Kind = "throttle"
	ServerError      Kind = "5xx"
	ServerErrorAfter Kind = "5xx-after-apply"
	TimeoutAfter     Kind = "timeout-after-apply"
	Reset            Kind = "reset"
	Redeliver        Kind = "redeliver"
)

// Kinds lists every kind, in the order Rates are drawn.
var Kinds = []Kind{Latency, Throttle, ServerError, ServerErrorAfter, TimeoutAfter, Reset, Redeliver}

// Applied reports whether a fault of kind k lets the request reach the
// server (so it may have taken effect) though the client sees a failure.
func (k Kind) Applied() bool { return k == ServerErrorAfter || k == TimeoutAfter }

// Rates gives each kind the chance (0 to 1) that a request gets it. At most
// one fault is drawn per request; their sum must not exceed 1.
type Rates map[Kind]float64

// Config configures an Injector.
type Config struct {
	// Seed makes the random faults reproducible.
	Seed uint64
	// Rates are the random faults' chances; nil injects only scripted ones.
	Rates Rates
	// Operations, when set, limits the random faults to these operations
	// (X-Amz-Target's part after the dot: "TransactWriteItems",
	// "ReceiveMessage"). Redeliver is only ever drawn for ReceiveMessage.
	Operations []string
	// MaxLatency bounds a Latency fault's delay (default 500 ms).
	MaxLatency time.Duration
}

// Event is one injected fault.
type Event struct {
	At        time.Time
	Kind      Kind
	Operation string
}

// Injector decides, request by request, which fault to inject, and counts
// what it injected. It is safe for concurrent use.
type Injector struct {
	cfg Config

	mu       sync.Mutex
	rnd      *rand.Rand
	scripted map[string][]Kind // operation -> the faults its next requests get
	counts   map[Kind]int64
	requests map[string]int64 // by operation, faulted or not
	events   []Event
	paused   bool
}

// New returns an Injector. It fails on a rate outside 0..1, rates that add
// up to more than 1, or an unknown kind.
func New(cfg Config) (*Injector, error) {
	sum := 0.0
	for k, r := range cfg.Rates {
		if !slices.Contains(Kinds, k) {
			return nil, fmt.Errorf("faults: unknown kind %q; known: %v", k, Kinds)
		}
		if !(r >= 0 && r <= 1) {
			return nil, fmt.Errorf("faults: the rate of %s is %v; a rate is from 0 to 1", k, r)
		}
		sum += r
	}
	if sum > 1 {
		return nil, fmt.Errorf("faults: the rates add up to %v; at most one fault is drawn per request, so they must add up to at most 1", sum)
	}
	if cfg.MaxLatency <= 0 {
		cfg.MaxLatency = 500 * time.Millisecond
	}
	return &Injector{cfg: cfg, rnd: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		scripted: map[string][]Kind{}, counts: map[Kind]int64{}, requests: map[string]int64{}}, nil
}

// Arm makes the next requests of operation get kinds, one each, in order,
// before any random fault.
func (in *Injector) Arm(operation string, kinds ...Kind) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.scripted[operation] = append(in.scripted[operation], kinds...)
}

// Pause stops random faults (scripted ones still fire) until Resume: a
// test's checks afterwards run on a quiet network.
func (in *Injector) Pause() { in.mu.Lock(); in.paused = true; in.mu.Unlock() }

// Resume starts random faults again after Pause.
func (in *Injector) Resume() { in.mu.Lock(); in.paused = false; in.mu.Unlock() }

// Counts returns how many faults of each kind were injected.
func (in *Injector) Counts() map[Kind]int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make(map[Kind]int64, len(in.counts))
	for k, n := range in.counts {
		out[k] = n
	}
	return out
}

// Requests returns how many requests of each operation went through,
// faulted or not (a resend counts again).
func (in *Injector) Requests() map[string]int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make(map[string]int64, len(in.requests))
	for op, n := range in.requests {
		out[op] = n
	}
	return out
}

// Events returns every injected fault, oldest first.
func (in *Injector) Events() []Event {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.events)
}

// draw picks the fault for one request of operation, or "" for none, and
// for Latency its delay.
func (in *Injector) draw(operation string) (Kind, time.Duration) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.requests[operation]++
	var k Kind
	if q := in.scripted[operation]; len(q) > 0 {
		k, in.scripted[operation] = q[0], q[1:]
	} else if !in.paused && len(in.cfg.Rates) > 0 && (len(in.cfg.Operations) == 0 || slices.Contains(in.cfg.Operations, operation)) {
		x := in.rnd.Float64()
		for _, kind := range Kinds {
			r := in.cfg.Rates[kind]
			if kind == Redeliver && operation != "ReceiveMessage" {
				continue
			}
			if x < r {
				k = kind
				break
			}
			x -= r
		}
	}
	if k == "" {
		return "", 0
	}
	var d time.Duration
	if k == Latency {
		d = time.Duration(in.rnd.Int64N(int64(in.cfg.MaxLatency)) + 1)
	}
	in.counts[k]++
	in.events = append(in.events, Event{At: time.Now(), Kind: k, Operation: operation})
	return k, d
}

// Operation names a request by its X-Amz-Target's operation (the AWS JSON
// protocols of DynamoDB and SQS), or "" when it has none.
func Operation(r *http.Request) string {
	target := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(target, '.'); i >= 0 {
		return target[i+1:]
	}
	return target
}

// ErrInjected marks every error a fault returns in place of an answer.
var ErrInjected = errors.New("faults: injected")

// timeoutError is what a client sees when its answer never comes: a
// net.Error whose Timeout is true, as an http.Client's deadline gives.
type timeoutError struct{ op string }

func (e timeoutError) Error() string {
	return "faults: injected timeout after " + e.op + " was applied: the answer was lost"
}
func (timeoutError) Timeout() bool        { return true }
func (timeoutError) Temporary() bool      { return true }
func (timeoutError) Is(target error) bool { return target == ErrInjected }

// roundTrip sends r through next with the fault drawn for it.
func (in *Injector) roundTrip(r *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	op := Operation(r)
	kind, delay := in.draw(op)
	switch kind {
	case "":
		return next(r)
	case Latency:
		if err := sleep(r.Context(), delay); err != nil {
			return nil, err
		}
		return next(r)
	case Throttle:
		drain(r)
		return awsError(r, http.StatusBadRequest, "ThrottlingException", "faults: injected throttling; nothing was applied"), nil
	case ServerError:
		drain(r)
		return awsError(r, http.StatusInternalServerError, "InternalServerError", "faults: injected server error; nothing was applied"), nil
	case Reset:
		drain(r)
		return nil, fmt.Errorf("faults: injected connection reset before %s was sent: %w: %w", op, syscall.ECONNRESET, ErrInjected)
	case Redeliver:
		return in.redeliver(r, next)
	}
	// The request goes through and is applied; the client is told otherwise.
	resp, err := next(r)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if kind == ServerErrorAfter {
		return awsError(r, http.StatusInternalServerError, "InternalServerError", "faults: injected server error after the request was applied"), nil
	}
	return nil, timeoutError{op: op}
}

// redeliver passes a ReceiveMessage through and makes what it received
// visible again at once, through the same next.
func (in *Injector) redeliver(r *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	var req struct {
		QueueURL string `json:"QueueUrl"`
	}
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	_ = json.Unmarshal(body, &req)
	resp, err := next(r)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	var received struct {
		Messages []struct {
			ReceiptHandle string `json:"ReceiptHandle"`
		} `json:"Messages"`
	}
	if json.Unmarshal(answer, &received) != nil || req.QueueURL == "" {
		return resp, nil
	}
	for _, m := range received.Messages {
		payload, _ := json.Marshal(map[string]any{"QueueUrl": req.QueueURL, "ReceiptHandle": m.ReceiptHandle, "VisibilityTimeout": 0})
		change, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), http.MethodPost, r.URL.String(), bytes.NewReader(payload))
		if err != nil {
			continue
		}
		for _, h := range []string{"Content-Type", "Authorization", "X-Amz-Date", "X-Amz-Security-Token"} {
			change.Header[h] = r.Header[h]
		}
		change.Header.Set("X-Amz-Target", "AmazonSQS.ChangeMessageVisibility")
		if cr, err := next(change); err == nil {
			_, _ = io.Copy(io.Discard, cr.Body)
			cr.Body.Close()
		}
	}
	return resp, nil
}

// readBody reads r's body and puts a copy back, so it can still be sent.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("faults: reading the request: %w", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return b, nil
}

func drain(r *http.Request) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
}

// awsError is an AWS JSON protocol error answer, as DynamoDB and SQS send
// them: the SDKs read the code from __type (and SQS's from
// x-amzn-query-error as well).
func awsError(r *http.Request, status int, code, message string) *http.Response {
	body, _ := json.Marshal(map[string]string{"__type": code, "message": message})
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amzn-Requestid", "faults-injected")
	h.Set("X-Amzn-Query-Error", code+";Sender")
	// DynamoDB signs every answer's body with it, and the SDK checks it.
	h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	return &http.Response{Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, ContentLength: int64(len(body)),
		Body: io.NopCloser(bytes.NewReader(body)), Request: r}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// HTTPClient is what an AWS SDK client's options take as HTTPClient.
type HTTPClient interface {
	Do(*http.Request) (*http.Response, error)
}

// Client wraps an SDK client's HTTP client:
//
//	dynamodb.New(opts, func(o *dynamodb.Options) { o.HTTPClient = in.Client(o.HTTPClient) })
func (in *Injector) Client(next HTTPClient) HTTPClient { return client{in, next} }

type client struct {
	in   *Injector
	next HTTPClient
}

func (c client) Do(r *http.Request) (*http.Response, error) { return c.in.roundTrip(r, c.next.Do) }

// Transport wraps an http.RoundTripper (http.DefaultTransport when nil).
func (in *Injector) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return transport{in, next}
}

type transport struct {
	in   *Injector
	next http.RoundTripper
}

func (t transport) RoundTrip(r *http.Request) (*http.Response, error) {
	return t.in.roundTrip(r, t.next.RoundTrip)
}
