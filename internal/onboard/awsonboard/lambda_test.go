package awsonboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/onboard/awsonboard"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
)

const (
	worker   = "heddle-prod-worker"
	acmeARN  = "arn:aws:sqs:eu-west-1:123456789012:heddle-prod-acme.fifo"
	uuid     = "6d9bce8e-836b-442c-8070-74e77903c815"
	mappings = "/2015-03-31/event-source-mappings"
)

// exchange is one request the fake Lambda expects and its recorded answer
// (a file in testdata, where __EventSourceArn__ stands for the queue ARN of
// the request, or of the test when the request names none).
type exchange struct {
	method, path string
	status       int
	file         string
	errorType    string // X-Amzn-ErrorType of an error answer
}

// request is what the fake Lambda received.
type request struct {
	method, path string
	query        url.Values
	body         map[string]any
}

// fakeLambda answers a script of exchanges in order, at the protocol
// level: the SDK's own serializers and deserializers run against it.
type fakeLambda struct {
	t   *testing.T
	arn string

	mu     sync.Mutex
	script []exchange
	got    []request
}

func newFakeLambda(t *testing.T, arn string, script ...exchange) (*fakeLambda, *lambda.Client) {
	t.Helper()
	f := &fakeLambda{t: t, arn: arn, script: script}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		require.Empty(t, f.script, "exchanges the code never asked for")
	})
	return f, lambda.New(lambda.Options{
		Region:           "eu-west-1",
		BaseEndpoint:     aws.String(srv.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("heddle", "heddle", ""),
		RetryMaxAttempts: 1,
	})
}

func (f *fakeLambda) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	req := request{method: r.Method, path: r.URL.Path, query: r.URL.Query()}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &req.body); err != nil {
			f.t.Errorf("%s %s: body is not JSON: %s", r.Method, r.URL.Path, raw)
		}
	}
	f.mu.Lock()
	f.got = append(f.got, req)
	if len(f.script) == 0 {
		f.mu.Unlock()
		f.t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		http.Error(w, "unexpected", http.StatusInternalServerError)
		return
	}
	ex := f.script[0]
	f.script = f.script[1:]
	f.mu.Unlock()
	if ex.method != r.Method || ex.path != r.URL.Path {
		f.t.Errorf("got %s %s, want %s %s", r.Method, r.URL.Path, ex.method, ex.path)
	}
	arn := f.arn
	if s, ok := req.body["EventSourceArn"].(string); ok {
		arn = s
	} else if s := req.query.Get("EventSourceArn"); s != "" {
		arn = s
	}
	answer, err := os.ReadFile(filepath.Join("testdata", ex.file))
	if err != nil {
		f.t.Errorf("recorded answer: %v", err)
	}
	answer = []byte(strings.ReplaceAll(string(answer), "__EventSourceArn__", arn))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Requestid", "0b6f1c2e-1111-4222-8333-944455556666")
	if ex.errorType != "" {
		w.Header().Set("X-Amzn-Errortype", ex.errorType)
	}
	w.WriteHeader(ex.status)
	_, _ = w.Write(answer)
}

func (f *fakeLambda) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.got...)
}

// Recorded exchanges.
func list(file string) exchange {
	return exchange{method: http.MethodGet, path: mappings, status: http.StatusOK, file: file}
}

func create() exchange {
	return exchange{method: http.MethodPost, path: mappings, status: http.StatusAccepted, file: "create-event-source-mapping.json"}
}

func update(id string) exchange {
	return exchange{method: http.MethodPut, path: mappings + "/" + id, status: http.StatusAccepted, file: "update-event-source-mapping.json"}
}

func remove(id string) exchange {
	return exchange{method: http.MethodDelete, path: mappings + "/" + id, status: http.StatusAccepted, file: "delete-event-source-mapping.json"}
}

func lambdaError(ex exchange, status int, errorType, file string) exchange {
	ex.status, ex.errorType, ex.file = status, errorType, file
	return ex
}

// fakeQueues stands in for sqsqueue (tested against fauxqs in
// fauxqs_test.go): it records what it was asked and answers the queue's
// ARN while the queue exists.
type fakeQueues struct {
	names *sqsqueue.Queue // names only; never calls SQS

	mu      sync.Mutex
	exists  map[string]bool
	created []string
	deleted []string
}

