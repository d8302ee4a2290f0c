package onboard

import (
	"context"

	"github.com/heddle-io/heddle/internal/domain"
)

// Onboarder provisions what a tenant needs outside the store. Every method
// is idempotent, so a failed call is repaired by calling it again.
type Onboarder interface {
	// Onboard makes the tenant's queues and whatever consumes them, sized
	// to tenant.Workers.
	Onboard(ctx context.Context, tenant domain.Tenant) error
	// Resize brings the consumers to tenant.Workers, onboarding the tenant
	// if something is missing.
	Resize(ctx context.Context, tenant domain.Tenant) error
	// Offboard removes what Onboard made. The caller makes sure the tenant
	// has no clusters left.
	Offboard(ctx context.Context, tenantID string) error
}

// Nop is the Onboarder of the local server, whose in-process queue needs no
// provisioning.
type Nop struct{}

var _ Onboarder = Nop{}

// Onboard does nothing.
func (Nop) Onboard(context.Context, domain.Tenant) error { return nil }

// Resize does nothing.
func (Nop) Resize(context.Context, domain.Tenant) error { return nil }

// Offboard does nothing.
func (Nop) Offboard(context.Context, string) error { return nil }
