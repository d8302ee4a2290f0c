package tenantmove

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/static"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/sshexec"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
	"github.com/heddle-io/heddle/internal/store/dynamotest"
)

// side is one deployment: a store and the master key its secrets are
// sealed with.
type side struct {
	store   store.Store
	keyring *secrets.Keyring
	access  *access.Access
	mover   *Mover
}

func newKeyring(t testing.TB) *secrets.Keyring {
	t.Helper()
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	k, err := secrets.NewLocalKey(b)
	require.NoError(t, err)
	return secrets.NewKeyring(k)
}

func boltSide(t testing.TB) *side {
	t.Helper()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return newSide(t, db)
}

// dynamoSide is a fresh table on DynamoDB Local, deleted afterwards.
func dynamoSide(t testing.TB) *side {
	t.Helper()
	return newSide(t, dynamotest.Store(t, "heddle-tenantmove"))
}

func newSide(t testing.TB, s store.Store) *side {
	kr := newKeyring(t)
	return &side{store: s, keyring: kr, access: access.New(s), mover: New(s, kr)}
}

// tenant makes tenant acme with its admin ann, room for 5 clusters and 20
// nodes.
func (sd *side) tenant(t testing.TB) {
	t.Helper()
	_, _, err := sd.access.CreateTenant(t.Context(), domain.Tenant{ID: "acme", Workers: 2, MaxClusters: 5, MaxNodes: 20}, "ann")
	require.NoError(t, err)
}

// fixture is what the source tenant holds, by the packages that write it
// in production where they can be called without a worker: users and
// keys, a catalog with versions and sealed provider fields, a static
// pool's host with its sealed login key; and clusters as the engine
// leaves them after their jobs ended (one on EC2 with its sealed key and
// user fields, one on the local provider that cannot move).
type fixture struct {
	bobKey string
}

