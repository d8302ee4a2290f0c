package macros

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

func TestEntityProblems(t *testing.T) {
	t.Parallel()
	svc := &domain.Service{Meta: domain.Meta{Name: "clock"}, Actions: map[domain.Action]domain.ServiceAction{
		domain.ActionStart:     {Type: "shell", Fields: map[string]string{"script": "date +%s%N", "args": "%host.self%"}},
		domain.ActionConfigure: {Type: "shell", Fields: map[string]string{"script": "echo %ip.service.%"}},
		domain.ActionStop:      {Type: "shell", Fields: map[string]string{"script": "date +%%s%%N; echo 50%"}},
	}}
	ps := EntityProblems(svc)
	require.Len(t, ps, 2)
	require.Equal(t, "actions.configure.fields.script", ps[0].Field)
	require.Equal(t, "actions.start.fields.script", ps[1].Field)
	require.Contains(t, ps[1].Message, `macro "%s%" at offset 6`)
	require.Contains(t, ps[1].Message, "write %% for a literal percent sign", "the sentence says how to write what was meant")

	tmpl := &domain.ClusterTemplate{Meta: domain.Meta{Name: "web"}}
	tmpl.Defaults.Config = json.RawMessage(`{"ok":"%cluster.id%","bad":["%nope%"],"also":"%x%"}`)
	ps = EntityProblems(tmpl)
	require.Len(t, ps, 2)
	require.Equal(t, "defaults.config", ps[0].Field)
	require.Contains(t, ps[0].Message, "bad[0]: ")
	require.Contains(t, ps[1].Message, "also: ")
	partial := &domain.PartialTemplate{Meta: domain.Meta{Name: "p"}}
	partial.Defaults.Config = json.RawMessage(`{"a":"%nope%"}`)
	require.Len(t, EntityProblems(partial), 1)
	require.Empty(t, EntityProblems(&domain.HardwareType{Meta: domain.Meta{Name: "h"}}))
}
