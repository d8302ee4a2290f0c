package pools_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/pools"
)

// keys is a listing the test changes while Supervise runs.
type keys struct {
	mu   sync.Mutex
	list []string
	err  error
}

func (k *keys) set(list []string, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.list, k.err = list, err
}

func (k *keys) get(context.Context) ([]string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.list), k.err
}

// running tracks which pools run.
type running struct {
	mu      sync.Mutex
	now     map[string]int
	started atomic.Int32
}

func (r *running) run(ctx context.Context, key string) {
	r.started.Add(1)
	r.mu.Lock()
	r.now[key]++
	r.mu.Unlock()
	<-ctx.Done()
	r.mu.Lock()
	r.now[key]--
	if r.now[key] == 0 {
		delete(r.now, key)
	}
	r.mu.Unlock()
}

func (r *running) keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for k, n := range r.now {
		if n != 1 {
			out = append(out, k+"(twice)")
			continue
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestSupervise(t *testing.T) {
	t.Parallel()
	k := &keys{list: []string{"acme", "globex"}}
	r := &running{now: map[string]int{}}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		pools.Supervise(ctx, 5*time.Millisecond, k.get, r.run, nil)
	}()
	wait := func(want ...string) {
		t.Helper()
		require.Eventually(t, func() bool { return slices.Equal(r.keys(), want) }, 5*time.Second, time.Millisecond, "want %v, have %v", want, r.keys())
	}
	wait("acme", "globex")

	k.set([]string{"globex", "initech"}, nil)
	wait("globex", "initech")

	k.set(nil, errors.New("the store is down"))
	time.Sleep(30 * time.Millisecond)
	wait("globex", "initech") // a failed listing stops nothing
	require.EqualValues(t, 3, r.started.Load(), "no pool restarted")

	k.set(nil, nil)
	wait() // an empty listing stops every pool

	k.set([]string{"acme"}, nil)
	wait("acme")
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Supervise did not return")
	}
	require.Empty(t, r.keys(), "every pool returned before Supervise did")
}

// TestSuperviseRestartsAPoolThatReturned: a run that gives up is started
// again at the next listing.
func TestSuperviseRestartsAPoolThatReturned(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pools.Supervise(ctx, 5*time.Millisecond,
			func(context.Context) ([]string, error) { return []string{"acme"}, nil },
			func(ctx context.Context, _ string) {
				if runs.Add(1) < 3 {
					return
				}
				<-ctx.Done()
			}, nil)
	}()
	require.Eventually(t, func() bool { return runs.Load() == 3 }, 5*time.Second, time.Millisecond)
	time.Sleep(30 * time.Millisecond)
	require.EqualValues(t, 3, runs.Load(), "a running pool is not started twice")
	cancel()
	<-done
}

// TestSuperviseStructKeys: a key may be a struct, such as a tenant and its
// worker count, so that a changed count restarts the pool.
func TestSuperviseStructKeys(t *testing.T) {
	t.Parallel()
	type key struct {
		tenant  string
		workers int
	}
	var mu sync.Mutex
	list := []key{{"acme", 2}}
	var started []key
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		pools.Supervise(ctx, 5*time.Millisecond,
			func(context.Context) ([]key, error) { mu.Lock(); defer mu.Unlock(); return slices.Clone(list), nil },
			func(ctx context.Context, k key) { mu.Lock(); started = append(started, k); mu.Unlock(); <-ctx.Done() }, nil)
	}()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(started) == 1 }, 5*time.Second, time.Millisecond)
	mu.Lock()
	list = []key{{"acme", 5}}
	mu.Unlock()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(started) == 2 }, 5*time.Second, time.Millisecond)
	cancel()
	<-done
	require.Equal(t, []key{{"acme", 2}, {"acme", 5}}, started)
}
