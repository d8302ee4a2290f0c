package tenantmove

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/static"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store"
)

var backends = map[string]func(*testing.T) *side{"bolt": func(t *testing.T) *side { return boltSide(t) }, "dynamodb": func(t *testing.T) *side { return dynamoSide(t) }}

// TestRoundTrip exports acme from one deployment and imports it into
// another of each backend, in small pages: everything carried is there,
// equal, its secrets open under the target's key only, bob's key works
// there, the quota counters took the live cluster, the local-provider
// cluster is left out with its reason, and a second import writes nothing.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for from, mkFrom := range backends {
		for to, mkTo := range backends {
			t.Run(from+"-to-"+to, func(t *testing.T) {
				t.Parallel()
				src, dst := mkFrom(t), mkTo(t)
				fx := src.fill(t)
				dst.tenant(t)
				src.mover.pageRecords = 3
				id, err := NewIdentity()
				require.NoError(t, err)
				pages, skipped := src.exportAll(t, id)
				require.Greater(t, len(pages), 3, "small pages: the cursor is used")
				for _, p := range pages {
					for _, r := range p.Records {
						require.False(t, strings.HasPrefix(r.PK, "DELIVERIES#"), "a job's delivery records stay with the source's queues")
					}
				}
				require.Len(t, skipped, 1)
				require.Equal(t, "c2", skipped[0].Cluster)
				require.Contains(t, skipped[0].Reason, "cannot move")

				written := 0
				for _, p := range pages {
					for _, r := range p.Records {
						require.NotContains(t, string(r.Data), secrets.SealedPrefix, "no ciphertext of the source's key travels")
					}
					res, err := dst.mover.Import(t.Context(), "acme", domain.RoleAdmin, request(p))
					require.NoError(t, err)
					require.Empty(t, res.Conflicts)
					written += res.Written
				}
				require.Positive(t, written)
				dst.requireSame(t, src, pages)

				ctx := t.Context()
				p, err := dst.access.Authenticate(ctx, fx.bobKey)
				require.NoError(t, err, "bob's key, carried as its hash, works on the target")
				require.Equal(t, access.Principal{Tenant: "acme", User: "bob", Role: domain.RoleUser, KeyID: p.KeyID}, p)

				// Secrets open under the target's key, with their bindings,
				// and not under the source's.
				spec, err := store.Scoped(dst.store, "acme").Get(ctx, store.Key{PK: "CLUSTERSPECS", SK: "c1"})
				require.NoError(t, err)
				var sp struct {
					ProviderFields map[string]string  `json:"providerFields"`
					Key            secrets.ClusterKey `json:"key"`
				}
				require.NoError(t, json.Unmarshal(spec.Data, &sp))
				v, err := dst.keyring.OpenString(ctx, secrets.Sealed(sp.ProviderFields["secretAccessKey"]), provider.UserFieldBinding("acme", "c1", "secretAccessKey"))
				require.NoError(t, err)
				require.Equal(t, "user-secret", v.Reveal())
				_, err = src.keyring.OpenString(ctx, secrets.Sealed(sp.ProviderFields["secretAccessKey"]), provider.UserFieldBinding("acme", "c1", "secretAccessKey"))
				require.Error(t, err)
				_, err = sp.Key.Open(ctx, dst.keyring, "acme", "c1")
				require.NoError(t, err)
				host, err := store.Scoped(dst.store, "acme").Get(ctx, store.Key{PK: "HOSTS#rack", SK: "h1"})
				require.NoError(t, err)
				var h struct {
					SealedKey secrets.Sealed `json:"sealedKey"`
				}
				require.NoError(t, json.Unmarshal(host.Data, &h))
				_, err = dst.keyring.Open(ctx, h.SealedKey, static.HostKeyBinding("acme", "rack", "h1"))
				require.NoError(t, err)
				versions, err := store.Scoped(dst.store, "acme").Query(ctx, "CAT#providers#aws", store.Query{})
				require.NoError(t, err)
				require.Len(t, versions.Items, 2, "every version of the catalog")

				tenant, err := dst.store.Get(ctx, store.Key{PK: "TENANTS", SK: "acme"})
				require.NoError(t, err)
				require.Equal(t, int64(4), tenant.Counter(access.FreeClusters), "the one live cluster carried took one of five")
				require.Equal(t, int64(18), tenant.Counter(access.FreeNodes), "and its two nodes")
				_, err = store.Scoped(dst.store, "acme").Get(ctx, store.Key{PK: "TASKIDX#j1", SK: "0001"})
				require.NoError(t, err, "a big job's task index moves with it")
				due, err := store.Scoped(dst.store, "acme").Get(ctx, store.Key{PK: "VERIFYDUE", SK: "c1"})
				require.NoError(t, err, "the cluster's next health verification moves with it")
				require.Equal(t, &store.IndexKey{Partition: "VERIFY#2", Sort: "2031"}, due.Index)
				_, err = store.Scoped(dst.store, "acme").Get(ctx, store.Key{PK: "CLUSTERS", SK: "c2"})
				require.ErrorIs(t, err, store.ErrNotFound)

				for _, p := range pages {
					res, err := dst.mover.Import(ctx, "acme", domain.RoleAdmin, request(p))
					require.NoError(t, err)
					require.Zero(t, res.Written, "a second import writes nothing")
					require.Equal(t, len(p.Records), res.Kept)
				}
				tenant, err = dst.store.Get(ctx, store.Key{PK: "TENANTS", SK: "acme"})
				require.NoError(t, err)
				require.Equal(t, int64(18), tenant.Counter(access.FreeNodes), "and takes no quota twice")
			})
		}
	}
}

