package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/audit"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

type fakeJanitor struct {
	passes int
	report engine.JanitorReport
	err    error
}

func (f *fakeJanitor) RunJanitor(context.Context) (engine.JanitorReport, error) {
	f.passes++
	return f.report, f.err
}

// TestHandleMakesOnePass: the schedule's event (the Input template.yaml
// gives it) decodes, and each invocation makes exactly one pass and answers
// its report.
func TestHandleMakesOnePass(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/scheduled-event.json")
	require.NoError(t, err)
	var ev events.EventBridgeEvent
	require.NoError(t, json.Unmarshal(raw, &ev))
	require.Equal(t, time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC), ev.Time)

	f := &fakeJanitor{report: engine.JanitorReport{Resent: 2, TimedOut: 1}}
	j := &janitor{engine: f, log: slog.New(slog.DiscardHandler)}
	r, err := j.handle(t.Context(), ev)
	require.NoError(t, err)
	require.Equal(t, f.report, r.JanitorReport)
	require.Equal(t, SweepOff, r.EC2Sweep.Mode, "no sweeper, no sweep")
	require.Equal(t, 1, f.passes)

	// An empty event (a manual invoke) works as well.
	_, err = j.handle(t.Context(), events.EventBridgeEvent{})
	require.NoError(t, err)
	require.Equal(t, 2, f.passes)
}

// TestHandleReportsErrors: a pass that met errors answers them with what
// it did, so that the invocation counts as failed.
func TestHandleReportsErrors(t *testing.T) {
	t.Parallel()
	f := &fakeJanitor{report: engine.JanitorReport{Resent: 1}, err: errors.New("throttled")}
	j := &janitor{engine: f, log: slog.New(slog.DiscardHandler)}
	r, err := j.handle(t.Context(), events.EventBridgeEvent{})
	require.ErrorContains(t, err, "throttled")
	require.Equal(t, 1, r.Resent)
}

// TestTheHourlyPassPrunesTheAudit: the pass on the hour deletes audit
// records past their retention, every tenant's; the others leave them.
func TestTheHourlyPassPrunesTheAudit(t *testing.T) {
	t.Parallel()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	log := audit.New(db)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for i, at := range []time.Time{now.Add(-audit.Retention - time.Hour), now.Add(-time.Hour)} {
		require.NoError(t, log.Append(t.Context(), audit.Record{At: at, Tenant: "acme", RequestID: fmt.Sprint("r", i)}))
	}
	j := &janitor{engine: &fakeJanitor{}, log: slog.New(slog.DiscardHandler), audit: log,
		tenants: func(context.Context) ([]access.TenantView, error) {
			return []access.TenantView{{Tenant: domain.Tenant{ID: "acme"}}}, nil
		}}
	r, err := j.handle(t.Context(), events.EventBridgeEvent{Time: now.Add(5 * time.Minute)})
	require.NoError(t, err)
	require.Zero(t, r.AuditPruned, "not on the hour")
	r, err = j.handle(t.Context(), events.EventBridgeEvent{Time: now})
	require.NoError(t, err)
	require.Equal(t, 1, r.AuditPruned)
	left, _, err := log.List(t.Context(), "acme", 10, "")
	require.NoError(t, err)
	require.Len(t, left, 1)
	require.Equal(t, "r1", left[0].RequestID)
}
