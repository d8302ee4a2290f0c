package planner

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/heddle-io/heddle/internal/domain"
)

// LayoutDiff is how an operation changes the cluster's layout.
type LayoutDiff struct {
	AddedNodes   []NodeSummary `json:"addedNodes,omitempty"`
	RemovedNodes []NodeSummary `json:"removedNodes,omitempty"`
	ChangedNodes []NodeChange  `json:"changedNodes,omitempty"`
	// Services lists every service whose set of nodes changes, with its node
	// count before and after (0 before: added to the cluster; 0 after: removed).
	Services []ServiceChange `json:"services,omitempty"`
}

// NodeSummary is a node that comes or goes.
type NodeSummary struct {
	ID           string   `json:"id"`
	Num          int      `json:"num"`
	HardwareType string   `json:"hardwareType"`
	ImageType    string   `json:"imageType"`
	Services     []string `json:"services"`
}

// NodeChange is a node that stays but gains or loses services.
type NodeChange struct {
	ID              string   `json:"id"`
	Num             int      `json:"num"`
	AddedServices   []string `json:"addedServices,omitempty"`
	RemovedServices []string `json:"removedServices,omitempty"`
}

// ServiceChange is a service whose node count changes.
type ServiceChange struct {
	Service string `json:"service"`
	Before  int    `json:"before"`
	After   int    `json:"after"`
}

// IsEmpty reports whether the layout stays as it is.
func (d LayoutDiff) IsEmpty() bool {
	return len(d.AddedNodes)+len(d.RemovedNodes)+len(d.ChangedNodes)+len(d.Services) == 0
}

func (p *planning) diff() LayoutDiff {
	var d LayoutDiff
	before := make([]int, len(p.g.names))
	after := make([]int, len(p.g.names))
	var created, deleted int
	for i := range p.nodes {
		switch n := &p.nodes[i]; {
		case n.created():
			created++
		case n.deleted():
			deleted++
		}
	}
	if created > 0 {
		d.AddedNodes = make([]NodeSummary, 0, created)
	}
	if deleted > 0 {
		d.RemovedNodes = make([]NodeSummary, 0, deleted)
	}
	lists := serviceLists{g: p.g}
	for i := range p.nodes {
		n := &p.nodes[i]
		for s := range p.g.names {
			if n.oldSvc[s] {
				before[s]++
			}
			if n.newSvc[s] {
				after[s]++
			}
		}
		switch {
		case n.created():
			d.AddedNodes = append(d.AddedNodes, NodeSummary{ID: n.id, Num: n.num, HardwareType: n.hardwareType,
				ImageType: n.imageType, Services: lists.of(n.newSvc)})
		case n.deleted():
			d.RemovedNodes = append(d.RemovedNodes, NodeSummary{ID: n.id, Num: n.num, HardwareType: n.hardwareType,
				ImageType: n.imageType, Services: lists.of(n.oldSvc)})
		default:
			var added, removed []string
			for s, name := range p.g.names {
				if n.newSvc[s] && !n.oldSvc[s] {
					added = append(added, name)
				}
				if n.oldSvc[s] && !n.newSvc[s] {
					removed = append(removed, name)
				}
			}
			if len(added)+len(removed) > 0 {
				d.ChangedNodes = append(d.ChangedNodes, NodeChange{ID: n.id, Num: n.num, AddedServices: added, RemovedServices: removed})
			}
		}
	}
	for s, name := range p.g.names {
		if p.changed[s] {
			d.Services = append(d.Services, ServiceChange{Service: name, Before: before[s], After: after[s]})
		}
	}
	return d
}

// serviceLists names service sets (serviceList) and gives nodes with the
// same set the same list: a layout has a few kinds of node, and 10,000
// nodes would otherwise mean 10,000 copies of a few lists. Readers of a
// NodeSummary never change its Services.
type serviceLists struct {
	g    *serviceGraph
	seen map[uint64][]string
}

func (l *serviceLists) of(set []bool) []string {
	if len(set) > 64 {
		return l.g.serviceList(set)
	}
	var key uint64
	for s, on := range set {
		if on {
			key |= 1 << s
		}
	}
	if list, ok := l.seen[key]; ok {
		return list
	}
	if l.seen == nil {
		l.seen = map[uint64][]string{}
	}
	list := l.g.serviceList(set)
	l.seen[key] = list
	return list
}

