package engine

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// TestARevisionItemIsSmallerThanItsCluster: a revision keeps the template
// by reference, so however large the resolved template, its item is
// smaller than the cluster's own (which holds the same config and the
// resolved template too), and so always within DynamoDB's 400 KB.
func TestARevisionItemIsSmallerThanItsCluster(t *testing.T) {
	t.Parallel()
	big := &domain.ClusterTemplate{}
	big.Name, big.Description = "huge", strings.Repeat("x", 300_000)
	c := domain.Cluster{ID: "c1", Name: "n", Template: domain.TemplateRef{Name: "huge", Version: 3}, Resolved: big,
		Services: []string{"web", "db"}, Config: json.RawMessage(`{"a": 1}`), Revision: 4, LastRevision: 6}
	job := &jobRecord{Job: domain.Job{ID: "j1", Operation: domain.OpReconfigure, RequestedBy: "ann"}}
	before := c
	r := newRevision(&c, job, definitionOf(c, 5), 0, time.Unix(0, 0))
	require.EqualValues(t, 7, r.Number, "after the highest given, withdrawn ones included")
	require.EqualValues(t, 4, r.Previous)
	require.EqualValues(t, 7, c.Revision)
	require.EqualValues(t, 7, c.LastRevision)
	require.EqualValues(t, 7, job.Revision)
	op := revisionPut("t", r)
	require.True(t, op.Cond.MustNotExist, "a number is given once")
	revSize := store.TransactSize([]store.Op{op})
	clusterSize := store.TransactSize([]store.Op{store.Put(clusterItem("t", before), store.Condition{})})
	require.Less(t, revSize, 2_000)
	require.Less(t, revSize, clusterSize)
}

// TestADigestIsOfContent: the digest of a definition does not depend on
// the config's spacing and key order or the services' order, and does on
// every field.
func TestADigestIsOfContent(t *testing.T) {
	t.Parallel()
	a := domain.ClusterDefinition{Template: domain.TemplateRef{Name: "t", Version: 1}, Services: []string{"a", "b"}, Config: json.RawMessage(`{"x": 1, "y": [1, 2]}`), Size: 3}
	b := domain.ClusterDefinition{Template: domain.TemplateRef{Name: "t", Version: 1}, Services: []string{"b", "a"}, Config: json.RawMessage(`{"y":[1,2],"x":1}`), Size: 3}
	require.Equal(t, a.Digest(), b.Digest())
	require.Equal(t, domain.ClusterDefinition{Config: json.RawMessage(`null`)}.Digest(), domain.ClusterDefinition{}.Digest())
	for name, change := range map[string]func(*domain.ClusterDefinition){
		"version":  func(d *domain.ClusterDefinition) { d.Template.Version = 2 },
		"services": func(d *domain.ClusterDefinition) { d.Services = []string{"a"} },
		"config":   func(d *domain.ClusterDefinition) { d.Config = json.RawMessage(`{"x":2,"y":[1,2]}`) },
		"size":     func(d *domain.ClusterDefinition) { d.Size = 4 },
	} {
		c := a
		change(&c)
		require.NotEqual(t, a.Digest(), c.Digest(), name)
	}
}
