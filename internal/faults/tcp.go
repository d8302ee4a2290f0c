package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// TCP-level fault kinds, as TCPProxy counts them.
const (
	Drop  Kind = "tcp-drop"
	Stall Kind = "tcp-stall"
)

// TCPProxy is a TCP proxy in front of one address (an OpenSSH test host),
// on a loopback port of its own, built on toxiproxy used as a library (no
// API server): Drop cuts every connection it carries, Stall holds their
// bytes (delivered, late, when it ends). Give clients Addr instead of the
// upstream address. It is safe for concurrent use.
type TCPProxy struct {
	p *toxiproxy.Proxy

	mu      sync.Mutex
	counts  map[Kind]int64
	stalled int // StallFor calls whose toxic is still in
	closed  bool
}

// NewTCPProxy starts a proxy to upstream on 127.0.0.1, port chosen by the
// system.
func NewTCPProxy(name, upstream string) (*TCPProxy, error) {
	// toxiproxy's server is only a registry for its metrics and a logger
	// here; its HTTP API is never started.
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(server, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("faults: proxy %s to %s: %w", name, upstream, err)
	}
	return &TCPProxy{p: p, counts: map[Kind]int64{}}, nil
}

// Addr is the proxy's address, host:port.
func (t *TCPProxy) Addr() string {
	t.p.Lock()
	defer t.p.Unlock()
	return t.p.Listen
}

// Upstream is the address it proxies.
func (t *TCPProxy) Upstream() string { return t.p.Upstream }

// Drop closes every connection the proxy carries, as a network that drops
// them mid-session would (an SSH action's session ends with an error), and
// goes on accepting new ones at the same address.
func (t *TCPProxy) Drop() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errors.New("faults: drop: the proxy is closed")
	}
	t.counts[Drop]++
	addr := t.Addr()
	t.p.Stop()
	// Start listens on Listen again, the port first chosen.
	if err := t.p.Start(); err != nil {
		return fmt.Errorf("faults: drop: listening again on %s: %w", addr, err)
	}
	return nil
}

// Stall holds every byte in both directions, on open connections and new
// ones, until resume is called: a network that hangs. Nothing is lost;
// what was held is delivered after resume.
func (t *TCPProxy) Stall() (resume func(), err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stalled++
	n := t.stalled
	t.counts[Stall]++
	// An hour of latency is a stall for any test; resume lifts it.
	var names []string
	for _, stream := range []string{"upstream", "downstream"} {
		name := fmt.Sprintf("stall-%d-%s", n, stream)
		spec := fmt.Sprintf(`{"name":%q,"type":"latency","stream":%q,"toxicity":1,"attributes":{"latency":%d}}`, name, stream, time.Hour.Milliseconds())
		if _, err := t.p.Toxics.AddToxicJson(strings.NewReader(spec)); err != nil {
			for _, added := range names {
				_ = t.p.Toxics.RemoveToxic(context.Background(), added)
			}
			return nil, fmt.Errorf("faults: stall: %w", err)
		}
		names = append(names, name)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			for _, name := range names {
				_ = t.p.Toxics.RemoveToxic(context.Background(), name)
			}
		})
	}, nil
}

// StallFor stalls the proxy for d (see Stall) without blocking.
func (t *TCPProxy) StallFor(d time.Duration) error {
	resume, err := t.Stall()
	if err != nil {
		return err
	}
	time.AfterFunc(d, resume)
	return nil
}

// Counts returns how many drops and stalls were injected.
func (t *TCPProxy) Counts() map[Kind]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[Kind]int64, len(t.counts))
	for k, n := range t.counts {
		out[k] = n
	}
	return out
}

// Close stops the proxy and closes every connection it carries.
func (t *TCPProxy) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	t.p.Stop()
}