// Preview is what a dry run shows: the layout change, the task graph and its
// stage view and, given duration estimates, the critical path. It marshals to
// JSON for the API and renders as text tables for people (WriteText).
type Preview struct {
	Operation domain.Operation `json:"operation"`
	Diff      LayoutDiff       `json:"diff"`
	Summary   Summary          `json:"summary"`
	Tasks     []Task           `json:"tasks"`
	Stages    []Stage          `json:"stages"`
	// Skipped is what the plan leaves out because the nodes' recorded run
	// states make it needless (Plan.Skipped).
	Skipped []Skip `json:"skipped,omitempty"`
	// CriticalPath is set when the preview was made with an Estimator.
	CriticalPath *PathSummary `json:"criticalPath,omitempty"`
	Rollback     *Preview     `json:"rollback,omitempty"`
	// StageSizes counts each stage's tasks, so a Bounded preview still
	// shows the whole stage view's shape.
	StageSizes []int `json:"stageSizes,omitempty"`
	// Omitted says what Bounded left out; nil when the preview is whole.
	Omitted *Omitted `json:"omitted,omitempty"`
	// Graph is the whole task graph summarised by stage, service and action
	// with the critical path marked (GroupGraph); Bounded keeps it whole,
	// as it is small at any size.
	Graph *GroupGraph `json:"graph,omitempty"`
}

// Omitted counts the entries a bounded preview leaves out of each list.
type Omitted struct {
	Tasks        int `json:"tasks,omitempty"`
	StageTasks   int `json:"stageTasks,omitempty"`
	AddedNodes   int `json:"addedNodes,omitempty"`
	RemovedNodes int `json:"removedNodes,omitempty"`
	ChangedNodes int `json:"changedNodes,omitempty"`
}

// Bounded returns the preview with each of its lists (tasks, the task ids
// of each stage, added, removed and changed nodes; the rollback's too) cut
// to at most max entries, and Omitted counting what was cut. The summary,
// the stage sizes, the services' changes and the critical path stay
// whole. A dry run of 10,000 nodes so answers in well under 1 MB.
func (pv *Preview) Bounded(max int) *Preview {
	out := *pv
	var o Omitted
	out.Tasks, o.Tasks = cut(pv.Tasks, max)
	out.Diff.AddedNodes, o.AddedNodes = cut(pv.Diff.AddedNodes, max)
	out.Diff.RemovedNodes, o.RemovedNodes = cut(pv.Diff.RemovedNodes, max)
	out.Diff.ChangedNodes, o.ChangedNodes = cut(pv.Diff.ChangedNodes, max)
	if len(pv.Stages) > 0 {
		perStage := (max + len(pv.Stages) - 1) / len(pv.Stages)
		out.Stages = make([]Stage, len(pv.Stages))
		for i, st := range pv.Stages {
			var n int
			out.Stages[i], n = cut(st, perStage)
			o.StageTasks += n
		}
	}
	if o != (Omitted{}) {
		out.Omitted = &o
	}
	if pv.Rollback != nil {
		out.Rollback = pv.Rollback.Bounded(max)
	}
	return &out
}

// cut returns at most max of list and how many it left out.
func cut[T any](list []T, max int) ([]T, int) {
	if len(list) <= max {
		return list, 0
	}
	return list[:max], len(list) - max
}

// Summary counts a plan.
type Summary struct {
	WorkTasks int `json:"workTasks"`
	Joins     int `json:"joins"`
	Edges     int `json:"edges"`
	Stages    int `json:"stages"`
}

// PathSummary is the critical path next to what strict stages would take.
type PathSummary struct {
	Length        domain.Duration `json:"length"`
	StageMakespan domain.Duration `json:"stageMakespan"`
	Tasks         []string        `json:"tasks"`
}

