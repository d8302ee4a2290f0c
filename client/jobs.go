package client

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"net/url"
	"time"
)

func jobPath(clusterID, jobID string, rest ...string) string {
	return clusterPath(clusterID, append([]string{"jobs", PathEscape(jobID)}, rest...)...)
}

// GetJob reads a job with its progress and first tasks.
func (c *Client) GetJob(ctx context.Context, clusterID, jobID string) (*JobView, error) {
	return call[JobView](ctx, c, http.MethodGet, jobPath(clusterID, jobID), nil, nil)
}

// GetTask reads one task with its attempts and their output.
func (c *Client) GetTask(ctx context.Context, clusterID, jobID, taskID string) (*Task, error) {
	return call[Task](ctx, c, http.MethodGet, jobPath(clusterID, jobID, "tasks", PathEscape(taskID)), nil, nil)
}

// Jobs lists a cluster's jobs, newest first.
func (c *Client) Jobs(ctx context.Context, clusterID string) iter.Seq2[Job, error] {
	return Each[Job](ctx, c, clusterPath(clusterID, "jobs"), nil, 0)
}

// TaskFilter narrows Tasks; zero fields do not filter.
type TaskFilter struct {
	Status, Node, Service, Action, Stage string
}

// Tasks lists a job's tasks, failed and running first.
func (c *Client) Tasks(ctx context.Context, clusterID, jobID string, f TaskFilter) iter.Seq2[Task, error] {
	q := url.Values{}
	for k, v := range map[string]string{"status": f.Status, "node": f.Node, "service": f.Service, "action": f.Action, "stage": f.Stage} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return Each[Task](ctx, c, jobPath(clusterID, jobID, "tasks"), q, 0)
}

// ControlJob sends abort, pause, resume or retry to a job.
func (c *Client) ControlJob(ctx context.Context, clusterID, jobID, action string) (*Job, error) {
	return call[Job](ctx, c, http.MethodPost, jobPath(clusterID, jobID, action), nil, nil)
}

// WaitOptions tune WaitJob. The zero value polls from a quarter second,
// backing off to five seconds while nothing moves.
type WaitOptions struct {
	// Interval is the first (and, after progress, the reset) wait between
	// polls; MaxInterval the longest. The wait grows by half each poll
	// that sees no task finish.
	Interval, MaxInterval time.Duration
	// OnUpdate, when set, sees every poll's answer.
	OnUpdate func(*JobView)
	// OnRetry, when set, hears of a poll that failed for a reason that
	// may pass (a 5xx, the server restarting, the network).
	OnRetry func(error)
	// MaxFailures is how many such failures in a row end the wait (10
	// when 0).
	MaxFailures int
}

// WaitJob polls the job until it ends and returns its last view, whatever
// its status: check v.Status (JobSucceeded, JobFailed, JobAborted). It
// gives up on ctx, on an answer of 4xx (the job is not there, the key is
// refused) and on MaxFailures failed polls in a row.
func (c *Client) WaitJob(ctx context.Context, clusterID, jobID string, o WaitOptions) (*JobView, error) {
	if o.Interval <= 0 {
		o.Interval = 250 * time.Millisecond
	}
	if o.MaxInterval < o.Interval {
		o.MaxInterval = max(o.Interval, 5*time.Second)
	}
	if o.MaxFailures <= 0 {
		o.MaxFailures = 10
	}
	wait, failures, lastDone := o.Interval, 0, -1
	for {
		v, err := c.GetJob(ctx, clusterID, jobID)
		var ae *Error
		switch {
		case err == nil:
			failures = 0
			if o.OnUpdate != nil {
				o.OnUpdate(v)
			}
			if v.Status.Terminal() {
				return v, nil
			}
			if v.TaskDone != lastDone {
				wait, lastDone = o.Interval, v.TaskDone
			} else {
				wait = min(wait*3/2, o.MaxInterval)
			}
		case ctx.Err() != nil, errors.As(err, &ae) && ae.Status < 500:
			return nil, err
		default:
			if failures++; failures >= o.MaxFailures {
				return nil, err
			}
			if o.OnRetry != nil {
				o.OnRetry(err)
			}
			wait = min(wait*3/2, o.MaxInterval)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}
