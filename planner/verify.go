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

// DriftStoppedSuffix ends the id of a drift check's check task for a
// service heddle recorded stopped on its node: a passing check there is
// drift (it runs where heddle stopped it), where for a running service a
// failing one is.
const DriftStoppedSuffix = "/check-stopped"

// DefaultProbeTimeout bounds a drift probe of one node: a provider call and
// one short command over SSH.
const DefaultProbeTimeout = domain.Duration(30 * 1e9)

// Drift plans a drift check: a probe of every node, and the check action
// of every service heddle recorded running or stopped on it (a service in
// any other state is not expected either way). Like a verification's, the
// tasks have no dependencies and no retries.
func Drift(nodes []domain.Node, services map[string]*domain.Service) (*Plan, error) {
	plan := &Plan{Operation: domain.OpDrift}
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b domain.Node) int { return a.Num - b.Num })
	for _, n := range sorted {
		plan.Tasks = append(plan.Tasks, Task{ID: n.ID + "/" + string(domain.ActionProbe), Kind: KindWork, NodeID: n.ID,
			Action: domain.ActionProbe, Timeout: DefaultProbeTimeout, MaxAttempts: 1})
		for _, name := range n.Services {
			svc, ok := services[name]
			if !ok {
				return nil, fmt.Errorf("%w: node %s runs service %s, which the request does not define", ErrInvalidRequest, n.ID, name)
			}
			def, ok := svc.Actions[domain.ActionCheck]
			if !ok {
				continue
			}
			id := n.ID + "/" + name + "/" + string(domain.ActionCheck)
			switch n.ServiceStates[name].State {
			case domain.RunRunning:
			case domain.RunStopped:
				id = n.ID + "/" + name + DriftStoppedSuffix
			default:
				continue
			}
			timeout := def.Timeout
			if timeout == 0 {
				timeout = DefaultCheckTimeout
			}
			plan.Tasks = append(plan.Tasks, Task{ID: id, Kind: KindWork, NodeID: n.ID, Service: name,
				Action: domain.ActionCheck, Timeout: timeout, MaxAttempts: 1})
		}
	}
	return plan, nil
}
