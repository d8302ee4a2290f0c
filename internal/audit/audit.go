package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heddle-io/heddle/internal/store"
)

// Record is one change asked of the API.
type Record struct {
	At     time.Time `json:"at"`
	Tenant string    `json:"tenant"`
	User   string    `json:"user"`
	KeyID  string    `json:"keyId,omitempty"`
	Method string    `json:"method"`
	Route  string    `json:"route"` // the route's pattern, as in the OpenAPI document
	Path   string    `json:"path"`
	// Target is what the path names: its parameters by name (cluster,
	// job, kind, name, user, key, tenant), and what the request made that
	// its path does not name: the cluster and job of a create, the job of
	// an operation on a cluster.
	Target    map[string]string `json:"target,omitempty"`
	RequestID string            `json:"requestId"`
	Status    int               `json:"status"`
	Outcome   Outcome           `json:"outcome"`
	// Code is the error's code when the request was refused or failed.
	Code string `json:"code,omitempty"`
}

// Outcome sums a request's status up.
type Outcome string

const (
	Done    Outcome = "done"    // 2xx: the change was made (or, 202, accepted)
	Refused Outcome = "refused" // 4xx: nothing changed
	Failed  Outcome = "failed"  // 5xx: the server failed; see the request id in its log
)

// OutcomeOf reads an HTTP status.
func OutcomeOf(status int) Outcome {
	switch {
	case status >= 500:
		return Failed
	case status >= 400:
		return Refused
	}
	return Done
}

// Log reads and appends records.
type Log struct {
	s store.Store
}

// New keeps records in s.
func New(s store.Store) *Log { return &Log{s: s} }

func partition(tenant string) string { return store.TenantPK(tenant, "AUDIT") }

// Append writes r. Records of one tenant sort by time, then request id, so
// two requests in the same millisecond keep both records.
func (l *Log) Append(ctx context.Context, r Record) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	key := store.Key{PK: partition(r.Tenant), SK: store.SortableTime(r.At) + "#" + r.RequestID}
	_, err = l.s.Write(ctx, store.Put(store.Item{Key: key, Data: data}, store.Condition{}))
	if err != nil {
		return fmt.Errorf("appending the audit record of request %s: %w", r.RequestID, err)
	}
	return nil
}

// List returns one page of a tenant's records, newest first.
func (l *Log) List(ctx context.Context, tenant string, limit int, cursor string) ([]Record, string, error) {
	page, err := l.s.Query(ctx, partition(tenant), store.Query{Limit: limit, Cursor: cursor, Descending: true})
	if err != nil {
		return nil, "", err
	}
	out := make([]Record, 0, len(page.Items))
	for _, it := range page.Items {
		var r Record
		if err := json.Unmarshal(it.Data, &r); err != nil {
			return nil, "", fmt.Errorf("reading audit record %s: %w", it.SK, err)
		}
		out = append(out, r)
	}
	return out, page.Next, nil
}

// Retention is how long records are kept: thirteen months, so a year's
// review can always compare with the same month a year before.
const Retention = 396 * 24 * time.Hour

// Prune deletes a tenant's records from before cutoff, oldest first, and
// says how many went. The janitor calls it once an hour for every tenant.
func (l *Log) Prune(ctx context.Context, tenant string, cutoff time.Time) (int, error) {
	limit := store.SortableTime(cutoff)
	deleted := 0
	for {
		page, err := l.s.Query(ctx, partition(tenant), store.Query{Limit: store.MaxPageSize})
		if err != nil {
			return deleted, err
		}
		done := page.Next == ""
		for _, it := range page.Items {
			if it.SK >= limit {
				return deleted, nil
			}
			if _, err := l.s.Write(ctx, store.Delete(it.Key, store.Condition{})); err != nil {
				return deleted, fmt.Errorf("pruning audit record %s of %s: %w", it.SK, tenant, err)
			}
			deleted++
		}
		if done {
			return deleted, nil
		}
	}
}

// PruneAll prunes the records of every tenant named that are older than
// Retention at now; it goes on past a tenant that fails and reports all.
func (l *Log) PruneAll(ctx context.Context, tenants []string, now time.Time) (int, error) {
	total := 0
	var errs []error
	for _, t := range tenants {
		n, err := l.Prune(ctx, t, now.Add(-Retention))
		total += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return total, errors.Join(errs...)
}
