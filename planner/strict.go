package planner

import (
	"fmt"
	"strconv"
)

// StrictStages returns the plan as Coopr would run it: the same work tasks,
// in the stages Stages computes, each stage starting only when the whole
// previous stage is done. The barriers are trees of joins so that no task
// gets more than limits.MaxDependsOn dependencies or MaxDependents
// dependents. heddle does not schedule this way; the engine's benchmark runs
// both plans on the same engine to measure what the barriers cost.
func (p *Plan) StrictStages(limits Limits) (*Plan, error) {
	stages, err := p.Stages()
	if err != nil {
		return nil, err
	}
	limits = limits.withDefaults()
	byID := make(map[string]Task, len(p.Tasks))
	for _, t := range p.Tasks {
		byID[t.ID] = t
	}
	out := &Plan{Operation: p.Operation, Diff: p.Diff}
	b := barrierBuilder{out: out, fanIn: max(limits.MaxDependsOn, 2), fanOut: max(limits.MaxDependents, 2)}
	var prevRoot string
	for i, stage := range stages {
		var deps map[string]string // task -> the join it waits on
		if prevRoot != "" {
			deps = b.scatter(prevRoot, []string(stage), fmt.Sprintf("stage%d:out", i))
		}
		for _, id := range stage {
			t := byID[id]
			t.DependsOn = nil
			if d, ok := deps[id]; ok {
				t.DependsOn = []string{d}
			}
			out.Tasks = append(out.Tasks, t)
		}
		prevRoot = b.gather([]string(stage), fmt.Sprintf("stage%d:in", i+1))
	}
	// The last stage's barrier has no dependents: a sink like any other.
	return out, nil
}

type barrierBuilder struct {
	out           *Plan
	fanIn, fanOut int
	seq           int
}

func (b *barrierBuilder) join(name string, deps []string) string {
	b.seq++
	id := "join:" + name + ":" + strconv.Itoa(b.seq)
	b.out.Tasks = append(b.out.Tasks, Task{ID: id, Kind: KindJoin, Action: ActionJoin, MaxAttempts: 1, DependsOn: deps})
	return id
}

// gather returns one join that waits for every id, through a tree of joins
// with at most fanIn dependencies each.
func (b *barrierBuilder) gather(ids []string, name string) string {
	level := ids
	for {
		var next []string
		for start := 0; start < len(level); start += b.fanIn {
			end := min(start+b.fanIn, len(level))
			next = append(next, b.join(name, append([]string(nil), level[start:end]...)))
		}
		if len(next) == 1 {
			return next[0]
		}
		level = next
	}
}

// scatter says, for each target, which join it waits on so that root has at
// most fanOut dependents and so does every join in between.
func (b *barrierBuilder) scatter(root string, targets []string, name string) map[string]string {
	waitOn := make(map[string]string, len(targets))
	if len(targets) <= b.fanOut {
		for _, t := range targets {
			waitOn[t] = root
		}
		return waitOn
	}
	// Split targets into fanOut groups, each behind a join of its own that
	// waits on root; recurse while a group is still too large.
	size := (len(targets) + b.fanOut - 1) / b.fanOut
	for start := 0; start < len(targets); start += size {
		end := min(start+size, len(targets))
		hub := b.join(name, []string{root})
		for t, via := range b.scatter(hub, targets[start:end], name) {
			waitOn[t] = via
		}
	}
	return waitOn
}
