package macros

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/stretchr/testify/require"
)

// fixture is a five-node cluster, given out of Num order so that tests see
// the layout sort by Num.
type fixture struct {
	layout *Layout
	nodes  []domain.Node
}

func node(num int, host string, services ...string) domain.Node {
	last := num % 1000
	return domain.Node{
		ID:         fmt.Sprintf("n%d", num),
		Num:        num,
		Hostname:   host,
		Addresses:  map[string]string{AccessV4: fmt.Sprintf("54.0.0.%d", last), BindV4: fmt.Sprintf("10.0.0.%d", last)},
		NodeLayout: domain.NodeLayout{Services: services},
	}
}

func setup(t *testing.T) fixture {
	t.Helper()
	nodes := []domain.Node{
		node(1003, "zk3", "zookeeper", "hbase-regionserver"),
		node(1000, "master", "namenode", "hbase-master"),
		node(1001, "zk1", "zookeeper", "hbase-regionserver"),
		node(1002, "zk2", "zookeeper"),
		node(1004, "edge"),
	}
	return fixture{layout: NewLayout("c-42", "alice", nodes), nodes: nodes}
}

// self returns a copy of the node with that Num, as the engine would load it.
func (f fixture) self(num int) *domain.Node {
	for _, n := range f.nodes {
		if n.Num == num {
			return &n
		}
	}
	panic("no node")
}

