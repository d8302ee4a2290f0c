package client

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strings"

	"github.com/heddle-io/heddle/internal/api"
)

// Mutate says how a job-submitting call is sent.
type Mutate struct {
	// DryRun plans and answers the preview; nothing is written.
	DryRun bool
}

func (m Mutate) query() url.Values {
	q := url.Values{}
	if m.DryRun {
		q.Set("dryRun", "true")
	}
	return q
}

func clusterPath(id string, rest ...string) string {
	p := "/v1/clusters/" + PathEscape(id)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// CreateCluster solves, plans and submits a new cluster (POST /v1/clusters).
func (c *Client) CreateCluster(ctx context.Context, req CreateRequest, m Mutate) (*Result, error) {
	return call[Result](ctx, c, http.MethodPost, "/v1/clusters", m.query(), req)
}

// GetCluster reads one cluster with its first nodes and its progress.
func (c *Client) GetCluster(ctx context.Context, id string) (*ClusterView, error) {
	return call[ClusterView](ctx, c, http.MethodGet, clusterPath(id), nil, nil)
}

// ClusterFilter narrows Clusters; the zero filter lists every cluster but
// the TERMINATED ones.
type ClusterFilter struct {
	Status   ClusterStatus
	Template string
	Owner    string
	// Name keeps only the clusters of this name.
	Name string
	// All includes TERMINATED clusters.
	All bool
	// PageSize is how many per request (the server's default when 0).
	PageSize int
}

// Clusters lists the tenant's clusters, following the cursors page by page
// as the loop asks for more. An error ends the sequence.
func (c *Client) Clusters(ctx context.Context, f ClusterFilter) iter.Seq2[Cluster, error] {
	q := url.Values{}
	if f.Status != "" {
		q.Set("status", string(f.Status))
	}
	if f.Template != "" {
		q.Set("template", f.Template)
	}
	if f.Owner != "" {
		q.Set("owner", f.Owner)
	}
	if f.Name != "" {
		q.Set("name", f.Name)
	}
	if f.All {
		q.Set("all", "true")
	}
	return Each[Cluster](ctx, c, "/v1/clusters", q, f.PageSize)
}

// Nodes lists a cluster's nodes by id, deleted ones included.
func (c *Client) Nodes(ctx context.Context, clusterID string) iter.Seq2[Node, error] {
	return Each[Node](ctx, c, clusterPath(clusterID, "nodes"), nil, 0)
}

// DeleteCluster stops and removes the cluster's services, then deletes its
// nodes; force skips the services.
func (c *Client) DeleteCluster(ctx context.Context, id string, force bool, m Mutate) (*Result, error) {
	q := m.query()
	if force {
		q.Set("force", "true")
	}
	return call[Result](ctx, c, http.MethodDelete, clusterPath(id), q, nil)
}

// Expand adds nodes to a cluster.
func (c *Client) Expand(ctx context.Context, id string, req ExpandRequest, m Mutate) (*Result, error) {
	return c.Mutation(ctx, id, "expand", req, m)
}

// Shrink removes nodes from a cluster.
func (c *Client) Shrink(ctx context.Context, id string, req ShrinkRequest, m Mutate) (*Result, error) {
	return c.Mutation(ctx, id, "shrink", req, m)
}

// Reconfigure re-runs configure, optionally with a new config.
func (c *Client) Reconfigure(ctx context.Context, id string, req ReconfigureRequest, m Mutate) (*Result, error) {
	return c.Mutation(ctx, id, "reconfigure", req, m)
}

// AddServices adds services to a cluster.
func (c *Client) AddServices(ctx context.Context, id string, req AddServicesRequest, m Mutate) (*Result, error) {
	return c.Mutation(ctx, id, "add-services", req, m)
}

// RemoveServices stops and removes services from a cluster.
func (c *Client) RemoveServices(ctx context.Context, id string, req RemoveServicesRequest, m Mutate) (*Result, error) {
	return c.Mutation(ctx, id, "remove-services", req, m)
}

// Sync moves a cluster to another version of its template.
func (c *Client) Sync(ctx context.Context, id string, req SyncRequest, m Mutate) (*Result, error) {
	return c.Mutation(ctx, id, "sync", req, m)
}

// ServiceAction runs start, stop, restart or rolling-restart.
func (c *Client) ServiceAction(ctx context.Context, id, action string, req ServiceActionRequest, m Mutate) (*Result, error) {
	return c.Mutation(ctx, id, action, req, m)
}

// Mutation POSTs req to one of the cluster's job-submitting actions
// (expand, shrink, reconfigure, ...), the route's last path segment.
func (c *Client) Mutation(ctx context.Context, id, action string, req any, m Mutate) (*Result, error) {
	return call[Result](ctx, c, http.MethodPost, clusterPath(id, action), m.query(), req)
}

// ExtendLease moves the cluster's expiry, within its template's policy.
func (c *Client) ExtendLease(ctx context.Context, id string, req ExtendRequest) (*Cluster, error) {
	return call[Cluster](ctx, c, http.MethodPost, clusterPath(id, "lease"), nil, req)
}

// Manage sets (or with an empty ManagedBy clears) the tool that owns the
// cluster's desired state, such as "apply".
func (c *Client) Manage(ctx context.Context, id string, req ManageRequest) (*Cluster, error) {
	return call[Cluster](ctx, c, http.MethodPost, clusterPath(id, "managed-by"), nil, req)
}

// ClusterRef is the cluster a reference a person typed stands for.
type ClusterRef struct {
	ID   string
	Name string
	// ByName says the reference was the cluster's name, not its id.
	ByName bool
	// Shadowed lists the clusters named as the reference whose name lost
	// to another cluster's id spelled the same: a caller should say which
	// one it used.
	Shadowed []Cluster
}

// ResolveCluster turns a reference to a cluster, its id or its name, into
// the cluster: an id wins over a name spelled the same. Of several
// clusters of one name the live one is taken (names are meant to be unique
// among a tenant's live clusters), and without a live one the newest
// TERMINATED one; two live clusters of one name are refused with their ids.
// A reference that is neither answers an *Error with status 404.
func (c *Client) ResolveCluster(ctx context.Context, ref string) (*ClusterRef, error) {
	named, err := Collect(c.Clusters(ctx, ClusterFilter{Name: ref, All: true}))
	if err != nil {
		return nil, err
	}
	byID, err := c.GetCluster(ctx, ref)
	switch {
	case err == nil:
		r := &ClusterRef{ID: byID.ID, Name: byID.Name}
		for _, cl := range named {
			if cl.ID != byID.ID {
				r.Shadowed = append(r.Shadowed, cl)
			}
		}
		return r, nil
	case !IsNotFound(err):
		return nil, err
	}
	var live []Cluster
	for _, cl := range named {
		if !cl.Status.Terminal() {
			live = append(live, cl)
		}
	}
	switch {
	case len(live) == 1:
		return &ClusterRef{ID: live[0].ID, Name: ref, ByName: true}, nil
	case len(live) > 1:
		ids := make([]string, len(live))
		for i, cl := range live {
			ids[i] = cl.ID
		}
		return nil, &Error{ErrorDetail{Status: http.StatusConflict, Code: api.CodeConflict,
			Message: fmt.Sprintf("%d live clusters are named %q (%s); name one by its id", len(live), ref, strings.Join(ids, ", "))}}
	case len(named) > 0:
		return &ClusterRef{ID: named[0].ID, Name: ref, ByName: true}, nil // the listing is newest first
	}
	return nil, &Error{ErrorDetail{Status: http.StatusNotFound, Code: api.CodeNotFound,
		Message: fmt.Sprintf("no cluster has the id or the name %q", ref)}}
}

// LatestJob returns the id of the cluster's newest job.
func (c *Client) LatestJob(ctx context.Context, clusterID string) (string, error) {
	page, err := call[Page[Job]](ctx, c, http.MethodGet, clusterPath(clusterID, "jobs"), url.Values{"limit": {"1"}}, nil)
	if err != nil {
		return "", err
	}
	if len(page.Items) == 0 {
		return "", &Error{ErrorDetail{Status: http.StatusNotFound, Code: api.CodeNotFound,
			Message: fmt.Sprintf("cluster %s has no jobs", clusterID)}}
	}
	return page.Items[0].ID, nil
}
