package sshexec

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStartAndWait: one session writes the files (exact bytes, modes),
// starts the command and, for one that ends within the wait, reports it
// and removes what it was told to; a longer one comes back Running and is
// polled as usual; a repeated start reports without starting again. The
// same through the connection's dispatcher and through sessions of their
// own (a node where no dispatcher starts).
func TestStartAndWait(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		t.Run("dispatcher", func(t *testing.T) {
			t.Parallel()
			testStartAndWait(t, dial(t, b.targets[0]))
		})
		t.Run("sessions", func(t *testing.T) {
			t.Parallel()
			c := dial(t, b.targets[0])
			c.noDispatch = true
			testStartAndWait(t, c)
		})
	})
}

func testStartAndWait(t *testing.T, c *Client) {
	{
		base := scratch(t, c)
		ctx := context.Background()
		odd := "it's \"quoted\" $HOME `x` \\ \n\ttabs\r and no newline at the end"
		quick := Detached{
			Dir:    base + "/quick/run",
			Script: `cat "$F"; echo; echo "$TOKEN" >&2; exit 3`,
			Env:    map[string]string{"F": base + "/quick/data", "TOKEN": "hunter2"},
			Files: []File{
				{Path: base + "/quick/data", Data: []byte(odd)},
				{Path: base + "/quick/tool", Data: []byte("#!/bin/sh\n"), Mode: 0o700},
			},
			Wait:        5 * time.Second,
			RemoveAfter: base + "/quick",
			Secrets:     []string{"hunter2"},
		}
		began := time.Now()
		s, err := c.StartAndWait(ctx, quick)
		require.NoError(t, err)
		require.True(t, s.Started)
		require.Less(t, time.Since(began), 5*time.Second, "the wait ends when the command does")
		require.Equal(t, Exited, s.Status.State)
		require.Equal(t, 3, s.Status.ExitCode)
		require.Equal(t, odd+"\n", s.Status.Stdout.Text, "the file holds exactly the bytes sent")
		require.Equal(t, Redacted+"\n", s.Status.Stderr.Text)
		var exit *ExitError
		require.ErrorAs(t, s.Status.Err(), &exit)
		require.Equal(t, "gone\n", mustRun(t, c, "[ -e "+quote(base+"/quick")+" ] || echo gone"), "RemoveAfter was removed")

		// Modes, on a command that keeps its files.
		long := Detached{
			Dir:    base + "/long/run",
			Script: "sleep 3; echo done",
			Files: []File{
				{Path: base + "/long/data", Data: []byte("x")},
				{Path: base + "/long/tool", Data: []byte("#!/bin/sh\n"), Mode: 0o700},
			},
			Wait:        time.Second,
			RemoveAfter: base + "/long",
		}
		s, err = c.StartAndWait(ctx, long)
		require.NoError(t, err)
		require.True(t, s.Started)
		require.Equal(t, Running, s.Status.State, "still running after the wait")
		require.Equal(t, "600 700\n", mustRun(t, c, "stat -c %a "+quote(base+"/long/data")+" "+quote(base+"/long/tool")+" | tr '\\n' ' ' | sed 's/ $/\\n/'"))

		repeat := long
		repeat.Wait = 0 // a waiting repeat that saw it end would report it and remove its files
		again, err := c.StartAndWait(ctx, repeat)
		require.NoError(t, err)
		require.False(t, again.Started, "a repeated start does not start it twice")

		st := pollUntilDone(t, c, long.Dir, nil)
		require.Equal(t, Exited, st.State)
		require.Equal(t, "done\n", st.Stdout.Text)
	}
}

// TestStartRefusesADirectoryWithoutACommand: a start whose directory exists
// but holds no started command (a start cut short after its mkdir) fails
// saying so rather than starting into it; one whose attempt directory is
// missing makes both directories.
func TestStartRefusesADirectoryWithoutACommand(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		c := dial(t, b.targets[0])
		base := scratch(t, c)
		ctx := context.Background()
		mustRun(t, c, "mkdir -p "+quote(base+"/cut/run"))
		_, err := c.StartAndWait(ctx, Detached{Dir: base + "/cut/run", Script: "echo never", Wait: time.Second})
		require.ErrorContains(t, err, "exists but holds no started command")

		s, err := c.StartAndWait(ctx, Detached{Dir: base + "/fresh/run", Script: "echo fresh", Wait: 5 * time.Second})
		require.NoError(t, err)
		require.True(t, s.Started)
		require.Equal(t, "fresh\n", s.Status.Stdout.Text)
	})
}