// requireSame checks that every record of the export is on dst, equal but
// for its secrets, and that the source's sealed values were replaced.
func (sd *side) requireSame(t *testing.T, src *side, pages []*ExportPage) {
	t.Helper()
	for _, p := range pages {
		for _, r := range p.Records {
			k := store.Key{PK: r.PK, SK: r.SK}
			got, err := store.Scoped(sd.store, "acme").Get(t.Context(), k)
			require.NoError(t, err, k)
			want, err := store.Scoped(src.store, "acme").Get(t.Context(), k)
			require.NoError(t, err, k)
			if r.PK == "USERS" && r.SK == "ann" {
				continue // the target's own admin, kept
			}
			if r.PK == "CAT" {
				continue // the target's revision, kept
			}
			require.Equal(t, want.Status, got.Status, k)
			require.Equal(t, want.Counters, got.Counters, k)
			require.Equal(t, want.Index, got.Index, k)
			require.True(t, equalBodies(want.Data, got.Data), "%s: %s != %s", k, want.Data, got.Data)
			require.Equal(t, strings.Count(string(want.Data), secrets.SealedPrefix), strings.Count(string(got.Data), secrets.SealedPrefix), k)
		}
	}
}

// TestImportHalfWayThenAgain: an import that stopped half way (a page
// written in part) is run again whole and finishes: nothing is written
// twice, nothing is missing.
func TestImportHalfWayThenAgain(t *testing.T) {
	t.Parallel()
	for name, mk := range backends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testImportHalfWayThenAgain(t, mk(t), mk(t))
		})
	}
}

func testImportHalfWayThenAgain(t *testing.T, src, dst *side) {
	src.fill(t)
	dst.tenant(t)
	id, err := NewIdentity()
	require.NoError(t, err)
	pages, _ := src.exportAll(t, id)
	require.Len(t, pages, 1)
	all := request(pages[0])
	half := all
	half.Records = all.Records[:len(all.Records)/2]
	res, err := dst.mover.Import(t.Context(), "acme", domain.RoleAdmin, half)
	require.NoError(t, err)
	require.Positive(t, res.Written)
	res2, err := dst.mover.Import(t.Context(), "acme", domain.RoleAdmin, all)
	require.NoError(t, err)
	require.Equal(t, len(all.Records), res2.Written+res2.Kept)
	require.Equal(t, res.Written+res.Kept, res2.Kept)
	dst.requireSame(t, src, pages)
}

// TestConflictingTargetChangesNothing: a target whose tenant holds another
// entity at a name the export carries is refused before anything is
// written, and a check request reports the conflict.
func TestConflictingTargetChangesNothing(t *testing.T) {
	t.Parallel()
	for name, mk := range backends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testConflictingTargetChangesNothing(t, mk(t), mk(t))
		})
	}
}

