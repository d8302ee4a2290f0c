package solver

import (
	"fmt"
	"slices"

	"github.com/heddle-io/heddle/internal/domain"
)

// ReplaceRequest asks for a new node in place of each node named: a node
// whose machine is lost (drift repair).
type ReplaceRequest struct {
	Cluster Cluster
	Catalog Catalog
	NodeIDs []string
}

// Replace swaps each named node for a new one with its hardware, image and
// services, numbered after the cluster's nodes. Nothing is solved: the
// layout keeps its shape, so every constraint the cluster met it still
// meets, and the other nodes are untouched.
func Replace(req ReplaceRequest) (*Layout, error) {
	cl := &req.Cluster
	existing := copyNodes(cl.Nodes, len(req.NodeIDs))
	byID := map[string]int{}
	for i := range existing {
		byID[existing[i].ID] = i
	}
	var rs []Reason
	seen := map[string]bool{}
	var lost []domain.Node
	for _, id := range req.NodeIDs {
		i, ok := byID[id]
		switch {
		case !ok:
			rs = append(rs, Reason{Code: CodeUnknownNode, Nodes: []string{id}, Message: fmt.Sprintf("node %q is not in the cluster", id)})
		case seen[id]:
			rs = append(rs, Reason{Code: CodeDuplicateNode, Nodes: []string{id}, Message: fmt.Sprintf("node %q is named twice", id)})
		default:
			lost = append(lost, existing[i])
		}
		seen[id] = true
	}
	if len(req.NodeIDs) == 0 {
		rs = append(rs, Reason{Code: CodeInvalidCount, Message: "a replacement names at least one node"})
	}
	if len(rs) > 0 {
		return nil, &RequestError{Reasons: rs}
	}
	first := FirstNodeNum
	if len(existing) > 0 {
		first = existing[len(existing)-1].Num + 1
	}
	slices.SortFunc(lost, func(a, b domain.Node) int { return a.Num - b.Num })
	groups := make([]Group, len(lost))
	for i, n := range lost {
		groups[i] = Group{NodeLayout: cloneLayout(n.NodeLayout), Count: 1}
	}
	kept := slices.DeleteFunc(existing, func(n domain.Node) bool { return seen[n.ID] })
	all, fresh := appendNewNodes(kept, cl.ID, cl.Provider, req.Catalog, groups, first)
	removed := nodeIDs(lost)
	return &Layout{Groups: groupsOfNodes(all), Nodes: all, NewNodes: nodeIDs(fresh), RemovedNodes: removed}, nil
}
