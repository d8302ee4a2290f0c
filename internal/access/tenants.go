package access

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

const (
	tenantActive   = "active"
	tenantDeleting = "deleting"
)

// TenantView is a tenant with what it uses.
type TenantView struct {
	domain.Tenant
	Usage domain.TenantUsage `json:"usage"`
}

func tenantView(it store.Item) (TenantView, error) {
	var t domain.Tenant
	if err := json.Unmarshal(it.Data, &t); err != nil {
		return TenantView{}, fmt.Errorf("access: unreadable tenant %s: %w", it.SK, err)
	}
	t.Version = it.Version
	return TenantView{Tenant: t, Usage: domain.TenantUsage{
		Clusters: t.MaxClusters - int(it.Counter(FreeClusters)),
		Nodes:    t.MaxNodes - int(it.Counter(FreeNodes)),
	}}, nil
}

// CreateTenant creates a tenant and, when adminName is not empty, its first
// admin with an API key (returned once, with its secret).
func (a *Access) CreateTenant(ctx context.Context, t domain.Tenant, adminName string) (TenantView, *domain.APIKey, error) {
	var admin *domain.User
	if adminName != "" {
		admin = &domain.User{TenantID: t.ID, Name: adminName, Role: domain.RoleAdmin}
		if ps := admin.Validate(); len(ps) > 0 {
			for i := range ps {
				ps[i].Field = "admin"
			}
			return TenantView{}, nil, ps
		}
	}
	view, key, err := a.createTenant(ctx, t, admin, NewKeySecret())
	return view, key, err
}

func (a *Access) createTenant(ctx context.Context, t domain.Tenant, admin *domain.User, secret string) (TenantView, *domain.APIKey, error) {
	if ps := t.Validate(); len(ps) > 0 {
		return TenantView{}, nil, ps
	}
	t.CreatedAt = a.now().UTC()
	t.Version = 0
	data, err := json.Marshal(t)
	if err != nil {
		return TenantView{}, nil, err
	}
	ops := []store.Op{store.Put(store.Item{Key: tenantKey(t.ID), Status: tenantActive, Data: data,
		Counters: map[string]int64{FreeClusters: int64(t.MaxClusters), FreeNodes: int64(t.MaxNodes)}},
		store.Condition{MustNotExist: true})}
	var key *domain.APIKey
	if admin != nil {
		admin.TenantID, admin.CreatedAt = t.ID, a.now().UTC()
		udata, err := json.Marshal(admin)
		if err != nil {
			return TenantView{}, nil, err
		}
		ops = append(ops, store.Put(store.Item{Key: userKey(t.ID, admin.Name), Data: udata}, store.Condition{MustNotExist: true}))
		var keyOps []store.Op
		key, keyOps = a.keyOps(t.ID, admin.Name, secret)
		ops = append(ops, keyOps...)
	}
	if err := a.s.Transact(ctx, ops); err != nil {
		if errors.Is(err, store.ErrConditionFailed) {
			return TenantView{}, nil, fmt.Errorf("%w: tenant %q", ErrExists, t.ID)
		}
		return TenantView{}, nil, err
	}
	view, err := a.GetTenant(ctx, t.ID)
	return view, key, err
}

// GetTenant returns a tenant and its usage.
func (a *Access) GetTenant(ctx context.Context, id string) (TenantView, error) {
	it, err := a.s.Get(ctx, tenantKey(id))
	if errors.Is(err, store.ErrNotFound) || (err == nil && it.Status != tenantActive) {
		return TenantView{}, fmt.Errorf("%w: tenant %q", ErrNotFound, id)
	}
	if err != nil {
		return TenantView{}, err
	}
	return tenantView(it)
}

// AllTenants lists every tenant, all pages.
func (a *Access) AllTenants(ctx context.Context) ([]TenantView, error) {
	var out []TenantView
	cursor := ""
	for {
		page, next, err := a.ListTenants(ctx, store.MaxPageSize, cursor)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if next == "" {
			return out, nil
		}
		cursor = next
	}
}

// ListTenants returns one page of tenants.
func (a *Access) ListTenants(ctx context.Context, limit int, cursor string) ([]TenantView, string, error) {
	page, err := a.s.Query(ctx, "TENANTS", store.Query{Limit: limit, Cursor: cursor})
	if err != nil {
		return nil, "", err
	}
	out := make([]TenantView, 0, len(page.Items))
	for _, it := range page.Items {
		if it.Status != tenantActive {
			continue
		}
		v, err := tenantView(it)
		if err != nil {
			return nil, "", err
		}
		out = append(out, v)
	}
	return out, page.Next, nil
}

