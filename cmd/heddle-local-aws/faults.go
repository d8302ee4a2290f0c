package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/heddle-io/heddle/internal/faults"
)

// nemesis is --faults: DynamoDB Local and fauxqs behind fault proxies
// (package faults), which every process of the deployment reaches them
// through: the functions, the Fargate task and the mappings' pollers.
type nemesis struct {
	spec     string
	ddb, sqs *faults.Injector
	stops    []func()
}

// startFaults starts the proxies when spec is set and points cfg's
// endpoints at them; with no spec it changes nothing.
func startFaults(spec string, cfg *config, log *slog.Logger) (*nemesis, error) {
	n := &nemesis{spec: spec}
	if spec == "" {
		return n, nil
	}
	fc, err := faults.ParseSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("--faults: %w", err)
	}
	// One source per service, so each one's faults do not depend on how the
	// other's requests interleave with it.
	sqsCfg := fc
	sqsCfg.Seed++
	for _, p := range []struct {
		in       **faults.Injector
		cfg      faults.Config
		endpoint *string
	}{{&n.ddb, fc, &cfg.ddbEndpoint}, {&n.sqs, sqsCfg, &cfg.sqsEndpoint}} {
		in, err := faults.New(p.cfg)
		if err != nil {
			return nil, fmt.Errorf("--faults: %w", err)
		}
		target, err := url.Parse(*p.endpoint)
		if err != nil {
			return nil, fmt.Errorf("--faults: the endpoint %s: %w", *p.endpoint, err)
		}
		u, stop, err := serve("127.0.0.1:0", in.Proxy(target))
		if err != nil {
			return nil, err
		}
		*p.in, *p.endpoint = in, u
		n.stops = append(n.stops, stop)
	}
	log.Info("local-aws: faults injected between the processes and DynamoDB Local and fauxqs", "spec", spec,
		"dynamodb", cfg.ddbEndpoint, "sqs", cfg.sqsEndpoint)
	return n, nil
}

func (n *nemesis) stop() {
	for _, stop := range n.stops {
		stop()
	}
}

// faultStats is GET /local-aws/faults.
type faultStats struct {
	Spec     string                `json:"spec"`
	DynamoDB map[faults.Kind]int64 `json:"dynamodb"`
	SQS      map[faults.Kind]int64 `json:"sqs"`
	// Requests counts the requests of each operation through each proxy,
	// faulted or not; FaultedOps the faults injected on each.
	Requests   map[string]map[string]int64 `json:"requests"`
	FaultedOps map[string]map[string]int64 `json:"faultedOps"`
	// Last is when the last fault was injected (zero when none was).
	Last   time.Time `json:"last,omitzero"`
	Paused bool      `json:"paused"`
}

// register serves GET /local-aws/faults (what was injected) and POST
// /local-aws/faults?paused=true|false, which stops and starts the random
// faults (a test checks its invariants on a quiet network).
func (n *nemesis) register(mux *http.ServeMux) {
	var paused atomic.Bool
	mux.HandleFunc("GET /local-aws/faults", func(w http.ResponseWriter, _ *http.Request) {
		s := faultStats{Spec: n.spec, Paused: paused.Load()}
		if n.ddb != nil {
			s.DynamoDB, s.SQS = n.ddb.Counts(), n.sqs.Counts()
			s.Requests = map[string]map[string]int64{"dynamodb": n.ddb.Requests(), "sqs": n.sqs.Requests()}
			s.FaultedOps = map[string]map[string]int64{}
			for name, in := range map[string]*faults.Injector{"dynamodb": n.ddb, "sqs": n.sqs} {
				ops := map[string]int64{}
				for _, ev := range in.Events() {
					ops[ev.Operation]++
					if ev.At.After(s.Last) {
						s.Last = ev.At
					}
				}
				s.FaultedOps[name] = ops
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s)
	})
	mux.HandleFunc("POST /local-aws/faults", func(w http.ResponseWriter, r *http.Request) {
		pause, err := strconv.ParseBool(r.URL.Query().Get("paused"))
		if err != nil {
			http.Error(w, "paused: true (stop the random faults) or false (start them again)", http.StatusBadRequest)
			return
		}
		if n.ddb == nil {
			http.Error(w, "no faults are injected: start heddle-local-aws with --faults", http.StatusConflict)
			return
		}
		paused.Store(pause)
		for _, in := range []*faults.Injector{n.ddb, n.sqs} {
			if pause {
				in.Pause()
			} else {
				in.Resume()
			}
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// parseClockOffsets reads --clock-offsets: comma-separated name=duration
// pairs, a name being api, worker, janitor or fargate.
func parseClockOffsets(spec string) (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	for _, part := range strings.Split(spec, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		if !ok || !slices.Contains([]string{"api", "worker", "janitor", "fargate"}, name) {
			return nil, fmt.Errorf("--clock-offsets: %q: want NAME=DURATION with NAME one of api, worker, janitor, fargate", part)
		}
		d, err := time.ParseDuration(value)
		if err != nil {
			return nil, fmt.Errorf("--clock-offsets: %s=%s: a duration such as -1.5s", name, value)
		}
		out[name] = d
	}
	return out, nil
}

// withClockOffset adds the engine's clock offset to a process's
// environment when it has one: assemble.ClockOffsetVar, named here without
// importing the engine's assembly into this command.
func withClockOffset(env []string, offset time.Duration) []string {
	if offset == 0 {
		return env
	}
	return append(slices.Clone(env), "HEDDLE_CLOCK_OFFSET="+offset.String())
}
