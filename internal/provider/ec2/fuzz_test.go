package ec2

import (
	"strings"
	"testing"
)

// FuzzCheckFields: any field values are checked without panicking; every
// problem names a known field, and a value the patterns accept yields none
// for that field.
func FuzzCheckFields(f *testing.F) {
	f.Add("eu-west-1", "subnet-0a1b2c3d", "sg-0123456789abcdef0, sg-01234567", "AKID", "x", "https://localhost:4566")
	f.Add("", "", ",,,", "", "secret", "ftp://x")
	f.Fuzz(func(t *testing.T, region, subnet, groups, keyID, secret, endpoint string) {
		fields := map[string]string{FieldRegion: region, FieldSubnetID: subnet, FieldSecurityGroupIDs: groups,
			FieldAccessKeyID: keyID, FieldSecretAccessKey: secret, FieldEndpoint: endpoint}
		for _, p := range checkFields(fields) {
			if _, known := Type().Parameters.Admin.Fields[p.Field]; !known || p.Message == "" {
				t.Fatalf("problem %+v", p)
			}
			if p.Field == FieldRegion && regionPattern.MatchString(region) {
				t.Fatalf("valid region %q reported", region)
			}
		}
		for _, g := range splitList(groups) {
			if g == "" || strings.Contains(g, ",") || strings.TrimSpace(g) != g {
				t.Fatalf("split %q gave %q", groups, g)
			}
		}
	})
}