// UpdateTenant changes a tenant's description, quotas and worker count. A
// quota may not drop below what the tenant uses: the free counters move by the
// change under the condition that they stay non-negative. ifVersion, when not
// zero, must be the tenant's current version.
func (a *Access) UpdateTenant(ctx context.Context, t domain.Tenant, ifVersion int64) (TenantView, error) {
	if ps := t.Validate(); len(ps) > 0 {
		return TenantView{}, ps
	}
	for range 8 {
		cur, err := a.GetTenant(ctx, t.ID)
		if err != nil {
			return TenantView{}, err
		}
		if ifVersion != 0 && cur.Version != ifVersion {
			return TenantView{}, fmt.Errorf("%w: tenant %q changed since version %d", ErrConflict, t.ID, ifVersion)
		}
		var ps domain.Problems
		if t.MaxClusters < cur.Usage.Clusters {
			ps = append(ps, domain.Problem{Field: "maxClusters", Code: domain.CodeConflict,
				Message: fmt.Sprintf("is %d but the tenant has %d clusters; delete clusters first or choose at least %d", t.MaxClusters, cur.Usage.Clusters, cur.Usage.Clusters)})
		}
		if t.MaxNodes < cur.Usage.Nodes {
			ps = append(ps, domain.Problem{Field: "maxNodes", Code: domain.CodeConflict,
				Message: fmt.Sprintf("is %d but the tenant has %d nodes; shrink or delete clusters first or choose at least %d", t.MaxNodes, cur.Usage.Nodes, cur.Usage.Nodes)})
		}
		if len(ps) > 0 {
			return TenantView{}, ps
		}
		next := cur.Tenant
		next.Description, next.Workers, next.MaxClusters, next.MaxNodes = t.Description, t.Workers, t.MaxClusters, t.MaxNodes
		data, err := json.Marshal(next)
		if err != nil {
			return TenantView{}, err
		}
		dc, dn := int64(t.MaxClusters-cur.MaxClusters), int64(t.MaxNodes-cur.MaxNodes)
		cond := store.Condition{Version: cur.Version, StatusIn: []string{tenantActive},
			CountersAtLeast: map[string]int64{FreeClusters: max(0, -dc), FreeNodes: max(0, -dn)}}
		_, err = a.s.Write(ctx, store.Update(tenantKey(t.ID), cond, store.Changes{Data: data, Add: map[string]int64{FreeClusters: dc, FreeNodes: dn}}))
		if errors.Is(err, store.ErrConditionFailed) {
			continue // usage or the tenant changed under us: look again
		}
		if err != nil {
			return TenantView{}, err
		}
		return a.GetTenant(ctx, t.ID)
	}
	return TenantView{}, fmt.Errorf("%w: tenant %q is changing too fast; try again", ErrConflict, t.ID)
}

// TenantDataDropper removes everything a tenant owns outside this package (its
// catalog). DeleteTenant calls it after the tenant stops accepting requests.
type TenantDataDropper func(ctx context.Context, tenant string) error

// DeleteTenant removes a tenant with no clusters: it first marks the tenant
// deleting (its keys stop working at once), then removes its keys, users and,
// through drop, its catalog, then the tenant itself. A crash part-way leaves a
// deleting tenant that a repeated DeleteTenant finishes.
func (a *Access) DeleteTenant(ctx context.Context, id string, drop TenantDataDropper) error {
	if id == domain.SystemTenant {
		return fmt.Errorf("%w: the system tenant holds the superadmin and cannot be deleted", ErrConflict)
	}
	it, err := a.s.Get(ctx, tenantKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: tenant %q", ErrNotFound, id)
	}
	if err != nil {
		return err
	}
	if it.Status == tenantActive {
		v, err := tenantView(it)
		if err != nil {
			return err
		}
		if v.Usage.Clusters > 0 {
			return fmt.Errorf("%w: tenant %q still has %d clusters; delete them first", ErrConflict, id, v.Usage.Clusters)
		}
		deleting := tenantDeleting
		cond := store.Condition{Version: it.Version, CountersAtLeast: map[string]int64{FreeClusters: int64(v.MaxClusters)}}
		if _, err := a.s.Write(ctx, store.Update(it.Key, cond, store.Changes{Status: &deleting})); err != nil {
			if errors.Is(err, store.ErrConditionFailed) {
				return fmt.Errorf("%w: tenant %q changed while being deleted; try again", ErrConflict, id)
			}
			return err
		}
	}
	users, err := a.allUsers(ctx, id)
	if err != nil {
		return err
	}
	for _, u := range users {
		if err := a.DeleteUser(ctx, id, u.Name); err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("deleting user %s of tenant %s: %w", u.Name, id, err)
		}
	}
	if drop != nil {
		if err := drop(ctx, id); err != nil {
			return fmt.Errorf("dropping the catalog of tenant %s: %w", id, err)
		}
	}
	_, err = a.s.Write(ctx, store.Delete(tenantKey(id), store.Condition{StatusIn: []string{tenantDeleting}}))
	return err
}
