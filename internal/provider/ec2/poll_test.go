package ec2

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddle-io/heddle/internal/provider"
	"github.com/stretchr/testify/require"
)

// createNodes launches n nodes of cluster c1 and returns their requests
// with the instance ids recorded.
func (f fixture) createNodes(t *testing.T, n int) []provider.Request {
	t.Helper()
	var reqs []provider.Request
	for i := range n {
		req := f.request(fmt.Sprintf("c1-%d", 1000+i))
		req.Token = fmt.Sprintf("tok%037d", i)
		created, err := f.ec2.Create(testCtx(t), req)
		require.NoError(t, err)
		req.Node.ProviderID = created.ProviderID
		reqs = append(reqs, req)
	}
	return reqs
}

// pollAll makes one check per request at once, as many workers would.
func pollAll(ctx context.Context, reqs []provider.Request, check func(context.Context, provider.Request) (provider.Progress, error)) ([]provider.Progress, error) {
	out := make([]provider.Progress, len(reqs))
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = check(ctx, reqs[i])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// TestConfirmPollsShareOneDescribe: the polls of a cluster's booting nodes
// that come due together read one DescribeInstances listing, not one each,
// and none of them waits for the boot.
func TestConfirmPollsShareOneDescribe(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.fake.pendingDescribes = 1
	reqs := f.createNodes(t, 20)
	ctx := testCtx(t)
	worker := New(Config{HTTPClient: f.fake.srv.Client(), PollInterval: time.Second, ViewMaxAge: time.Hour})

	first, err := pollAll(ctx, reqs, worker.Confirm)
	require.NoError(t, err)
	for i, p := range first {
		require.True(t, p.Pending(), "node %d: pending after one check", i)
		require.Equal(t, time.Second, p.Again)
		require.Contains(t, p.Waiting, "pending")
	}
	require.Len(t, f.fake.calls("DescribeInstances"), 1, "20 polls, one listing")
	require.Equal(t, int64(1), worker.describes.Load())

	// Another worker (no view yet) takes the next polls: one listing
	// again, every instance runs and answers SSH.
	next := New(Config{HTTPClient: f.fake.srv.Client(), PollInterval: time.Second, ViewMaxAge: time.Hour})
	for i := range reqs {
		reqs[i].Poll = first[i].Poll
	}
	second, err := pollAll(ctx, reqs, next.Confirm)
	require.NoError(t, err)
	for i, p := range second {
		require.False(t, p.Pending(), "node %d: %s", i, p.Waiting)
		require.Equal(t, reqs[i].Node.ProviderID, p.Node.ProviderID)
		require.NotEmpty(t, p.Node.HostKey)
	}
	require.Len(t, f.fake.calls("DescribeInstances"), 2)
	for _, call := range f.fake.calls("DescribeInstances") {
		require.Empty(t, list(call, "InstanceId"), "listed by the cluster's tags")
		require.Equal(t, "tag:"+TagCluster, call.Get("Filter.2.Name"))
		require.Equal(t, "c1", call.Get("Filter.2.Value.1"))
	}
}

// TestThrottledPollsBackOff: EC2's RequestLimitExceeded is no failure: the
// poll asks again after a backoff that grows with each throttled answer
// (the count rides in the poll state), and the next answer that gets
// through resets it.
func TestThrottledPollsBackOff(t *testing.T) {
	t.Parallel()
	f := setup(t)
	req := f.createNodes(t, 1)[0]
	ctx := testCtx(t)
	const interval = 200 * time.Millisecond
	p := New(Config{HTTPClient: f.fake.srv.Client(), PollInterval: interval, ViewMaxAge: time.Nanosecond, DescribeBurst: 100, DescribeRate: 1e6})
	f.fake.mu.Lock()
	f.fake.throttleLeft["DescribeInstances"] = 2
	f.fake.mu.Unlock()

	got, err := p.Confirm(ctx, req)
	require.NoError(t, err)
	require.True(t, got.Pending())
	require.Equal(t, ":1", got.Poll)
	require.Contains(t, got.Waiting, "RequestLimitExceeded")
	require.GreaterOrEqual(t, got.Again, 2*interval*4/5)
	require.LessOrEqual(t, got.Again, 2*interval)

	// The worker's describes pause meanwhile: a poll right now is paced,
	// keeping its count, and asks nothing of EC2.
	calls := len(f.fake.calls("DescribeInstances"))
	req.Poll = got.Poll
	paced, err := p.Confirm(ctx, req)
	require.NoError(t, err)
	require.Equal(t, ":1", paced.Poll)
	require.Len(t, f.fake.calls("DescribeInstances"), calls)

	// Later, throttled again: the backoff doubles.
	time.Sleep(interval)
	got, err = p.Confirm(ctx, req)
	require.NoError(t, err)
	require.Equal(t, ":2", got.Poll)
	require.GreaterOrEqual(t, got.Again, 4*interval*4/5)

	req.Poll = got.Poll
	time.Sleep(interval)
	done, _, err := settleFrom(ctx, req, p.Confirm)
	require.NoError(t, err)
	require.Equal(t, req.Node.ProviderID, done.Node.ProviderID)
}

// settleFrom is providertest.Settle starting from req.Poll.
func settleFrom(ctx context.Context, req provider.Request, check func(context.Context, provider.Request) (provider.Progress, error)) (provider.Progress, int, error) {
	for calls := 1; ; calls++ {
		p, err := check(ctx, req)
		if err != nil || !p.Pending() {
			return p, calls, err
		}
		time.Sleep(p.Again)
		req.Poll = p.Poll
	}
}

// TestDescribesArePaced: with the worker's describe budget spent, a poll
// reads the stale listing it has, or asks to be polled later; it never
// waits for the budget.
func TestDescribesArePaced(t *testing.T) {
	t.Parallel()
	f := setup(t)
	reqs := f.createNodes(t, 1)
	ctx := testCtx(t)
	p := New(Config{HTTPClient: f.fake.srv.Client(), PollInterval: time.Minute, ViewMaxAge: time.Nanosecond, DescribeRate: 1e-9, DescribeBurst: 1})

	_, err := p.Confirm(ctx, reqs[0])
	require.NoError(t, err)
	require.Len(t, f.fake.calls("DescribeInstances"), 1)

	// Same cluster: the stale listing serves.
	_, err = p.Confirm(ctx, reqs[0])
	require.NoError(t, err)
	require.Len(t, f.fake.calls("DescribeInstances"), 1)

	// Another cluster, nothing listed yet: poll later.
	other := f.request("c2-1000")
	other.ClusterID = "c2"
	start := time.Now()
	got, err := p.Confirm(ctx, other)
	require.NoError(t, err)
	require.True(t, got.Pending())
	require.Equal(t, time.Minute, got.Again)
	require.Contains(t, got.Waiting, "describe budget")
	require.Less(t, time.Since(start), time.Minute, "answered, not waited")
	require.Len(t, f.fake.calls("DescribeInstances"), 1)
}

// TestDeletePollsUntilTerminated: the first call terminates the node's
// instances, a lost launch among them; later calls only look, until EC2
// lists them terminated.
func TestDeletePollsUntilTerminated(t *testing.T) {
	t.Parallel()
	f := setup(t)
	reqs := f.createNodes(t, 2)
	ctx := testCtx(t)
	req := reqs[0]
	// A second launch for the node whose result was never recorded.
	lost := f.fake.seed("running", time.Now(), TagTenant, "acme", TagCluster, "c1", TagNode, req.Node.ID)
	p := New(Config{HTTPClient: f.fake.srv.Client(), PollInterval: time.Millisecond, ViewMaxAge: time.Nanosecond})

	first, err := p.Delete(ctx, req)
	require.NoError(t, err)
	require.True(t, first.Pending())
	require.Equal(t, deletePhase, first.Poll)
	require.Contains(t, first.Waiting, "shutting down")
	terms := f.fake.calls("TerminateInstances")
	require.Len(t, terms, 1)
	require.ElementsMatch(t, []string{req.Node.ProviderID, lost}, list(terms[0], "InstanceId"))

	req.Poll = first.Poll
	done, calls, err := settleFrom(ctx, req, p.Delete)
	require.NoError(t, err)
	require.False(t, done.Pending())
	require.Equal(t, 1, calls, "the next listing finds them terminated")
	require.Len(t, f.fake.calls("TerminateInstances"), 1, "polls terminate nothing again")
	states := f.fake.states()
	require.Equal(t, "terminated", states[req.Node.ProviderID])
	require.Equal(t, "terminated", states[lost])
	require.Equal(t, "running", states[reqs[1].Node.ProviderID], "the other node is untouched")

	// Throttled terminate: asked again later, still in the first phase.
	f.fake.mu.Lock()
	f.fake.throttleLeft["TerminateInstances"] = 1
	f.fake.mu.Unlock()
	other := reqs[1]
	got, err := p.Delete(ctx, other)
	require.NoError(t, err)
	require.True(t, got.Pending())
	require.Equal(t, ":1", got.Poll)
	other.Poll = got.Poll
	_, _, err = settleFrom(ctx, other, p.Delete)
	require.NoError(t, err)
	require.Equal(t, "terminated", f.fake.states()[other.Node.ProviderID])
	require.True(t, strings.HasPrefix(lost, "i-"))
}

// TestConfirmWaitsForTheBootEstimate: a just-launched instance is not
// checked every PollInterval but when it reaches the age instances boot
// at; past that age, every PollInterval.
func TestConfirmWaitsForTheBootEstimate(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.fake.pendingDescribes = 10
	f.fake.launchedAgo = 0
	req := f.createNodes(t, 1)[0]
	p := New(Config{HTTPClient: f.fake.srv.Client(), PollInterval: time.Second, BootEstimate: time.Minute, ViewMaxAge: time.Nanosecond})
	got, err := p.Confirm(testCtx(t), req)
	require.NoError(t, err)
	require.Greater(t, got.Again, 50*time.Second)
	require.LessOrEqual(t, got.Again, time.Minute)

	old := New(Config{HTTPClient: f.fake.srv.Client(), PollInterval: time.Second, BootEstimate: time.Millisecond, ViewMaxAge: time.Nanosecond})
	got, err = old.Confirm(testCtx(t), req)
	require.NoError(t, err)
	require.Equal(t, time.Second, got.Again, "past the estimate: every PollInterval")
}
