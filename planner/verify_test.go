package planner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

func TestVerifyPlansOneCheckPerServiceAndNodeThatDefinesOne(t *testing.T) {
	t.Parallel()
	services := map[string]*domain.Service{
		"db":  {Actions: map[domain.Action]domain.ServiceAction{domain.ActionCheck: {Type: "shell", Timeout: domain.Duration(5e9)}}},
		"web": {Actions: map[domain.Action]domain.ServiceAction{domain.ActionCheck: {Type: "shell"}}},
		"lib": {Actions: map[domain.Action]domain.ServiceAction{domain.ActionInstall: {Type: "shell"}}},
	}
	nodes := []domain.Node{
		{ID: "n2", Num: 1001, NodeLayout: domain.NodeLayout{Services: []string{"lib", "web"}}},
		{ID: "n1", Num: 1000, NodeLayout: domain.NodeLayout{Services: []string{"db", "lib"}}},
	}
	plan, err := Verify(nodes, services)
	require.NoError(t, err)
	require.Equal(t, domain.OpVerify, plan.Operation)
	require.Len(t, plan.Tasks, 2)
	require.Equal(t, "n1/db/check", plan.Tasks[0].ID)
	require.Equal(t, domain.Duration(5e9), plan.Tasks[0].Timeout)
	require.Equal(t, "n2/web/check", plan.Tasks[1].ID)
	require.Equal(t, DefaultCheckTimeout, plan.Tasks[1].Timeout, "a check without a timeout gets the check default, not ten minutes")
	for _, task := range plan.Tasks {
		require.Empty(t, task.DependsOn, "checks run in parallel")
		require.Equal(t, 1, task.MaxAttempts, "checks are not retried")
	}
	_, err = plan.index()
	require.NoError(t, err)

	_, err = Verify([]domain.Node{{ID: "n3", NodeLayout: domain.NodeLayout{Services: []string{"ghost"}}}}, services)
	require.ErrorIs(t, err, ErrInvalidRequest)
}
