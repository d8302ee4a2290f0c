package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/heddle-io/heddle/internal/demotest"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/assemble"
	"github.com/heddle-io/heddle/internal/automator"
	"github.com/heddle-io/heddle/internal/automator/shell"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/local"
	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/sqsbatch"
	"github.com/heddle-io/heddle/internal/store/dynamotest"
)

const (
	// superKey is the superadmin's key, registered as HEDDLE_BOOTSTRAP_KEY
	// would be (32 zero bytes, as in functions/api's fixtures).
	superKey = "hdl_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	tenantID = "acme"
	// demoCatalog is what `make demo` applies.
	demoCatalog = "../../docs/examples/catalog.yaml"
	// region is where the emulated queue lives (sqsqueue.NewEmulatorClient).
	region = "us-east-1"
	// queueVisibility is the tenant queue's own visibility timeout, which
	// the event source mapping's receives use (the Lambda function's
	// timeout must not exceed it); short, so that a message left in flight
	// by a failure comes back within the test.
	queueVisibility = 30 * time.Second
	// functionTimeout is the worker Lambda's timeout: each invocation's
	// context ends then.
	functionTimeout = 25 * time.Second
	// janitorEvery is how often the schedule invokes the janitor here
	// (every minute in template.yaml).
	janitorEvery = 2 * time.Second
)

// endpoint returns the emulator endpoint in the environment variable name;
// it skips the test without one, except under CI=true (as
// internal/engine's eachBackend does).
func endpoint(t *testing.T, name, script string) string {
	t.Helper()
	ep := os.Getenv(name)
	if ep == "" {
		how := fmt.Sprintf(`%s is unset: run %s start and eval "$(%s env)"`, name, script, script)
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true requires the serverless end-to-end test: " + how)
		}
		t.Skip(how)
	}
	return ep
}

// lambdas is the deployment under test: the three functions' handlers over
// one table and the tenants' queues, and what the Lambda service does
// around them.
type lambdas struct {
	t   *testing.T
	log *logBuffer

	api     func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)
	worker  *sqsbatch.Handler
	janitor *engine.Engine
	local   *local.Local
	dir     string // the local provider's nodes live under it

	sqs      *sqs.Client
	queueURL string
	queueARN string

	vars map[string]string // fills the fixtures' ${NAME} placeholders

	invocations    atomic.Int64
	firstEvent     sync.Once
	firstEventJSON []byte // the first SQS event the worker was given
	janitorRuns    int
}

