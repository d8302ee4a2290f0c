package planner

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
)

// actionSet is what one node does to one service.
type actionSet uint8

const (
	doStop actionSet = 1 << iota
	doRemove
	doInstall
	doConfigure
	doInitialize
	doStart

	doSetUp = doInstall | doConfigure | doInitialize | doStart
	doTake  = doStop | doRemove
)

// serviceActions are the service actions a plan uses, indexed for groups.
var serviceActions = [...]domain.Action{
	domain.ActionStop, domain.ActionRemove, domain.ActionInstall,
	domain.ActionConfigure, domain.ActionInitialize, domain.ActionStart,
}

const (
	aStop = iota
	aRemove
	aInstall
	aConfigure
	aInitialize
	aStart
	numActions
)

// node is one node of either layout. Services are indexed as in the graph.
type node struct {
	id           string
	num          int
	hardwareType string
	imageType    string
	inOld        bool
	inNew        bool
	oldSvc       []bool
	newSvc       []bool
	// states are the run states the node's services were recorded in
	// (domain.Node.ServiceStates of the old layout), by service name.
	states map[string]domain.ServiceState
	// unmade: the old layout's node was never made (still PLANNED, without
	// an address: its create failed, as when a static pool had no host).
	// Nothing runs on it, so nothing is stopped or removed there.
	unmade bool
}

func (n *node) kept() bool    { return n.inOld && n.inNew }
func (n *node) created() bool { return n.inNew && !n.inOld }
func (n *node) deleted() bool { return n.inOld && !n.inNew }

// keeps reports whether s is on the node before and after.
func (n *node) keeps(s int) bool { return n.kept() && n.oldSvc[s] && n.newSvc[s] }

// work is what the plan does on one node.
type work struct {
	create, confirm, bootstrap, delete bool
	svc                                []actionSet
}

// planning holds one Build's state.
type planning struct {
	op      domain.Operation
	req     *Request
	g       *serviceGraph
	nodes   []node
	work    []work
	refs    [][]bool // refs[s][r]: s's configuration refers to r
	changed []bool   // services whose set of nodes changes
	force   bool
	skipped skips
	prefix  string // starts every task ID (RollbackPrefix for a rollback) // actions the recorded run states make needless

	graph *graph
	// Anchors, per node*services+service (-1 when absent).
	first, cfgHead, runtimeHead, tail, removalTail []int32
	groups                                         [numActions][][]int32 // groups[a][s]: every task of action a on s
	nodeHead, nodeTail, nodeConfirm, nodeDelete    []int32
}

// Build plans req. The error is a *CycleError when the services' dependencies
// form a cycle, and wraps ErrInvalidRequest when the request does not describe
// the operation.
func Build(req Request) (*Plan, error) {
	if req.Operation == domain.OpRollback {
		return nil, fmt.Errorf("%w: rollback plans come with the create or expand they undo (Plan.Rollback)", ErrInvalidRequest)
	}
	p, err := prepare(&req, req.Operation, req.Old, req.New)
	if err != nil {
		return nil, err
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	plan, err := p.plan()
	if err != nil {
		return nil, err
	}
	if req.Operation == domain.OpCreate || req.Operation == domain.OpExpand {
		// Undo: the created nodes are discarded (no stop or remove on
		// half-built nodes) and what the expand reconfigured is reconfigured
		// against the old layout again.
		rp, err := prepare(&req, domain.OpRollback, req.New, req.Old)
		if err != nil {
			return nil, err
		}
		rp.force = true
		rp.prefix = RollbackPrefix
		plan.Rollback, err = rp.plan()
		if err != nil {
			return nil, err
		}
	}
	if req.Operation == domain.OpRepair && p.replaces() {
		// Undo of a replacement: the new nodes are discarded and what read
		// the layout is reconfigured against the nodes kept. The lost
		// nodes are in neither list: nothing brings a lost machine back,
		// and a lost node the job did not delete yet is left as it is.
		var kept []domain.Node
		for _, n := range req.New {
			if slices.ContainsFunc(req.Old, func(o domain.Node) bool { return o.ID == n.ID }) {
				kept = append(kept, n)
			}
		}
		rp, err := prepare(&req, domain.OpRollback, req.New, kept)
		if err != nil {
			return nil, err
		}
		rp.force = true
		rp.prefix = RollbackPrefix
		if plan.Rollback, err = rp.plan(); err != nil {
			return nil, err
		}
	}
	return plan, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidRequest, fmt.Sprintf(format, args...))
}

