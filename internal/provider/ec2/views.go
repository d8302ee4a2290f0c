package ec2

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Polls of many nodes share describes. A confirm or delete poll needs the
// state of one node's instance; asking EC2 once per node would cost a
// DescribeInstances per node per poll interval (1,000 booting nodes: 200
// calls a second, far past EC2's request rate). Instead a poll reads the
// cluster's view: every instance tagged for the cluster, listed by one
// paged DescribeInstances (1,000 instances a page) at most once per
// ViewMaxAge in this process. Polls that find the view stale while another
// poll refreshes it wait for that one call (a describe, not the machine);
// the others read it. Nothing of a node's progress lives here: the view is
// a cache any worker may lack, and a poll without one describes anew.
//
// Describes are paced per client (region and credentials) by a token
// bucket (DescribeRate, DescribeBurst): a poll that finds the bucket empty
// reads the stale view if there is one, else asks to be polled again. When
// EC2 throttles (RequestLimitExceeded) the bucket pauses for the backoff,
// and the poll asks to be called again after it, doubling with each
// throttled answer of the same attempt (the count rides in the poll state).

// errPaced says the describe budget is spent for now: poll again later.
var errPaced = errors.New("ec2: the describe budget of this worker is spent for the moment")

type viewKey struct{ client, tenant, cluster string }

// clusterView is the last listing of one cluster's instances.
type clusterView struct {
	mu      sync.Mutex
	fetched time.Time
	insts   []types.Instance
	load    *viewLoad // the describe under way, if any
}

type viewLoad struct {
	done chan struct{}
	err  error
}

// views holds the cluster views and the per-client buckets of one provider.
type views struct {
	mu      sync.Mutex
	byKey   map[viewKey]*clusterView
	buckets map[string]*bucket
}

func (v *views) view(k viewKey, now time.Time, maxAge time.Duration) *clusterView {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.byKey == nil {
		v.byKey = map[viewKey]*clusterView{}
	}
	if cv := v.byKey[k]; cv != nil {
		return cv
	}
	// A new cluster: forget the views nobody read for a while, so the map
	// holds the clusters being worked on, not every cluster ever seen.
	for key, cv := range v.byKey {
		if cv.mu.TryLock() {
			idle := cv.load == nil && now.Sub(cv.fetched) > 100*maxAge
			cv.mu.Unlock()
			if idle {
				delete(v.byKey, key)
			}
		}
	}
	cv := &clusterView{}
	v.byKey[k] = cv
	return cv
}

func (v *views) bucket(client string, rate float64, burst int) *bucket {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.buckets == nil {
		v.buckets = map[string]*bucket{}
	}
	b := v.buckets[client]
	if b == nil {
		b = &bucket{rate: rate, burst: float64(burst), tokens: float64(burst)}
		v.buckets[client] = b
	}
	return b
}

// bucket is a token bucket: rate tokens a second, at most burst.
type bucket struct {
	mu          sync.Mutex
	rate, burst float64
	tokens      float64
	last        time.Time
	pausedUntil time.Time
}

func (b *bucket) take(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Before(b.pausedUntil) {
		return false
	}
	if !b.last.IsZero() {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (b *bucket) pause(until time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if until.After(b.pausedUntil) {
		b.pausedUntil = until
	}
}

// clusterInstances returns the instances tagged for the request's cluster
// as a view no older than ViewMaxAge (or older, when the describe budget is
// spent and an older one exists).
func (p *EC2) clusterInstances(ctx context.Context, c API, clientKey string, tenant, cluster string) ([]types.Instance, error) {
	cv := p.views.view(viewKey{clientKey, tenant, cluster}, time.Now(), p.cfg.ViewMaxAge)
	cv.mu.Lock()
	for {
		if !cv.fetched.IsZero() && time.Since(cv.fetched) < p.cfg.ViewMaxAge {
			insts := cv.insts
			cv.mu.Unlock()
			return insts, nil
		}
		l := cv.load
		if l == nil {
			break
		}
		cv.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-l.done:
		}
		if l.err != nil {
			return nil, l.err
		}
		cv.mu.Lock()
	}
	b := p.views.bucket(clientKey, p.cfg.DescribeRate, p.cfg.DescribeBurst)
	if !b.take(time.Now()) {
		insts, fetched := cv.insts, cv.fetched
		cv.mu.Unlock()
		if !fetched.IsZero() {
			return insts, nil
		}
		return nil, errPaced
	}
	l := &viewLoad{done: make(chan struct{})}
	cv.load = l
	cv.mu.Unlock()

	insts, err := listInstances(ctx, c, []types.Filter{
		{Name: aws.String("tag:" + TagTenant), Values: []string{tenant}},
		{Name: aws.String("tag:" + TagCluster), Values: []string{cluster}},
	})
	if throttled(err) {
		b.pause(time.Now().Add(p.cfg.PollInterval))
	}
	p.describes.Add(1)

	cv.mu.Lock()
	if err == nil {
		cv.insts, cv.fetched = insts, time.Now()
	}
	l.err = err
	cv.load = nil
	close(l.done)
	cv.mu.Unlock()
	return insts, err
}

// nodeInstances picks the node's instances out of the cluster's: the
// recorded one and any other tagged for the node (a launch whose result
// was never recorded), the recorded one first.
func nodeInstances(all []types.Instance, nodeID, providerID string) []types.Instance {
	var out []types.Instance
	for _, inst := range all {
		id := aws.ToString(inst.InstanceId)
		switch {
		case providerID != "" && id == providerID:
			out = append([]types.Instance{inst}, out...)
		case tagValue(inst.Tags, TagNode) == nodeID:
			out = append(out, inst)
		}
	}
	return out
}

// throttled reports whether EC2 refused a call for its request rate.
func throttled(err error) bool {
	switch errorCode(err) {
	case "RequestLimitExceeded", "Throttling", "ThrottlingException":
		return true
	}
	return false
}

// maxBackoff caps the wait after repeated throttling.
const maxBackoff = 2 * time.Minute

// backoff is the wait after the n-th throttled answer in a row (n >= 1):
// the poll interval doubled each time, with up to a fifth of jitter so
// that the nodes of a job do not come back in step.
func (p *EC2) backoff(n int) time.Duration {
	d := p.cfg.PollInterval << min(n, 10)
	d = min(d, maxBackoff)
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}

// throttles reads the poll state: how many throttled answers in a row the
// attempt has had.
func throttles(poll string) int {
	n, _ := strconv.Atoi(poll)
	return max(n, 0)
}
