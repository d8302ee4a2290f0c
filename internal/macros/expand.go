package macros

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
)

// Layout is what macros are expanded against: a cluster and its current
// nodes, indexed by service in node Num order. Build it once per task (or per
// job) and expand every text of the task with it; it is read-only and safe to
// share between goroutines.
type Layout struct {
	clusterID string
	owner     string
	// byService lists, for each service, the nodes that run it by Num (then ID,
	// so the order is total even if two nodes share a Num).
	byService map[string][]*domain.Node
}

// NewLayout indexes nodes (the cluster's current nodes: the caller leaves out
// deleted ones). The nodes are not copied; do not change them while the
// layout is in use.
func NewLayout(clusterID, owner string, nodes []domain.Node) *Layout {
	sorted := make([]*domain.Node, len(nodes))
	for i := range nodes {
		sorted[i] = &nodes[i]
	}
	slices.SortFunc(sorted, func(a, b *domain.Node) int {
		if a.Num != b.Num {
			return cmp.Compare(a.Num, b.Num)
		}
		return strings.Compare(a.ID, b.ID)
	})
	l := &Layout{clusterID: clusterID, owner: owner, byService: map[string][]*domain.Node{}}
	for _, n := range sorted {
		for _, s := range n.Services {
			l.byService[s] = append(l.byService[s], n)
		}
	}
	return l
}

// Expand parses text and expands it; see Template.Expand.
func Expand(text string, l *Layout, self *domain.Node) (string, error) {
	if strings.IndexByte(text, '%') < 0 {
		return text, nil
	}
	t, err := Parse(text)
	if err != nil {
		return "", err
	}
	return t.Expand(l, self)
}

// Expand evaluates the template against the layout, self being the node the
// task runs on (nil for text that belongs to no node; a self macro is then an
// ErrIncomplete error). Errors are *Error.
func (t *Template) Expand(l *Layout, self *domain.Node) (string, error) {
	var b strings.Builder
	for _, p := range t.Parts {
		switch p := p.(type) {
		case Literal:
			b.WriteString(string(p))
		case *Macro:
			if err := p.expand(&b, l, self); err != nil {
				return "", err
			}
		}
	}
	return b.String(), nil
}

func (m *Macro) expand(b *strings.Builder, l *Layout, self *domain.Node) error {
	sep := ","
	if m.Joined {
		sep = m.Separator
	}
	first := true
	return m.each(l, self, func(v string) {
		if !first {
			b.WriteString(sep)
		}
		first = false
		if !m.Mapped {
			b.WriteString(v)
			return
		}
		// map: every '$' of the format is the element.
		f := m.Format
		for {
			i := strings.IndexByte(f, '$')
			if i < 0 {
				b.WriteString(f)
				return
			}
			b.WriteString(f[:i])
			b.WriteString(v)
			f = f[i+1:]
		}
	})
}

func (m *Macro) fail(kind error, format string, args ...any) *Error {
	return &Error{Offset: m.Offset, Macro: m.String(), Kind: kind, Reason: fmt.Sprintf(format, args...)}
}

// each calls emit with every element of the list the reference yields.
func (m *Macro) each(l *Layout, self *domain.Node, emit func(string)) error {
	r := m.Ref
	switch r.Kind {
	case ClusterID:
		emit(l.clusterID)
		return nil
	case ClusterOwner:
		emit(l.owner)
		return nil
	case HostSelf, IPSelf:
		if self == nil {
			return m.fail(ErrIncomplete, "the text is expanded for no node, so there is no self")
		}
		v, err := m.nodeValue(self)
		if err != nil {
			return err
		}
		emit(v)
		return nil
	case NumService:
		emit(strconv.Itoa(len(l.byService[r.Service])))
		return nil
	case InstanceSelf:
		if self == nil {
			return m.fail(ErrIncomplete, "the text is expanded for no node, so there is no self")
		}
		for i, n := range l.byService[r.Service] {
			if sameNode(n, self) {
				emit(strconv.Itoa(i + 1))
				return nil
			}
		}
		// Coopr's rule: the cluster config is expanded on every node, and on a
		// node without the service its instance number is empty.
		return nil
	}
	nodes := l.byService[r.Service]
	if r.Indexed {
		if r.Index >= len(nodes) {
			return m.fail(ErrOutOfRange, "index %d, but service %q runs on %s", r.Index, r.Service, countNodes(len(nodes)))
		}
		nodes = nodes[r.Index : r.Index+1]
	}
	for _, n := range nodes {
		v, err := m.nodeValue(n)
		if err != nil {
			return err
		}
		emit(v)
	}
	return nil
}

// nodeValue is the hostname or address the reference reads from one node; a
// node without it cannot be configured yet.
func (m *Macro) nodeValue(n *domain.Node) (string, error) {
	if m.Ref.Kind == HostSelf || m.Ref.Kind == HostService {
		if n.Hostname == "" {
			return "", m.fail(ErrIncomplete, "node %s has no hostname yet", nodeName(n))
		}
		return n.Hostname, nil
	}
	typ := m.Ref.Address()
	v := n.Addresses[typ]
	if v == "" {
		return "", m.fail(ErrIncomplete, "node %s has no %s address yet", nodeName(n), typ)
	}
	return v, nil
}

func sameNode(a, b *domain.Node) bool {
	if a.ID != "" || b.ID != "" {
		return a.ID == b.ID
	}
	return a.Num == b.Num
}

func nodeName(n *domain.Node) string {
	if n.ID == "" {
		return strconv.Itoa(n.Num)
	}
	return fmt.Sprintf("%d (%s)", n.Num, n.ID)
}

func countNodes(n int) string {
	switch n {
	case 0:
		return "no node"
	case 1:
		return "1 node (index 0)"
	}
	return fmt.Sprintf("%d nodes (indexes 0 to %d)", n, n-1)
}

// Services lists, sorted and without repeats, the services whose layout the
// template's macros read.
func (t *Template) Services() []string {
	var out []string
	for _, p := range t.Parts {
		if m, ok := p.(*Macro); ok && m.Ref.Service != "" {
			out = append(out, m.Ref.Service)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ServicesReferenced lists, sorted and without repeats, the services text's
// macros depend on: when the set of nodes running one of them changes, the
// text's expansion may change. The planner uses it to choose the nodes to
// reconfigure after an expand or shrink.
func ServicesReferenced(text string) ([]string, error) {
	if strings.IndexByte(text, '%') < 0 {
		return nil, nil
	}
	t, err := Parse(text)
	if err != nil {
		return nil, err
	}
	return t.Services(), nil
}
