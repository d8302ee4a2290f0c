package planner

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

func TestScenariosHaveEveryProperty(t *testing.T) {
	t.Parallel()
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			plan, err := Build(sc.req)
			require.NoError(t, err)
			checkPlan(t, sc.req, plan)

			again, err := Build(sc.req)
			require.NoError(t, err)
			require.Equal(t, plan, again, "the same request must give the same plan")
		})
	}
}

// TestScenariosWithRunStatesHaveEveryProperty runs every scenario again with
// run states spread over the old nodes' services, every state in turn, so
// the skips meet every operation; the oracle restates the skip rules.
func TestScenariosWithRunStatesHaveEveryProperty(t *testing.T) {
	t.Parallel()
	states := []domain.RunState{"", domain.RunInstalled, domain.RunConfigured, domain.RunRunning, domain.RunStopped, domain.RunFailed}
	for _, sc := range scenarios() {
		if len(sc.req.Old) == 0 {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			for shift := range states {
				req := sc.req
				req.Old = slices.Clone(req.Old)
				k := shift
				for i := range req.Old {
					n := &req.Old[i]
					n.ServiceStates = map[string]domain.ServiceState{}
					for _, s := range n.Services {
						if st := states[k%len(states)]; st != "" {
							n.ServiceStates[s] = domain.ServiceState{State: st}
						}
						k++
					}
				}
				plan, err := Build(req)
				require.NoError(t, err)
				checkPlan(t, req, plan)
			}
		})
	}
}
