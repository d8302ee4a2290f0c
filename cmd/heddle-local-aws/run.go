package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/heddle-io/heddle/internal/apigwemu"
	"github.com/heddle-io/heddle/internal/esmemu"
	"github.com/heddle-io/heddle/internal/lambdaemu"
	"github.com/heddle-io/heddle/internal/motoserver"
	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
	"github.com/heddle-io/heddle/internal/store/dynamostore"
)

// The emulated account.
const (
	region    = "us-east-1"
	accountID = "000000000000"
)

type config struct {
	binDir, heddle, listen, stage, stateDir   string
	ddbEndpoint, sqsEndpoint, bootstrapKey    string
	janitorEvery                              time.Duration
	apiTimeout, workerTimeout, janitorTimeout time.Duration
	fargateWorkers, janitorConcurrency        int
	// webhooksLoopback and webhooksPrivate widen the webhooks' address
	// policy for receivers on this machine or its network.
	webhooksLoopback, webhooksPrivate bool
	// oidcIssuer and oidcAudience are template.yaml's OidcIssuer and
	// OidcAudience: when set, the front door runs the JWT authorizer on
	// /oidc/... as API Gateway would.
	oidcIssuer, oidcAudience string
	// previousBinDir and previousHeddle are the previous release's
	// bootstraps and CLI: when set, a deploy is in progress, each
	// function's alias "live" shares its invocations between the two
	// releases' versions (POST /local-aws/shift moves it) and the previous
	// release's `heddle worker` runs beside the current one's.
	previousBinDir, previousHeddle string
	// faults is --faults (faults.go): a fault spec for the proxies in
	// front of DynamoDB Local and fauxqs.
	faults string
	// clockOffsets is --clock-offsets (faults.go): how far each process's
	// engine clock is from the machine's, by api, worker, janitor, fargate.
	clockOffsets map[string]time.Duration
}

// ready is the line printed when everything is up.
type ready struct {
	Ready    bool   `json:"ready"`
	Endpoint string `json:"endpoint"` // the front door: HEDDLE_ENDPOINT
	Lambda   string `json:"lambda"`   // the Lambda API (mappings, Invoke, /local-aws/stats)
	KMS      string `json:"kms"`
	KMSKey   string `json:"kmsKey"` // HEDDLE_KMS_KEY_ID: the key's ARN
	Table    string `json:"table"`
	Prefix   string `json:"queuePrefix"`
}

// stats is GET /local-aws/stats.
type stats struct {
	// Functions are the current release's versions by their short name
	// (api, worker, janitor) and the previous release's, while a deploy
	// runs, as previous-api, previous-worker and previous-janitor.
	Functions map[string]functionStats `json:"functions"`
	// Aliases gives each function's alias "live" as the share of
	// invocations its previous version takes (0 when no deploy runs).
	Aliases  map[string]float64     `json:"aliases"`
	Mappings []esmemu.Configuration `json:"mappings"`
	Fargate  fargateStats           `json:"fargate"`
	// PreviousFargate is the previous release's `heddle worker`, while a
	// deploy runs.
	PreviousFargate *fargateStats `json:"previousFargate,omitempty"`
	Janitor         scheduleStats `json:"schedule"`
}

type functionStats struct {
	lambdaemu.Stats
	PIDs []int `json:"pids"`
	Busy []int `json:"busy"` // the processes running an invocation
}

