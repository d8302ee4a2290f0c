package client

import (
	"context"
	"iter"
	"net/http"
	"strconv"
)

// Revisions lists a cluster's revisions, newest first.
func (c *Client) Revisions(ctx context.Context, clusterID string) iter.Seq2[Revision, error] {
	return Each[Revision](ctx, c, clusterPath(clusterID, "revisions"), nil, 0)
}

// GetRevision reads revision n of a cluster.
func (c *Client) GetRevision(ctx context.Context, clusterID string, n int64) (*Revision, error) {
	return call[Revision](ctx, c, http.MethodGet, clusterPath(clusterID, "revisions", strconv.FormatInt(n, 10)), nil, nil)
}

// Rollback runs (or, with m.DryRun, previews) the next step of bringing
// the cluster back to revision req.Revision; the answer's Rollback is the
// plan left, Done (and no Job) when nothing differs.
func (c *Client) Rollback(ctx context.Context, clusterID string, req RollbackRequest, m Mutate) (*Result, error) {
	return c.Mutation(ctx, clusterID, "rollback", req, m)
}
