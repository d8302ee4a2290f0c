package macros

import (
	"strconv"
	"strings"
)

// Template is a parsed text: literal runs and macros in order. Adjacent
// literal text is always merged into one Literal, so two parses of equivalent
// text yield equal templates.
type Template struct {
	Parts []Part
}

// Part is a Literal or a *Macro.
type Part interface{ isPart() }

// Literal is plain text, with "%%" already turned into "%".
type Literal string

// Macro is one %...% form.
type Macro struct {
	// Offset is the byte offset of the opening '%' in the parsed text; errors
	// report it so a person can find the macro in a long config value.
	Offset int
	Ref    Ref
	// Mapped is set by map(ref, Format): each element's '$' is replaced.
	Mapped bool
	Format string
	// Joined is set by join(..., Separator); without it a list is joined by ",".
	Joined    bool
	Separator string
}

func (Literal) isPart() {}
func (*Macro) isPart()  {}

// RefKind says what a reference names.
type RefKind int

const (
	ClusterID    RefKind = iota + 1 // cluster.id
	ClusterOwner                    // cluster.owner
	HostSelf                        // host.self
	IPSelf                          // ip[.TYPE].self
	HostService                     // host.service.S[i]
	IPService                       // ip[.TYPE].service.S[i]
	NumService                      // num.service.S
	InstanceSelf                    // instance.self.service.S
)

// Address types a node may have (domain.Node.Addresses keys).
const (
	AccessV4 = "access_v4"
	BindV4   = "bind_v4"
	// DefaultAddressType is used by ip.self and ip.service.S, as in Coopr.
	DefaultAddressType = BindV4
)

// Ref is the thing a macro names.
type Ref struct {
	Kind    RefKind
	Service string // HostService, IPService, NumService, InstanceSelf
	// AddressType is the type written in the macro (IPSelf, IPService), empty
	// when omitted; Address() gives the effective one.
	AddressType string
	Indexed     bool // HostService, IPService only
	Index       int
}

// Address is the address type an IP reference reads.
func (r Ref) Address() string {
	if r.AddressType == "" {
		return DefaultAddressType
	}
	return r.AddressType
}

// String renders a template back to text that parses to an equal template
// (offsets aside): literals escape '%' as "%%", macros use the canonical form.
func (t *Template) String() string {
	var b strings.Builder
	for _, p := range t.Parts {
		switch p := p.(type) {
		case Literal:
			b.WriteString(strings.ReplaceAll(string(p), "%", "%%"))
		case *Macro:
			b.WriteString(p.String())
		}
	}
	return b.String()
}

// String renders the macro with its percent signs.
func (m *Macro) String() string {
	inner := m.Ref.String()
	if m.Mapped {
		inner = "map(" + inner + "," + quote(m.Format) + ")"
	}
	if m.Joined {
		inner = "join(" + inner + "," + quote(m.Separator) + ")"
	}
	return "%" + inner + "%"
}

// String renders the reference as written in a macro.
func (r Ref) String() string {
	ip := "ip."
	if r.AddressType != "" {
		ip += r.AddressType + "."
	}
	var s string
	switch r.Kind {
	case ClusterID:
		s = "cluster.id"
	case ClusterOwner:
		s = "cluster.owner"
	case HostSelf:
		s = "host.self"
	case IPSelf:
		s = ip + "self"
	case HostService:
		s = "host.service." + r.Service
	case IPService:
		s = ip + "service." + r.Service
	case NumService:
		s = "num.service." + r.Service
	case InstanceSelf:
		s = "instance.self.service." + r.Service
	}
	if r.Indexed {
		s += "[" + strconv.Itoa(r.Index) + "]"
	}
	return s
}

// quote picks the quote character the literal does not contain; a parsed
// literal cannot contain both, since it has no escapes.
func quote(s string) string {
	if strings.ContainsRune(s, '\'') {
		return `"` + s + `"`
	}
	return "'" + s + "'"
}