func TestExpand(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tests := []struct {
		text string
		self int
		want string
	}{
		{"plain text", 1001, "plain text"},
		{"", 1001, ""},
		{"%cluster.id%", 1001, "c-42"},
		{"owner=%cluster.owner%", 1001, "owner=alice"},
		{"%host.self%", 1002, "zk2"},
		{"%ip.self%", 1002, "10.0.0.2"},
		{"%ip.bind_v4.self%", 1002, "10.0.0.2"},
		{"%ip.access_v4.self%", 1002, "54.0.0.2"},
		{"%host.service.zookeeper%", 1000, "zk1,zk2,zk3"},
		{"%host.service.zookeeper[0]%", 1000, "zk1"},
		{"%host.service.zookeeper[2]%", 1000, "zk3"},
		{"%ip.service.zookeeper%", 1000, "10.0.0.1,10.0.0.2,10.0.0.3"},
		{"%ip.bind_v4.service.zookeeper[1]%", 1000, "10.0.0.2"},
		{"%ip.access_v4.service.zookeeper%", 1000, "54.0.0.1,54.0.0.2,54.0.0.3"},
		{"%ip.service.hbase-master[0]%:60000", 1004, "10.0.0.0:60000"},
		{"%num.service.zookeeper%", 1004, "3"},
		{"%num.service.absent%", 1004, "0"},
		{"%host.service.absent%", 1004, ""},
		{"%instance.self.service.zookeeper%", 1001, "1"},
		{"%instance.self.service.zookeeper%", 1003, "3"},
		{"%instance.self.service.zookeeper%", 1004, ""},
		{"%join(map(host.service.zookeeper,'$:2181'),',')%/hbase", 1000, "zk1:2181,zk2:2181,zk3:2181/hbase"},
		{"%join(map(host.service.zookeeper, '$:2181'), ',')%", 1000, "zk1:2181,zk2:2181,zk3:2181"},
		{`%join(map(ip.service.zookeeper,"server.$=$:2888"),";")%`, 1000, "server.10.0.0.1=10.0.0.1:2888;server.10.0.0.2=10.0.0.2:2888;server.10.0.0.3=10.0.0.3:2888"},
		{"%join(host.service.zookeeper,' ')%", 1000, "zk1 zk2 zk3"},
		{"%join(ip.access_v4.service.hbase-regionserver,'')%", 1000, "54.0.0.154.0.0.3"},
		{"%map(host.service.zookeeper,'$:2181')%", 1000, "zk1:2181,zk2:2181,zk3:2181"},
		{"%join(host.service.zookeeper,'%')%", 1000, "zk1%zk2%zk3"},
		{"%join(map(host.service.absent,'$:1'),',')%", 1000, ""},
		{"100%% sure, %%host.self%%", 1000, "100% sure, %host.self%"},
		{"50% off", 1000, "50% off"},
		{"50% off, 10%% more", 1000, "50% off, 10% more"},
		{"%%%host.self%%%", 1000, "%master%"},
		{"%host.self%%host.self%", 1000, "mastermaster"},
		{"ünïcode %host.self% ✓", 1000, "ünïcode master ✓"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			t.Parallel()
			got, err := Expand(tt.text, f.layout, f.self(tt.self))
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestExpandErrors(t *testing.T) {
	t.Parallel()
	f := setup(t)
	noHost := node(1005, "", "zookeeper")
	noAddr := node(1006, "h6", "kafka")
	noAddr.Addresses = map[string]string{AccessV4: "54.0.0.6"}
	incomplete := NewLayout("c", "o", []domain.Node{noHost, noAddr})
	tests := []struct {
		name   string
		text   string
		layout *Layout
		self   *domain.Node
		kind   error
		offset int
		macro  string
		reason string
	}{
		{"unknown name", "x=%host.servce.zk%", f.layout, nil, ErrUnknown, 2, "%host.servce.zk%", `"host.servce.zk" is not a macro`},
		{"docs-only form", "%host.self.service.zk%", f.layout, nil, ErrUnknown, 0, "%host.self.service.zk%", "is not a macro"},
		{"unknown address type", "%ip.public.service.zk%", f.layout, nil, ErrUnknown, 0, "%ip.public.service.zk%", `unknown address type "public"`},
		{"index too far", "a %host.service.zookeeper[3]% b", f.layout, nil, ErrOutOfRange, 2, "%host.service.zookeeper[3]%", `index 3, but service "zookeeper" runs on 3 nodes (indexes 0 to 2)`},
		{"index on no node", "%ip.service.absent[0]%", f.layout, nil, ErrOutOfRange, 0, "%ip.service.absent[0]%", "runs on no node"},
		{"index on one node", "%ip.service.namenode[1]%", f.layout, nil, ErrOutOfRange, 0, "%ip.service.namenode[1]%", "1 node (index 0)"},
		{"index inside join", "%join(map(host.service.zookeeper[9],'$'),',')%", f.layout, nil, ErrOutOfRange, 0, "%join(map(host.service.zookeeper[9],'$'),',')%", "index 9"},
		{"empty macro", "a %% b % c %", f.layout, nil, ErrSyntax, 7, "% c %", "expected a macro name"},
		{"stray percent before macro", "50% of %host.self%", f.layout, nil, ErrSyntax, 2, "% of %", "expected a macro name at offset 3 (' ') (write %% for a literal percent sign)"},
		{"index on scalar", "%num.service.zk[0]%", f.layout, nil, ErrSyntax, 0, "%num.service.zk[0]%", "an index applies only to"},
		{"empty index", "%host.service.zk[]%", f.layout, nil, ErrSyntax, 0, "%host.service.zk[]%", "expected an index"},
		{"letters in index", "%host.service.zk[a]%", f.layout, nil, ErrSyntax, 0, "%host.service.zk[a]%", "expected an index"},
		{"huge index", "%host.service.zk[99999999999999999999]%", f.layout, nil, ErrSyntax, 0, "%host.service.zk[99999999999999999999]%", "too large"},
		{"unclosed bracket", "%host.service.zk[1%", f.layout, nil, ErrSyntax, 0, "%host.service.zk[1%", "expected ']'"},
		{"bad service name", "%host.service.-zk%", f.layout, nil, ErrSyntax, 0, "%host.service.-zk%", "not a valid service name"},
		{"join without separator", "%join(host.service.zk)%", f.layout, nil, ErrSyntax, 0, "%join(host.service.zk)%", "expected ',' after the first argument of join"},
		{"unquoted separator", "%join(host.service.zk,;)%", f.layout, nil, ErrSyntax, 0, "%join(host.service.zk,;)%", "expected a quoted string"},
		{"unterminated string", "%join(host.service.zk,';)%", f.layout, nil, ErrSyntax, 0, "%join(host.service.zk,';)%", "no closing '"},
		{"unclosed join", "%join(host.service.zk,';'%", f.layout, nil, ErrSyntax, 0, "%join(host.service.zk,';'%", "expected ')' closing join("},
		{"unclosed macro", "%join(host.service.zk,'%')", f.layout, nil, ErrSyntax, 0, "%join(host.service.zk,'%')", "expected the closing '%'"},
		{"space in macro", "%host.self %", f.layout, nil, ErrSyntax, 0, "%host.self %", "expected the closing '%'"},
		{"host.self without self", "%host.self%", f.layout, nil, ErrIncomplete, 0, "%host.self%", "no self"},
		{"instance without self", "%instance.self.service.zookeeper%", f.layout, nil, ErrIncomplete, 0, "%instance.self.service.zookeeper%", "no self"},
		{"missing hostname", "%host.service.zookeeper%", incomplete, nil, ErrIncomplete, 0, "%host.service.zookeeper%", "node 1005 (n1005) has no hostname yet"},
		{"missing address", "%ip.service.kafka%", incomplete, nil, ErrIncomplete, 0, "%ip.service.kafka%", "node 1006 (n1006) has no bind_v4 address yet"},
		{"missing self address", "%ip.bind_v4.self%", incomplete, &noAddr, ErrIncomplete, 0, "%ip.bind_v4.self%", "has no bind_v4 address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Expand(tt.text, tt.layout, tt.self)
			require.ErrorIs(t, err, tt.kind)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tt.offset, e.Offset)
			require.Equal(t, tt.macro, e.Macro)
			require.Contains(t, e.Reason, tt.reason)
			require.Contains(t, err.Error(), fmt.Sprintf("%q at offset %d", tt.macro, tt.offset))
		})
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want []Part
	}{
		{"", nil},
		{"a%%b", []Part{Literal("a%b")}},
		{"x %cluster.id% y", []Part{Literal("x "), &Macro{Offset: 2, Ref: Ref{Kind: ClusterID}}, Literal(" y")}},
		{"%ip.self%", []Part{&Macro{Ref: Ref{Kind: IPSelf}}}},
		{"%ip.access_v4.self%", []Part{&Macro{Ref: Ref{Kind: IPSelf, AddressType: AccessV4}}}},
		{"%host.service.my.svc[12]%", []Part{&Macro{Ref: Ref{Kind: HostService, Service: "my.svc", Indexed: true, Index: 12}}}},
		{"%ip.service.self%", []Part{&Macro{Ref: Ref{Kind: IPService, Service: "self"}}}},
		{"%instance.self.service.zk%", []Part{&Macro{Ref: Ref{Kind: InstanceSelf, Service: "zk"}}}},
		{"%join(map(ip.bind_v4.service.zk,'$:2181'),\"'\")%", []Part{&Macro{
			Ref:    Ref{Kind: IPService, Service: "zk", AddressType: BindV4},
			Mapped: true, Format: "$:2181", Joined: true, Separator: "'",
		}}},
		{"%join( host.service.zk , '' )%", []Part{&Macro{Ref: Ref{Kind: HostService, Service: "zk"}, Joined: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.text)
			require.NoError(t, err)
			require.Equal(t, tt.want, got.Parts)
		})
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	tests := []struct{ text, want string }{
		{"50% off", "50%% off"},
		{"%join( map( host.service.zk , \"$:1\" ) , ',' )%", "%join(map(host.service.zk,'$:1'),',')%"},
		{"%join(host.service.zk,\"'\")%", "%join(host.service.zk,\"'\")%"},
		{"%ip.service.zk[0]%%%", "%ip.service.zk[0]%%%"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			t.Parallel()
			tmpl, err := Parse(tt.text)
			require.NoError(t, err)
			require.Equal(t, tt.want, tmpl.String())
		})
	}
}

func TestServicesReferenced(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want []string
	}{
		{"no macros", nil},
		{"%cluster.id% %host.self% %ip.self%", nil},
		{"%host.service.zk% %ip.service.kafka[0]% %num.service.zk%", []string{"kafka", "zk"}},
		{"%join(map(ip.access_v4.service.b,'$'),',')% %instance.self.service.a%", []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			t.Parallel()
			got, err := ServicesReferenced(tt.text)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	_, err := ServicesReferenced("%host.services.zk%")
	require.ErrorIs(t, err, ErrUnknown)
}

func TestExpandJSON(t *testing.T) {
	t.Parallel()
	f := setup(t)
	doc := json.RawMessage(`{
		"%host.self%": "key is not expanded",
		"hbase": {"zookeeper.quorum": "%join(host.service.zookeeper,',')%", "port": 2181, "ratio": 1.50, "big": 12345678901234567890},
		"servers": ["%ip.service.zookeeper[0]%", ["%instance.self.service.zookeeper%", true, null]],
		"html": "<a&b>", "escaped": "tab\there \u00e9",
		"z": "last"
	}`)
	got, err := ExpandJSON(doc, f.layout, f.self(1002))
	require.NoError(t, err)
	require.Equal(t, `{"%host.self%":"key is not expanded","hbase":{"zookeeper.quorum":"zk1,zk2,zk3","port":2181,"ratio":1.50,"big":12345678901234567890},`+
		`"servers":["10.0.0.1",["2",true,null]],"html":"<a&b>","escaped":"tab\there é","z":"last"}`, string(got))
	require.True(t, json.Valid(got))

	services, err := ServicesReferencedJSON(doc)
	require.NoError(t, err)
	require.Equal(t, []string{"zookeeper"}, services)
	require.NoError(t, ValidateJSON(doc))

	for _, scalar := range []string{`"%cluster.id%"`, `7`, `"x"`} {
		got, err := ExpandJSON(json.RawMessage(scalar), f.layout, nil)
		require.NoError(t, err)
		require.Equal(t, strings.ReplaceAll(scalar, "%cluster.id%", "c-42"), string(got))
	}
	for _, empty := range []string{``, ` `, `null`} {
		got, err := ExpandJSON(json.RawMessage(empty), f.layout, nil)
		require.NoError(t, err)
		require.Equal(t, empty, string(got))
	}
}

func TestExpandJSONErrors(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tests := []struct {
		doc  string
		kind error
		path string
	}{
		{`{"a":{"b":["ok","%host.service.zookeeper[7]%"]}}`, ErrOutOfRange, "a.b[1]"},
		{`[1,[2,{"x":"%nope%"}]]`, ErrUnknown, "[1][1].x"},
		{`{"odd key":{"k":"%host.service%"}}`, ErrUnknown, `["odd key"].k`},
	}
	for _, tt := range tests {
		t.Run(tt.doc, func(t *testing.T) {
			t.Parallel()
			_, err := ExpandJSON(json.RawMessage(tt.doc), f.layout, nil)
			require.ErrorIs(t, err, tt.kind)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tt.path, e.Path)
			require.True(t, strings.HasPrefix(err.Error(), tt.path+": macro "), err.Error())
		})
	}
	for _, bad := range []string{`{"a":`, `{"a":1}x`, `[1,2`, `{"a" 1}`, `"unterminated`, `{"a":1}{}`} {
		_, err := ExpandJSON(json.RawMessage(bad), f.layout, nil)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "invalid JSON document", bad)
	}

	err := ValidateJSON(json.RawMessage(`{"a":"%x%","b":["%host.service.zk%","%y%"]}`))
	var all interface{ Unwrap() []error }
	require.ErrorAs(t, err, &all)
	require.Len(t, all.Unwrap(), 2)
	require.Contains(t, err.Error(), "a: macro \"%x%\"")
	require.Contains(t, err.Error(), "b[1]: macro \"%y%\"")
}

func TestLayoutOrdersByNumThenID(t *testing.T) {
	t.Parallel()
	a, b, c := node(7, "a", "s"), node(7, "b", "s"), node(3, "c", "s")
	a.ID, b.ID = "z", "y"
	got, err := Expand("%host.service.s%", NewLayout("c", "o", []domain.Node{a, b, c}), nil)
	require.NoError(t, err)
	require.Equal(t, "c,b,a", got)
}

func TestErrorsAreDistinct(t *testing.T) {
	t.Parallel()
	kinds := []error{ErrSyntax, ErrUnknown, ErrOutOfRange, ErrIncomplete}
	for i, a := range kinds {
		for j, b := range kinds {
			require.Equal(t, i == j, errors.Is(a, b))
		}
	}
}
