package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/usage"
)

// A node's service run states (domain.Node.ServiceStates) are recorded when
// the job ends, from the outcomes of its service tasks, in the same write
// that gives the node the status the ending names. Recording them as each
// task completes would add a node write to every task's completion; at the
// job's end it costs one write per node whose state changed (a create or
// delete pays that write anyway; a restart of what ran writes nothing), and
// a read of the job's task items. Only one job runs on a cluster at a time,
// so the next operation is always planned from states its predecessor
// finished writing.

// chainRank orders the service actions as a node's chain runs them.
var chainRank = map[domain.Action]int{
	domain.ActionStop: 0, domain.ActionRemove: 1, domain.ActionInstall: 2,
	domain.ActionConfigure: 3, domain.ActionInitialize: 4, domain.ActionStart: 5,
}

// outcome is what the run states need of one service task that ran to its
// end: a few dozen bytes, whatever the task's output was.
type outcome struct {
	service  string
	action   domain.Action
	ok       bool
	rollback bool
	message  string
	at       time.Time
	digest   string // a configure's digest of what it applied
}

// serviceOutcomes reads, per node, the job's service tasks that ran to
// their end (succeeded, or failed for good), in the order they ran: the
// forward plan's chain, then the rollback plan's. It streams the task
// items; a task with no item (chunks.go) never ran.
func (e *Engine) serviceOutcomes(ctx context.Context, tenant, jobID string) (map[string][]outcome, error) {
	out := map[string][]outcome{}
	err := e.eachTask(ctx, tenant, jobID, func(it store.Item, t domain.Task) (bool, error) {
		if _, ok := chainRank[t.Action]; !ok || t.Service == "" || t.NodeID == "" {
			return true, nil
		}
		status := domain.TaskStatus(it.Status)
		if status != domain.TaskSucceeded && status != domain.TaskFailed {
			return true, nil
		}
		o := outcome{service: t.Service, action: t.Action, ok: status == domain.TaskSucceeded, rollback: t.Rollback}
		if n := len(t.Attempts); n > 0 {
			last := t.Attempts[n-1]
			o.at, o.message, o.digest = last.EndedAt, last.Error, last.Digest
			if o.message == "" && !o.ok {
				o.message = lastLine(last.Stderr)
			}
		}
		out[t.NodeID] = append(out[t.NodeID], o)
		return true, nil
	})
	for _, list := range out {
		slices.SortStableFunc(list, func(a, b outcome) int {
			if a.rollback != b.rollback {
				if a.rollback {
					return 1
				}
				return -1
			}
			return chainRank[a.action] - chainRank[b.action]
		})
	}
	return out, err
}

