package main

import (
	"bytes"
	"context"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
)

// formatFile is where the engine's format version is declared.
const formatFile = "internal/engine/format.go"

// previousRelease builds the previous release, the code just before the
// commit that brought the current format version (the newest commit whose
// diff touches the `const FormatVersion =` line of formatFile), into a
// temporary directory, as buildAll builds the current one: the three
// bootstraps under lambda/ and the CLI. It reads the commit out of the
// repository with git archive, so the work tree and the repository are
// left as they were. It needs the repository's history back to that
// commit: without it (a shallow clone .ci/run could not deepen, a
// checkout with no git) the test skips and says why.
func previousRelease(t *testing.T) (dir, commit string) {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		// A skip, even in CI: a checkout without history (a tarball, a
		// shallow clone whose fetch had no network) must not stop every
		// other test from landing. The skip says so in the log.
		t.Skip("SKIPPED the side-by-side deploy test: " + fmt.Sprintf(format, args...))
	}
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", args...).Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, stderr)
		}
		return strings.TrimSpace(string(out)), nil
	}
	if _, err := exec.LookPath("git"); err != nil {
		unavailable("git is not installed: the test builds the previous release out of the repository's history")
	}
	root, err := git("rev-parse", "--show-toplevel")
	if err != nil {
		unavailable("not in a git repository (%v): the test builds the previous release out of its history", err)
	}
	changed, err := git("-C", root, "log", "-1", "--format=%H", "-G", `^const FormatVersion = `, "--", formatFile)
	require.NoError(t, err)
	require.NotEmpty(t, changed, "no commit declares the format version in %s", formatFile)
	commit, err = git("-C", root, "rev-parse", "--verify", "--quiet", changed+"^{commit}^")
	if err != nil || commit == "" {
		shallow, _ := git("-C", root, "rev-parse", "--is-shallow-repository")
		unavailable("the parent of %s (the commit that brought the current format) is not in this clone (shallow: %s): "+
			"fetch the history with git fetch --unshallow", changed, shallow)
	}

	dir = t.TempDir()
	src := filepath.Join(dir, "src")
	require.NoError(t, os.MkdirAll(src, 0o755))
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	require.NoError(t, err)
	untar.Stdin = pipe
	var archiveErr bytes.Buffer
	archive.Stderr = &archiveErr
	require.NoError(t, untar.Start())
	require.NoError(t, archive.Run(), "git archive %s: %s", commit, &archiveErr)
	require.NoError(t, untar.Wait())

	builds := [][]string{{"-o", filepath.Join(dir, "heddle"), "./cmd/heddle"}}
	for _, fn := range []string{"api", "worker", "janitor"} {
		builds = append(builds, []string{"-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w",
			"-o", filepath.Join(dir, "lambda", fn, "bootstrap"), "./functions/" + fn})
	}
	for _, b := range builds {
		cmd := exec.Command("go", append([]string{"build"}, b...)...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH, "GOFLAGS=-mod=readonly")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "building the previous release (%s): go build %v:\n%s", commit, b, out)
	}
	require.NoError(t, os.RemoveAll(src))
	return dir, commit
}

// shift moves every alias as CodeDeploy does: the previous release's
// versions take the share previous of the invocations.
func (d *deployment) shift(previous float64) {
	d.t.Helper()
	resp, err := testHTTP.Post(d.ready.Lambda+"/local-aws/shift?previous="+strconv.FormatFloat(previous, 'f', -1, 64), "", nil)
	require.NoError(d.t, err)
	resp.Body.Close()
	require.Equal(d.t, http.StatusNoContent, resp.StatusCode)
}

// waitJobs waits for the clusters' current jobs to end and returns their
// views.
func (d *deployment) waitJobs(ids ...string) []clusterView {
	d.t.Helper()
	views := make([]clusterView, len(ids))
	for i, id := range ids {
		deadline := time.Now().Add(10 * time.Minute)
		for {
			views[i] = clusterView{}
			d.api(http.MethodGet, "/v1/clusters/"+id, nil, &views[i])
			if views[i].Progress != nil && terminal(views[i].Progress.Status) {
				break
			}
			require.True(d.t, time.Now().Before(deadline), "cluster %s's job did not end: %+v", id, views[i])
			time.Sleep(time.Second)
		}
	}
	return views
}

