package desired

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/domain"
)

// Manager is the mark (domain.Cluster.ManagedBy) of a cluster apply made or
// adopted: apply changes and prunes only clusters that carry it.
const Manager = "apply"

// Kind is what a step does.
type Kind string

// The steps, in the order they run on one cluster: the template version
// first (it decides what the services are), then what goes away (removed
// services, then nodes, so no work is spent on them), then the config,
// then what comes (services, then nodes, which are built with the final
// services and config).
const (
	Create         Kind = "create"
	Adopt          Kind = "adopt"
	Sync           Kind = "sync"
	RemoveServices Kind = "remove-services"
	Shrink         Kind = "shrink"
	Reconfigure    Kind = "reconfigure"
	AddServices    Kind = "add-services"
	Expand         Kind = "expand"
	Delete         Kind = "delete"
)

// Step is one operation on one cluster.
type Step struct {
	Kind Kind `json:"operation"`
	// Name is the cluster's name; ClusterID its id (empty for a create).
	Name      string `json:"cluster"`
	ClusterID string `json:"clusterId,omitempty"`
	// Request is the body of the API call: a cluster.CreateRequest for a
	// create, cluster.ManageRequest for an adopt, nil for a delete, else
	// the request of the cluster's action route named by Kind.
	Request any `json:"request,omitempty"`
}

// String says what the step does, for a person.
func (s Step) String() string {
	switch r := s.Request.(type) {
	case cluster.CreateRequest:
		return fmt.Sprintf("create %s from template %s with %s", s.Name, templateName(r.Template, r.TemplateVersion), nodes(r.Size))
	case cluster.ManageRequest:
		return fmt.Sprintf("adopt %s (%s): mark it managed by %s", s.Name, s.ClusterID, r.ManagedBy)
	case cluster.SyncRequest:
		return fmt.Sprintf("sync %s to template version %d", s.Name, r.TemplateVersion)
	case cluster.RemoveServicesRequest:
		return fmt.Sprintf("remove services %s from %s", strings.Join(r.Services, ","), s.Name)
	case cluster.ShrinkRequest:
		return fmt.Sprintf("shrink %s by %s", s.Name, nodes(r.Count))
	case cluster.ReconfigureRequest:
		return fmt.Sprintf("reconfigure %s with config %s", s.Name, compact(r.Config))
	case cluster.AddServicesRequest:
		if r.MaxNewNodes > 0 {
			return fmt.Sprintf("add services %s to %s, on up to %s added for them", strings.Join(r.Services, ","), s.Name, nodes(r.MaxNewNodes))
		}
		return fmt.Sprintf("add services %s to %s", strings.Join(r.Services, ","), s.Name)
	case cluster.ExpandRequest:
		return fmt.Sprintf("expand %s by %s", s.Name, nodes(r.Count))
	}
	return fmt.Sprintf("%s %s (%s)", s.Kind, s.Name, s.ClusterID)
}

// nodes counts nodes in words: "1 node", "3 nodes".
func nodes(n int) string {
	if n == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", n)
}

func templateName(name string, version int) string {
	if version > 0 {
		return fmt.Sprintf("%s@%d", name, version)
	}
	return name
}

