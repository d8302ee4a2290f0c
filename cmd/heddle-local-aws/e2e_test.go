package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/idempotency"
	"github.com/heddle-io/heddle/internal/motoserver"
	"github.com/heddle-io/heddle/internal/provider/providertest"
	"github.com/heddle-io/heddle/internal/provider/static"
	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store/dynamostore"
)

// superKey is the superadmin's key, registered by the api function's cold
// start from HEDDLE_BOOTSTRAP_KEY (32 zero bytes, as in functions/api's
// fixtures).
const superKey = "hdl_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

// bin holds the binaries the tests run, built once by TestMain: the three
// bootstraps as make local-aws builds them, the CLI and this command.
var bin string

func TestMain(m *testing.M) {
	code := func() int {
		if os.Getenv("HEDDLE_DYNAMODB_ENDPOINT") == "" || os.Getenv("HEDDLE_SQS_ENDPOINT") == "" {
			return m.Run() // the tests skip (or fail under CI) on their own
		}
		dir, err := os.MkdirTemp("", "heddle-local-aws-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		if err := buildAll(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		bin = dir
		return m.Run()
	}()
	os.Exit(code)
}

// buildAll builds what make local-aws-build builds, with the same flags.
func buildAll(dir string) error {
	builds := [][]string{
		{"-o", filepath.Join(dir, "heddle"), "../heddle"},
		{"-o", filepath.Join(dir, "heddle-local-aws"), "."},
	}
	for _, fn := range []string{"api", "worker", "janitor"} {
		builds = append(builds, []string{"-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w",
			"-o", filepath.Join(dir, "lambda", fn, "bootstrap"), "../../functions/" + fn})
	}
	for _, b := range builds {
		cmd := exec.Command("go", append([]string{"build"}, b...)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %v: %v\n%s", b, err, out)
		}
	}
	return nil
}

func need(t *testing.T, name, script string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		how := fmt.Sprintf(`%s is unset: run %s start and eval "$(%s env)"`, name, script, script)
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true requires the local-aws tests: " + how)
		}
		t.Skip(how)
	}
	return v
}

// deployment is one heddle-local-aws process and what it printed.
type deployment struct {
	t     *testing.T
	cmd   *exec.Cmd
	ready ready
	state string
	cli   string // the CLI's config file
	key   string // HEDDLE_KEY for the CLI (the superadmin's until a tenant's is set)
	log   *bytes.Buffer
}

func setup(t *testing.T, extra ...string) *deployment {
	t.Helper()
	ddbEndpoint := need(t, "HEDDLE_DYNAMODB_ENDPOINT", "scripts/dynamodb-local.sh")
	sqsEndpoint := need(t, "HEDDLE_SQS_ENDPOINT", "scripts/fauxqs.sh")
	motoserver.RequirePython(t) // heddle-local-aws runs moto's KMS
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	stage := "la" + hex.EncodeToString(suffix)
	d := &deployment{t: t, state: t.TempDir(), key: superKey, log: &bytes.Buffer{}}
	d.cli = filepath.Join(d.state, "cli.yaml")
	args := append([]string{"--listen", "127.0.0.1:0", "--stage", stage, "--state-dir", d.state,
		"--bin-dir", filepath.Join(bin, "lambda"), "--heddle", filepath.Join(bin, "heddle"),
		// The api's timeout at template.yaml's most (30 s less a second for
		// the front door): onboarding a tenant makes four queues and a
		// mapping, which on a loaded machine has taken over the default 15 s.
		"--janitor-every", "3s", "--janitor-concurrency", "2", "--worker-timeout", "60s", "--api-timeout", "29s"}, extra...)
	d.cmd = exec.Command(filepath.Join(bin, "heddle-local-aws"), args...)
	d.cmd.Env = append(os.Environ(), "HEDDLE_BOOTSTRAP_KEY="+superKey)
	d.cmd.Stderr = d.log
	// If the test binary dies (a -timeout), heddle-local-aws is told to stop
	// and stops its processes; it never outlives the test.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	stdout, err := d.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, d.cmd.Start())
	t.Cleanup(func() { d.stop(ddbEndpoint, sqsEndpoint) })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "heddle-local-aws did not start:\n%s", d.log)
	require.NoError(t, json.Unmarshal([]byte(line), &d.ready))
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return d
}

