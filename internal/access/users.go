package access

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// CreateUser adds a user to a tenant. Only the system tenant may hold
// superadmins.
func (a *Access) CreateUser(ctx context.Context, tenant string, u domain.User) (domain.User, error) {
	if ps := u.Validate(); len(ps) > 0 {
		return domain.User{}, ps
	}
	if u.Role == domain.RoleSuperadmin && tenant != domain.SystemTenant {
		return domain.User{}, domain.Problems{{Field: "role", Code: domain.CodeInvalid,
			Message: "superadmins live only in the system tenant; use admin or user"}}
	}
	u.TenantID, u.CreatedAt, u.Version = tenant, a.now().UTC(), 0
	data, err := json.Marshal(u)
	if err != nil {
		return domain.User{}, err
	}
	err = a.s.Transact(ctx, []store.Op{
		store.Check(tenantKey(tenant), store.Condition{StatusIn: []string{tenantActive}}),
		store.Put(store.Item{Key: userKey(tenant, u.Name), Data: data}, store.Condition{MustNotExist: true}),
	})
	var terr *store.TransactionError
	if errors.As(err, &terr) {
		if terr.Reasons[0] != nil {
			return domain.User{}, fmt.Errorf("%w: tenant %q", ErrNotFound, tenant)
		}
		return domain.User{}, fmt.Errorf("%w: user %q", ErrExists, u.Name)
	}
	if err != nil {
		return domain.User{}, err
	}
	return a.GetUser(ctx, tenant, u.Name)
}

// GetUser returns one user of a tenant.
func (a *Access) GetUser(ctx context.Context, tenant, name string) (domain.User, error) {
	it, err := a.s.Get(ctx, userKey(tenant, name))
	if errors.Is(err, store.ErrNotFound) {
		return domain.User{}, fmt.Errorf("%w: user %q", ErrNotFound, name)
	}
	if err != nil {
		return domain.User{}, err
	}
	var u domain.User
	if err := json.Unmarshal(it.Data, &u); err != nil {
		return domain.User{}, fmt.Errorf("access: unreadable user %s: %w", name, err)
	}
	u.Version = it.Version
	return u, nil
}

// ListUsers returns one page of a tenant's users.
func (a *Access) ListUsers(ctx context.Context, tenant string, limit int, cursor string) ([]domain.User, string, error) {
	page, err := a.s.Query(ctx, userKey(tenant, "").PK, store.Query{Limit: limit, Cursor: cursor})
	if err != nil {
		return nil, "", err
	}
	out := make([]domain.User, 0, len(page.Items))
	for _, it := range page.Items {
		var u domain.User
		if err := json.Unmarshal(it.Data, &u); err != nil {
			return nil, "", fmt.Errorf("access: unreadable user %s: %w", it.SK, err)
		}
		u.Version = it.Version
		out = append(out, u)
	}
	return out, page.Next, nil
}

func (a *Access) allUsers(ctx context.Context, tenant string) ([]domain.User, error) {
	var all []domain.User
	cursor := ""
	for {
		users, next, err := a.ListUsers(ctx, tenant, store.MaxPageSize, cursor)
		if err != nil {
			return nil, err
		}
		all = append(all, users...)
		if next == "" {
			return all, nil
		}
		cursor = next
	}
}

// SetRole gives a user another role; their keys carry it from their next
// request (a key's role is the user's, read on every authentication).
// ifVersion, when not 0, must be the user's current version.
func (a *Access) SetRole(ctx context.Context, tenant, name string, role domain.Role, ifVersion int64) (domain.User, error) {
	u, err := a.GetUser(ctx, tenant, name)
	if err != nil {
		return domain.User{}, err
	}
	if ifVersion != 0 && ifVersion != u.Version {
		return domain.User{}, fmt.Errorf("%w: user %q is at version %d, not %d; read it again", ErrConflict, name, u.Version, ifVersion)
	}
	u.Role = role
	if ps := u.Validate(); len(ps) > 0 {
		return domain.User{}, ps
	}
	if role == domain.RoleSuperadmin && tenant != domain.SystemTenant {
		return domain.User{}, domain.Problems{{Field: "role", Code: domain.CodeInvalid,
			Message: "superadmins live only in the system tenant; use admin or user"}}
	}
	data, err := json.Marshal(u)
	if err != nil {
		return domain.User{}, err
	}
	_, err = a.s.Write(ctx, store.Update(userKey(tenant, name), store.Condition{Version: u.Version}, store.Changes{Data: data}))
	if errors.Is(err, store.ErrConditionFailed) {
		return domain.User{}, fmt.Errorf("%w: user %q changed while its role was being set; try again", ErrConflict, name)
	}
	if err != nil {
		return domain.User{}, err
	}
	return a.GetUser(ctx, tenant, name)
}

