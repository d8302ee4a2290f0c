package local

import (
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReopenWhileCommandsStart: a restarted provider takes its nodes'
// addresses back even while the process starts commands (as other nodes'
// sessions do all the time). A fork copies every open descriptor into the
// child until it execs, the nodes' listeners included, so a listener only
// closed in the parent can stay bound for a moment after Close returns and
// the restarted provider found its own node's address "already in use".
func TestReopenWhileCommandsStart(t *testing.T) {
	t.Parallel()
	l, dir := setup(t)
	key := clusterKey(t)
	_, err := l.Create(testCtx(t), request(key, "c1-1000"))
	require.NoError(t, err)

	var stop atomic.Bool
	var forks sync.WaitGroup
	for range 2 {
		forks.Go(func() {
			for !stop.Load() {
				_ = exec.Command("/bin/true").Run()
			}
		})
	}
	t.Cleanup(func() { stop.Store(true); forks.Wait() })

	for i := range 300 {
		l.Close()
		l, err = New(Config{Dir: dir})
		require.NoError(t, err)
		t.Cleanup(l.Close)
		require.NoError(t, l.Restore(testCtx(t)), "reopen %d", i)
		require.Equal(t, 1, l.Nodes())
	}
}
