// Command api is the API Lambda: it adapts API Gateway HTTP API (payload
// version 2.0) events to heddle's net/http API handler over DynamoDB. The
// handler is the same one the local server mounts; only the store differs.
//
// Configuration (environment): HEDDLE_TABLE names the DynamoDB table;
// HEDDLE_DYNAMODB_ENDPOINT points the client at an emulator;
// HEDDLE_BOOTSTRAP_KEY, when set, registers the superadmin's key on cold start.
//
// With HEDDLE_QUEUE_PREFIX set (the tenants' SQS queue names start with it)
// the API also runs cluster operations: it builds the cluster service over
// the engine, whose jobs go to the tenants' queues, and seals secrets with
// the KMS key HEDDLE_KMS_KEY_ID (required then); HEDDLE_SQS_ENDPOINT points
// the SQS client at an emulator. Without it the API serves the catalog,
// tenants, users and keys only, and cluster routes answer 503.
//
// With HEDDLE_QUEUE_PREFIX the API also onboards tenants (package
// awsonboard): creating one makes its queues and an event source mapping
// from its queue to the worker function HEDDLE_WORKER_FUNCTION, changing
// its workers resizes the mapping, deleting it removes both. Without
// HEDDLE_WORKER_FUNCTION tenants get queues but no mapping (for queues
// consumed by heddle worker on Fargate); AWS_ENDPOINT_URL_LAMBDA points the
// Lambda client elsewhere.
//
// HEDDLE_TENANT_REQUESTS_PER_MINUTE (default 1200) bounds each tenant's
// requests and HEDDLE_AUTH_FAILURES_PER_MINUTE (default 10) each source
// address's failed authentications, counted in the table so that the limits
// hold across every instance (api.NewStoredLimiter); 0 turns one off.
//
// People sign in with their tenants' identity providers (package
// identity): on the catch-all route the API verifies their tokens itself;
// on the route API Gateway's JWT authorizer guards (authorizer.go) it
// trusts the claims the authorizer verified.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/assemble"
	"github.com/heddle-io/heddle/internal/audit"
	"github.com/heddle-io/heddle/internal/buildinfo"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/dashboard"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/idempotency"
	"github.com/heddle-io/heddle/internal/identity"
	"github.com/heddle-io/heddle/internal/metrics"
	"github.com/heddle-io/heddle/internal/onboard"
	"github.com/heddle-io/heddle/internal/onboard/awsonboard"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/ratelimit"
	"github.com/heddle-io/heddle/internal/sdkbody"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/tenantmove"
	"github.com/heddle-io/heddle/internal/usage"
	"github.com/heddle-io/heddle/internal/webhooks"
)

func main() {
	ctx := context.Background()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	// One line per cold start says which build runs, so a log names the
	// commit behind what it shows.
	log.Info("api: starting", buildinfo.Read().LogAttrs()...)
	// Clients are made once per execution environment, at init, not per event.
	// Measurements go to CloudWatch as Embedded Metric Format log lines.
	emf := metrics.NewEMF(os.Stdout, "api")
	h, err := fromEnv(ctx, emf, log)
	if err != nil {
		log.Error("api: cannot start", slog.Any("error", err))
		os.Exit(1)
	}
	lambda.Start(func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		defer emf.Flush()
		return h(ctx, ev)
	})
}

func fromEnv(ctx context.Context, obs metrics.Observer, log *slog.Logger) (lambdaHandler, error) {
	a, err := assemble.AWSFromEnv(ctx, false)
	if err != nil {
		return nil, err
	}
	a.Store = metrics.CountStore(a.Store, obs)
	throttle, err := throttleFromEnv(a.Store)
	if err != nil {
		return nil, err
	}
	svc := catalogOnly(a.Store)
	svc.observer = obs
	if a.Queue != nil {
		// Cluster operations: the engine only submits (the worker Lambda
		// runs the tasks), so it runs none itself.
		built, err := assemble.BuildAWS(a, engine.Config{WorkerID: "api", Observer: obs}, assemble.ReceivesShort, false, log)
		if err != nil {
			return nil, err
		}
		onboarder, err := newOnboarder(a, os.Getenv("HEDDLE_WORKER_FUNCTION"), log)
		if err != nil {
			return nil, err
		}
		svc = services{store: a.Store, catalog: built.Catalog, access: built.Access, clusters: built.Clusters, providers: built.Providers, onboarder: onboarder, audit: built.Audit, usage: built.Usage, observer: obs,
			identity: identity.New(a.Store, built.Access, identity.Config{Logger: log}), webhooks: built.Webhooks, deliveries: built.Deliveries,
			moves: tenantmove.New(a.Store, a.Keyring)}
	}
	svc.throttle = throttle
	return newServicesHandler(ctx, svc, "dynamodb", os.Getenv("HEDDLE_BOOTSTRAP_KEY"), log)
}

// newOnboarder onboards tenants onto a's queues, with mappings to the
// worker function when it is named.
func newOnboarder(a *assemble.AWS, workerFunction string, log *slog.Logger) (*awsonboard.Onboarder, error) {
	cfg := awsonboard.Config{Queues: a.Queue, LongQueues: a.LongQueue, FunctionName: workerFunction}
	if workerFunction == "" {
		log.Warn("api: HEDDLE_WORKER_FUNCTION is not set: new tenants get queues but no event source mapping, so no Lambda consumes them")
	} else {
		cfg.Lambda = awslambda.NewFromConfig(a.Config, func(o *awslambda.Options) { o.HTTPClient = sdkbody.Guard(o.HTTPClient) })
	}
	return awsonboard.New(cfg)
}

