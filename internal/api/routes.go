package api

import (
	"net/http"

	"github.com/heddle-io/heddle/internal/domain"
)

// routes is the whole API. openapi.yaml documents exactly these (a test checks
// both ways), and each route's Role is the least role that may call it.
func (s *Server) routes() []route {
	const (
		public     = domain.Role("")
		user       = domain.RoleUser
		admin      = domain.RoleAdmin
		superadmin = domain.RoleSuperadmin
	)
	return []route{
		{http.MethodGet, "/v1/status", public, s.getStatus},
		{http.MethodGet, "/v1/openapi.json", public, s.getOpenAPI},
		{http.MethodGet, "/v1/me", user, s.getMe},

		{http.MethodGet, "/v1/tenants", superadmin, s.listTenants},
		{http.MethodPost, "/v1/tenants", superadmin, s.createTenant},
		{http.MethodGet, "/v1/tenants/{tenant}", user, s.getTenant},
		// Tenant routes check visibility (404 for another tenant) before the
		// superadmin role, so ids of other tenants cannot be probed.
		{http.MethodPut, "/v1/tenants/{tenant}", user, s.updateTenant},
		{http.MethodDelete, "/v1/tenants/{tenant}", user, s.deleteTenant},

		{http.MethodGet, "/v1/users", admin, s.listUsers},
		{http.MethodPost, "/v1/users", admin, s.createUser},
		{http.MethodGet, "/v1/users/{user}", user, s.getUser},
		{http.MethodDelete, "/v1/users/{user}", admin, s.deleteUser},
		{http.MethodGet, "/v1/users/{user}/keys", user, s.listKeys},
		{http.MethodPost, "/v1/users/{user}/keys", user, s.createKey},
		{http.MethodDelete, "/v1/users/{user}/keys/{key}", user, s.deleteKey},

		{http.MethodGet, "/v1/catalog", admin, s.exportCatalog},
		{http.MethodPost, "/v1/catalog", admin, s.importCatalog},
		{http.MethodGet, "/v1/clustertemplates/{name}/resolved", user, s.resolveTemplate},
		{http.MethodGet, "/v1/{kind}", user, s.listEntities},
		{http.MethodGet, "/v1/{kind}/{name}", user, s.getEntity},
		{http.MethodPut, "/v1/{kind}/{name}", admin, s.putEntity},
		{http.MethodDelete, "/v1/{kind}/{name}", admin, s.deleteEntity},
		{http.MethodGet, "/v1/{kind}/{name}/versions", user, s.listVersions},
		{http.MethodGet, "/v1/{kind}/{name}/versions/{version}", user, s.getVersion},
	}
}
