package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/ec2"
	"github.com/heddle-io/heddle/internal/secrets"
)

// SweepMode says whether and how the janitor sweeps EC2 (HEDDLE_EC2_SWEEP).
type SweepMode string

// The sweep modes.
const (
	SweepOn     SweepMode = "on"      // remove orphans (the default)
	SweepOff    SweepMode = "off"     // do not sweep
	SweepDryRun SweepMode = "dry-run" // report what would go, remove nothing
)

// parseSweepMode reads HEDDLE_EC2_SWEEP; empty means on.
func parseSweepMode(s string) (SweepMode, error) {
	switch m := SweepMode(s); m {
	case "", SweepOn:
		return SweepOn, nil
	case SweepOff, SweepDryRun:
		return m, nil
	}
	return "", fmt.Errorf("HEDDLE_EC2_SWEEP is %q; it must be on, off or dry-run", s)
}

// TenantLister pages through the active tenants (access.Access).
type TenantLister interface {
	ListTenants(ctx context.Context, limit int, cursor string) ([]access.TenantView, string, error)
}

// ProviderLister pages through a tenant's catalog entities of one kind, as
// stored, sensitive fields sealed (catalog.Catalog).
type ProviderLister interface {
	List(ctx context.Context, tenant string, k domain.Kind, limit int, cursor string) ([]domain.Entity, string, error)
}

// FieldOpener returns a provider entity's fields with the sealed ones
// opened.
type FieldOpener interface {
	OpenFields(ctx context.Context, tenant string, p domain.Provider) (map[string]string, error)
}

// ClusterLookup reads a cluster's record (engine.Engine).
type ClusterLookup interface {
	Cluster(ctx context.Context, tenant, clusterID string) (domain.Cluster, error)
}

// Sweeper removes, from one account and region, the instances and key
// pairs of clusters that no longer exist (ec2.EC2).
type Sweeper interface {
	Sweep(ctx context.Context, fields map[string]string, exists ec2.ClusterExists, opts ec2.SweepOptions) (ec2.SweepReport, error)
}

// registryOpener opens a provider's fields with the registry and the
// keyring the catalog sealed them with (bound to tenant, provider and
// field).
type registryOpener struct {
	registry *provider.Registry
	keyring  *secrets.Keyring
}

func (o registryOpener) OpenFields(ctx context.Context, tenant string, p domain.Provider) (map[string]string, error) {
	opened, err := o.registry.OpenFields(ctx, o.keyring, tenant, "", p, nil)
	if err != nil {
		return nil, err
	}
	return opened.Fields, nil
}

// SweepReport is what the EC2 sweep of one invocation did.
type SweepReport struct {
	Mode            SweepMode `json:"mode"`
	Providers       int       `json:"providers"`       // ec2 provider entities seen
	Swept           int       `json:"swept"`           // distinct accounts and regions swept
	Failed          int       `json:"failed"`          // providers (or listings) that failed
	Examined        int       `json:"examined"`        // live instances tagged by heddle
	Terminated      int       `json:"terminated"`      // instances terminated (would be, in a dry run)
	KeyPairsDeleted int       `json:"keyPairsDeleted"` // key pairs deleted (would be, in a dry run)
	Doubts          int       `json:"doubts"`          // cluster lookups that failed; their nodes were spared
}

// sweepTarget is what makes two providers the same place to sweep.
type sweepTarget struct{ region, accessKeyID, endpoint string }

// ec2Sweep sweeps, once per invocation, every account and region that an
// ec2 provider of some tenant names.
type ec2Sweep struct {
	mode      SweepMode
	tenants   TenantLister
	providers ProviderLister
	opener    FieldOpener
	clusters  ClusterLookup
	sweeper   Sweeper
	log       *slog.Logger
	minAge    time.Duration // zero: ec2's default
	pageSize  int           // zero: 100
}

