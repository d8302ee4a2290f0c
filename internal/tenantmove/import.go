package tenantmove

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store"
)

// planned is one record ready to write: its ops go in one transaction.
type planned struct {
	index int
	rec   Record
	item  store.Item // tenant-scoped key
	ops   []store.Op // on the unscoped store
}

// Import writes the records of req that are missing from tenant's data.
// role is the importer's: a record cannot make a user of a higher role.
// Bad records are domain.Problems (nothing written); records whose keys
// hold other data are a *ConflictError (nothing written); a check request
// writes nothing and reports what an import would do.
func (m *Mover) Import(ctx context.Context, tenant string, role domain.Role, req ImportRequest) (_ ImportResult, retErr error) {
	if ps := validate(tenant, role, req); len(ps) > 0 {
		return ImportResult{}, ps
	}
	var res ImportResult
	var todo []planned
	all := make([]planned, len(req.Records))
	for i, rec := range req.Records {
		p, err := m.plan(ctx, tenant, i, rec)
		if err != nil {
			return ImportResult{}, err
		}
		all[i] = p
	}
	found, err := m.read(ctx, all)
	if err != nil {
		return ImportResult{}, err
	}
	for _, p := range all {
		switch state, reason := compare(p, found); state {
		case absent:
			todo = append(todo, p)
		case same:
			res.Kept++
		case other:
			res.Conflicts = append(res.Conflicts, Conflict{PK: p.rec.PK, SK: p.rec.SK, Reason: reason})
		}
	}
	if req.Check {
		res.Written = len(todo)
		return res, nil
	}
	if len(res.Conflicts) > 0 {
		return ImportResult{}, &ConflictError{Conflicts: res.Conflicts}
	}
	catalogWrites := false
	for _, p := range todo {
		catalogWrites = catalogWrites || strings.HasPrefix(p.rec.PK, "CAT#")
	}
	if catalogWrites {
		// Catalog readers take a snapshot between two reads of the
		// revision item: move it on after the entities are written, so
		// that a read that overlapped the import reads again.
		defer func() {
			_, err := m.store.Write(ctx, store.Update(store.Key{PK: store.TenantPK(tenant, "CAT"), SK: "REV"},
				store.Condition{MustExist: true}, store.Changes{Add: map[string]int64{"writes": 1}}))
			if err != nil && !errors.Is(err, store.ErrConditionFailed) && retErr == nil {
				retErr = fmt.Errorf("tenantmove: move the catalog's revision on: %w", err)
			}
		}()
	}
	for len(todo) > 0 {
		n, size, ops := 0, 0, []store.Op(nil)
		for n < len(todo) && len(ops)+len(todo[n].ops) <= store.MaxTransactItems && size+store.TransactSize(todo[n].ops) <= store.MaxTransactBytes/2 {
			ops = append(ops, todo[n].ops...)
			size += store.TransactSize(todo[n].ops)
			n++
		}
		if n == 0 { // cannot happen with items of at most 400 KB; never loop on it
			return res, fmt.Errorf("tenantmove: %s / %s is too large to write", todo[0].rec.PK, todo[0].rec.SK)
		}
		err := m.store.Transact(ctx, ops)
		if err == nil {
			res.Written += n
			todo = todo[n:]
			continue
		}
		if !errors.Is(err, store.ErrConditionFailed) {
			return res, fmt.Errorf("tenantmove: write records: %w", err)
		}
		// Something changed since the comparison (another import, a
		// user): write the batch's records one by one, each compared again.
		for _, p := range todo[:n] {
			kept, err := m.writeOne(ctx, tenant, p)
			if err != nil {
				return res, err
			}
			if kept {
				res.Kept++
			} else {
				res.Written++
			}
		}
		todo = todo[n:]
	}
	return res, nil
}

func (m *Mover) writeOne(ctx context.Context, tenant string, p planned) (kept bool, err error) {
	err = m.store.Transact(ctx, p.ops)
	if err == nil {
		return false, nil
	}
	var te *store.TransactionError
	if errors.As(err, &te) && len(te.Reasons) == len(p.ops) && len(p.ops) > 1 && te.Reasons[len(p.ops)-1] != nil && p.rec.PK == "CLUSTERS" && te.Reasons[0] == nil {
		return false, fmt.Errorf("%w: cluster %s needs 1 cluster and %d nodes of tenant %s's quota; ask the target's superadmin to raise it (heddle tenants update %s --max-clusters N --max-nodes N, or PUT /v1/tenants/%s with maxClusters and maxNodes) and run the import again",
			ErrQuota, p.rec.SK, nodeCount(p.rec), tenant, tenant, tenant)
	}
	if !errors.Is(err, store.ErrConditionFailed) {
		return false, fmt.Errorf("tenantmove: write %s / %s: %w", p.rec.PK, p.rec.SK, err)
	}
	found, rerr := m.read(ctx, []planned{p})
	if rerr != nil {
		return false, rerr
	}
	state, reason := compare(p, found)
	if state == same {
		return true, nil
	}
	return false, &ConflictError{Conflicts: []Conflict{{PK: p.rec.PK, SK: p.rec.SK, Reason: reason}}}
}

