package cluster

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/planner"
)

func TestFirstLease(t *testing.T) {
	t.Parallel()
	day := domain.Duration(24 * time.Hour)
	got, err := firstLease(domain.LeasePolicy{Initial: day}, 0)
	require.NoError(t, err)
	require.Equal(t, 24*time.Hour, got, "the template's initial lease by default")
	got, err = firstLease(domain.LeasePolicy{Initial: day}, time.Hour)
	require.NoError(t, err)
	require.Equal(t, time.Hour, got, "a shorter lease may be asked for")
	_, err = firstLease(domain.LeasePolicy{Initial: day}, 48*time.Hour)
	var ps domain.Problems
	require.ErrorAs(t, err, &ps)
	require.Equal(t, "lease", ps[0].Field)
	got, err = firstLease(domain.LeasePolicy{}, 0)
	require.NoError(t, err)
	require.Zero(t, got, "no policy: the cluster never expires")
}

func TestConfigReferencesComeFromMacros(t *testing.T) {
	t.Parallel()
	shell := func(script string) map[domain.Action]domain.ServiceAction {
		return map[domain.Action]domain.ServiceAction{domain.ActionConfigure: {Type: "shell", Fields: map[string]string{"script": script}}}
	}
	services := map[string]*domain.Service{
		"lb":  {Meta: domain.Meta{Name: "lb"}, Actions: shell("echo %join(map(ip.service.web,'$:8080'),',')%")},
		"web": {Meta: domain.Meta{Name: "web"}, Actions: shell("echo %ip.service.kv% %host.service.db[0]%")},
		"kv":  {Meta: domain.Meta{Name: "kv"}, Actions: shell("echo no macros")},
	}
	refs, err := configReferences(services, json.RawMessage(`{"a":"%num.service.web%"}`))
	require.NoError(t, err)
	require.Equal(t, []string{"web"}, refs["lb"])
	require.Equal(t, []string{"db", "kv"}, refs["web"])
	require.Empty(t, refs["kv"])
	require.Equal(t, []string{"web"}, refs[planner.ClusterConfigKey])

	services["kv"] = &domain.Service{Meta: domain.Meta{Name: "kv"}, Actions: shell("echo %ip.service.%")}
	_, err = configReferences(services, nil)
	var ps domain.Problems
	require.ErrorAs(t, err, &ps, "a malformed macro is a problem at its field")
	require.Equal(t, "services.kv.actions.configure.fields.script", ps[0].Field)
}

func TestTopologicalPutsDependenciesFirst(t *testing.T) {
	t.Parallel()
	// Stored tasks come back by id, which is not plan order.
	tasks := []planner.Task{
		{ID: "a/start", DependsOn: []string{"a/install"}},
		{ID: "a/install", DependsOn: []string{"a/create"}},
		{ID: "a/create"},
		{ID: "b/start", DependsOn: []string{"a/start", "b/create"}},
		{ID: "b/create"},
	}
	out := topological(tasks)
	require.Len(t, out, len(tasks))
	at := map[string]int{}
	for i, task := range out {
		at[task.ID] = i
	}
	for _, task := range out {
		for _, d := range task.DependsOn {
			require.Less(t, at[d], at[task.ID], "%s before %s", d, task.ID)
		}
	}
}

func TestStageProgressCountsByStatus(t *testing.T) {
	t.Parallel()
	tasks := []domain.Task{
		{ID: "n1/create", NodeID: "n1", Action: domain.ActionCreate, Status: domain.TaskSucceeded},
		{ID: "n2/create", NodeID: "n2", Action: domain.ActionCreate, Status: domain.TaskRunning},
		{ID: "n1/confirm", NodeID: "n1", Action: domain.ActionConfirm, Status: domain.TaskFailed, DependsOn: []string{"n1/create"}},
		{ID: "n2/confirm", NodeID: "n2", Action: domain.ActionConfirm, Status: domain.TaskBlocked, DependsOn: []string{"n2/create"}},
		{ID: "rollback:n1/delete", NodeID: "n1", Action: domain.ActionDelete, Rollback: true, Status: domain.TaskBlocked},
	}
	got := stageProgress(tasks)
	require.Equal(t, []StageProgress{
		{Stage: 1, Total: 2, Done: 1, Running: 1},
		{Stage: 2, Total: 2, Failed: 1},
	}, got, "rollback tasks are not part of the view")
}

func TestStageCacheForgetsTheOldest(t *testing.T) {
	t.Parallel()
	c := newStageCache(2)
	for i := range 3 {
		c.put(fmt.Sprint(i), []planner.Stage{{fmt.Sprint(i)}})
	}
	_, ok := c.get("0")
	require.False(t, ok)
	v, ok := c.get("2")
	require.True(t, ok)
	require.Equal(t, []planner.Stage{{"2"}}, v)
}

func TestClusterIDsSortByCreation(t *testing.T) {
	t.Parallel()
	now := time.Now()
	ids := []string{newClusterID(now.Add(2 * time.Millisecond)), newClusterID(now), newClusterID(now.Add(time.Millisecond))}
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	require.Equal(t, []string{ids[1], ids[2], ids[0]}, sorted)
	for _, id := range ids {
		require.True(t, domain.ValidName(id), "%s is usable in paths and host names", id)
	}
}

// TestQuotaErrorReadsRight: counts agree with their nouns, and the advice
// fits the limit: a cluster quota is met by deleting a cluster (shrinking
// frees no cluster) or by an admin raising it with heddle tenants update.
func TestQuotaErrorReadsRight(t *testing.T) {
	t.Parallel()
	e := &QuotaError{Limit: "maxClusters", Max: 1, InUse: 1, Asked: 1}
	require.Equal(t, "the tenant's quota maxClusters allows 1 cluster; 1 is in use and this asks for 1 more: "+
		"delete a cluster, or ask an admin to raise the limit (heddle tenants update TENANT --max-clusters N)", e.Error())
	e = &QuotaError{Limit: "maxNodes", Max: 12, InUse: 10, Asked: 4}
	require.Equal(t, "the tenant's quota maxNodes allows 12 nodes; 10 are in use and this asks for 4 more: "+
		"shrink or delete a cluster, or ask an admin to raise the limit (heddle tenants update TENANT --max-nodes N)", e.Error())
}
