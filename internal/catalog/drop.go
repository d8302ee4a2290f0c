package catalog

import (
	"context"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// DropTenant deletes a tenant's whole catalog, every version of every entity.
// Tenant deletion calls it once the tenant no longer accepts requests, so
// nothing writes concurrently; each batch is one transaction and a crash
// part-way is finished by calling it again.
func (c *Catalog) DropTenant(ctx context.Context, tenant string) error {
	s := c.scoped(tenant)
	// Imports left behind first: a published one is finished, any other
	// loses what it staged (versions of entities that may have no head).
	if _, err := c.collect(ctx, s, time.Now().Add(100*365*24*time.Hour)); err != nil {
		return err
	}
	for _, k := range domain.Kinds {
		for {
			page, err := s.Query(ctx, "CAT#"+string(k), store.Query{Limit: store.MaxPageSize})
			if err != nil {
				return err
			}
			if len(page.Items) == 0 {
				break
			}
			for _, head := range page.Items {
				if err := deletePartition(ctx, s, versionKey(k, head.SK, 0).PK); err != nil {
					return err
				}
				if _, err := s.Write(ctx, store.Delete(head.Key, store.Condition{})); err != nil {
					return err
				}
			}
		}
	}
	_, err := s.Write(ctx, store.Delete(revisionKey, store.Condition{}))
	return err
}

func deletePartition(ctx context.Context, s store.Store, pk string) error {
	for {
		page, err := s.Query(ctx, pk, store.Query{Limit: store.MaxTransactItems})
		if err != nil {
			return err
		}
		if len(page.Items) == 0 {
			return nil
		}
		ops := make([]store.Op, len(page.Items))
		for i, it := range page.Items {
			ops[i] = store.Delete(it.Key, store.Condition{})
		}
		if err := s.Transact(ctx, ops); err != nil {
			return err
		}
	}
}
