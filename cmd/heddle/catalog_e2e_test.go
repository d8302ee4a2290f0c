package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/catalog/catalogtest"
)

// TestFiveHundredEntityCatalogOnTheLocalServer: catalogtest's 500-entity
// catalog goes into a real `heddle server` with `heddle apply -f` and comes
// back whole with `heddle export`; a new version of every entity then goes
// in through POST /v1/catalog while `heddle export` runs, and every export
// is one catalog or the other, never a mix.
func TestFiveHundredEntityCatalogOnTheLocalServer(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	admin := s.tenant("acme")

	file := filepath.Join(t.TempDir(), "catalog.json")
	require.NoError(t, os.WriteFile(file, catalogtest.Large(catalogtest.LargeServices, "A"), 0o600))
	out := s.must(admin, "apply", "-f", file)
	require.Contains(t, out, "500 created, 0 updated, 0 unchanged")
	require.Equal(t, map[string]int{"A": catalogtest.LargeEntities}, s.exportMarks(admin))

	done := make(chan struct{})
	go func() {
		defer close(done)
		req, err := http.NewRequest(http.MethodPost, "http://"+s.addr+"/v1/catalog", bytes.NewReader(catalogtest.Large(catalogtest.LargeServices, "B")))
		if err != nil {
			t.Error(err)
			return
		}
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		resp, err := testHTTP.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		var res catalog.ImportResult
		if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != http.StatusOK || len(res.Updated) != catalogtest.LargeEntities {
			t.Errorf("POST /v1/catalog: %d, %d updated, %v", resp.StatusCode, len(res.Updated), err)
		}
	}()
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		m := s.exportMarks(admin)
		require.Len(t, m, 1, "an export mixes two imports: %v", m)
	}
	require.Equal(t, map[string]int{"B": catalogtest.LargeEntities}, s.exportMarks(admin))

	// The export is what apply reads: applying it changes nothing.
	exported := filepath.Join(t.TempDir(), "exported.yaml")
	require.NoError(t, os.WriteFile(exported, []byte(s.must(admin, "export")), 0o600))
	require.Contains(t, s.must(admin, "apply", "-f", exported), "0 created, 0 updated, 500 unchanged")
}

// exportMarks runs `heddle export --format json` and counts the entities by
// the mark catalogtest.Large put in their descriptions.
func (s *server) exportMarks(key string) map[string]int {
	s.t.Helper()
	d, err := catalog.DecodeDocument([]byte(s.must(key, "export", "--format", "json")))
	require.NoError(s.t, err)
	out := map[string]int{}
	add := func(desc string) {
		if i := strings.LastIndex(desc, "("); i >= 0 {
			out[strings.TrimSuffix(desc[i+1:], ")")]++
		}
	}
	for _, e := range d.Providers {
		add(e.Description)
	}
	for _, e := range d.HardwareTypes {
		add(e.Description)
	}
	for _, e := range d.ImageTypes {
		add(e.Description)
	}
	for _, e := range d.Services {
		add(e.Description)
	}
	for _, e := range d.PartialTemplates {
		add(e.Description)
	}
	for _, e := range d.ClusterTemplates {
		add(e.Description)
	}
	return out
}
