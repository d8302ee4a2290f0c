package assemble

import (
	"fmt"
	"os"
	"time"
)

// ClockOffsetVar names the variable that sets a process's engine clock this
// far from the machine's (a duration such as -1.5s): heddle-local-aws's
// --clock-offsets gives each process its own, as the Lambda hosts, the
// Fargate task and a laptop running heddle migrate disagree in AWS.
// template.yaml never sets it.
const ClockOffsetVar = "HEDDLE_CLOCK_OFFSET"

// clockFromEnv returns the engine's clock as ClockOffsetVar sets it, or
// nil (the engine's default, the machine's clock) when it is unset.
func clockFromEnv() (func() time.Time, error) {
	v := os.Getenv(ClockOffsetVar)
	if v == "" {
		return nil, nil
	}
	offset, err := time.ParseDuration(v)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: a duration such as -1.5s or 250ms", ClockOffsetVar, v)
	}
	return func() time.Time { return time.Now().Add(offset) }, nil
}
