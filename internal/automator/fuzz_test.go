package automator

import "testing"

// FuzzFieldEnvName: any field name maps to "" or to a name a POSIX shell
// accepts after export, the same every time.
func FuzzFieldEnvName(f *testing.F) {
	for _, s := range []string{"zk.port", "", "é", "9lives", "a-b_c", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, k string) {
		name := FieldEnvName(k)
		if name != FieldEnvName(k) {
			t.Fatal("not deterministic")
		}
		if name == "" {
			return
		}
		for i := 0; i < len(name); i++ {
			c := name[i]
			if !(c == '_' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
				t.Fatalf("%q -> %q holds %q", k, name, c)
			}
		}
	})
}
