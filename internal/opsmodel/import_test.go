package opsmodel

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"pgregory.net/rapid"
)

// bulkServices is how many services the orphaned import writes: past the
// 49 entities one transaction holds, so the import is staged (an import
// record, staged versions, then a flip; internal/catalog/staged.go).
const bulkServices = 120

// bulkCatalog declares bulkServices services, each with a description
// stamped with now, so that every import of it writes a new version of
// each and stages them. They belong to no template: clusters never see
// them.
func bulkCatalog() []byte {
	var b strings.Builder
	stamp := time.Now().Format(time.RFC3339Nano)
	b.WriteString("apiVersion: heddle/v1\nservices:\n")
	for i := range bulkServices {
		fmt.Fprintf(&b, "  - {name: bulk-%03d, description: \"filler written at %s\"}\n", i, stamp)
	}
	return []byte(b.String())
}

// importOrphaned cuts a staged import's request short after a drawn delay
// (often mid-staging: its record says staging and some versions are staged
// under it), then imports again: the second import must succeed at once,
// taking the version numbers the first one staged back, whatever the
// first one left (design brief: a staged import orphaned is reclaimed by
// the next import of the tenant at once, not after the janitor's cutoff).
//
// Who gives back what the cut import holds: its own request, when it
// notices the cut (catalog.abandon aborts the record and deletes what it
// staged); failing that, the next import (stageConflict reclaims the
// versions of an import that is no longer live); failing both, the
// janitor's CollectStaged.
func (w *world) importOrphaned(t *rapid.T) {
	cut := time.Duration(rapid.IntRange(1, 60).Draw(t, "cutAfterMs")) * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), cut)
	_, err := w.admin.ImportCatalog(ctx, bulkCatalog(), "application/yaml")
	cancel()
	if err == nil {
		// It beat the cut: an accepted import like any other.
		w.m.accept(http.MethodPost, "/v1/catalog", "")
		t.Logf("import of %d services finished within %s", bulkServices, cut)
	} else if ctx.Err() == nil {
		t.Fatalf("the import to be cut short failed before the cut: %v", err)
	} else {
		t.Logf("import of %d services cut after %s", bulkServices, cut)
	}
	cctx, ccancel := callCtx()
	defer ccancel()
	if _, err := w.admin.ImportCatalog(cctx, bulkCatalog(), "application/yaml"); err != nil {
		t.Fatalf("an import right after one cut short (after %s) failed: %v", cut, err)
	}
	w.m.accept(http.MethodPost, "/v1/catalog", "")
}
