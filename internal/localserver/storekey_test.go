package localserver

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/backup"
	"github.com/heddle-io/heddle/internal/secrets"
)

// TestStartRefusesAStoreWithAnotherKey: a data directory whose master.key
// is not the one that sealed its store does not start (it would start and
// fail every operation that opens a secret); its own key starts again.
func TestStartRefusesAStoreWithAnotherKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := func() (*Server, error) {
		return Start(context.Background(), Config{DataDir: dir, Listen: "127.0.0.1:0", BootstrapKey: access.NewKeySecret(),
			Version: "test", Logger: testLogger(), JanitorPeriod: time.Hour, NoWorkers: true})
	}
	stop := func(srv *Server) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, srv.Shutdown(ctx))
	}
	srv, err := start()
	require.NoError(t, err)
	stop(srv)

	keyPath := filepath.Join(dir, backup.MasterKeyFile)
	own, err := os.ReadFile(keyPath)
	require.NoError(t, err)
	require.NoError(t, os.Remove(keyPath))
	other, err := secrets.LoadOrCreateKeyFile(keyPath)
	require.NoError(t, err)
	srv, err = start()
	if err == nil {
		stop(srv)
	}
	require.ErrorIs(t, err, backup.ErrWrongKey)
	require.ErrorContains(t, err, other.ID())
	require.ErrorContains(t, err, "put back the master.key")

	require.NoError(t, os.WriteFile(keyPath, own, 0o600))
	srv, err = start()
	require.NoError(t, err)
	stop(srv)
}