// run makes one sweep. It does what it can: a provider whose fields cannot
// be opened or whose sweep fails is logged and counted, and the others are
// swept all the same.
func (s *ec2Sweep) run(ctx context.Context) SweepReport {
	if s == nil || s.mode == SweepOff {
		return SweepReport{Mode: SweepOff}
	}
	rep := SweepReport{Mode: s.mode}
	done := map[sweepTarget]bool{}
	var cursor string
	for {
		tenants, next, err := s.tenants.ListTenants(ctx, s.limit(), cursor)
		if err != nil {
			rep.Failed++
			s.log.ErrorContext(ctx, "janitor: ec2 sweep: cannot list tenants", "error", err)
			return rep
		}
		for _, t := range tenants {
			s.tenant(ctx, t.ID, done, &rep)
		}
		if next == "" {
			return rep
		}
		cursor = next
	}
}

func (s *ec2Sweep) limit() int {
	if s.pageSize > 0 {
		return s.pageSize
	}
	return 100
}

func (s *ec2Sweep) tenant(ctx context.Context, tenant string, done map[sweepTarget]bool, rep *SweepReport) {
	var cursor string
	for {
		es, next, err := s.providers.List(ctx, tenant, domain.KindProvider, s.limit(), cursor)
		if err != nil {
			rep.Failed++
			s.log.ErrorContext(ctx, "janitor: ec2 sweep: cannot list providers", "tenant", tenant, "error", err)
			return
		}
		for _, e := range es {
			if p, ok := e.(*domain.Provider); ok && p.ProviderType == ec2.TypeName {
				rep.Providers++
				s.provider(ctx, tenant, *p, done, rep)
			}
		}
		if next == "" {
			return
		}
		cursor = next
	}
}

func (s *ec2Sweep) provider(ctx context.Context, tenant string, p domain.Provider, done map[sweepTarget]bool, rep *SweepReport) {
	log := s.log.With("tenant", tenant, "provider", p.Name)
	fields, err := s.opener.OpenFields(ctx, tenant, p)
	if err != nil {
		rep.Failed++
		log.ErrorContext(ctx, "janitor: ec2 sweep: cannot open the provider's fields", "error", err)
		return
	}
	target := sweepTarget{fields[ec2.FieldRegion], fields[ec2.FieldAccessKeyID], fields[ec2.FieldEndpoint]}
	if done[target] {
		return // swept already in this pass, through another provider
	}
	log = log.With("region", target.region)
	r, err := s.sweeper.Sweep(ctx, fields, s.exists(log, rep), ec2.SweepOptions{MinAge: s.minAge, DryRun: s.mode == SweepDryRun})
	rep.Examined += r.Examined
	if err != nil {
		// Another provider with the same target may still sweep it (its
		// secret key may be the current one).
		rep.Failed++
		log.ErrorContext(ctx, "janitor: ec2 sweep failed", "error", err, "terminated", r.Terminated)
		return
	}
	done[target] = true
	rep.Swept++
	rep.Terminated += len(r.Terminated)
	rep.KeyPairsDeleted += len(r.KeyPairsDeleted)
	if len(r.Terminated) > 0 || len(r.KeyPairsDeleted) > 0 {
		log.InfoContext(ctx, "janitor: ec2 sweep removed orphans", "dryRun", s.mode == SweepDryRun,
			"instances", r.Terminated, "keyPairs", r.KeyPairsDeleted, "examined", r.Examined, "clusters", r.Clusters)
	}
}

// exists answers the sweep: a cluster exists unless its record is gone or
// TERMINATED. When in doubt (the lookup failed) it exists, so that its
// nodes are spared.
func (s *ec2Sweep) exists(log *slog.Logger, rep *SweepReport) ec2.ClusterExists {
	return func(ctx context.Context, tenant, clusterID string) (bool, error) {
		c, err := s.clusters.Cluster(ctx, tenant, clusterID)
		switch {
		case errors.Is(err, engine.ErrNotFound):
			return false, nil
		case err != nil:
			rep.Doubts++
			log.WarnContext(ctx, "janitor: ec2 sweep: cannot read a cluster; sparing its nodes",
				"clusterTenant", tenant, "cluster", clusterID, "error", err)
			return true, nil
		}
		return !c.Status.Terminal(), nil
	}
}