// DeleteUser removes a user and every key of theirs.
func (a *Access) DeleteUser(ctx context.Context, tenant, name string) error {
	if _, err := a.GetUser(ctx, tenant, name); err != nil {
		return err
	}
	for {
		keys, _, err := a.ListKeys(ctx, tenant, name, store.MaxTransactItems/2, "")
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			break
		}
		var ops []store.Op
		for _, k := range keys {
			ops = append(ops, store.Delete(keyListKey(tenant, name, k.ID), store.Condition{}), store.Delete(keyLookupKey(k.Hash), store.Condition{}))
		}
		if err := a.s.Transact(ctx, ops); err != nil {
			return err
		}
	}
	_, err := a.s.Write(ctx, store.Delete(userKey(tenant, name), store.Condition{}))
	return err
}

// keyOps builds a key for user and the two writes that store it.
func (a *Access) keyOps(tenant, user, secret string) (*domain.APIKey, []store.Op) {
	key := &domain.APIKey{ID: newID("key_"), TenantID: tenant, User: user, Hash: HashKey(secret), CreatedAt: a.now().UTC(), Secret: secret}
	listed := *key
	listed.Secret = ""
	// Hash is json:"-" on the API type; the stored list item keeps it so a
	// revocation can find the lookup item.
	data, _ := json.Marshal(storedKey{APIKey: listed, Hash: key.Hash})
	rec, _ := json.Marshal(keyRecord{ID: key.ID, Tenant: tenant, User: user})
	return key, []store.Op{
		store.Put(store.Item{Key: keyListKey(tenant, user, key.ID), Data: data}, store.Condition{MustNotExist: true}),
		store.Put(store.Item{Key: keyLookupKey(key.Hash), Data: rec}, store.Condition{MustNotExist: true}),
	}
}

type storedKey struct {
	domain.APIKey
	Hash string `json:"hash"`
}

// CreateKey makes a new API key for a user. The returned key carries its
// secret; nothing else ever will.
func (a *Access) CreateKey(ctx context.Context, tenant, user string) (*domain.APIKey, error) {
	return a.createKey(ctx, tenant, user, NewKeySecret())
}

func (a *Access) createKey(ctx context.Context, tenant, user, secret string) (*domain.APIKey, error) {
	key, ops := a.keyOps(tenant, user, secret)
	ops = append(ops, store.Check(userKey(tenant, user), store.Condition{MustExist: true}))
	err := a.s.Transact(ctx, ops)
	var terr *store.TransactionError
	if errors.As(err, &terr) && terr.Reasons[2] != nil {
		return nil, fmt.Errorf("%w: user %q", ErrNotFound, user)
	}
	if err != nil {
		return nil, err
	}
	return key, nil
}

// ListKeys returns one page of a user's keys, without secrets. Hash is filled
// for revocation but never serialised (domain.APIKey tags it "-").
func (a *Access) ListKeys(ctx context.Context, tenant, user string, limit int, cursor string) ([]domain.APIKey, string, error) {
	page, err := a.s.Query(ctx, keyListKey(tenant, user, "").PK, store.Query{Limit: limit, Cursor: cursor})
	if err != nil {
		return nil, "", err
	}
	out := make([]domain.APIKey, 0, len(page.Items))
	for _, it := range page.Items {
		var k storedKey
		if err := json.Unmarshal(it.Data, &k); err != nil {
			return nil, "", fmt.Errorf("access: unreadable key %s: %w", it.SK, err)
		}
		k.APIKey.Hash = k.Hash
		out = append(out, k.APIKey)
	}
	return out, page.Next, nil
}

// DeleteKey revokes one key of a user.
func (a *Access) DeleteKey(ctx context.Context, tenant, user, id string) error {
	it, err := a.s.Get(ctx, keyListKey(tenant, user, id))
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: key %q of user %q", ErrNotFound, id, user)
	}
	if err != nil {
		return err
	}
	var k storedKey
	if err := json.Unmarshal(it.Data, &k); err != nil {
		return err
	}
	return a.s.Transact(ctx, []store.Op{
		store.Delete(it.Key, store.Condition{Version: it.Version}),
		store.Delete(keyLookupKey(k.Hash), store.Condition{}),
	})
}
