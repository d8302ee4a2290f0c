package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/ratelimit"
	"github.com/heddle-io/heddle/internal/store"
)

// CodeRateLimited answers a request over its tenant's limit, or from a
// source that failed to authenticate too often (429, with Retry-After).
const CodeRateLimited = "rate_limited"

// Throttle limits what the API serves: each tenant's requests, and each
// source address's failed authentications.
type Throttle struct {
	// Limiter counts; ratelimit.NewMemory for one process, NewStoredLimiter
	// for a deployment of many instances.
	Limiter ratelimit.Limiter
	// PerTenant bounds each tenant's authenticated requests; the zero
	// Limit bounds nothing.
	PerTenant ratelimit.Limit
	// AuthFailures bounds each source's failed authentications: past it,
	// the source is answered 429 without its key being looked at until the
	// window ends.
	AuthFailures ratelimit.Limit
	// Now is the clock; nil is time.Now (tests set it).
	Now func() time.Time
}

// NewStoredLimiter counts in st: a tenant's requests at an item in the
// tenant's own partition, a source's failures at an item of its own.
func NewStoredLimiter(st store.Store) *ratelimit.Stored {
	return ratelimit.NewStored(st, limiterItem)
}

func limiterItem(key string) store.Key {
	kind, id, _ := cutKey(key)
	if kind == tenantLimitKind {
		return store.Key{PK: store.TenantPK(id, "RATE"), SK: "requests"}
	}
	return store.Key{PK: "AUTHFAIL#" + id, SK: "failures"}
}

const (
	tenantLimitKind = "tenant"
	sourceLimitKind = "source"
)

func cutKey(key string) (kind, id string, ok bool) {
	for i := range key {
		if key[i] == ':' {
			return key[:i], key[i+1:], true
		}
	}
	return "", key, false
}

// throttledError answers 429 with Retry-After.
type throttledError struct {
	retryAfter time.Duration
	message    string
}

func (e *throttledError) Error() string { return e.message }

// retryAfterSeconds rounds up: a client that waits exactly this long finds
// the window over.
func (e *throttledError) retryAfterSeconds() int {
	return max(1, int(math.Ceil(e.retryAfter.Seconds())))
}

// throttler is a Server's state for Throttle.
type throttler struct {
	cfg Throttle
	log *slog.Logger

	mu      sync.Mutex
	blocked map[string]time.Time // source -> end of its refusal, as this instance knows it
}

func newThrottler(cfg *Throttle, log *slog.Logger) *throttler {
	if cfg == nil || cfg.Limiter == nil {
		return nil
	}
	t := &throttler{cfg: *cfg, log: log, blocked: map[string]time.Time{}}
	if t.cfg.Now == nil {
		t.cfg.Now = time.Now
	}
	return t
}

// source is the address a request came from: the peer of the connection
// locally, the client's address as API Gateway saw it on Lambda (the
// adapter puts it in RemoteAddr). Forwarded headers are not trusted: any
// client can write them.
func source(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// checkSource refuses a source this instance knows to be over its failures.
func (t *throttler) checkSource(r *http.Request) error {
	if t == nil || t.cfg.AuthFailures.Off() {
		return nil
	}
	src := source(r)
	now := t.cfg.Now()
	t.mu.Lock()
	until, ok := t.blocked[src]
	t.mu.Unlock()
	if ok && now.Before(until) {
		return tooManyFailures(until.Sub(now))
	}
	return nil
}

// authFailed counts a failed authentication against its source; past the
// limit it answers 429 instead of 401 and refuses the source until the
// window ends. A Stored limiter makes the count the deployment's, so every
// instance stops a guesser once it has tried its limit in total (plus at
// most one try on each instance that has not yet refused it).
func (t *throttler) authFailed(r *http.Request, err error) error {
	if t == nil || t.cfg.AuthFailures.Off() || !isUnauthorized(err) {
		return err
	}
	src := source(r)
	now := t.cfg.Now()
	d, lerr := t.cfg.Limiter.Take(r.Context(), sourceLimitKind+":"+src, t.cfg.AuthFailures, now)
	if lerr != nil {
		t.log.WarnContext(r.Context(), "counting a failed authentication failed; not slowed", slog.Any("error", lerr))
		return err
	}
	if d.Allowed {
		return err
	}
	t.mu.Lock()
	if len(t.blocked) > 4096 {
		for s, until := range t.blocked {
			if !now.Before(until) {
				delete(t.blocked, s)
			}
		}
	}
	t.blocked[src] = now.Add(d.RetryAfter)
	t.mu.Unlock()
	return tooManyFailures(d.RetryAfter)
}

// isUnauthorized: the answer is 401, whether a bad API key
// (access.ErrUnauthorized) or a refused token (the identity's reason as an
// apiError): both are guesses the per-source limit slows down.
func isUnauthorized(err error) bool {
	var ae *apiError
	return errors.Is(err, access.ErrUnauthorized) || (errors.As(err, &ae) && ae.status == http.StatusUnauthorized)
}

func tooManyFailures(after time.Duration) error {
	return &throttledError{retryAfter: after, message: fmt.Sprintf(
		"too many failed authentications from your address; wait %s and send a valid API key", after.Round(time.Second))}
}

// takeTenant counts one request of tenant and says the limit in the answer's
// RateLimit headers. A limiter that fails lets the request through: the
// limit protects the service, and refusing every request while the store
// hiccups would be the outage it protects from.
func (t *throttler) takeTenant(ctx context.Context, w http.ResponseWriter, tenant string) error {
	if t == nil || t.cfg.PerTenant.Off() {
		return nil
	}
	d, err := t.cfg.Limiter.Take(ctx, tenantLimitKind+":"+tenant, t.cfg.PerTenant, t.cfg.Now())
	if err != nil {
		t.log.WarnContext(ctx, "counting the tenant's request failed; not limited", slog.String("tenant", tenant), slog.Any("error", err))
		return nil
	}
	h := w.Header()
	h.Set("RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("RateLimit-Remaining", strconv.Itoa(d.Remaining))
	h.Set("RateLimit-Reset", strconv.Itoa(max(1, int(math.Ceil(d.RetryAfter.Seconds())))))
	if d.Allowed {
		return nil
	}
	return &throttledError{retryAfter: d.RetryAfter, message: fmt.Sprintf(
		"your tenant sent more than %s; wait %s (Retry-After) and send fewer", t.cfg.PerTenant, d.RetryAfter.Round(time.Second))}
}

// forgetTenant removes a deleted tenant's request count (with the stored
// limiter, the item in the tenant's partition), so that nothing of the
// tenant is left behind.
func (t *throttler) forgetTenant(ctx context.Context, tenant string) error {
	if t == nil {
		return nil
	}
	if err := t.cfg.Limiter.Forget(ctx, tenantLimitKind+":"+tenant); err != nil {
		return fmt.Errorf("removing the request count of tenant %q: %w", tenant, err)
	}
	return nil
}
