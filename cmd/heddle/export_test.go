package main

import (
	"strings"
	"testing"
)

func TestExportPrintsTheDocumentInTheAskedFormat(t *testing.T) {
	api := fakeEnv(t, "hdl_admin")
	api.reply("GET /v1/catalog", 200, `{"apiVersion": "heddle/v1", "providers": [{"name": "local", "providerType": "local"}]}`)

	r := runCLI(t, "", "export")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "apiVersion: heddle/v1\n") || !strings.Contains(r.stdout, "providerType: local") {
		t.Fatalf("export: %+v", r)
	}
	// Pages are read as JSON (and put together), whatever is printed.
	if got := api.last(t); got.Query != "format=json" || got.Auth != "Bearer hdl_admin" {
		t.Errorf("export sent %+v", got)
	}
	r = runCLI(t, "", "export", "--format", "json")
	if r.code != 0 || api.last(t).Query != "format=json" || !strings.Contains(r.stdout, `"providerType": "local"`) {
		t.Fatalf("export --format json: %+v, sent %+v", r, api.last(t))
	}

	n := len(api.requests())
	r = runCLI(t, "", "export", "--format", "xml")
	if r.code == 0 || !strings.Contains(r.stderr, `--format is "xml"; use yaml or json`) {
		t.Errorf("export --format xml: %+v", r)
	}
	if len(api.requests()) != n {
		t.Error("a bad --format sends nothing")
	}
}
