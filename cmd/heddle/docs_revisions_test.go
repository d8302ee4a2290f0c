package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/domain"
)

// TestDocsRevisionsSteps runs docs/operations.md's revision and rollback
// commands as written, against a server with the local provider, and
// checks what each is documented to show; then that the cluster after
// the rollback has revision 1's definition, and that bad rollbacks are
// refused with a structured error and change nothing.
func TestDocsRevisionsSteps(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	admin := s.tenant("acme")
	steps, _ := docSteps(t, "../../docs/operations.md", "## Revisions and rollback")
	require.Len(t, steps, 12)
	rollbacks := 0
	for _, line := range steps {
		t.Logf("$ %s", line)
		argv := docArgv(t, line)
		out := s.must(admin, argv...)
		switch {
		case line == "bin/heddle clusters history shop":
			require.Regexp(t, `(?m)^4\s+\*\s+add-services\s`, out)
			require.Regexp(t, `(?m)^3\s+reconfigure\s`, out)
			require.Regexp(t, `(?m)^2\s+expand\s`, out)
			require.Regexp(t, `(?m)^1\s+create\s`, out)
		case strings.Contains(line, "--from 1 --to 4"):
			require.Contains(t, out, "service   + metrics")
			require.Contains(t, out, `config    {"size":1} -> {"size":3}`)
			require.Contains(t, out, "size      1 -> 2")
		case strings.Contains(line, "--dry-run"):
			require.Contains(t, out, "rollback to revision 1: remove-services metrics, then reconfigure config, then shrink by 1")
			require.Contains(t, out, "first step, remove-services metrics:")
		case strings.Contains(line, "clusters rollback"):
			rollbacks++
			if rollbacks == 1 {
				require.Contains(t, out, "step 1: remove-services metrics")
				require.Contains(t, out, "step 2: reconfigure config")
				require.Contains(t, out, "step 3: shrink by 1")
				require.Contains(t, out, "is at revision 1's definition")
				assertRollbackBuiltRevision(t, s, admin)
				assertRollbackRefusals(t, s, admin)
			} else {
				require.Contains(t, out, "cluster shop is at revision 1's definition")
				require.NotContains(t, out, "step 1")
			}
		case strings.Contains(line, "--from 1 --to 7"):
			require.Contains(t, out, "no change: the same definition")
		}
	}
}

// assertRollbackBuiltRevision checks the rolled-back cluster against
// revision 1 through the API: the definition's digest, the live nodes and
// the revisions the steps recorded.
func assertRollbackBuiltRevision(t *testing.T, s *server, admin string) {
	t.Helper()
	var c domain.Cluster // the view embeds the cluster
	require.NoError(t, json.Unmarshal([]byte(s.must(admin, "clusters", "show", "shop", "-o", "json")), &c))
	require.EqualValues(t, 7, c.Revision)
	cl := NewClient("http://"+s.addr, admin)
	get := func(n string) domain.Revision {
		r, err := client.Send[domain.Revision](t.Context(), cl, http.MethodGet, "/v1/clusters/"+c.ID+"/revisions/"+n, nil, nil)
		require.NoError(t, err)
		return *r
	}
	r1, r7 := get("1"), get("7")
	now := domain.ClusterDefinition{Template: c.Template, Services: c.Services, Config: c.Config, Size: c.NodeCount}
	require.Equal(t, r1.Digest, now.Digest(), "the cluster's definition is revision 1's")
	require.Equal(t, r1.Digest, r7.Digest)
	require.EqualValues(t, 1, r7.RollbackOf)
	require.Equal(t, 1, c.NodeCount)
	require.ElementsMatch(t, []string{"web", "cache"}, c.Services)
}

// assertRollbackRefusals: an unknown revision and a bad one are refused
// with the field and change nothing.
func assertRollbackRefusals(t *testing.T, s *server, admin string) {
	t.Helper()
	before := s.must(admin, "clusters", "history", "shop", "-o", "json")
	r := s.cli(admin, "clusters", "rollback", "shop", "--to", "99")
	require.NotZero(t, r.code)
	require.Contains(t, r.stderr, "cluster shop has revisions 1 to 7")
	var shown domain.Cluster
	require.NoError(t, json.Unmarshal([]byte(s.must(admin, "clusters", "show", "shop", "-o", "json")), &shown))
	cl := NewClient("http://"+s.addr, admin)
	for body, want := range map[string]struct {
		status int
		field  string
	}{
		`{"revision":0}`:  {http.StatusUnprocessableEntity, "revision"},
		`{"revision":99}`: {http.StatusNotFound, "revision"},
	} {
		_, err := client.Send[client.Result](t.Context(), cl, http.MethodPost, "/v1/clusters/"+shown.ID+"/rollback", nil, json.RawMessage(body))
		var apiErr *client.Error
		require.ErrorAs(t, err, &apiErr, body)
		require.Equal(t, want.status, apiErr.Status, body)
		require.Equal(t, want.field, apiErr.Details[0].Field, body)
	}
	_, err := client.Send[domain.Revision](t.Context(), cl, http.MethodGet, "/v1/clusters/"+shown.ID+"/revisions/x", nil, nil)
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, "path.revision", apiErr.Details[0].Field)
	require.Equal(t, before, s.must(admin, "clusters", "history", "shop", "-o", "json"))
}