// deadLetters counts the messages in the tenant's dead-letter queue.
func (d *deployment) deadLetters(tenant string) int {
	d.t.Helper()
	q := sqsqueue.NewEmulatorClient(os.Getenv("HEDDLE_SQS_ENDPOINT"))
	ctx := context.Background()
	u, err := q.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(d.ready.Prefix + tenant + "_dlq.fifo")})
	require.NoError(d.t, err)
	attrs, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: u.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	require.NoError(d.t, err)
	n := 0
	for _, name := range []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible} {
		v, _ := strconv.Atoi(attrs.Attributes[string(name)])
		n += v
	}
	return n
}

// TestDeployWhileBusy deploys the current release over the previous one
// (built in the test from the commit before the newest format change) on
// the local AWS topology while clusters are created and deleted, as
// infra/README.md's "Upgrading a running deployment" says a deploy runs:
//
//  1. the previous release alone: the tenant onboarded, its catalog
//     applied, two clusters created (jobs of the previous format);
//  2. the deploy: every alias ("live": the HTTP API's, the janitor
//     schedule's and the tenant's event source mapping's) sends half of
//     the invocations to each release, and both releases' `heddle worker`
//     run; meanwhile the two clusters are deleted and three more created at
//     once, through whichever api the alias picks, and worker processes of
//     either release are killed with SIGKILL in the middle of an
//     invocation;
//  3. the deploy ends: the aliases move to the current release and the
//     previous `heddle worker` stops.
//
// Every job must succeed (a previous worker that meets a job or message of
// the current format hands it back, and its janitor leaves the job alone;
// the current worker reads the previous format), no task may be left
// READY or RUNNING or run twice, no message may reach the dead-letter
// queue, and the tenant's counters must equal its live nodes.
func TestDeployWhileBusy(t *testing.T) {
	t.Parallel()
	need(t, "HEDDLE_DYNAMODB_ENDPOINT", "scripts/dynamodb-local.sh")
	need(t, "HEDDLE_SQS_ENDPOINT", "scripts/fauxqs.sh")
	need(t, "HEDDLE_SSH_HOSTS", "scripts/sshd-hosts.sh")
	prev, commit := previousRelease(t)
	t.Logf("previous release: %s", commit)
	d := setup(t, "--previous-bin-dir", filepath.Join(prev, "lambda"), "--previous-heddle", filepath.Join(prev, "heddle"))

	// 1. The previous release alone.
	s, err := d.stats()
	require.NoError(t, err)
	require.Equal(t, 1.0, s.Aliases["worker"], "before the deploy the aliases point at the previous release")
	for _, bad := range []string{"NaN", "1.5", "-0.1", "half"} {
		resp, err := testHTTP.Post(d.ready.Lambda+"/local-aws/shift?previous="+bad, "", nil)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, bad)
	}
	d.createTenant("6", "10", "4")
	d.registerHosts("acme", 5)
	d.mustHeddle("apply", "-f", "testdata/static-catalog.yaml")
	create := func(name string) (string, error) {
		var out struct {
			Cluster struct {
				ID string `json:"id"`
			} `json:"cluster"`
		}
		status, err := d.call(http.MethodPost, "/v1/clusters", map[string]any{"name": name, "template": "pair", "size": 1}, &out)
		if err == nil && status != http.StatusAccepted {
			err = fmt.Errorf("create %s answered %d", name, status)
		}
		return out.Cluster.ID, err
	}
	var before []string
	for _, name := range []string{"old0", "old1"} {
		id, err := create(name)
		require.NoError(t, err)
		before = append(before, id)
	}
	for i, v := range d.waitJobs(before...) {
		require.Equal(t, "SUCCEEDED", v.Progress.Status, "cluster %s's create under the previous release", before[i])
	}
	s, err = d.stats()
	require.NoError(t, err)
	require.Positive(t, s.Functions["previous-worker"].Invocations)
	require.Zero(t, s.Functions["worker"].Invocations, "the current release's worker has not run yet")
	require.Len(t, s.Mappings, 1)
	require.True(t, strings.HasSuffix(s.Mappings[0].FunctionArn, ":"+aliasName), "the mapping invokes the worker's alias: %s", s.Mappings[0].FunctionArn)

	// 2. The deploy: both releases side by side through concurrent deletes
	// and creates, and kills.
	d.shift(0.5)
	during, err := d.stats()
	require.NoError(t, err)
	var mu sync.Mutex
	var errs []error
	var after []string
	var wg sync.WaitGroup
	for _, id := range before {
		wg.Go(func() {
			status, err := d.call(http.MethodDelete, "/v1/clusters/"+id, nil, nil)
			if err == nil && status != http.StatusAccepted {
				err = fmt.Errorf("delete %s answered %d", id, status)
			}
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		})
	}
	for i := range 3 {
		wg.Go(func() {
			id, err := create(fmt.Sprintf("new%d", i))
			mu.Lock()
			errs, after = append(errs, err), append(after, id)
			mu.Unlock()
		})
	}
	// For half a minute of the deploy: the clusters read through either
	// release's api (a dashboard's polling), and a kill -9 or two: a worker
	// environment of either release in the middle of an invocation.
	// Invocations are short (most tasks run in milliseconds), so the
	// workers are looked at every 20 ms for one in the middle of one; the
	// clusters are read every half second or so.
	kills := map[string]int{}
	nextRead := time.Now()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		if time.Now().After(nextRead) {
			_, err := d.call(http.MethodGet, "/v1/clusters", nil, nil)
			require.NoError(t, err)
			nextRead = time.Now().Add(time.Duration(200+mrand.IntN(600)) * time.Millisecond)
		}
		if kills["worker"]+kills["previous-worker"] >= 2 {
			continue
		}
		s, err := d.stats()
		require.NoError(t, err)
		for _, name := range []string{"worker", "previous-worker"} {
			if busy := s.Functions[name].Busy; len(busy) > 0 && syscall.Kill(busy[mrand.IntN(len(busy))], syscall.SIGKILL) == nil {
				kills[name]++
				break
			}
		}
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	t.Logf("killed in the middle of an invocation: %v", kills)
	require.Positive(t, kills["worker"]+kills["previous-worker"], "a worker was killed in the middle of an invocation")
	shifted, err := d.stats()
	require.NoError(t, err)
	for _, fn := range []string{"api", "worker"} {
		require.Greater(t, shifted.Functions[fn].Invocations, during.Functions[fn].Invocations, "the current %s ran during the deploy", fn)
		require.Greater(t, shifted.Functions["previous-"+fn].Invocations, during.Functions["previous-"+fn].Invocations, "the previous %s ran during the deploy", fn)
	}

	// 3. The deploy ends.
	d.shift(0)
	all := slices.Concat(before, after)
	for i, v := range d.waitJobs(all...) {
		id := all[i]
		require.Equal(t, "SUCCEEDED", v.Progress.Status, "cluster %s's job (%s)", id, v.Status)
	}
	for _, id := range before {
		require.Equal(t, "TERMINATED", d.clusterStatus(id))
	}
	for _, id := range after {
		require.Equal(t, "ACTIVE", d.clusterStatus(id))
	}
	for _, id := range all {
		d.checkJobs(id)
	}
	d.checkCounters(5)
	require.Zero(t, d.deadLetters("acme"), "no message went to the dead-letter queue")
	logs, _ := os.ReadFile(filepath.Join(d.state, "logs", "previous-worker.log"))
	t.Logf("the previous worker handed back %d messages of the newer format", bytes.Count(logs, []byte("handing back work of a newer format")))

	// The current release alone manages what the previous one made.
	for _, id := range after {
		d.mustHeddle("clusters", "delete", id, "--wait")
	}
	d.checkCounters(5)
	for _, id := range after {
		d.checkJobs(id)
	}
	require.Zero(t, d.deadLetters("acme"))
	s, err = d.stats()
	require.NoError(t, err)
	require.NotNil(t, s.PreviousFargate)
	require.Zero(t, s.PreviousFargate.PID, "the previous release's heddle worker stopped with the deploy's end")
	for name, f := range s.Functions {
		t.Logf("%s: %d invocations, %d cold starts, %d crashes, %d errors", name, f.Invocations, f.ColdStarts, f.Crashes, f.Errors)
	}
}
