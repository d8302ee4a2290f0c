package inventory

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Host is one host of an inventory.
type Host struct {
	Name    string // the inventory's name for it
	Address string // ansible_host, or the name
	Port    int    // ansible_port; 0 when not given
	User    string // ansible_user; "" when not given
	KeyFile string // ansible_ssh_private_key_file; "" when not given
	Line    int    // where it is defined, for errors
}

// Error is a document that cannot be read, at a line.
type Error struct {
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// MaxHosts bounds what one document may expand to (ranges multiply).
const MaxHosts = 100000

// Parse reads an inventory: YAML when it is (a mapping at the top), else
// INI, which also reads a plain host list. Hosts come out in name order,
// each once, with its variables resolved (host, then its groups', then
// their parents', then all's).
func Parse(data []byte) ([]Host, error) {
	if looksLikeYAML(data) {
		return parseYAML(data)
	}
	return parseINI(data)
}

// looksLikeYAML: the first meaningful line is "---" or "name:" with
// nothing after the colon (Ansible's YAML inventories start with a group).
func looksLikeYAML(data []byte) bool {
	for _, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, ";") {
			continue
		}
		return t == "---" || strings.HasSuffix(t, ":") && !strings.ContainsAny(t, " =[")
	}
	return false
}

// vars are the variables heddle reads, as given (nil: not given).
type vars map[string]string

var known = map[string]string{
	"ansible_host": "host", "ansible_ssh_host": "host",
	"ansible_port": "port", "ansible_ssh_port": "port",
	"ansible_user": "user", "ansible_ssh_user": "user",
	"ansible_ssh_private_key_file": "key", "ansible_private_key_file": "key",
}

// set records a known variable; others are ignored.
func (v vars) set(name, value string) {
	if k, ok := known[name]; ok {
		v[k] = value
	}
}

// group is an inventory group as read.
type group struct {
	hosts    []string
	children []string
	vars     vars
	line     int
}

// resolver turns groups and host vars into hosts.
type resolver struct {
	groups   map[string]*group
	hostVars map[string]vars
	hostLine map[string]int
	order    []string
	members  int // group memberships, bounded like hosts
}

func newResolver() *resolver {
	return &resolver{groups: map[string]*group{}, hostVars: map[string]vars{}, hostLine: map[string]int{}}
}

func (r *resolver) group(name string, line int) *group {
	g, ok := r.groups[name]
	if !ok {
		g = &group{vars: vars{}, line: line}
		r.groups[name] = g
	}
	return g
}

func (r *resolver) addHost(groupName, host string, v vars, line int) error {
	if _, ok := r.hostVars[host]; !ok {
		if len(r.hostVars) >= MaxHosts {
			return &Error{Line: line, Msg: fmt.Sprintf("more than %d hosts", MaxHosts)}
		}
		r.hostVars[host] = vars{}
		r.hostLine[host] = line
		r.order = append(r.order, host)
	}
	if r.members++; r.members > 4*MaxHosts {
		return &Error{Line: line, Msg: fmt.Sprintf("more than %d group memberships", 4*MaxHosts)}
	}
	for k, val := range v {
		r.hostVars[host][k] = val
	}
	g := r.group(groupName, line)
	g.hosts = append(g.hosts, host)
	return nil
}

