package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// A cluster's node summary (NODESUM / <cluster>) is what the cluster view
// needs of its nodes: counts by status, the layout groups with counts and
// the ids of the first live nodes. Reading every node for it cost 70-220
// ms at 10,000 nodes on each GET (and ten 1 MB query pages on DynamoDB).
//
// Node statuses and layouts change only at a job's two edges: step 2 of a
// submission writes new, updated and retiring nodes before the job starts,
// and a job's end writes the statuses its ending names before the job
// becomes terminal (task completions record facts such as addresses, never
// a layout, and a status only when a node's delete task succeeds: that
// completion deletes the summary, so readers recount until the job's end). So the summary is recounted there, at coarse
// grain, and written in the same write that moves the job: the start's
// PENDING -> RUNNING (now a transaction of the job and the summary) and the
// end's transaction. It costs one write per job, none per task. The
// summary names the job and the edge it was counted at; a reader trusts it
// only when that matches the cluster's latest job and the job's status
// (NodeSummaryFor), and recounts otherwise (a PENDING job, a job ending
// right now, clusters written before summaries existed). A job's end
// deletes the started summary (checked on the job's status) before it
// writes any node, so a finisher that dies midway leaves no stale count:
// readers recount until the retried end (the janitor's) writes the ended
// one with the job.

// FirstNodes is how many live nodes (by Num) the summary names.
const FirstNodes = 100

// Node summary phases: counted when the job started, or when it ended.
const (
	SummaryStarted = "started"
	SummaryEnded   = "ended"
)

// LayoutCount is how many live nodes share one layout.
type LayoutCount struct {
	domain.NodeLayout
	Count int `json:"count"`
}

// NodeSummary counts a cluster's live nodes (every node not DELETED).
type NodeSummary struct {
	Job    string                    `json:"job"`
	Phase  string                    `json:"phase"`
	Status map[domain.NodeStatus]int `json:"status"`
	// Layout groups the live nodes by layout, in the order of the first
	// node (by Num) of each.
	Layout []LayoutCount `json:"layout"`
	// First names the first FirstNodes live nodes by Num; Live counts them
	// all.
	First []string `json:"first"`
	Live  int      `json:"live"`
}

func nodeSummaryKey(tenant, cluster string) store.Key {
	return store.Key{PK: store.TenantPK(tenant, "NODESUM"), SK: cluster}
}

// SummarizeNodes counts nodes as the cluster view shows them; nodes need
// not be sorted.
func SummarizeNodes(nodes []domain.Node) NodeSummary {
	live := make([]*domain.Node, 0, len(nodes))
	for i := range nodes {
		if nodes[i].Status != domain.NodeDeleted {
			live = append(live, &nodes[i])
		}
	}
	slices.SortStableFunc(live, func(a, b *domain.Node) int { return a.Num - b.Num })
	s := NodeSummary{Status: map[domain.NodeStatus]int{}, Layout: []LayoutCount{}, First: []string{}, Live: len(live)}
	index := map[string]int{}
	for _, n := range live {
		s.Status[n.Status]++
		key := n.HardwareType + "\x00" + n.ImageType + "\x00" + strings.Join(n.Services, "\x00")
		i, ok := index[key]
		if !ok {
			i = len(s.Layout)
			index[key] = i
			s.Layout = append(s.Layout, LayoutCount{NodeLayout: n.NodeLayout})
		}
		s.Layout[i].Count++
		if len(s.First) < FirstNodes {
			s.First = append(s.First, n.ID)
		}
	}
	return s
}

// countNodes recounts a cluster's nodes from the store.
func (e *Engine) countNodes(ctx context.Context, tenant, cluster string) (NodeSummary, error) {
	var nodes []domain.Node
	err := e.eachNodeItem(ctx, tenant, cluster, func(it store.Item) error {
		n, err := decodeNode(it)
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
		return nil
	})
	if err != nil {
		return NodeSummary{}, fmt.Errorf("counting the nodes of cluster %s: %w", cluster, err)
	}
	return SummarizeNodes(nodes), nil
}

// nodeSummaryPut recounts the cluster's nodes and returns the write that
// records them as of job's phase, for the transaction that moves the job.
func (e *Engine) nodeSummaryPut(ctx context.Context, tenant, cluster, job, phase string) (store.Op, error) {
	s, err := e.countNodes(ctx, tenant, cluster)
	if err != nil {
		return store.Op{}, err
	}
	s.Job, s.Phase = job, phase
	return store.Put(store.Item{Key: nodeSummaryKey(tenant, cluster), Data: mustJSON(s)}, store.Condition{}), nil
}

// NodeSummaryFor returns the cluster's node summary if it holds for job,
// the cluster's latest job, in its current status; ok is false when the
// caller must recount (no summary, or one counted at another edge).
func (e *Engine) NodeSummaryFor(ctx context.Context, tenant, cluster string, job domain.Job) (NodeSummary, bool, error) {
	want := SummaryStarted
	switch {
	case job.Status.Terminal():
		want = SummaryEnded
	case job.Status == domain.JobPending:
		return NodeSummary{}, false, nil // step 2 may be writing nodes
	}
	it, err := e.store.Get(ctx, nodeSummaryKey(tenant, cluster))
	if errors.Is(err, store.ErrNotFound) {
		return NodeSummary{}, false, nil
	}
	if err != nil {
		return NodeSummary{}, false, fmt.Errorf("reading the node summary of cluster %s: %w", cluster, err)
	}
	var s NodeSummary
	if err := decodeInto(it, &s); err != nil {
		return NodeSummary{}, false, err
	}
	if s.Job != job.ID || s.Phase != want {
		return NodeSummary{}, false, nil
	}
	return s, true, nil
}

// NodesByID reads the named nodes of a cluster, in the order given,
// skipping any that are gone.
func (e *Engine) NodesByID(ctx context.Context, tenant, cluster string, ids []string) ([]domain.Node, error) {
	keys := make([]store.Key, len(ids))
	for i, id := range ids {
		keys[i] = nodeKey(tenant, cluster, id)
	}
	// One BatchGetItem for a view's first 100 nodes on DynamoDB (their IDs
	// do not sort by number, so no range query reads them).
	items, err := store.GetMany(ctx, e.store, keys)
	if err != nil {
		return nil, fmt.Errorf("reading %d nodes of cluster %s: %w", len(ids), cluster, err)
	}
	byID := make(map[string]domain.Node, len(items))
	for _, it := range items {
		n, err := decodeNode(it)
		if err != nil {
			return nil, err
		}
		byID[n.ID] = n
	}
	out := make([]domain.Node, 0, len(ids))
	for _, id := range ids {
		if n, ok := byID[id]; ok {
			out = append(out, n)
		}
	}
	return out, nil
}
