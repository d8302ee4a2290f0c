package assemble

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heddle-io/heddle/internal/automator"
	"github.com/heddle-io/heddle/internal/automator/shell"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/ec2"
	"github.com/heddle-io/heddle/internal/provider/static"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/queue/routed"
	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/sshexec"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/dynamostore"
	"github.com/heddle-io/heddle/internal/webhooks"

	"github.com/heddle-io/heddle/internal/sdkbody"
)

// AWS are the parts of a Lambda or of `heddle worker` on Fargate, read from
// its environment once at start:
//
//	HEDDLE_TABLE              the DynamoDB table (required)
//	HEDDLE_QUEUE_PREFIX       starts the tenants' queue names (heddle-<stage>-)
//	HEDDLE_KMS_KEY_ID         the KMS key that seals secrets
//	HEDDLE_DYNAMODB_ENDPOINT  an emulator for DynamoDB (tests)
//	HEDDLE_SQS_ENDPOINT       an emulator for SQS (tests)
//	HEDDLE_WORKER_TIMEOUT     the worker Lambda's timeout in seconds
//	                          (template.yaml WorkerTimeout); the tenants'
//	                          queues made here get a visibility timeout of
//	                          QueueVisibilityFactor times it
//
// Queue, LongQueue and Keyring are nil when HEDDLE_QUEUE_PREFIX is unset:
// the API then serves the catalog only.
type AWS struct {
	Store store.Store
	// Queue holds the tenants' queues, which the worker Lambda consumes:
	// <prefix><tenant>.fifo.
	Queue *sqsqueue.Queue
	// LongQueue holds the tenants' long-task queues, which `heddle worker`
	// consumes on Fargate: <prefix>long_<tenant>.fifo
	// (sqsqueue.LongPrefix).
	LongQueue *sqsqueue.Queue
	Keyring   *secrets.Keyring
	// SQS is the client under Queue (nil with it), for what Queue does not
	// do: the API's onboarding reads a queue's ARN with it.
	SQS *sqs.Client
	// Config is the loaded AWS configuration, for clients only one function
	// needs (the API's Lambda client), which are not made here.
	Config aws.Config
}

// AWSFromEnv makes the clients. needQueue makes HEDDLE_QUEUE_PREFIX and
// HEDDLE_KMS_KEY_ID required (the worker and janitor cannot work without
// them).
func AWSFromEnv(ctx context.Context, needQueue bool) (*AWS, error) {
	table, prefix, keyID := os.Getenv("HEDDLE_TABLE"), os.Getenv("HEDDLE_QUEUE_PREFIX"), os.Getenv("HEDDLE_KMS_KEY_ID")
	switch {
	case table == "":
		return nil, errors.New("HEDDLE_TABLE is not set")
	case needQueue && prefix == "":
		return nil, errors.New("HEDDLE_QUEUE_PREFIX is not set")
	case prefix != "" && keyID == "":
		return nil, errors.New("HEDDLE_KMS_KEY_ID must be set with HEDDLE_QUEUE_PREFIX")
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration: %w", err)
	}
	// Every client sends each call once (package sdkbody); the guard goes on
	// last, after the SDK has set up its HTTP client for the service.
	out := &AWS{Config: cfg, Store: dynamostore.New(dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.HTTPClient = sdkbody.Guard(o.HTTPClient)
		if ep := os.Getenv("HEDDLE_DYNAMODB_ENDPOINT"); ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
	}), table)}
	if prefix == "" {
		return out, nil
	}
	out.SQS = sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		o.HTTPClient = sdkbody.Guard(o.HTTPClient)
		if ep := os.Getenv("HEDDLE_SQS_ENDPOINT"); ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
	})
	visibility, err := QueueVisibility(os.Getenv("HEDDLE_WORKER_TIMEOUT"))
	if err != nil {
		return nil, err
	}
	out.Queue, err = sqsqueue.New(out.SQS, sqsqueue.Options{Prefix: prefix, Visibility: visibility})
	if err != nil {
		return nil, err
	}
	out.LongQueue, err = sqsqueue.New(out.SQS, sqsqueue.Options{Prefix: sqsqueue.LongPrefix(prefix), Visibility: visibility})
	if err != nil {
		return nil, fmt.Errorf("the long-task queues: %w", err)
	}
	out.Keyring = secrets.NewKeyring(secrets.NewKMSKey(kms.NewFromConfig(cfg, func(o *kms.Options) { o.HTTPClient = sdkbody.Guard(o.HTTPClient) }), keyID))
	return out, nil
}

// QueueVisibilityFactor is how many worker timeouts a tenant queue's
// visibility timeout lasts: AWS advises at least six times the function's
// timeout for a Lambda SQS event source, so that the invocation retries of
// a throttled function do not see the batch come back (and count towards
// maxReceiveCount) meanwhile. The worker does not wait that long for a
// batch whose invocation died: it holds every message of its batch at the
// engine's visibility (engine.HandleBatch) from the start, so only an
// environment that dies before its handler runs leaves a batch hidden for
// the queue's timeout.
const QueueVisibilityFactor = 6

// QueueVisibility is the tenants' queue visibility timeout for a worker
// timeout of the given seconds (HEDDLE_WORKER_TIMEOUT): QueueVisibilityFactor
// times it, at most SQS's 12 hours. Empty gives sqsqueue's default (15
// minutes, Lambda's longest timeout).
func QueueVisibility(workerTimeoutSeconds string) (time.Duration, error) {
	if workerTimeoutSeconds == "" {
		return 0, nil
	}
	secs, err := strconv.Atoi(workerTimeoutSeconds)
	if err != nil || secs < 1 || secs > 900 {
		return 0, fmt.Errorf("HEDDLE_WORKER_TIMEOUT=%q: want the worker function's timeout in whole seconds, 1 to 900", workerTimeoutSeconds)
	}
	return min(time.Duration(secs)*time.Second*QueueVisibilityFactor, queue.MaxVisibility), nil
}