func newFakeQueues(t *testing.T, existing ...string) *fakeQueues {
	t.Helper()
	return newFakeQueuesUnder(t, "heddle-prod-", existing...)
}

// newFakeLongQueues stands in for the long-task queues.
func newFakeLongQueues(t *testing.T, existing ...string) *fakeQueues {
	t.Helper()
	return newFakeQueuesUnder(t, sqsqueue.LongPrefix("heddle-prod-"), existing...)
}

func newFakeQueuesUnder(t *testing.T, prefix string, existing ...string) *fakeQueues {
	t.Helper()
	names, err := sqsqueue.New(nil, sqsqueue.Options{Prefix: prefix})
	require.NoError(t, err)
	q := &fakeQueues{names: names, exists: map[string]bool{}}
	for _, tenant := range existing {
		name, _ := names.QueueName(tenant)
		q.exists[name] = true
	}
	return q
}

func (q *fakeQueues) CreateTenantQueue(_ context.Context, tenant string) error {
	name, err := q.names.QueueName(tenant)
	if err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.exists[name] = true
	q.created = append(q.created, tenant)
	return nil
}

func (q *fakeQueues) DeleteTenantQueue(_ context.Context, tenant string) error {
	name, err := q.names.QueueName(tenant)
	if err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.exists, name)
	q.deleted = append(q.deleted, tenant)
	return nil
}

func (q *fakeQueues) QueueName(tenant string) (string, error) { return q.names.QueueName(tenant) }

// QueueARN answers the queue's ARN while it exists, as sqsqueue does.
func (q *fakeQueues) QueueARN(_ context.Context, tenant string) (string, error) {
	name, err := q.names.QueueName(tenant)
	if err != nil {
		return "", err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.exists[name] {
		return "", fmt.Errorf("%w: %q", queue.ErrNoQueue, tenant)
	}
	return "arn:aws:sqs:eu-west-1:123456789012:" + name, nil
}

type testBundle struct {
	lambda *fakeLambda
	queues *fakeQueues
	long   *fakeQueues
	o      *awsonboard.Onboarder
}

// setup returns an Onboarder on fake queues (those of the existing tenants
// exist) and a fake Lambda that expects script.
func setup(t *testing.T, existing []string, script ...exchange) *testBundle {
	t.Helper()
	f, client := newFakeLambda(t, acmeARN, script...)
	q, long := newFakeQueues(t, existing...), newFakeLongQueues(t, existing...)
	o, err := awsonboard.New(awsonboard.Config{Queues: q, LongQueues: long, Lambda: client, FunctionName: worker})
	require.NoError(t, err)
	return &testBundle{lambda: f, queues: q, long: long, o: o}
}

func acme(workers int) domain.Tenant { return domain.Tenant{ID: "acme", Workers: workers} }

// requireListed checks that a ListEventSourceMappings asked for the
// mappings from the queue, to any function: Lambda's function filter
// matches one qualifier only, and the worker's mapping may be under
// another (the onboarder keeps the worker's among them).
func requireListed(t *testing.T, r request, arn string) {
	t.Helper()
	require.Equal(t, http.MethodGet, r.method)
	require.Equal(t, arn, r.query.Get("EventSourceArn"))
	require.Empty(t, r.query.Get("FunctionName"))
}

// requireSettings checks the mapping's settings in a create or update body.
func requireSettings(t *testing.T, body map[string]any, concurrency int) {
	t.Helper()
	require.Equal(t, []any{"ReportBatchItemFailures"}, body["FunctionResponseTypes"])
	require.EqualValues(t, 10, body["BatchSize"])
	require.Equal(t, true, body["Enabled"])
	require.Equal(t, map[string]any{"MaximumConcurrency": float64(concurrency)}, body["ScalingConfig"])
}

func TestOnboardCreatesQueuesAndMapping(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		workers, concurrency int
	}{{0, 2}, {1, 2}, {2, 2}, {7, 7}, {1000, 1000}} {
		t.Run(fmt.Sprint(tc.workers), func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil, list("list-event-source-mappings-empty.json"), create())
			require.NoError(t, b.o.Onboard(t.Context(), acme(tc.workers)))
			require.Equal(t, []string{"acme"}, b.queues.created)
			require.Equal(t, []string{"acme"}, b.long.created, "the long-task queues, which no mapping consumes")

			got := b.lambda.requests()
			require.Len(t, got, 2)
			requireListed(t, got[0], acmeARN)
			require.Equal(t, acmeARN, got[1].body["EventSourceArn"])
			require.Equal(t, worker, got[1].body["FunctionName"])
			requireSettings(t, got[1].body, tc.concurrency)
		})
	}
}

