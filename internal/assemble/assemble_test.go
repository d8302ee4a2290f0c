package assemble

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/automator"
	"github.com/heddle-io/heddle/internal/automator/shell"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/queue/memqueue"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

func parts(t *testing.T) Parts {
	t.Helper()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	key, err := secrets.LoadOrCreateKeyFile(filepath.Join(t.TempDir(), "master.key"))
	require.NoError(t, err)
	return Parts{Store: db, Queue: memqueue.New(memqueue.Options{}), Keyring: secrets.NewKeyring(key), Providers: provider.NewRegistry()}
}

func TestBuildRefusesMissingParts(t *testing.T) {
	t.Parallel()
	_, err := Build(Parts{})
	require.ErrorContains(t, err, "Store, Queue, Keyring and Providers are required")
}

func TestBuildClosesTheCircle(t *testing.T) {
	t.Parallel()
	p := parts(t)
	sh := shell.New(shell.Config{})
	t.Cleanup(sh.Close)
	p.Automators = map[string]automator.Automator{shell.Type: sh}
	svc, err := Build(p)
	require.NoError(t, err)
	ctx := context.Background()
	// The catalog's referrer check reaches the cluster service, and the
	// cluster service reads through the engine: with no cluster, nothing
	// refers to anything and a delete of a missing entity says so.
	live, err := svc.Clusters.Live(ctx, "acme")
	require.NoError(t, err)
	require.Empty(t, live)
	_, _, err = svc.Access.CreateTenant(ctx, domain.Tenant{ID: "acme", Workers: 1, MaxClusters: 1, MaxNodes: 1}, "")
	require.NoError(t, err)
	r, err := svc.Engine.RunJanitor(ctx)
	require.NoError(t, err)
	require.Zero(t, r.LeasesExpired)
}

func TestBuildWithoutAutomatorsStillSubmits(t *testing.T) {
	t.Parallel()
	svc, err := Build(parts(t)) // the API and janitor Lambdas: no executor
	require.NoError(t, err)
	require.NotNil(t, svc.Engine)
	require.NotNil(t, svc.Clusters)
}
