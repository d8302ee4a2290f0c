package webhooks

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/events"
)

// JobPreStart is the type of the call a pre-start hook gets: not an event
// of the stream (nothing changed yet), but posted, signed and logged the
// same way.
const JobPreStart events.Type = "job.prestart"

// HasPreStart reports whether the tenant has a pre-start hook: the engine
// asks before it starts a job, so a tenant without one pays one read.
func (d *Deliverer) HasPreStart(ctx context.Context, tenant string) (bool, error) {
	list, err := d.reg.List(ctx, tenant)
	if err != nil {
		return false, err
	}
	for _, e := range list {
		if e.PreStart {
			return true, nil
		}
	}
	return false, nil
}

// PreStart asks every pre-start hook of the tenant, in turn, whether job
// may start: each gets one signed POST and the client's timeout to answer
// 2xx (no retries: the job waits on it). The first that does not refuses
// the job, with its answer as the reason. Every call is in its endpoint's
// delivery log.
func (d *Deliverer) PreStart(ctx context.Context, tenant string, job domain.Job) (bool, string, error) {
	list, err := d.reg.List(ctx, tenant)
	if err != nil {
		return false, "", err
	}
	for _, e := range list {
		if !e.PreStart {
			continue
		}
		secret, err := d.reg.secret(ctx, tenant, e)
		if err != nil {
			return false, "", err
		}
		now := d.now().UTC()
		ev := events.Event{ID: events.NewID(now), Type: JobPreStart, At: now, Cluster: job.ClusterID, Job: job.ID,
			Operation: string(job.Operation), Status: string(job.Status), Message: "requested by " + job.RequestedBy}
		dl := Delivery{ID: e.ID + "/" + ev.ID, Endpoint: e.ID, Event: ev}
		a := d.post(ctx, e.URL, secret, dl)
		dl.Attempts = []Attempt{a}
		ok := a.Status >= 200 && a.Status < 300
		dl.Status = Delivered
		if !ok {
			dl.Status = GaveUp
		}
		if _, err := d.s.Write(ctx, d.item(tenant, dl, 0)); err != nil {
			return false, "", fmt.Errorf("logging the pre-start call of job %s to %s: %w", job.ID, e.ID, err)
		}
		if !ok {
			return false, refusal(e, a, d.client.Timeout), nil
		}
	}
	return true, "", nil
}

func refusal(e Endpoint, a Attempt, timeout time.Duration) string {
	who := fmt.Sprintf("pre-start hook %s (%s)", e.ID, e.URL)
	switch {
	case a.Status != 0:
		answer := strings.TrimSpace(a.Answer)
		if answer == "" {
			answer = "no explanation"
		}
		return fmt.Sprintf("%s refused the job: %d: %s", who, a.Status, answer)
	case strings.Contains(a.Error, "Timeout") || strings.Contains(a.Error, "deadline"):
		return fmt.Sprintf("%s did not answer within %s", who, timeout)
	}
	return fmt.Sprintf("%s could not be reached: %s", who, a.Error)
}
