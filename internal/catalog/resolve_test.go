package catalog

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// layers is an in-memory template source for Resolve's table tests.
type layers map[string]Layer

func (l layers) lookup(k domain.Kind, ref domain.TemplateRef) (Layer, error) {
	if layer, ok := l[string(k)+"/"+ref.Name]; ok {
		return layer, nil
	}
	return Layer{}, fmt.Errorf("%w: %s", ErrNotFound, ref.Name)
}

func partial(name string, immutable bool, s domain.TemplateSections) (string, Layer) {
	return string(domain.KindPartialTemplate) + "/" + name, Layer{Kind: domain.KindPartialTemplate, Name: name, Immutable: immutable, Sections: s}
}

func TestResolveMergeOrder(t *testing.T) {
	t.Parallel()
	src := layers{}
	k, l := partial("base", false, domain.TemplateSections{
		Includes:       []domain.TemplateRef{{Name: "java"}},
		Compatibility:  domain.Compatibility{Services: []string{"base-svc"}},
		Defaults:       domain.Defaults{Services: []string{"base-svc"}, Provider: "p1", Config: []byte(`{"a":"base","b":"base"}`)},
		Constraints:    domain.Constraints{Size: domain.SizeConstraint{Min: 2, Max: 10}, Layout: domain.LayoutConstraint{CantCoexist: [][]string{{"x", "y"}}}},
		Administration: domain.Administration{Lease: domain.LeasePolicy{Initial: domain.Duration(3600e9), Max: domain.Duration(7200e9)}},
	})
	src[k] = l
	k, l = partial("java", false, domain.TemplateSections{
		Compatibility: domain.Compatibility{Services: []string{"java"}},
		Defaults:      domain.Defaults{Config: []byte(`{"a":"java","jvm":"17"}`)},
		// Includes contribute no constraints: this must not survive.
		Constraints: domain.Constraints{Size: domain.SizeConstraint{Min: 99}},
	})
	src[k] = l
	k, l = partial("monitoring", false, domain.TemplateSections{
		Compatibility: domain.Compatibility{Services: []string{"agent"}},
		Defaults:      domain.Defaults{Services: []string{"agent"}, Provider: "p2"},
	})
	src[k] = l

	tmpl := &domain.ClusterTemplate{Meta: domain.Meta{Name: "app"}, TemplateSections: domain.TemplateSections{
		Extends:       &domain.TemplateRef{Name: "base"},
		Includes:      []domain.TemplateRef{{Name: "monitoring"}},
		Compatibility: domain.Compatibility{Services: []string{"app", "java"}},
		Defaults:      domain.Defaults{Services: []string{"app"}, Config: []byte(`{"b":"app"}`)},
		Constraints:   domain.Constraints{Size: domain.SizeConstraint{Min: 3}, Layout: domain.LayoutConstraint{CantCoexist: [][]string{{"y", "x"}}}},
	}}
	got, err := Resolve(tmpl, src.lookup)
	require.NoError(t, err)
	// Order: java (base's include), base, monitoring (own include), app.
	require.Equal(t, []string{"java", "base-svc", "agent", "app"}, got.Compatibility.Services)
	require.Equal(t, []string{"base-svc", "agent", "app"}, got.Defaults.Services)
	require.Equal(t, "p2", got.Defaults.Provider, "a later include overrides a string")
	require.JSONEq(t, `{"a":"base","b":"app","jvm":"17"}`, string(got.Defaults.Config))
	require.Equal(t, domain.SizeConstraint{Min: 3}, got.Constraints.Size, "the child's size wins whole")
	require.Len(t, got.Constraints.Layout.CantCoexist, 1, "the same group in another order is one group")
	require.Equal(t, domain.Duration(3600e9), got.Administration.Lease.Initial)
	require.Nil(t, got.Extends)
	require.Nil(t, got.Includes)
}