// services are what the API serves over one store.
type services struct {
	store     store.Store // where the cursor key is kept (api.LoadCursorKey)
	catalog   *catalog.Catalog
	access    *access.Access
	clusters  *cluster.Service   // nil: the catalog only
	providers *provider.Registry // nil: the catalog only
	onboarder onboard.Onboarder  // nil: onboard.Nop
	audit     *audit.Log
	usage     *usage.Reader
	observer  metrics.Observer   // nil: nothing measured
	throttle  *api.Throttle      // nil: nothing limited
	identity  *identity.Identity // sign-in with the tenants' identity providers
	// webhooks and deliveries serve /v1/webhooks; nil answers 503.
	webhooks   *webhooks.Registry
	deliveries *webhooks.Deliverer
	// moves serves /v1/tenant/export and /v1/tenant/import; nil answers 501.
	moves *tenantmove.Mover
}

// catalogOnly serves the catalog, tenants, users and keys.
func catalogOnly(s store.Store) services {
	acc := access.New(s)
	return services{store: s, catalog: catalog.New(s, nil), access: acc, audit: audit.New(s), identity: identity.New(s, acc, identity.Config{})}
}

// lambdaHandler is what lambda.Start runs for each API Gateway event.
type lambdaHandler func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// newServicesHandler builds the API over svc and adapts it to API Gateway
// events.
func newServicesHandler(ctx context.Context, svc services, backend, bootstrapKey string, log *slog.Logger) (lambdaHandler, error) {
	if bootstrapKey != "" {
		if _, err := svc.access.Bootstrap(ctx, bootstrapKey); err != nil {
			return nil, err
		}
	}
	// Every instance signs page cursors with the same key, so a cursor one
	// instance answered opens on any other.
	cursorKey, err := api.LoadCursorKey(ctx, svc.store)
	if err != nil {
		return nil, err
	}
	var h http.Handler = api.New(api.Config{
		CursorKey:  cursorKey,
		Catalog:    svc.catalog,
		Access:     svc.access,
		Clusters:   svc.clusters,
		Providers:  svc.providers,
		Onboarder:  svc.onboarder,
		Audit:      svc.audit,
		Usage:      svc.usage,
		Observer:   svc.observer,
		Throttle:   svc.throttle,
		Identity:   svc.identity,
		Webhooks:   svc.webhooks,
		Deliveries: svc.deliveries,
		Moves:      svc.moves,
		// DynamoDB's time to live removes expired keys (no sweep, no
		// index write per key).
		Idempotency: idempotency.New(svc.store, idempotency.Options{}),
		Backend:     backend,
		Logger:      log,
	})
	return trustAuthorizer(refuseMalformedPaths(httpadapter.NewV2(withDashboard(h)).ProxyWithContext)), nil
}

// withDashboard serves the API under /v1 and the web dashboard (its page at
// /, template.yaml's Root route, and its files) everywhere else, as the
// local server does: the dashboard's URLs are relative, so it works behind
// the HTTP API's $default stage as it does on 127.0.0.1:7070.
func withDashboard(apiHandler http.Handler) http.Handler {
	ui := dashboard.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1" || strings.HasPrefix(r.URL.Path, "/v1/") {
			apiHandler.ServeHTTP(w, r)
			return
		}
		ui.ServeHTTP(w, r)
	})
}

// refuseMalformedPaths answers an event whose path net/http cannot parse
// (x%%%) with the error envelope: the adapter would fail to build the
// request, and API Gateway would turn the Lambda's error into a bare 500.
func refuseMalformedPaths(next lambdaHandler) lambdaHandler {
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		path := ev.RawPath
		if path == "" {
			path = ev.RequestContext.HTTP.Path
		}
		env, bad := api.MalformedTarget(path, ev.Headers["x-request-id"])
		if !bad {
			return next(ctx, ev)
		}
		body, err := json.MarshalIndent(env, "", "  ")
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		return events.APIGatewayV2HTTPResponse{StatusCode: env.Error.Status, Body: string(body) + "\n",
			Headers: map[string]string{"Content-Type": "application/json", "X-Content-Type-Options": "nosniff", "X-Request-Id": env.Error.RequestID}}, nil
	}
}

// throttleFromEnv reads the limits, counted in st so that every instance
// shares them.
func throttleFromEnv(st store.Store) (*api.Throttle, error) {
	perTenant, err := perMinuteFromEnv("HEDDLE_TENANT_REQUESTS_PER_MINUTE", 1200)
	if err != nil {
		return nil, err
	}
	authFailures, err := perMinuteFromEnv("HEDDLE_AUTH_FAILURES_PER_MINUTE", 10)
	if err != nil {
		return nil, err
	}
	return &api.Throttle{Limiter: api.NewStoredLimiter(st), PerTenant: perTenant, AuthFailures: authFailures}, nil
}

func perMinuteFromEnv(name string, fallback int) (ratelimit.Limit, error) {
	return parsePerMinute(name, os.Getenv(name), fallback)
}

func parsePerMinute(name, v string, fallback int) (ratelimit.Limit, error) {
	n := fallback
	if v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 0 {
			return ratelimit.Limit{}, fmt.Errorf("%s=%q: want a whole number of requests per minute, 0 for no limit", name, v)
		}
	}
	return ratelimit.Limit{Requests: n, Window: time.Minute}, nil
}
