package cluster

import (
	"context"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
)

// managedByRule is the sentence a bad ManagedBy gets.
const managedByRule = "name the managing tool with letters, digits, '.', '_' or '-', at most 63 characters (\"apply\"), or leave it empty"

// ManageRequest sets which tool owns a cluster's desired state: `heddle
// apply --adopt` takes a hand-made cluster over with "apply"; an empty
// ManagedBy hands it back to people.
type ManageRequest struct {
	ManagedBy string `json:"managedBy"`
}

// SetManagedBy records the cluster's managing tool. It runs no job and
// needs no lock: the mark changes who may reshape the cluster, not the
// cluster, and the write is conditional on the record's version.
func (s *Service) SetManagedBy(ctx context.Context, p access.Principal, id string, req ManageRequest) (domain.Cluster, error) {
	if req.ManagedBy != "" && !domain.ValidName(req.ManagedBy) {
		return domain.Cluster{}, domain.Problems{{Field: "managedBy", Code: domain.CodeInvalid, Message: managedByRule}}
	}
	c, err := s.visible(ctx, p, id)
	if err != nil {
		return domain.Cluster{}, err
	}
	if c.Status.Terminal() {
		return domain.Cluster{}, &StateError{Cluster: id, Status: c.Status, Reason: "a deleted cluster has nothing left to manage"}
	}
	if c.ManagedBy == req.ManagedBy {
		return c, nil
	}
	return s.cfg.Engine.SetManagedBy(ctx, p.Tenant, c, req.ManagedBy)
}
