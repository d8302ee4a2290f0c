package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type followedEvent struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Job      string `json:"job"`
	Status   string `json:"status"`
	Previous string `json:"previous"`
}

func parseEventLines(t *testing.T, out string) []followedEvent {
	t.Helper()
	var evs []followedEvent
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var ev followedEvent
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev), sc.Text())
		evs = append(evs, ev)
	}
	return evs
}

func changes(evs []followedEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type + " " + ev.Previous + ">" + ev.Status
	}
	return out
}

// TestEventsStayInOrderAcrossAKill9: a server killed while a create runs
// loses no event and writes none twice; `clusters events --follow`, asking
// throughout, sees every event once and in order.
func TestEventsStayInOrderAcrossAKill9(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	admin := s.tenant("acme")
	catalog := filepath.Join(s.dir, "slow.yaml")
	require.NoError(t, os.WriteFile(catalog, []byte(slowCatalog), 0o600))
	s.must(admin, "apply", "-f", catalog)
	id, job := s.createdID(s.must(admin, "clusters", "create", "slow", "--template", "slow", "--size", "2", "-o", "json"))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var followed, followErr lockedBuffer
	done := make(chan int, 1)
	go func() {
		args := []string{"--endpoint", "http://" + s.addr, "--key", admin, "clusters", "events", id, "--follow", "-o", "json"}
		done <- run(ctx, newRootCommand(), args, strings.NewReader(""), &followed, &followErr)
	}()

	// Kill it while the installs run.
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(followed.String(), `"status":"RUNNING"`) {
		require.True(t, time.Now().Before(deadline), "the job did not start: %s", followed.String())
		time.Sleep(50 * time.Millisecond)
	}
	require.Error(t, s.kill(syscall.SIGKILL), "the server was killed, not stopped")
	s.start()
	require.Contains(t, s.must(admin, "jobs", "watch", id, job), "SUCCEEDED")

	want := []string{"job.status >PENDING", "cluster.status >PENDING", "job.status PENDING>RUNNING",
		"job.status RUNNING>SUCCEEDED", "cluster.status PENDING>ACTIVE"}
	var listed []followedEvent
	var page struct {
		Items []followedEvent `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(s.must(admin, "clusters", "events", id, "--all", "-o", "json")), &page))
	listed = page.Items
	require.Equal(t, want, changes(listed), "each change once, in order, across the kill")
	for i := 1; i < len(listed); i++ {
		require.Less(t, listed[i-1].ID, listed[i].ID)
	}

	deadline = time.Now().Add(30 * time.Second)
	for len(parseEventLines(t, followed.String())) < len(want) {
		require.True(t, time.Now().Before(deadline), "the follower missed events: %s\n%s", followed.String(), followErr.String())
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	require.Zero(t, <-done, followErr.String())
	require.Equal(t, listed, parseEventLines(t, followed.String()), "the follower saw what the listing shows")

	s.must(admin, "clusters", "delete", id, "--wait")
	require.Contains(t, s.must(admin, "clusters", "events", id, "--since", listed[len(listed)-1].ID), "ACTIVE -> DELETING")
}

// Write lets a command write a lockedBuffer while the test reads it.
func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
