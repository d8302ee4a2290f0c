package planner

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// The oracle is a second, deliberately naive reading of the planning rules in
// the package documentation. Plans are checked against it, not against the
// planner's own data structures.

type oracle struct {
	req      Request
	services map[string]*domain.Service
	present  []string
	// direct[p][s] are the services s directly depends on in phase p.
	direct [2]map[string][]string
	// trans[p][s][d]: s depends on d, directly or not.
	trans             [2]map[string]map[string]bool
	oldHost, newHost  map[string]map[string]bool // node -> services
	oldNodes, created []string
	deleted, kept     []string
	changed           map[string]bool
}

func newOracle(req Request) *oracle {
	o := &oracle{req: req, services: req.Services, oldHost: map[string]map[string]bool{}, newHost: map[string]map[string]bool{}}
	newNodes := req.New
	if len(newNodes) == 0 && (sameLayout(req.Operation) || req.Operation == domain.OpRepair) {
		newNodes = req.Old
	}
	seen := map[string]bool{}
	for _, n := range req.Old {
		o.oldHost[n.ID] = set(n.Services...)
		o.oldNodes = append(o.oldNodes, n.ID)
		for _, s := range n.Services {
			seen[s] = true
		}
	}
	for _, n := range newNodes {
		o.newHost[n.ID] = set(n.Services...)
		for _, s := range n.Services {
			seen[s] = true
		}
		if _, ok := o.oldHost[n.ID]; ok {
			o.kept = append(o.kept, n.ID)
		} else {
			o.created = append(o.created, n.ID)
		}
	}
	for _, n := range req.Old {
		if _, ok := o.newHost[n.ID]; !ok {
			o.deleted = append(o.deleted, n.ID)
		}
	}
	for s := range seen {
		o.present = append(o.present, s)
	}
	sort.Strings(o.present)
	o.changed = map[string]bool{}
	for _, s := range o.present {
		for id := range union(o.oldHost, o.newHost) {
			if o.oldHost[id][s] != o.newHost[id][s] {
				o.changed[s] = true
			}
		}
	}
	for p := range 2 {
		o.direct[p] = map[string][]string{}
		o.trans[p] = map[string]map[string]bool{}
		for _, s := range o.present {
			def := req.Services[s]
			ds := def.Dependencies.Install
			if p == int(runtimePhase) {
				ds = def.Dependencies.Runtime
			}
			for _, name := range append(slices.Clone(ds.Requires), ds.Uses...) {
				for _, t := range o.present {
					if t != s && (t == name || slices.Contains(req.Services[t].Dependencies.Provides, name)) && !slices.Contains(o.direct[p][s], t) {
						o.direct[p][s] = append(o.direct[p][s], t)
					}
				}
			}
		}
		for _, s := range o.present {
			reach := map[string]bool{}
			stack := slices.Clone(o.direct[p][s])
			for len(stack) > 0 {
				d := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if !reach[d] {
					reach[d] = true
					stack = append(stack, o.direct[p][d]...)
				}
			}
			o.trans[p][s] = reach
		}
	}
	return o
}

func set(items ...string) map[string]bool {
	m := map[string]bool{}
	for _, s := range items {
		m[s] = true
	}
	return m
}

