package domain

import "time"

// Role is what a user may do.
//
//   - superadmin: manages tenants (and is an admin of the system tenant).
//   - admin: writes the tenant's catalog, sees every cluster of the tenant,
//     manages its users and keys.
//   - user: creates clusters and sees only their own.
type Role string

const (
	RoleSuperadmin Role = "superadmin"
	RoleAdmin      Role = "admin"
	RoleUser       Role = "user"
)

// Valid reports whether r is one of the known roles.
func (r Role) Valid() bool { return r == RoleSuperadmin || r == RoleAdmin || r == RoleUser }

// AtLeast reports whether r carries every right of other.
func (r Role) AtLeast(other Role) bool { return r.rank() >= other.rank() }

func (r Role) rank() int {
	switch r {
	case RoleSuperadmin:
		return 3
	case RoleAdmin:
		return 2
	case RoleUser:
		return 1
	}
	return 0
}

// SystemTenant is the tenant the superadmin belongs to.
const SystemTenant = "system"

// Tenant is an isolated customer of heddle: its own catalog, clusters, quotas
// and workers.
type Tenant struct {
	ID          string `json:"id"`
	Description string `json:"description,omitempty"`
	// Workers is how many tasks of this tenant run at once: the worker pool
	// locally, the event source mapping's MaximumConcurrency in AWS.
	Workers     int       `json:"workers"`
	MaxClusters int       `json:"maxClusters"`
	MaxNodes    int       `json:"maxNodes"`
	CreatedAt   time.Time `json:"createdAt"`
	Version     int64     `json:"version"`
}

// TenantUsage is what a tenant holds against its quotas. It is kept in the
// same transactions as the changes it counts.
type TenantUsage struct {
	Clusters int `json:"clusters"`
	Nodes    int `json:"nodes"`
}

// User is a person or a robot acting in one tenant.
type User struct {
	TenantID  string    `json:"tenantId"`
	Name      string    `json:"name"`
	Role      Role      `json:"role"`
	CreatedAt time.Time `json:"createdAt"`
	Version   int64     `json:"version"`
}

// APIKey is a credential of a user. The secret itself is shown once, at
// creation; heddle keeps only its SHA-256 hash.
type APIKey struct {
	ID        string    `json:"id"`
	TenantID  string    `json:"tenantId"`
	User      string    `json:"user"`
	Hash      string    `json:"-"`
	CreatedAt time.Time `json:"createdAt"`
	// Secret is set only in the response that creates the key.
	Secret string `json:"secret,omitempty"`
}
