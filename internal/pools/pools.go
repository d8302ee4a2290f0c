// Package pools keeps one goroutine (a worker pool) running per key of a
// list that changes over time: `heddle worker` runs a pool per tenant on the
// tenants' long-task queues, and the local server runs one per tenant on
// its in-process queues, keyed by tenant and worker count so that a changed
// count restarts the pool.
package pools

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Supervise lists the keys every period and keeps run(ctx, key) going for
// each: a new key's pool starts at once, a key that is no longer listed has
// its pool's context canceled. A failed listing is logged and changes
// nothing. When ctx ends, every pool's context is canceled, and Supervise
// returns once every run has returned.
//
// run should return only when its context ends; a run that returns early
// is started again at the next listing that still holds its key.
func Supervise[K comparable](ctx context.Context, every time.Duration, list func(context.Context) ([]K, error),
	run func(ctx context.Context, key K), log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	type pool struct {
		cancel context.CancelFunc
		done   chan struct{}
	}
	pools := map[K]*pool{}
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		keys, err := list(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			log.WarnContext(ctx, "listing the pools' keys failed; the pools are kept", "error", err)
		case err == nil:
			seen := make(map[K]bool, len(keys))
			for _, k := range keys {
				seen[k] = true
				if p, ok := pools[k]; ok {
					select {
					case <-p.done: // returned early: start it again
						p.cancel()
					default:
						continue
					}
				}
				pctx, cancel := context.WithCancel(ctx)
				p := &pool{cancel: cancel, done: make(chan struct{})}
				pools[k] = p
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer close(p.done)
					run(pctx, k)
				}()
				log.InfoContext(ctx, "pool started", "key", k)
			}
			for k, p := range pools {
				if !seen[k] {
					p.cancel()
					delete(pools, k)
					log.InfoContext(ctx, "pool stopped", "key", k)
				}
			}
		}
		select {
		case <-ctx.Done():
			for _, p := range pools {
				p.cancel()
			}
			return
		case <-tick.C:
		}
	}
}
