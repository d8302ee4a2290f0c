package main

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// TestApplyingTheExamplesTwiceWritesNoVersion: `heddle apply` of the
// example documents a second time, and `heddle scripts push` of a script's
// unchanged file between two applies, write no version of anything and say
// so; each entity keeps the version (and the script its description) the
// first apply gave it.
func TestApplyingTheExamplesTwiceWritesNoVersion(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	admin := s.tenant("acme")

	for _, doc := range []string{"../../docs/examples/catalog.yaml", "../../docs/examples/static-pool.yaml", "../../docs/examples/hello-scripts.yaml"} {
		s.must(admin, "apply", "-f", doc)
	}
	first := s.catalogVersions(admin)
	require.Equal(t, 1, first["scripts/hello-install"])

	for _, doc := range []string{"../../docs/examples/catalog.yaml", "../../docs/examples/static-pool.yaml", "../../docs/examples/hello-scripts.yaml"} {
		require.Regexp(t, `(?m)^0 created, 0 updated, [1-9][0-9]* unchanged$`, s.must(admin, "apply", "-f", doc), doc)
	}
	require.Equal(t, first, s.catalogVersions(admin))

	out := s.must(admin, "scripts", "push", "hello-install", "../../docs/examples/scripts/hello-install.sh")
	require.Contains(t, out, "script hello-install version 1 unchanged")
	require.Regexp(t, `(?m)^0 created, 0 updated, [1-9][0-9]* unchanged$`, s.must(admin, "apply", "-f", "../../docs/examples/hello-scripts.yaml"))
	require.Equal(t, first, s.catalogVersions(admin))
	require.Contains(t, s.must(admin, "scripts", "list"), "Writes the node's greeting.")
}

// catalogVersions reads every entity's latest version, by "kind/name".
func (s *server) catalogVersions(key string) map[string]int {
	s.t.Helper()
	out := map[string]int{}
	for _, k := range domain.Kinds {
		req, err := http.NewRequest(http.MethodGet, "http://"+s.addr+"/v1/"+string(k)+"?limit=200", nil)
		require.NoError(s.t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := testHTTP.Do(req)
		require.NoError(s.t, err)
		var page struct {
			Items []struct {
				Name    string `json:"name"`
				Version int    `json:"version"`
			} `json:"items"`
			NextCursor string `json:"nextCursor"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		require.NoError(s.t, err)
		require.Equal(s.t, http.StatusOK, resp.StatusCode)
		require.Empty(s.t, page.NextCursor, "more than one page of %s", k)
		for _, it := range page.Items {
			out[string(k)+"/"+it.Name] = it.Version
		}
	}
	return out
}