func run(ctx context.Context, cfg config, stdout io.Writer, log *slog.Logger) error {
	switch {
	case cfg.ddbEndpoint == "":
		return errors.New(`HEDDLE_DYNAMODB_ENDPOINT is unset: run scripts/dynamodb-local.sh start and eval "$(scripts/dynamodb-local.sh env)"`)
	case cfg.sqsEndpoint == "":
		return errors.New(`HEDDLE_SQS_ENDPOINT is unset: run scripts/fauxqs.sh start and eval "$(scripts/fauxqs.sh env)"`)
	case cfg.previousHeddle != "" && cfg.previousBinDir == "":
		return errors.New("--previous-heddle needs --previous-bin-dir: the previous release's worker runs only while a deploy is in progress")
	case cfg.janitorEvery <= 0:
		return errors.New("--janitor-every must be positive")
	case cfg.workerTimeout < time.Minute || cfg.workerTimeout > 15*time.Minute || cfg.workerTimeout%time.Second != 0:
		// template.yaml's WorkerTimeout allows 60 to 900 seconds.
		return fmt.Errorf("--worker-timeout %s: template.yaml's WorkerTimeout allows whole seconds from 60 to 900", cfg.workerTimeout)
	}
	if err := os.MkdirAll(filepath.Join(cfg.stateDir, "logs"), 0o700); err != nil {
		return fmt.Errorf("the state directory: %w", err)
	}
	table, prefix := "heddle-"+cfg.stage, "heddle-"+cfg.stage+"-"

	// The table, as template.yaml declares it.
	ddb := dynamostore.NewEmulatorClient(cfg.ddbEndpoint)
	if _, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}); err != nil {
		if err := dynamostore.CreateTable(ctx, ddb, table); err != nil {
			return err
		}
		log.Info("created the table", "table", table)
	}
	// --faults: every process from here on reaches DynamoDB Local and
	// fauxqs through the fault proxies.
	nemesis, err := startFaults(cfg.faults, &cfg, log)
	if err != nil {
		return err
	}
	defer nemesis.stop()

	// KMS: moto's (a third-party emulator, the one LocalStack grew from),
	// with the key and alias template.yaml declares. The functions take
	// their production path to it (AWS_ENDPOINT_URL_KMS). moto keeps its
	// keys in memory: they last as long as this process.
	motoLog, err := os.OpenFile(filepath.Join(cfg.stateDir, "logs", "moto.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("moto's log: %w", err)
	}
	defer motoLog.Close()
	moto, err := motoserver.Start(ctx, motoLog)
	if err != nil {
		return fmt.Errorf("KMS (moto): %w", err)
	}
	defer moto.Stop()
	kmsURL := moto.URL
	keyARN, err := createKey(ctx, kms.NewFromConfig(moto.AWSConfig()), cfg.stage)
	if err != nil {
		return err
	}

	// The Lambda API's listener first: the api function needs its address.
	lambdaLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	lambdaURL := "http://" + lambdaLn.Addr().String()

	common := []string{
		"HEDDLE_TABLE=" + table,
		"HEDDLE_QUEUE_PREFIX=" + prefix,
		"HEDDLE_KMS_KEY_ID=" + keyARN,
		// template.yaml's Globals: onboarding sizes the tenants' queues'
		// visibility timeout from the worker's timeout.
		"HEDDLE_WORKER_TIMEOUT=" + strconv.Itoa(int(cfg.workerTimeout/time.Second)),
		"HEDDLE_DYNAMODB_ENDPOINT=" + cfg.ddbEndpoint,
		"HEDDLE_SQS_ENDPOINT=" + cfg.sqsEndpoint,
		"AWS_ENDPOINT_URL_KMS=" + kmsURL,
		// The functions' role, as far as the emulators care.
		"AWS_ACCESS_KEY_ID=heddle", "AWS_SECRET_ACCESS_KEY=heddle", "AWS_SESSION_TOKEN=local-aws",
	}
	if cfg.webhooksLoopback {
		common = append(common, "HEDDLE_WEBHOOKS_ALLOW_LOOPBACK=true")
	}
	if cfg.webhooksPrivate {
		common = append(common, "HEDDLE_WEBHOOKS_ALLOW_PRIVATE=true")
	}
	workerFn := lambdaemu.Function{Name: "heddle-" + cfg.stage + "-worker", Timeout: cfg.workerTimeout, MemoryMB: 512, Region: region, AccountID: accountID}
	// The tenants' mappings invoke the worker's alias, as template.yaml's
	// HEDDLE_WORKER_FUNCTION says: a deploy's shift and its rollback move
	// the worker with the API and the janitor.
	workerAlias := workerFn
	workerAlias.Name += ":" + aliasName
	apiEnv := append([]string{"HEDDLE_WORKER_FUNCTION=" + workerAlias.ARN(), "AWS_ENDPOINT_URL_LAMBDA=" + lambdaURL}, common...)
	if cfg.bootstrapKey != "" {
		apiEnv = append(apiEnv, "HEDDLE_BOOTSTRAP_KEY="+cfg.bootstrapKey)
	}
	pools := map[string]*lambdaemu.Pool{}
	aliases := map[string]*alias{}
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	for _, f := range []struct {
		short string
		fn    lambdaemu.Function
		env   []string
	}{
		{"api", lambdaemu.Function{Name: "heddle-" + cfg.stage + "-api", Timeout: cfg.apiTimeout, MemoryMB: 256}, apiEnv},
		{"worker", workerFn, common},
		{"janitor", lambdaemu.Function{Name: "heddle-" + cfg.stage + "-janitor", Timeout: cfg.janitorTimeout, MemoryMB: 256, Concurrency: cfg.janitorConcurrency}, common},
	} {
		f.fn.Env = withClockOffset(f.env, cfg.clockOffsets[f.short]) // faults.go
		f.fn.Region, f.fn.AccountID = region, accountID
		versions := []struct{ name, binDir string }{{f.short, cfg.binDir}}
		if cfg.previousBinDir != "" {
			versions = append(versions, struct{ name, binDir string }{"previous-" + f.short, cfg.previousBinDir})
		}
		for _, v := range versions {
			fn := f.fn
			fn.Path = filepath.Join(v.binDir, f.short, "bootstrap")
			logs, err := os.OpenFile(filepath.Join(cfg.stateDir, "logs", v.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
			if err != nil {
				return err
			}
			defer logs.Close()
			fn.Logs = logs
			p, err := lambdaemu.NewPool(fn)
			if err != nil {
				return fmt.Errorf("%w (make local-aws builds the bootstraps into dist/local)", err)
			}
			pools[v.name] = p
		}
		aliases[f.short] = newAlias(pools[f.short], pools["previous-"+f.short])
	}

	// Event source mappings and Invoke: each function unqualified (its
	// $LATEST, the current release) and through its alias.
	esm, err := esmemu.New(esmemu.Config{Functions: []esmemu.Function{pools["api"], pools["worker"], pools["janitor"],
		aliases["api"], aliases["worker"], aliases["janitor"]},
		SQS: sqsqueue.NewEmulatorClient(cfg.sqsEndpoint), Logger: log})
	if err != nil {
		return err
	}
	defer esm.Close()
	fargate := &fargateTask{name: "fargate-worker", path: cfg.heddle, env: withClockOffset(common, cfg.clockOffsets["fargate"]), workers: cfg.fargateWorkers, stateDir: cfg.stateDir, log: log}
	var previousFargate *fargateTask
	if cfg.previousHeddle != "" {
		previousFargate = &fargateTask{name: "previous-fargate-worker", path: cfg.previousHeddle, env: common, workers: cfg.fargateWorkers, stateDir: cfg.stateDir, log: log}
	}
	sched := &schedule{pool: aliases["janitor"], every: cfg.janitorEvery, arn: fmt.Sprintf("arn:aws:scheduler:%s:%s:schedule/default/heddle-%s-janitor", region, accountID, cfg.stage), log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /local-aws/stats", func(w http.ResponseWriter, _ *http.Request) {
		s := stats{Functions: map[string]functionStats{}, Aliases: map[string]float64{}, Mappings: esm.Mappings(), Fargate: fargate.stats(), Janitor: sched.stats()}
		for name, p := range pools {
			s.Functions[name] = functionStats{Stats: p.Stats(), PIDs: p.PIDs(), Busy: p.BusyPIDs()}
		}
		for name, a := range aliases {
			s.Aliases[name] = a.previousWeight()
		}
		if previousFargate != nil {
			pf := previousFargate.stats()
			s.PreviousFargate = &pf
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s)
	})
	// Chaos for tests: kill -9 one of a function's idle environments (no
	// invocation can be handed to it meanwhile).
	nemesis.register(mux)
	mux.HandleFunc("POST /local-aws/kill-idle/{function}", func(w http.ResponseWriter, r *http.Request) {
		p, ok := pools[r.PathValue("function")]
		if !ok {
			http.Error(w, "no function "+r.PathValue("function"), http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]int{"pid": p.KillIdle()})
	})
	// A deploy's traffic shift, as CodeDeploy makes it: ?previous=W gives
	// the previous release's versions the share W (0 to 1) of every alias's
	// invocations. W=0 ends the deploy: the previous release's `heddle
	// worker` is stopped too (its ECS service has rolled over).
	previousCtx, stopPreviousFargate := context.WithCancel(context.Background())
	defer stopPreviousFargate()
	mux.HandleFunc("POST /local-aws/shift", func(w http.ResponseWriter, r *http.Request) {
		weight, err := strconv.ParseFloat(r.URL.Query().Get("previous"), 64)
		if err != nil || !(weight >= 0 && weight <= 1) { // NaN too
			http.Error(w, "previous: a share from 0 to 1 of the invocations the previous release's versions take", http.StatusBadRequest)
			return
		}
		if cfg.previousBinDir == "" {
			http.Error(w, "no previous release runs (--previous-bin-dir)", http.StatusConflict)
			return
		}
		for _, a := range aliases {
			a.shift(weight)
		}
		if weight == 0 {
			stopPreviousFargate()
		}
		log.Info("local-aws: shifted the aliases", "previous", weight)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.Handle("/", esm.Handler())
	lambdaSrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = lambdaSrv.Serve(lambdaLn) }()
	defer lambdaSrv.Close()

	// The front door.
	doorCfg := apigwemu.Config{Function: aliases["api"], AccountID: accountID, Logger: log}
	if cfg.oidcIssuer != "" {
		doorCfg.Authorizer = &apigwemu.JWTAuthorizer{Issuer: cfg.oidcIssuer, Audience: cfg.oidcAudience,
			RouteKey: "ANY /oidc/{proxy+}", Prefix: "/oidc"}
	}
	door := apigwemu.New(doorCfg)
	doorURL, stopDoor, err := serve(cfg.listen, door)
	if err != nil {
		return err
	}
	defer stopDoor()

	var wg sync.WaitGroup
	defer wg.Wait()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Go(func() { sched.run(runCtx) })
	if cfg.heddle != "" {
		wg.Go(func() { fargate.run(runCtx) })
	}
	if previousFargate != nil {
		context.AfterFunc(runCtx, stopPreviousFargate)
		wg.Go(func() { previousFargate.run(previousCtx) })
	}

	line, _ := json.Marshal(ready{Ready: true, Endpoint: doorURL, Lambda: lambdaURL, KMS: kmsURL, KMSKey: keyARN, Table: table, Prefix: prefix})
	fmt.Fprintln(stdout, string(line))
	log.Info("local-aws is up: point the heddle CLI at it with HEDDLE_ENDPOINT="+doorURL, "logs", filepath.Join(cfg.stateDir, "logs"))
	<-ctx.Done()
	log.Info("local-aws: stopping")
	return nil
}

// createKey makes template.yaml's SecretsKey and its alias alias/heddle-<stage>
// in KMS and returns the key's ARN.
func createKey(ctx context.Context, c *kms.Client, stage string) (string, error) {
	out, err := c.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("heddle-" + stage + " data and secrets")})
	if err != nil {
		return "", fmt.Errorf("KMS CreateKey: %w", err)
	}
	if _, err := c.CreateAlias(ctx, &kms.CreateAliasInput{AliasName: aws.String("alias/heddle-" + stage), TargetKeyId: out.KeyMetadata.KeyId}); err != nil {
		return "", fmt.Errorf("KMS CreateAlias alias/heddle-%s: %w", stage, err)
	}
	return aws.ToString(out.KeyMetadata.Arn), nil
}