func testConflictingTargetChangesNothing(t *testing.T, src, dst *side) {
	src.fill(t)
	dst.tenant(t)
	_, err := dst.access.CreateUser(t.Context(), "acme", domain.User{TenantID: "acme", Name: "bob", Role: domain.RoleAdmin})
	require.NoError(t, err)
	id, err := NewIdentity()
	require.NoError(t, err)
	pages, _ := src.exportAll(t, id)
	req := request(pages[0])
	req.Check = true
	res, err := dst.mover.Import(t.Context(), "acme", domain.RoleAdmin, req)
	require.NoError(t, err)
	require.Len(t, res.Conflicts, 1)
	require.Equal(t, "bob", res.Conflicts[0].SK)
	require.Contains(t, res.Conflicts[0].Reason, "role admin, not user")
	req.Check = false
	_, err = dst.mover.Import(t.Context(), "acme", domain.RoleAdmin, req)
	var ce *ConflictError
	require.ErrorAs(t, err, &ce)
	require.ErrorIs(t, err, ErrConflict)
	_, err = store.Scoped(dst.store, "acme").Get(t.Context(), store.Key{PK: "CLUSTERS", SK: "c1"})
	require.ErrorIs(t, err, store.ErrNotFound, "nothing was written")
}

// TestKeyHashTakenOnTarget: a key whose hash is already registered on the
// target (the global lookup a key is authenticated by) is a conflict, found
// by the batched read of the lookups, and nothing is written.
func TestKeyHashTakenOnTarget(t *testing.T) {
	t.Parallel()
	for name, mk := range backends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src, dst := mk(t), mk(t)
			src.fill(t)
			dst.tenant(t)
			id, err := NewIdentity()
			require.NoError(t, err)
			pages, _ := src.exportAll(t, id)
			req := request(pages[0])
			var hash string
			for _, rec := range req.Records {
				if strings.HasPrefix(rec.PK, "KEYS#bob") {
					var k keyBody
					require.NoError(t, json.Unmarshal(rec.Data, &k))
					hash = k.Hash
				}
			}
			require.NotEmpty(t, hash)
			_, err = dst.store.Write(t.Context(), store.Put(store.Item{Key: store.Key{PK: "APIKEYS", SK: hash},
				Data: []byte(`{"id":"k9","tenant":"globex","user":"eve"}`)}, store.Condition{}))
			require.NoError(t, err)
			_, err = dst.mover.Import(t.Context(), "acme", domain.RoleAdmin, req)
			var ce *ConflictError
			require.ErrorAs(t, err, &ce)
			require.Len(t, ce.Conflicts, 1)
			require.Contains(t, ce.Conflicts[0].Reason, "already registered")
			_, err = store.Scoped(dst.store, "acme").Get(t.Context(), store.Key{PK: "USERS", SK: "bob"})
			require.ErrorIs(t, err, store.ErrNotFound, "nothing was written")
		})
	}
}

// TestQuotaTooSmall: a target tenant whose quota cannot take a live
// cluster refuses that cluster with a sentence that says what to raise,
// and writes none of it.
func TestQuotaTooSmall(t *testing.T) {
	t.Parallel()
	src, dst := boltSide(t), boltSide(t)
	src.fill(t)
	_, _, err := dst.access.CreateTenant(t.Context(), domain.Tenant{ID: "acme", Workers: 1, MaxClusters: 5, MaxNodes: 1}, "ann")
	require.NoError(t, err)
	id, err := NewIdentity()
	require.NoError(t, err)
	pages, _ := src.exportAll(t, id)
	_, err = dst.mover.Import(t.Context(), "acme", domain.RoleAdmin, request(pages[0]))
	require.ErrorIs(t, err, ErrQuota)
	require.Contains(t, err.Error(), "2 nodes")
	require.Contains(t, err.Error(), "heddle tenants update acme --max-clusters N --max-nodes N", "names the command that raises it")
	_, err = store.Scoped(dst.store, "acme").Get(t.Context(), store.Key{PK: "CLUSTERS", SK: "c1"})
	require.ErrorIs(t, err, store.ErrNotFound)
}

