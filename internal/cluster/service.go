package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/macros"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provision"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/planner"
	"github.com/heddle-io/heddle/solver"
)

// Config assembles a Service.
type Config struct {
	Store     store.Store // unscoped; the service scopes every key by tenant
	Catalog   *catalog.Catalog
	Access    *access.Access
	Engine    *engine.Engine
	Keyring   *secrets.Keyring
	Providers *provider.Registry
	// Estimates are the per-action durations plan previews use for the
	// critical path; nil: a flat guess.
	Estimates planner.Estimator
	Clock     func() time.Time
	Logger    *slog.Logger
	// SummaryMinTasks is the job size (work tasks) from which the job's
	// views read its summary instead of its tasks (jobsummary.go); 0: 2,000.
	SummaryMinTasks int
	// PlanLaterNodes is the create size from which the request writes only
	// the job and its inputs and the background plans and writes the rest
	// (replan.go); 0: never (creates are staged as before). internal/assemble
	// sets 1,000 for every process; see docs/architecture.md, "Creates
	// planned in the background".
	PlanLaterNodes int
}

// Service runs cluster operations. It is safe for concurrent use.
type Service struct {
	cfg    Config
	log    *slog.Logger
	stages *stageCache // stage views of recent jobs
	// summaryMinTasks is the job size from which views read a job summary
	// (jobsummary.go); tests lower it.
	summaryMinTasks int
	planLaterNodes  int
	refreshes       summaryRefreshes
	// verificationEndWait is verificationEndWait (verify.go); tests
	// shorten it.
	verificationEndWait time.Duration
}

var _ provision.Clusters = (*Service)(nil)

// New checks cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Catalog == nil || cfg.Access == nil || cfg.Engine == nil || cfg.Keyring == nil || cfg.Providers == nil {
		return nil, errors.New("cluster: Store, Catalog, Access, Engine, Keyring and Providers are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SummaryMinTasks <= 0 {
		cfg.SummaryMinTasks = summaryMinTasks
	}
	if cfg.Estimates == nil {
		cfg.Estimates = planner.ActionEstimates(nil, 10*time.Second)
	}
	svc := &Service{cfg: cfg, log: cfg.Logger, stages: newStageCache(1024), summaryMinTasks: cfg.SummaryMinTasks, planLaterNodes: cfg.PlanLaterNodes,
		verificationEndWait: verificationEndWait}
	cfg.Engine.SetReplanner(svc.replan)
	return svc, nil
}

func (s *Service) now() time.Time { return s.cfg.Clock().UTC() }

// spec is what a cluster was built from, kept beside it (T#t#CLUSTERSPECS,
// cluster id): the catalog entities as they were when it was created or
// last synced, and its secrets, sealed.
type spec struct {
	Provider       domain.Provider                `json:"provider"`
	ProviderFields map[string]string              `json:"providerFields,omitempty"`
	HardwareTypes  map[string]domain.HardwareType `json:"hardwareTypes"`
	ImageTypes     map[string]domain.ImageType    `json:"imageTypes"`
	Services       map[string]domain.Service      `json:"services"`
	Key            secrets.ClusterKey             `json:"key"`
}

func specKey(tenant, cluster string) store.Key {
	return store.Key{PK: store.TenantPK(tenant, "CLUSTERSPECS"), SK: cluster}
}

func (s *Service) loadSpec(ctx context.Context, tenant, cluster string) (*spec, int64, error) {
	it, err := s.cfg.Store.Get(ctx, specKey(tenant, cluster))
	if err != nil {
		return nil, 0, fmt.Errorf("reading the spec of cluster %s: %w", cluster, err)
	}
	var sp spec
	if err := json.Unmarshal(it.Data, &sp); err != nil {
		return nil, 0, fmt.Errorf("cluster %s: unreadable spec: %w", cluster, err)
	}
	return &sp, it.Version, nil
}

func (sp *spec) solverCatalog() solver.Catalog {
	c := solver.Catalog{
		Services:      map[string]*domain.Service{},
		HardwareTypes: map[string]*domain.HardwareType{},
		ImageTypes:    map[string]*domain.ImageType{},
	}
	for n, v := range sp.Services {
		c.Services[n] = &v
	}
	for n, v := range sp.HardwareTypes {
		c.HardwareTypes[n] = &v
	}
	for n, v := range sp.ImageTypes {
		c.ImageTypes[n] = &v
	}
	return c
}

// plannerServices returns the definitions of the named services.
func (sp *spec) plannerServices(names ...[]string) map[string]*domain.Service {
	out := map[string]*domain.Service{}
	for _, list := range names {
		for _, n := range list {
			if v, ok := sp.Services[n]; ok {
				out[n] = &v
			}
		}
	}
	return out
}

