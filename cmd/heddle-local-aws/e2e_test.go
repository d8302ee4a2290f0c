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
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

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
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	stage := "la" + hex.EncodeToString(suffix)
	d := &deployment{t: t, state: t.TempDir(), key: superKey, log: &bytes.Buffer{}}
	d.cli = filepath.Join(d.state, "cli.yaml")
	args := append([]string{"--listen", "127.0.0.1:0", "--stage", stage, "--state-dir", d.state,
		"--bin-dir", filepath.Join(bin, "lambda"), "--heddle", filepath.Join(bin, "heddle"),
		"--janitor-every", "2s", "--worker-timeout", "60s"}, extra...)
	d.cmd = exec.Command(filepath.Join(bin, "heddle-local-aws"), args...)
	d.cmd.Env = append(os.Environ(), "HEDDLE_BOOTSTRAP_KEY="+superKey)
	d.cmd.Stderr = d.log
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
	resp, err := http.Get(d.ready.Lambda + "/local-aws/stats")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	return s, json.NewDecoder(resp.Body).Decode(&s)
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
// static provider rack, sealing their key with the KMS stand-in's key as
// the functions do. (No API route registers static hosts yet: issue 21.)
func (d *deployment) registerHosts(tenant string, n int) {
	d.t.Helper()
	hosts := providertest.StartOpenSSH(d.t)
	require.GreaterOrEqual(d.t, len(hosts.Hosts), n)
	client := kms.New(kms.Options{Region: region, BaseEndpoint: aws.String(d.ready.KMS),
		Credentials: credentials.NewStaticCredentialsProvider("heddle", "heddle", "")})
	keyring := secrets.NewKeyring(secrets.NewKMSKey(client, fmt.Sprintf("arn:aws:kms:%s:%s:key/heddle-%s", region, accountID, strings.TrimPrefix(d.ready.Table, "heddle-"))))
	pool := static.NewPool(dynamostore.New(dynamostore.NewEmulatorClient(os.Getenv("HEDDLE_DYNAMODB_ENDPOINT")), d.ready.Table), keyring)
	// Hosts from the end of the list: the "50 hosts at once" tests start
	// at its head.
	for i, h := range hosts.Hosts[len(hosts.Hosts)-n:] {
		addr, port, _ := strings.Cut(h.Address, ":")
		var p int
		_, _ = fmt.Sscan(port, &p)
		_, err := pool.Register(context.Background(), tenant, "rack", static.HostSpec{ID: fmt.Sprintf("h%d", i), Address: addr, Port: p,
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

	created := d.mustHeddle("tenants", "create", "acme", "--max-clusters", "2", "--max-nodes", "10", "--workers", "4", "--admin", "ann", "-o", "json")
	var tenant struct {
		AdminKey struct {
			Secret string `json:"secret"`
		} `json:"adminKey"`
	}
	require.NoError(t, json.Unmarshal([]byte(created), &tenant))
	d.key = tenant.AdminKey.Secret

	s, err := d.stats()
	require.NoError(t, err)
	require.Len(t, s.Mappings, 1, "onboarding made the tenant's mapping through the Lambda API")
	require.Equal(t, int32(4), *s.Mappings[0].ScalingConfig.MaximumConcurrency)
	require.True(t, strings.HasSuffix(s.Mappings[0].EventSourceArn, ":"+d.ready.Prefix+"acme.fifo"))

	d.registerHosts("acme", 3)
	d.mustHeddle("apply", "-f", "testdata/static-catalog.yaml")

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

	d.mustHeddle("clusters", "expand", job.Cluster.ID, "--count", "1", "--wait")
	require.Equal(t, "ACTIVE", d.clusterStatus(job.Cluster.ID))
	d.mustHeddle("clusters", "delete", job.Cluster.ID, "--wait")
	require.Equal(t, "TERMINATED", d.clusterStatus(job.Cluster.ID))

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
