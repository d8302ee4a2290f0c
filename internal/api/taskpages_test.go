package api

import (
	"context"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
	"github.com/heddle-io/heddle/planner"
)

// TestIndexedTaskPagesListWhatAFullReadLists pages, with every filter, a
// job that has a task index and a summary (both turned on from the
// smallest job), and checks each listing against what a read of all the
// job's tasks gives: the same tasks, as they are now, failed and running
// first, then the rest by key (forward plan, then rollback plan, by id).
// The ended job is changed in the store first so that it has failed and
// running tasks, a forward task with no item (its definition is read from
// its chunk) and rollback tasks that were never written (idem).
func TestIndexedTaskPagesListWhatAFullReadLists(t *testing.T) {
	t.Parallel()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	b, eng := summaryBundleWith(t, db, engine.Config{TaskIndexMinTasks: 1})
	ctx := context.Background()

	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/clusters", map[string]any{"name": "shop", "template": "web", "size": 4})
	require.Equal(t, http.StatusAccepted, status, "%v", body)
	id := body["cluster"].(map[string]any)["id"].(string)
	jobID := body["job"].(map[string]any)["id"].(string)
	jobPath := "/v1/clusters/" + id + "/jobs/" + jobID
	require.Eventually(t, func() bool {
		return b.clusterOf(t, b.acmeKey, id)["status"] == string(domain.ClusterActive)
	}, 60*time.Second, 20*time.Millisecond)

	index, err := db.Query(ctx, store.TenantPK("acme", "TASKIDX#"+jobID), store.Query{})
	require.NoError(t, err)
	require.NotEmpty(t, index.Items, "the job was written with its task index")

	// Make some tasks failed and running, and one root without an item.
	all, err := eng.Tasks(ctx, "acme", jobID)
	require.NoError(t, err)
	var forward []domain.Task
	for _, task := range all {
		if !task.Rollback {
			forward = append(forward, task)
		}
	}
	require.Greater(t, len(forward), 8)
	taskKey := func(task string) store.Key {
		return store.Key{PK: store.TenantPK("acme", "TASKS#"+jobID), SK: task}
	}
	failed, running := string(domain.TaskFailed), string(domain.TaskRunning)
	for i, st := range map[int]*string{1: &failed, 5: &running, 6: &failed} {
		_, err := db.Write(ctx, store.Update(taskKey(forward[i].ID), store.Condition{MustExist: true}, store.Changes{Status: st}))
		require.NoError(t, err)
	}
	var root string
	for _, task := range forward {
		if len(task.DependsOn) == 0 {
			root = task.ID
			break
		}
	}
	_, err = db.Write(ctx, store.Delete(taskKey(root), store.Condition{MustExist: true}))
	require.NoError(t, err)
	// Counted again on the next view, with these.
	_, err = db.Write(ctx, store.Delete(store.Key{PK: store.TenantPK("acme", "JOBSUM"), SK: jobID}, store.Condition{}))
	require.NoError(t, err)
	status, view := b.do(t, b.acmeKey, http.MethodGet, jobPath, nil)
	require.Equal(t, http.StatusOK, status, "%v", view)
	require.Equal(t, float64(2), view["taskStatus"].(map[string]any)[failed])

	all, err = eng.Tasks(ctx, "acme", jobID)
	require.NoError(t, err)
	stages := map[string]int{}
	plan := &planner.Plan{}
	for _, task := range all {
		if !task.Rollback {
			kind := planner.KindWork
			if task.Join {
				kind = planner.KindJoin
			}
			plan.Tasks = append(plan.Tasks, planner.Task{ID: task.ID, Kind: kind, NodeID: task.NodeID, Service: task.Service, Action: task.Action, DependsOn: task.DependsOn})
		}
	}
	// Stored tasks come by id; Stages needs dependencies first.
	plan.Tasks = topoSorted(plan.Tasks)
	st, err := plan.Stages()
	require.NoError(t, err)
	for i, s := range st {
		for _, tid := range s {
			stages[tid] = i + 1
		}
	}
	rank := func(task domain.Task) int {
		switch task.Status {
		case domain.TaskFailed:
			return 0
		case domain.TaskRunning:
			return 1
		}
		return 2
	}
	rb := func(task domain.Task) string {
		if task.Rollback {
			return "1"
		}
		return "0"
	}
	slices.SortFunc(all, func(a, b domain.Task) int {
		return strings.Compare(string(rune('0'+rank(a)))+rb(a)+a.ID, string(rune('0'+rank(b)))+rb(b)+b.ID)
	})
	node := forward[1].NodeID
	require.NotEmpty(t, node)
	for _, filter := range []struct {
		query string
		keep  func(domain.Task) bool
	}{
		{"", func(domain.Task) bool { return true }},
		{"status=FAILED", func(t domain.Task) bool { return t.Status == domain.TaskFailed }},
		{"status=RUNNING", func(t domain.Task) bool { return t.Status == domain.TaskRunning }},
		{"status=SUCCEEDED", func(t domain.Task) bool { return t.Status == domain.TaskSucceeded }},
		{"status=READY", func(t domain.Task) bool { return t.Status == domain.TaskReady }},
		{"status=BLOCKED", func(t domain.Task) bool { return t.Status == domain.TaskBlocked }},
		{"node=" + node, func(t domain.Task) bool { return t.NodeID == node }},
		{"service=web", func(t domain.Task) bool { return t.Service == "web" }},
		{"action=install", func(t domain.Task) bool { return t.Action == domain.ActionInstall }},
		{"stage=2", func(t domain.Task) bool { return !t.Rollback && stages[t.ID] == 2 }},
		{"rollback=true", func(t domain.Task) bool { return t.Rollback }},
		{"rollback=false&node=" + node, func(t domain.Task) bool { return !t.Rollback && t.NodeID == node }},
		{"rollback=true&node=" + node + "&action=delete", func(t domain.Task) bool {
			return t.Rollback && t.NodeID == node && t.Action == domain.ActionDelete
		}},
	} {
		var want []string
		for _, task := range all {
			if filter.keep(task) {
				want = append(want, task.ID+" "+string(task.Status))
			}
		}
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			require.Less(t, pages, 1000, "%s: the pages end", filter.query)
			p := jobPath + "/tasks?limit=3&" + filter.query
			if cursor != "" {
				p += "&cursor=" + url.QueryEscape(cursor)
			}
			status, body := b.do(t, b.acmeKey, http.MethodGet, p, nil)
			require.Equal(t, http.StatusOK, status, "%s: %v", filter.query, body)
			items := body["items"].([]any)
			require.LessOrEqual(t, len(items), 3)
			for _, it := range items {
				m := it.(map[string]any)
				got = append(got, m["id"].(string)+" "+m["status"].(string))
			}
			cursor, _ = body["nextCursor"].(string)
			if cursor == "" {
				break
			}
		}
		require.Equal(t, want, got, "filter %q", filter.query)
	}
	require.Contains(t, strings.Join(slices.Collect(func(yield func(string) bool) {
		for _, task := range all {
			if !yield(task.ID) {
				return
			}
		}
	}), " "), root)

	// One task is read alone, with or without an item.
	for _, task := range []string{root, forward[1].ID, all[len(all)-1].ID} {
		status, body := b.do(t, b.acmeKey, http.MethodGet, jobPath+"/tasks/"+url.PathEscape(task), nil)
		require.Equal(t, http.StatusOK, status, "%v", body)
		require.Equal(t, task, body["id"])
	}
	status, body = b.do(t, b.acmeKey, http.MethodGet, jobPath+"/tasks/"+url.PathEscape(root+"x"), nil)
	require.Equal(t, http.StatusNotFound, status, "%v", body)
}

// topoSorted puts each task after its dependencies (stable otherwise).
func topoSorted(tasks []planner.Task) []planner.Task {
	byID := map[string]planner.Task{}
	for _, t := range tasks {
		byID[t.ID] = t
	}
	done := map[string]bool{}
	var out []planner.Task
	var visit func(t planner.Task)
	visit = func(t planner.Task) {
		if done[t.ID] {
			return
		}
		done[t.ID] = true
		for _, d := range t.DependsOn {
			if dt, ok := byID[d]; ok {
				visit(dt)
			}
		}
		out = append(out, t)
	}
	for _, t := range tasks {
		visit(t)
	}
	return out
}
