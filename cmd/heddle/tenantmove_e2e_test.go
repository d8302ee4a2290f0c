package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// docShell runs a document's command line from a directory whose
// bin/heddle is this heddle, against endpoint with key.
type docShell struct {
	t    *testing.T
	work string
}

func newDocShell(t *testing.T) *docShell {
	t.Helper()
	work := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(work, "bin"), 0o700))
	wrapper := fmt.Sprintf("#!/bin/sh\n%s=1 exec %q \"$@\"\n", runMainEnv, os.Args[0])
	require.NoError(t, os.WriteFile(filepath.Join(work, "bin", "heddle"), []byte(wrapper), 0o700))
	return &docShell{t: t, work: work}
}

func (d *docShell) run(s *server, key, line string, env ...string) (string, error) {
	cmd := exec.Command("bash", "-c", line)
	cmd.Dir = d.work
	cmd.Env = append(append(os.Environ(), "HEDDLE_ENDPOINT=http://"+s.addr, "HEDDLE_KEY="+key,
		"HEDDLE_CONFIG="+filepath.Join(d.work, "none.yaml")), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestTenantExportImportAsDocumented runs docs/operations.md's export and
// import commands exactly as written: acme's catalog and users go from one
// heddle server to another, the second import writes nothing, and an
// import into a tenant that holds another entity of the same name is
// refused with the key and writes nothing.
func TestTenantExportImportAsDocumented(t *testing.T) {
	t.Parallel()
	src, dst, third := newServer(t), newServer(t), newServer(t)
	sh := newDocShell(t)
	ann := src.tenant("acme")
	src.must(ann, "apply", "-f", "../../docs/examples/catalog.yaml")
	// A service that runs a script resource: the script moves with it.
	src.must(ann, "apply", "-f", "../../docs/examples/hello-scripts.yaml")

	exportLines, _ := docSteps(t, "../../docs/operations.md", "To export a tenant:")
	require.Len(t, exportLines, 1)
	out, err := sh.run(src, ann, exportLines[0])
	require.NoError(t, err, out)
	require.Contains(t, out, "exported tenant acme")
	info, err := os.Stat(filepath.Join(sh.work, "acme-export", "export.key"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	key, err := os.ReadFile(filepath.Join(sh.work, "acme-export", "export.key"))
	require.NoError(t, err)
	require.NotContains(t, out, strings.TrimSpace(string(key)))

	importLines, comments := docSteps(t, "../../docs/operations.md", "To import it (into an empty tenant acme")
	require.Len(t, importLines, 2)
	dstAnn := dst.tenant("acme")
	for i, line := range importLines {
		out, err := sh.run(dst, dstAnn, line)
		require.NoError(t, err, out)
		if strings.HasPrefix(comments[i], "again") {
			require.Contains(t, out, "imported: 0 records written")
		} else {
			require.Regexp(t, `imported: [1-9][0-9]* records written`, out)
		}
	}
	require.Equal(t, src.must(ann, "export"), dst.must(dstAnn, "export"), "the catalog reads the same on both")
	require.Equal(t, src.must(ann, "scripts", "show", "hello-install"), dst.must(dstAnn, "scripts", "show", "hello-install"),
		"the script resource moved with the service that runs it")
	id, job := dst.createdID(dst.must(dstAnn, "clusters", "create", "hello", "--template", "hello", "--size", "1", "-o", "json"))
	dst.must(dstAnn, "jobs", "watch", id, job)
	var created struct {
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(dst.must(dstAnn, "clusters", "show", id, "-o", "json")), &created))
	require.Equal(t, "ACTIVE", created.Status, "the moved service ran its script")
	dst.must(dstAnn, "clusters", "delete", id, "--wait")
	out, err = sh.run(dst, ann, "bin/heddle clusters list")
	require.NoError(t, err, "ann's key of the source works on the target: %s", out)

	thirdAnn := third.tenant("acme")
	other := filepath.Join(sh.work, "other.yaml")
	require.NoError(t, os.WriteFile(other, []byte("apiVersion: heddle/v1\nproviders:\n  - name: local\n    description: another\n    providerType: local\n"), 0o600))
	third.must(thirdAnn, "apply", "-f", other)
	before := third.must(thirdAnn, "export")
	out, err = sh.run(third, thirdAnn, importLines[0])
	require.Error(t, err, out)
	require.Contains(t, out, "CAT#providers / local")
	require.Contains(t, out, "nothing was written")
	require.Equal(t, before, third.must(thirdAnn, "export"), "the refused import changed nothing")

	// migrate refuses a target that is the source, and a key of another
	// tenant there, before reading anything.
	r := src.cli(ann, "migrate", "--to", "http://"+src.addr, "--to-key", ann)
	require.NotZero(t, r.code)
	require.Contains(t, r.stderr, "this deployment itself")
	otherAdmin := dst.tenant("globex")
	r = src.cli(ann, "migrate", "--to", "http://"+dst.addr, "--to-key", otherAdmin)
	require.NotZero(t, r.code)
	require.Contains(t, r.stderr, `create tenant "acme" on the target`)
}
