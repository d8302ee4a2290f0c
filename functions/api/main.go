// Command api is the API Lambda: it adapts API Gateway HTTP API (payload
// version 2.0) events to heddle's net/http API handler over DynamoDB. The
// handler is the same one the local server mounts; only the store differs.
//
// Configuration (environment): HEDDLE_TABLE names the DynamoDB table;
// HEDDLE_DYNAMODB_ENDPOINT points the client at an emulator;
// HEDDLE_BOOTSTRAP_KEY, when set, registers the superadmin's key on cold start.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/dynamostore"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx := context.Background()
	// Clients are made once per execution environment, at init, not per event.
	s, err := openStore(ctx)
	if err != nil {
		slog.Error("api: cannot start", slog.Any("error", err))
		os.Exit(1)
	}
	h, err := newHandler(ctx, s, "dynamodb", os.Getenv("HEDDLE_BOOTSTRAP_KEY"))
	if err != nil {
		slog.Error("api: cannot start", slog.Any("error", err))
		os.Exit(1)
	}
	lambda.Start(h)
}

func openStore(ctx context.Context) (store.Store, error) {
	table := os.Getenv("HEDDLE_TABLE")
	if table == "" {
		return nil, fmt.Errorf("HEDDLE_TABLE is not set")
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration: %w", err)
	}
	var opts []func(*dynamodb.Options)
	if ep := os.Getenv("HEDDLE_DYNAMODB_ENDPOINT"); ep != "" {
		opts = append(opts, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(ep) })
	}
	return dynamostore.New(dynamodb.NewFromConfig(cfg, opts...), table), nil
}

// lambdaHandler is what lambda.Start runs for each API Gateway event.
type lambdaHandler func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// newHandler builds the API over s and adapts it to API Gateway events.
func newHandler(ctx context.Context, s store.Store, backend, bootstrapKey string) (lambdaHandler, error) {
	acc := access.New(s)
	if bootstrapKey != "" {
		if _, err := acc.Bootstrap(ctx, bootstrapKey); err != nil {
			return nil, err
		}
	}
	var h http.Handler = api.New(api.Config{
		Catalog: catalog.New(s, nil),
		Access:  acc,
		Backend: backend,
		Version: version,
		Logger:  slog.New(slog.NewJSONHandler(os.Stderr, nil)),
	})
	return httpadapter.NewV2(h).ProxyWithContext, nil
}
