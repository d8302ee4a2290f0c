package macros

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/stretchr/testify/require"
)

// The property tests draw from a seeded generator; a failure prints the seed
// and iteration, which reproduce it.
const propertyRounds = 500

var propertyServices = []string{"a", "b", "svc.c", "d-1"}

func randomLayout(r *rand.Rand) (*Layout, []domain.Node) {
	n := r.IntN(30)
	nums := r.Perm(n * 3)[:n]
	nodes := make([]domain.Node, n)
	for i := range nodes {
		var services []string
		for _, s := range propertyServices {
			if r.IntN(2) == 0 {
				services = append(services, s)
			}
		}
		nodes[i] = node(1000+nums[i], "h"+strconv.Itoa(nums[i]), services...)
	}
	return NewLayout("c", "o", nodes), nodes
}

// nodesWith is the reference the layout must agree with: the nodes running s,
// by Num, computed the slow obvious way.
func nodesWith(nodes []domain.Node, s string) []domain.Node {
	var out []domain.Node
	for _, n := range nodes {
		if slices.Contains(n.Services, s) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b domain.Node) int { return a.Num - b.Num })
	return out
}

func TestPropertyLayoutMacros(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for round := range propertyRounds {
		layout, nodes := randomLayout(r)
		for _, s := range propertyServices {
			want := nodesWith(nodes, s)
			msg := fmt.Sprintf("round %d service %s", round, s)

			got, err := Expand("%num.service."+s+"%", layout, nil)
			require.NoError(t, err, msg)
			require.Equal(t, strconv.Itoa(len(want)), got, msg)

			got, err = Expand("%join(map(ip.access_v4.service."+s+",'<$>'),'')%", layout, nil)
			require.NoError(t, err, msg)
			var b strings.Builder
			for _, n := range want {
				b.WriteString("<" + n.Addresses[AccessV4] + ">")
			}
			require.Equal(t, b.String(), got, msg)

			for i, n := range want {
				got, err = Expand(fmt.Sprintf("%%host.service.%s[%d]%%", s, i), layout, nil)
				require.NoError(t, err, msg)
				require.Equal(t, n.Hostname, got, msg)

				got, err = Expand("%instance.self.service."+s+"%", layout, &n)
				require.NoError(t, err, msg)
				require.Equal(t, strconv.Itoa(i+1), got, msg)
			}
			_, err = Expand(fmt.Sprintf("%%ip.service.%s[%d]%%", s, len(want)), layout, nil)
			require.ErrorIs(t, err, ErrOutOfRange, msg)
		}
	}
}

// randomTemplate builds a template from parts a parser can produce: literals
// and macros alternate (adjacent literals would have been merged) and quoted
// strings never hold both quote characters.
func randomTemplate(r *rand.Rand) *Template {
	const litChars = "ab %$'\"(),[]."
	text := func(chars string, max int) string {
		b := make([]byte, r.IntN(max))
		for i := range b {
			b[i] = chars[r.IntN(len(chars))]
		}
		return string(b)
	}
	quoted := func() string {
		if r.IntN(2) == 0 {
			return text("x$%,)' ", 6)
		}
		return text("x$%,)\" ", 6)
	}
	t := &Template{}
	literal := r.IntN(2) == 0
	for range r.IntN(6) {
		if literal {
			if s := text(litChars, 8); s != "" {
				t.Parts = append(t.Parts, Literal(s))
			}
		} else {
			m := &Macro{Ref: randomRef(r)}
			if r.IntN(2) == 0 {
				m.Mapped, m.Format = true, quoted()
			}
			if r.IntN(2) == 0 {
				m.Joined, m.Separator = true, quoted()
			}
			t.Parts = append(t.Parts, m)
		}
		literal = !literal
	}
	return t
}

func randomRef(r *rand.Rand) Ref {
	kinds := []RefKind{ClusterID, ClusterOwner, HostSelf, IPSelf, HostService, IPService, NumService, InstanceSelf}
	ref := Ref{Kind: kinds[r.IntN(len(kinds))]}
	switch ref.Kind {
	case HostService, IPService, NumService, InstanceSelf:
		ref.Service = propertyServices[r.IntN(len(propertyServices))]
	}
	if ref.Kind == IPSelf || ref.Kind == IPService {
		ref.AddressType = []string{"", AccessV4, BindV4}[r.IntN(3)]
	}
	if (ref.Kind == HostService || ref.Kind == IPService) && r.IntN(2) == 0 {
		ref.Indexed, ref.Index = true, r.IntN(12)
	}
	return ref
}

// withoutOffsets copies t with every macro offset zeroed: a render changes
// where macros sit but nothing else.
func withoutOffsets(t *Template) *Template {
	out := &Template{}
	for _, p := range t.Parts {
		if m, ok := p.(*Macro); ok {
			c := *m
			c.Offset = 0
			p = &c
		}
		out.Parts = append(out.Parts, p)
	}
	return out
}

func TestPropertyRenderParseRoundTrip(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for round := range propertyRounds * 4 {
		tmpl := randomTemplate(r)
		text := tmpl.String()
		parsed, err := Parse(text)
		require.NoError(t, err, "round %d: %q", round, text)
		require.Equal(t, withoutOffsets(tmpl), withoutOffsets(parsed), "round %d: %q", round, text)

		var want []string
		for _, p := range tmpl.Parts {
			if m, ok := p.(*Macro); ok && m.Ref.Service != "" {
				want = append(want, m.Ref.Service)
			}
		}
		slices.Sort(want)
		got, err := ServicesReferenced(text)
		require.NoError(t, err)
		require.Equal(t, slices.Compact(want), got, "round %d: %q", round, text)
	}
}

// randomJSON builds a document with no macros in it.
func randomJSON(r *rand.Rand, depth int) any {
	switch k := r.IntN(6); {
	case depth > 3 || k == 0:
		return []any{"s%%", 1.5, true, nil, "50%", "<&>"}[r.IntN(6)]
	case k < 3:
		m := map[string]any{}
		for range r.IntN(4) {
			m[fmt.Sprintf("k%%%d", r.IntN(9))] = randomJSON(r, depth+1)
		}
		return m
	default:
		var a []any
		for range r.IntN(4) {
			a = append(a, randomJSON(r, depth+1))
		}
		return a
	}
}

func TestPropertyExpandJSONWithoutMacros(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	layout, _ := randomLayout(r)
	for round := range propertyRounds {
		doc, err := json.MarshalIndent(randomJSON(r, 0), "", "  ")
		require.NoError(t, err)
		got, err := ExpandJSON(doc, layout, nil)
		require.NoError(t, err, "round %d: %s", round, doc)
		// The only change is "%%" becoming "%" in values; keys stay as written.
		var want, have any
		require.NoError(t, json.Unmarshal(doc, &want))
		require.NoError(t, json.Unmarshal(got, &have))
		require.Equal(t, unescapeValues(want), have, "round %d: %s", round, doc)
	}
}

func unescapeValues(v any) any {
	switch v := v.(type) {
	case string:
		return strings.ReplaceAll(v, "%%", "%")
	case map[string]any:
		for k, e := range v {
			v[k] = unescapeValues(e)
		}
	case []any:
		for i, e := range v {
			v[i] = unescapeValues(e)
		}
	}
	return v
}
