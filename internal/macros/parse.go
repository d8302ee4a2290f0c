package macros

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
)

// maxIndex bounds a macro index: no cluster has more nodes, and the bound keeps
// the number far from overflow.
const maxIndex = 1 << 20

// Parse parses text into a Template. The first malformed or unknown macro is
// returned as an *Error.
func Parse(text string) (*Template, error) {
	t := &Template{}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.Parts = append(t.Parts, Literal(lit.String()))
			lit.Reset()
		}
	}
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], '%')
		if j < 0 {
			lit.WriteString(text[i:])
			break
		}
		lit.WriteString(text[i : i+j])
		i += j
		if i+1 < len(text) && text[i+1] == '%' {
			lit.WriteByte('%')
			i += 2
			continue
		}
		if !hasUnpairedPercent(text, i+1) {
			// A lone percent sign that closes nothing: "50%" is text.
			lit.WriteByte('%')
			i++
			continue
		}
		p := &parser{text: text, start: i, pos: i + 1}
		m, err := p.macro()
		if err != nil {
			return nil, err
		}
		flush()
		t.Parts = append(t.Parts, m)
		i = p.pos
	}
	flush()
	return t, nil
}

// hasUnpairedPercent reports whether text[from:] holds a '%' that is not half
// of a "%%" pair.
func hasUnpairedPercent(text string, from int) bool {
	for i := from; i < len(text); i++ {
		if text[i] != '%' {
			continue
		}
		if i+1 < len(text) && text[i+1] == '%' {
			i++
			continue
		}
		return true
	}
	return false
}

// parser reads one macro, text[start] being its opening '%'.
type parser struct {
	text  string
	start int
	pos   int
}

func (p *parser) fail(kind error, format string, args ...any) *Error {
	return &Error{Offset: p.start, Macro: p.source(), Kind: kind, Reason: fmt.Sprintf(format, args...)}
}

// maxQuoted bounds the macro text quoted in an error message.
const maxQuoted = 120

// source is the failing macro's text: from its '%' to the first '%' at or
// after the point of failure, or to the end of the text.
func (p *parser) source() string {
	from := max(p.pos, p.start+1)
	end := len(p.text)
	if from < len(p.text) {
		if k := strings.IndexByte(p.text[from:], '%'); k >= 0 {
			end = from + k + 1
		}
	}
	s := p.text[p.start:end]
	if len(s) > maxQuoted {
		s = s[:maxQuoted] + "..."
	}
	return s
}

// where describes the parser's position for syntax errors.
func (p *parser) where() string {
	if p.pos >= len(p.text) {
		return "the end of the text"
	}
	return fmt.Sprintf("offset %d (%q)", p.pos, p.text[p.pos])
}

func (p *parser) macro() (*Macro, error) {
	m := &Macro{Offset: p.start}
	var err error
	if p.consume("join(") {
		m.Joined = true
		p.spaces()
		if err = p.inner(m); err != nil {
			return nil, err
		}
		if m.Separator, err = p.argument("join"); err != nil {
			return nil, err
		}
	} else if err = p.inner(m); err != nil {
		return nil, err
	}
	if p.pos >= len(p.text) || p.text[p.pos] != '%' {
		return nil, p.fail(ErrSyntax, "expected the closing '%%' at %s (write %%%% for a literal percent sign)", p.where())
	}
	p.pos++
	return m, nil
}

func (p *parser) inner(m *Macro) error {
	var err error
	if p.consume("map(") {
		m.Mapped = true
		p.spaces()
		if m.Ref, err = p.ref(); err != nil {
			return err
		}
		if m.Format, err = p.argument("map"); err != nil {
			return err
		}
		return nil
	}
	m.Ref, err = p.ref()
	return err
}

// argument reads `, 'literal' )` closing a map or join call.
func (p *parser) argument(fn string) (string, error) {
	p.spaces()
	if !p.consume(",") {
		return "", p.fail(ErrSyntax, "expected ',' after the first argument of %s at %s", fn, p.where())
	}
	p.spaces()
	if p.pos >= len(p.text) || (p.text[p.pos] != '\'' && p.text[p.pos] != '"') {
		return "", p.fail(ErrSyntax, "expected a quoted string as the second argument of %s at %s", fn, p.where())
	}
	q := p.text[p.pos]
	end := strings.IndexByte(p.text[p.pos+1:], q)
	if end < 0 {
		return "", p.fail(ErrSyntax, "the string starting at offset %d has no closing %c", p.pos, q)
	}
	s := p.text[p.pos+1 : p.pos+1+end]
	p.pos += end + 2
	p.spaces()
	if !p.consume(")") {
		return "", p.fail(ErrSyntax, "expected ')' closing %s( at %s", fn, p.where())
	}
	return s, nil
}

