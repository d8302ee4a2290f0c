package faults

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseSpec reads a fault spec, as heddle-local-aws's --faults takes it:
// comma-separated name=value pairs, where a name is a Kind with its rate
// (throttle=0.02), seed=N, or max-latency=DURATION. For example
//
//	seed=7,throttle=0.02,5xx=0.01,5xx-after-apply=0.01,timeout-after-apply=0.01,reset=0.01,latency=0.05,redeliver=0.05
func ParseSpec(spec string) (Config, error) {
	cfg := Config{Rates: Rates{}}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		if !ok {
			return Config{}, fmt.Errorf("faults: %q: want name=value, such as throttle=0.02 or seed=7", part)
		}
		switch name {
		case "seed":
			n, err := strconv.ParseUint(value, 10, 64)
			if err != nil {
				return Config{}, fmt.Errorf("faults: seed=%s: a seed is a whole number from 0", value)
			}
			cfg.Seed = n
		case "max-latency":
			d, err := time.ParseDuration(value)
			if err != nil || d <= 0 {
				return Config{}, fmt.Errorf("faults: max-latency=%s: a positive duration, such as 200ms", value)
			}
			cfg.MaxLatency = d
		default:
			r, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return Config{}, fmt.Errorf("faults: %s=%s: a rate is a number from 0 to 1", name, value)
			}
			cfg.Rates[Kind(name)] = r
		}
	}
	if _, err := New(cfg); err != nil { // the rates' own rules
		return Config{}, err
	}
	return cfg, nil
}
