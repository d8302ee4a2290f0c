package local

import (
	"strings"
	"testing"
)

// FuzzDirName: any (tenant, cluster, node) gives one safe path component.
func FuzzDirName(f *testing.F) {
	f.Add("acme", "c1", "c1-1000")
	f.Add("", "", "..")
	f.Add("a", "b", "/etc/passwd")
	f.Fuzz(func(t *testing.T, tenant, cluster, node string) {
		d := dirName(tenant, cluster, node)
		if d == "." || d == ".." || strings.ContainsAny(d, "/\x00") || len(d) > 60 || !strings.Contains(d, "~") {
			t.Fatalf("%q %q %q -> %q", tenant, cluster, node, d)
		}
	})
}