func union(a, b map[string]map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// hasCycle reports whether some service depends on itself in phase p.
func (o *oracle) hasCycle(p phase) bool {
	for _, s := range o.present {
		if o.trans[p][s][s] {
			return true
		}
	}
	return false
}

// refers reports whether s's tasks read a macro about r.
func (o *oracle) refers(s, r string) bool {
	refs := o.req.ConfigReferences
	if refs == nil {
		return true
	}
	for _, name := range append(slices.Clone(refs[s]), refs[ClusterConfigKey]...) {
		if name == r || slices.Contains(o.services[r].Dependencies.Provides, name) {
			return true
		}
	}
	return false
}

func (o *oracle) defines(s string, a domain.Action) bool {
	_, ok := o.services[s].Actions[a]
	return ok
}

func (o *oracle) keeps(id, s string) bool { return o.oldHost[id][s] && o.newHost[id][s] }

func (o *oracle) loses(id, s string) bool { return o.oldHost[id][s] && !o.newHost[id][s] }

// selection is Selected, or every service.
func (o *oracle) selection() map[string]bool {
	if len(o.req.Selected) > 0 {
		return set(o.req.Selected...)
	}
	return set(o.present...)
}

// closure adds what seed depends on (or, with dependents, what depends on it).
func (o *oracle) closure(seed map[string]bool, dependents bool) map[string]bool {
	out := map[string]bool{}
	for _, s := range o.present {
		if seed[s] {
			out[s] = true
			continue
		}
		for d := range seed {
			if (!dependents && o.trans[runtimePhase][d][s]) || (dependents && o.trans[runtimePhase][s][d]) {
				out[s] = true
			}
		}
	}
	return out
}

// state is the recorded run state of service s on old node id.
func (o *oracle) state(id, s string) domain.RunState {
	for _, n := range o.req.Old {
		if n.ID == id {
			return n.ServiceStates[s].State
		}
	}
	return ""
}

// unmade: old node id was never made (PLANNED, no address), so nothing
// runs there to stop or remove.
func (o *oracle) unmade(id string) bool {
	for _, n := range o.req.Old {
		if n.ID == id {
			return n.Status == domain.NodePlanned && len(n.Addresses) == 0
		}
	}
	return false
}

type taskKey struct {
	node, service string
	action        domain.Action
}

// expected lists the work tasks the operation calls for.
func (o *oracle) expected(op domain.Operation, force bool) map[taskKey]bool {
	want := map[taskKey]bool{}
	add := func(id, s string, actions ...domain.Action) {
		for _, a := range actions {
			if s == "" || o.defines(s, a) {
				want[taskKey{id, s, a}] = true
			}
		}
	}
	// needed restates the planner's run-state rules: a start of what runs,
	// a stop of what does not run, and a restart of a dependent that does
	// not run are left out; unknown and failed states may be running.
	needed := func(id, s string, a domain.Action, restart, selected bool) bool {
		st := o.state(id, s)
		mayRun := st == "" || st == domain.RunRunning || st == domain.RunFailed
		switch {
		case restart && !selected:
			return mayRun
		case a == domain.ActionStop:
			return mayRun
		case !restart && a == domain.ActionStart:
			return st != domain.RunRunning
		}
		return true
	}
	named := map[string]bool{}
	for _, s := range o.req.Selected {
		named[s] = true
	}
	every := func(services map[string]bool, actions ...domain.Action) {
		restart := len(actions) == 2
		for _, id := range o.oldNodes {
			for s := range o.oldHost[id] {
				if !services[s] {
					continue
				}
				for _, a := range actions {
					if needed(id, s, a, restart, named[s]) {
						add(id, s, a)
					}
				}
			}
		}
	}
	reconfigure := func(services map[string]bool) {
		restart := map[string]bool{}
		if o.req.Restart {
			restart = o.closure(services, true)
		}
		for _, id := range o.kept {
			for _, s := range o.present {
				if !o.keeps(id, s) {
					continue
				}
				if services[s] {
					add(id, s, domain.ActionConfigure)
				}
				if restart[s] {
					for _, a := range []domain.Action{domain.ActionStop, domain.ActionStart} {
						if needed(id, s, a, true, named[s]) {
							add(id, s, a)
						}
					}
				}
			}
		}
	}
	setUp := []domain.Action{domain.ActionInstall, domain.ActionConfigure, domain.ActionInitialize, domain.ActionStart}
	switch op {
	case domain.OpStartServices:
		every(o.closure(o.selection(), false), domain.ActionStart)
		return want
	case domain.OpStopServices:
		every(o.closure(o.selection(), true), domain.ActionStop)
		return want
	case domain.OpRestartServices:
		every(o.closure(o.selection(), true), domain.ActionStop, domain.ActionStart)
		return want
	case domain.OpRollingRestart:
		every(o.selection(), domain.ActionStop, domain.ActionStart)
		return want
	case domain.OpReconfigure, domain.OpRepair:
		if op == domain.OpRepair && len(o.created)+len(o.deleted) > 0 {
			break // a replacement: as any layout change below
		}
		reconfigure(o.selection())
		for k := range want {
			want[taskKey{k.node, "", domain.ActionBootstrap}] = true
		}
		return want
	}
	for _, id := range o.created {
		add(id, "", domain.ActionCreate, domain.ActionConfirm, domain.ActionBootstrap)
		for s := range o.newHost[id] {
			add(id, s, setUp...)
		}
	}
	for _, id := range o.deleted {
		add(id, "", domain.ActionDelete)
		if !force && !o.unmade(id) {
			for s := range o.oldHost[id] {
				add(id, s, domain.ActionStop, domain.ActionRemove)
			}
		}
	}
	for _, id := range o.kept {
		for _, s := range o.present {
			if o.newHost[id][s] && !o.oldHost[id][s] {
				add(id, "", domain.ActionBootstrap)
				add(id, s, setUp...)
			}
			if o.loses(id, s) {
				add(id, s, domain.ActionStop, domain.ActionRemove)
			}
		}
	}
	if op == domain.OpSyncTemplate {
		reconfigure(o.selection())
		for _, id := range o.kept {
			add(id, "", domain.ActionBootstrap)
		}
		return want
	}
	affected := map[string]bool{}
	for _, s := range o.present {
		for r := range o.changed {
			if o.refers(s, r) {
				affected[s] = true
			}
		}
	}
	reconfigure(affected)
	return want
}

// chainRank is an action's place in a node's chain.
func chainRank(a domain.Action) int {
	return map[domain.Action]int{
		domain.ActionCreate: 0, domain.ActionConfirm: 1, domain.ActionBootstrap: 2, domain.ActionStop: 3,
		domain.ActionRemove: 4, domain.ActionInstall: 5, domain.ActionConfigure: 6, domain.ActionInitialize: 7,
		domain.ActionStart: 7, domain.ActionDelete: 8,
	}[a]
}

// required reports whether the rules demand that a run before b (both work
// tasks on different nodes or the same one).
func (o *oracle) required(a, b *Task) bool {
	if a.Service != "" && b.Service != "" {
		install, runtime := o.trans[installPhase], o.trans[runtimePhase]
		switch {
		case a.Action == domain.ActionInstall && b.Action == domain.ActionInstall && install[b.Service][a.Service],
			a.Action == domain.ActionRemove && b.Action == domain.ActionRemove && install[a.Service][b.Service],
			a.Action == domain.ActionStart && (b.Action == domain.ActionInitialize || b.Action == domain.ActionStart) && runtime[b.Service][a.Service],
			a.Action == domain.ActionStop && b.Action == domain.ActionStop && runtime[a.Service][b.Service]:
			return true
		}
		// Decommission before reconfiguration.
		if (a.Action == domain.ActionStop || a.Action == domain.ActionRemove) && o.loses(a.NodeID, a.Service) &&
			chainRank(b.Action) >= chainRank(domain.ActionConfigure) && o.keeps(b.NodeID, b.Service) && o.refers(b.Service, a.Service) {
			return true
		}
	}
	if a.Action == domain.ActionConfirm && b.Service != "" {
		for r := range o.newHost[a.NodeID] {
			if o.refers(b.Service, r) {
				return true
			}
		}
	}
	// A repair deletes a lost node once its replacements run.
	if o.req.Operation == domain.OpRepair && b.Action == domain.ActionDelete && slices.Contains(o.created, a.NodeID) {
		return true
	}
	// Reconfiguration before a node that hosted a referenced service leaves.
	if b.Action == domain.ActionDelete && a.Service != "" && o.keeps(a.NodeID, a.Service) {
		for r := range o.oldHost[b.NodeID] {
			if o.refers(a.Service, r) {
				return true
			}
		}
	}
	return false
}

// reachability holds, per task, the set of tasks it (transitively) waits for.
type reachability struct {
	pos   map[string]int
	words int
	anc   []uint64
}

func newReachability(t testing.TB, plan *Plan) *reachability {
	r := &reachability{pos: map[string]int{}, words: (len(plan.Tasks) + 63) / 64}
	r.anc = make([]uint64, len(plan.Tasks)*r.words)
	for i, task := range plan.Tasks {
		_, dup := r.pos[task.ID]
		require.False(t, dup, "task ID %s is used twice", task.ID)
		r.pos[task.ID] = i
		row := r.anc[i*r.words : (i+1)*r.words]
		for _, d := range task.DependsOn {
			j, ok := r.pos[d]
			require.True(t, ok, "%s depends on %s, which is not earlier in the plan", task.ID, d)
			row[j/64] |= 1 << (j % 64)
			for w, bitsOf := range r.anc[j*r.words : (j+1)*r.words] {
				row[w] |= bitsOf
			}
		}
	}
	return r
}

func (r *reachability) before(a, b string) bool {
	i, j := r.pos[a], r.pos[b]
	return r.anc[j*r.words+i/64]&(1<<(i%64)) != 0
}

// checkPlan checks every property a plan must have for req.
func checkPlan(t testing.TB, req Request, plan *Plan) {
	t.Helper()
	o := newOracle(req)
	checkGraph(t, req, plan, o, req.Operation, req.Force || req.Operation == domain.OpRepair)
	replaces := req.Operation == domain.OpRepair && len(o.created)+len(o.deleted) > 0
	switch {
	case req.Operation == domain.OpCreate || req.Operation == domain.OpExpand || replaces:
		require.NotNil(t, plan.Rollback, "a %s comes with its rollback", req.Operation)
		back := req
		back.Old, back.New, back.Operation = req.New, req.Old, domain.OpRollback
		if replaces {
			// Back to the nodes kept: a lost node is not brought back.
			back.New = nil
			for _, n := range req.New {
				if !slices.Contains(o.created, n.ID) {
					back.New = append(back.New, n)
				}
			}
		}
		checkGraph(t, back, plan.Rollback, newOracle(back), domain.OpRollback, true)
		forward := map[string]bool{}
		for _, task := range plan.Tasks {
			forward[task.ID] = true
		}
		for _, task := range plan.Rollback.Tasks {
			require.True(t, strings.HasPrefix(task.ID, RollbackPrefix), task.ID)
			require.False(t, forward[task.ID], "%s is in both the plan and its rollback", task.ID)
		}
	default:
		require.Nil(t, plan.Rollback)
	}
}

func checkGraph(t testing.TB, req Request, plan *Plan, o *oracle, op domain.Operation, force bool) {
	t.Helper()
	require.Equal(t, op, plan.Operation)
	reach := newReachability(t, plan) // also: IDs unique, plan order topological, so acyclic
	limits := req.Limits.withDefaults()
	byID := map[string]*Task{}
	dependents := plan.Dependents()
	got := map[taskKey]bool{}
	for i := range plan.Tasks {
		task := &plan.Tasks[i]
		byID[task.ID] = task
		require.LessOrEqual(t, len(task.DependsOn), limits.MaxDependsOn, "%s has too many dependencies", task.ID)
		require.LessOrEqual(t, len(dependents[task.ID]), limits.MaxDependents, "%s has too many dependents", task.ID)
		if task.IsJoin() {
			require.Equal(t, ActionJoin, task.Action)
			require.Empty(t, task.NodeID)
			require.NotEmpty(t, task.DependsOn, "join %s joins nothing", task.ID)
			require.NotEmpty(t, dependents[task.ID], "join %s holds nothing back", task.ID)
			continue
		}
		require.Equal(t, KindWork, task.Kind)
		require.Positive(t, task.MaxAttempts)
		require.Positive(t, task.Timeout)
		k := taskKey{task.NodeID, task.Service, task.Action}
		require.False(t, got[k], "%v planned twice", k)
		got[k] = true
	}
	want := o.expected(op, force)
	require.Equal(t, keys(want), keys(got), "the plan does not carry out exactly the operation's work")

	// Each node's tasks form one chain, in phase order.
	lastOnNode := map[string]*Task{}
	for i := range plan.Tasks {
		task := &plan.Tasks[i]
		if task.IsJoin() {
			continue
		}
		if prev := lastOnNode[task.NodeID]; prev != nil {
			require.True(t, reach.before(prev.ID, task.ID), "%s and %s on the same node may run at once", prev.ID, task.ID)
			require.LessOrEqual(t, chainRank(prev.Action), chainRank(task.Action), "%s runs before %s", prev.ID, task.ID)
		}
		lastOnNode[task.NodeID] = task
	}

	// Every ordering the rules demand holds, and every edge between nodes is
	// one the rules demand (seen through joins).
	work := make([]*Task, 0, len(plan.Tasks))
	for i := range plan.Tasks {
		if !plan.Tasks[i].IsJoin() {
			work = append(work, &plan.Tasks[i])
		}
	}
	if op != domain.OpRollingRestart {
		for _, a := range work {
			for _, b := range work {
				if a != b && o.required(a, b) {
					require.True(t, reach.before(a.ID, b.ID), "%s must come before %s", a.ID, b.ID)
				}
			}
		}
	}
	batchOf := rollingBatches(req, plan)
	for _, b := range work {
		for _, id := range workPredecessors(b.ID, byID) {
			a := byID[id]
			if a.NodeID == b.NodeID {
				continue // the chain
			}
			if op == domain.OpRollingRestart {
				require.Equal(t, batchOf[a.NodeID]+1, batchOf[b.NodeID], "%s -> %s does not link consecutive batches", a.ID, b.ID)
				continue
			}
			require.True(t, o.required(a, b), "no rule asks for %s before %s", a.ID, b.ID)
		}
	}
	if op == domain.OpRollingRestart {
		for _, a := range work {
			for _, b := range work {
				if batchOf[a.NodeID] < batchOf[b.NodeID] {
					require.True(t, reach.before(a.ID, b.ID), "batch of %s must finish before %s", a.ID, b.ID)
				}
			}
		}
	}

	// A node is deleted last: every other task on it comes first.
	for _, id := range o.deleted {
		del := ""
		for _, task := range work {
			if task.NodeID == id && task.Action == domain.ActionDelete {
				del = task.ID
			}
		}
		require.NotEmpty(t, del, "node %s is never deleted", id)
		for _, task := range work {
			if task.NodeID == id && task.ID != del {
				require.True(t, reach.before(task.ID, del), "%s must come before %s", task.ID, del)
			}
		}
	}
}

// rollingBatches numbers the nodes of a rolling restart by batch.
func rollingBatches(req Request, plan *Plan) map[string]int {
	size := max(req.BatchSize, 1)
	nodes := slices.Clone(req.Old)
	sort.Slice(nodes, func(i, j int) bool {
		if nodes[i].Num != nodes[j].Num {
			return nodes[i].Num < nodes[j].Num
		}
		return nodes[i].ID < nodes[j].ID
	})
	busy := map[string]bool{}
	for _, task := range plan.Tasks {
		busy[task.NodeID] = true
	}
	out := map[string]int{}
	k := 0
	for _, n := range nodes {
		if busy[n.ID] {
			out[n.ID] = k / size
			k++
		}
	}
	return out
}

// workPredecessors returns the work tasks id waits for directly or through
// joins only.
func workPredecessors(id string, byID map[string]*Task) []string {
	var out []string
	seen := map[string]bool{}
	stack := slices.Clone(byID[id].DependsOn)
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[d] {
			continue
		}
		seen[d] = true
		if byID[d].IsJoin() {
			stack = append(stack, byID[d].DependsOn...)
			continue
		}
		out = append(out, d)
	}
	return out
}

func keys(m map[taskKey]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, fmt.Sprintf("%s/%s/%s", k.node, k.service, k.action))
	}
	sort.Strings(out)
	return out
}

// checkCycleError checks that err names a real cycle of the catalog, and that
// the catalog has one.
func checkCycleError(t testing.TB, req Request, err error) {
	t.Helper()
	var ce *CycleError
	require.True(t, errors.As(err, &ce))
	o := newOracle(req)
	p := installPhase
	if ce.Phase == "runtime" {
		p = runtimePhase
	}
	require.True(t, o.hasCycle(p))
	require.GreaterOrEqual(t, len(ce.Cycle), 3, "a cycle names at least two services and repeats the first")
	require.Equal(t, ce.Cycle[0], ce.Cycle[len(ce.Cycle)-1])
	for i := 0; i+1 < len(ce.Cycle); i++ {
		require.Contains(t, o.direct[p][ce.Cycle[i]], ce.Cycle[i+1], "%s does not depend on %s", ce.Cycle[i], ce.Cycle[i+1])
	}
	require.Contains(t, err.Error(), ce.Cycle[0]+" -> ")
}