// plan seals the record's secrets under this deployment's key and builds
// its writes.
func (m *Mover) plan(ctx context.Context, tenant string, i int, rec Record) (planned, error) {
	data := rec.Data
	if len(rec.Secrets) > 0 {
		v, _ := parseDoc(rec.Data) // validate parsed it
		values := map[string]string{}
		for _, s := range rec.Secrets {
			values[s.Path] = s.Value
		}
		for _, sp := range spots(v, func(s string) bool { return s == Placeholder }) {
			b, _ := binding(tenant, rec.PK, rec.SK, v, sp.path)
			sealed, err := m.keyring.SealString(ctx, values[pointer(sp.path)], b)
			if err != nil {
				return planned{}, fmt.Errorf("tenantmove: seal the secret of %s / %s at %s: %w", rec.PK, rec.SK, pointer(sp.path), err)
			}
			sp.set(string(sealed))
		}
		var err error
		if data, err = json.Marshal(v); err != nil {
			return planned{}, fmt.Errorf("tenantmove: encode %s / %s: %w", rec.PK, rec.SK, err)
		}
	}
	item := store.Item{Key: store.Key{PK: rec.PK, SK: rec.SK}, Status: rec.Status, Counters: rec.Counters, Index: rec.Index, Data: data}
	full := item
	full.Key.PK = store.TenantPK(tenant, rec.PK)
	p := planned{index: i, rec: rec, item: item, ops: []store.Op{store.Put(full, store.Condition{MustNotExist: true})}}
	switch {
	case strings.HasPrefix(rec.PK, "KEYS#"):
		var k keyBody
		_ = json.Unmarshal(rec.Data, &k)
		lookup, _ := json.Marshal(keyLookup{ID: rec.SK, Tenant: tenant, User: strings.TrimPrefix(rec.PK, "KEYS#")})
		p.ops = append(p.ops, store.Put(store.Item{Key: store.Key{PK: "APIKEYS", SK: k.Hash}, Data: lookup}, store.Condition{MustNotExist: true}))
	case rec.PK == "CLUSTERS" && !domain.ClusterStatus(rec.Status).Terminal():
		n := int64(nodeCount(rec))
		p.ops = append(p.ops, store.Update(store.Key{PK: "TENANTS", SK: tenant},
			store.Condition{StatusIn: []string{"active"}, CountersAtLeast: map[string]int64{access.FreeClusters: 1, access.FreeNodes: n}},
			store.Changes{Add: map[string]int64{access.FreeClusters: -1, access.FreeNodes: -n}}))
	}
	return p, nil
}

// keyBody is what a user's key item holds that the import needs; keyLookup
// is the global lookup item (access's keyRecord).
type keyBody struct {
	ID       string `json:"id"`
	TenantID string `json:"tenantId"`
	User     string `json:"user"`
	Hash     string `json:"hash"`
}

type keyLookup struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	User   string `json:"user"`
}

func nodeCount(rec Record) int {
	var c struct {
		NodeCount int `json:"nodeCount"`
	}
	_ = json.Unmarshal(rec.Data, &c)
	return c.NodeCount
}

type presence int

const (
	absent presence = iota
	same
	other
)

