package tenantmove

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store"
)

// LocalProviderType is the provider type whose nodes live inside the
// source's process: its clusters cannot move.
const LocalProviderType = "local"

// Mover exports and imports tenants over one store.
type Mover struct {
	store   store.Store // unscoped: the import also writes the API key lookup and the tenant's counters
	keyring *secrets.Keyring
	// pageRecords bounds a page's records: MaxPageRecords, less in tests
	// that walk many pages of a small tenant.
	pageRecords int
}

// New returns a Mover over the unscoped store s, whose secrets kr seals.
func New(s store.Store, kr *secrets.Keyring) *Mover {
	return &Mover{store: s, keyring: kr, pageRecords: MaxPageRecords}
}

// frame is one level of the walk: a partition (SK empty) or one item.
type frame struct {
	PK string `json:"p,omitempty"`
	SK string `json:"s,omitempty"`
	// After is the last sort key visited in the partition; InItem says
	// the walk is among its children, Child the next one.
	After  string `json:"a,omitempty"`
	InItem bool   `json:"i,omitempty"`
	Child  int    `json:"c,omitempty"`
	Root   bool   `json:"r,omitempty"`
}

func encodeCursor(stack []frame) string {
	if len(stack) == 0 {
		return ""
	}
	b, _ := json.Marshal(stack)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ErrBadCursor: the cursor is not one an export made.
var ErrBadCursor = errors.New("tenantmove: not an export cursor")

func decodeCursor(c string) ([]frame, error) {
	if c == "" {
		return []frame{{Root: true, InItem: true}}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	var stack []frame
	if err != nil || json.Unmarshal(b, &stack) != nil || len(stack) == 0 || len(stack) > 8 || !stack[0].Root {
		return nil, ErrBadCursor
	}
	for _, f := range stack[1:] {
		if f.Root || !carried(f.PK) {
			return nil, ErrBadCursor
		}
	}
	return stack, nil
}

// Export reads the page of tenant's data that starts at cursor ("" for
// the first), with its secrets sealed to to. The API signs the cursor it
// hands out (its cursor signer), so a client cannot steer the walk.
func (m *Mover) Export(ctx context.Context, tenant string, to Recipient, cursor string) (*ExportPage, error) {
	stack, err := decodeCursor(cursor)
	if err != nil {
		return nil, err
	}
	s := store.Scoped(m.store, tenant)
	page := &ExportPage{Format: Format, Tenant: tenant, Records: []Record{}}
	size, reads := 0, 0
	// Reads are bounded too: a tenant of many small jobs has six mostly
	// empty partitions per job, and a page of 500 records could otherwise
	// cost thousands of queries, past API Gateway's 30 s on DynamoDB.
	full := func() bool {
		return len(page.Records) >= m.pageRecords || size >= MaxPageBytes || reads >= MaxPageReads
	}
	for len(stack) > 0 && !full() {
		top := &stack[len(stack)-1]
		if top.InItem {
			kids := children(top.PK, top.After)
			if top.Root {
				kids = children("", "")
			}
			if top.Child < len(kids) {
				k := kids[top.Child]
				top.Child++
				stack = append(stack, frame{PK: k.PK, SK: k.SK})
				continue
			}
			top.InItem, top.Child = false, 0
			if top.Root || top.SK != "" {
				stack = stack[:len(stack)-1]
				continue
			}
		}
		if top.SK != "" { // one item
			if top.After == top.SK { // visited, and it has no children
				stack = stack[:len(stack)-1]
				continue
			}
			reads++
			it, err := s.Get(ctx, store.Key{PK: top.PK, SK: top.SK})
			if errors.Is(err, store.ErrNotFound) {
				stack = stack[:len(stack)-1]
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("tenantmove: read %s / %s: %w", top.PK, top.SK, err)
			}
			rec, err := m.record(ctx, tenant, to, it)
			if err != nil {
				return nil, err
			}
			page.Records = append(page.Records, rec)
			size += len(rec.Data)
			top.After, top.InItem, top.Child = top.SK, true, 0
			continue
		}
		reads++
		items, err := s.Query(ctx, top.PK, store.Query{After: top.After, Limit: 100})
		if err != nil {
			return nil, fmt.Errorf("tenantmove: read partition %s: %w", top.PK, err)
		}
		if len(items.Items) == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		for _, it := range items.Items {
			top.After = it.SK
			if it.PK == "CLUSTERS" {
				reads++ // visit reads the cluster's spec
			}
			skip, err := m.visit(ctx, s, it, page)
			if err != nil {
				return nil, err
			}
			if skip {
				continue
			}
			rec, err := m.record(ctx, tenant, to, it)
			if err != nil {
				return nil, err
			}
			page.Records = append(page.Records, rec)
			size += len(rec.Data)
			if len(children(top.PK, it.SK)) > 0 {
				top.InItem, top.Child = true, 0
				break
			}
			if full() {
				break
			}
		}
	}
	page.Next = encodeCursor(stack)
	return page, nil
}

// visit decides whether an item is carried: a cluster of the local
// provider is skipped (with its children), a running job or catalog
// import stops the export.
func (m *Mover) visit(ctx context.Context, s store.Store, it store.Item, page *ExportPage) (skip bool, err error) {
	switch it.PK {
	case "CAT":
		if it.Status == "importing" {
			return false, fmt.Errorf("%w: a catalog import is being published; run the export again when it has ended", ErrBusy)
		}
	case "CLUSTERS":
		var c struct {
			ActiveJobID string `json:"activeJobId"`
		}
		_ = json.Unmarshal(it.Data, &c)
		sp, err := s.Get(ctx, store.Key{PK: "CLUSTERSPECS", SK: it.SK})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return false, fmt.Errorf("tenantmove: read the spec of cluster %s: %w", it.SK, err)
		}
		if err == nil {
			var spec struct {
				Provider domain.Provider `json:"provider"`
			}
			_ = json.Unmarshal(sp.Data, &spec)
			if spec.Provider.ProviderType == LocalProviderType {
				page.Skipped = append(page.Skipped, Skipped{Cluster: it.SK, Reason: fmt.Sprintf(
					"its nodes come from provider %q of type local: they are processes of the source machine and cannot move; recreate the cluster on a static or EC2 provider", spec.Provider.Name)})
				return true, nil
			}
		}
		if c.ActiveJobID != "" {
			return false, fmt.Errorf("%w: cluster %s runs job %s; wait for it to end (heddle jobs watch %s %s) and run the export again", ErrBusy, it.SK, c.ActiveJobID, it.SK, c.ActiveJobID)
		}
	}
	return false, nil
}

var sealedMarker = []byte(secrets.SealedPrefix)

// record turns an item into a record, its sealed values opened and sealed
// to the recipient.
func (m *Mover) record(ctx context.Context, tenant string, to Recipient, it store.Item) (Record, error) {
	rec := Record{PK: it.PK, SK: it.SK, Status: it.Status, Counters: it.Counters, Index: it.Index, Data: it.Data}
	if bytes.Contains(it.Data, []byte(Placeholder)) {
		return Record{}, fmt.Errorf("tenantmove: %s / %s holds the text %q, which an import would read as a secret; rename it", it.PK, it.SK, Placeholder)
	}
	if !bytes.Contains(it.Data, sealedMarker) {
		return rec, nil
	}
	v, err := parseDoc(it.Data)
	if err != nil {
		return Record{}, fmt.Errorf("%w: %s / %s holds a sealed value in a body that is not JSON", ErrUnknownSecret, it.PK, it.SK)
	}
	for _, sp := range spots(v, secrets.IsSealed) {
		b, ok := binding(tenant, it.PK, it.SK, v, sp.path)
		if !ok {
			return Record{}, fmt.Errorf("%w: %s / %s at %s; the export cannot carry it", ErrUnknownSecret, it.PK, it.SK, pointer(sp.path))
		}
		plain, err := m.keyring.Open(ctx, secrets.Sealed(sp.val), b)
		if err != nil {
			return Record{}, fmt.Errorf("tenantmove: open the secret of %s / %s at %s: %w", it.PK, it.SK, pointer(sp.path), err)
		}
		boxed, err := seal(to, plain)
		clear(plain)
		if err != nil {
			return Record{}, err
		}
		sp.set(Placeholder)
		rec.Secrets = append(rec.Secrets, Secret{Path: pointer(sp.path), Boxed: boxed})
	}
	if rec.Data, err = json.Marshal(v); err != nil {
		return Record{}, fmt.Errorf("tenantmove: encode %s / %s: %w", it.PK, it.SK, err)
	}
	return rec, nil
}
