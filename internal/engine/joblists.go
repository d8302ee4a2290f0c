package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/heddle-io/heddle/internal/store"
)

// A job's node lists (the nodes each ending marks) and its rollback roots
// grow with the cluster: at 10,000 nodes they come to about 1 MB, over
// DynamoDB's 400 KB item. A job whose lists would make its item larger than
// maxInlineListBytes keeps them apart, in list items written with its
// tasks in submission step 2 (JOBLISTS#<job>, never changed after), and
// its record says so (ListsApart); the readers that need the lists (a
// job's end, its rollback) read them with jobListsOf. Jobs submitted
// before this, and small jobs, keep them in the record.

// maxInlineListBytes is the most list data a job record carries itself.
const maxInlineListBytes = 64 << 10

const jobListsKind = "JOBLISTS#"

// jobLists are the lists a job record may keep apart.
type jobLists struct {
	OnSuccess     []string `json:"onSuccess,omitempty"`
	OnFailure     []string `json:"onFailure,omitempty"`
	OnRollback    []string `json:"onRollback,omitempty"`
	RollbackRoots []string `json:"rollbackRoots,omitempty"`
}

func (l jobLists) size() int {
	n := 0
	for _, list := range [][]string{l.OnSuccess, l.OnFailure, l.OnRollback, l.RollbackRoots} {
		for _, s := range list {
			n += len(s) + 3
		}
	}
	return n
}

// listsOf returns the lists a record holds.
func listsOf(j *jobRecord) jobLists {
	return jobLists{OnSuccess: j.OnSuccess.Nodes, OnFailure: j.OnFailure.Nodes, OnRollback: j.OnRollback.Nodes, RollbackRoots: j.RollbackRoots}
}

// setLists puts l into the record.
func setLists(j *jobRecord, l jobLists) {
	j.OnSuccess.Nodes, j.OnFailure.Nodes, j.OnRollback.Nodes, j.RollbackRoots = l.OnSuccess, l.OnFailure, l.OnRollback, l.RollbackRoots
}

// listItems moves the record's lists into items of their own when they are
// too large to keep in it, and returns those items (none otherwise).
func listItems(tenant string, j *jobRecord, inline int) []store.Item {
	l := listsOf(j)
	if l.size() <= inline {
		return nil
	}
	setLists(j, jobLists{})
	j.ListsApart, j.RollbackApart = true, len(l.RollbackRoots) > 0
	// Each item holds a slice of one list, at most maxChunkBytes of it.
	type part struct {
		List string   `json:"list"`
		IDs  []string `json:"ids"`
	}
	var items []store.Item
	for _, named := range []struct {
		name string
		ids  []string
	}{{"onSuccess", l.OnSuccess}, {"onFailure", l.OnFailure}, {"onRollback", l.OnRollback}, {"rollbackRoots", l.RollbackRoots}} {
		ids, size := []string{}, 0
		flush := func() {
			if len(ids) == 0 {
				return
			}
			key := store.Key{PK: chunkPK(tenant, jobListsKind, j.ID), SK: fmt.Sprintf("%06d", len(items))}
			items = append(items, store.Item{Key: key, Data: mustJSON(part{List: named.name, IDs: ids})})
			ids, size = []string{}, 0
		}
		for _, id := range named.ids {
			if size+len(id)+3 > maxChunkBytes {
				flush()
			}
			ids = append(ids, id)
			size += len(id) + 3
		}
		flush()
	}
	for i := range items {
		items[i].Counters = map[string]int64{counterChunks: int64(len(items))}
	}
	return items
}

// jobListsOf returns a job's lists, from its record or from its list items.
func (e *Engine) jobListsOf(ctx context.Context, tenant string, j jobRecord) (jobLists, error) {
	if !j.ListsApart {
		return listsOf(&j), nil
	}
	var l jobLists
	read, of := 0, int64(-1)
	cursor := ""
	for {
		page, err := e.store.Query(ctx, chunkPK(tenant, jobListsKind, j.ID), store.Query{Limit: store.MaxPageSize, Cursor: cursor})
		if err != nil {
			return jobLists{}, fmt.Errorf("reading the node lists of job %s: %w", j.ID, err)
		}
		for _, it := range page.Items {
			var p struct {
				List string   `json:"list"`
				IDs  []string `json:"ids"`
			}
			if err := json.Unmarshal(it.Data, &p); err != nil {
				return jobLists{}, fmt.Errorf("engine: unreadable item %s: %w", it.Key, err)
			}
			switch p.List {
			case "onSuccess":
				l.OnSuccess = append(l.OnSuccess, p.IDs...)
			case "onFailure":
				l.OnFailure = append(l.OnFailure, p.IDs...)
			case "onRollback":
				l.OnRollback = append(l.OnRollback, p.IDs...)
			case "rollbackRoots":
				l.RollbackRoots = append(l.RollbackRoots, p.IDs...)
			}
			read++
			of = it.Counter(counterChunks)
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	if int64(read) != of {
		return jobLists{}, fmt.Errorf("job %s: %d of %d list items", j.ID, read, of)
	}
	return l, nil
}

// hasRollback reports whether the job has a rollback plan to run.
func (j *jobRecord) hasRollback() bool { return len(j.RollbackRoots) > 0 || j.RollbackApart }