// TestForgedExportsAreRefused: records an export never holds, or that
// would give the importer more than its role, are refused with the field
// that is wrong, and nothing is written.
func TestForgedExportsAreRefused(t *testing.T) {
	t.Parallel()
	src := boltSide(t)
	src.fill(t)
	id, err := NewIdentity()
	require.NoError(t, err)
	pages, _ := src.exportAll(t, id)
	base := request(pages[0])
	find := func(req ImportRequest, pk, sk string) int {
		for i, r := range req.Records {
			if r.PK == pk && r.SK == sk {
				return i
			}
		}
		t.Fatalf("no record %s / %s", pk, sk)
		return -1
	}
	clone := func() ImportRequest {
		b, _ := json.Marshal(base)
		var out ImportRequest
		require.NoError(t, json.Unmarshal(b, &out))
		return out
	}
	cases := []struct {
		name  string
		edit  func(*ImportRequest)
		field string
	}{
		{"another tenant's export", func(r *ImportRequest) { r.Tenant = "other" }, "tenant"},
		{"a newer format", func(r *ImportRequest) { r.Format = Format + 1 }, "format"},
		{"no format", func(r *ImportRequest) { r.Format = 0 }, "format"},
		{"a partition no export holds", func(r *ImportRequest) { r.Records[0].PK = "RATE" }, "records[0].pk"},
		{"a job's delivery records", func(r *ImportRequest) { r.Records[0].PK = "DELIVERIES#j1" }, "records[0].pk"},
		{"the catalog's import staging", func(r *ImportRequest) { r.Records[0].PK = "CAT#IMP#x" }, "records[0].pk"},
		{"a superadmin made by an admin", func(r *ImportRequest) {
			i := find(*r, "USERS", "bob")
			r.Records[i].Data = []byte(`{"tenantId":"acme","name":"bob","role":"superadmin"}`)
		}, "data.role"},
		{"a key of another tenant", func(r *ImportRequest) {
			for i, rec := range r.Records {
				if strings.HasPrefix(rec.PK, "KEYS#bob") {
					r.Records[i].Data = []byte(strings.Replace(string(rec.Data), `"tenantId":"acme"`, `"tenantId":"system"`, 1))
				}
			}
		}, ".data"},
		{"a running task indexed", func(r *ImportRequest) {
			i := find(*r, "TASKS#j1", "t1")
			r.Records[i].Index = &store.IndexKey{Partition: "RUNNING#1", Sort: "x"}
		}, ".index"},
		{"a health verification indexed as a lease", func(r *ImportRequest) {
			i := find(*r, "VERIFYDUE", "c1")
			r.Records[i].Index = &store.IndexKey{Partition: "LEASE#1", Sort: "x"}
		}, ".index"},
		{"a secret where none belongs", func(r *ImportRequest) {
			i := find(*r, "NODES#c1", "n1")
			r.Records[i].Data = []byte(`{"id":"n1","providerId":"` + Placeholder + `"}`)
			r.Records[i].Secrets = []Secret{{Path: "/providerId", Value: "x"}}
		}, ".data"},
		{"a placeholder without its value", func(r *ImportRequest) {
			i := find(*r, "CLUSTERSPECS", "c1")
			r.Records[i].Secrets = r.Records[i].Secrets[1:]
		}, ".secrets"},
		{"a source's sealed value smuggled in", func(r *ImportRequest) {
			i := find(*r, "NODES#c1", "n1")
			r.Records[i].Data = []byte(`{"id":"n1","providerId":"` + secrets.SealedPrefix + `AAAA"}`)
		}, ".data"},
		{"two keys of one hash", func(r *ImportRequest) {
			for _, rec := range r.Records {
				if strings.HasPrefix(rec.PK, "KEYS#bob") {
					var k keyBody
					require.NoError(t, json.Unmarshal(rec.Data, &k))
					k.ID = "k-copy"
					rec.SK, rec.Data = k.ID, nil
					rec.Data, _ = json.Marshal(k)
					r.Records = append(r.Records, rec)
					return
				}
			}
			t.Fatal("no key of bob")
		}, ".data.hash"},
		{"a cluster whose job runs", func(r *ImportRequest) {
			i := find(*r, "CLUSTERS", "c1")
			r.Records[i].Data = []byte(`{"id":"c1","activeJobId":"j9","nodeCount":2}`)
		}, "activeJobId"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dst := boltSide(t)
			dst.tenant(t)
			req := clone()
			c.edit(&req)
			_, err := dst.mover.Import(t.Context(), "acme", domain.RoleAdmin, req)
			var ps domain.Problems
			require.ErrorAs(t, err, &ps)
			found := false
			for _, p := range ps {
				found = found || strings.Contains(p.Field, c.field)
			}
			require.True(t, found, "%v", ps)
			_, err = dst.store.Get(t.Context(), store.Key{PK: store.TenantPK("acme", "USERS"), SK: "bob"})
			require.ErrorIs(t, err, store.ErrNotFound, "nothing was written")
		})
	}
}