func (p *parser) ref() (Ref, error) {
	begin := p.pos
	for p.pos < len(p.text) && isNameByte(p.text[p.pos]) {
		p.pos++
	}
	name := p.text[begin:p.pos]
	if name == "" {
		return Ref{}, p.fail(ErrSyntax, "expected a macro name at %s (write %%%% for a literal percent sign)", p.where())
	}
	r, err := p.classify(name)
	if err != nil {
		return Ref{}, err
	}
	if p.consume("[") {
		digits := p.pos
		for p.pos < len(p.text) && p.text[p.pos] >= '0' && p.text[p.pos] <= '9' {
			p.pos++
		}
		if p.pos == digits {
			return Ref{}, p.fail(ErrSyntax, "expected an index (digits) after '[' at %s", p.where())
		}
		n, err := strconv.Atoi(p.text[digits:p.pos])
		if err != nil || n > maxIndex {
			return Ref{}, p.fail(ErrSyntax, "index %s is too large", p.text[digits:p.pos])
		}
		if !p.consume("]") {
			return Ref{}, p.fail(ErrSyntax, "expected ']' at %s", p.where())
		}
		if r.Kind != HostService && r.Kind != IPService {
			return Ref{}, p.fail(ErrSyntax, "an index applies only to host.service.S and ip.service.S, not %s", name)
		}
		r.Indexed, r.Index = true, n
	}
	return r, nil
}

// classify maps a dotted name to a reference.
func (p *parser) classify(name string) (Ref, error) {
	switch name {
	case "cluster.id":
		return Ref{Kind: ClusterID}, nil
	case "cluster.owner":
		return Ref{Kind: ClusterOwner}, nil
	case "host.self":
		return Ref{Kind: HostSelf}, nil
	case "ip.self":
		return Ref{Kind: IPSelf}, nil
	}
	for _, f := range []struct {
		prefix string
		kind   RefKind
	}{
		{"host.service.", HostService},
		{"ip.service.", IPService},
		{"num.service.", NumService},
		{"instance.self.service.", InstanceSelf},
	} {
		if s, ok := strings.CutPrefix(name, f.prefix); ok {
			return p.service(Ref{Kind: f.kind}, s)
		}
	}
	if rest, ok := strings.CutPrefix(name, "ip."); ok {
		typ, rest, _ := strings.Cut(rest, ".")
		if rest == "self" || strings.HasPrefix(rest, "service.") {
			if typ != AccessV4 && typ != BindV4 {
				return Ref{}, p.fail(ErrUnknown, "unknown address type %q in %s: use %s or %s", typ, name, AccessV4, BindV4)
			}
			if rest == "self" {
				return Ref{Kind: IPSelf, AddressType: typ}, nil
			}
			return p.service(Ref{Kind: IPService, AddressType: typ}, strings.TrimPrefix(rest, "service."))
		}
	}
	return Ref{}, p.fail(ErrUnknown, "%q is not a macro; known: cluster.id, cluster.owner, host.self, ip[.TYPE].self, host.service.S, ip[.TYPE].service.S, num.service.S, instance.self.service.S (write %%%% for a literal percent sign)", name)
}

func (p *parser) service(r Ref, name string) (Ref, error) {
	if !domain.ValidName(name) {
		return Ref{}, p.fail(ErrSyntax, "%q is not a valid service name: use 1 to 63 letters, digits, '_', '.' or '-', starting with a letter or digit", name)
	}
	r.Service = name
	return r, nil
}

func (p *parser) consume(s string) bool {
	if strings.HasPrefix(p.text[p.pos:], s) {
		p.pos += len(s)
		return true
	}
	return false
}

func (p *parser) spaces() {
	for p.pos < len(p.text) && (p.text[p.pos] == ' ' || p.text[p.pos] == '\t') {
		p.pos++
	}
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}