// Spec implements provision.Clusters: what a task's executor needs to know
// of its cluster, its nodes (deleted ones left out) with every fact the
// engine recorded so far.
func (s *Service) Spec(ctx context.Context, tenant, clusterID string, withNodes bool) (*provision.ClusterSpec, error) {
	c, err := s.cfg.Engine.Cluster(ctx, tenant, clusterID)
	if err != nil {
		return nil, err
	}
	sp, _, err := s.loadSpec(ctx, tenant, clusterID)
	if err != nil {
		return nil, err
	}
	out := &provision.ClusterSpec{
		ClusterID: c.ID, Name: c.Name, Owner: c.Owner, DNSSuffix: c.DNSSuffix, Config: c.Config,
		Provider: sp.Provider, ProviderFields: sp.ProviderFields,
		HardwareTypes: sp.HardwareTypes, ImageTypes: sp.ImageTypes, Services: sp.Services, Key: sp.Key,
	}
	if withNodes {
		if out.Nodes, err = s.LayoutNodes(ctx, tenant, clusterID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// LayoutNodes implements provision.NodeLister: the cluster's nodes that
// macros see. Nodes a shrink or delete is retiring are out of the layout,
// so the remaining nodes reconfigure without them.
func (s *Service) LayoutNodes(ctx context.Context, tenant, clusterID string) ([]domain.Node, error) {
	nodes, err := s.cfg.Engine.Nodes(ctx, tenant, clusterID)
	if err != nil {
		return nil, err
	}
	var out []domain.Node
	for _, n := range nodes {
		if n.Status != domain.NodeDeleted && n.Status != domain.NodeDeleting {
			out = append(out, n)
		}
	}
	return out, nil
}

// visible returns the cluster if the caller may see it: users see their own
// clusters, admins every cluster of their tenant. Anything else is "not
// found", so ids cannot be probed.
func (s *Service) visible(ctx context.Context, p access.Principal, id string) (domain.Cluster, error) {
	c, err := s.cfg.Engine.Cluster(ctx, p.Tenant, id)
	if err != nil {
		return domain.Cluster{}, err
	}
	if p.Role == domain.RoleUser && c.Owner != p.User {
		return domain.Cluster{}, fmt.Errorf("%w: cluster %s", engine.ErrNotFound, id)
	}
	return c, nil
}

// newClusterID returns an id that sorts by creation time, short enough for
// host names and free of the characters task references use.
func newClusterID(now time.Time) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("c%011x%s", now.UnixMilli(), hex.EncodeToString(b))
}

// liveNodes returns the nodes that exist or are being made, by Num.
func liveNodes(nodes []domain.Node) []domain.Node {
	var out []domain.Node
	for _, n := range nodes {
		if n.Status != domain.NodeDeleted {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b domain.Node) int { return a.Num - b.Num })
	return out
}

func nodeIDs(nodes []domain.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return out
}

// servicesOn lists the services the nodes run, sorted.
func servicesOn(nodes []domain.Node) []string {
	var out []string
	for _, n := range nodes {
		for _, svc := range n.Services {
			if !slices.Contains(out, svc) {
				out = append(out, svc)
			}
		}
	}
	slices.Sort(out)
	return out
}

// configReferences tells the planner which services each service's action
// fields (and the cluster config) refer to through macros, so an expand or a
// shrink reconfigures exactly the services whose configuration changes.
func configReferences(services map[string]*domain.Service, config json.RawMessage) (map[string][]string, error) {
	refs := map[string][]string{}
	for _, name := range slices.Sorted(maps.Keys(services)) {
		svc := services[name]
		// The catalog refuses these when the service is written; a version
		// stored before it did is reported as the catalog would.
		if ps := macros.EntityProblems(svc); len(ps) > 0 {
			for i := range ps {
				ps[i].Field = "services." + name + "." + ps[i].Field
			}
			return nil, ps
		}
		var all []string
		for _, a := range svc.Actions {
			for _, text := range a.Fields {
				got, err := macros.ServicesReferenced(text)
				if err != nil {
					return nil, err
				}
				all = append(all, got...)
			}
		}
		slices.Sort(all)
		refs[name] = slices.Compact(all)
	}
	if len(config) > 0 {
		got, err := macros.ServicesReferencedJSON(config)
		if err != nil {
			return nil, domain.Problems{{Field: "config", Code: domain.CodeMalformed, Message: err.Error()}}
		}
		refs[planner.ClusterConfigKey] = got
	}
	return refs, nil
}
