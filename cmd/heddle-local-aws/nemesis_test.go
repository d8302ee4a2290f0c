package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/faults"
	"github.com/heddle-io/heddle/internal/provider/providertest"
	"github.com/heddle-io/heddle/internal/provider/static"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store/dynamostore"
)

// nemesisPlan sizes one nemesis run.
type nemesisPlan struct {
	seed     uint64
	tenants  int    // each runs its workload concurrently with the others
	clusters int    // per tenant, each created, expanded, shrunk and deleted
	size     int    // nodes a cluster is created with (expanded by one)
	spec     string // the request-level faults, without the seed
	// busyKills allows kill -9 of a worker in the middle of an invocation
	// and of the Fargate task: each costs a running task's lease (90 s)
	// before its retry, too slow for the bounded run.
	busyKills bool
	// sshFaults allows drops and stalls of the SSH connections.
	sshFaults bool
	// skew sets the engine clocks apart: api and janitor skew ahead of
	// the machine, worker and Fargate task skew behind it.
	skew time.Duration
	// noKills leaves every process alone (the baseline).
	noKills bool
}

// nemesisSeed is HEDDLE_CHAOS_SEED, or a new seed (printed, so a failing
// run can be repeated).
func nemesisSeed(t *testing.T) uint64 {
	if s := os.Getenv("HEDDLE_CHAOS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "HEDDLE_CHAOS_SEED: a whole number")
		return n
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
}

// TestNemesis is the bounded nemesis run of make test: two tenants each
// create, expand, shrink and delete a cluster while DynamoDB and SQS
// throttle, answer 500, lose answers of writes they applied, reset
// connections and redeliver messages early, SSH connections drop and
// stall, and idle api and worker environments are killed. Afterwards
// every job has ended, the quotas are exact, no node was created twice or
// left behind, nothing ran on a node after its deletion, and the task
// attempts' history is in order. HEDDLE_CHAOS_SEED=N repeats a run's
// faults (their order over the requests; the interleaving is the
// machine's).
func TestNemesis(t *testing.T) {
	t.Parallel()
	runNemesis(t, nemesisPlan{seed: nemesisSeed(t), tenants: 2, clusters: 1, size: 2, sshFaults: true, skew: time.Second,
		spec: "throttle=0.02,5xx=0.005,5xx-after-apply=0.005,timeout-after-apply=0.005,reset=0.005,latency=0.02,redeliver=0.05,max-latency=100ms"})
}

// TestNemesisLong is make chaos: more tenants and clusters, more faults,
// and workers killed in the middle of invocations. It runs only when
// HEDDLE_CHAOS_LONG=1.
func TestNemesisLong(t *testing.T) {
	if os.Getenv("HEDDLE_CHAOS_LONG") != "1" {
		t.Skip("make chaos runs it (HEDDLE_CHAOS_LONG=1)")
	}
	t.Parallel()
	runNemesis(t, nemesisPlan{seed: nemesisSeed(t), tenants: 3, clusters: 2, size: 2, sshFaults: true, busyKills: true, skew: 5 * time.Second,
		// About 7% of requests fail: at 17% (these rates doubled), reads
		// exhausted the SDK's three attempts so often that a job took
		// minutes per task.
		spec: "throttle=0.03,5xx=0.01,5xx-after-apply=0.01,timeout-after-apply=0.01,reset=0.01,latency=0.04,redeliver=0.08,max-latency=300ms"})
}

// injection is one fault the nemesis loop made (the proxies count their
// own).
type injection struct {
	at   time.Time
	kind string
}

func runNemesis(t *testing.T, plan nemesisPlan) {
	if os.Getenv("HEDDLE_CHAOS_BASELINE") == "1" {
		// The same workload with no fault at all: what the figures of a
		// faulted run compare with (its store writes, its operations'
		// times).
		plan.spec, plan.sshFaults, plan.busyKills, plan.skew, plan.noKills = "", false, false, 0, true
		t.Log("HEDDLE_CHAOS_BASELINE=1: no fault is injected")
	}
	t.Logf("nemesis seed %d (HEDDLE_CHAOS_SEED=%d repeats it)", plan.seed, plan.seed)
	d := setup(t, "--faults", strings.TrimSuffix(fmt.Sprintf("seed=%d,%s", plan.seed, plan.spec), ","),
		"--clock-offsets", fmt.Sprintf("api=%s,janitor=%s,worker=%s,fargate=%s", plan.skew, plan.skew, -plan.skew, -plan.skew))
	need(t, "HEDDLE_SSH_HOSTS", "scripts/sshd-hosts.sh")
	rnd := mrand.New(mrand.NewPCG(plan.seed, 1))

	// Set-up on a quiet network: the faults are for the operations.
	d.pauseFaults(true)
	hostsPer := plan.clusters * (plan.size + 1)
	tenants := make([]*deployment, plan.tenants)
	var proxies []*faults.TCPProxy
	for i := range tenants {
		name := fmt.Sprintf("t%d", i)
		tenants[i] = d.tenant(name, plan.clusters, hostsPer)
		proxies = append(proxies, tenants[i].registerProxiedHosts(name, hostsPer, i)...)
		tenants[i].mustHeddle("apply", "-f", "testdata/chaos-catalog.yaml")
	}
	d.pauseFaults(false)

	start := time.Now()
	var wg sync.WaitGroup
	results := make([][]opResult, plan.tenants)
	errs := make([]error, plan.tenants)
	for i, td := range tenants {
		wg.Go(func() {
			results[i], errs[i] = td.workload(fmt.Sprintf("t%d", i), plan.clusters, plan.size)
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	var injected []injection
	kills := map[string]int{}
	for running := true; running; {
		select {
		case <-done:
			running = false
			continue
		case <-time.After(time.Duration(300+rnd.IntN(1200)) * time.Millisecond):
		}
		now := time.Now()
		s, err := d.stats()
		require.NoError(t, err)
		var actions []string
		if !plan.noKills {
			actions = append(actions, "kill worker", "kill api")
		}
		if plan.sshFaults {
			actions = append(actions, "ssh drop", "ssh stall")
		}
		if plan.busyKills {
			actions = append(actions, "kill busy worker", "kill fargate")
		}
		if len(actions) == 0 {
			continue
		}
		switch a := actions[rnd.IntN(len(actions))]; a {
		case "kill worker", "kill api":
			if d.killIdle(t, strings.TrimPrefix(a, "kill ")) {
				kills[a]++
				injected = append(injected, injection{now, a})
			}
		case "kill busy worker":
			if kills[a] < 2 && d.killBusy(t, s, "worker") {
				kills[a]++
				injected = append(injected, injection{now, a})
			}
		case "kill fargate":
			// Each kill costs the long task it runs a lease (90 s); with
			// no bound the task was killed 80 times in seven minutes and
			// no configure ever finished.
			if kills[a] < 3 && s.Fargate.PID != 0 && syscall.Kill(s.Fargate.PID, syscall.SIGKILL) == nil {
				kills[a]++
				injected = append(injected, injection{now, a})
			}
		case "ssh drop":
			require.NoError(t, proxies[rnd.IntN(len(proxies))].Drop())
			injected = append(injected, injection{now, a})
		case "ssh stall":
			require.NoError(t, proxies[rnd.IntN(len(proxies))].StallFor(time.Duration(500+rnd.IntN(2500))*time.Millisecond))
			injected = append(injected, injection{now, a})
		}
	}
	workloadTook := time.Since(start)
	for i, err := range errs {
		require.NoError(t, err, "tenant t%d's workload", i)
	}

	// The checks, on a quiet network.
	d.pauseFaults(true)
	fs := d.faultStats()
	var all []opResult
	for i, td := range tenants {
		all = append(all, results[i]...)
		var names []string
		for c := range plan.clusters {
			names = append(names, fmt.Sprintf("c%d", c))
		}
		td.checkOneClusterPerName(names)
		for _, r := range results[i] {
			if r.op != "create" {
				continue
			}
			var v clusterView
			td.api(http.MethodGet, "/v1/clusters/"+r.cluster, nil, &v)
			if v.Status != "TERMINATED" {
				out, err := td.heddle("clusters", "delete", r.cluster, "--wait")
				t.Logf("t%d: %s was left %s; heddle clusters delete --wait: %v\n%s", i, r.cluster, v.Status, err, out)
				require.NoError(t, err)
			}
		}
	}
	var history historyStats
	for i, td := range tenants {
		name := fmt.Sprintf("t%d", i)
		t.Logf("%s after the run:\n%s", name, td.describeClusters())
		for _, r := range results[i] {
			if r.op == "create" {
				td.checkJobs(r.cluster)
				// Times written by processes whose clocks are 2*skew apart
				// are compared within that much.
				history.add(td.checkHistory(r.cluster, 2*plan.skew))
			}
		}
		td.checkTenantEmpty(name, hostsPer)
	}
	require.Empty(t, history.violations, "the task attempts' history is out of order")

	// What was injected and what it cost.
	ssh := map[faults.Kind]int64{}
	for _, p := range proxies {
		for k, n := range p.Counts() {
			ssh[k] += n
		}
	}
	succeeded, failed := 0, 0
	byOp := map[string][2]int{}
	for _, r := range all {
		c := byOp[r.op]
		if r.status == "SUCCEEDED" {
			succeeded++
			c[0]++
		} else {
			failed++
			c[1]++
		}
		byOp[r.op] = c
	}
	for _, r := range all {
		t.Logf("  %s %s: %s in %s", r.cluster, r.op, r.status, r.took.Round(100*time.Millisecond))
	}
	writes, faultedWrites := 0, 0
	for _, op := range []string{"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"} {
		writes += int(fs.Requests["dynamodb"][op])
		faultedWrites += int(fs.FaultedOps["dynamodb"][op])
	}
	slowest, slowestKind := history.slowestRecovery(injected, start.Add(workloadTook))
	t.Logf("nemesis seed %d: workload %s, %d operations (%d succeeded, %d did not: %v as [succeeded, not])",
		plan.seed, workloadTook.Round(time.Second), len(all), succeeded, failed, byOp)
	t.Logf("injected: dynamodb %v; sqs %v; ssh %v; kills %v", fs.DynamoDB, fs.SQS, ssh, kills)
	t.Logf("dynamodb writes sent: %d, of which %d met a fault (each costs at least one resend); task attempts %d (%d beyond the first of their task)",
		writes, faultedWrites, history.attempts, history.retries)
	t.Logf("slowest recovery: %s from a %s to the next task attempt starting or ending", slowest.Round(time.Millisecond), slowestKind)
	pause, around := history.longestPause()
	t.Logf("longest pause between attempts: %s (%s)", pause.Round(time.Millisecond), around)
	if plan.spec != "" {
		require.Positive(t, fs.DynamoDB[faults.TimeoutAfter]+fs.DynamoDB[faults.ServerErrorAfter], "answers of applied requests were lost")
	}
}

// pauseFaults stops (true) or starts (false) the deployment's random
// request-level faults.
func (d *deployment) pauseFaults(paused bool) {
	d.t.Helper()
	resp, err := testHTTP.Post(d.ready.Lambda+"/local-aws/faults?paused="+strconv.FormatBool(paused), "", nil)
	require.NoError(d.t, err)
	resp.Body.Close()
	require.Equal(d.t, http.StatusNoContent, resp.StatusCode)
}

func (d *deployment) faultStats() faultStats {
	d.t.Helper()
	resp, err := testHTTP.Get(d.ready.Lambda + "/local-aws/faults")
	require.NoError(d.t, err)
	defer resp.Body.Close()
	var s faultStats
	require.NoError(d.t, json.NewDecoder(resp.Body).Decode(&s))
	return s
}

// tenant creates a tenant with an admin and returns the deployment as
// that admin.
func (d *deployment) tenant(name string, maxClusters, maxNodes int) *deployment {
	d.t.Helper()
	created := d.mustHeddle("tenants", "create", name, "--max-clusters", strconv.Itoa(maxClusters), "--max-nodes", strconv.Itoa(maxNodes),
		"--workers", "4", "--admin", name+"-admin", "-o", "json")
	var tenant struct {
		AdminKey struct {
			Secret string `json:"secret"`
		} `json:"adminKey"`
	}
	require.NoError(d.t, json.Unmarshal([]byte(created), &tenant))
	as := *d
	as.key = tenant.AdminKey.Secret
	as.cli = d.cli + "." + name
	return &as
}

// registerProxiedHosts registers n OpenSSH test hosts in the tenant's
// pool of the static provider rack, each behind a TCP fault proxy of its
// own; the i-th tenant takes the i-th n hosts from the end of the list.
func (d *deployment) registerProxiedHosts(tenant string, n, i int) []*faults.TCPProxy {
	d.t.Helper()
	hosts := providertest.StartOpenSSH(d.t)
	require.GreaterOrEqual(d.t, len(hosts.Hosts), n*(i+1), "HEDDLE_SSH_HOSTS has too few hosts for the nemesis run")
	client := kms.New(kms.Options{Region: region, BaseEndpoint: aws.String(d.ready.KMS),
		Credentials: credentials.NewStaticCredentialsProvider("heddle", "heddle", "")})
	keyring := secrets.NewKeyring(secrets.NewKMSKey(client, d.ready.KMSKey))
	pool := static.NewPool(dynamostore.New(dynamostore.NewEmulatorClient(os.Getenv("HEDDLE_DYNAMODB_ENDPOINT")), d.ready.Table), keyring)
	var proxies []*faults.TCPProxy
	for j, h := range hosts.Hosts[len(hosts.Hosts)-n*(i+1) : len(hosts.Hosts)-n*i] {
		p, err := faults.NewTCPProxy(fmt.Sprintf("%s-h%d", tenant, j), h.Address)
		require.NoError(d.t, err)
		d.t.Cleanup(p.Close)
		proxies = append(proxies, p)
		addr, port, _ := strings.Cut(p.Addr(), ":")
		pn, err := strconv.Atoi(port)
		require.NoError(d.t, err)
		_, err = pool.Register(context.Background(), tenant, "rack", static.HostSpec{ID: fmt.Sprintf("h%d", j), Address: addr, Port: pn,
			User: hosts.User, PrivateKey: secrets.NewSecret(string(hosts.KeyPEM)), HostKey: h.HostKey})
		require.NoError(d.t, err)
	}
	return proxies
}

// opResult is one operation of a workload and how its job ended.
type opResult struct {
	cluster, op, job, status string
	took                     time.Duration // from the first send to the job's end
}

// workload runs, for each of its clusters one after another, a create,
// an expand by one node, a shrink by one node and a delete, each sent as
// the public client sends it under faults (an Idempotency-Key, resent
// after a 5xx or no answer) and waited for. An operation its cluster's
// state refuses (a create that failed leaves nothing to expand) is
// skipped; a delete is always sent. It runs in its own goroutine: it
// returns errors rather than failing the test.
func (d *deployment) workload(tenant string, clusters, size int) ([]opResult, error) {
	var out []opResult
	for c := range clusters {
		name := fmt.Sprintf("c%d", c)
		began := time.Now()
		id, err := d.createCluster(name, "pair", size)
		if err != nil {
			return out, fmt.Errorf("%s: create %s: %w", tenant, name, err)
		}
		job, err := d.latestJob(id)
		if err != nil {
			return out, err
		}
		status, err := d.waitJob(id, job)
		if err != nil {
			return out, err
		}
		out = append(out, opResult{id, "create", job, status, time.Since(began)})
		for _, step := range []struct {
			op   string
			body any
		}{{"expand", map[string]any{"count": 1}}, {"shrink", map[string]any{"count": 1}}} {
			if status != "SUCCEEDED" {
				break
			}
			began := time.Now()
			code, job, err := d.mutate(http.MethodPost, "/v1/clusters/"+id+"/"+step.op, step.body)
			if err != nil {
				return out, fmt.Errorf("%s: %s %s: %w", tenant, step.op, name, err)
			}
			if code != http.StatusAccepted {
				out = append(out, opResult{id, step.op, "", fmt.Sprintf("refused %d", code), 0})
				break
			}
			if status, err = d.waitJob(id, job); err != nil {
				return out, err
			}
			out = append(out, opResult{id, step.op, job, status, time.Since(began)})
		}
		began = time.Now()
		code, job, err := d.mutate(http.MethodDelete, "/v1/clusters/"+id, nil)
		if err != nil {
			return out, fmt.Errorf("%s: delete %s: %w", tenant, name, err)
		}
		if code != http.StatusAccepted {
			out = append(out, opResult{id, "delete", "", fmt.Sprintf("refused %d", code), 0})
			continue
		}
		if status, err = d.waitJob(id, job); err != nil {
			return out, err
		}
		out = append(out, opResult{id, "delete", job, status, time.Since(began)})
	}
	return out, nil
}

// mutate sends one operation with an Idempotency-Key, resending it with
// the same key after a 5xx, no answer or a 409 idempotency_in_flight, for
// up to two minutes, and returns the final status and the job it started.
func (d *deployment) mutate(method, path string, body any) (int, string, error) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	key := "nemesis-" + hex.EncodeToString(b)
	if body == nil {
		body = map[string]any{}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var out struct {
			Job struct {
				ID string `json:"id"`
			} `json:"job"`
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		status, header, err := d.callWithKey(method, path, key, body, &out)
		wait := 200 * time.Millisecond
		switch {
		case err == nil && status == http.StatusAccepted:
			return status, out.Job.ID, nil
		case err == nil && status == http.StatusConflict && out.Error.Code == api.CodeIdempotencyInFlight:
			if secs, perr := strconv.Atoi(header.Get("Retry-After")); perr == nil && secs > 0 {
				wait = time.Duration(secs) * time.Second
			}
			err = fmt.Errorf("an earlier attempt holds the key")
		case err == nil:
			return status, "", nil
		}
		if time.Now().After(deadline) {
			return 0, "", err
		}
		time.Sleep(wait)
	}
}

// latestJob returns the cluster's newest job.
func (d *deployment) latestJob(cluster string) (string, error) {
	var jobs struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	if _, err := d.call(http.MethodGet, "/v1/clusters/"+cluster+"/jobs?limit=1", nil, &jobs); err != nil {
		return "", err
	}
	if len(jobs.Items) == 0 {
		return "", fmt.Errorf("cluster %s has no job", cluster)
	}
	return jobs.Items[0].ID, nil
}

// waitJob waits up to ten minutes for the job to end and returns its
// status.
func (d *deployment) waitJob(cluster, job string) (string, error) {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		var j struct {
			Status string `json:"status"`
		}
		if _, err := d.call(http.MethodGet, "/v1/clusters/"+cluster+"/jobs/"+job, nil, &j); err != nil {
			return "", err
		}
		if terminal(j.Status) {
			return j.Status, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("job %s of cluster %s is still %s after ten minutes", job, cluster, j.Status)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// checkTenantEmpty checks that the tenant, every cluster deleted, counts
// no node and holds no host of its pool.
func (d *deployment) checkTenantEmpty(tenant string, hosts int) {
	d.t.Helper()
	var tv struct {
		Usage struct {
			Nodes    int `json:"nodes"`
			Clusters int `json:"clusters"`
		} `json:"usage"`
	}
	d.api(http.MethodGet, "/v1/tenants/"+tenant, nil, &tv)
	require.Zero(d.t, tv.Usage.Nodes, "tenant %s counts nodes after every cluster was deleted", tenant)
	pool := static.NewPool(dynamostore.New(dynamostore.NewEmulatorClient(os.Getenv("HEDDLE_DYNAMODB_ENDPOINT")), d.ready.Table), nil)
	hs, err := pool.List(context.Background(), tenant, "rack")
	require.NoError(d.t, err)
	require.Len(d.t, hs, hosts)
	for _, h := range hs {
		require.NotEqual(d.t, static.StatusTaken, h.Status, "host %s of tenant %s is still taken: a node was left behind", h.ID, tenant)
	}
}

// historyTask is what the history check reads of a task.
type historyTask struct {
	ID        string   `json:"id"`
	Action    string   `json:"action"`
	Status    string   `json:"status"`
	Join      bool     `json:"join"`
	DependsOn []string `json:"dependsOn"`
	Attempts  []struct {
		Attempt   int       `json:"attempt"`
		StartedAt time.Time `json:"startedAt"`
		EndedAt   time.Time `json:"endedAt"`
		Status    string    `json:"status"`
	} `json:"attempts"`
}

// historyStats gathers the history checks of several clusters.
type historyStats struct {
	attempts, retries int
	violations        []string
	progress          []progress // every attempt's start and end
}

// progress is an attempt's start or end.
type progress struct {
	at   time.Time
	what string
}

func (h *historyStats) add(o historyStats) {
	h.attempts += o.attempts
	h.retries += o.retries
	h.violations = append(h.violations, o.violations...)
	h.progress = append(h.progress, o.progress...)
}

// slowestRecovery is the longest time from one of the injected faults
// (before until) to the next task attempt that started or ended.
func (h *historyStats) slowestRecovery(injected []injection, until time.Time) (time.Duration, string) {
	sort.Slice(h.progress, func(i, j int) bool { return h.progress[i].at.Before(h.progress[j].at) })
	var slowest time.Duration
	kind := "none"
	for _, in := range injected {
		i := sort.Search(len(h.progress), func(i int) bool { return h.progress[i].at.After(in.at) })
		if i == len(h.progress) || in.at.After(until) {
			continue
		}
		if gap := h.progress[i].at.Sub(in.at); gap > slowest {
			slowest, kind = gap, in.kind+" (then "+h.progress[i].what+")"
		}
	}
	return slowest, kind
}

// longestPause is the longest time between two consecutive attempt starts
// or ends, and what came before and after it.
func (h *historyStats) longestPause() (time.Duration, string) {
	sort.Slice(h.progress, func(i, j int) bool { return h.progress[i].at.Before(h.progress[j].at) })
	var longest time.Duration
	what := "none"
	for i := 1; i < len(h.progress); i++ {
		if gap := h.progress[i].at.Sub(h.progress[i-1].at); gap > longest {
			longest, what = gap, h.progress[i-1].what+" -> "+h.progress[i].what
		}
	}
	return longest, what
}

// checkHistory reads every task of every job of the cluster with its
// attempts and checks their order: no attempt of a task started before
// each task it depends on had first succeeded (a join's success is its
// last dependency's), and no attempt started before the one before it of
// the same task had ended; tolerance allows for the processes' clocks
// being that far apart.
func (d *deployment) checkHistory(cluster string, tolerance time.Duration) historyStats {
	d.t.Helper()
	var out historyStats
	var jobs struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	d.api(http.MethodGet, "/v1/clusters/"+cluster+"/jobs?limit=100", nil, &jobs)
	for _, j := range jobs.Items {
		var ids []string
		for cursor := ""; ; {
			var page struct {
				Items []struct {
					ID string `json:"id"`
				} `json:"items"`
				NextCursor string `json:"nextCursor"`
			}
			path := "/v1/clusters/" + cluster + "/jobs/" + j.ID + "/tasks?limit=500"
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			d.api(http.MethodGet, path, nil, &page)
			for _, it := range page.Items {
				ids = append(ids, it.ID)
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		tasks := map[string]*historyTask{}
		for _, id := range ids {
			var task historyTask
			d.api(http.MethodGet, "/v1/clusters/"+cluster+"/jobs/"+j.ID+"/tasks/"+url.PathEscape(id), nil, &task)
			tasks[id] = &task
		}
		var finished func(id string, seen map[string]bool) (time.Time, bool)
		finished = func(id string, seen map[string]bool) (time.Time, bool) {
			task, ok := tasks[id]
			if !ok || task.Status != "SUCCEEDED" || seen[id] {
				return time.Time{}, false
			}
			seen[id] = true
			if task.Join || len(task.Attempts) == 0 {
				var last time.Time
				for _, dep := range task.DependsOn {
					at, ok := finished(dep, seen)
					if !ok {
						return time.Time{}, false
					}
					if at.After(last) {
						last = at
					}
				}
				return last, true
			}
			for _, a := range task.Attempts {
				if a.Status == "SUCCEEDED" && !a.EndedAt.IsZero() {
					return a.EndedAt, true
				}
			}
			return time.Time{}, false
		}
		for _, id := range ids {
			task := tasks[id]
			attempts := slices.Clone(task.Attempts)
			sort.Slice(attempts, func(a, b int) bool { return attempts[a].Attempt < attempts[b].Attempt })
			for k, a := range attempts {
				out.attempts++
				if k > 0 {
					out.retries++
				}
				label := fmt.Sprintf("%s %s attempt %d", task.ID, task.Action, a.Attempt)
				out.progress = append(out.progress, progress{a.StartedAt, label + " started"})
				if !a.EndedAt.IsZero() {
					out.progress = append(out.progress, progress{a.EndedAt, label + " " + a.Status})
				}
				for _, dep := range task.DependsOn {
					if at, ok := finished(dep, map[string]bool{}); ok && a.StartedAt.Before(at.Add(-tolerance)) {
						out.violations = append(out.violations, fmt.Sprintf("job %s: %s (%s) attempt %d started at %s, before its dependency %s succeeded at %s",
							j.ID, task.ID, task.Action, a.Attempt, a.StartedAt.Format(time.RFC3339Nano), dep, at.Format(time.RFC3339Nano)))
					}
				}
				if k > 0 {
					prev := attempts[k-1]
					switch {
					case prev.EndedAt.IsZero() && prev.Status != "RUNNING":
						// Ended by the janitor (its lease ran out: the test
						// killed its worker) with no end time of its own.
					case prev.EndedAt.IsZero():
						out.violations = append(out.violations, fmt.Sprintf("job %s: %s attempt %d started at %s while attempt %d (%s) had not ended",
							j.ID, task.ID, a.Attempt, a.StartedAt.Format(time.RFC3339Nano), prev.Attempt, prev.Status))
					case a.StartedAt.Before(prev.EndedAt.Add(-tolerance)):
						out.violations = append(out.violations, fmt.Sprintf("job %s: %s attempt %d started at %s, before attempt %d ended at %s",
							j.ID, task.ID, a.Attempt, a.StartedAt.Format(time.RFC3339Nano), prev.Attempt, prev.EndedAt.Format(time.RFC3339Nano)))
					}
				}
			}
		}
	}
	return out
}
