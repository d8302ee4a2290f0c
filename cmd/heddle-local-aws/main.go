// Command heddle-local-aws runs heddle's AWS deployment on one machine,
// process for process, with no Docker and no AWS account (make local-aws):
//
//   - the DynamoDB table template.yaml declares, on DynamoDB Local;
//   - the tenants' SQS FIFO queues on fauxqs (made by onboarding, as in AWS);
//   - the api, worker and janitor bootstrap binaries (built for this host
//     from the same sources and flags as make lambda), each under a Lambda
//     Runtime API emulator (internal/lambdaemu: a process per concurrent
//     execution environment) with the environment template.yaml gives it,
//     and invoked through its alias "live" (AutoPublishAlias); with
//     --previous-bin-dir a deploy is in progress: the alias shares the
//     invocations between the previous release's version and the current
//     one as POST <lambda>/local-aws/shift?previous=W says, as CodeDeploy
//     shifts it, and --previous-heddle runs the previous release's
//     `heddle worker` beside the current one's;
//   - the HTTP API in front of the api function (internal/apigwemu);
//   - the Lambda API's event source mappings and their pollers
//     (internal/esmemu), which the api function's tenant onboarding calls
//     through AWS_ENDPOINT_URL_LAMBDA;
//   - the schedule that invokes the janitor every minute with the
//     Scheduler's event (--janitor-every);
//   - KMS: a moto_server of its own (internal/motoserver), with the key
//     and alias template.yaml declares, at AWS_ENDPOINT_URL_KMS;
//   - `heddle worker` as the Fargate task runs it, restarted when it exits;
//   - with --faults, the fault layer of package faults between every process
//     and DynamoDB Local and fauxqs (faults.go), for tests.
//
// DynamoDB Local and fauxqs are the ones scripts/dynamodb-local.sh and
// scripts/fauxqs.sh start, named by HEDDLE_DYNAMODB_ENDPOINT and
// HEDDLE_SQS_ENDPOINT. When everything is up it prints one line of JSON,
// {"ready":true,"endpoint":...}, with the front door's URL (HEDDLE_ENDPOINT
// for the heddle CLI) and the emulators' own; GET <lambda>/local-aws/stats
// answers each function's invocations, cold starts and billed time, and its
// environments' process ids. SIGINT or SIGTERM stops every process it
// started.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.binDir, "bin-dir", "dist/local", "the directory with api/bootstrap, worker/bootstrap and janitor/bootstrap built for this host")
	flag.StringVar(&cfg.heddle, "heddle", "bin/heddle", "the heddle CLI, run as `heddle worker` (the Fargate task); empty runs none")
	flag.StringVar(&cfg.listen, "listen", "127.0.0.1:8080", "the front door's (API Gateway's) address")
	flag.StringVar(&cfg.stage, "stage", "dev", "the stage: the table is heddle-<stage>, the queues heddle-<stage>-<tenant>.fifo")
	flag.StringVar(&cfg.stateDir, "state-dir", ".local-aws", "where the functions' (and moto's) logs go")
	flag.DurationVar(&cfg.janitorEvery, "janitor-every", time.Minute, "how often the schedule invokes the janitor (rate(1 minute) in template.yaml)")
	flag.DurationVar(&cfg.apiTimeout, "api-timeout", 15*time.Second, "the api function's timeout (template.yaml ApiTimeout)")
	flag.DurationVar(&cfg.workerTimeout, "worker-timeout", 900*time.Second, "the worker function's timeout (template.yaml WorkerTimeout)")
	flag.DurationVar(&cfg.janitorTimeout, "janitor-timeout", 60*time.Second, "the janitor function's timeout (template.yaml JanitorTimeout)")
	flag.IntVar(&cfg.janitorConcurrency, "janitor-concurrency", 0, "the janitor's reserved concurrency (0: none, as template.yaml); a tick that finds every environment busy is dropped, as Scheduler drops a throttled invocation")
	flag.IntVar(&cfg.fargateWorkers, "fargate-workers", 2, "`heddle worker --workers`: workers per tenant on the long-task queues")
	flag.StringVar(&cfg.oidcIssuer, "oidc-issuer", "", "template.yaml's OidcIssuer: the front door verifies this issuer's tokens on /oidc/... as API Gateway's JWT authorizer does")
	flag.StringVar(&cfg.oidcAudience, "oidc-audience", "", "template.yaml's OidcAudience, with --oidc-issuer")
	flag.StringVar(&cfg.previousBinDir, "previous-bin-dir", "", "a deploy in progress: the previous release's bootstraps (laid out as --bin-dir); each alias \"live\" shares its invocations between the two releases as POST <lambda>/local-aws/shift?previous=W says (W=1 at start)")
	flag.StringVar(&cfg.previousHeddle, "previous-heddle", "", "with --previous-bin-dir: the previous release's CLI, run as a second `heddle worker` until the shift reaches previous=0")
	flag.BoolVar(&cfg.webhooksLoopback, "webhooks-allow-loopback", true, "webhooks may reach a receiver on this machine (http to a loopback address, the local server's rule): sets HEDDLE_WEBHOOKS_ALLOW_LOOPBACK, which template.yaml never sets")
	flag.BoolVar(&cfg.webhooksPrivate, "webhooks-allow-private", false, "webhooks may reach private and link-local addresses: template.yaml's WebhooksAllowPrivate (HEDDLE_WEBHOOKS_ALLOW_PRIVATE)")
	flag.StringVar(&cfg.faults, "faults", "", "inject faults between every process and DynamoDB Local and fauxqs, for tests: a spec such as seed=7,throttle=0.02,5xx-after-apply=0.01,redeliver=0.05 (package faults; GET and POST <lambda>/local-aws/faults)")
	clockOffsets := flag.String("clock-offsets", "", "skew each process's engine clock, for tests: api=1s,worker=-1s,janitor=2s,fargate=-2s (HEDDLE_CLOCK_OFFSET)")
	flag.Parse()
	offsets, err := parseClockOffsets(*clockOffsets)
	if err != nil {
		fmt.Fprintln(os.Stderr, "heddle-local-aws:", err)
		os.Exit(2)
	}
	cfg.clockOffsets = offsets
	cfg.ddbEndpoint = os.Getenv("HEDDLE_DYNAMODB_ENDPOINT")
	cfg.sqsEndpoint = os.Getenv("HEDDLE_SQS_ENDPOINT")
	cfg.bootstrapKey = os.Getenv("HEDDLE_BOOTSTRAP_KEY")

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout, log); err != nil {
		fmt.Fprintln(os.Stderr, "heddle-local-aws:", err)
		os.Exit(1)
	}
}