func TestResolveErrors(t *testing.T) {
	t.Parallel()
	valid := domain.TemplateSections{
		Compatibility: domain.Compatibility{Services: []string{"s"}},
		Defaults:      domain.Defaults{Services: []string{"s"}, Provider: "p"},
	}
	withRefs := func(s domain.TemplateSections, ext string, inc ...string) domain.TemplateSections {
		if ext != "" {
			s.Extends = &domain.TemplateRef{Name: ext}
		}
		for _, i := range inc {
			s.Includes = append(s.Includes, domain.TemplateRef{Name: i})
		}
		return s
	}
	src := layers{}
	k, l := partial("a", false, withRefs(domain.TemplateSections{}, "b"))
	src[k] = l
	k, l = partial("b", false, withRefs(domain.TemplateSections{}, "a"))
	src[k] = l
	k, l = partial("locked", true, domain.TemplateSections{Defaults: domain.Defaults{Provider: "p", Config: []byte(`{"region":"eu"}`)}})
	src[k] = l

	tests := []struct {
		name  string
		s     domain.TemplateSections
		field string
		code  string
	}{
		{"cycle", withRefs(valid, "a"), "extends", domain.CodeCycle},
		{"missing extends", withRefs(valid, "ghost"), "extends", domain.CodeUnknownRef},
		{"missing include", withRefs(valid, "", "ghost"), "includes[0]", domain.CodeUnknownRef},
		{"immutable string", func() domain.TemplateSections {
			s := withRefs(valid, "", "locked")
			s.Defaults.Provider = "other"
			return s
		}(), "defaults.provider", domain.CodeImmutable},
		{"immutable config key", func() domain.TemplateSections {
			s := withRefs(valid, "", "locked")
			s.Defaults.Config = []byte(`{"region":"us"}`)
			return s
		}(), "defaults.config.region", domain.CodeImmutable},
		{"unresolvable: no provider", domain.TemplateSections{Compatibility: valid.Compatibility, Defaults: domain.Defaults{Services: []string{"s"}}}, "defaults.provider", domain.CodeRequired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Resolve(&domain.ClusterTemplate{Meta: domain.Meta{Name: "t"}, TemplateSections: tt.s}, src.lookup)
			var ps domain.Problems
			require.ErrorAs(t, err, &ps)
			require.Equal(t, tt.field, ps[0].Field)
			require.Equal(t, tt.code, ps[0].Code)
		})
	}

	// Setting an immutable key to the value it already has is fine.
	same := withRefs(valid, "", "locked")
	_, err := Resolve(&domain.ClusterTemplate{Meta: domain.Meta{Name: "t"}, TemplateSections: same}, src.lookup)
	require.NoError(t, err)
}

// TestResolveKeepsThePeriodicChecksAndTheRepairPolicy: administration's
// verifyEvery, driftEvery and repair reach the resolved template, from the
// template or what it extends (the merge once dropped verifyEvery).
func TestResolveKeepsThePeriodicChecksAndTheRepairPolicy(t *testing.T) {
	t.Parallel()
	src := layers{}
	hour := domain.Duration(3600e9)
	k, l := partial("ops", false, domain.TemplateSections{
		Administration: domain.Administration{VerifyEvery: hour, Repair: &domain.RepairPolicy{Mode: domain.RepairAuto, MaxUnhealthy: "10%"}},
	})
	src[k] = l
	off := domain.Duration(0)
	tmpl := &domain.ClusterTemplate{Meta: domain.Meta{Name: "app"}, TemplateSections: domain.TemplateSections{
		Extends:        &domain.TemplateRef{Name: "ops"},
		Compatibility:  domain.Compatibility{Services: []string{"app"}},
		Defaults:       domain.Defaults{Services: []string{"app"}, Provider: "p"},
		Administration: domain.Administration{DriftEvery: &off},
	}}
	got, err := Resolve(tmpl, src.lookup)
	require.NoError(t, err)
	require.Equal(t, hour, got.Administration.VerifyEvery)
	require.NotNil(t, got.Administration.DriftEvery)
	require.Zero(t, *got.Administration.DriftEvery, "0 is kept: off, not the provider's default")
	require.Equal(t, &domain.RepairPolicy{Mode: domain.RepairAuto, MaxUnhealthy: "10%"}, got.Administration.Repair)
}