// sameLayout reports whether op leaves the layout as it is.
func sameLayout(op domain.Operation) bool {
	switch op {
	case domain.OpReconfigure, domain.OpStartServices, domain.OpStopServices,
		domain.OpRestartServices, domain.OpRollingRestart:
		return true
	}
	return false
}

// prepare checks the node lists, builds the service graph and lines the nodes
// of both layouts up in (Num, ID) order.
func prepare(req *Request, op domain.Operation, oldNodes, newNodes []domain.Node) (*planning, error) {
	if (sameLayout(op) || op == domain.OpRepair) && len(newNodes) == 0 {
		newNodes = oldNodes
	}
	// Sized up front: at 10,000 nodes, growing these was most of what
	// planning allocated.
	type pair struct{ old, new *domain.Node }
	byID := make(map[string]int32, max(len(oldNodes), len(newNodes)))
	pairs := make([]pair, 0, len(oldNodes)+len(newNodes))
	present := map[string]bool{}
	for side, list := range [][]domain.Node{oldNodes, newNodes} {
		name := [...]string{"Old", "New"}[side]
		for i := range list {
			n := &list[i]
			if !domain.ValidName(n.ID) {
				return nil, invalid("%s[%d]: node ID %q must be 1 to 63 letters, digits, '_', '.' or '-'", name, i, n.ID)
			}
			at, ok := byID[n.ID]
			if !ok {
				at = int32(len(pairs))
				byID[n.ID] = at
				pairs = append(pairs, pair{})
			}
			pr := &pairs[at]
			// A node already on this side is listed twice there.
			if side == 0 && pr.old != nil || side == 1 && pr.new != nil {
				return nil, invalid("%s[%d]: node %s is listed twice", name, i, n.ID)
			}
			for k, s := range n.Services {
				if slices.Contains(n.Services[:k], s) { // service lists are short
					return nil, invalid("%s[%d]: node %s lists service %q twice", name, i, n.ID, s)
				}
				present[s] = true
			}
			if side == 0 {
				pr.old = n
			} else {
				pr.new = n
			}
		}
	}
	names := make([]string, 0, len(present))
	for s := range present {
		names = append(names, s)
	}
	sort.Strings(names)
	if len(names) > math.MaxInt16 {
		// Tasks under construction number their service in 16 bits.
		return nil, invalid("the layouts hold %d services; a plan handles at most %d", len(names), math.MaxInt16)
	}
	g, err := newServiceGraph(names, req.Services)
	if err != nil {
		return nil, err
	}
	// A repair deletes only lost machines: nothing is there to stop.
	p := &planning{op: op, req: req, g: g, force: req.Force || op == domain.OpRepair, nodes: make([]node, 0, len(pairs))}
	for k := range pairs {
		pr := &pairs[k]
		id := pr.new
		if pr.old != nil {
			id = pr.old
		}
		n := node{id: id.ID, inOld: pr.old != nil, inNew: pr.new != nil}
		if pr.old != nil && pr.new != nil &&
			(pr.old.HardwareType != pr.new.HardwareType || pr.old.ImageType != pr.new.ImageType) {
			return nil, invalid("node %s changes hardware or image type (%s/%s to %s/%s); a node cannot be rebuilt in place: shrink it away and expand instead",
				n.id, pr.old.HardwareType, pr.old.ImageType, pr.new.HardwareType, pr.new.ImageType)
		}
		if pr.old != nil {
			n.num, n.hardwareType, n.imageType = pr.old.Num, pr.old.HardwareType, pr.old.ImageType
			n.oldSvc = g.membership(pr.old.Services)
			n.states = pr.old.ServiceStates
			n.unmade = pr.old.Status == domain.NodePlanned && len(pr.old.Addresses) == 0
		} else {
			n.oldSvc = make([]bool, len(names))
		}
		if pr.new != nil {
			n.num, n.hardwareType, n.imageType = pr.new.Num, pr.new.HardwareType, pr.new.ImageType
			n.newSvc = g.membership(pr.new.Services)
		} else {
			n.newSvc = make([]bool, len(names))
		}
		p.nodes = append(p.nodes, n)
	}
	slices.SortFunc(p.nodes, func(a, b node) int {
		if a.num != b.num {
			return cmp.Compare(a.num, b.num)
		}
		return strings.Compare(a.id, b.id)
	})
	p.changed = make([]bool, len(names))
	for i := range p.nodes {
		for s := range names {
			if p.nodes[i].oldSvc[s] != p.nodes[i].newSvc[s] {
				p.changed[s] = true
			}
		}
	}
	p.refs = p.resolveRefs()
	return p, nil
}