// resolve applies group variables (nearest group first) and builds the hosts.
func (r *resolver) resolve() ([]Host, error) {
	// parents[g] lists the groups whose children include g.
	parents := map[string][]string{}
	for name, g := range r.groups {
		for _, c := range g.children {
			if _, ok := r.groups[c]; !ok {
				return nil, &Error{Line: g.line, Msg: fmt.Sprintf("group %s names child group %q, which is not defined", name, c)}
			}
			parents[c] = append(parents[c], name)
		}
	}
	member := map[string][]string{}
	for name, g := range r.groups {
		for _, h := range g.hosts {
			member[h] = append(member[h], name)
		}
	}
	out := make([]Host, 0, len(r.order))
	for _, name := range r.order {
		v := vars{}
		// Nearest first: the host's own vars, then its groups', walking up.
		merge := func(from vars) {
			for k, val := range from {
				if _, ok := v[k]; !ok {
					v[k] = val
				}
			}
		}
		merge(r.hostVars[name])
		seen := map[string]bool{}
		level := append([]string(nil), member[name]...)
		for len(level) > 0 {
			sort.Strings(level)
			var next []string
			for _, g := range level {
				if seen[g] {
					continue
				}
				seen[g] = true
				merge(r.groups[g].vars)
				next = append(next, parents[g]...)
			}
			level = next
		}
		if all, ok := r.groups["all"]; ok && !seen["all"] {
			merge(all.vars)
		}
		h := Host{Name: name, Address: name, User: v["user"], KeyFile: v["key"], Line: r.hostLine[name]}
		if a := v["host"]; a != "" {
			h.Address = a
		}
		if p := v["port"]; p != "" {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 {
				return nil, &Error{Line: h.Line, Msg: fmt.Sprintf("host %s: ansible_port %q is not a port (1-65535)", name, p)}
			}
			h.Port = n
		}
		out = append(out, h)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// parseINI reads Ansible's INI inventory (and plain host lists).
func parseINI(data []byte) ([]Host, error) {
	r := newResolver()
	section, kind := "ungrouped", "hosts"
	for i, raw := range strings.Split(string(data), "\n") {
		line := i + 1
		t := strings.TrimSpace(strings.TrimSuffix(raw, "\r"))
		if t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, ";") {
			continue
		}
		if strings.HasPrefix(t, "[") {
			if !strings.HasSuffix(t, "]") {
				return nil, &Error{Line: line, Msg: fmt.Sprintf("section header %q has no closing ]", t)}
			}
			name := strings.TrimSpace(t[1 : len(t)-1])
			kind = "hosts"
			if base, k, ok := strings.Cut(name, ":"); ok {
				name, kind = base, k
			}
			if !validGroup(name) || kind != "hosts" && kind != "vars" && kind != "children" {
				return nil, &Error{Line: line, Msg: fmt.Sprintf("section %q is not [group], [group:vars] or [group:children]", t)}
			}
			section = name
			r.group(section, line)
			continue
		}
		words, err := splitWords(t)
		if err != nil {
			return nil, &Error{Line: line, Msg: err.Error()}
		}
		switch kind {
		case "vars":
			name, value, ok := strings.Cut(t, "=")
			if !ok || strings.TrimSpace(name) == "" {
				return nil, &Error{Line: line, Msg: fmt.Sprintf("%q in [%s:vars] is not name=value", t, section)}
			}
			value = strings.TrimSpace(value)
			if unq, err := splitWords(value); err == nil && len(unq) == 1 {
				value = unq[0]
			}
			r.groups[section].vars.set(strings.TrimSpace(name), value)
		case "children":
			if len(words) != 1 || !validGroup(words[0]) {
				return nil, &Error{Line: line, Msg: fmt.Sprintf("%q in [%s:children] is not a group name", t, section)}
			}
			g := r.groups[section]
			g.children = append(g.children, words[0])
		default:
			if err := r.iniHost(section, words, line); err != nil {
				return nil, err
			}
		}
	}
	if len(r.order) == 0 {
		return nil, &Error{Line: 1, Msg: "the inventory names no host"}
	}
	return r.resolve()
}

// iniHost reads "name [k=v ...]", where name may be [user@]host[:port] (a
// plain list) or hold a numeric range (web[01:10]).
func (r *resolver) iniHost(section string, words []string, line int) error {
	v := vars{}
	pattern := words[0]
	if user, rest, ok := strings.Cut(pattern, "@"); ok {
		if user == "" || rest == "" {
			return &Error{Line: line, Msg: fmt.Sprintf("%q is not user@host", pattern)}
		}
		v["user"], pattern = user, rest
	}
	if host, port, ok := strings.Cut(pattern, ":"); ok && !strings.Contains(port, ":") && !strings.Contains(pattern, "[") {
		v["port"], pattern = port, host
	}
	for _, w := range words[1:] {
		name, value, ok := strings.Cut(w, "=")
		if !ok || name == "" {
			return &Error{Line: line, Msg: fmt.Sprintf("%q after host %s is not name=value", w, words[0])}
		}
		v.set(name, value)
	}
	names, err := expand(pattern)
	if err != nil {
		return &Error{Line: line, Msg: err.Error()}
	}
	if len(names) > MaxHosts {
		return &Error{Line: line, Msg: fmt.Sprintf("%s expands to more than %d hosts", pattern, MaxHosts)}
	}
	for _, name := range names {
		if !validHost(name) {
			return &Error{Line: line, Msg: fmt.Sprintf("%q is not a host name", name)}
		}
		if err := r.addHost(section, name, v, line); err != nil {
			return err
		}
	}
	return nil
}

// expand turns web[01:03].example into web01.example ... web03.example
// (one numeric or letter range; a leading zero keeps the width).
func expand(pattern string) ([]string, error) {
	open := strings.IndexByte(pattern, '[')
	if open < 0 {
		return []string{pattern}, nil
	}
	end := strings.IndexByte(pattern[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("range in %q has no closing ]", pattern)
	}
	end += open
	prefix, body, suffix := pattern[:open], pattern[open+1:end], pattern[end+1:]
	if strings.ContainsAny(suffix, "[]") {
		return nil, fmt.Errorf("%q has more than one range; heddle reads one per host line", pattern)
	}
	lo, hi, ok := strings.Cut(body, ":")
	if !ok || strings.Contains(hi, ":") {
		return nil, fmt.Errorf("range [%s] in %q is not [start:end]", body, pattern)
	}
	a, errA := strconv.Atoi(lo)
	b, errB := strconv.Atoi(hi)
	if errA == nil && errB == nil && a >= 0 {
		if b < a || b-a >= MaxHosts {
			return nil, fmt.Errorf("range [%s] in %q is empty or larger than %d", body, pattern, MaxHosts)
		}
		width := 0
		if len(lo) > 1 && lo[0] == '0' {
			width = len(lo)
		}
		out := make([]string, 0, b-a+1)
		for n := a; n <= b; n++ {
			out = append(out, fmt.Sprintf("%s%0*d%s", prefix, width, n, suffix))
		}
		return out, nil
	}
	if len(lo) == 1 && len(hi) == 1 && lo[0] >= 'a' && hi[0] <= 'z' && lo[0] <= hi[0] {
		var out []string
		for c := lo[0]; c <= hi[0]; c++ {
			out = append(out, prefix+string(c)+suffix)
		}
		return out, nil
	}
	return nil, fmt.Errorf("range [%s] in %q is not numeric (01:50) nor letters (a:f)", body, pattern)
}

// splitWords splits a line on blanks, honouring single and double quotes.
func splitWords(s string) ([]string, error) {
	var (
		out   []string
		cur   bytes.Buffer
		quote byte
		in    bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		case c == '#' && !in:
			return out, nil // a comment to the end of the line
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed %c quote", quote)
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}

func validGroup(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if !(c == '_' || c == '-' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func validHost(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for _, c := range name {
		if !(c == '_' || c == '-' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// parseYAML reads Ansible's YAML inventory: groups (all at the top) with
// hosts, vars and children.
func parseYAML(data []byte) ([]Host, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlError(err)
	}
	if len(doc.Content) == 0 {
		return nil, &Error{Line: 1, Msg: "the inventory is empty"}
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, &Error{Line: top.Line, Msg: "the top of a YAML inventory is a mapping of groups (all: {hosts: ..., children: ...})"}
	}
	r := newResolver()
	for i := 0; i+1 < len(top.Content); i += 2 {
		if err := r.yamlGroup(top.Content[i], top.Content[i+1], 0); err != nil {
			return nil, err
		}
	}
	if len(r.order) == 0 {
		return nil, &Error{Line: top.Line, Msg: "the inventory names no host"}
	}
	return r.resolve()
}

// maxDepth bounds group nesting (a document could nest without end).
const maxDepth = 32

func (r *resolver) yamlGroup(key, body *yaml.Node, depth int) error {
	if depth > maxDepth {
		return &Error{Line: key.Line, Msg: fmt.Sprintf("groups nest deeper than %d", maxDepth)}
	}
	name := key.Value
	if key.Kind != yaml.ScalarNode || !validGroup(name) {
		return &Error{Line: key.Line, Msg: fmt.Sprintf("%q is not a group name", name)}
	}
	g := r.group(name, key.Line)
	if isNull(body) {
		return nil
	}
	if body.Kind != yaml.MappingNode {
		return &Error{Line: body.Line, Msg: fmt.Sprintf("group %s is not a mapping with hosts, vars or children", name)}
	}
	for i := 0; i+1 < len(body.Content); i += 2 {
		k, v := body.Content[i], body.Content[i+1]
		switch k.Value {
		case "hosts":
			if isNull(v) {
				continue
			}
			if v.Kind != yaml.MappingNode {
				return &Error{Line: v.Line, Msg: fmt.Sprintf("hosts of group %s is not a mapping of host names", name)}
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				hk, hv := v.Content[j], v.Content[j+1]
				hvars, err := yamlVars(hv, "host "+hk.Value)
				if err != nil {
					return err
				}
				names, err := expand(hk.Value)
				if err != nil {
					return &Error{Line: hk.Line, Msg: err.Error()}
				}
				for _, n := range names {
					if hk.Kind != yaml.ScalarNode || !validHost(n) {
						return &Error{Line: hk.Line, Msg: fmt.Sprintf("%q is not a host name", n)}
					}
					if err := r.addHost(name, n, hvars, hk.Line); err != nil {
						return err
					}
				}
			}
		case "vars":
			vs, err := yamlVars(v, "group "+name)
			if err != nil {
				return err
			}
			for kk, vv := range vs {
				g.vars[kk] = vv
			}
		case "children":
			if isNull(v) {
				continue
			}
			if v.Kind != yaml.MappingNode {
				return &Error{Line: v.Line, Msg: fmt.Sprintf("children of group %s is not a mapping of groups", name)}
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				g.children = append(g.children, v.Content[j].Value)
				if err := r.yamlGroup(v.Content[j], v.Content[j+1], depth+1); err != nil {
					return err
				}
			}
		default:
			return &Error{Line: k.Line, Msg: fmt.Sprintf("group %s has %q; a group has hosts, vars and children", name, k.Value)}
		}
	}
	return nil
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// yamlVars reads a mapping of variables; values heddle reads must be scalars.
func yamlVars(n *yaml.Node, what string) (vars, error) {
	v := vars{}
	if isNull(n) {
		return v, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, &Error{Line: n.Line, Msg: fmt.Sprintf("the variables of %s are not a mapping", what)}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if _, ok := known[k.Value]; !ok {
			continue
		}
		if val.Kind != yaml.ScalarNode {
			return nil, &Error{Line: val.Line, Msg: fmt.Sprintf("%s of %s is not a single value", k.Value, what)}
		}
		v.set(k.Value, val.Value)
	}
	return v, nil
}

// yamlError keeps the line of a YAML syntax error.
func yamlError(err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, tail, ok := strings.Cut(rest, ":"); ok {
			if n, err := strconv.Atoi(num); err == nil {
				return &Error{Line: n, Msg: strings.TrimSpace(tail)}
			}
		}
	}
	return &Error{Line: 1, Msg: msg}
}
