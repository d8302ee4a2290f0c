package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// docSteps returns the command lines of the ```sh block that follows marker
// docArgv turns a documented `bin/heddle ...` line into the CLI's
// arguments as a shell splits them, with the repository's paths made
// relative to this package's directory, where the tests run.
func docArgv(t *testing.T, line string) []string {
	t.Helper()
	args, ok := strings.CutPrefix(line, "bin/heddle ")
	require.True(t, ok, line)
	argv := shellWords(args)
	for i, a := range argv {
		if strings.HasPrefix(a, "docs/") {
			argv[i] = "../../" + a
		}
	}
	return argv
}

// in a document, each with its comment (what the document says of it).
func docSteps(t *testing.T, doc, marker string) (lines, comments []string) {
	t.Helper()
	data, err := os.ReadFile(doc)
	require.NoError(t, err)
	text := string(data)
	at := strings.Index(text, marker)
	require.GreaterOrEqual(t, at, 0, "%s has %q", doc, marker)
	block := text[at:]
	start := strings.Index(block, "```sh\n")
	require.GreaterOrEqual(t, start, 0)
	block = block[start+len("```sh\n"):]
	block = block[:strings.Index(block, "```")]
	for _, line := range strings.Split(block, "\n") {
		comment := ""
		if i := strings.Index(line, " #"); i >= 0 {
			line, comment = line[:i], strings.TrimSpace(line[i+2:])
		}
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			lines, comments = append(lines, line), append(comments, comment)
		}
	}
	return lines, comments
}

// waitInstalling polls the job until an install task runs.
func waitInstalling(t *testing.T, s *server, admin, id, job string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var j struct {
			Status string `json:"status"`
			Tasks  []struct {
				Action string `json:"action"`
				Status string `json:"status"`
			} `json:"tasks"`
		}
		require.NoError(t, json.Unmarshal([]byte(s.must(admin, "jobs", "show", id, job, "-o", "json")), &j))
		require.NotEqual(t, "SUCCEEDED", j.Status, "the job ended before an install was seen running; make the install slower")
		for _, task := range j.Tasks {
			if task.Action == "install" && task.Status == "RUNNING" {
				return
			}
		}
		require.True(t, time.Now().Before(deadline), "no install started: %+v", j)
		time.Sleep(100 * time.Millisecond)
	}
}

// TestBackupRoundTripMidJob runs docs/operations.md's backup and restore
// commands exactly as written, from a directory whose .heddle is the
// server's data directory and whose bin/heddle is this heddle: a backup
// taken while a create job is half done, the server stopped while the job
// goes on, the store restored over the data directory (refused without
// --force), and the restored job finishing after the server starts again.
func TestBackupRoundTripMidJob(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	admin := s.tenant("acme")
	catalog := filepath.Join(s.dir, "slow.yaml")
	require.NoError(t, os.WriteFile(catalog, []byte(slowCatalog), 0o600))
	s.must(admin, "apply", "-f", catalog)
	id, job := s.createdID(s.must(admin, "clusters", "create", "slow", "--template", "slow", "--size", "4", "-o", "json"))
	waitInstalling(t, s, admin, id, job)

	work := t.TempDir()
	require.NoError(t, os.Symlink(filepath.Join(s.dir, "data"), filepath.Join(work, ".heddle")))
	require.NoError(t, os.MkdirAll(filepath.Join(work, "bin"), 0o700))
	wrapper := fmt.Sprintf("#!/bin/sh\n%s=1 exec %q \"$@\"\n", runMainEnv, os.Args[0])
	require.NoError(t, os.WriteFile(filepath.Join(work, "bin", "heddle"), []byte(wrapper), 0o700))
	sh := func(line string) (string, error) {
		cmd := exec.Command("bash", "-c", line)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "HEDDLE_ENDPOINT=http://"+s.addr, "HEDDLE_KEY="+s.super, "HEDDLE_CONFIG="+filepath.Join(work, "none.yaml"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	lines, _ := docSteps(t, "../../docs/operations.md", "To back up a running server:")
	require.Len(t, lines, 1)
	out, err := sh(lines[0])
	require.NoError(t, err, "%s\n%s", lines[0], out)
	key, err := os.ReadFile(filepath.Join(s.dir, "data", "master.key"))
	require.NoError(t, err)
	require.NotContains(t, out, strings.TrimSpace(string(key)), "the master key is never printed")
	require.Contains(t, out, "master.key (mode 0600)")
	for _, f := range []string{"heddle.db", "master.key", "manifest.json"} {
		info, err := os.Stat(filepath.Join(work, "backup", f))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), f)
	}

	// The job goes on after the backup, and a tenant is made; the restore
	// rewinds both.
	s.tenant("later")
	time.Sleep(time.Second)
	require.NoError(t, s.kill(syscall.SIGTERM))

	lines, comments := docSteps(t, "../../docs/operations.md", "To restore, stop the server first:")
	require.Len(t, lines, 2)
	for i, line := range lines {
		out, err := sh(line)
		if strings.HasPrefix(comments[i], "refused") {
			require.Error(t, err, "%s\n%s", line, out)
			require.Contains(t, out, "not empty")
			continue
		}
		require.NoError(t, err, "%s\n%s", line, out)
	}

	s.start()
	req, err := http.NewRequest(http.MethodGet, "http://"+s.addr+"/v1/tenants/later", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+s.super)
	resp, err := testHTTP.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "the tenant made after the backup is not in the restored store")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		c := s.show(admin, id)
		if c.Progress.Status == "SUCCEEDED" {
			require.Equal(t, "ACTIVE", c.Status)
			require.Equal(t, c.Progress.Total, c.Progress.Done)
			break
		}
		require.NotContains(t, []string{"FAILED", "ABORTED"}, c.Progress.Status, s.must(admin, "jobs", "show", id, job))
		require.True(t, time.Now().Before(deadline), "the restored job did not finish: %+v", c.Progress)
		time.Sleep(200 * time.Millisecond)
	}
	s.must(admin, "clusters", "delete", id, "--wait")
}

// TestBackupRefusesAnotherServersDataDirectory: --data-dir naming another
// server's directory would save a key that cannot open the fetched store;
// the backup says so and saves nothing, and the server's own directory
// backs up.
func TestBackupRefusesAnotherServersDataDirectory(t *testing.T) {
	t.Parallel()
	s, other := newServer(t), newServer(t)
	out := filepath.Join(t.TempDir(), "backup")
	r := s.cli(s.super, "backup", "--data-dir", filepath.Join(other.dir, "data"), "--out", out)
	require.NotZero(t, r.code)
	require.Contains(t, r.stderr, "the store is sealed by master key local:")
	require.Contains(t, r.stderr, "--data-dir must be that server's data directory")
	require.Contains(t, r.stderr, "the master key of the server at http://"+s.addr, "refused on the answer's header, before the download")
	entries, _ := os.ReadDir(out)
	require.Empty(t, entries, "nothing was saved")

	r = s.cli(s.super, "backup", "--data-dir", filepath.Join(s.dir, "data"), "--out", out)
	require.Zero(t, r.code, r.stderr)
	require.FileExists(t, filepath.Join(out, "master.key"))
}