func (g *serviceGraph) membership(services []string) []bool {
	out := make([]bool, len(g.names))
	for _, s := range services {
		out[g.index[s]] = true
	}
	return out
}

// resolveRefs turns ConfigReferences into refs[s][r], with provided names
// standing for their providers and the cluster config's references added to
// every service. Nil references mean every service refers to every service.
func (p *planning) resolveRefs() [][]bool {
	n := len(p.g.names)
	refs := make([][]bool, n)
	if p.req.ConfigReferences == nil {
		for s := range refs {
			refs[s] = make([]bool, n)
			for r := range refs[s] {
				refs[s][r] = true
			}
		}
		return refs
	}
	mark := func(row []bool, name string) {
		if i, ok := p.g.index[name]; ok {
			row[i] = true
		}
		for i, def := range p.g.defs {
			if slices.Contains(def.Dependencies.Provides, name) {
				row[i] = true
			}
		}
	}
	global := make([]bool, n)
	for _, name := range p.req.ConfigReferences[ClusterConfigKey] {
		mark(global, name)
	}
	for s, name := range p.g.names {
		refs[s] = slices.Clone(global)
		for _, r := range p.req.ConfigReferences[name] {
			mark(refs[s], r)
		}
	}
	return refs
}

// validate checks that the layouts and options fit the operation.
func (p *planning) validate() error {
	req, op := p.req, p.op
	var created, deleted, added, removed int
	for i := range p.nodes {
		n := &p.nodes[i]
		switch {
		case n.created():
			created++
		case n.deleted():
			deleted++
		default:
			for s := range p.g.names {
				if n.newSvc[s] && !n.oldSvc[s] {
					added++
				}
				if n.oldSvc[s] && !n.newSvc[s] {
					removed++
				}
			}
		}
	}
	switch op {
	case domain.OpCreate:
		if len(req.Old) > 0 || len(req.New) == 0 {
			return invalid("create needs an empty Old and the nodes to create in New")
		}
	case domain.OpDelete:
		// An empty Old is a cluster whose nodes are all gone already (a
		// delete aborted after its last node's delete task): its delete
		// has nothing to do but end it, and must not be refused.
		if len(req.New) > 0 {
			return invalid("delete needs the cluster's nodes in Old and an empty New")
		}
	case domain.OpExpand:
		if created == 0 || deleted > 0 || added+removed > 0 {
			return invalid("expand only adds nodes: New must be Old plus at least one node, with existing nodes unchanged")
		}
	case domain.OpShrink:
		if deleted == 0 || created > 0 || added+removed > 0 {
			return invalid("shrink only removes nodes: New must be Old minus at least one node, with the remaining nodes unchanged")
		}
		if deleted == len(req.Old) {
			return invalid("shrink cannot remove every node; delete the cluster instead")
		}
	case domain.OpAddServices:
		// New nodes are allowed: the solver may need them for the added
		// services (its MaxNewNodes); they are set up as in an expand.
		if deleted > 0 || removed > 0 || added+created == 0 {
			return invalid("add-services only adds services, to existing nodes or new ones: New must be Old with at least one service or node added and nothing removed")
		}
	case domain.OpRemoveServices:
		if created+deleted > 0 || added > 0 || removed == 0 {
			return invalid("remove-services only removes services from existing nodes: New must be Old with at least one service removed and none added")
		}
	case domain.OpSyncTemplate:
		if created+deleted > 0 {
			return invalid("sync-template keeps the nodes: New must have the same nodes as Old")
		}
	case domain.OpRepair:
		// Either a replacement (lost nodes out, new ones in, the nodes
		// kept unchanged) or a reconfigure of what drifted in place.
		if len(req.Old) == 0 || added+removed > 0 || (created == 0) != (deleted == 0) {
			return invalid("repair either replaces nodes (New is Old less the lost nodes plus their replacements, the others unchanged) or leaves the layout as it is")
		}
		if created > 0 && (len(req.Selected) > 0 || len(req.StopOn) > 0) {
			return invalid("a repair that replaces nodes sets up every service of the new nodes; Selected and StopOn apply to a repair in place")
		}
		for id, services := range req.StopOn {
			k := slices.IndexFunc(req.Old, func(n domain.Node) bool { return n.ID == id })
			if k < 0 {
				return invalid("StopOn: node %s is not in Old", id)
			}
			for _, name := range services {
				if !slices.Contains(req.Old[k].Services, name) {
					return invalid("StopOn: node %s does not run service %q", id, name)
				}
			}
		}
	case domain.OpReconfigure, domain.OpStartServices, domain.OpStopServices,
		domain.OpRestartServices, domain.OpRollingRestart:
		if len(req.Old) == 0 {
			return invalid("%s needs the cluster's nodes in Old", op)
		}
		if created+deleted+added+removed > 0 {
			return invalid("%s does not change the layout: leave New empty or equal to Old", op)
		}
	default:
		return invalid("unknown operation %q", op)
	}
	switch op {
	case domain.OpReconfigure, domain.OpStartServices, domain.OpStopServices,
		domain.OpRestartServices, domain.OpRollingRestart, domain.OpRepair:
		for i, s := range req.Selected {
			if _, ok := p.g.index[s]; !ok {
				return invalid("Selected[%d]: service %q is not on the cluster", i, s)
			}
		}
	default:
		if len(req.Selected) > 0 {
			return invalid("%s acts on the layout's services; Selected applies to reconfigure, start, stop, restart and rolling-restart", op)
		}
	}
	switch op {
	case domain.OpReconfigure, domain.OpExpand, domain.OpShrink, domain.OpAddServices,
		domain.OpRemoveServices, domain.OpSyncTemplate, domain.OpRepair:
	default:
		if req.Restart {
			return invalid("Restart applies to operations that reconfigure (reconfigure, expand, shrink, add-services, remove-services, sync-template), not %s", op)
		}
	}
	if len(req.StopOn) > 0 && op != domain.OpRepair {
		return invalid("StopOn applies to repair, not %s", op)
	}
	if req.Force && op != domain.OpDelete && op != domain.OpShrink {
		return invalid("Force applies to delete and shrink, not %s", op)
	}
	if req.BatchSize < 0 || (req.BatchSize > 0 && op != domain.OpRollingRestart) {
		return invalid("BatchSize must be positive and applies only to rolling-restart")
	}
	return nil
}