// stop stops the deployment and removes what it made; any process it
// leaves (it was killed before it could stop them) is killed by pid.
func (d *deployment) stop(ddbEndpoint, sqsEndpoint string) {
	var pids []int
	if s, err := d.stats(); err == nil {
		for _, f := range s.Functions {
			pids = append(pids, f.PIDs...)
		}
		if s.Fargate.PID != 0 {
			pids = append(pids, s.Fargate.PID)
		}
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(45 * time.Second):
		_ = d.cmd.Process.Kill()
		<-done
	}
	for _, pid := range pids {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	if d.t.Failed() {
		d.t.Logf("heddle-local-aws's log:\n%s", d.log)
		for _, name := range []string{"api", "worker", "janitor", "fargate-worker"} {
			b, _ := os.ReadFile(filepath.Join(d.state, "logs", name+".log"))
			d.t.Logf("%s's log (last 4 KB):\n%s", name, b[max(0, len(b)-4096):])
		}
		// The whole logs, kept where HEDDLE_TEST_LOGS says (CI can keep
		// them as artifacts): the last 4 KB rarely hold the cause.
		if dir := os.Getenv("HEDDLE_TEST_LOGS"); dir != "" {
			keep := filepath.Join(dir, d.t.Name()+"-"+d.ready.Prefix)
			if err := os.CopyFS(keep, os.DirFS(filepath.Join(d.state, "logs"))); err != nil {
				d.t.Logf("keeping the logs in %s: %v", keep, err)
			} else {
				d.t.Logf("the whole logs: %s", keep)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = dynamostore.NewEmulatorClient(ddbEndpoint).DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(d.ready.Table)})
	q := sqsqueue.NewEmulatorClient(sqsEndpoint)
	if out, err := q.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(d.ready.Prefix)}); err == nil {
		for _, url := range out.QueueUrls {
			_, _ = q.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		}
	}
}

func (d *deployment) stats() (stats, error) {
	var s stats
	resp, err := testHTTP.Get(d.ready.Lambda + "/local-aws/stats")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	return s, json.NewDecoder(resp.Body).Decode(&s)
}