// AWSProviders are the provider types that make sense in AWS: static hosts
// and EC2 (a local provider's nodes would live inside a Lambda).
func AWSProviders(s store.Store, keyring *secrets.Keyring) (*provider.Registry, error) {
	registry := provider.NewRegistry()
	if err := registry.Register(static.Type(), static.New(static.NewPool(s, keyring), static.Config{})); err != nil {
		return nil, err
	}
	if err := registry.Register(ec2.Type(), ec2.New(ec2.Config{})); err != nil {
		return nil, err
	}
	return registry, nil
}

// LongTaskAfter is the Engine.LongTaskAfter of every process in AWS: a task
// whose action may run longer goes to the tenant's long-task queue, because
// a Lambda (at most 15 minutes, less the time to record the result and the
// batch's other messages) cannot be sure to finish it.
const LongTaskAfter = 13 * time.Minute

// Receives says which of a tenant's queues a process consumes.
type Receives int

const (
	// ReceivesShort: the Lambdas. The worker consumes the tenants' queues
	// through its event source mappings; the API and the janitor receive
	// nothing but send like the worker.
	ReceivesShort Receives = iota
	// ReceivesLong: `heddle worker` on Fargate, on the long-task queues.
	ReceivesLong
)

// EngineQueue is the queue an engine in AWS runs on: it receives (and acks
// and extends) on the queues of r, and sends each task to the tenant's
// queue, or to its long-task queue when the engine marks it long (see
// LongTaskAfter), whichever queue it consumes.
func (a *AWS) EngineQueue(r Receives) queue.Queue {
	if r == ReceivesLong {
		return routed.New(a.LongQueue, a.Queue, a.LongQueue)
	}
	return routed.New(a.Queue, a.Queue, a.LongQueue)
}

// LambdaDetachAfter is the worker Lambda's detach threshold: an action whose
// timeout is longer runs detached, so no invocation waits on it.
const LambdaDetachAfter = 10 * time.Second

// LambdaQuickWait is the worker Lambda's in-place wait on a detached run
// that is likely to end soon (no estimate yet, or one at most this long).
// A poll costs about what a second of the worker's time does (a receive,
// an invocation, two task writes and a visibility change against 0.5
// GB-s at $0.0000133 a GB-s), so a wait of a second pays for a run that
// ends within it and costs about a poll for one that does not;
// scripts/cost-model.sh prices it with short and with 30 s scripts.
const LambdaQuickWait = time.Second

// BuildAWS assembles the services over a's parts for a process that
// consumes r's queues, with Engine.LongTaskAfter = LongTaskAfter (unless
// cfg sets it); runsTasks gives the engine the shell automator (the
// workers).
func BuildAWS(a *AWS, cfg engine.Config, r Receives, runsTasks bool, log *slog.Logger) (*Services, error) {
	if a.Queue == nil || a.LongQueue == nil {
		return nil, errors.New("assemble: the tenants' queues are required (HEDDLE_QUEUE_PREFIX)")
	}
	registry, err := AWSProviders(a.Store, a.Keyring)
	if err != nil {
		return nil, err
	}
	if cfg.LongTaskAfter == 0 {
		cfg.LongTaskAfter = LongTaskAfter
	}
	quickWait := time.Duration(0)   // the shell's default in-place wait
	detachAfter := time.Duration(0) // the shell's default threshold (2 minutes)
	switch r {
	case ReceivesShort:
		// A Lambda bills every millisecond it waits: any action that may
		// run longer than LambdaDetachAfter runs detached, watched in
		// place for LambdaQuickWait only while the engine's estimate says
		// it is likely to end within it (a trivial script then ends in
		// one step, not a poll later), and otherwise handed to the
		// engine's polls, whose first look comes when the estimate says
		// the run is over. The local server and the Fargate worker keep
		// the defaults, for latency.
		quickWait, detachAfter = LambdaQuickWait, LambdaDetachAfter
	case ReceivesLong:
		if cfg.ReceiveWait == 0 {
			// Every SQS receive is a billed request: an idle worker
			// long-polls for as long as SQS allows.
			cfg.ReceiveWait = queue.MaxWait
		}
	}
	// Webhook endpoints must be https on public addresses unless the
	// operator allows private ones (template.yaml, WebhooksAllowPrivate).
	// HEDDLE_WEBHOOKS_ALLOW_LOOPBACK, the local server's rule (http to a
	// loopback receiver), is for `make local-aws`, whose receivers run on
	// the same machine; template.yaml never sets it (infra's tests check).
	hooks := webhooks.Config{Policy: webhooks.Policy{
		AllowPrivate: os.Getenv("HEDDLE_WEBHOOKS_ALLOW_PRIVATE") == "true",
		Local:        os.Getenv("HEDDLE_WEBHOOKS_ALLOW_LOOPBACK") == "true",
	}}
	if cfg.Clock == nil {
		if cfg.Clock, err = clockFromEnv(); err != nil { // clock.go
			return nil, err
		}
	}
	p := Parts{Store: a.Store, Queue: a.EngineQueue(r), Keyring: a.Keyring, Providers: registry, Engine: cfg, Webhooks: hooks, Logger: log}
	if runsTasks {
		// One pool for the process (a warm Lambda keeps it between
		// invocations): confirms and actions share their connections.
		p.SSH = sshexec.NewPool()
		p.Automators = map[string]automator.Automator{shell.Type: shell.New(shell.Config{Scripts: catalog.New(a.Store, nil),
			QuickWait: quickWait, DetachAfter: detachAfter, Pool: p.SSH})}
	}
	return Build(p)
}