// read returns what the target holds at the planned records' keys, and at
// the global lookup of every API key among them, by key. It reads them all
// at once (store.GetMany: DynamoDB's BatchGetItem, 100 keys a round trip,
// where one GetItem a key made a page of 500 records cost 500 round trips),
// strongly consistent as Get is, so what compare decides is as safe as it
// was key by key: the writes are conditional on the keys being free anyway.
func (m *Mover) read(ctx context.Context, ps []planned) (map[store.Key]store.Item, error) {
	keys := make([]store.Key, 0, len(ps))
	seen := make(map[store.Key]bool, len(ps))
	want := func(k store.Key) {
		// A forged page may name one API key hash twice; BatchGetItem
		// refuses a request that repeats a key.
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for _, p := range ps {
		want(p.ops[0].Key)
		if lookup, ok := keyLookupOf(p); ok {
			want(lookup)
		}
	}
	items, err := store.GetMany(ctx, m.store, keys)
	if err != nil {
		return nil, fmt.Errorf("tenantmove: read the target's items at %d keys: %w", len(keys), err)
	}
	found := make(map[store.Key]store.Item, len(items))
	for _, it := range items {
		found[it.Key] = it
	}
	return found, nil
}

// keyLookupOf returns the key of the global lookup an API key record
// writes (its hash), if p is one.
func keyLookupOf(p planned) (store.Key, bool) {
	if len(p.ops) > 1 && p.ops[1].Key.PK == "APIKEYS" {
		return p.ops[1].Key, true
	}
	return store.Key{}, false
}

// compare says whether p's key is free, holds an equivalent item, or holds
// something else (and what), from what read found on the target.
func compare(p planned, found map[store.Key]store.Item) (presence, string) {
	cur, ok := found[p.ops[0].Key]
	if !ok {
		if lookup, isKey := keyLookupOf(p); isKey {
			if _, taken := found[lookup]; taken {
				return other, "an API key with this hash is already registered on the target"
			}
		}
		return absent, ""
	}
	switch {
	case p.rec.PK == "CAT" && p.rec.SK == "REV":
		return same, "" // the target's revision counter orders its own later writes
	case p.rec.PK == "USERS":
		var a, b domain.User
		_ = json.Unmarshal(cur.Data, &a)
		_ = json.Unmarshal(p.rec.Data, &b)
		if a.Role == b.Role {
			return same, ""
		}
		return other, fmt.Sprintf("user %s exists on the target with role %s, not %s", p.rec.SK, a.Role, b.Role)
	}
	if cur.Status != p.item.Status || !reflect.DeepEqual(cur.Index, p.item.Index) || !equalCounters(cur.Counters, p.item.Counters) {
		return other, "the target's item has another status, counters or index entry"
	}
	if !equalBodies(cur.Data, p.rec.Data) {
		return other, "the target's item has another body"
	}
	return same, ""
}

func equalCounters(a, b map[string]int64) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// equalBodies compares two bodies as JSON values, every sealed value and
// placeholder taken as equal (each seal has a fresh data key, so the same
// secret never seals to the same text twice).
func equalBodies(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	va, erra := parseDoc(a)
	vb, errb := parseDoc(b)
	if erra != nil || errb != nil {
		return false
	}
	norm := func(v doc) doc {
		for _, sp := range spots(v, func(s string) bool { return s == Placeholder || secrets.IsSealed(s) }) {
			sp.set(Placeholder)
		}
		return v
	}
	return reflect.DeepEqual(norm(va), norm(vb))
}

// validate checks a request's shape before anything is read.
func validate(tenant string, role domain.Role, req ImportRequest) domain.Problems {
	var ps domain.Problems
	add := func(field, msg string) {
		ps = append(ps, domain.Problem{Field: field, Code: domain.CodeInvalid, Message: msg})
	}
	switch {
	case req.Format == 0:
		add("format", "is missing; send a page of heddle tenant export as it was written")
	case req.Format > Format:
		add("format", fmt.Sprintf("is %d, newer than this heddle reads (%d); upgrade the target first", req.Format, Format))
	case req.Format != Format:
		add("format", fmt.Sprintf("is %d, which no heddle wrote", req.Format))
	}
	if req.Tenant != tenant {
		add("tenant", fmt.Sprintf("the export is of tenant %q; import it with a key of tenant %q on the target (secrets are bound to the tenant's name)", req.Tenant, req.Tenant))
	}
	if len(req.Records) > MaxPageRecords {
		add("records", fmt.Sprintf("holds %d records; send at most %d per request, a page as the export wrote it", len(req.Records), MaxPageRecords))
	}
	seen := map[store.Key]bool{}
	hashes := map[string]bool{}
	for i, rec := range req.Records {
		f := fmt.Sprintf("records[%d]", i)
		if len(ps) > 20 {
			break
		}
		if !carried(rec.PK) {
			add(f+".pk", fmt.Sprintf("%q is not a partition a tenant export holds", rec.PK))
			continue
		}
		if err := store.CheckKey(store.Key{PK: store.TenantPK(tenant, rec.PK), SK: rec.SK}); err != nil || rec.SK == "" {
			add(f+".sk", fmt.Sprintf("%q is not a usable sort key", rec.SK))
			continue
		}
		k := store.Key{PK: rec.PK, SK: rec.SK}
		if seen[k] {
			add(f, "repeats the key of an earlier record")
		}
		seen[k] = true
		if strings.HasPrefix(rec.PK, "KEYS#") {
			// Two keys of one hash would both claim its global lookup.
			var kb keyBody
			if json.Unmarshal(rec.Data, &kb) == nil && kb.Hash != "" {
				if hashes[kb.Hash] {
					add(f+".data.hash", "repeats the hash of an earlier API key of the page; a key's hash is unique")
				}
				hashes[kb.Hash] = true
			}
		}
		if rec.Index != nil && !exportedIndex(rec.PK, rec.Index.Partition) {
			add(f+".index", "only a cluster's lease expiry and its next health verification may be indexed in an export (jobs and tasks that run are never exported)")
		}
		if err := store.CheckOp(store.Put(store.Item{Key: k, Status: rec.Status, Counters: rec.Counters, Index: rec.Index, Data: rec.Data}, store.Condition{})); err != nil {
			add(f, err.Error())
		}
		if bytes.Contains(rec.Data, sealedMarker) {
			add(f+".data", "holds a sealed value; an export carries secrets in secrets[], sealed to its recipient")
		}
		ps = append(ps, checkSecrets(tenant, f, rec)...)
		ps = append(ps, checkKind(tenant, role, f, rec)...)
	}
	return ps
}

// exportedIndex reports whether an item of partition pk may carry an index
// entry in partition ix: a cluster's lease expiry (LEASE#<shard>) and a
// cluster's due health verification (VERIFY#<shard>), which the target's
// janitor then acts on as the source's would have.
func exportedIndex(pk, ix string) bool {
	return pk == "CLUSTERS" && strings.HasPrefix(ix, "LEASE#") ||
		pk == "VERIFYDUE" && strings.HasPrefix(ix, "VERIFY#")
}

// checkSecrets requires a secret for every placeholder and a placeholder
// at a known binding for every secret.
func checkSecrets(tenant, f string, rec Record) domain.Problems {
	var ps domain.Problems
	add := func(field, msg string) {
		ps = append(ps, domain.Problem{Field: field, Code: domain.CodeInvalid, Message: msg})
	}
	hasPlaceholder := bytes.Contains(rec.Data, []byte(Placeholder))
	if !hasPlaceholder && len(rec.Secrets) == 0 {
		return nil
	}
	v, err := parseDoc(rec.Data)
	if err != nil {
		add(f+".data", "holds secrets but is not JSON")
		return ps
	}
	want := map[string]bool{}
	for _, sp := range spots(v, func(s string) bool { return s == Placeholder }) {
		if _, ok := binding(tenant, rec.PK, rec.SK, v, sp.path); !ok {
			add(f+".data", fmt.Sprintf("has a secret at %s, where no secret belongs", pointer(sp.path)))
		}
		want[pointer(sp.path)] = true
	}
	for j, s := range rec.Secrets {
		sf := fmt.Sprintf("%s.secrets[%d]", f, j)
		switch {
		case !want[s.Path]:
			add(sf+".path", fmt.Sprintf("%q is not where the record's data has a secret", s.Path))
		case s.Value == "":
			add(sf+".value", "is empty; open the export's boxed secrets with its key first (heddle tenant import does)")
		}
		delete(want, s.Path)
	}
	for p := range want {
		add(f+".secrets", fmt.Sprintf("has no value for the secret at %s", p))
	}
	return ps
}

// checkKind checks what some kinds of record must hold.
func checkKind(tenant string, role domain.Role, f string, rec Record) domain.Problems {
	var ps domain.Problems
	add := func(field, msg string) {
		ps = append(ps, domain.Problem{Field: field, Code: domain.CodeInvalid, Message: msg})
	}
	switch {
	case rec.PK == "USERS":
		var u domain.User
		if json.Unmarshal(rec.Data, &u) != nil || !u.Role.Valid() || u.Name != rec.SK {
			add(f+".data", "is not a user of this name with a role")
		} else if !role.AtLeast(u.Role) {
			add(f+".data.role", fmt.Sprintf("makes user %s a %s, above your own role (%s); import with a key of that role", u.Name, u.Role, role))
		}
	case strings.HasPrefix(rec.PK, "KEYS#"):
		var k keyBody
		user := strings.TrimPrefix(rec.PK, "KEYS#")
		if json.Unmarshal(rec.Data, &k) != nil {
			add(f+".data", "is not an API key record")
			break
		}
		if raw, err := hex.DecodeString(k.Hash); err != nil || len(raw) != 32 || k.ID != rec.SK || k.User != user || k.TenantID != tenant {
			add(f+".data", "is not an API key record of this user and tenant with a SHA-256 hash")
		}
	case rec.PK == "CLUSTERS":
		var c domain.Cluster
		if json.Unmarshal(rec.Data, &c) != nil || c.ID != rec.SK || c.NodeCount < 0 {
			add(f+".data", "is not a cluster record of this id")
		} else if c.ActiveJobID != "" {
			add(f+".data.activeJobId", "is set: an export never holds a cluster whose job runs; export again once it has ended")
		}
	}
	return ps
}