// TestExportRefusesABusyTenantAndBadCursors: a cluster whose job runs stops
// the export with the job to wait for; a cursor changed by hand is refused.
func TestExportRefusesABusyTenantAndBadCursors(t *testing.T) {
	t.Parallel()
	src := boltSide(t)
	src.fill(t)
	id, err := NewIdentity()
	require.NoError(t, err)
	_, err = src.mover.Export(t.Context(), "acme", id.Recipient(), "bm90IGEgY3Vyc29y")
	require.ErrorIs(t, err, ErrBadCursor)
	_, err = src.mover.Export(t.Context(), "acme", id.Recipient(), encodeCursor([]frame{{Root: true}, {PK: "RATE"}}))
	require.ErrorIs(t, err, ErrBadCursor)
	s := store.Scoped(src.store, "acme")
	it, err := s.Get(t.Context(), store.Key{PK: "CLUSTERS", SK: "c1"})
	require.NoError(t, err)
	it.Data = []byte(strings.Replace(string(it.Data), `"id":"c1"`, `"id":"c1","activeJobId":"j2"`, 1))
	_, err = s.Write(t.Context(), store.Put(it, store.Condition{}))
	require.NoError(t, err)
	_, err = src.mover.Export(t.Context(), "acme", id.Recipient(), "")
	require.ErrorIs(t, err, ErrBusy)
	require.Contains(t, err.Error(), "heddle jobs watch c1 j2")
}

// TestIdentityFile: the export key file reads back, prints redacted, and a
// box made for another key does not open.
func TestIdentityFile(t *testing.T) {
	t.Parallel()
	a, err := NewIdentity()
	require.NoError(t, err)
	b, err := NewIdentity()
	require.NoError(t, err)
	text, err := a.MarshalText()
	require.NoError(t, err)
	back, err := ParseIdentity(text)
	require.NoError(t, err)
	require.Equal(t, a.Recipient(), back.Recipient())
	require.Equal(t, secrets.Redacted, a.String())
	boxed, err := seal(a.Recipient(), []byte("s3cret"))
	require.NoError(t, err)
	v, err := back.Open(boxed)
	require.NoError(t, err)
	require.Equal(t, "s3cret", v)
	_, err = b.Open(boxed)
	require.Error(t, err)
	_, err = ParseIdentity([]byte("nonsense"))
	require.Error(t, err)
	r, err := ParseRecipient(a.Recipient().String())
	require.NoError(t, err)
	require.Equal(t, a.Recipient(), r)
	_, err = ParseRecipient("short")
	require.Error(t, err)
}

// TestImportReadsAPageInOneBatch: on DynamoDB an import reads what the
// target holds at a page's keys with BatchGetItem (one GetBatch a page,
// 100 keys a round trip), not one GetItem a record.
func TestImportReadsAPageInOneBatch(t *testing.T) {
	t.Parallel()
	src, dst := boltSide(t), dynamoSide(t)
	src.fill(t)
	dst.tenant(t)
	counted := store.NewCounting(dst.store)
	dst.mover = New(counted, dst.keyring)
	id, err := NewIdentity()
	require.NoError(t, err)
	pages, _ := src.exportAll(t, id)
	for round := range 2 { // writes all, then keeps all
		for _, p := range pages {
			counted.Reset()
			res, err := dst.mover.Import(t.Context(), "acme", domain.RoleAdmin, request(p))
			require.NoError(t, err)
			require.Equal(t, len(p.Records), res.Written+res.Kept)
			if round == 0 {
				require.Positive(t, res.Written)
			} else {
				require.Zero(t, res.Written)
			}
			require.Equal(t, int64(1), counted.Counts().Gets, "one batch read for %d records", len(p.Records))
		}
	}
}
