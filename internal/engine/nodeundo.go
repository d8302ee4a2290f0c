package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// A submission changes existing nodes as well as writing new ones: it
// rewrites the layouts of UpdatedNodes and marks RetiringNodes DELETING.
// A withdrawal must put them back (a vetoed add-services must not leave a
// service in the layouts that was never installed), and a retry must make
// the same changes again. So before step 2 changes a node, the job keeps
// one undo item per changed node (its item before and after), under the
// job's own partition: one item per node stays far below DynamoDB's item
// size, and they are written in batches like step 2's, each checked on the
// job still PENDING. A job of an older release has none, and its
// withdrawal and retry leave its changed nodes as they did before.

const undoKind = "UNDO#"

// nodeUndo is how one node was before and after a submission changed it.
type nodeUndo struct {
	Node         string          `json:"node"`
	BeforeStatus string          `json:"beforeStatus"`
	Before       json.RawMessage `json:"before"`
	AfterStatus  string          `json:"afterStatus"`
	// After is the node's document after the change; empty when only its
	// status changed (a retiring node).
	After json.RawMessage `json:"after,omitempty"`
}

func undoKey(tenant, job, node string) store.Key {
	return store.Key{PK: chunkPK(tenant, undoKind, job), SK: node}
}

// changedNodes is what sub's step 2 writes on existing nodes: the new
// document of each updated node, and the retiring ones.
func changedNodes(sub Submission) (updated map[string][]byte, retiring map[string]bool) {
	updated, retiring = map[string][]byte{}, map[string]bool{}
	for _, n := range sub.UpdatedNodes {
		updated[n.ID] = mustJSON(n)
	}
	for _, id := range sub.RetiringNodes {
		retiring[id] = true
	}
	return updated, retiring
}

// recordUndo writes the undo items of the nodes sub changes that have none
// yet (a continued submission may have written some, and their nodes may
// be changed already), each batch checked on the job still PENDING
// (errJobMoved when it is not). It runs after step 1, so the job holds the
// cluster and nothing else writes these nodes, and before step 2.
func (e *Engine) recordUndo(ctx context.Context, tenant, cluster, jobID string, sub Submission) error {
	updated, retiring := changedNodes(sub)
	if len(updated) == 0 && len(retiring) == 0 {
		return nil
	}
	have, err := e.undoItems(ctx, tenant, jobID)
	if err != nil {
		return err
	}
	var ops []store.Op
	err = e.eachNodeItem(ctx, tenant, cluster, func(it store.Item) error {
		id := it.Key.SK // a node item's sort key is its id
		after, up := updated[id]
		if (!up && !retiring[id]) || have[id].Node != "" {
			return nil
		}
		u := nodeUndo{Node: id, BeforeStatus: it.Status, Before: it.Data, AfterStatus: it.Status}
		if up {
			u.After = after
		}
		if retiring[id] {
			u.AfterStatus = string(domain.NodeDeleting)
		}
		ops = append(ops, store.Put(store.Item{Key: undoKey(tenant, jobID, id), Data: mustJSON(u)}, store.Condition{}))
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading the nodes of cluster %s: %w", cluster, err)
	}
	// A submission may change thousands of nodes and this is in the
	// request: the batches go in parallel, as step 2's do.
	check := store.Check(jobKey(tenant, cluster, jobID), store.Condition{StatusIn: []string{string(domain.JobPending)}})
	var batches [][]store.Op
	for _, b := range transactBatchesOf(ops, store.MaxTransactItems-1, store.MaxTransactBytes-store.TransactSize([]store.Op{check})) {
		batches = append(batches, append(b[:len(b):len(b)], check))
	}
	err = e.transactAll(ctx, batches)
	if errors.Is(err, store.ErrConditionFailed) {
		return errJobMoved // the puts have no condition: only the check fails
	}
	return err
}

// transactChecked writes ops in batches, each with the check that the job
// is PENDING: errJobMoved when it is not.
func (e *Engine) transactChecked(ctx context.Context, tenant, cluster, jobID string, ops []store.Op) error {
	check := store.Check(jobKey(tenant, cluster, jobID), store.Condition{StatusIn: []string{string(domain.JobPending)}})
	for _, b := range transactBatchesOf(ops, store.MaxTransactItems-1, store.MaxTransactBytes-store.TransactSize([]store.Op{check})) {
		err := e.store.Transact(ctx, append(b[:len(b):len(b)], check))
		var terr *store.TransactionError
		if errors.As(err, &terr) && terr.Reasons[len(b)] != nil {
			return errJobMoved
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// undoItems reads a job's undo items by node.
func (e *Engine) undoItems(ctx context.Context, tenant, jobID string) (map[string]nodeUndo, error) {
	out := map[string]nodeUndo{}
	cursor := ""
	for {
		page, err := e.store.Query(ctx, chunkPK(tenant, undoKind, jobID), store.Query{Limit: store.MaxPageSize, Cursor: cursor})
		if err != nil {
			return nil, fmt.Errorf("reading the node changes of job %s: %w", jobID, err)
		}
		for _, it := range page.Items {
			var u nodeUndo
			if err := decodeInto(it, &u); err != nil {
				return nil, err
			}
			out[u.Node] = u
		}
		if page.Next == "" {
			return out, nil
		}
		cursor = page.Next
	}
}

// restoreNodes writes every node a job's submission changed as it was
// before (undo) or after (redo) the change, each batch checked on the job
// still PENDING (errJobMoved when it is not). Writing a node as it already
// is changes nothing, so a withdrawal or retry that stopped half way is
// simply done again.
func (e *Engine) restoreNodes(ctx context.Context, tenant, cluster, jobID string, undo bool) error {
	changes, err := e.undoItems(ctx, tenant, jobID)
	if err != nil || len(changes) == 0 {
		return err
	}
	for range maxSettleAttempts {
		var ops []store.Op
		err := e.eachNodeItem(ctx, tenant, cluster, func(it store.Item) error {
			u, ok := changes[it.Key.SK]
			if !ok {
				return nil
			}
			status, data := u.BeforeStatus, []byte(u.Before)
			if !undo {
				status = u.AfterStatus
				if len(u.After) > 0 {
					data = u.After
				}
			}
			if it.Status == status && bytes.Equal(it.Data, data) {
				return nil
			}
			ops = append(ops, store.Update(it.Key, store.Condition{Version: it.Version}, store.Changes{Status: &status, Data: data}))
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading the nodes of cluster %s: %w", cluster, err)
		}
		err = e.transactChecked(ctx, tenant, cluster, jobID, ops)
		if errors.Is(err, errJobMoved) || !errors.Is(err, store.ErrConditionFailed) {
			return err
		}
		// A node changed under us (another withdrawal): read them again.
	}
	return fmt.Errorf("putting back the nodes of job %s: they kept changing; try again", jobID)
}

// nodesAsWithdrawn reports whether every node a withdrawn job changed is
// still as its withdrawal left it: a retry makes its changes again only
// then, since another job may have changed the same nodes meanwhile.
func (e *Engine) nodesAsWithdrawn(ctx context.Context, tenant, cluster, jobID string) (bool, error) {
	changes, err := e.undoItems(ctx, tenant, jobID)
	if err != nil || len(changes) == 0 {
		return true, err
	}
	same := 0
	err = e.eachNodeItem(ctx, tenant, cluster, func(it store.Item) error {
		u, ok := changes[it.Key.SK]
		if ok && it.Status == u.BeforeStatus && bytes.Equal(it.Data, u.Before) {
			same++
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("reading the nodes of cluster %s: %w", cluster, err)
	}
	return same == len(changes), nil
}