// killIdle SIGKILLs an idle environment of function name, if it has one.
func (d *deployment) killIdle(t *testing.T, name string) bool {
	t.Helper()
	resp, err := testHTTP.Post(d.ready.Lambda+"/local-aws/kill-idle/"+name, "", nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	var killed struct {
		PID int `json:"pid"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&killed))
	return killed.PID != 0
}

// killBusy SIGKILLs an environment of function name in the middle of an
// invocation, looking for one every 10 ms for up to 2 s (s is the first
// look). Invocations last milliseconds since a worker runs what it takes
// rather than handing it back, so a look every second or so found none in
// a whole CI run of TestChaos.
func (d *deployment) killBusy(t *testing.T, s stats, name string) bool {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); ; {
		if pids := s.Functions[name].Busy; len(pids) > 0 && syscall.Kill(pids[mrand.IntN(len(pids))], syscall.SIGKILL) == nil {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
		var err error
		s, err = d.stats()
		require.NoError(t, err)
	}
}

// heddle runs the CLI against the front door and returns its stdout.
func (d *deployment) heddle(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(bin, "heddle"), args...)
	cmd.Env = append(os.Environ(), "HEDDLE_ENDPOINT="+d.ready.Endpoint, "HEDDLE_KEY="+d.key, "HEDDLE_CONFIG="+d.cli)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("heddle %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), err
}

func (d *deployment) mustHeddle(args ...string) string {
	d.t.Helper()
	out, err := d.heddle(args...)
	require.NoError(d.t, err)
	return out
}

// registerHosts puts n OpenSSH test hosts in the tenant's pool of the
// static provider rack, sealing their key with moto's KMS key as
// the functions do. (No API route registers static hosts yet: issue 21.)
func (d *deployment) registerHosts(tenant string, n int) {
	d.t.Helper()
	d.registerHostsAs(tenant, n, "h")
}

// registerHostsAs registers n hosts with ids <prefix>0...
func (d *deployment) registerHostsAs(tenant string, n int, prefix string) {
	d.t.Helper()
	hosts := providertest.StartOpenSSH(d.t)
	require.GreaterOrEqual(d.t, len(hosts.Hosts), n)
	client := kms.New(kms.Options{Region: region, BaseEndpoint: aws.String(d.ready.KMS),
		Credentials: credentials.NewStaticCredentialsProvider("heddle", "heddle", "")})
	keyring := secrets.NewKeyring(secrets.NewKMSKey(client, d.ready.KMSKey))
	pool := static.NewPool(dynamostore.New(dynamostore.NewEmulatorClient(os.Getenv("HEDDLE_DYNAMODB_ENDPOINT")), d.ready.Table), keyring)
	// Hosts from the end of the list: the "50 hosts at once" tests start
	// at its head.
	for i, h := range hosts.Hosts[len(hosts.Hosts)-n:] {
		addr, port, _ := strings.Cut(h.Address, ":")
		var p int
		_, _ = fmt.Sscan(port, &p)
		_, err := pool.Register(context.Background(), tenant, "rack", static.HostSpec{ID: fmt.Sprintf("%s%d", prefix, i), Address: addr, Port: p,
			User: hosts.User, PrivateKey: secrets.NewSecret(string(hosts.KeyPEM)), HostKey: h.HostKey})
		require.NoError(d.t, err)
	}
}

// TestThroughTheRealBinaries is make demo's path on the AWS topology: the
// first tenant bootstrapped as infra/README.md says, a catalog applied, a
// cluster created, expanded and deleted, all through the CLI and the front
// door, the api, worker and janitor bootstraps, the mapping onboarding made
// and the schedule.
func TestThroughTheRealBinaries(t *testing.T) {
	t.Parallel()
	d := setup(t)
	need(t, "HEDDLE_SSH_HOSTS", "scripts/sshd-hosts.sh")

	d.createTenant("2", "10", "4")

	s, err := d.stats()
	require.NoError(t, err)
	require.Len(t, s.Mappings, 1, "onboarding made the tenant's mapping through the Lambda API")
	require.Equal(t, int32(4), *s.Mappings[0].ScalingConfig.MaximumConcurrency)
	require.True(t, strings.HasSuffix(s.Mappings[0].EventSourceArn, ":"+d.ready.Prefix+"acme.fifo"))
	require.Equal(t, fmt.Sprintf("arn:aws:lambda:%s:%s:function:heddle-%s-worker:live", region, accountID, strings.TrimPrefix(d.ready.Table, "heddle-")),
		s.Mappings[0].FunctionArn, "the mapping invokes the worker's alias, as template.yaml's HEDDLE_WORKER_FUNCTION says")
	require.Zero(t, s.Aliases["worker"], "no deploy runs: the alias is the current release's")
	resp, err := testHTTP.Post(d.ready.Lambda+"/local-aws/shift?previous=0.5", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusConflict, resp.StatusCode, "no previous release to shift to")

	d.registerHosts("acme", 3)
	d.mustHeddle("apply", "-f", "testdata/static-catalog.yaml")

	// A webhook to a receiver on this machine: heddle-local-aws allows
	// loopback receivers by default (--webhooks-allow-loopback), as the
	// local server does; AWS never does.
	var delivered atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"cluster.status"`) && r.Header.Get("Heddle-Signature") != "" {
			delivered.Add(1)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	require.Contains(t, d.mustHeddle("webhooks", "add", receiver.URL+"/heddle", "--types", "cluster.status"), "secret")

	out := d.mustHeddle("clusters", "create", "pair", "--template", "pair", "--size", "2", "-o", "json")
	var job struct {
		Cluster struct {
			ID string `json:"id"`
		} `json:"cluster"`
		Job struct {
			ID string `json:"id"`
		} `json:"job"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &job), out)
	d.mustHeddle("jobs", "watch", job.Cluster.ID, job.Job.ID)
	require.Equal(t, "ACTIVE", d.clusterStatus(job.Cluster.ID))
	requireSentOnce(t, d.jobTasks(job.Cluster.ID, job.Job.ID))

	d.mustHeddle("clusters", "expand", job.Cluster.ID, "--count", "1", "--wait")
	require.Equal(t, "ACTIVE", d.clusterStatus(job.Cluster.ID))
	d.mustHeddle("clusters", "delete", job.Cluster.ID, "--wait")
	require.Equal(t, "TERMINATED", d.clusterStatus(job.Cluster.ID))

	// Deliveries go out on the janitor's passes (every 3 s here); this
	// bound is for a loaded machine, not a measure.
	deadline := time.Now().Add(2 * time.Minute)
	for delivered.Load() == 0 {
		require.True(t, time.Now().Before(deadline), "no signed cluster.status delivery reached the loopback receiver")
		time.Sleep(200 * time.Millisecond)
	}

	s, err = d.stats()
	require.NoError(t, err)
	require.Positive(t, s.Functions["worker"].Invocations, "the mapping invoked the worker")
	require.Positive(t, s.Functions["janitor"].Invocations, "the schedule invoked the janitor")
	require.Positive(t, s.Fargate.Starts, "heddle worker runs as the Fargate task")
	for name, f := range s.Functions {
		t.Logf("%s: %d invocations, %d cold starts, %d errors, %d ms billed", name, f.Invocations, f.ColdStarts, f.Errors, f.BilledMs)
	}
}

func (d *deployment) clusterStatus(id string) string {
	d.t.Helper()
	var c struct {
		Status string `json:"status"`
	}
	out := d.mustHeddle("clusters", "show", id, "-o", "json")
	require.NoError(d.t, json.Unmarshal([]byte(out), &c), out)
	return c.Status
}

// call sends one API request through the front door, retrying for a
// minute what API Gateway answered with a 5xx or could not answer (a
// killed api environment), and returns the last status. It is safe in any
// goroutine. Only for requests that may be repeated: see createCluster.
func (d *deployment) call(method, path string, body, out any) (int, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		status, err := d.callOnce(method, path, body, out)
		if err == nil && status < 500 {
			return status, nil
		}
		if time.Now().After(deadline) {
			return 0, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// callOnce sends one API request through the front door, once. A 5xx is
// returned with an error.
func (d *deployment) callOnce(method, path string, body, out any) (int, error) {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return 0, err
		}
	}
	req, err := http.NewRequest(method, d.ready.Endpoint+path, bytes.NewReader(payload))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+d.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := testHTTP.Do(req)
	if err != nil {
		return 0, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 500 {
		return resp.StatusCode, fmt.Errorf("%s %s answered %d: %s", method, path, resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s answered %d: %s", method, path, resp.StatusCode, data)
		}
	}
	return resp.StatusCode, nil
}

// createCluster asks for a cluster named name (unique in the test) and
// returns its id, as the public client does when the api may die under
// it: with an Idempotency-Key, sent again with the same key after a 5xx,
// no answer, or a 409 idempotency_in_flight. An api environment killed
// after the submission committed, before it answered, leaves API Gateway
// to answer 502 for a cluster that exists and runs; the resend is answered
// from the key's record, committed with the job (Idempotent-Replayed), and
// makes no second cluster. One killed before its commit leaves the key
// claimed for idempotency.DefaultInFlight (30 s), then a resend takes it
// over. TestChaos checks there is one cluster per name at the end.
func (d *deployment) createCluster(name, template string, size int) (string, error) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	key := "chaos-" + name + "-" + hex.EncodeToString(b)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var out struct {
			Cluster struct {
				ID string `json:"id"`
			} `json:"cluster"`
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		status, header, err := d.callWithKey(http.MethodPost, "/v1/clusters", key, map[string]any{"name": name, "template": template, "size": size}, &out)
		wait := 200 * time.Millisecond
		switch {
		case err == nil && status == http.StatusAccepted:
			if header.Get(idempotency.ReplayedHeader) == "true" {
				d.t.Logf("create %s: answered from its key's record (%s): an earlier attempt committed", name, out.Cluster.ID)
			}
			return out.Cluster.ID, nil
		case err == nil && status == http.StatusConflict && out.Error.Code == api.CodeIdempotencyInFlight:
			if secs, perr := strconv.Atoi(header.Get("Retry-After")); perr == nil && secs > 0 {
				wait = time.Duration(secs) * time.Second
			}
			err = fmt.Errorf("an earlier attempt holds the key")
		case err == nil:
			return "", fmt.Errorf("create %s answered %d", name, status)
		}
		d.t.Logf("create %s: %v; asking again with the same key", name, err)
		if time.Now().After(deadline) {
			return "", err
		}
		time.Sleep(wait)
	}
}

// callWithKey sends one API request with an Idempotency-Key through the
// front door, once, and returns the answer's status and headers. A 5xx is
// returned with an error.
func (d *deployment) callWithKey(method, path, key string, body, out any) (int, http.Header, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequest(method, d.ready.Endpoint+path, bytes.NewReader(payload))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+d.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(idempotency.Header, key)
	resp, err := testHTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return resp.StatusCode, resp.Header, err
	}
	if resp.StatusCode >= 500 {
		return resp.StatusCode, resp.Header, fmt.Errorf("%s %s answered %d: %s", method, path, resp.StatusCode, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return resp.StatusCode, resp.Header, fmt.Errorf("%s %s answered %d: %s", method, path, resp.StatusCode, data)
	}
	return resp.StatusCode, resp.Header, nil
}

// checkOneClusterPerName checks that the tenant has exactly the clusters
// named, one each: no create made a second cluster.
func (d *deployment) checkOneClusterPerName(names []string) {
	d.t.Helper()
	var list struct {
		Items []clusterView `json:"items"`
	}
	d.api(http.MethodGet, "/v1/clusters?all=true&limit=1000", nil, &list)
	var got []string
	for _, c := range list.Items {
		got = append(got, c.Name)
	}
	slices.Sort(got)
	want := slices.Clone(names)
	slices.Sort(want)
	require.Equal(d.t, want, got, "one cluster per create, none made twice")
}

// api is call for the test's own goroutine.
func (d *deployment) api(method, path string, body, out any) int {
	d.t.Helper()
	status, err := d.call(method, path, body, out)
	require.NoError(d.t, err)
	return status
}

// createTenant bootstraps tenant acme as infra/README.md says, with the
// superadmin's key through the CLI, and uses its admin's key from then on.
func (d *deployment) createTenant(maxClusters, maxNodes, workers string) {
	d.t.Helper()
	created := d.mustHeddle("tenants", "create", "acme", "--max-clusters", maxClusters, "--max-nodes", maxNodes,
		"--workers", workers, "--admin", "ann", "-o", "json")
	var tenant struct {
		AdminKey struct {
			Secret string `json:"secret"`
		} `json:"adminKey"`
	}
	require.NoError(d.t, json.Unmarshal([]byte(created), &tenant))
	d.key = tenant.AdminKey.Secret
}

type clusterView struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Status   string `json:"status"`
	Nodes    []any  `json:"nodes"`
	Progress *struct {
		JobID  string `json:"jobId"`
		Status string `json:"status"`
	} `json:"progress"`
}

// TestChaos kills api, worker and Fargate worker processes with SIGKILL at
// random while three clusters are created at once: worker environments in
// the middle of an invocation (a batch half done, a task running), idle
// ones, api environments and `heddle worker` (chaos-catalog.yaml sends one
// action per node to it). The emulator starts new environments (cold
// starts) and the ECS service a new task, and heddle must still end every
// job with no task lost, none run on a node after its deletion, no node
// created twice (no host taken twice), and the tenant's counters equal to
// the live nodes.
//
// A killed worker's batch comes back within the engine's visibility (60
// s): the worker holds it there (engine.HandleBatch), not at the queue's
// visibility timeout (six times the worker's timeout). Its running task's
// lease (90 s) then runs out and the janitor retries it.
func TestChaos(t *testing.T) {
	t.Parallel()
	d := setup(t)
	need(t, "HEDDLE_SSH_HOSTS", "scripts/sshd-hosts.sh")
	const clusters, size = 3, 2
	d.createTenant("5", "20", "4")
	d.registerHosts("acme", clusters*size)
	d.mustHeddle("apply", "-f", "testdata/chaos-catalog.yaml")

	ids := make([]string, clusters)
	errs := make([]error, clusters)
	var mu sync.Mutex // ids and errs, written by the creates, read by ended
	var wg sync.WaitGroup
	for i := range clusters {
		wg.Go(func() {
			id, err := d.createCluster(fmt.Sprintf("c%d", i), "pair", size)
			mu.Lock()
			ids[i], errs[i] = id, err
			mu.Unlock()
		})
	}
	// Kill while the jobs run (at most a minute): a worker environment
	// running an invocation when there is one, else an idle one; an api
	// environment likewise; the Fargate task.
	kills := map[string]int{}
	ended := func() bool {
		mu.Lock()
		created := slices.Clone(ids)
		mu.Unlock()
		for _, id := range created {
			if id == "" {
				return false
			}
			var v clusterView
			if _, err := d.call(http.MethodGet, "/v1/clusters/"+id, nil, &v); err != nil || v.Progress == nil || !terminal(v.Progress.Status) {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && !ended(); {
		time.Sleep(time.Duration(300+mrand.IntN(1200)) * time.Millisecond)
		s, err := d.stats()
		require.NoError(t, err)
		names := []string{"worker", "worker", "worker", "api", "fargate"}
		name := names[mrand.IntN(len(names))]
		switch {
		case name == "fargate":
			if s.Fargate.PID != 0 && syscall.Kill(s.Fargate.PID, syscall.SIGKILL) == nil {
				kills[name]++
			}
		case name == "api" || kills["worker (busy)"] < 2:
			// Two workers killed mid-invocation prove the point; each
			// costs its running task's lease (90 s) before the retry, so
			// more would only stretch the run.
			if d.killBusy(t, s, name) {
				kills[name+" (busy)"]++
			} else if d.killIdle(t, name) {
				kills[name]++
			}
		default:
			if d.killIdle(t, name) {
				kills[name]++
			}
		}
	}
	wg.Wait()
	t.Logf("killed: %v", kills)
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Positive(t, kills["worker (busy)"], "a worker was killed in the middle of an invocation")
	names := make([]string, clusters)
	for i := range names {
		names[i] = fmt.Sprintf("c%d", i)
	}
	d.checkOneClusterPerName(names)

	// Every job ends.
	views := make([]clusterView, clusters)
	for i, id := range ids {
		deadline := time.Now().Add(10 * time.Minute)
		for {
			views[i] = clusterView{}
			d.api(http.MethodGet, "/v1/clusters/"+id, nil, &views[i])
			if views[i].Progress != nil && terminal(views[i].Progress.Status) {
				break
			}
			require.True(t, time.Now().Before(deadline), "cluster %s's job did not end: %+v", id, views[i])
			time.Sleep(time.Second)
		}
	}
	d.checkCounters(clusters * size)

	s, err := d.stats()
	require.NoError(t, err)
	require.Greater(t, s.Functions["worker"].ColdStarts+s.Functions["api"].ColdStarts, int64(2), "killed environments were replaced by cold starts")
	for name, f := range s.Functions {
		t.Logf("%s: %d invocations, %d cold starts, %d crashes, %d errors", name, f.Invocations, f.ColdStarts, f.Crashes, f.Errors)
	}
	for i, v := range views {
		t.Logf("cluster %s: %s, job %s", ids[i], v.Status, v.Progress.Status)
		if v.Status == "TERMINATED" {
			continue
		}
		out, err := d.heddle("clusters", "delete", ids[i], "--wait")
		t.Logf("heddle clusters delete %s --wait: %v\n%s", ids[i], err, out)
		require.NoError(t, err)
	}
	// Every job's outcome and message, so a failure below says why.
	t.Logf("after the deletes:\n%s", d.describeClusters())
	d.checkCounters(clusters * size)
	for _, id := range ids {
		d.checkJobs(id)
	}
	var tenant struct {
		Usage struct {
			Nodes int `json:"nodes"`
		} `json:"usage"`
	}
	d.api(http.MethodGet, "/v1/tenants/acme", nil, &tenant)
	require.Zero(t, tenant.Usage.Nodes, "every node deleted; now:\n%s", d.describeClusters())
}

// describeClusters lists every cluster of the tenant with its status and
// nodes, and each of its jobs with its outcome and status message.
func (d *deployment) describeClusters() string {
	d.t.Helper()
	var list struct {
		Items []clusterView `json:"items"`
	}
	d.api(http.MethodGet, "/v1/clusters?all=true", nil, &list)
	var b strings.Builder
	for _, c := range list.Items {
		var v clusterView
		d.api(http.MethodGet, "/v1/clusters/"+c.ID, nil, &v)
		fmt.Fprintf(&b, "cluster %s: %s, %d nodes\n", c.ID, v.Status, len(v.Nodes))
		var jobs struct {
			Items []struct {
				ID            string `json:"id"`
				Operation     string `json:"operation"`
				Status        string `json:"status"`
				StatusMessage string `json:"statusMessage"`
				TaskDone      int    `json:"taskDone"`
				TaskTotal     int    `json:"taskTotal"`
			} `json:"items"`
		}
		d.api(http.MethodGet, "/v1/clusters/"+c.ID+"/jobs?limit=100", nil, &jobs)
		for _, j := range jobs.Items {
			fmt.Fprintf(&b, "  job %s %s: %s (%d/%d tasks) %s\n", j.ID, j.Operation, j.Status, j.TaskDone, j.TaskTotal, j.StatusMessage)
		}
	}
	return b.String()
}

// taskView is what checkJobs reads of a task.
type taskView struct {
	ID       string `json:"id"`
	NodeID   string `json:"nodeId"`
	Action   string `json:"action"`
	Status   string `json:"status"`
	Rollback bool   `json:"rollback"`
	Attempts []struct {
		Attempt   int       `json:"attempt"`
		StartedAt time.Time `json:"startedAt"`
		Status    string    `json:"status"`
	} `json:"attempts"`
}

// checkJobs reads every job of the cluster and every task of each, and
// checks that every job ended and left no task READY or RUNNING (none
// lost), that a job that succeeded ran every task of its plan, that no
// node was created twice (one successful create per node, over all jobs),
// and that nothing ran on a node after its deletion started.
func (d *deployment) checkJobs(cluster string) {
	d.t.Helper()
	var jobs struct {
		Items []struct {
			ID        string    `json:"id"`
			Status    string    `json:"status"`
			StartedAt time.Time `json:"startedAt"`
		} `json:"items"`
	}
	d.api(http.MethodGet, "/v1/clusters/"+cluster+"/jobs?limit=100", nil, &jobs)
	require.NotEmpty(d.t, jobs.Items)
	created := map[string]int{}       // node -> successful creates
	deleted := map[string]time.Time{} // node -> when its successful delete started
	ran := map[string][]time.Time{}   // node -> when each attempt of its other tasks started
	for _, j := range jobs.Items {
		require.True(d.t, terminal(j.Status), "job %s of %s is %s", j.ID, cluster, j.Status)
		var tasks []taskView
		cursor := ""
		for {
			var page struct {
				Items      []taskView `json:"items"`
				NextCursor string     `json:"nextCursor"`
			}
			path := "/v1/clusters/" + cluster + "/jobs/" + j.ID + "/tasks?limit=500"
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			d.api(http.MethodGet, path, nil, &page)
			tasks = append(tasks, page.Items...)
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		// A job that never started (its submission was undone: the api
		// died while writing it) may have no task written at all.
		require.True(d.t, len(tasks) > 0 || j.StartedAt.IsZero(), "job %s of %s started and has no task", j.ID, cluster)
		for _, tv := range tasks {
			var task taskView // the task's own view has every attempt
			d.api(http.MethodGet, "/v1/clusters/"+cluster+"/jobs/"+j.ID+"/tasks/"+url.PathEscape(tv.ID), nil, &task)
			if j.StartedAt.IsZero() {
				// A job withdrawn before it started (the api died between
				// its first transaction and its start, and the janitor
				// undid it) keeps its plan as written, roots READY, for a
				// retry to send; none of it may have run.
				require.Empty(d.t, task.Attempts, "task %s of job %s, which never started, ran", task.ID, j.ID)
				require.NotEqual(d.t, "RUNNING", task.Status, "task %s of job %s, which never started", task.ID, j.ID)
				continue
			}
			require.NotContains(d.t, []string{"READY", "RUNNING"}, task.Status, "task %s of the ended job %s (%s) was lost", task.ID, j.ID, j.Status)
			if j.Status == "SUCCEEDED" && !task.Rollback {
				require.Equal(d.t, "SUCCEEDED", task.Status, "task %s of the successful job %s", task.ID, j.ID)
			}
			for _, a := range task.Attempts {
				switch {
				case task.Action == "create" && a.Status == "SUCCEEDED":
					created[task.NodeID]++
				case task.Action == "delete" && a.Status == "SUCCEEDED":
					deleted[task.NodeID] = a.StartedAt
				case task.NodeID != "" && task.Action != "delete":
					ran[task.NodeID] = append(ran[task.NodeID], a.StartedAt)
				}
			}
		}
	}
	for node, n := range created {
		require.Equal(d.t, 1, n, "node %s was created once", node)
	}
	for node, at := range deleted {
		for _, started := range ran[node] {
			require.False(d.t, started.After(at), "a task ran on node %s at %s, after its deletion started at %s", node, started, at)
		}
	}
}

func terminal(jobStatus string) bool {
	return slices.Contains([]string{"SUCCEEDED", "FAILED", "ABORTED"}, jobStatus)
}

// checkCounters compares the tenant's node counter with its clusters' live
// nodes and the static pool's taken hosts.
func (d *deployment) checkCounters(hosts int) {
	d.t.Helper()
	var list struct {
		Items []clusterView `json:"items"`
	}
	d.api(http.MethodGet, "/v1/clusters?all=true", nil, &list)
	live := 0
	for _, c := range list.Items {
		var v clusterView
		d.api(http.MethodGet, "/v1/clusters/"+c.ID, nil, &v)
		if v.Status != "TERMINATED" {
			live += len(v.Nodes)
		}
	}
	var tenant struct {
		Usage struct {
			Nodes int `json:"nodes"`
		} `json:"usage"`
	}
	d.api(http.MethodGet, "/v1/tenants/acme", nil, &tenant)
	require.Equal(d.t, live, tenant.Usage.Nodes, "the tenant's node counter equals its live nodes")
	pool := static.NewPool(dynamostore.New(dynamostore.NewEmulatorClient(os.Getenv("HEDDLE_DYNAMODB_ENDPOINT")), d.ready.Table), nil)
	hs, err := pool.List(context.Background(), "acme", "rack")
	require.NoError(d.t, err)
	require.Len(d.t, hs, hosts)
	taken := 0
	for _, h := range hs {
		if h.Status == static.StatusTaken {
			taken++
		}
	}
	require.Equal(d.t, live, taken, "one host per live node, none taken twice")
}

// TestFrontDoorRefusesBadInput sends what API Gateway and Lambda refuse
// through the real deployment.
func TestFrontDoorRefusesBadInput(t *testing.T) {
	t.Parallel()
	d := setup(t)
	d.api(http.MethodGet, "/v1/status", nil, nil) // a warm api
	before, err := d.stats()
	require.NoError(t, err)

	// Over API Gateway's 10 MB: refused before the function is invoked.
	req, _ := http.NewRequest(http.MethodPost, d.ready.Endpoint+"/v1/catalog", bytes.NewReader(make([]byte, 10*1024*1024+1)))
	req.Header.Set("Content-Type", "application/yaml")
	resp, err := testHTTP.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	require.JSONEq(t, `{"message":"Request Entity Too Large"}`, string(b))

	// Events that are not API Gateway's, straight to the function through
	// Lambda's Invoke: a failed invocation, and the environment lives on.
	for _, payload := range []string{`not json`, `{"version":"2.0","requestContext":{"http":{"method":"GET"}},"rawPath":7}`} {
		resp, err := testHTTP.Post(d.ready.Lambda+"/2015-03-31/functions/heddle-"+strings.TrimPrefix(d.ready.Table, "heddle-")+"-api/invocations", "application/json", strings.NewReader(payload))
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
		require.Equal(t, "Unhandled", resp.Header.Get("X-Amz-Function-Error"), "%s answered %s", payload, b)
	}
	// A request the API itself refuses keeps its structured error through the door.
	var apiErr struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	d.key = "hdl_not-a-key"
	status := d.api(http.MethodGet, "/v1/me", nil, &apiErr)
	require.Equal(t, http.StatusUnauthorized, status)
	require.NotEmpty(t, apiErr.Error.Code)

	after, err := d.stats()
	require.NoError(t, err)
	require.Equal(t, before.Functions["api"].Invocations+3, after.Functions["api"].Invocations, "the oversize request never reached the function")
	require.Equal(t, before.Functions["api"].ColdStarts, after.Functions["api"].ColdStarts, "bad events do not kill the environment")
}