// selection returns Selected as a service set, or every service when empty.
func (p *planning) selection() []bool {
	out := make([]bool, len(p.g.names))
	for _, s := range p.req.Selected {
		out[p.g.index[s]] = true
	}
	if len(p.req.Selected) == 0 {
		for s := range out {
			out[s] = true
		}
	}
	return out
}

// named returns the services the request named, and no others: a selection
// left empty means every service for what an operation acts on, but names
// none of them, so needless treats them all as pulled in (a restart of
// everything restarts what runs and starts nothing someone stopped).
func (p *planning) named() []bool {
	out := make([]bool, len(p.g.names))
	for _, s := range p.req.Selected {
		out[p.g.index[s]] = true
	}
	return out
}

// assign decides what each node does.
func (p *planning) assign() {
	p.work = make([]work, len(p.nodes))
	for i := range p.work {
		p.work[i].svc = make([]actionSet, len(p.g.names))
	}
	switch p.op {
	case domain.OpStartServices:
		p.onEveryNode(p.g.closure(runtimePhase, p.selection(), false), p.named(), doStart)
		return
	case domain.OpStopServices:
		p.onEveryNode(p.g.closure(runtimePhase, p.selection(), true), p.named(), doStop)
		return
	case domain.OpRestartServices:
		p.onEveryNode(p.g.closure(runtimePhase, p.selection(), true), p.named(), doStop|doStart)
		return
	case domain.OpRollingRestart:
		// Only the selection: pulling in dependents would restart them
		// cluster-wide and defeat the batching.
		p.onEveryNode(p.selection(), p.named(), doStop|doStart)
		return
	case domain.OpReconfigure:
		p.reconfigure(p.selection())
		for i := range p.nodes {
			p.work[i].bootstrap = p.hasServiceWork(i)
		}
		return
	case domain.OpRepair:
		if !p.replaces() {
			if len(p.req.Selected) > 0 || len(p.req.StopOn) == 0 {
				p.reconfigure(p.selection())
			}
			for i := range p.nodes {
				for _, name := range p.req.StopOn[p.nodes[i].id] {
					// Only the stop: a restart of it here would start it.
					p.work[i].svc[p.g.index[name]] = doStop
				}
				p.work[i].bootstrap = p.hasServiceWork(i)
			}
			return
		}
	}
	for i := range p.nodes {
		n, w := &p.nodes[i], &p.work[i]
		switch {
		case n.created():
			w.create, w.confirm, w.bootstrap = true, true, true
			for s, on := range n.newSvc {
				if on {
					w.svc[s] = doSetUp
				}
			}
		case n.deleted():
			w.delete = true
			for s, on := range n.oldSvc {
				switch {
				case !on || p.force:
				case n.unmade:
					for _, a := range []int{aStop, aRemove} {
						if p.g.defines(s, serviceActions[a]) {
							p.skipped.add(p.g.names[s], serviceActions[a], "the node was never made (its create failed before it had an address)", n.id)
						}
					}
				default:
					w.svc[s] = doTake
				}
			}
		default:
			for s := range p.g.names {
				switch {
				case n.newSvc[s] && !n.oldSvc[s]:
					w.svc[s] = doSetUp
					w.bootstrap = true
				case n.oldSvc[s] && !n.newSvc[s]:
					w.svc[s] = doTake
				}
			}
		}
	}
	if p.op == domain.OpSyncTemplate {
		// The definitions may have changed: push them and reconfigure all.
		p.reconfigure(p.selection())
		for i := range p.nodes {
			p.work[i].bootstrap = true
		}
		return
	}
	affected := make([]bool, len(p.g.names))
	for s := range affected {
		for r, ref := range p.refs[s] {
			if ref && p.changed[r] {
				affected[s] = true
			}
		}
	}
	p.reconfigure(affected)
}

