package planner

import (
	"fmt"
	"sort"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
)

// Skip is one kind of action a plan leaves out, on how many nodes, and why.
type Skip struct {
	Service string        `json:"service"`
	Action  domain.Action `json:"action"`
	Reason  string        `json:"reason"`
	Nodes   int           `json:"nodes"`
	// NodeIDs names the first MaxSkipNodeIDs of those nodes: a skip on
	// 10,000 nodes must not make the answer grow with them.
	NodeIDs []string `json:"nodeIds"`
}

// MaxSkipNodeIDs bounds Skip.NodeIDs.
const MaxSkipNodeIDs = 10

// String reads as a sentence for tables and job messages.
func (s Skip) String() string {
	nodes := "1 node"
	if s.Nodes != 1 {
		nodes = fmt.Sprintf("%d nodes", s.Nodes)
	}
	return fmt.Sprintf("%s %s skipped on %s (%s): %s", s.Service, s.Action, nodes, strings.Join(s.NodeIDs, ", "), s.Reason)
}

type skipKey struct {
	service string
	action  domain.Action
	reason  string
}

// skips gathers the skipped actions of one plan.
type skips map[skipKey]*Skip

func (ss *skips) add(service string, action domain.Action, reason, node string) {
	if *ss == nil {
		*ss = skips{}
	}
	k := skipKey{service, action, reason}
	s := (*ss)[k]
	if s == nil {
		s = &Skip{Service: service, Action: action, Reason: reason}
		(*ss)[k] = s
	}
	s.Nodes++
	if len(s.NodeIDs) < MaxSkipNodeIDs {
		s.NodeIDs = append(s.NodeIDs, node)
	}
}

// list returns the skips in a stable order.
func (ss skips) list() []Skip {
	out := make([]Skip, 0, len(ss))
	for _, s := range ss {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Service != b.Service {
			return a.Service < b.Service
		}
		if a.Action != b.Action {
			return a.Action < b.Action
		}
		return a.Reason < b.Reason
	})
	if len(out) == 0 {
		return nil
	}
	return out
}

// SkipSummary is one sentence about every skip, for a job's message, bounded
// however many kinds of skip there are.
func SkipSummary(list []Skip) string {
	if len(list) == 0 {
		return ""
	}
	const most = 5
	parts := make([]string, 0, most)
	for i, s := range list {
		if i == most {
			parts = append(parts, fmt.Sprintf("and %d more", len(list)-most))
			break
		}
		parts = append(parts, s.String())
	}
	return "skipped as needless: " + strings.Join(parts, "; ")
}