func setup(t *testing.T) *lambdas {
	t.Helper()
	endpoint(t, "HEDDLE_DYNAMODB_ENDPOINT", "scripts/dynamodb-local.sh") // skips (fails in CI) before anything is made
	sqsEndpoint := endpoint(t, "HEDDLE_SQS_ENDPOINT", "scripts/fauxqs.sh")
	ctx := context.Background()
	l := &lambdas{t: t, log: &logBuffer{}, dir: t.TempDir(), vars: map[string]string{"SUPER_KEY": superKey, "TENANT": tenantID}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("warnings and errors logged by the functions:\n%s", l.log.String())
		}
	})
	log := slog.New(slog.NewTextHandler(l.log, &slog.HandlerOptions{Level: slog.LevelWarn}))

	// One DynamoDB table, as template.yaml declares it.
	db := dynamotest.Store(t, "heddle-e2e")

	// The tenants' queues, under a prefix of this test's own.
	l.sqs = sqsqueue.NewEmulatorClient(sqsEndpoint)
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	prefix := "heddle-e2e-" + hex.EncodeToString(suffix) + "-"
	newQueue := func() *sqsqueue.Queue {
		q, err := sqsqueue.New(l.sqs, sqsqueue.Options{Prefix: prefix, Visibility: queueVisibility})
		require.NoError(t, err)
		return q
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := l.sqs.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(prefix)})
		if err != nil {
			t.Logf("listing the test's queues: %v", err)
			return
		}
		for _, url := range out.QueueUrls {
			_, _ = l.sqs.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		}
	})

	// A key file stands in for KMS.
	key, err := secrets.LoadOrCreateKeyFile(filepath.Join(t.TempDir(), "master.key"))
	require.NoError(t, err)
	keyring := secrets.NewKeyring(key)

	// The local provider makes the nodes; one instance serves the three
	// functions, as one machine would.
	l.local, err = local.New(local.Config{Dir: filepath.Join(l.dir, "nodes"), Logger: log})
	require.NoError(t, err)
	t.Cleanup(func() {
		l.local.Close()
		l.killLeftovers()
	})
	registry := func() *provider.Registry {
		r, err := assemble.AWSProviders(db, keyring)
		require.NoError(t, err)
		require.NoError(t, r.Register(local.Type(), l.local))
		return r
	}

	// The API function (functions/api newServicesHandler): an engine that
	// only submits.
	apiProviders := registry()
	apiSvc, err := assemble.Build(assemble.Parts{Store: db, Queue: newQueue(), Keyring: keyring, Providers: apiProviders,
		Engine: engine.Config{WorkerID: "api"}, Logger: log})
	require.NoError(t, err)
	_, err = apiSvc.Access.Bootstrap(ctx, superKey)
	require.NoError(t, err)
	l.api = httpadapter.NewV2(api.New(api.Config{
		Catalog: apiSvc.Catalog, Access: apiSvc.Access, Clusters: apiSvc.Clusters, Providers: apiProviders,
		Audit: apiSvc.Audit, Usage: apiSvc.Usage, Backend: "dynamodb", Version: "e2e", Logger: log,
	})).ProxyWithContext

	// The worker function (functions/worker): the engine runs tasks with
	// the shell automator.
	sh := shell.New(shell.Config{Scripts: catalog.New(db, nil)})
	t.Cleanup(sh.Close)
	workerQueue := newQueue()
	workerSvc, err := assemble.Build(assemble.Parts{Store: db, Queue: workerQueue, Keyring: keyring, Providers: registry(),
		Automators: map[string]automator.Automator{shell.Type: sh},
		Engine:     engine.Config{WorkerID: "lambda:heddle-e2e-worker/1"}, Logger: log})
	require.NoError(t, err)
	l.worker = &sqsbatch.Handler{Queue: workerQueue, Batches: workerSvc.Engine, Log: log} // the worker Lambda's own handler

	// The janitor function (functions/janitor): no executor.
	janitorSvc, err := assemble.Build(assemble.Parts{Store: db, Queue: newQueue(), Keyring: keyring, Providers: registry(),
		Engine: engine.Config{WorkerID: "lambda:heddle-e2e-janitor/1"}, Logger: log})
	require.NoError(t, err)
	l.janitor = janitorSvc.Engine

	// What onboarding does for a tenant in AWS mode: its FIFO queue (and
	// dead-letter queue). Creating it converges, so it may come before the
	// tenant's record.
	onboard := newQueue()
	require.NoError(t, onboard.CreateTenantQueue(ctx, tenantID))
	name, err := onboard.QueueName(tenantID)
	require.NoError(t, err)
	url, err := l.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	require.NoError(t, err)
	l.queueURL = aws.ToString(url.QueueUrl)
	l.queueARN, err = onboard.QueueARN(ctx, tenantID)
	require.NoError(t, err)
	return l
}

// --- The API function ------------------------------------------------------

var placeholder = regexp.MustCompile(`\$\{[A-Z][A-Z0-9_]*\}`)

// event loads a fixture and fills its placeholders.
func (l *lambdas) event(path string, vars map[string]string) []byte {
	l.t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(l.t, err)
	var missing []string
	out := placeholder.ReplaceAllStringFunc(string(raw), func(p string) string {
		v, ok := vars[p[2:len(p)-1]]
		if !ok {
			missing = append(missing, p)
		}
		return v
	})
	require.Empty(l.t, missing, "%s: placeholders without a value", path)
	require.NotContains(l.t, out, "${", "%s: a placeholder is malformed", path)
	return []byte(out)
}

type apiResponse struct {
	status int
	body   []byte
}

