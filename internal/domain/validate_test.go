package domain

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func fieldsOf(ps Problems) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Field)
	}
	return out
}

func TestValidateService(t *testing.T) {
	t.Parallel()
	two := 2
	eleven := 11
	tests := []struct {
		name   string
		svc    Service
		fields []string
	}{
		{name: "valid", svc: Service{Meta: Meta{Name: "zookeeper"}, Actions: map[Action]ServiceAction{ActionStart: {Type: "shell", Retries: &two}}}},
		{name: "missing name", svc: Service{}, fields: []string{"name"}},
		{name: "bad name", svc: Service{Meta: Meta{Name: "zoo keeper"}}, fields: []string{"name"}},
		{name: "self dependency and duplicate", svc: Service{Meta: Meta{Name: "a"}, Dependencies: ServiceDependencies{
			Runtime: DependencySet{Requires: []string{"a", "b", "b"}}}}, fields: []string{"dependencies.runtime.requires[0]", "dependencies.runtime.requires[2]"}},
		{name: "unknown action and missing type", svc: Service{Meta: Meta{Name: "a"}, Actions: map[Action]ServiceAction{"dance": {Type: "shell"}, ActionInstall: {}}},
			fields: []string{"actions.dance", "actions.install.type"}},
		{name: "retries out of range and timeout too long", svc: Service{Meta: Meta{Name: "a"}, Actions: map[Action]ServiceAction{ActionStart: {Type: "shell", Retries: &eleven, Timeout: MaxActionTimeout + 1}}},
			fields: []string{"actions.start.retries", "actions.start.timeout"}},
		{name: "bad link", svc: Service{Meta: Meta{Name: "a"}, Links: []Link{{Label: "ui", URL: "ftp://x"}}}, fields: []string{"links[0].url"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.fields, fieldsOf(tt.svc.Validate()))
		})
	}
}

func TestValidateTemplate(t *testing.T) {
	t.Parallel()
	valid := ClusterTemplate{Meta: Meta{Name: "hadoop"}, TemplateSections: TemplateSections{
		Compatibility: Compatibility{Services: []string{"namenode", "datanode", "zookeeper"}},
		Defaults:      Defaults{Services: []string{"namenode", "datanode"}, Provider: "local", Config: []byte(`{"a":1}`)},
		Constraints: Constraints{Size: SizeConstraint{Min: 1, Max: 50}, Services: map[string]ServiceConstraint{
			"zookeeper": {Quantities: Quantity{Min: 3, Max: 5}}}},
	}}
	require.Empty(t, valid.Validate())
	require.Empty(t, valid.ValidateResolved())

	bad := valid
	bad.Constraints = Constraints{
		Size:     SizeConstraint{Min: 5, Max: 2},
		Layout:   LayoutConstraint{MustCoexist: [][]string{{"namenode"}}},
		Services: map[string]ServiceConstraint{"zookeeper": {Quantities: Quantity{Min: 4, Max: 3}}, "hbase": {}},
	}
	bad.Defaults.Config = []byte(`[1]`)
	bad.Administration.Lease = LeasePolicy{Initial: Duration(2e9), Max: Duration(1e9)}
	require.Equal(t, []string{
		"administration.lease.initial",
		"constraints.layout.mustCoexist[0]",
		"constraints.services.zookeeper.quantities",
		"constraints.services.zookeeper.quantities.min",
		"constraints.size",
		"defaults.config",
	}, fieldsOf(bad.Validate()))
	require.Contains(t, fieldsOf(bad.ValidateResolved()), "constraints.services.hbase")

	empty := ClusterTemplate{Meta: Meta{Name: "x"}}
	require.Equal(t, []string{"compatibility.services", "defaults.provider", "defaults.services"}, fieldsOf(empty.ValidateResolved()))
}

func TestValidateHardwareAndImage(t *testing.T) {
	t.Parallel()
	hw := HardwareType{Meta: Meta{Name: "small"}, ProviderMap: map[string]HardwareFlavor{"ec2": {}}}
	require.Equal(t, []string{"providerMap.ec2.flavor"}, fieldsOf(hw.Validate()))
	img := ImageType{Meta: Meta{Name: "debian"}}
	require.Equal(t, []string{"providerMap"}, fieldsOf(img.Validate()))
}

func TestProblemsOrderIsStable(t *testing.T) {
	t.Parallel()
	svc := Service{Meta: Meta{Name: "a"}, Actions: map[Action]ServiceAction{"x": {}, "y": {}, "z": {}, ActionStart: {}, ActionStop: {}}}
	first := svc.Validate()
	for range 20 {
		require.Equal(t, first, svc.Validate())
	}
}

func TestValidateCapsLongValues(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", MaxFieldBytes+1)
	atLimit := strings.Repeat("x", MaxFieldBytes)

	svc := Service{Meta: Meta{Name: "a"}, Actions: map[Action]ServiceAction{
		ActionStart:   {Type: "shell", Fields: map[string]string{"script": long, "args": "-v"}},
		ActionInstall: {Type: "shell", Fields: map[string]string{"script": atLimit}},
	}}
	ps := svc.Validate()
	require.Equal(t, []string{"actions.start.fields.script"}, fieldsOf(ps))
	require.Equal(t, CodeOutOfRange, ps[0].Code)
	require.Contains(t, ps[0].Message, "versioned script resource")

	prov := Provider{Meta: Meta{Name: "ec2"}, ProviderType: "ec2", Fields: map[string]string{"a": long, "b": long, "c": atLimit}}
	ps = prov.Validate()
	require.Equal(t, []string{"fields.a", "fields.b"}, fieldsOf(ps))
	for _, p := range ps {
		require.Equal(t, CodeOutOfRange, p.Code)
		require.Contains(t, p.Message, "64 KiB")
	}

	tmpl := ClusterTemplate{Meta: Meta{Name: "t"}, TemplateSections: TemplateSections{
		Defaults: Defaults{Config: []byte(`{"a":"` + long + `"}`)}}}
	ps = tmpl.Validate()
	require.Equal(t, []string{"defaults.config"}, fieldsOf(ps))
	require.Equal(t, CodeOutOfRange, ps[0].Code)
	partial := PartialTemplate{Meta: Meta{Name: "p"}, TemplateSections: tmpl.TemplateSections}
	require.Equal(t, []string{"defaults.config"}, fieldsOf(partial.Validate()))
	tmpl.Defaults.Config = []byte(`{"a":"x"}`)
	require.Empty(t, tmpl.Validate())
}