// replaces reports whether the plan makes or deletes nodes.
func (p *planning) replaces() bool {
	for i := range p.nodes {
		if p.nodes[i].created() || p.nodes[i].deleted() {
			return true
		}
	}
	return false
}

// onEveryNode gives every node hosting a service in set the actions, less
// those its recorded run state makes needless (see needless); selected are
// the services the request named, set may add what they need or what needs
// them.
func (p *planning) onEveryNode(set, selected []bool, actions actionSet) {
	for i := range p.nodes {
		for s, on := range set {
			if on && p.nodes[i].oldSvc[s] {
				p.work[i].svc[s] |= p.needless(i, s, actions, selected[s])
			}
		}
	}
}

// needless returns actions less the runtime actions that node i's recorded
// run state of service s makes needless, and notes each one it drops
// (Plan.Skipped): a start of what already runs, a stop of what does not
// run, and the restart of a service the request did not name (pulled in as
// a dependent, reconfigured by a layout change, or part of "all") when it is
// not running: restarting it would start what someone stopped. A service whose state was never recorded, or whose
// last action failed, may be running: its actions stay.
func (p *planning) needless(i, s int, actions actionSet, selected bool) actionSet {
	st := p.nodes[i].states[p.g.names[s]]
	drop := func(a int, reason string) {
		if actions&(1<<a) == 0 {
			return
		}
		actions &^= 1 << a
		if p.g.defines(s, serviceActions[a]) {
			p.skipped.add(p.g.names[s], serviceActions[a], reason, p.nodes[i].id)
		}
	}
	switch {
	case !selected && actions&doStop != 0 && actions&doStart != 0 && !st.MayRun():
		reason := fmt.Sprintf("not running (%s): a restart of what it depends on leaves it so", st.State)
		drop(aStop, reason)
		drop(aStart, reason)
	case actions&doStop != 0 && !st.MayRun():
		drop(aStop, fmt.Sprintf("not running (%s)", st.State))
	case actions == doStart && st.State == domain.RunRunning:
		drop(aStart, "already running")
	}
	return actions
}

