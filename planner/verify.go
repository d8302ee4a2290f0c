package planner

import (
	"fmt"
	"slices"

	"github.com/heddle-io/heddle/internal/domain"
)

// DefaultCheckTimeout bounds a check action that sets no timeout of its
// own: a check that takes longer than this is degraded, and the general
// ten-minute action default would hold a verification far too long.
const DefaultCheckTimeout = domain.Duration(60 * 1e9)

// Verify plans a verification: one check task for every service with a
// check action on every node of nodes that carries it. Checks have no
// dependencies (they run in parallel across nodes, one at a time per node,
// as every task of a node does) and no retries: a flaky check is what a
// verification is there to show. A plan with no task means no service of
// the cluster defines a check.
func Verify(nodes []domain.Node, services map[string]*domain.Service) (*Plan, error) {
	plan := &Plan{Operation: domain.OpVerify}
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b domain.Node) int { return a.Num - b.Num })
	for _, n := range sorted {
		for _, name := range n.Services {
			svc, ok := services[name]
			if !ok {
				return nil, fmt.Errorf("%w: node %s runs service %s, which the request does not define", ErrInvalidRequest, n.ID, name)
			}
			def, ok := svc.Actions[domain.ActionCheck]
			if !ok {
				continue
			}
			timeout := def.Timeout
			if timeout == 0 {
				timeout = DefaultCheckTimeout
			}
			plan.Tasks = append(plan.Tasks, Task{
				ID: n.ID + "/" + name + "/" + string(domain.ActionCheck), Kind: KindWork,
				NodeID: n.ID, Service: name, Action: domain.ActionCheck, Timeout: timeout, MaxAttempts: 1,
			})
		}
	}
	return plan, nil
}