// serve serves h on addr and returns its URL and a stop function.
func serve(addr string, h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// schedule is the EventBridge Scheduler schedule that invokes the janitor.
type schedule struct {
	pool  *alias
	every time.Duration
	arn   string
	log   *slog.Logger

	mu     sync.Mutex
	counts scheduleStats
}

type scheduleStats struct {
	Invocations int64 `json:"invocations"`
	Failures    int64 `json:"failures"`
}

func (s *schedule) stats() scheduleStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// Event is template.yaml's schedule Input with Scheduler's placeholders
// filled in.
func (s *schedule) Event(at time.Time) []byte {
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	b, _ := json.Marshal(map[string]any{
		"version": "0", "id": hex.EncodeToString(id), "detail-type": "Scheduled Event", "source": "heddle.scheduler",
		"time": at.UTC().Format(time.RFC3339), "resources": []string{s.arn}, "detail": map[string]any{},
	})
	return b
}

func (s *schedule) run(ctx context.Context) {
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case at := <-t.C:
			// The schedule's RetryPolicy: no retries; overlapping passes are
			// harmless, so each tick invokes whatever the last one does.
			go func() {
				r, err := s.pool.Invoke(ctx, s.Event(at))
				s.mu.Lock()
				s.counts.Invocations++
				if err != nil || r.FunctionError != "" {
					s.counts.Failures++
				}
				s.mu.Unlock()
				if errors.Is(err, lambdaemu.ErrThrottled) {
					s.log.Debug("schedule: the janitor is at its reserved concurrency; this tick is dropped")
				} else if err != nil && ctx.Err() == nil {
					s.log.Warn("schedule: invoking the janitor", "error", err)
				} else if r.FunctionError != "" {
					s.log.Warn("schedule: the janitor's pass failed", "errorType", r.ErrorType, "answer", string(r.Payload))
				}
			}()
		}
	}
}

