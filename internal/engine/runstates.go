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

// A node's service run states (domain.Node.ServiceStates) are recorded when
// the job ends, from the outcomes of its service tasks, in the same write
// that gives the node the status the ending names. Recording them as each
// task completes would add a node write to every task's completion; at the
// job's end it costs one write per node the job touched, which a create or
// delete pays anyway. Only one job runs on a cluster at a time, so the next
// operation is always planned from states its predecessor finished writing.

// chainRank orders the service actions as a node's chain runs them.
var chainRank = map[domain.Action]int{
	domain.ActionStop: 0, domain.ActionRemove: 1, domain.ActionInstall: 2,
	domain.ActionConfigure: 3, domain.ActionInitialize: 4, domain.ActionStart: 5,
}

// serviceOutcomes returns, per node, the job's service tasks that ran to
// their end (succeeded, or failed for good), in the order they ran: the
// forward plan's chain, then the rollback plan's.
func serviceOutcomes(tasks []domain.Task) map[string][]domain.Task {
	out := map[string][]domain.Task{}
	for _, t := range tasks {
		if t.Service == "" || t.NodeID == "" {
			continue
		}
		if _, ok := chainRank[t.Action]; !ok {
			continue
		}
		if t.Status != domain.TaskSucceeded && t.Status != domain.TaskFailed {
			continue
		}
		out[t.NodeID] = append(out[t.NodeID], t)
	}
	for _, list := range out {
		slices.SortStableFunc(list, func(a, b domain.Task) int {
			if a.Rollback != b.Rollback {
				if a.Rollback {
					return 1
				}
				return -1
			}
			return chainRank[a.Action] - chainRank[b.Action]
		})
	}
	return out
}

// applyOutcomes folds a node's task outcomes into its service states and
// drops states of services the node no longer runs. It reports whether
// anything changed; applying the same outcomes twice changes nothing.
func applyOutcomes(n *domain.Node, jobID string, outcomes []domain.Task) bool {
	before := fmt.Sprint(n.ServiceStates)
	states := n.ServiceStates
	if states == nil {
		states = map[string]domain.ServiceState{}
	}
	for _, t := range outcomes {
		var at domain.TaskAttempt
		if len(t.Attempts) > 0 {
			at = t.Attempts[len(t.Attempts)-1]
		}
		msg := at.Error
		if msg == "" && t.Status == domain.TaskFailed {
			msg = lastLine(at.Stderr)
		}
		next, keep := states[t.Service].After(t.Action, t.Status == domain.TaskSucceeded, jobID, msg, at.EndedAt)
		if keep {
			states[t.Service] = next
		} else {
			delete(states, t.Service)
		}
	}
	for s := range states {
		if !slices.Contains(n.Services, s) {
			delete(states, s)
		}
	}
	if len(states) == 0 {
		states = nil
	}
	n.ServiceStates = states
	return fmt.Sprint(n.ServiceStates) != before
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// errJobMoved: another finisher ended the job first.
var errJobMoved = errors.New("engine: the job moved on")

// recordNodes writes, on each node the job touched, the status effect gives
// it and the run states the job's service tasks left its services in. The
// writes go in transactions that also check the job is still in status
// from, so a finisher that lost the race to another never writes over what
// a later job recorded. errJobMoved says the job is no longer from.
func (e *Engine) recordNodes(ctx context.Context, tenant, cluster, jobID string, from domain.JobStatus, effect Effect) error {
	tasks, err := e.Tasks(ctx, tenant, jobID)
	if err != nil {
		return fmt.Errorf("reading the tasks of job %s: %w", jobID, err)
	}
	outcomes := serviceOutcomes(tasks)
	marked := map[string]bool{}
	if effect.NodeStatus != "" {
		for _, id := range effect.Nodes {
			marked[id] = true
		}
	}
	if len(outcomes) == 0 && len(marked) == 0 {
		return nil
	}
	for range maxSettleAttempts {
		var ops []store.Op
		err := e.eachNodeItem(ctx, tenant, cluster, func(it store.Item) error {
			n, err := decodeNode(it)
			if err != nil {
				return err
			}
			changed := false
			if marked[n.ID] && n.Status != effect.NodeStatus {
				n.Status, changed = effect.NodeStatus, true
			}
			if n.Status != domain.NodeDeleted && applyOutcomes(&n, jobID, outcomes[n.ID]) {
				changed = true
			}
			if changed {
				status := string(n.Status)
				ops = append(ops, store.Update(it.Key, store.Condition{Version: it.Version}, store.Changes{Data: mustJSON(n), Status: &status}))
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading the nodes of cluster %s: %w", cluster, err)
		}
		conflict := false
		check := store.Check(jobKey(tenant, cluster, jobID), store.Condition{StatusIn: []string{string(from)}})
		for len(ops) > 0 {
			n := min(len(ops), store.MaxTransactItems-1)
			err := e.store.Transact(ctx, append([]store.Op{check}, ops[:n]...))
			var terr *store.TransactionError
			if errors.As(err, &terr) {
				if terr.Reasons[0] != nil {
					return errJobMoved
				}
				conflict = true // a node changed under us: read them again
				break
			}
			if err != nil {
				return fmt.Errorf("recording the nodes of job %s: %w", jobID, err)
			}
			ops = ops[n:]
		}
		if !conflict {
			return nil
		}
	}
	return fmt.Errorf("recording the nodes of job %s: they kept changing; the janitor will finish it", jobID)
}

// eachNodeItem calls fn with every node item of a cluster.
func (e *Engine) eachNodeItem(ctx context.Context, tenant, cluster string, fn func(store.Item) error) error {
	cursor := ""
	for {
		page, err := e.store.Query(ctx, nodeKey(tenant, cluster, "").PK, store.Query{Limit: store.MaxPageSize, Cursor: cursor})
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			if err := fn(it); err != nil {
				return err
			}
		}
		if page.Next == "" {
			return nil
		}
		cursor = page.Next
	}
}
