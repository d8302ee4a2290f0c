package tenantmove

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// BenchmarkMove exports a tenant with a 1,000-node cluster (its nodes, one
// finished job with 2,000 tasks, the fixture's catalog and users) and
// imports it into an empty deployment of the same backend, and prints the
// records per second of each half. Run it with the DynamoDB Local
// variables set for the dynamodb figures:
//
//	go test -run '^$' -bench Move -benchtime 1x ./internal/tenantmove/
func BenchmarkMove(b *testing.B) {
	for _, name := range []string{"bolt", "dynamodb"} {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				src, dst := benchSide(b, name), benchSide(b, name)
				bulk(b, src)
				dst.tenant(b)
				id, err := NewIdentity()
				require.NoError(b, err)
				b.StartTimer()
				start := time.Now()
				var pages []*ExportPage
				records := 0
				for cursor := ""; ; {
					p, err := src.mover.Export(b.Context(), "acme", id.Recipient(), cursor)
					require.NoError(b, err)
					require.NoError(b, id.Unbox(p.Records))
					pages, records = append(pages, p), records+len(p.Records)
					if cursor = p.Next; cursor == "" {
						break
					}
				}
				exported := time.Since(start)
				start = time.Now()
				for _, p := range pages {
					_, err := dst.mover.Import(b.Context(), "acme", domain.RoleAdmin, request(p))
					require.NoError(b, err)
				}
				imported := time.Since(start)
				b.ReportMetric(float64(records)/exported.Seconds(), "exported-records/s")
				b.ReportMetric(float64(records)/imported.Seconds(), "imported-records/s")
				fmt.Printf("%s: %d records in %d pages: export %v (%.0f records/s), import %v (%.0f records/s)\n",
					name, records, len(pages), exported.Round(time.Millisecond), float64(records)/exported.Seconds(),
					imported.Round(time.Millisecond), float64(records)/imported.Seconds())
			}
		})
	}
}

func benchSide(b *testing.B, name string) *side {
	if name == "bolt" {
		return boltSide(b)
	}
	return dynamoSide(b)
}

// bulk adds a finished 1,000-node cluster with 2,000 tasks to the fixture.
func bulk(b *testing.B, sd *side) {
	b.Helper()
	sd.fill(b)
	s := store.Scoped(sd.store, "acme")
	var ops []store.Op
	flush := func() {
		if len(ops) > 0 {
			require.NoError(b, s.Transact(b.Context(), ops))
			ops = ops[:0]
		}
	}
	add := func(pk, sk, status string, v any) {
		data, err := json.Marshal(v)
		require.NoError(b, err)
		ops = append(ops, store.Put(store.Item{Key: store.Key{PK: pk, SK: sk}, Status: status, Data: data}, store.Condition{}))
		if len(ops) == 100 {
			flush()
		}
	}
	for i := range 1000 {
		add("NODES#c1", fmt.Sprintf("n%04d", i), "ACTIVE", domain.Node{ID: fmt.Sprintf("n%04d", i), ClusterID: "c1", ProviderID: fmt.Sprintf("i-%08x", i)})
	}
	for i := range 2000 {
		add("TASKS#j1", fmt.Sprintf("t%05d", i), "SUCCEEDED", map[string]any{"id": fmt.Sprintf("t%05d", i), "jobId": "j1", "status": "SUCCEEDED", "action": "install"})
	}
	flush()
}
