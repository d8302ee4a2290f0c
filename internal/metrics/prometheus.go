package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Prometheus keeps the measurements in a registry of its own (not the
// global one: two servers in one test process must not share counters).
type Prometheus struct {
	reg           *prometheus.Registry
	requests      *prometheus.CounterVec
	requestTime   *prometheus.HistogramVec
	attempts      *prometheus.CounterVec
	attemptTime   *prometheus.HistogramVec
	jobs          *prometheus.CounterVec
	jobTime       *prometheus.HistogramVec
	janitor       *prometheus.CounterVec
	janitorPass   prometheus.Histogram
	storeCalls    *prometheus.CounterVec
	storeConflict *prometheus.CounterVec
}

// NewPrometheus makes the registry with heddle's metrics and the Go
// runtime's and process's.
func NewPrometheus() *Prometheus {
	p := &Prometheus{reg: prometheus.NewRegistry()}
	p.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "heddle_api_requests_total",
		Help: "API requests by method, route pattern and status."}, []string{"method", "route", "status"})
	p.requestTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "heddle_api_request_seconds",
		Help: "How long the API took to answer, by method and route pattern.", Buckets: prometheus.DefBuckets}, []string{"method", "route"})
	p.attempts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "heddle_task_attempts_total",
		Help: "Task attempts (and polls of parked ones) by tenant, action and outcome: succeeded, retried, failed, parked."},
		[]string{"tenant", "action", "outcome"})
	p.attemptTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "heddle_task_attempt_seconds",
		Help: "Worker time one attempt or poll took, by action.", Buckets: prometheus.ExponentialBuckets(0.01, 4, 9)}, []string{"action"})
	p.jobs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "heddle_jobs_total",
		Help: "Jobs ended, by tenant, operation and final status."}, []string{"tenant", "operation", "status"})
	p.jobTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "heddle_job_seconds",
		Help: "How long jobs ran, from submission to their end, by operation.", Buckets: prometheus.ExponentialBuckets(1, 3, 9)}, []string{"operation"})
	p.janitor = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "heddle_janitor_actions_total",
		Help: "What janitor passes did, by what: timed_out, resent, jobs_moved_on, undone, leases_expired, index_cleared, stuck, verifications, events_expired, hook_deliveries, hooks_resent, prestarts_resent, autoscale_evaluations, autoscale_jobs."}, []string{"what"})
	p.janitorPass = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "heddle_janitor_pass_seconds",
		Help: "How long one janitor pass took.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 9)})
	p.storeCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "heddle_store_calls_total",
		Help: "Store calls by kind: get, batch_get, write, transact, query, query_index."}, []string{"call"})
	p.storeConflict = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "heddle_store_conflicts_total",
		Help: "Store writes and transactions refused on a condition, by kind."}, []string{"call"})
	p.reg.MustRegister(p.requests, p.requestTime, p.attempts, p.attemptTime, p.jobs, p.jobTime,
		p.janitor, p.janitorPass, p.storeCalls, p.storeConflict,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return p
}

// Registry is where more collectors (the queues') register.
func (p *Prometheus) Registry() *prometheus.Registry { return p.reg }

// Handler serves the registry in the Prometheus text format.
func (p *Prometheus) Handler() http.Handler {
	return promhttp.HandlerFor(p.reg, promhttp.HandlerOpts{Registry: p.reg})
}

func (p *Prometheus) Request(method, route string, status int, took time.Duration) {
	p.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	p.requestTime.WithLabelValues(method, route).Observe(took.Seconds())
}

func (p *Prometheus) Attempt(tenant, action, outcome string, took time.Duration) {
	p.attempts.WithLabelValues(tenant, action, outcome).Inc()
	p.attemptTime.WithLabelValues(action).Observe(took.Seconds())
}

func (p *Prometheus) Job(tenant, operation, status string, took time.Duration) {
	p.jobs.WithLabelValues(tenant, operation, status).Inc()
	p.jobTime.WithLabelValues(operation).Observe(took.Seconds())
}

func (p *Prometheus) Janitor(pass JanitorPass, took time.Duration) {
	for what, n := range pass {
		p.janitor.WithLabelValues(what).Add(float64(n))
	}
	p.janitorPass.Observe(took.Seconds())
}

func (p *Prometheus) Store(call string, conflict bool) {
	p.storeCalls.WithLabelValues(call).Inc()
	if conflict {
		p.storeConflict.WithLabelValues(call).Inc()
	}
}

var _ Observer = (*Prometheus)(nil)
