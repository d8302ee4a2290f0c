package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// QueueDepth is one tenant queue's depth.
type QueueDepth struct {
	Visible, InFlight int
}

// queueCollector reads the queues' depths at each scrape, so the figures
// are never older than the scrape and nothing polls in between.
type queueCollector struct {
	depths func() map[string]QueueDepth
	desc   *prometheus.Desc
}

// RegisterQueues makes each scrape report depths() as
// heddle_queue_messages{tenant, state="visible"|"in_flight"}.
func (p *Prometheus) RegisterQueues(depths func() map[string]QueueDepth) {
	p.reg.MustRegister(&queueCollector{depths: depths, desc: prometheus.NewDesc("heddle_queue_messages",
		"Messages in each tenant's task queue: visible (waiting) or in_flight (received, not yet acknowledged).",
		[]string{"tenant", "state"}, nil)})
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	for tenant, d := range c.depths() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(d.Visible), tenant, "visible")
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(d.InFlight), tenant, "in_flight")
	}
}