// reconfigure configures the services in set wherever a node keeps them and,
// with Restart, stops and starts them and what depends on them at runtime.
func (p *planning) reconfigure(set []bool) {
	var restart, named []bool
	if p.req.Restart {
		restart = p.g.closure(runtimePhase, set, true)
		named = p.named()
	}
	for i := range p.nodes {
		for s := range p.g.names {
			if !p.nodes[i].keeps(s) {
				continue
			}
			if set[s] {
				p.work[i].svc[s] |= doConfigure
			}
			if restart != nil && restart[s] {
				p.work[i].svc[s] |= p.needless(i, s, doStop|doStart, named[s])
			}
		}
	}
}

// hasServiceWork reports whether node i runs any service action.
func (p *planning) hasServiceWork(i int) bool {
	for s, set := range p.work[i].svc {
		for a, action := range serviceActions {
			if set&(1<<a) != 0 && p.g.defines(s, action) {
				return true
			}
		}
	}
	return false
}

// plan builds the graph and finishes it into a Plan.
func (p *planning) plan() (*Plan, error) {
	p.assign()
	p.emitChains()
	if p.op == domain.OpRollingRestart {
		p.linkBatches()
	} else {
		p.linkDependencies()
		p.linkReferences()
	}
	if p.op == domain.OpRepair {
		// A lost node's record and machine go once its replacement runs:
		// a replacement that fails and rolls back leaves it DELETING for
		// the next repair, not a cluster short of it (or of every node).
		var made, lost []int32
		for ni := range p.nodes {
			if p.nodes[ni].created() && p.nodeTail[ni] >= 0 {
				made = append(made, p.nodeTail[ni])
			}
			if t := p.nodeDelete[ni]; t >= 0 {
				lost = append(lost, t)
			}
		}
		p.graph.groupEdge("repair:made", made, lost)
	}
	tasks, built, err := p.graph.finish(p.prefix)
	if err != nil {
		return nil, err
	}
	return &Plan{Operation: p.op, Diff: p.diff(), Tasks: tasks, Skipped: p.skipped.list(), built: built}, nil
}

