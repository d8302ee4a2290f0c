package client

import (
	"context"
	"net/http"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
)

type (
	// Tenant is a tenant with its quotas, worker count and what it uses
	// of its quotas (GET /v1/tenants/{id}).
	Tenant = access.TenantView
	// TenantSettings is what PUT /v1/tenants/{id} sets: the description,
	// quotas and worker count; Version, when not 0, must be the tenant's
	// current version (an optimistic lock).
	TenantSettings = domain.Tenant
)

func tenantPath(id string) string { return "/v1/tenants/" + PathEscape(id) }

// GetTenant reads a tenant with its usage. Anyone but a superadmin may read
// only their own tenant.
func (c *Client) GetTenant(ctx context.Context, id string) (*Tenant, error) {
	return call[Tenant](ctx, c, http.MethodGet, tenantPath(id), nil, nil)
}

// UpdateTenant sets a tenant's description, quotas and worker count
// (superadmin). Every field is written, so read the tenant first and change
// what should change; with s.Version set, a tenant changed since is refused
// with 409 instead of overwritten. A quota below what the tenant uses is
// refused with the field named. The server also brings the tenant's queue
// and worker mapping to its worker count, so writing a tenant back as it is
// finishes an onboarding that failed.
func (c *Client) UpdateTenant(ctx context.Context, id string, s TenantSettings) (*Tenant, error) {
	return call[Tenant](ctx, c, http.MethodPut, tenantPath(id), nil, s)
}
