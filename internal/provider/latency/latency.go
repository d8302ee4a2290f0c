package latency

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider"
)

// TypeName is the provider type's name.
const TypeName = "latency"

// Fields of a latency provider.
const (
	FieldCreateLatency = "create_latency"
	FieldBoot          = "boot"
	FieldSSHAfter      = "ssh_after"
	FieldDeleteAfter   = "delete_after"
	FieldPollInterval  = "poll_interval"
	FieldFailureRate   = "failure_rate"
)

// Defaults: EC2's timings.
var defaults = map[string]string{
	FieldCreateLatency: "1s",
	FieldBoot:          "75s",
	FieldSSHAfter:      "15s",
	FieldDeleteAfter:   "30s",
	FieldPollInterval:  "5s",
	FieldFailureRate:   "0",
}

var durationFields = []string{FieldCreateLatency, FieldBoot, FieldSSHAfter, FieldDeleteAfter, FieldPollInterval}

// Type describes the latency provider type.
func Type() provider.Type {
	field := func(label, tip string) provider.Field {
		return provider.Field{Label: label, Type: provider.FieldText, Tip: tip, Override: true}
	}
	fields := map[string]provider.Field{
		FieldCreateLatency: field("Create latency", "a duration such as 1s: how long a create takes to be accepted"),
		FieldBoot:          field("Boot time", "a duration such as 75s: from acceptance until the node runs"),
		FieldSSHAfter:      field("SSH ready after", "a duration such as 15s: from running until SSH answers"),
		FieldDeleteAfter:   field("Delete time", "a duration such as 30s: from the terminate until the node is gone"),
		FieldPollInterval:  field("Poll interval", "a duration such as 5s: how often a booting or ending node is checked"),
		FieldFailureRate:   field("Failure rate", "a number from 0 to 1: the share of calls that fail with a transient error"),
	}
	for name, f := range fields {
		f.Default = defaults[name]
		fields[name] = f
	}
	return provider.Type{
		Name:        TypeName,
		Label:       "Simulated latencies",
		Description: "For tests and benchmarks: nodes that are a model of a cloud's timings (create, boot, SSH, delete), with no machine behind them. Services with actions cannot run on them.",
		Parameters:  provider.Parameters{Admin: provider.ParameterSet{Fields: fields}, User: provider.ParameterSet{Fields: map[string]provider.Field{}}},
		Check:       checkFields,
	}
}

// maxLatency bounds every duration: far above any cloud's, far below a
// task's timeout arithmetic overflowing.
const maxLatency = 24 * time.Hour

func checkFields(f map[string]string) domain.Problems {
	var ps domain.Problems
	for _, name := range durationFields {
		v, ok := f[name]
		if !ok || v == "" {
			continue
		}
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			ps = append(ps, domain.Problem{Field: name, Code: domain.CodeInvalid, Message: fmt.Sprintf("%q is not a duration (like 500ms, 75s or 2m)", v)})
		case d < 0 || d > maxLatency:
			ps = append(ps, domain.Problem{Field: name, Code: domain.CodeInvalid, Message: fmt.Sprintf("%s is outside 0 to 24h", v)})
		case name == FieldPollInterval && d < time.Millisecond:
			ps = append(ps, domain.Problem{Field: name, Code: domain.CodeInvalid, Message: "must be at least 1ms"})
		}
	}
	if v, ok := f[FieldFailureRate]; ok && v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || !(r >= 0 && r <= 1) { // NaN is neither
			ps = append(ps, domain.Problem{Field: FieldFailureRate, Code: domain.CodeInvalid, Message: fmt.Sprintf("%q is not a number from 0 to 1", v)})
		}
	}
	return ps
}

// timings are a request's fields, read.
type timings struct {
	create, boot, ssh, del, poll time.Duration
	failureRate                  float64
}

func parse(fields map[string]string) (timings, error) {
	if ps := checkFields(fields); len(ps) > 0 {
		return timings{}, fmt.Errorf("latency: field %s: %s", ps[0].Field, ps[0].Message)
	}
	get := func(name string) string {
		if v := fields[name]; v != "" {
			return v
		}
		return defaults[name]
	}
	d := func(name string) time.Duration {
		v, _ := time.ParseDuration(get(name))
		return v
	}
	rate, _ := strconv.ParseFloat(get(FieldFailureRate), 64)
	return timings{create: d(FieldCreateLatency), boot: d(FieldBoot), ssh: d(FieldSSHAfter), del: d(FieldDeleteAfter),
		poll: max(d(FieldPollInterval), time.Millisecond), failureRate: rate}, nil
}

// Config tunes the provider for tests.
type Config struct {
	Now   func() time.Time                                 // nil: time.Now
	Sleep func(ctx context.Context, d time.Duration) error // nil: a timer bounded by ctx
	Rand  func() float64                                   // nil: math/rand/v2
}

// Latency is the latency provider.
type Latency struct {
	cfg Config
	mu  sync.Mutex
	// byToken is the model cloud's idempotency record: a repeated create
	// returns the node the first one accepted.
	byToken map[string]string
	// lost are the provider ids of the nodes Lose terminated outside
	// heddle.
	lost map[string]bool
}

var (
	_ provider.Provider  = (*Latency)(nil)
	_ provider.Inspector = (*Latency)(nil)
	_ provider.Modeled   = (*Latency)(nil)
)

// Modeled: the nodes' addresses lead nowhere.
func (*Latency) Modeled() {}

