package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/heddle-io/heddle/internal/store"
)

// Stored is a Limiter whose counts live in the store: one item per key,
// whose status names the current window and whose counter "n" counts the
// requests in it. Every API instance of a deployment shares them.
//
// Each window's item carries store.CounterExpires, one window after the
// window's end, so that DynamoDB's time to live removes the items of keys
// that stop coming (sources that failed once and never again), and no
// request reads an item as current after its window ended anyway.
//
// Cost: one conditional update per request (the update that adds one to the
// window's count and returns it); at the first request of a window, that
// update's condition fails and a second update starts the new window. A
// request refused for the limit costs the same single update.
type Stored struct {
	store store.Store
	// Key maps a limiter key to the item that counts it.
	key func(string) store.Key
}

// NewStored counts in s, key k at the item keyOf(k).
func NewStored(s store.Store, keyOf func(string) store.Key) *Stored {
	return &Stored{store: s, key: keyOf}
}

const countName = "n"

// Take counts one request against key.
func (l *Stored) Take(ctx context.Context, key string, lim Limit, now time.Time) (Decision, error) {
	if lim.Off() {
		return Decision{Allowed: true}, nil
	}
	w, end := window(lim, now)
	status := strconv.FormatInt(w, 10)
	k := l.key(key)
	// A few rounds at most: each failed one means another instance started
	// the window meanwhile, and the next add then lands in it.
	for range 4 {
		it, err := l.store.Write(ctx, store.Update(k, store.Condition{StatusIn: []string{status}},
			store.Changes{Add: map[string]int64{countName: 1}}))
		if err == nil {
			return decide(lim, it.Counter(countName), now, end), nil
		}
		var ce *store.ConditionError
		if !errors.As(err, &ce) {
			return Decision{}, fmt.Errorf("ratelimit: counting %s: %w", k, err)
		}
		// Another window (or none yet): start this one with this request,
		// unless someone changed the item since the failed add saw it.
		cond := store.Condition{MustNotExist: true}
		if ce.Current != nil {
			if ce.Current.Status > status {
				// Our clock is behind another instance's: count in its
				// window rather than rewind it.
				status = ce.Current.Status
				continue
			}
			cond = store.Condition{Version: ce.Current.Version}
		}
		it, err = l.store.Write(ctx, store.Update(k, cond,
			store.Changes{Status: &status, Set: map[string]int64{countName: 1, store.CounterExpires: expiry(lim, end)}}))
		if err == nil {
			return decide(lim, it.Counter(countName), now, end), nil
		}
		if !errors.Is(err, store.ErrConditionFailed) {
			return Decision{}, fmt.Errorf("ratelimit: starting a window at %s: %w", k, err)
		}
	}
	return Decision{}, fmt.Errorf("ratelimit: %s kept changing under four tries", k)
}

// expiry is when a window's item may go: a window after the window's end,
// so that an instance whose clock is a little behind still finds it.
func expiry(lim Limit, end time.Time) int64 {
	return end.Add(lim.Window).Unix() + 1
}

// Forget removes key's count (its tenant is deleted).
func (l *Stored) Forget(ctx context.Context, key string) error {
	k := l.key(key)
	if _, err := l.store.Write(ctx, store.Delete(k, store.Condition{})); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("ratelimit: removing %s: %w", k, err)
	}
	return nil
}