// emitChains adds each node's tasks, each depending on the one before, in the
// global phase order described in the package documentation.
func (p *planning) emitChains() {
	ns, nn := len(p.g.names), len(p.nodes)
	estimate := 0
	for i := range p.work {
		w := &p.work[i]
		for _, on := range [...]bool{w.create, w.confirm, w.bootstrap, w.delete} {
			if on {
				estimate++
			}
		}
		for _, set := range w.svc {
			estimate += bits.OnesCount8(uint8(set))
		}
	}
	nodeIDs := make([]string, len(p.nodes))
	for i := range p.nodes {
		nodeIDs[i] = p.nodes[i].id
	}
	p.graph = newGraph(p.req.Limits, estimate+estimate/8, nodeIDs, p.g.names)
	anchors := make([]int32, 5*nn*ns)
	for i := range anchors {
		anchors[i] = -1
	}
	p.first, p.cfgHead, p.runtimeHead, p.tail, p.removalTail =
		anchors[:nn*ns], anchors[nn*ns:2*nn*ns], anchors[2*nn*ns:3*nn*ns], anchors[3*nn*ns:4*nn*ns], anchors[4*nn*ns:]
	nodeAnchors := make([]int32, 4*nn)
	for i := range nodeAnchors {
		nodeAnchors[i] = -1
	}
	p.nodeHead, p.nodeTail, p.nodeConfirm, p.nodeDelete =
		nodeAnchors[:nn], nodeAnchors[nn:2*nn], nodeAnchors[2*nn:3*nn], nodeAnchors[3*nn:]
	for a := range p.groups {
		p.groups[a] = make([][]int32, ns)
	}

	installOrder, runtimeOrder := p.g.order[installPhase], p.g.order[runtimePhase]
	for ni := range p.nodes {
		w := &p.work[ni]
		prev := int32(-1)
		push := func(t int32) {
			if prev >= 0 {
				p.graph.dependOn(t, prev)
			} else {
				p.nodeHead[ni] = t
			}
			prev = t
			p.nodeTail[ni] = t
		}
		nodeAction := func(a domain.Action) int32 {
			t := p.graph.add(gtask{
				node: int32(ni), service: -1, action: p.graph.actionNum(a),
				timeout: nodeActionTimeout(a), maxAttempts: domain.DefaultRetries + 1,
			})
			push(t)
			return t
		}
		serviceAction := func(s int, a int) {
			if w.svc[s]&(1<<a) == 0 {
				return
			}
			action := serviceActions[a]
			def, ok := p.g.defs[s].Actions[action]
			if !ok {
				return
			}
			t := p.graph.add(gtask{
				node: int32(ni), service: int16(s), action: p.graph.actionNum(action),
				timeout: def.TimeoutOrDefault(), maxAttempts: int32(def.RetryLimit() + 1),
			})
			push(t)
			k := ni*ns + s
			if p.first[k] < 0 {
				p.first[k] = t
			}
			if a >= aConfigure && p.cfgHead[k] < 0 {
				p.cfgHead[k] = t
			}
			if (a == aInitialize || a == aStart) && p.runtimeHead[k] < 0 {
				p.runtimeHead[k] = t
			}
			if a == aStop || a == aRemove {
				p.removalTail[k] = t
			}
			p.tail[k] = t
			p.groups[a][s] = append(p.groups[a][s], t)
		}
		if w.create {
			nodeAction(domain.ActionCreate)
		}
		if w.confirm {
			p.nodeConfirm[ni] = nodeAction(domain.ActionConfirm)
		}
		if w.bootstrap {
			nodeAction(domain.ActionBootstrap)
		}
		for k := len(runtimeOrder) - 1; k >= 0; k-- {
			serviceAction(runtimeOrder[k], aStop)
		}
		for k := len(installOrder) - 1; k >= 0; k-- {
			serviceAction(installOrder[k], aRemove)
		}
		for _, s := range installOrder {
			serviceAction(s, aInstall)
		}
		for _, s := range installOrder {
			serviceAction(s, aConfigure)
		}
		for _, s := range runtimeOrder {
			serviceAction(s, aInitialize)
			serviceAction(s, aStart)
		}
		if w.delete {
			p.nodeDelete[ni] = nodeAction(domain.ActionDelete)
		}
	}
}

// column gathers one anchor across nodes for service s, skipping absent ones
// and nodes that keep was false for.
func (p *planning) column(anchor []int32, s int, keep func(ni int) bool) []int32 {
	ns := len(p.g.names)
	var out []int32
	for ni := range p.nodes {
		if t := anchor[ni*ns+s]; t >= 0 && (keep == nil || keep(ni)) {
			out = append(out, t)
		}
	}
	return out
}

// linkDependencies adds the cross-node service edges (package documentation,
// "Semantics").
func (p *planning) linkDependencies() {
	names := p.g.names
	has := func(a int) func(int) bool {
		return func(s int) bool { return len(p.groups[a][s]) > 0 }
	}
	eff := p.g.effectiveDeps(installPhase, has(aInstall))
	for s := range names {
		for _, d := range eff[s] {
			if len(p.groups[aInstall][s]) > 0 {
				p.graph.groupEdge("install:"+names[d], p.groups[aInstall][d], p.groups[aInstall][s])
			}
		}
	}
	eff = p.g.effectiveDeps(installPhase, has(aRemove))
	for s := range names {
		for _, d := range eff[s] {
			if len(p.groups[aRemove][s]) > 0 {
				p.graph.groupEdge("remove:"+names[s], p.groups[aRemove][s], p.groups[aRemove][d])
			}
		}
	}
	eff = p.g.effectiveDeps(runtimePhase, has(aStart))
	for s := range names {
		if len(eff[s]) == 0 {
			continue
		}
		heads := p.column(p.runtimeHead, s, nil)
		for _, d := range eff[s] {
			p.graph.groupEdge("start:"+names[d], p.groups[aStart][d], heads)
		}
	}
	eff = p.g.effectiveDeps(runtimePhase, has(aStop))
	for s := range names {
		for _, d := range eff[s] {
			if len(p.groups[aStop][s]) > 0 {
				p.graph.groupEdge("stop:"+names[s], p.groups[aStop][s], p.groups[aStop][d])
			}
		}
	}
}