// Lose terminates a node outside heddle, as someone with the cloud's
// console would: a drift check's Inspect finds it gone. Benchmarks of
// repair use it; heddle never calls it.
func (l *Latency) Lose(providerID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lost[providerID] = true
}

// Inspect answers whether a node is there: gone once Lose terminated it,
// else running (a booting node runs, as EC2's pending counts as there).
func (l *Latency) Inspect(_ context.Context, req provider.Request) (provider.MachineState, string, error) {
	if _, err := accepted(req.Node.ProviderID); err != nil {
		return provider.MachineGone, fmt.Sprintf("node %s was never accepted by the provider", req.Node.ID), nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost[req.Node.ProviderID] {
		return provider.MachineGone, fmt.Sprintf("node %s (%s) was terminated outside heddle", req.Node.ID, req.Node.ProviderID), nil
	}
	return provider.MachineRunning, "", nil
}

// New returns the provider.
func New(cfg Config) *Latency {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	return &Latency{cfg: cfg, byToken: map[string]string{}, lost: map[string]bool{}}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// errTransient is the simulated provider failure.
var errTransient = errors.New("latency: simulated transient provider failure")

func (l *Latency) fails(t timings) bool { return t.failureRate > 0 && l.cfg.Rand() < t.failureRate }

// Create waits create_latency, then accepts the node: its id records when.
func (l *Latency) Create(ctx context.Context, req provider.Request) (provider.Node, error) {
	if req.Token == "" {
		return provider.Node{}, errors.New("latency: create needs an idempotency token")
	}
	t, err := parse(req.Fields)
	if err != nil {
		return provider.Node{}, err
	}
	if err := l.cfg.Sleep(ctx, t.create); err != nil {
		return provider.Node{}, fmt.Errorf("latency: create of node %s: %w", req.Node.ID, err)
	}
	if l.fails(t) {
		return provider.Node{}, fmt.Errorf("create of node %s: %w", req.Node.ID, errTransient)
	}
	l.mu.Lock()
	id, ok := l.byToken[req.Token]
	if !ok {
		sum := sha256.Sum256([]byte(req.Token))
		id = fmt.Sprintf("%s:%x:%d", TypeName, sum[:6], l.cfg.Now().UnixMilli())
		l.byToken[req.Token] = id
	}
	l.mu.Unlock()
	return l.facts(req, id), nil
}

// accepted reads the acceptance time from a node's provider id.
func accepted(id string) (time.Time, error) {
	i := strings.LastIndexByte(id, ':')
	ms, err := strconv.ParseInt(id[i+1:], 10, 64)
	if i < 0 || !strings.HasPrefix(id, TypeName+":") || err != nil {
		return time.Time{}, fmt.Errorf("latency: %q is not a node id of this provider (was the node created?)", id)
	}
	return time.UnixMilli(ms), nil
}

func (l *Latency) facts(req provider.Request, id string) provider.Node {
	sum := sha256.Sum256([]byte(id))
	addr := fmt.Sprintf("198.%d.%d.%d", 18+sum[0]%2, sum[1], sum[2]%254+1)
	return provider.Node{
		Hostname: req.Hostname, ProviderID: id, SSHUser: req.SSHUser, Flavor: req.Flavor, Image: req.Image,
		Addresses: map[string]string{provider.AddressAccess: addr, provider.AddressBind: addr},
	}
}

// Confirm checks once where the node is in its boot.
func (l *Latency) Confirm(_ context.Context, req provider.Request) (provider.Progress, error) {
	t, err := parse(req.Fields)
	if err != nil {
		return provider.Progress{}, err
	}
	at, err := accepted(req.Node.ProviderID)
	if err != nil {
		return provider.Progress{}, err
	}
	if l.fails(t) {
		return provider.Progress{}, fmt.Errorf("confirm of node %s: %w", req.Node.ID, errTransient)
	}
	since := l.cfg.Now().Sub(at)
	switch {
	case since < t.boot:
		return provider.Later(t.poll, "", fmt.Sprintf("node %s is booting (%s of %s)", req.Node.ID, since.Round(time.Millisecond), t.boot)), nil
	case since < t.boot+t.ssh:
		return provider.Later(t.poll, "", fmt.Sprintf("node %s runs but does not answer SSH yet", req.Node.ID)), nil
	}
	return provider.Done(l.facts(req, req.Node.ProviderID)), nil
}

// Delete terminates the node and checks on later calls until delete_after
// has passed since; the terminate time rides in the poll state.
func (l *Latency) Delete(_ context.Context, req provider.Request) (provider.Progress, error) {
	t, err := parse(req.Fields)
	if err != nil {
		return provider.Progress{}, err
	}
	if l.fails(t) {
		return provider.Progress{}, fmt.Errorf("delete of node %s: %w", req.Node.ID, errTransient)
	}
	now := l.cfg.Now()
	since, err := strconv.ParseInt(req.Poll, 10, 64)
	if err != nil {
		// The first call: terminate, and forget the node's token.
		since = now.UnixMilli()
		l.mu.Lock()
		for tok, id := range l.byToken {
			if id == req.Node.ProviderID {
				delete(l.byToken, tok)
			}
		}
		l.mu.Unlock()
	}
	if now.Sub(time.UnixMilli(since)) >= t.del {
		return provider.Done(provider.Node{}), nil
	}
	return provider.Later(t.poll, strconv.FormatInt(since, 10), fmt.Sprintf("node %s is shutting down", req.Node.ID)), nil
}
