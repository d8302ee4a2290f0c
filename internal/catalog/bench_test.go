package catalog

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/catalog/catalogtest"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// smallDoc is a five-entity catalog: one of each kind a template needs.
func smallDoc(mark string) *Document {
	return &Document{APIVersion: DocumentAPIVersion,
		Providers:     []*domain.Provider{{Meta: domain.Meta{Name: "local", Description: mark}, ProviderType: "local"}},
		HardwareTypes: []*domain.HardwareType{{Meta: domain.Meta{Name: "small", Description: mark}, ProviderMap: map[string]domain.HardwareFlavor{"local": {Flavor: "small"}}}},
		ImageTypes:    []*domain.ImageType{{Meta: domain.Meta{Name: "debian", Description: mark}, ProviderMap: map[string]domain.ImageRef{"local": {Image: "host"}}}},
		Services:      []*domain.Service{{Meta: domain.Meta{Name: "web", Description: mark}}},
		ClusterTemplates: []*domain.ClusterTemplate{{Meta: domain.Meta{Name: "web", Description: mark}, TemplateSections: domain.TemplateSections{
			Compatibility: domain.Compatibility{Services: []string{"web"}},
			Defaults:      domain.Defaults{Services: []string{"web"}, Provider: "local", HardwareType: "small", ImageType: "debian"},
		}}},
	}
}

// TestSmallImportStaysOneTransaction pins the cost of a small import: it
// does not take the staged path, so five new entities are one transaction
// of eleven writes (the revision, a head and a version each), as before
// imports of any size.
func TestSmallImportStaysOneTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	counting := store.NewCounting(b.db)
	cat := New(counting, nil)
	_, err := cat.Import(b.ctx, "acme", smallDoc("A"))
	require.NoError(t, err)
	c := counting.Counts()
	require.Equal(t, int64(11), c.Writes)
	require.Equal(t, int64(1), c.Transactions)

	// A 500-entity import: the staged path, about two writes per entity.
	counting.Reset()
	_, err = cat.Import(b.ctx, "big", largeDoc(t, catalogtest.LargeServices, "A"))
	require.NoError(t, err)
	c = counting.Counts()
	require.Equal(t, int64(2*catalogtest.LargeEntities+7), c.Writes,
		"a version and a head per entity; the record and one manifest page; the flip's two; the idle revision; the deletes of the page and the record")
}

// BenchmarkImport imports a 5-entity and a 500-entity catalog (new, and as
// a new version of every entity) on the embedded store and, when
// HEDDLE_DYNAMODB_ENDPOINT names DynamoDB Local, on DynamoDB. It reports
// the store writes (and reads) one import makes besides its time.
func BenchmarkImport(b *testing.B) {
	ctx := context.Background()
	for backend, open := range backends(b) {
		for _, size := range []struct {
			name string
			doc  func(mark string) *Document
		}{
			{"entities=5", smallDoc},
			{fmt.Sprintf("entities=%d", catalogtest.LargeEntities), func(mark string) *Document {
				return largeDoc(b, catalogtest.LargeServices, mark)
			}},
		} {
			docs := []*Document{size.doc("A"), size.doc("B")}
			b.Run(backend+"/"+size.name+"/new", func(b *testing.B) {
				counting := store.NewCounting(open(b))
				cat := New(counting, nil)
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					_, err := cat.Import(ctx, fmt.Sprintf("t%d", i), docs[0])
					require.NoError(b, err)
				}
				report(b, counting)
			})
			b.Run(backend+"/"+size.name+"/update", func(b *testing.B) {
				counting := store.NewCounting(open(b))
				cat := New(counting, nil)
				_, err := cat.Import(ctx, "acme", docs[0])
				require.NoError(b, err)
				counting.Reset()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					_, err := cat.Import(ctx, "acme", docs[(i+1)%2])
					require.NoError(b, err)
				}
				report(b, counting)
			})
		}
	}
}

func report(b *testing.B, counting *store.Counting) {
	c := counting.Counts()
	b.ReportMetric(float64(c.Writes)/float64(b.N), "writes/op")
	b.ReportMetric(float64(c.Transactions)/float64(b.N), "transactions/op")
	b.ReportMetric(float64(c.Reads())/float64(b.N), "reads/op")
}