func compact(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Options are apply's flags that widen what it may touch.
type Options struct {
	// Prune deletes the clusters apply manages that the document no longer
	// declares.
	Prune bool
	// Adopt lets apply take over (and then change) a declared cluster it
	// did not make.
	Adopt bool
}

// Plan is what converging the tenant's clusters takes.
type Plan struct {
	Steps []Step
	// Unchanged are the declared clusters already as declared.
	Unchanged []string
	// Problems are what apply refuses to do; with any, nothing runs.
	Problems domain.Problems
}

// Compute plans the steps that bring current (the tenant's clusters that
// are not TERMINATED) to the declared clusters: the declared ones in the
// document's order, then the deletes of --prune.
func Compute(declared []Cluster, current []domain.Cluster, o Options) Plan {
	var p Plan
	byName := map[string][]*domain.Cluster{}
	for i := range current {
		c := &current[i]
		if c.Status != domain.ClusterTerminated {
			byName[c.Name] = append(byName[c.Name], c)
		}
	}
	for i, d := range declared {
		found := byName[d.Name]
		if len(found) > 1 {
			ids := make([]string, len(found))
			for j, c := range found {
				ids[j] = c.ID
			}
			p.Problems = append(p.Problems, domain.Problem{Field: fmt.Sprintf("clusters[%d].name", i), Code: domain.CodeConflict,
				Message: fmt.Sprintf("%d clusters are named %s (%s); apply finds clusters by name: keep one and delete the others (heddle clusters delete ID); names are unique from this release on, so only clusters made before it can share one", len(found), d.Name, strings.Join(ids, ", "))})
			continue
		}
		var existing *domain.Cluster
		if len(found) == 1 {
			existing = found[0]
		}
		steps, ps := ForCluster(i, d, existing, o.Adopt)
		p.Problems = append(p.Problems, ps...)
		if len(ps) == 0 && len(steps) == 0 {
			p.Unchanged = append(p.Unchanged, d.Name)
		}
		p.Steps = append(p.Steps, steps...)
	}
	if o.Prune {
		for i := range current {
			c := &current[i]
			if c.ManagedBy != Manager || c.Status.Terminal() || c.Status == domain.ClusterDeleting {
				continue
			}
			if slices.ContainsFunc(declared, func(d Cluster) bool { return d.Name == c.Name }) {
				continue
			}
			p.Steps = append(p.Steps, Step{Kind: Delete, Name: c.Name, ClusterID: c.ID})
		}
	}
	return p
}

// ForCluster plans one declared cluster (the document's i-th) against the
// live cluster of its name, nil when there is none.
func ForCluster(i int, d Cluster, e *domain.Cluster, adopt bool) ([]Step, domain.Problems) {
	field := func(f string) string { return fmt.Sprintf("clusters[%d].%s", i, f) }
	if e == nil {
		return []Step{{Kind: Create, Name: d.Name, Request: cluster.CreateRequest{
			Name: d.Name, Description: d.Description, Template: d.Template, TemplateVersion: d.TemplateVersion,
			Size: d.Size, Services: d.Services, Config: d.Config, Lease: d.Lease, ManagedBy: Manager,
		}}}, nil
	}
	var (
		steps []Step
		ps    domain.Problems
	)
	step := func(k Kind, req any) {
		steps = append(steps, Step{Kind: k, Name: d.Name, ClusterID: e.ID, Request: req})
	}
	if e.ManagedBy != Manager {
		if !adopt {
			who := "by hand"
			if e.ManagedBy != "" {
				who = "by " + e.ManagedBy
			}
			return nil, domain.Problems{{Field: field("name"), Code: domain.CodeConflict,
				Message: fmt.Sprintf("cluster %s (%s) exists and is managed %s, not by apply: pass --adopt to let apply take it over, or declare another name", d.Name, e.ID, who)}}
		}
		step(Adopt, cluster.ManageRequest{ManagedBy: Manager})
	}
	if e.Status == domain.ClusterDeleting {
		return nil, domain.Problems{{Field: field("name"), Code: domain.CodeConflict,
			Message: fmt.Sprintf("cluster %s (%s) is being deleted; apply again once it is gone", d.Name, e.ID)}}
	}
	if e.Template.Name != d.Template {
		ps = append(ps, domain.Problem{Field: field("template"), Code: domain.CodeImmutable,
			Message: fmt.Sprintf("cluster %s (%s) is built from template %s; a cluster cannot change its template: declare %s, or delete the cluster and apply again", d.Name, e.ID, e.Template.Name, e.Template.Name)})
		return nil, ps
	}
	if d.TemplateVersion > 0 && d.TemplateVersion != e.Template.Version {
		step(Sync, cluster.SyncRequest{TemplateVersion: d.TemplateVersion})
	}
	if d.Services != nil {
		if gone := minus(e.Services, d.Services); len(gone) > 0 {
			step(RemoveServices, cluster.RemoveServicesRequest{Services: gone})
		}
	}
	if d.Size < e.NodeCount {
		step(Shrink, cluster.ShrinkRequest{Count: e.NodeCount - d.Size})
	}
	if len(d.Config) > 0 && !sameJSON(d.Config, e.Config) {
		step(Reconfigure, cluster.ReconfigureRequest{Config: d.Config})
	}
	if d.Services != nil {
		if added := minus(d.Services, e.Services); len(added) > 0 {
			// Where the constraints want the added services on nodes of
			// their own, they may take the nodes the cluster is to grow
			// by; the expand that follows is planned again after it.
			step(AddServices, cluster.AddServicesRequest{Services: added, MaxNewNodes: max(0, d.Size-e.NodeCount)})
		}
	}
	if d.Size > e.NodeCount {
		step(Expand, cluster.ExpandRequest{Count: d.Size - e.NodeCount})
	}
	return steps, nil
}

// minus is a's items that b lacks, in a's order.
func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// sameJSON compares two JSON values by meaning (key order and spacing
// aside).
func sameJSON(a, b json.RawMessage) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return string(a) == string(b)
	}
	return reflect.DeepEqual(va, vb)
}