// TestOnboardIdempotent: onboarding a tenant whose mapping is there with
// the right settings changes nothing; with other workers, it updates the
// mapping in place.
func TestOnboardIdempotent(t *testing.T) {
	t.Parallel()
	t.Run("same", func(t *testing.T) {
		t.Parallel()
		b := setup(t, []string{"acme"}, list("list-event-source-mappings.json"))
		require.NoError(t, b.o.Onboard(t.Context(), acme(2)))
		require.Equal(t, []string{"acme"}, b.queues.created, "the queues' attributes are applied again")
	})
	t.Run("other workers", func(t *testing.T) {
		t.Parallel()
		b := setup(t, []string{"acme"}, list("list-event-source-mappings.json"), update(uuid))
		require.NoError(t, b.o.Onboard(t.Context(), acme(8)))
		got := b.lambda.requests()
		require.Len(t, got, 2)
		requireSettings(t, got[1].body, 8)
		require.NotContains(t, got[1].body, "EventSourceArn", "a mapping's source cannot change")
		require.NotContains(t, got[1].body, "UUID", "the UUID is in the path")
	})
}

// TestOnboardLosesCreateRace: when another call created the mapping between
// the listing and the create, Lambda answers ResourceConflictException and
// the mapping found then is updated.
func TestOnboardLosesCreateRace(t *testing.T) {
	t.Parallel()
	b := setup(t, nil,
		list("list-event-source-mappings-empty.json"),
		lambdaError(create(), http.StatusConflict, "ResourceConflictException", "resource-conflict.json"),
		list("list-event-source-mappings.json"),
		update(uuid))
	require.NoError(t, b.o.Onboard(t.Context(), acme(5)))
	got := b.lambda.requests()
	require.Len(t, got, 4)
	requireListed(t, got[2], acmeARN)
	requireSettings(t, got[3].body, 5)
}

func TestResize(t *testing.T) {
	t.Parallel()
	t.Run("updates the mapping", func(t *testing.T) {
		t.Parallel()
		b := setup(t, []string{"acme"}, list("list-event-source-mappings.json"), update(uuid))
		require.NoError(t, b.o.Resize(t.Context(), acme(8)))
		require.Empty(t, b.queues.created, "the queues exist: Resize leaves them")
		require.Equal(t, []string{"acme"}, b.long.created, "long-task queues are made if missing (a tenant onboarded before them)")
		got := b.lambda.requests()
		requireListed(t, got[0], acmeARN)
		requireSettings(t, got[1].body, 8)
	})
	t.Run("no mapping", func(t *testing.T) {
		t.Parallel()
		b := setup(t, []string{"acme"}, list("list-event-source-mappings-empty.json"), create())
		require.NoError(t, b.o.Resize(t.Context(), acme(3)))
		requireSettings(t, b.lambda.requests()[1].body, 3)
	})
	t.Run("no queue onboards", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil, list("list-event-source-mappings-empty.json"), create())
		require.NoError(t, b.o.Resize(t.Context(), acme(3)))
		require.Equal(t, []string{"acme"}, b.queues.created)
		requireSettings(t, b.lambda.requests()[1].body, 3)
	})
	t.Run("busy", func(t *testing.T) {
		t.Parallel()
		b := setup(t, []string{"acme"}, list("list-event-source-mappings.json"),
			lambdaError(update(uuid), http.StatusConflict, "ResourceInUseException", "resource-in-use.json"))
		err := b.o.Resize(t.Context(), acme(9))
		require.ErrorContains(t, err, "try again in a few seconds")
	})
	t.Run("being deleted", func(t *testing.T) {
		t.Parallel()
		b := setup(t, []string{"acme"}, list("list-event-source-mappings-deleting.json"))
		require.ErrorContains(t, b.o.Resize(t.Context(), acme(9)), "is being deleted")
	})
}

