package metrics

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Namespace is the CloudWatch namespace of heddle's metrics.
const Namespace = "heddle"

// EMF writes each measurement as one CloudWatch Embedded Metric Format line
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html).
// A Lambda's standard output goes to CloudWatch Logs, which extracts the
// metrics: no API call, nothing to wait on.
type EMF struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
	// Function names the process (api, worker, janitor), a dimension of
	// every metric so each function's figures stay apart.
	function string
	store    map[string]float64 // store calls since the last Flush
}

// NewEMF writes to w (a Lambda's os.Stdout) for function.
func NewEMF(w io.Writer, function string) *EMF {
	return &EMF{w: w, now: time.Now, function: function}
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

// emit writes one line: the dimensions' values and the metrics' values as
// top-level members, and the _aws block that says which is which.
func (e *EMF) emit(dims map[string]string, values map[string]float64, units map[string]string) {
	line := map[string]any{}
	keys := []string{"Function"}
	line["Function"] = e.function
	for k, v := range dims {
		line[k] = v
		keys = append(keys, k)
	}
	var ms []emfMetric
	for name, v := range values {
		line[name] = v
		ms = append(ms, emfMetric{Name: name, Unit: units[name]})
	}
	line["_aws"] = map[string]any{
		"Timestamp":         e.now().UnixMilli(),
		"CloudWatchMetrics": []emfDirective{{Namespace: Namespace, Dimensions: [][]string{keys}, Metrics: ms}},
	}
	data, err := json.Marshal(line)
	if err != nil {
		return // only maps of strings and numbers: cannot happen
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.w.Write(append(data, '\n'))
}

func (e *EMF) Request(method, route string, status int, took time.Duration) {
	class := "2xx"
	switch {
	case status >= 500:
		class = "5xx"
	case status >= 400:
		class = "4xx"
	}
	e.emit(map[string]string{"Route": method + " " + route, "StatusClass": class},
		map[string]float64{"Requests": 1, "RequestLatency": float64(took.Milliseconds())},
		map[string]string{"Requests": "Count", "RequestLatency": "Milliseconds"})
}

func (e *EMF) Attempt(tenant, action, outcome string, took time.Duration) {
	e.emit(map[string]string{"Action": action, "Outcome": outcome},
		map[string]float64{"TaskAttempts": 1, "TaskAttemptTime": float64(took.Milliseconds())},
		map[string]string{"TaskAttempts": "Count", "TaskAttemptTime": "Milliseconds"})
}

func (e *EMF) Job(tenant, operation, status string, took time.Duration) {
	e.emit(map[string]string{"Operation": operation, "Status": status},
		map[string]float64{"Jobs": 1, "JobDuration": took.Seconds()},
		map[string]string{"Jobs": "Count", "JobDuration": "Seconds"})
}

func (e *EMF) Janitor(pass JanitorPass, took time.Duration) {
	values := map[string]float64{"JanitorPassTime": float64(took.Milliseconds())}
	units := map[string]string{"JanitorPassTime": "Milliseconds"}
	for what, n := range pass {
		name := "Janitor_" + what
		values[name], units[name] = float64(n), "Count"
	}
	e.emit(nil, values, units)
}

// Store is not written per call: a line per store call would cost more log
// volume than the call itself. Flush writes the counts instead.
func (e *EMF) Store(call string, conflict bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.store == nil {
		e.store = map[string]float64{}
	}
	e.store["Store_"+call]++
	if conflict {
		e.store["StoreConflicts_"+call]++
	}
}

var _ Observer = (*EMF)(nil)

// Flush writes the store calls counted since the last Flush as one line. A
// Lambda calls it at the end of each invocation.
func (e *EMF) Flush() {
	e.mu.Lock()
	counts := e.store
	e.store = nil
	e.mu.Unlock()
	if len(counts) == 0 {
		return
	}
	units := map[string]string{}
	for name := range counts {
		units[name] = "Count"
	}
	e.emit(nil, counts, units)
}
