package main

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestApplyInlinesScriptFiles: a script's file: is read relative to the
// document (not the working directory) into content and sent in the one
// import; a document without file references is sent as it is.
func TestApplyInlinesScriptFiles(t *testing.T) {
	api := fakeEnv(t, "hdl_admin")
	api.reply("POST /v1/catalog", 200, `{"created":[{"kind":"scripts","name":"a"}],"updated":[],"unchanged":[]}`)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "scripts", "a.sh"), "echo a > /dev/null\n")
	doc := filepath.Join(dir, "catalog.yaml")
	writeFile(t, doc, "apiVersion: heddle/v1\nscripts:\n  - name: a\n    file: scripts/a.sh\n  - name: b\n    content: echo b\n")

	r := runCLI(t, "", "apply", "-f", doc)
	if r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	post := api.last(t)
	if post.ContentType != "application/json" {
		t.Errorf("Content-Type %q", post.ContentType)
	}
	var sent struct {
		APIVersion string `json:"apiVersion"`
		Scripts    []map[string]string
	}
	if err := json.Unmarshal(post.Body, &sent); err != nil {
		t.Fatalf("sent %s: %v", post.Body, err)
	}
	want := []map[string]string{{"name": "a", "content": "echo a > /dev/null\n"}, {"name": "b", "content": "echo b"}}
	if sent.APIVersion != "heddle/v1" || len(sent.Scripts) != 2 || sent.Scripts[0]["content"] != want[0]["content"] ||
		sent.Scripts[0]["file"] != "" || sent.Scripts[1]["content"] != want[1]["content"] {
		t.Errorf("sent %s", post.Body)
	}
}

func TestApplyRefusesBadScriptFiles(t *testing.T) {
	api := fakeEnv(t, "hdl_admin")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.sh"), "echo a")
	for _, tc := range []struct{ name, doc, want string }{
		{"missing file", "scripts:\n  - {name: a, file: nowhere.sh}\n", "scripts[0].file: open "},
		{"file and content", "scripts:\n  - {name: a, file: a.sh, content: echo}\n", "scripts[0]: give content or file, not both"},
		{"file not a string", "scripts:\n  - {name: a, file: 3}\n", "scripts[0].file: must name a file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			writeFile(t, doc, "apiVersion: heddle/v1\n"+tc.doc)
			r := runCLI(t, "", "apply", "-f", doc)
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("apply: %+v, want an error with %q", r, tc.want)
			}
		})
	}
	if n := len(api.requests()); n != 0 {
		t.Errorf("a refused document sent %d requests", n)
	}
}

func TestScriptsPushAndShow(t *testing.T) {
	api := fakeEnv(t, "hdl_admin")
	api.reply("PUT /v1/scripts/install", 200, `{"name":"install","version":3,"size":7,"sha256":"0123456789abcdef0123"}`)
	api.reply("GET /v1/scripts/install/versions/2", 200, `{"name":"install","version":2,"content":"echo 2\n"}`)
	file := filepath.Join(t.TempDir(), "install.sh")
	writeFile(t, file, "echo 3\n")

	r := runCLI(t, "", "scripts", "push", "install", file)
	if r.code != 0 || r.stdout != "script install version 3 (7 bytes, sha256 0123456789ab)\n" {
		t.Fatalf("push: %+v", r)
	}
	put := api.last(t)
	if put.Method != http.MethodPut || string(put.Body) != "echo 3\n" || !strings.HasPrefix(put.ContentType, "text/plain") {
		t.Errorf("push sent %s %s %q (%s)", put.Method, put.Path, put.Body, put.ContentType)
	}
	r = runCLI(t, "", "scripts", "show", "install", "--version", "2")
	if r.code != 0 || r.stdout != "echo 2\n" {
		t.Errorf("show printed %+v; want the content as it is", r)
	}
}

// TestScriptsPushSaysUnchanged: when the server answers that the push wrote
// nothing (Heddle-Outcome: unchanged), the CLI says so instead of naming
// the version as if it had made it.
func TestScriptsPushSaysUnchanged(t *testing.T) {
	api := fakeEnv(t, "hdl_admin")
	api.mux.HandleFunc("PUT /v1/scripts/install", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Heddle-Outcome", "unchanged")
		_, _ = io.WriteString(w, `{"name":"install","version":3,"size":7,"sha256":"0123456789abcdef0123"}`)
	})
	file := filepath.Join(t.TempDir(), "install.sh")
	writeFile(t, file, "echo 3\n")

	r := runCLI(t, "", "scripts", "push", "install", file)
	if r.code != 0 || r.stdout != "script install version 3 unchanged (7 bytes, sha256 0123456789ab)\n" {
		t.Fatalf("push: %+v", r)
	}
}
