package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
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
