package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Limit is at most Requests per Window. The zero Limit (or a non-positive
// Requests) limits nothing.
type Limit struct {
	Requests int
	Window   time.Duration
}

// Off reports whether l limits nothing.
func (l Limit) Off() bool { return l.Requests <= 0 || l.Window <= 0 }

func (l Limit) String() string {
	if l.Off() {
		return "unlimited"
	}
	per := l.Window.String()
	switch l.Window {
	case time.Second:
		per = "second"
	case time.Minute:
		per = "minute"
	case time.Hour:
		per = "hour"
	}
	return fmt.Sprintf("%d requests per %s", l.Requests, per)
}

// Decision is the answer to one Take.
type Decision struct {
	Allowed bool
	// Limit is the limit applied; Remaining is how many more requests the
	// current window allows after this one.
	Limit     int
	Remaining int
	// RetryAfter is how long until the window ends: when a refused client
	// may try again.
	RetryAfter time.Duration
}

// Limiter counts one request against key under limit.
type Limiter interface {
	Take(ctx context.Context, key string, limit Limit, now time.Time) (Decision, error)
	// Forget removes key's count, for a key that will not come again (a
	// deleted tenant's); a key with no count is not an error.
	Forget(ctx context.Context, key string) error
}

// window is the number of the fixed window now falls in, and when it ends.
func window(l Limit, now time.Time) (int64, time.Time) {
	n := now.UnixNano() / int64(l.Window)
	return n, time.Unix(0, (n+1)*int64(l.Window))
}

func decide(l Limit, count int64, now, end time.Time) Decision {
	d := Decision{Allowed: count <= int64(l.Requests), Limit: l.Requests, RetryAfter: end.Sub(now)}
	if rem := int64(l.Requests) - count; rem > 0 {
		d.Remaining = int(rem)
	}
	return d
}

// Memory is a Limiter for one process.
type Memory struct {
	mu     sync.Mutex
	counts map[string]memCount
}

type memCount struct {
	window int64
	n      int64
}

// NewMemory returns an empty in-process Limiter.
func NewMemory() *Memory { return &Memory{counts: map[string]memCount{}} }

// Take counts one request against key.
func (m *Memory) Take(_ context.Context, key string, l Limit, now time.Time) (Decision, error) {
	if l.Off() {
		return Decision{Allowed: true}, nil
	}
	w, end := window(l, now)
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.counts[key]
	if c.window > w {
		// The clock stepped back: count in the newer window, as Stored does.
		w = c.window
	}
	if c.window != w {
		// A new window: drop every count of older ones while the lock is
		// held anyway, so keys that stop coming leave no trace.
		if len(m.counts) > 1024 {
			for k, old := range m.counts {
				if old.window < w {
					delete(m.counts, k)
				}
			}
		}
		c = memCount{window: w}
	}
	c.n++
	m.counts[key] = c
	return decide(l, c.n, now, end), nil
}

// Forget removes key's count.
func (m *Memory) Forget(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.counts, key)
	return nil
}
