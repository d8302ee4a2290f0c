package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/dynamostore"
)

// TestPoisonMessageEndsInTheDeadLetterQueue: a task message that fails
// every time goes through the real worker binary under the mapping: it
// comes back after a growing backoff, its last delivery fails its job with
// a status message that names the failure and the tenant's dead-letter
// queue, SQS moves it there after maxReceiveCount (5) receives, and the
// job ends FAILED (rolled back) with the reason, which the CLI shows.
//
// The poison: the task's item has grown so near DynamoDB's 400 KB that the
// claim, which adds an attempt record, is refused every time (an item a
// newer version made larger, or a bug): the store answers, yet handling
// the message always fails before the task can run.
func TestPoisonMessageEndsInTheDeadLetterQueue(t *testing.T) {
	t.Parallel()
	d := setup(t)
	need(t, "HEDDLE_SSH_HOSTS", "scripts/sshd-hosts.sh")
	d.createTenant("2", "10", "2")
	d.registerHosts("acme", 1)
	d.mustHeddle("apply", "-f", "testdata/static-catalog.yaml")
	s, err := d.stats()
	require.NoError(t, err)
	require.Len(t, s.Mappings, 1)

	// The operator's switch: the mapping off, so the job's first task
	// waits in the queue while the test damages its item.
	lc := lambda.New(lambda.Options{Region: region, BaseEndpoint: aws.String(d.ready.Lambda),
		Credentials: credentials.NewStaticCredentialsProvider("heddle", "heddle", "")})
	ctx := context.Background()
	_, err = lc.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: aws.String(s.Mappings[0].UUID), Enabled: aws.Bool(false)})
	require.NoError(t, err)
	// A poller's long poll (5 s) that the switch cut short stays open at
	// fauxqs until its wait ends, and a message sent meanwhile would go to
	// it (and stay hidden for the queue's visibility timeout).
	time.Sleep(6 * time.Second)

	var created struct {
		Cluster struct {
			ID string `json:"id"`
		} `json:"cluster"`
		Job struct {
			ID string `json:"id"`
		} `json:"job"`
	}
	require.Equal(t, http.StatusAccepted, d.api(http.MethodPost, "/v1/clusters", map[string]any{"name": "poisoned", "template": "pair", "size": 1}, &created))
	cluster, job := created.Cluster.ID, created.Job.ID
	var tasks struct {
		Items []taskView `json:"items"`
	}
	d.api(http.MethodGet, "/v1/clusters/"+cluster+"/jobs/"+job+"/tasks?limit=500", nil, &tasks)
	var root string
	for _, tv := range tasks.Items {
		if tv.Status == "READY" && !tv.Rollback {
			root = tv.ID
		}
	}
	require.NotEmpty(t, root, "the job's first task is ready: %+v", tasks.Items)
	db := dynamostore.New(dynamostore.NewEmulatorClient(os.Getenv("HEDDLE_DYNAMODB_ENDPOINT")), d.ready.Table)
	key := store.Key{PK: store.TenantPK("acme", "TASKS#"+job), SK: root}
	d.oversizeTask(db, key, cluster, job, root)
	_, err = lc.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: aws.String(s.Mappings[0].UUID), Enabled: aws.Bool(true)})
	require.NoError(t, err)

	// Five deliveries, two seconds apart and more (the engine's backoff),
	// then the job says why.
	dlq := d.ready.Prefix + "acme_dlq.fifo"
	var j struct {
		Status        string `json:"status"`
		StatusMessage string `json:"statusMessage"`
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		d.api(http.MethodGet, "/v1/clusters/"+cluster+"/jobs/"+job, nil, &j)
		if strings.Contains(j.StatusMessage, dlq) {
			break
		}
		require.True(t, time.Now().Before(deadline), "the job does not say why: %+v", j)
		time.Sleep(time.Second)
	}
	require.Contains(t, []string{"FAILING", "ROLLING_BACK", "FAILED"}, j.Status)
	require.Contains(t, j.StatusMessage, root)
	require.Contains(t, j.StatusMessage, "5 deliveries")
	require.Contains(t, j.StatusMessage, "Item size", "the failure itself")

	// And SQS moved the message to the dead-letter queue.
	q := sqsqueue.NewEmulatorClient(os.Getenv("HEDDLE_SQS_ENDPOINT"))
	u, err := q.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(dlq)})
	require.NoError(t, err)
	var body string
	for deadline := time.Now().Add(2 * time.Minute); body == ""; {
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: u.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 5, VisibilityTimeout: 1})
		require.NoError(t, err)
		for _, m := range out.Messages {
			if strings.Contains(aws.ToString(m.Body), root) {
				body = aws.ToString(m.Body)
			}
		}
		require.True(t, body != "" || time.Now().Before(deadline), "the message is not in %s", dlq)
	}

	// The job ends: rolled back, the reason kept.
	_, err = d.heddle("jobs", "watch", cluster, job)
	require.Error(t, err, "jobs watch exits 1 on a FAILED job")
	d.api(http.MethodGet, "/v1/clusters/"+cluster+"/jobs/"+job, nil, &j)
	require.Equal(t, "FAILED", j.Status)
	require.Contains(t, j.StatusMessage, dlq, "the reason stays")
	t.Logf("the job: %s: %s", j.Status, j.StatusMessage)
	shown := d.mustHeddle("jobs", "show", cluster, job)
	require.Contains(t, shown, dlq, "the CLI shows why")
	require.Equal(t, "TERMINATED", d.clusterStatus(cluster), "a failed create is rolled back")
	d.checkCounters(1)
}

// oversizeTask writes the task's item as it is, with a parameter that
// brings it within a few bytes of DynamoDB's 400 KB item limit (found by
// bisection against DynamoDB Local, which enforces it).
func (d *deployment) oversizeTask(db *dynamostore.Store, key store.Key, cluster, job, task string) {
	d.t.Helper()
	var raw map[string]any
	d.api(http.MethodGet, "/v1/clusters/"+cluster+"/jobs/"+job+"/tasks/"+url.PathEscape(task), nil, &raw)
	write := func(pad int) error {
		params, _ := raw["params"].(map[string]any)
		if params == nil {
			params = map[string]any{}
		}
		params["pad"] = strings.Repeat("x", pad)
		raw["params"] = params
		data, err := json.Marshal(raw)
		require.NoError(d.t, err)
		_, err = db.Write(context.Background(), store.Put(store.Item{Key: key, Status: "READY", Data: data}, store.Condition{}))
		return err
	}
	lo, hi := 300_000, 400*1024 // lo fits, hi does not
	require.NoError(d.t, write(lo))
	require.Error(d.t, write(hi), "DynamoDB Local refuses an item over 400 KB")
	for hi-lo > 8 {
		if mid := (lo + hi) / 2; write(mid) == nil {
			lo = mid
		} else {
			hi = mid
		}
	}
	require.NoError(d.t, write(lo))
}