// NewPreview describes plan (and its rollback). est may be nil.
func NewPreview(plan *Plan, est Estimator) (*Preview, error) {
	// One index for the stage view and the critical path: at 10,000 nodes
	// (55,000 tasks) building it is most of a preview's time.
	ix, err := plan.index()
	if err != nil {
		return nil, err
	}
	at := plan.stages(ix)
	stages := plan.ids(at)
	work, joins, edges := plan.Counts()
	pv := &Preview{
		Operation: plan.Operation,
		Diff:      plan.Diff,
		Summary:   Summary{WorkTasks: work, Joins: joins, Edges: edges, Stages: len(stages)},
		Tasks:     plan.Tasks,
		Stages:    stages,
		Skipped:   plan.Skipped,
	}
	for _, st := range stages {
		pv.StageSizes = append(pv.StageSizes, len(st))
	}
	pv.Graph = plan.groupGraph(ix, at, est, nil)
	if est != nil {
		cp := plan.criticalPath(ix, est)
		pv.CriticalPath = &PathSummary{
			Length:        domain.Duration(cp.Length),
			StageMakespan: domain.Duration(plan.stageMakespan(at, est)),
			Tasks:         cp.Tasks,
		}
	}
	if plan.Rollback != nil {
		if pv.Rollback, err = NewPreview(plan.Rollback, est); err != nil {
			return nil, err
		}
	}
	return pv, nil
}

// String renders the preview as WriteText does.
func (pv *Preview) String() string {
	var b bytes.Buffer
	_ = pv.WriteText(&b) // a bytes.Buffer does not fail
	return b.String()
}

// WriteText renders the preview for a terminal: the layout change, a summary,
// one row per task, the stage view and, if any, the rollback plan.
func (pv *Preview) WriteText(w io.Writer) error {
	return pv.writeText(w, "")
}

func (pv *Preview) writeText(out io.Writer, title string) error {
	var b bytes.Buffer
	if title == "" {
		title = "plan"
	}
	fmt.Fprintf(&b, "%s: %s\n", title, pv.Operation)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	if pv.Diff.IsEmpty() {
		fmt.Fprintf(tw, "layout\tunchanged\n")
	}
	for _, n := range pv.Diff.AddedNodes {
		fmt.Fprintf(tw, "+ node\t%s\t#%d\t%s/%s\t%s\n", n.ID, n.Num, n.HardwareType, n.ImageType, joinNames(n.Services))
	}
	for _, n := range pv.Diff.RemovedNodes {
		fmt.Fprintf(tw, "- node\t%s\t#%d\t%s/%s\t%s\n", n.ID, n.Num, n.HardwareType, n.ImageType, joinNames(n.Services))
	}
	for _, n := range pv.Diff.ChangedNodes {
		var parts []string
		for _, s := range n.AddedServices {
			parts = append(parts, "+"+s)
		}
		for _, s := range n.RemovedServices {
			parts = append(parts, "-"+s)
		}
		fmt.Fprintf(tw, "~ node\t%s\t#%d\t\t%s\n", n.ID, n.Num, strings.Join(parts, " "))
	}
	for _, s := range pv.Diff.Services {
		fmt.Fprintf(tw, "~ service\t%s\t%d -> %d nodes\t\t\n", s.Service, s.Before, s.After)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "%d work tasks, %d joins, %d edges, %d stages\n",
		pv.Summary.WorkTasks, pv.Summary.Joins, pv.Summary.Edges, pv.Summary.Stages)
	for _, sk := range pv.Skipped {
		fmt.Fprintf(&b, "skipped: %s\n", sk)
	}
	if cp := pv.CriticalPath; cp != nil {
		fmt.Fprintf(&b, "critical path %s (strict stages %s): %s\n", cp.Length, cp.StageMakespan, strings.Join(cp.Tasks, " > "))
	}
	if len(pv.Tasks) > 0 {
		b.WriteString("\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "TASK\tNODE\tSERVICE\tACTION\tTIMEOUT\tATTEMPTS\tAFTER\n")
		for i := range pv.Tasks {
			t := &pv.Tasks[i]
			timeout, attempts := t.Timeout.String(), fmt.Sprint(t.MaxAttempts)
			if t.IsJoin() {
				timeout, attempts = "-", "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, dash(t.NodeID), dash(t.Service), t.Action,
				timeout, attempts, joinNames(t.DependsOn))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(pv.Stages) > 0 {
		b.WriteString("\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "STAGE\tTASKS\n")
		for i, st := range pv.Stages {
			fmt.Fprintf(tw, "%d\t%s\n", i+1, strings.Join(st, " "))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if _, err := out.Write(b.Bytes()); err != nil {
		return err
	}
	if pv.Rollback != nil {
		if _, err := io.WriteString(out, "\n"); err != nil {
			return err
		}
		return pv.Rollback.writeText(out, "rollback")
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
