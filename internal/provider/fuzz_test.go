package provider

import (
	"slices"
	"strings"
	"testing"

	"github.com/heddle-io/heddle/internal/domain"
)

// FuzzValidate checks that any field map validates without panicking, gives
// the same answer twice, reports only paths under fields., and accepts a
// map only if some required set is complete.
func FuzzValidate(f *testing.F) {
	r := NewRegistry()
	if err := r.Register(cloudType, nopProvider{}); err != nil {
		f.Fatal(err)
	}
	f.Add("region", "north", "role", "r", "port", "22")
	f.Add("region", "east", "api_key", "bad", "public_ip", "maybe")
	f.Add("", "", "zone", "z", "port", "-1")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, k3, v3 string) {
		p := &domain.Provider{ProviderType: "cloud", Fields: map[string]string{k1: v1, k2: v2, k3: v3}}
		ps := r.Validate(p)
		again := r.Validate(p)
		if !slices.Equal(ps, again) {
			t.Fatalf("not deterministic: %v vs %v", ps, again)
		}
		for _, pr := range ps {
			if !strings.HasPrefix(pr.Field, "fields.") || pr.Code == "" || pr.Message == "" {
				t.Fatalf("bad problem %+v", pr)
			}
		}
		if len(ps) == 0 {
			complete := false
			for _, set := range cloudType.Parameters.Admin.Required {
				all := true
				for _, n := range set {
					if p.Fields[n] == "" && cloudType.Parameters.Admin.Fields[n].Default == "" {
						all = false
					}
				}
				complete = complete || all
			}
			if !complete {
				t.Fatalf("accepted %v with no required set complete", p.Fields)
			}
		}
	})
}