// fargateTask runs `heddle worker` as the ECS service runs its task: one
// task, started again whenever it stops.
type fargateTask struct {
	name     string // its log is <name>.log
	path     string
	env      []string
	workers  int
	stateDir string
	log      *slog.Logger

	mu       sync.Mutex
	pid      int
	starts   int64
	lastExit string
}

type fargateStats struct {
	PID      int    `json:"pid"`
	Starts   int64  `json:"starts"`
	LastExit string `json:"lastExit,omitempty"`
}

func (f *fargateTask) stats() fargateStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fargateStats{PID: f.pid, Starts: f.starts, LastExit: f.lastExit}
}

func (f *fargateTask) run(ctx context.Context) {
	logs, err := os.OpenFile(filepath.Join(f.stateDir, "logs", f.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		f.log.Error("fargate: its log", "error", err)
		return
	}
	defer logs.Close()
	for ctx.Err() == nil {
		cmd := exec.Command(f.path, "worker", "--workers", strconv.Itoa(f.workers))
		cmd.Env = append([]string{"AWS_REGION=" + region, "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, f.env...)
		cmd.Stdout, cmd.Stderr = logs, logs
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.WaitDelay = time.Second
		if err := cmd.Start(); err != nil {
			f.log.Error("fargate: starting heddle worker", "error", err)
			return
		}
		f.mu.Lock()
		f.pid, f.starts = cmd.Process.Pid, f.starts+1
		f.mu.Unlock()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-ctx.Done():
			// ECS stops a task with SIGTERM, then SIGKILL after 30 s.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				err = <-done
			}
		}
		f.mu.Lock()
		f.pid, f.lastExit = 0, fmt.Sprint(err)
		f.mu.Unlock()
		if ctx.Err() == nil {
			f.log.Warn("fargate: heddle worker stopped; the service starts it again", "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}