// applyOutcomes folds a node's task outcomes into its service states and
// drops states of services the node no longer runs. A service whose state
// ends where it started (a restart of what ran) keeps its record as it was,
// and an outcome older than the state recorded by another job (a retried
// job whose early tasks ran before a later job) is passed over. It reports
// whether anything changed, so applying the same outcomes twice changes
// nothing.
func applyOutcomes(n *domain.Node, jobID string, outcomes []outcome) bool {
	before := n.ServiceStates
	states := map[string]domain.ServiceState{}
	for s, st := range before {
		states[s] = st
	}
	for _, o := range outcomes {
		cur := states[o.service]
		if cur.Known() && cur.JobID != jobID && cur.At.After(o.at) {
			continue
		}
		next, keep := cur.After(o.action, o.ok, jobID, o.message, o.at)
		if keep && o.ok && o.action == domain.ActionConfigure && o.digest != "" {
			// What it applied is known whatever known state the configure
			// left the service in (a running one stays running). A service
			// in no known state gets no record: its entry would claim one.
			next.Config = o.digest
		}
		if keep {
			states[o.service] = next
		} else {
			delete(states, o.service)
		}
	}
	changed := false
	for s := range states {
		if !slices.Contains(n.Services, s) {
			delete(states, s)
		}
	}
	for s, st := range states {
		if old, ok := before[s]; ok && old.State == st.State && old.Message == st.Message && old.Config == st.Config {
			states[s] = old
			continue
		}
		changed = true
	}
	for s := range before {
		if _, ok := states[s]; !ok {
			changed = true
		}
	}
	if len(states) == 0 {
		states = nil
	}
	n.ServiceStates = states
	return changed
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

// nodesByID reads the cluster's nodes named in ids: one by one when they
// are few, through the partition when they are many.
func (e *Engine) nodesByID(ctx context.Context, tenant, cluster string, ids map[string]bool) ([]store.Item, error) {
	var out []store.Item
	if len(ids) <= 64 {
		for id := range ids {
			it, err := e.store.Get(ctx, nodeKey(tenant, cluster, id))
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			out = append(out, it)
		}
		return out, nil
	}
	err := e.eachNodeItem(ctx, tenant, cluster, func(it store.Item) error {
		if ids[it.SK] {
			out = append(out, it)
		}
		return nil
	})
	return out, err
}

// recordNodes writes, on each node the job touched, the status its end
// gives the nodes it names and the run states the job's service tasks left its services in; only
// nodes where something changed are written. The writes go in transactions
// that also check the job is still in status from, so a finisher that lost
// the race to another never writes over what a later job recorded.
// errJobMoved says the job is no longer from.
func (e *Engine) recordNodes(ctx context.Context, tenant, cluster, jobID string, from domain.JobStatus, status domain.NodeStatus, nodes []string) error {
	outcomes, err := e.serviceOutcomes(ctx, tenant, jobID)
	if err != nil {
		return fmt.Errorf("reading the tasks of job %s: %w", jobID, err)
	}
	touched := map[string]bool{}
	for id := range outcomes {
		touched[id] = true
	}
	marked := map[string]bool{}
	if status != "" {
		for _, id := range nodes {
			marked[id], touched[id] = true, true
		}
	}
	if len(touched) == 0 {
		return nil
	}
	check := store.Check(jobKey(tenant, cluster, jobID), store.Condition{StatusIn: []string{string(from)}})
	var c domain.Cluster
	if len(marked) > 0 {
		// Whose nodes they are, for the usage records.
		if _, c, err = e.loadCluster(ctx, tenant, cluster); err != nil {
			return err
		}
	}
	for range maxSettleAttempts {
		items, err := e.nodesByID(ctx, tenant, cluster, touched)
		if err != nil {
			return fmt.Errorf("reading the nodes of cluster %s: %w", cluster, err)
		}
		var writes []nodeWrite
		for _, it := range items {
			n, err := decodeNode(it)
			if err != nil {
				return err
			}
			changed := false
			var w nodeWrite
			if marked[n.ID] && n.Status != status {
				n.Status, changed = status, true
				if lt, ok := lifetimeAt(tenant, c, n, e.now()); ok {
					w.lifetime = &lt
				}
			}
			if n.Status != domain.NodeDeleted && applyOutcomes(&n, jobID, outcomes[n.ID]) {
				changed = true
			}
			if changed {
				status := string(n.Status)
				w.op = store.Update(it.Key, store.Condition{Version: it.Version}, store.Changes{Data: mustJSON(n), Status: &status})
				writes = append(writes, w)
			}
		}
		conflict := false
		for _, batch := range usageBatches(check, jobID, string(status), writes) {
			err := e.store.Transact(ctx, batch)
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
		}
		if !conflict {
			return nil
		}
	}
	return fmt.Errorf("recording the nodes of job %s: they kept changing; the janitor will finish it", jobID)
}

// lifetimeAt is the usage record of node n of cluster c as its new status
// makes it: opened when it becomes ACTIVE, closed when it is DELETED (from
// when it was planned: a booting machine costs too).
func lifetimeAt(tenant string, c domain.Cluster, n domain.Node, now time.Time) (usage.Lifetime, bool) {
	l := usage.Lifetime{Tenant: tenant, Cluster: c.ID, Node: n.ID, Owner: c.Owner, Template: c.Template.Name,
		HardwareType: n.HardwareType, Start: n.CreatedAt}
	switch n.Status {
	case domain.NodeActive:
		return l, true
	case domain.NodeDeleted:
		l.End = now
		return l, true
	}
	return usage.Lifetime{}, false
}

// nodeWrite is one node's update at a job's end and, when the update opens
// or closes the node's lifetime, its usage record.
type nodeWrite struct {
	op       store.Op
	lifetime *usage.Lifetime
}

// usageBatches cuts writes into transactions within DynamoDB's limits,
// each led by check and closed by one usage batch (usage.BatchItem) of
// the lifetimes of its own nodes: a node's record commits with its
// status or not at all, at one usage write per transaction instead of
// one per node.
func usageBatches(check store.Op, job, status string, writes []nodeWrite) [][]store.Op {
	var out [][]store.Op
	base := store.TransactSize([]store.Op{check})
	var batch []store.Op
	var lifetimes []usage.Lifetime
	size := base
	flush := func() {
		if len(batch) == 0 {
			return
		}
		ops := append([]store.Op{check}, batch...)
		if len(lifetimes) > 0 {
			ops = append(ops, store.Put(usage.BatchItem(job, status, lifetimes), store.Condition{}))
		}
		out = append(out, ops)
		batch, lifetimes, size = nil, nil, base
	}
	// Room for the batch record: each lifetime is a few hundred bytes.
	const lifetimeBytes = 1 << 10
	for _, w := range writes {
		n := store.TransactSize([]store.Op{w.op}) + lifetimeBytes
		// check + nodes + the usage record within the items' limit.
		if len(batch)+2 >= store.MaxTransactItems || size+n > store.MaxTransactBytes || len(lifetimes) == usage.MaxBatch {
			flush()
		}
		batch = append(batch, w.op)
		if w.lifetime != nil {
			lifetimes = append(lifetimes, *w.lifetime)
		}
		size += n
	}
	flush()
	return out
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
