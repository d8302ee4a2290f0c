package localserver

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
)

// TestLeftoverBackupCopiesAreRemoved: a backup cut short by kill -9 leaves
// its temporary copy of the store in the data directory; the next start
// and the next backup remove such copies, and nothing else.
func TestLeftoverBackupCopiesAreRemoved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte("a store copy"), 0o600))
		return path
	}
	leftover := write(".backup-2871537403.db")
	keep := []string{write(".backup-notes.db"), write("backup-1.db"), write(".backup-12.db.keep"), write(".backup-.db")}
	keepDir := filepath.Join(dir, ".backup-77.db")
	require.NoError(t, os.Mkdir(keepDir, 0o700))
	keep = append(keep, keepDir)

	srv, err := Start(context.Background(), Config{DataDir: dir, Listen: "127.0.0.1:0", BootstrapKey: access.NewKeySecret(),
		Version: "test", Logger: testLogger(), JanitorPeriod: time.Hour, NoWorkers: true})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	require.NoFileExists(t, leftover, "the start removes a backup's leftover copy")
	for _, path := range keep {
		_, err := os.Stat(path)
		require.NoError(t, err, "%s is no backup copy and stays", path)
	}

	leftover = write(".backup-93.db")
	n, err := srv.backup(context.Background(), func(int64) io.Writer { return io.Discard })
	require.NoError(t, err)
	require.Positive(t, n)
	require.NoFileExists(t, leftover, "the next backup removes a leftover copy")
	entries, err := filepath.Glob(filepath.Join(dir, ".backup-*.db"))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{filepath.Join(dir, ".backup-notes.db"), filepath.Join(dir, ".backup-.db"), keepDir}, entries, "the backup's own copy is gone too")
}

// TestABackupLeavesACopyStreamingNow: a backup that starts while another
// streams does not take the other's copy away.
func TestABackupLeavesACopyStreamingNow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	started, release := make(chan string), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := b.srv.backup(context.Background(), func(int64) io.Writer {
			copies, _ := filepath.Glob(filepath.Join(b.srv.DataDir, ".backup-*.db"))
			started <- copies[0]
			<-release
			return io.Discard
		})
		done <- err
	}()
	streaming := <-started
	_, err := b.srv.backup(context.Background(), func(int64) io.Writer { return io.Discard })
	require.NoError(t, err)
	require.FileExists(t, streaming, "the copy another backup streams stays")
	close(release)
	require.NoError(t, <-done)
	require.NoFileExists(t, streaming)
}
