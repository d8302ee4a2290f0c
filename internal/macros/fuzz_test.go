package macros

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/stretchr/testify/require"
)

var fuzzSeeds = []string{
	"", "plain", "50% off", "%%", "%%%", "%cluster.id%", "%host.self%%ip.self%",
	"%join(map(host.service.zookeeper,'$:2181'),',')%/hbase",
	`%join( map( ip.access_v4.service.a , "x'$" ) , '"' )%`,
	"%host.service.zookeeper[2]%", "%host.service.zookeeper[9]%", "%num.service.x[1]%",
	"%instance.self.service.zookeeper%", "%ip.public.self%", "%join(host.service.a,'%')%",
	"%join(host.service.a,'%')", "%host.service.a[", "% %", "a%b%c",
	"date +%s%N", "date +%%s%%N", "printf '%d%%\\n' 50",
}

func checkError(t *testing.T, text string, err error) {
	t.Helper()
	var e *Error
	require.ErrorAs(t, err, &e)
	require.True(t, errors.Is(err, ErrSyntax) || errors.Is(err, ErrUnknown) || errors.Is(err, ErrOutOfRange) || errors.Is(err, ErrIncomplete), err.Error())
	require.GreaterOrEqual(t, e.Offset, 0)
	require.Less(t, e.Offset, len(text))
	require.Equal(t, byte('%'), text[e.Offset])
	require.NotEmpty(t, e.Reason)
}

func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		tmpl, err := Parse(text)
		if err != nil {
			checkError(t, text, err)
			e := err.(*Error)
			require.True(t, strings.HasPrefix(text[e.Offset:], strings.TrimSuffix(e.Macro, "...")))
			return
		}
		if !strings.Contains(text, "%") {
			require.Equal(t, text, tmpl.String())
		}
		rendered := tmpl.String()
		again, err := Parse(rendered)
		require.NoError(t, err, "render of %q is %q", text, rendered)
		require.Equal(t, withoutOffsets(tmpl), withoutOffsets(again))
		require.Equal(t, rendered, again.String())
	})
}

func FuzzExpand(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, 1001)
	}
	nodes := []domain.Node{
		node(1000, "master", "namenode"),
		node(1001, "zk1", "zookeeper", "a"),
		node(1002, "zk2", "zookeeper"),
		node(1003, "", "a"),
	}
	layout := NewLayout("c-1", "alice", nodes)
	f.Fuzz(func(t *testing.T, text string, selfNum int) {
		var self *domain.Node
		for i := range nodes {
			if nodes[i].Num == selfNum {
				self = &nodes[i]
			}
		}
		got, err := Expand(text, layout, self)
		if err != nil {
			checkError(t, text, err)
			return
		}
		if !strings.Contains(text, "%") {
			require.Equal(t, text, got)
		}
		// A text that expands must have parsed, and its services are known.
		_, err = ServicesReferenced(text)
		require.NoError(t, err)
	})
}

func FuzzExpandJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `null`, `"%cluster.id%"`, `{"a":["%host.service.zookeeper%",1,{"b":"%num.service.a%"}]}`, `{"a":1}x`, `[1,`} {
		f.Add(s)
	}
	layout := NewLayout("c-1", "alice", []domain.Node{node(1001, "zk1", "zookeeper")})
	f.Fuzz(func(t *testing.T, doc string) {
		got, err := ExpandJSON(json.RawMessage(doc), layout, nil)
		if err != nil {
			return
		}
		if isEmptyDoc(json.RawMessage(doc)) {
			require.Equal(t, doc, string(got))
			return
		}
		require.True(t, json.Valid([]byte(doc)), "accepted invalid JSON %q", doc)
		require.True(t, json.Valid(got), "produced invalid JSON %q from %q", got, doc)
		require.NoError(t, ValidateJSON(json.RawMessage(doc)))
	})
}
