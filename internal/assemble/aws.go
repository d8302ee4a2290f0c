package assemble

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heddle-io/heddle/internal/automator"
	"github.com/heddle-io/heddle/internal/automator/shell"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/ec2"
	"github.com/heddle-io/heddle/internal/provider/static"
	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/dynamostore"
)

// AWS are a Lambda's parts, read from its environment once at init:
//
//	HEDDLE_TABLE              the DynamoDB table (required)
//	HEDDLE_QUEUE_PREFIX       starts the tenants' queue names (heddle-<stage>-)
//	HEDDLE_KMS_KEY_ID         the KMS key that seals secrets
//	HEDDLE_DYNAMODB_ENDPOINT  an emulator for DynamoDB (tests)
//	HEDDLE_SQS_ENDPOINT       an emulator for SQS (tests)
//
// Queue and Keyring are nil when HEDDLE_QUEUE_PREFIX is unset: the API then
// serves the catalog only.
type AWS struct {
	Store   store.Store
	Queue   *sqsqueue.Queue
	Keyring *secrets.Keyring
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
	out := &AWS{Config: cfg, Store: dynamostore.New(dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if ep := os.Getenv("HEDDLE_DYNAMODB_ENDPOINT"); ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
	}), table)}
	if prefix == "" {
		return out, nil
	}
	out.SQS = sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if ep := os.Getenv("HEDDLE_SQS_ENDPOINT"); ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
	})
	out.Queue, err = sqsqueue.New(out.SQS, sqsqueue.Options{Prefix: prefix})
	if err != nil {
		return nil, err
	}
	out.Keyring = secrets.NewKeyring(secrets.NewKMSKey(kms.NewFromConfig(cfg), keyID))
	return out, nil
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

// BuildAWS assembles the services over a's parts; runsTasks gives the engine
// the shell automator (the worker).
func BuildAWS(a *AWS, cfg engine.Config, runsTasks bool, log *slog.Logger) (*Services, error) {
	registry, err := AWSProviders(a.Store, a.Keyring)
	if err != nil {
		return nil, err
	}
	p := Parts{Store: a.Store, Queue: a.Queue, Keyring: a.Keyring, Providers: registry, Engine: cfg, Logger: log}
	if runsTasks {
		// A Lambda bills every millisecond it waits: a detached run goes to
		// the engine's polls at once instead of being watched in place
		// (scripts/cost-model.sh: $0.061 -> $0.049 per 100-node create and
		// delete). The local server keeps the in-place wait for latency.
		p.Automators = map[string]automator.Automator{shell.Type: shell.New(shell.Config{Scripts: shell.NewScripts(a.Store), QuickWait: -1})}
	}
	return Build(p)
}
