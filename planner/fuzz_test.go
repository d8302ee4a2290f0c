package planner

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// byteSource reads choices from fuzz input; past the end it reads zeros.
type byteSource struct {
	data []byte
	pos  int
}

func (b *byteSource) next() int {
	if b.pos >= len(b.data) {
		return 0
	}
	v := b.data[b.pos]
	b.pos++
	return int(v)
}

func (b *byteSource) intn(n int) int        { return b.next() % n }
func (b *byteSource) chance(outOf int) bool { return b.intn(outOf) == 0 }

// randomRequest builds a request from fuzz input: a random catalog of up to 7
// services (random dependencies of both phases through names or provided
// names, random defined actions; cycles only when the input asks), a random
// layout of up to 7 nodes and a random operation that fits it.
func randomRequest(data []byte) Request {
	b := &byteSource{data: data}
	nsvc := 1 + b.intn(7)
	allowCycles := b.chance(8)
	names := make([]string, nsvc)
	for i := range names {
		names[i] = fmt.Sprintf("s%d", i)
	}
	provided := []string{"p0", "p1"}
	services := map[string]*domain.Service{}
	for i, name := range names {
		s := &domain.Service{Meta: domain.Meta{Name: name}, Actions: map[domain.Action]domain.ServiceAction{}}
		mask := b.next()
		for k, a := range []domain.Action{domain.ActionInstall, domain.ActionConfigure, domain.ActionInitialize,
			domain.ActionStart, domain.ActionStop, domain.ActionRemove} {
			if mask&(1<<k) != 0 {
				s.Actions[a] = domain.ServiceAction{Type: "shell"}
			}
		}
		if b.chance(3) {
			s.Dependencies.Provides = []string{provided[b.intn(2)]}
		}
		for j := range names {
			if j == i || (j > i && !allowCycles) {
				continue
			}
			target := names[j]
			if b.chance(4) {
				target = provided[b.intn(2)]
			}
			switch b.intn(6) {
			case 1:
				s.Dependencies.Install.Requires = append(s.Dependencies.Install.Requires, target)
			case 2:
				s.Dependencies.Install.Uses = append(s.Dependencies.Install.Uses, target)
			case 3:
				s.Dependencies.Runtime.Requires = append(s.Dependencies.Runtime.Requires, target)
			case 4:
				s.Dependencies.Runtime.Uses = append(s.Dependencies.Runtime.Uses, target)
			}
		}
		services[name] = s
	}
	layout := func(id string, num int) domain.Node {
		var svcs []string
		mask := b.next()
		for i, name := range names {
			if mask&(1<<i) != 0 {
				svcs = append(svcs, name)
			}
		}
		return domain.Node{ID: id, Num: num, NodeLayout: domain.NodeLayout{HardwareType: "h", ImageType: "i", Services: svcs}}
	}
	nnode := 1 + b.intn(7)
	nodes := make([]domain.Node, nnode)
	for i := range nodes {
		nodes[i] = layout(fmt.Sprintf("n%d", i), 1000+b.intn(4)) // Num ties: order falls back to the ID
	}
	// strip gives each node a random subset of its services.
	strip := func(in []domain.Node) []domain.Node {
		out := make([]domain.Node, len(in))
		for i, n := range in {
			mask := b.next()
			var kept []string
			for k, s := range n.Services {
				if mask&(1<<k) == 0 {
					kept = append(kept, s)
				}
			}
			n.Services = kept
			out[i] = n
		}
		return out
	}
	ops := []domain.Operation{domain.OpCreate, domain.OpDelete, domain.OpExpand, domain.OpShrink, domain.OpReconfigure,
		domain.OpAddServices, domain.OpRemoveServices, domain.OpStartServices, domain.OpStopServices,
		domain.OpRestartServices, domain.OpRollingRestart, domain.OpSyncTemplate}
	req := Request{Operation: ops[b.intn(len(ops))], Services: services}
	switch req.Operation {
	case domain.OpCreate:
		req.New = nodes
	case domain.OpDelete:
		req.Old, req.Force = nodes, b.chance(3)
	case domain.OpExpand:
		req.Old, req.New, req.Restart = nodes, append([]domain.Node(nil), nodes...), b.chance(2)
		for k := 0; k <= b.intn(3); k++ {
			req.New = append(req.New, layout(fmt.Sprintf("x%d", k), 2000+k))
		}
	case domain.OpShrink:
		req.Old, req.Restart, req.Force = nodes, b.chance(2), b.chance(4)
		for _, n := range nodes {
			if b.chance(2) {
				req.New = append(req.New, n)
			}
		}
	case domain.OpAddServices:
		req.Old, req.New, req.Restart = strip(nodes), nodes, b.chance(2)
	case domain.OpRemoveServices:
		req.Old, req.New, req.Restart = nodes, strip(nodes), b.chance(2)
	case domain.OpSyncTemplate:
		req.Old, req.New, req.Restart = strip(nodes), strip(nodes), b.chance(2)
	default:
		req.Old = nodes
		req.Restart = req.Operation == domain.OpReconfigure && b.chance(2)
		for _, name := range names {
			if b.chance(3) {
				req.Selected = append(req.Selected, name)
			}
		}
		if req.Operation == domain.OpRollingRestart {
			req.BatchSize = b.intn(4)
		}
	}
	if !b.chance(4) {
		req.ConfigReferences = map[string][]string{}
		for _, name := range append([]string{ClusterConfigKey}, names...) {
			for _, target := range append(names, provided...) {
				if b.chance(5) {
					req.ConfigReferences[name] = append(req.ConfigReferences[name], target)
				}
			}
		}
	}
	req.Limits = Limits{MaxDependsOn: 2 + b.intn(5), MaxDependents: 2 + b.intn(5), MaxDirectEdges: 1 + b.intn(8)}
	return req
}