// linkReferences adds the edges configuration references call for (package
// documentation, "Configuration references").
func (p *planning) linkReferences() {
	names, ns := p.g.names, len(p.g.names)

	// A new node's address is known once it is confirmed.
	if p.req.ConfigReferences == nil {
		var confirms, heads []int32
		for ni := range p.nodes {
			if t := p.nodeConfirm[ni]; t >= 0 && slices.Contains(p.nodes[ni].newSvc, true) {
				confirms = append(confirms, t)
			}
			if t := p.firstServiceTask(ni); t >= 0 {
				heads = append(heads, t)
			}
		}
		p.graph.groupEdge("confirm:*", confirms, heads)
	} else {
		confirmsOf := make([][]int32, ns)
		for ni := range p.nodes {
			if t := p.nodeConfirm[ni]; t >= 0 {
				for r, on := range p.nodes[ni].newSvc {
					if on {
						confirmsOf[r] = append(confirmsOf[r], t)
					}
				}
			}
		}
		// One edge per node and referenced service: to the node's earliest
		// task of any service that refers to it; the chain covers the rest.
		for r := range names {
			if len(confirmsOf[r]) == 0 {
				continue
			}
			var heads []int32
			for ni := range p.nodes {
				head := int32(-1)
				for s := range names {
					if t := p.first[ni*ns+s]; t >= 0 && p.refs[s][r] && (head < 0 || t < head) {
						head = t
					}
				}
				if head >= 0 {
					heads = append(heads, head)
				}
			}
			p.graph.groupEdge("confirm:"+names[r], confirmsOf[r], heads)
		}
	}

	// Leaving services are stopped and removed before what refers to them is
	// reconfigured, and nodes leave only after that reconfiguration.
	removalsOf := make([][]int32, ns)
	deletesOf := make([][]int32, ns)
	for ni := range p.nodes {
		for r := range names {
			if !p.nodes[ni].oldSvc[r] || p.nodes[ni].newSvc[r] {
				continue
			}
			if t := p.removalTail[ni*ns+r]; t >= 0 {
				removalsOf[r] = append(removalsOf[r], t)
			}
			if t := p.nodeDelete[ni]; t >= 0 {
				deletesOf[r] = append(deletesOf[r], t)
			}
		}
	}
	for s := range names {
		var heads, tails []int32
		for r, ref := range p.refs[s] {
			if !ref || (len(removalsOf[r]) == 0 && len(deletesOf[r]) == 0) {
				continue
			}
			if heads == nil {
				keeps := func(ni int) bool { return p.nodes[ni].keeps(s) }
				heads = p.column(p.cfgHead, s, keeps)
				tails = p.column(p.tail, s, keeps)
			}
			p.graph.groupEdge("removed:"+names[r], removalsOf[r], heads)
			p.graph.groupEdge("reconfigured:"+names[s], tails, deletesOf[r])
		}
	}
}

// firstServiceTask returns node ni's first service task, or -1.
func (p *planning) firstServiceTask(ni int) int32 {
	ns := len(p.g.names)
	best := int32(-1)
	for s := 0; s < ns; s++ {
		if t := p.first[ni*ns+s]; t >= 0 && (best < 0 || t < best) {
			best = t
		}
	}
	return best
}

// linkBatches chains a rolling restart's batches: every node of batch b+1
// waits for every node of batch b.
func (p *planning) linkBatches() {
	size := p.req.BatchSize
	if size == 0 {
		size = 1
	}
	var prevTails []int32
	var heads, tails []int32
	batch := 0
	flush := func() {
		if len(heads) == 0 {
			return
		}
		p.graph.groupEdge("batch:"+strconv.Itoa(batch), prevTails, heads)
		prevTails, heads, tails = tails, nil, nil
		batch++
	}
	for ni := range p.nodes {
		if p.nodeHead[ni] < 0 {
			continue
		}
		heads = append(heads, p.nodeHead[ni])
		tails = append(tails, p.nodeTail[ni])
		if len(heads) == size {
			flush()
		}
	}
	flush()
}

// serviceList names the services set in a membership slice, in name order.
func (g *serviceGraph) serviceList(set []bool) []string {
	var out []string
	for s, on := range set {
		if on {
			out = append(out, g.names[s])
		}
	}
	return out
}

// joinNames formats a service list for messages.
func joinNames(names []string) string {
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ",")
}
