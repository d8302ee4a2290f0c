package shell

import (
	"strings"
	"testing"
)

// FuzzSyncScript: for any script body with a #! line, the here-document
// that carries it ends exactly after the body's lines, so no body can end it
// early and run its remainder as the wrapper. (A plain body travels as one
// single-quoted word; TestPlainScriptsRoundTrip runs those.)
func FuzzSyncScript(f *testing.F) {
	for _, s := range []string{"echo hi", "", "a\nHEDDLE_SCRIPT_\nb", "#!/bin/sh\nexit 0\n", "EOF\n'\"$`\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		body = "#!" + body
		script, err := syncScript(body, "/w/tasks/x.script", false)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(script, "\n")
		start := -1
		var delim string
		for i, l := range lines {
			if d, ok := strings.CutPrefix(l, "cat > \"$f\" <<'"); ok {
				start, delim = i, strings.TrimSuffix(d, "' || exit 125")
				break
			}
		}
		if start < 0 {
			t.Fatal("no here-document")
		}
		end := -1
		for i := start + 1; i < len(lines); i++ {
			if lines[i] == delim {
				end = i
				break
			}
		}
		bodyLines := strings.Count(body, "\n")
		if !strings.HasSuffix(body, "\n") {
			bodyLines++
		}
		if end != start+1+bodyLines {
			t.Fatalf("here-document ends at line %d, want %d", end, start+1+bodyLines)
		}
	})
}

// FuzzPathSafe: any id becomes one path component of safe characters, never
// "." or "..", bounded in length.
func FuzzPathSafe(f *testing.F) {
	for _, s := range []string{"install:zk:c1-1000", "..", ".", "", "a/b", strings.Repeat("x", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		p := pathSafe(id)
		if p == "" || p == "." || p == ".." || len(p) > 100 || strings.ContainsAny(p, "/\x00") {
			t.Fatalf("%q -> %q", id, p)
		}
		if p != pathSafe(id) {
			t.Fatal("not deterministic")
		}
	})
}
