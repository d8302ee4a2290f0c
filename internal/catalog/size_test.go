package catalog

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// sizedProvider returns a valid provider (every field under
// domain.MaxFieldBytes) whose JSON encoding at version 1 is exactly size bytes.
func sizedProvider(t *testing.T, name string, size int) *domain.Provider {
	t.Helper()
	p := &domain.Provider{Meta: domain.Meta{Name: name, Version: 1}, ProviderType: "static", Fields: map[string]string{}}
	for i := 0; ; i++ {
		data, err := json.Marshal(p)
		require.NoError(t, err)
		missing := size - len(data)
		if missing <= 0 {
			require.Equal(t, size, len(data), "the provider overshot its size")
			break
		}
		key := fmt.Sprintf("f%02d", i)
		// A new field costs its key, quotes, colon and comma besides its value.
		value := min(domain.MaxFieldBytes, missing-len(key)-6)
		require.Positive(t, value)
		p.Fields[key] = strings.Repeat("x", value)
	}
	p.Version = 0
	require.Empty(t, p.Validate())
	return p
}

func TestPutRefusesAnEntityTooLargeToStore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tenant := strings.Repeat("t", 63) // the longest keys leave the least room
	name := strings.Repeat("p", 63)

	// The largest entity the catalog accepts fits in a store item.
	fits := sizedProvider(t, name, MaxEntityBytes)
	_, created, err := b.cat.Put(b.ctx, tenant, fits, "")
	require.NoError(t, err, "an entity of MaxEntityBytes must fit in one store item")
	require.True(t, created)
	rev, err := b.cat.Revision(b.ctx, tenant)
	require.NoError(t, err)

	// One byte more is refused before the store sees it, as a new entity...
	other := strings.Repeat("q", 63)
	_, _, err = b.cat.Put(b.ctx, tenant, sizedProvider(t, other, MaxEntityBytes+1), "")
	var tooLarge *EntityTooLargeError
	require.ErrorAs(t, err, &tooLarge)
	require.ErrorIs(t, err, ErrTooLarge)
	require.Equal(t, MaxEntityBytes+1, tooLarge.Bytes)
	require.Contains(t, err.Error(), `provider "`+other+`"`)
	require.Contains(t, err.Error(), "script resource")
	_, err = b.cat.Get(b.ctx, tenant, domain.KindProvider, other, 0)
	require.ErrorIs(t, err, ErrNotFound)

	// ...and as a new version of an existing one.
	_, _, err = b.cat.Put(b.ctx, tenant, sizedProvider(t, name, MaxEntityBytes+1), "")
	require.ErrorAs(t, err, &tooLarge)
	got, err := b.cat.Get(b.ctx, tenant, domain.KindProvider, name, 0)
	require.NoError(t, err)
	require.Equal(t, 1, got.EntityMeta().Version)
	again, err := b.cat.Revision(b.ctx, tenant)
	require.NoError(t, err)
	require.Equal(t, rev, again, "a refused write does not bump the revision")
}

func TestImportWithAnEntityTooLargeWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// A service whose every action field is valid on its own, but which
	// together exceed what one item holds.
	svc := service("big")
	svc.Actions = map[domain.Action]domain.ServiceAction{}
	for _, a := range domain.ServiceActions {
		svc.Actions[a] = domain.ServiceAction{Type: "shell", Fields: map[string]string{"script": strings.Repeat("#", domain.MaxFieldBytes)}}
	}
	require.Empty(t, svc.Validate())
	d := &Document{APIVersion: DocumentAPIVersion, Services: []*domain.Service{service("small"), svc}}
	_, err := b.cat.Import(b.ctx, "acme", d)
	var tooLarge *EntityTooLargeError
	require.ErrorAs(t, err, &tooLarge)
	require.Equal(t, domain.KindService, tooLarge.Kind)
	require.Equal(t, "big", tooLarge.Name)
	items, _, err := b.cat.List(b.ctx, "acme", domain.KindService, 100, "")
	require.NoError(t, err)
	require.Empty(t, items, "nothing of a refused import is written")
}

func TestImportOverFourMegabytesIsStagedAllOrNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Twelve providers of 200 KB come to 4.8 MB with their history items:
	// more than one transaction carries, so the import is staged.
	d := &Document{APIVersion: DocumentAPIVersion}
	for i := range 12 {
		d.Providers = append(d.Providers, sizedProvider(t, fmt.Sprintf("p%d", i), 200<<10))
	}
	res, err := b.cat.Import(b.ctx, "acme", d)
	require.NoError(t, err)
	require.Len(t, res.Created, 12)
	items, _, err := b.cat.List(b.ctx, "acme", domain.KindProvider, 100, "")
	require.NoError(t, err)
	require.Len(t, items, 12)
	for _, it := range items {
		require.Equal(t, 1, it.EntityMeta().Version)
	}
}