func TestOffboard(t *testing.T) {
	t.Parallel()
	t.Run("mapping then queues", func(t *testing.T) {
		t.Parallel()
		b := setup(t, []string{"acme"}, list("list-event-source-mappings.json"), remove(uuid))
		require.NoError(t, b.o.Offboard(t.Context(), "acme"))
		requireListed(t, b.lambda.requests()[0], acmeARN)
		require.Equal(t, []string{"acme"}, b.queues.deleted)
		require.Equal(t, []string{"acme"}, b.long.deleted)
	})
	t.Run("mapping gone meanwhile", func(t *testing.T) {
		t.Parallel()
		b := setup(t, []string{"acme"}, list("list-event-source-mappings.json"),
			lambdaError(remove(uuid), http.StatusNotFound, "ResourceNotFoundException", "resource-not-found.json"))
		require.NoError(t, b.o.Offboard(t.Context(), "acme"))
		require.Equal(t, []string{"acme"}, b.queues.deleted)
	})
	t.Run("mapping deleting", func(t *testing.T) {
		t.Parallel()
		b := setup(t, []string{"acme"}, list("list-event-source-mappings-deleting.json"))
		require.NoError(t, b.o.Offboard(t.Context(), "acme"))
		require.Equal(t, []string{"acme"}, b.queues.deleted)
	})
	t.Run("busy keeps the queues", func(t *testing.T) {
		t.Parallel()
		b := setup(t, []string{"acme"}, list("list-event-source-mappings.json"),
			lambdaError(remove(uuid), http.StatusConflict, "ResourceInUseException", "resource-in-use.json"))
		require.ErrorContains(t, b.o.Offboard(t.Context(), "acme"), "try again")
		require.Empty(t, b.queues.deleted, "the worker may still poll them")
		require.Empty(t, b.long.deleted)
	})
	t.Run("queue already gone", func(t *testing.T) {
		t.Parallel()
		// Without the queue there is no ARN to list by: the worker's
		// mappings are listed and the tenant's found by queue name.
		b := setup(t, nil, list("list-event-source-mappings-function.json"), remove(uuid))
		require.NoError(t, b.o.Offboard(t.Context(), "acme"))
		got := b.lambda.requests()
		require.Empty(t, got[0].query.Get("FunctionName"))
		require.Empty(t, got[0].query.Get("EventSourceArn"))
		require.Equal(t, mappings+"/"+uuid, got[1].path, "acme's mapping, not globex's")
		require.Equal(t, []string{"acme"}, b.queues.deleted)
		require.Equal(t, []string{"acme"}, b.long.deleted)
	})
}

// TestQueuesOnly: without a worker function there are no mappings, and no
// Lambda calls.
func TestQueuesOnly(t *testing.T) {
	t.Parallel()
	q, long := newFakeQueues(t), newFakeLongQueues(t)
	o, err := awsonboard.New(awsonboard.Config{Queues: q, LongQueues: long})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, o.Onboard(ctx, acme(3)))
	require.NoError(t, o.Resize(ctx, acme(4)))
	require.NoError(t, o.Offboard(ctx, "acme"))
	require.NoError(t, o.Resize(ctx, acme(4)), "Resize onboards a tenant without queues")
	require.Equal(t, []string{"acme", "acme"}, q.created)
	require.Equal(t, []string{"acme"}, q.deleted)
	require.Equal(t, []string{"acme", "acme", "acme"}, long.created, "Onboard, Resize (idempotent), Onboard")
	require.Equal(t, []string{"acme"}, long.deleted)
}

// TestWithoutLongQueues: LongQueues is optional; the tenant's queues and
// mapping are made as before.
func TestWithoutLongQueues(t *testing.T) {
	t.Parallel()
	f, client := newFakeLambda(t, acmeARN, list("list-event-source-mappings-empty.json"), create())
	q := newFakeQueues(t)
	o, err := awsonboard.New(awsonboard.Config{Queues: q, Lambda: client, FunctionName: worker})
	require.NoError(t, err)
	require.NoError(t, o.Onboard(t.Context(), acme(2)))
	require.Equal(t, []string{"acme"}, q.created)
	require.Len(t, f.requests(), 2)
	queuesOnly, err := awsonboard.New(awsonboard.Config{Queues: q})
	require.NoError(t, err)
	require.NoError(t, queuesOnly.Offboard(t.Context(), "acme"))
	require.Equal(t, []string{"acme"}, q.deleted)
}