func (sd *side) fill(t testing.TB) fixture {
	t.Helper()
	ctx := t.Context()
	sd.tenant(t)
	_, err := sd.access.CreateUser(ctx, "acme", domain.User{TenantID: "acme", Name: "bob", Role: domain.RoleUser})
	require.NoError(t, err)
	key, err := sd.access.CreateKey(ctx, "acme", "bob")
	require.NoError(t, err)

	cat := catalog.New(sd.store, func(context.Context, string) ([]domain.Cluster, error) { return nil, nil })
	sealed := func(v string, b secrets.Binding) string {
		s, err := sd.keyring.SealString(ctx, v, b)
		require.NoError(t, err)
		return string(s)
	}
	for _, secret := range []string{"first-secret", "second-secret"} {
		p := &domain.Provider{Meta: domain.Meta{Name: "aws"}, ProviderType: "ec2", Fields: map[string]string{
			"region": "eu-west-1", "accessKeyId": "AKIA", "secretAccessKey": sealed(secret, provider.FieldBinding("acme", "aws", "secretAccessKey"))}}
		_, _, err := cat.Put(ctx, "acme", p, "")
		require.NoError(t, err)
	}
	for _, name := range []string{"rack", "here"} {
		typ := map[string]string{"rack": "static", "here": "local"}[name]
		_, _, err := cat.Put(ctx, "acme", &domain.Provider{Meta: domain.Meta{Name: name}, ProviderType: typ}, "")
		require.NoError(t, err)
	}
	_, _, err = cat.Put(ctx, "acme", &domain.HardwareType{Meta: domain.Meta{Name: "small"},
		ProviderMap: map[string]domain.HardwareFlavor{"aws": {Flavor: "t3.small"}}}, "")
	require.NoError(t, err)

	kp, err := sshexec.GenerateKeyPair()
	require.NoError(t, err)
	_, err = static.NewPool(sd.store, sd.keyring).Register(ctx, "acme", "rack", static.HostSpec{ID: "h1", Address: "192.0.2.10", Port: 22, User: "ops",
		PrivateKey: secrets.NewSecret(string(kp.PrivateKey)), HostKey: kp.AuthorizedKey})
	require.NoError(t, err)

	s := store.Scoped(sd.store, "acme")
	put := func(pk, sk, status string, v any, ix *store.IndexKey) {
		data, err := json.Marshal(v)
		require.NoError(t, err)
		_, err = s.Write(ctx, store.Put(store.Item{Key: store.Key{PK: pk, SK: sk}, Status: status, Index: ix, Data: data}, store.Condition{MustNotExist: true}))
		require.NoError(t, err)
	}
	clusterKey, err := secrets.NewClusterKey(ctx, sd.keyring, "acme", "c1")
	require.NoError(t, err)
	now := time.Now().UTC().Truncate(time.Second)
	put("CLUSTERS", "c1", "ACTIVE", domain.Cluster{ID: "c1", Name: "web", Provider: "aws", Status: "ACTIVE", NodeCount: 2}, &store.IndexKey{Partition: "LEASE#3", Sort: "2030"})
	put("VERIFYDUE", "c1", "", map[string]string{"cluster": "c1"}, &store.IndexKey{Partition: "VERIFY#2", Sort: "2031"})
	put("CLUSTERSPECS", "c1", "", map[string]any{
		"provider":       map[string]any{"name": "aws", "providerType": "ec2", "fields": map[string]string{"secretAccessKey": sealed("first-secret", provider.FieldBinding("acme", "aws", "secretAccessKey"))}},
		"providerFields": map[string]string{"secretAccessKey": sealed("user-secret", provider.UserFieldBinding("acme", "c1", "secretAccessKey"))},
		"key":            clusterKey,
	}, nil)
	for _, n := range []string{"n1", "n2"} {
		put("NODES#c1", n, "ACTIVE", domain.Node{ID: n, ClusterID: "c1", ProviderID: "i-" + n}, nil)
	}
	put("JOBS#c1", "j1", "SUCCEEDED", map[string]any{"id": "j1", "clusterId": "c1", "status": "SUCCEEDED", "createdAt": now}, nil)
	put("TASKS#j1", "t1", "SUCCEEDED", map[string]any{"id": "t1", "jobId": "j1", "status": "SUCCEEDED"}, nil)
	put("TASKIDX#j1", "0001", "", map[string]any{"entries": []map[string]any{{"id": "t1"}}}, nil)
	// A delivery record its job's end did not delete (engine/deadletter.go):
	// it describes the source queue's deliveries, and no export carries it.
	put("DELIVERIES#j1", "t1#0", "", map[string]any{"error": "a failure"}, nil)
	put("CLUSTERS", "c2", "ACTIVE", domain.Cluster{ID: "c2", Name: "dev", Provider: "here", Status: "ACTIVE", NodeCount: 1}, nil)
	put("CLUSTERSPECS", "c2", "", map[string]any{"provider": map[string]any{"name": "here", "providerType": "local"}}, nil)
	put("NODES#c2", "n1", "ACTIVE", domain.Node{ID: "n1", ClusterID: "c2"}, nil)
	_, err = sd.store.Write(ctx, store.Update(store.Key{PK: "TENANTS", SK: "acme"}, store.Condition{},
		store.Changes{Add: map[string]int64{access.FreeClusters: -2, access.FreeNodes: -3}}))
	require.NoError(t, err)
	return fixture{bobKey: key.Secret}
}

// exportAll reads every page of acme's export, unboxed for an import.
func (sd *side) exportAll(t *testing.T, id *Identity) ([]*ExportPage, []Skipped) {
	t.Helper()
	var pages []*ExportPage
	var skipped []Skipped
	cursor := ""
	for {
		p, err := sd.mover.Export(t.Context(), "acme", id.Recipient(), cursor)
		require.NoError(t, err)
		raw, err := json.Marshal(p)
		require.NoError(t, err)
		for _, plain := range []string{"first-secret", "second-secret", "user-secret", "PRIVATE KEY"} {
			require.NotContains(t, string(raw), plain, "an export never carries a secret in the clear")
		}
		require.NoError(t, id.Unbox(p.Records))
		pages = append(pages, p)
		skipped = append(skipped, p.Skipped...)
		if p.Next == "" {
			return pages, skipped
		}
		require.Less(t, len(pages), 1000, "the walk never ends")
		cursor = p.Next
	}
}

func request(p *ExportPage) ImportRequest {
	return ImportRequest{Format: p.Format, Tenant: p.Tenant, Records: p.Records}
}