// FuzzPlan plans random operations on random service graphs and checks every
// property of the result; a failure to plan must be a cycle the catalog really
// has or a request that really does not fit its operation.
func FuzzPlan(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x06\x3f\x3f\x3f\x3f\x3f\x3f\x01\x02\x03\x04\x05\x06\x07\x08\x09"))
	f.Add([]byte("\x05\x00\x1f\x01\x13\x02\x2f\x03\x04\x3f\x05\x11\x06\x07\x08\xff\xfe\xfd\x02\x01"))
	f.Add([]byte("\x03\x07\x3f\x03\x03\x3f\x04\x04\x3f\x01\x01\x06\x07\x07\x07\x07\x0a\x02\x02"))
	for op := range 12 {
		f.Add([]byte{6, 0, 63, 1, 2, 63, 3, 4, 63, 5, 0, 63, 1, 2, 63, 3, 4, 63, 6, 0xff, 0x7f, 0x3f, 0x1f, 0x0f, 7, 3, byte(op), 1, 2, 3, 4})
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req := randomRequest(data)
		plan, err := Build(req)
		var cycle *CycleError
		switch {
		case errors.As(err, &cycle):
			checkCycleError(t, req, err)
			return
		case errors.Is(err, ErrInvalidRequest):
			return
		}
		require.NoError(t, err)
		o := newOracle(req)
		require.False(t, o.hasCycle(installPhase) || o.hasCycle(runtimePhase), "a cyclic catalog was planned")
		checkPlan(t, req, plan)
		_, err = plan.Stages()
		require.NoError(t, err)
		_, err = plan.CriticalPath(estimates)
		require.NoError(t, err)
	})
}

// FuzzStagesOfArbitraryPlans feeds plans as the API might read them back from
// JSON: the stage view and critical path must reject malformed ones with a
// *PlanError and, for the rest, put every work task in exactly one stage,
// after everything it waits for, with at most one task per node per stage.
func FuzzStagesOfArbitraryPlans(f *testing.F) {
	f.Add([]byte(`{"tasks":[{"id":"a","kind":"work","nodeId":"n","action":"install"},{"id":"j","kind":"join","action":"join","dependsOn":["a"]},{"id":"b","kind":"work","nodeId":"n","action":"start","dependsOn":["j"]}]}`))
	f.Add([]byte(`{"tasks":[{"id":"a","dependsOn":["b"]},{"id":"b"}]}`))
	f.Add([]byte(`{"tasks":[{"id":"a"},{"id":"a"}]}`))
	f.Add([]byte(`{"tasks":[{"id":"x","nodeId":"n"},{"id":"y","nodeId":"n"},{"id":"z","nodeId":"m","dependsOn":["x","y"]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var plan Plan
		if json.Unmarshal(data, &plan) != nil {
			return
		}
		stages, err := plan.Stages()
		_, cpErr := plan.CriticalPath(func(*Task) time.Duration { return time.Second })
		if err != nil {
			var pe *PlanError
			require.ErrorAs(t, err, &pe)
			require.ErrorAs(t, cpErr, &pe)
			return
		}
		require.NoError(t, cpErr)
		stageOf := map[string]int{}
		for i, st := range stages {
			nodes := map[string]bool{}
			for _, id := range st {
				_, again := stageOf[id]
				require.False(t, again, "%s is in two stages", id)
				stageOf[id] = i
			}
			for _, id := range st {
				for _, task := range plan.Tasks {
					if task.ID == id && task.NodeID != "" {
						require.False(t, nodes[task.NodeID], "two tasks of node %s in stage %d", task.NodeID, i)
						nodes[task.NodeID] = true
					}
				}
			}
		}
		byID := map[string]*Task{}
		for i := range plan.Tasks {
			byID[plan.Tasks[i].ID] = &plan.Tasks[i]
		}
		for _, task := range plan.Tasks {
			if task.IsJoin() {
				continue
			}
			s, ok := stageOf[task.ID]
			require.True(t, ok, "%s is in no stage", task.ID)
			for _, d := range workPredecessors(task.ID, byID) {
				require.Less(t, stageOf[d], s, "%s is staged no later than %s, which it waits for", task.ID, d)
			}
		}
	})
}
