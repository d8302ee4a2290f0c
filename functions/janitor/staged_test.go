package main

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/catalog/catalogtest"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

// diesAtTheFlip stands for an API Lambda that dies after staging a large
// import, before publishing it: the transaction that would flip the catalog
// revision to "importing" never reaches the store.
type diesAtTheFlip struct{ store.Store }

func (d diesAtTheFlip) Transact(ctx context.Context, ops []store.Op) error {
	for _, op := range ops {
		if op.Changes.Status != nil && *op.Changes.Status == "importing" {
			return errors.New("the process died")
		}
	}
	return d.Store.Transact(ctx, ops)
}

// TestTheHourlyPassCollectsAbandonedCatalogImports: a large import whose
// writer died before publishing it leaves staged versions; the pass on the
// hour, once the import's staging lease has run out, deletes them.
func TestTheHourlyPassCollectsAbandonedCatalogImports(t *testing.T) {
	t.Parallel()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	doc, err := catalog.DecodeDocument(catalogtest.Large(100, "A"))
	require.NoError(t, err)
	_, err = catalog.New(diesAtTheFlip{db}, nil).Import(t.Context(), "acme", doc)
	require.ErrorContains(t, err, "the process died")

	cat := catalog.New(db, nil)
	services, _, err := cat.List(t.Context(), "acme", domain.KindService, 10, "")
	require.NoError(t, err)
	require.Empty(t, services, "nothing of the import is visible")

	j := &janitor{engine: &fakeJanitor{}, log: slog.New(slog.DiscardHandler), catalog: cat,
		tenants: func(context.Context) ([]access.TenantView, error) {
			return []access.TenantView{{Tenant: domain.Tenant{ID: "acme"}}}, nil
		}}
	// An import within its staging lease is left alone by the same rule
	// (catalog's TestAnImportOrphanedByACrashIsReclaimedAtOnce); this one's
	// writer died, so its lease has run out by any later hour.
	// Not on the hour: no collection whatever the age.
	late := time.Now().Add(3 * time.Hour).Truncate(time.Hour)
	r, err := j.handle(t.Context(), events.EventBridgeEvent{Time: late.Add(time.Minute)})
	require.NoError(t, err)
	require.Zero(t, r.StagedCollected)
	r, err = j.handle(t.Context(), events.EventBridgeEvent{Time: late})
	require.NoError(t, err)
	entities := len(doc.Providers) + len(doc.HardwareTypes) + len(doc.ImageTypes) + len(doc.Services) + len(doc.PartialTemplates) + len(doc.ClusterTemplates)
	require.Equal(t, entities, r.StagedCollected, "a staged version of every entity of the document")
	r, err = j.handle(t.Context(), events.EventBridgeEvent{Time: late})
	require.NoError(t, err)
	require.Zero(t, r.StagedCollected, "collected once")
}