// send hands the API function the event of testdata/events/<name>.json, as
// API Gateway would.
func (l *lambdas) send(name string) (apiResponse, error) {
	vars := map[string]string{"REQUEST_ID": base64.RawURLEncoding.EncodeToString(randomBytes(10))}
	for k, v := range l.vars {
		vars[k] = v
	}
	raw := l.event(filepath.Join("testdata", "events", name+".json"), vars)
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(raw, &ev); err != nil {
		return apiResponse{}, fmt.Errorf("%s: %w", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 29*time.Second) // API Gateway's integration timeout
	defer cancel()
	resp, err := l.api(ctx, ev)
	if err != nil {
		return apiResponse{}, fmt.Errorf("%s: %w", name, err)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if body, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			return apiResponse{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	return apiResponse{status: resp.StatusCode, body: body}, nil
}

// call sends the event, requires the status, and decodes the body into out
// (when not nil).
func (l *lambdas) call(name string, status int, out any) {
	l.t.Helper()
	resp, err := l.send(name)
	require.NoError(l.t, err)
	require.Equal(l.t, status, resp.status, "%s answered %s", name, resp.body)
	if out != nil {
		require.NoError(l.t, json.Unmarshal(resp.body, out), "%s: %s", name, resp.body)
	}
}

type clusterView struct {
	ID            string          `json:"id"`
	Status        string          `json:"status"`
	StatusMessage string          `json:"statusMessage"`
	Nodes         []demotest.Node `json:"nodes"`
	Progress      *struct {
		JobID  string `json:"jobId"`
		Status string `json:"status"`
		Done   int    `json:"done"`
		Total  int    `json:"total"`
	} `json:"progress"`
}

// jobEnded reports whether the cluster's latest job has ended, and the
// cluster as the API shows it.
func (l *lambdas) jobEnded() (bool, clusterView, error) {
	var v clusterView
	resp, err := l.send("04-get-cluster")
	if err != nil {
		return false, v, err
	}
	if resp.status != http.StatusOK {
		return false, v, fmt.Errorf("GET cluster answered %d: %s", resp.status, resp.body)
	}
	if err := json.Unmarshal(resp.body, &v); err != nil {
		return false, v, err
	}
	ended := v.Progress != nil && v.Progress.JobID == l.vars["JOB_ID"] &&
		(v.Progress.Status == "SUCCEEDED" || v.Progress.Status == "FAILED" || v.Progress.Status == "ABORTED")
	return ended, v, nil
}

// jobFailure describes the failed tasks of the current job, for messages.
func (l *lambdas) jobFailure() string {
	resp, err := l.send("05-get-job")
	if err != nil {
		return err.Error()
	}
	return demotest.FailedTasks(resp.body)
}

// --- The worker function and its event source mapping ---------------------

// poll is one round of the event source mapping: a receive of up to 10
// messages from the tenant's queue, a worker invocation with them as the
// Lambda service serializes an SQS event, and the delete of every record
// the answer does not list (those listed stay and come back when their
// visibility says). It returns how many records the invocation had.
func (l *lambdas) poll(ctx context.Context) (int, error) {
	out, err := l.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(l.queueURL),
		MaxNumberOfMessages:         10,
		WaitTimeSeconds:             1,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
		ReceiveRequestAttemptId:     aws.String(hex.EncodeToString(randomBytes(16))),
	})
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil
		}
		return 0, fmt.Errorf("receiving: %w", err)
	}
	if len(out.Messages) == 0 {
		return 0, nil
	}
	ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, len(out.Messages))}
	for _, m := range out.Messages {
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId:         aws.ToString(m.MessageId),
			ReceiptHandle:     aws.ToString(m.ReceiptHandle),
			Body:              aws.ToString(m.Body),
			Md5OfBody:         aws.ToString(m.MD5OfBody),
			Attributes:        m.Attributes,
			MessageAttributes: map[string]events.SQSMessageAttribute{},
			EventSource:       "aws:sqs",
			EventSourceARN:    l.queueARN,
			AWSRegion:         region,
		})
	}
	// The function receives the event as JSON.
	raw, err := json.Marshal(ev)
	if err != nil {
		return 0, err
	}
	var got events.SQSEvent
	if err := json.Unmarshal(raw, &got); err != nil {
		return 0, err
	}
	l.firstEvent.Do(func() { l.firstEventJSON = raw })
	l.invocations.Add(1)
	invCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), functionTimeout)
	resp, err := l.worker.Handle(invCtx, got)
	cancel()
	if err != nil {
		return 0, fmt.Errorf("the worker failed: %w", err)
	}
	stays := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		stays[f.ItemIdentifier] = true
	}
	for _, m := range out.Messages {
		if stays[aws.ToString(m.MessageId)] {
			continue
		}
		if _, err := l.sqs.DeleteMessage(context.WithoutCancel(ctx), &sqs.DeleteMessageInput{QueueUrl: aws.String(l.queueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
			return 0, fmt.Errorf("deleting a handled message: %w", err)
		}
	}
	return len(got.Records), nil
}

// --- The janitor function --------------------------------------------------

// scheduled invokes the janitor with the schedule's event, as functions/janitor
// handles it: one pass.
func (l *lambdas) scheduled() error {
	l.janitorRuns++
	raw := l.event(filepath.Join("testdata", "scheduled-event.json"), map[string]string{
		"EVENT_ID": hex.EncodeToString(randomBytes(16)), "TIME": time.Now().UTC().Format(time.RFC3339),
	})
	var ev events.EventBridgeEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := l.janitor.RunJanitor(ctx)
	if err != nil {
		return fmt.Errorf("janitor pass of %s: %w", ev.Time.Format(time.RFC3339), err)
	}
	if r.TimedOut+r.Stuck > 0 {
		return fmt.Errorf("janitor pass of %s found trouble: %+v", ev.Time.Format(time.RFC3339), r)
	}
	return nil
}

// --- Driving ---------------------------------------------------------------

// drive runs the deployment until done reports true or timeout passes: the
// event source mapping's pollers (as many as the tenant's worker count, the
// mapping's MaximumConcurrency), the janitor's schedule, and done between.
func (l *lambdas) drive(timeout time.Duration, done func() (bool, error)) error {
	// The pollers stop between polls, never during one: a receive cut
	// short on the client's side may still take messages on the emulator's,
	// which would then stay in flight for the queue's visibility timeout
	// (the real event source mapping never stops mid-receive).
	var stopped atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	workers, _ := strconv.Atoi(l.vars["WORKERS"])
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stopped.Load() {
				if _, err := l.poll(context.Background()); err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		}()
	}
	defer func() {
		stopped.Store(true)
		wg.Wait()
	}()
	deadline := time.Now().Add(timeout)
	var lastJanitor time.Time // the schedule fires in the first round
	for {
		if time.Since(lastJanitor) >= janitorEvery {
			if err := l.scheduled(); err != nil {
				return err
			}
			lastJanitor = time.Now()
		}
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case err := <-errs:
			return err
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %s", timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// settle drives the deployment until the cluster's current job ends, and
// returns the cluster.
func (l *lambdas) settle(timeout time.Duration) clusterView {
	l.t.Helper()
	var v clusterView
	err := l.drive(timeout, func() (bool, error) {
		var ended bool
		var err error
		ended, v, err = l.jobEnded()
		return ended, err
	})
	require.NoError(l.t, err, "cluster %s, job %s: %+v\n%s", l.vars["CLUSTER_ID"], l.vars["JOB_ID"], v, l.jobFailure())
	return v
}

// killLeftovers kills, by id, every process whose command line names the
// nodes' directory (what the nodes' scripts started and a failed test left
// running: the demo's servers run under setsid, outside the local
// provider's reach).
func (l *lambdas) killLeftovers() {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.Contains(cmdline, []byte(l.dir+"/")) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// through asks the cluster's load balancer n times and returns which web
// nodes answered.
func through(t *testing.T, v clusterView, n int) map[string]bool {
	t.Helper()
	return demotest.Answerers(t, demotest.LBAddress(v.Nodes), n)
}

// TestClusterLifecycleThroughTheLambdas creates a cluster of the demo
// catalog through the API function, runs its tasks with the worker function
// on the messages fauxqs delivers, with the janitor on its schedule, until
// the cluster is ACTIVE on local-provider nodes and its load balancer
// answers from two web nodes; then deletes it the same way.
func TestClusterLifecycleThroughTheLambdas(t *testing.T) {
	l := setup(t)

	var tenant struct {
		Tenant struct {
			Workers int `json:"workers"`
		} `json:"tenant"`
		AdminKey struct {
			Secret string `json:"secret"`
		} `json:"adminKey"`
	}
	l.call("01-create-tenant", http.StatusCreated, &tenant)
	require.NotEmpty(t, tenant.AdminKey.Secret)
	l.vars["ADMIN_KEY"] = tenant.AdminKey.Secret
	require.Equal(t, 2, tenant.Tenant.Workers)
	l.vars["WORKERS"] = strconv.Itoa(tenant.Tenant.Workers)

	catalog, err := os.ReadFile(demoCatalog)
	require.NoError(t, err)
	l.vars["CATALOG_YAML_BASE64"] = base64.StdEncoding.EncodeToString(catalog)
	l.call("02-apply-catalog", http.StatusOK, nil)

	var created struct {
		Cluster struct {
			ID string `json:"id"`
		} `json:"cluster"`
		Job struct {
			ID string `json:"id"`
		} `json:"job"`
	}
	l.call("03-create-cluster", http.StatusAccepted, &created)
	require.NotEmpty(t, created.Cluster.ID)
	l.vars["CLUSTER_ID"], l.vars["JOB_ID"] = created.Cluster.ID, created.Job.ID
	terminated := false
	t.Cleanup(func() {
		if terminated {
			return
		}
		// Whatever failed, the cluster goes: its delete job runs as any other.
		resp, err := l.send("06-delete-cluster")
		if err != nil || resp.status != http.StatusAccepted {
			t.Logf("deleting the cluster at cleanup: %v %d %s", err, resp.status, resp.body)
			return
		}
		var job struct {
			Job struct {
				ID string `json:"id"`
			} `json:"job"`
		}
		if json.Unmarshal(resp.body, &job) == nil && job.Job.ID != "" {
			l.vars["JOB_ID"] = job.Job.ID
		}
		if err := l.drive(45*time.Second, func() (bool, error) {
			ended, _, err := l.jobEnded()
			return ended, err
		}); err != nil {
			t.Logf("deleting the cluster at cleanup: %v", err)
		}
	})

	start := time.Now()
	v := l.settle(2 * time.Minute)
	require.Equal(t, "ACTIVE", v.Status, "%s\n%s", v.StatusMessage, l.jobFailure())
	require.Len(t, v.Nodes, 3)
	require.Equal(t, v.Progress.Total, v.Progress.Done)
	require.Equal(t, 3, l.local.Nodes(), "the worker made the nodes")
	require.Len(t, through(t, v, 6), 2, "two web nodes answer through the load balancer")
	requireLambdaShape(t, l.firstEventJSON)
	t.Logf("ACTIVE after %s: %d worker invocations, %d janitor passes", time.Since(start).Round(time.Millisecond), l.invocations.Load(), l.janitorRuns)

	var deleting struct {
		Job struct {
			ID string `json:"id"`
		} `json:"job"`
	}
	l.call("06-delete-cluster", http.StatusAccepted, &deleting)
	require.NotEmpty(t, deleting.Job.ID)
	l.vars["JOB_ID"] = deleting.Job.ID
	start = time.Now()
	v = l.settle(time.Minute)
	require.Equal(t, "TERMINATED", v.Status, "%s\n%s", v.StatusMessage, l.jobFailure())
	terminated = true
	require.Empty(t, v.Nodes)
	require.Zero(t, l.local.Nodes(), "no node is left")
	require.GreaterOrEqual(t, l.janitorRuns, 2, "the janitor ran on its schedule during the create and the delete")
	t.Logf("TERMINATED after %s: %d worker invocations in all, %d janitor passes", time.Since(start).Round(time.Millisecond), l.invocations.Load(), l.janitorRuns)
}

// --- Helpers ---------------------------------------------------------------

// requireLambdaShape checks that the SQS event the test gave the worker has
// every field, and every system attribute, of a real Lambda event
// (functions/worker's fixture).
func requireLambdaShape(t *testing.T, got []byte) {
	t.Helper()
	require.NotEmpty(t, got, "the worker was invoked")
	type shape struct {
		Records []map[string]json.RawMessage `json:"Records"`
	}
	raw, err := os.ReadFile("../../internal/sqsbatch/testdata/fifo-event.json")
	require.NoError(t, err)
	var want, have shape
	require.NoError(t, json.Unmarshal(raw, &want))
	require.NoError(t, json.Unmarshal(got, &have))
	require.NotEmpty(t, want.Records)
	require.NotEmpty(t, have.Records)
	attributes := func(r map[string]json.RawMessage) map[string]string {
		var a map[string]string
		require.NoError(t, json.Unmarshal(r["attributes"], &a))
		return a
	}
	wantAttrs := attributes(want.Records[0])
	for _, r := range have.Records {
		for k := range want.Records[0] {
			require.Contains(t, r, k, "an SQS record as Lambda delivers it has %q", k)
		}
		a := attributes(r)
		for k := range wantAttrs {
			require.NotEmpty(t, a[k], "an SQS record as Lambda delivers it has the attribute %q", k)
		}
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// logBuffer keeps what the functions log, shown when the test fails (the
// functions log from goroutines that may outlive a t.Log's test).
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