// TestOnboardRefusesATenantTooLongForItsLongQueue: the long-task queue's
// prefix is 5 characters longer, so a tenant id can fit one name and not
// the other; it is refused before any queue is made.
func TestOnboardRefusesATenantTooLongForItsLongQueue(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	id := strings.Repeat("a", 57) // heddle-prod-<57>_dlq.fifo is 78 characters, heddle-prod-long_<57>_dlq.fifo 83
	_, err := b.queues.QueueName(id)
	require.NoError(t, err)
	err = b.o.Onboard(t.Context(), domain.Tenant{ID: id, Workers: 2})
	require.ErrorContains(t, err, "long-task queue")
	require.ErrorContains(t, err, "too long")
	require.Empty(t, b.queues.created)
	require.Empty(t, b.long.created)
	require.Empty(t, b.lambda.requests())
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	q := newFakeQueues(t)
	_, err := awsonboard.New(awsonboard.Config{})
	require.Error(t, err)
	_, err = awsonboard.New(awsonboard.Config{Queues: q, FunctionName: worker})
	require.ErrorContains(t, err, "Lambda client")
}

// TestMappingMovesToTheAlias: with the worker's alias configured (as
// template.yaml does), a tenant's mapping made before it, to the worker's
// $LATEST, is moved to the alias in place rather than doubled by a second
// mapping on the same queue; a mapping of another function on the queue is
// left alone; one already on the alias with the right settings changes
// nothing.
func TestMappingMovesToTheAlias(t *testing.T) {
	t.Parallel()
	const alias = "arn:aws:lambda:eu-west-1:123456789012:function:heddle-prod-worker:live"
	newOnboarder := func(t *testing.T, script ...exchange) (*fakeLambda, *awsonboard.Onboarder) {
		f, client := newFakeLambda(t, acmeARN, script...)
		o, err := awsonboard.New(awsonboard.Config{Queues: newFakeQueues(t, "acme"), Lambda: client, FunctionName: alias})
		require.NoError(t, err)
		return f, o
	}
	t.Run("from $LATEST", func(t *testing.T) {
		t.Parallel()
		f, o := newOnboarder(t, list("list-event-source-mappings.json"), update(uuid))
		require.NoError(t, o.Onboard(t.Context(), acme(2)))
		got := f.requests()
		require.Len(t, got, 2)
		requireListed(t, got[0], acmeARN)
		require.Equal(t, alias, got[1].body["FunctionName"], "the mapping now invokes the alias")
		requireSettings(t, got[1].body, 2)
	})
	t.Run("another function's mapping", func(t *testing.T) {
		t.Parallel()
		f, o := newOnboarder(t, list("list-event-source-mappings-other.json"), create())
		require.NoError(t, o.Onboard(t.Context(), acme(2)))
		got := f.requests()
		require.Len(t, got, 2)
		require.Equal(t, http.MethodPost, got[1].method, "the worker's own mapping is made beside it")
		require.Equal(t, alias, got[1].body["FunctionName"])
	})
	t.Run("already on the alias", func(t *testing.T) {
		t.Parallel()
		f, o := newOnboarder(t, list("list-event-source-mappings-alias.json"))
		require.NoError(t, o.Onboard(t.Context(), acme(2)))
		require.Len(t, f.requests(), 1)
	})
	t.Run("both", func(t *testing.T) {
		t.Parallel()
		// A release from before the alias made a mapping to $LATEST beside
		// the alias's during a deploy: the queue keeps the alias's.
		f, o := newOnboarder(t, list("list-event-source-mappings-both.json"), remove(uuid))
		require.NoError(t, o.Onboard(t.Context(), acme(2)))
		got := f.requests()
		require.Len(t, got, 2)
		require.Equal(t, http.MethodDelete, got[1].method)
		require.Equal(t, mappings+"/"+uuid, got[1].path, "the $LATEST mapping goes")
	})
	t.Run("offboard deletes it under any qualifier", func(t *testing.T) {
		t.Parallel()
		f, o := newOnboarder(t, list("list-event-source-mappings.json"), remove(uuid))
		require.NoError(t, o.Offboard(t.Context(), "acme"))
		require.Equal(t, mappings+"/"+uuid, f.requests()[1].path)
	})
}
