package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/buildinfo"
	"github.com/heddle-io/heddle/internal/usage"
)

// fakeAPI is an httptest server answering the few endpoints a test sets up,
// and recording every request.
type fakeAPI struct {
	*httptest.Server
	mux *http.ServeMux

	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	Method, Path, Query, Auth, ContentType string
	Body                                   []byte
}

func newFakeAPI(t *testing.T) *fakeAPI {
	t.Helper()
	f := &fakeAPI{mux: http.NewServeMux()}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := f.mux.Handler(r); pattern == "" && resolveStub(w, r) {
			return
		}
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), body})
		f.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// resolveStub answers the look-ups with which the CLI turns a cluster
// argument into an id, when the test set up no answer of its own: no
// cluster has the argument as its name, and any id names a cluster of that
// id. They are not recorded.
func resolveStub(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	switch rest, ok := strings.CutPrefix(r.URL.Path, "/v1/clusters/"); {
	case r.URL.Path == "/v1/clusters" && r.URL.Query().Has("name"):
		_, _ = io.WriteString(w, emptyList)
	case ok && rest != "" && !strings.Contains(rest, "/"):
		_, _ = io.WriteString(w, `{"id":"`+rest+`","name":"`+rest+`"}`)
	default:
		return false
	}
	return true
}

func (f *fakeAPI) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func (f *fakeAPI) last(t *testing.T) recorded {
	t.Helper()
	rs := f.requests()
	if len(rs) == 0 {
		t.Fatal("the CLI sent no request")
	}
	return rs[len(rs)-1]
}

// reply answers pattern with status and body.
func (f *fakeAPI) reply(pattern string, status int, body string) {
	f.mux.HandleFunc(pattern, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	})
}

// isolate points the CLI at an empty config file and clears the environment.
func isolate(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "heddle", "config.yaml")
	t.Setenv("HEDDLE_CONFIG", path)
	t.Setenv("HEDDLE_ENDPOINT", "")
	t.Setenv("HEDDLE_KEY", "")
	return path
}

// fakeEnv isolates the CLI and points it at a new fake API with key.
func fakeEnv(t *testing.T, key string) *fakeAPI {
	t.Helper()
	isolate(t)
	api := newFakeAPI(t)
	t.Setenv("HEDDLE_ENDPOINT", api.URL)
	t.Setenv("HEDDLE_KEY", key)
	return api
}

type result struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := run(ctx, newRootCommand(), args, strings.NewReader(stdin), &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

const emptyList = `{"items":[]}`

func TestConfigPrecedence(t *testing.T) {
	cfg := isolate(t)
	fileAPI, envAPI, flagAPI := newFakeAPI(t), newFakeAPI(t), newFakeAPI(t)
	for _, f := range []*fakeAPI{fileAPI, envAPI, flagAPI} {
		f.reply("GET /v1/clusters", 200, emptyList)
	}

	// No key anywhere: a clear local error, no request.
	if r := runCLI(t, "", "clusters", "list", "--endpoint", flagAPI.URL); r.code != 1 || !strings.Contains(r.stderr, "no API key") {
		t.Fatalf("without a key: %+v", r)
	}

	// The config file alone.
	writeFile(t, cfg, "endpoint: "+fileAPI.URL+"\nkey: hdl_file\n")
	if r := runCLI(t, "", "clusters", "list"); r.code != 0 {
		t.Fatalf("file config: %+v", r)
	}
	if got := fileAPI.last(t).Auth; got != "Bearer hdl_file" {
		t.Errorf("file config sent Authorization %q", got)
	}

	// The environment beats the file.
	t.Setenv("HEDDLE_ENDPOINT", envAPI.URL+"/v1/")
	t.Setenv("HEDDLE_KEY", "hdl_env")
	if r := runCLI(t, "", "clusters", "list"); r.code != 0 {
		t.Fatalf("env config: %+v", r)
	}
	if got := envAPI.last(t); got.Auth != "Bearer hdl_env" || got.Path != "/v1/clusters" {
		t.Errorf("env config sent %s with Authorization %q", got.Path, got.Auth)
	}

	// Flags beat the environment; each setting is resolved on its own.
	if r := runCLI(t, "", "clusters", "list", "--endpoint", flagAPI.URL); r.code != 0 {
		t.Fatalf("flag endpoint: %+v", r)
	}
	if got := flagAPI.last(t).Auth; got != "Bearer hdl_env" {
		t.Errorf("--endpoint with HEDDLE_KEY sent Authorization %q", got)
	}
	if r := runCLI(t, "", "--key", "hdl_flag", "clusters", "list", "--endpoint", flagAPI.URL); r.code != 0 {
		t.Fatalf("flag key: %+v", r)
	}
	if got := flagAPI.last(t).Auth; got != "Bearer hdl_flag" {
		t.Errorf("--key sent Authorization %q", got)
	}
	if n := len(fileAPI.requests()); n != 1 {
		t.Errorf("the file's endpoint got %d requests, want 1", n)
	}
}

func TestConfigSet(t *testing.T) {
	cfg := isolate(t)
	if r := runCLI(t, "", "config", "set", "endpoint", "https://heddle.example.com"); r.code != 0 {
		t.Fatalf("set endpoint: %+v", r)
	}
	if r := runCLI(t, "hdl_fromstdin\n", "config", "set", "key", "-"); r.code != 0 {
		t.Fatalf("set key: %+v", r)
	}
	fi, err := os.Stat(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("config file mode %v, want 0600", perm)
	}
	fc, err := readConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if fc.Endpoint != "https://heddle.example.com" || fc.Key != "hdl_fromstdin" {
		t.Errorf("config file holds %+v", fc)
	}
	if r := runCLI(t, "", "config", "set", "colour", "blue"); r.code == 0 {
		t.Errorf("config set of an unknown setting succeeded: %+v", r)
	}
	r := runCLI(t, "", "config", "show")
	if r.code != 0 || !strings.Contains(r.stdout, "hdl_from****") || strings.Contains(r.stdout, "hdl_fromstdin") {
		t.Errorf("config show printed:\n%s", r.stdout)
	}
}

func TestApplyContentType(t *testing.T) {
	api := fakeEnv(t, "hdl_admin")
	api.reply("POST /v1/catalog", 200, `{"created":[{"kind":"providers","name":"local"}],"updated":[],"unchanged":[]}`)

	const yamlDoc = "apiVersion: heddle/v1\nproviders:\n  - name: local\n    providerType: local\n"
	const jsonDoc = `{"apiVersion": "heddle/v1", "providers": [{"name": "local", "providerType": "local"}]}`
	dir := t.TempDir()
	for _, tc := range []struct {
		name, file, content, stdin, want string
	}{
		{"yaml extension", "catalog.yaml", yamlDoc, "", "application/yaml"},
		{"yml extension", "catalog.yml", yamlDoc, "", "application/yaml"},
		{"json extension", "catalog.json", jsonDoc, "", "application/json"},
		{"json sniffed", "catalog", "\n  " + jsonDoc, "", "application/json"},
		{"yaml sniffed", "catalog.txt", yamlDoc, "", "application/yaml"},
		{"json on stdin", "-", "", jsonDoc, "application/json"},
		{"yaml on stdin", "-", "", yamlDoc, "application/yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := tc.file
			body := tc.stdin
			if file != "-" {
				file = filepath.Join(dir, tc.file)
				writeFile(t, file, tc.content)
				body = tc.content
			}
			r := runCLI(t, tc.stdin, "apply", "-f", file)
			if r.code != 0 {
				t.Fatalf("apply: %+v", r)
			}
			var post recorded
			for _, rq := range api.requests() {
				if rq.Method == http.MethodPost {
					post = rq
				}
			}
			if post.ContentType != tc.want {
				t.Errorf("Content-Type %q, want %q", post.ContentType, tc.want)
			}
			if string(post.Body) != body {
				t.Errorf("sent %q, want the document as is", post.Body)
			}
			if want := "created  providers/local\n1 created, 0 updated, 0 unchanged\n"; r.stdout != want {
				t.Errorf("output:\n%s\nwant:\n%s", r.stdout, want)
			}
		})
	}
}

func TestApplyReportsUnchanged(t *testing.T) {
	api := fakeEnv(t, "hdl_admin")
	// The server says which entities the import left as they were.
	api.reply("POST /v1/catalog", 200, `{"created":[],"updated":[{"kind":"providers","name":"a"}],"unchanged":[{"kind":"providers","name":"b"}]}`)
	doc := "apiVersion: heddle/v1\nproviders:\n  - name: a\n    providerType: local\n  - name: b\n    providerType: local\n"
	r := runCLI(t, doc, "apply", "-f", "-")
	if r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	for _, want := range []string{"updated    providers/a", "unchanged  providers/b", "0 created, 1 updated, 1 unchanged"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	if n := len(api.requests()); n != 1 {
		t.Errorf("apply made %d requests; the import's answer says it all", n)
	}
}

func TestAPIErrorPrinting(t *testing.T) {
	api := fakeEnv(t, "hdl_user")
	api.reply("POST /v1/clusters", 422, `{"error":{"status":422,"code":"no_layout","message":"no layout satisfies the template for this request",
		"details":[{"field":"constraints.size","code":"conflict","message":"min 5 is greater than max 2"},{"field":"services.db","code":"conflict","message":"db needs 3 nodes"}],"requestId":"r1"}}`)
	api.reply("GET /v1/clusters/gone", 502, "<html>bad gateway</html>")

	r := runCLI(t, "", "clusters", "create", "web1", "--template", "web", "--size", "3", "--services", "web,db", "--lease", "2d")
	if r.code != 1 {
		t.Fatalf("exit code %d, want 1", r.code)
	}
	want := "heddle: no layout satisfies the template for this request\n  constraints.size: min 5 is greater than max 2\n  services.db: db needs 3 nodes\n"
	if r.stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", r.stderr, want)
	}
	if r.stdout != "" {
		t.Errorf("stdout: %q", r.stdout)
	}
	var sent map[string]any
	if err := json.Unmarshal(api.last(t).Body, &sent); err != nil {
		t.Fatal(err)
	}
	if sent["name"] != "web1" || sent["template"] != "web" || sent["size"] != 3.0 || sent["lease"] != "2d" {
		t.Errorf("sent %v", sent)
	}
	if svcs, _ := sent["services"].([]any); len(svcs) != 2 {
		t.Errorf("sent services %v", sent["services"])
	}

	// A response without an envelope still says what happened.
	r = runCLI(t, "", "clusters", "show", "gone")
	if r.code != 1 || !strings.Contains(r.stderr, "502 Bad Gateway") {
		t.Errorf("a non-envelope error: %+v", r)
	}
}

// jobBody is a job view with one task per entry of tasks (id -> status).
func jobBody(status, message string, tasks ...string) string {
	var ts []string
	for _, t := range tasks {
		id, st, _ := strings.Cut(t, "=")
		task := `{"id":"` + id + `","jobId":"j1","clusterId":"c1","action":"create","status":"` + st + `","attempt":1,"maxAttempts":2,"remaining":0,"timeout":"1m","version":1`
		switch st {
		case "SUCCEEDED":
			task += `,"attempts":[{"attempt":1,"startedAt":"2026-01-01T00:00:00Z","endedAt":"2026-01-01T00:00:01.2Z","status":"SUCCEEDED","exitCode":0}]`
		case "FAILED":
			task += `,"attempts":[{"attempt":1,"startedAt":"2026-01-01T00:00:00Z","endedAt":"2026-01-01T00:00:03Z","status":"FAILED","exitCode":2,` +
				`"error":"install script exited 2","stderr":"line1\nline2\napt: no such package nginx-extra\n"}]`
		}
		ts = append(ts, task+"}")
	}
	done := strings.Count(strings.Join(tasks, " "), "=SUCCEEDED")
	b, _ := json.Marshal(message)
	byStatus := map[string]int{}
	for _, t := range tasks {
		_, st, _ := strings.Cut(t, "=")
		byStatus[st]++
	}
	counts, _ := json.Marshal(byStatus)
	times := `"createdAt":"2026-01-01T00:00:00Z","startedAt":"2026-01-01T00:00:00Z"`
	if status == "SUCCEEDED" || status == "FAILED" || status == "ABORTED" {
		times += `,"endedAt":"2026-01-01T00:00:04Z"`
	}
	return `{"id":"j1","tenantId":"t","clusterId":"c1","operation":"create","status":"` + status + `","statusMessage":` + string(b) +
		`,"taskTotal":` + itoa(len(tasks)) + `,"taskDone":` + itoa(done) + `,"taskStatus":` + string(counts) + `,"requestedBy":"alice",` + times +
		`,"version":1,"tasks":[` + strings.Join(ts, ",") + `]}`
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// sequence answers pattern with bodies in turn, repeating the last.
func (f *fakeAPI) sequence(pattern string, bodies ...string) {
	var mu sync.Mutex
	i := 0
	f.mux.HandleFunc(pattern, func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		b := bodies[min(i, len(bodies)-1)]
		i++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, b)
	})
}

func fastPolling(t *testing.T) {
	old := pollInterval
	pollInterval = time.Millisecond
	t.Cleanup(func() { pollInterval = old })
}

func TestJobsWatchFailed(t *testing.T) {
	fastPolling(t)
	api := fakeEnv(t, "hdl_user")
	api.sequence("GET /v1/clusters/c1/jobs/j1",
		jobBody("RUNNING", "", "c1-1000/create=RUNNING", "c1-1000/nginx/install=BLOCKED"),
		jobBody("RUNNING", "", "c1-1000/create=SUCCEEDED", "c1-1000/nginx/install=RUNNING"),
		jobBody("FAILED", "task c1-1000/nginx/install failed after 2 attempts", "c1-1000/create=SUCCEEDED", "c1-1000/nginx/install=FAILED"),
	)
	r := runCLI(t, "", "jobs", "watch", "c1", "j1")
	if r.code == 0 {
		t.Fatalf("watching a FAILED job exited 0: %+v", r)
	}
	for _, want := range []string{
		"  RUNNING   c1-1000/create\n",
		"  SUCCEEDED c1-1000/create (1.2s)\n",
		"  RUNNING   c1-1000/nginx/install\n",
		"  FAILED    c1-1000/nginx/install (3s)\n",
		"job j1 FAILED after 4s: 2 tasks: 1 FAILED, 1 SUCCEEDED\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "BLOCKED") {
		t.Errorf("stdout reports a task that is only waiting:\n%s", r.stdout)
	}
	if strings.Count(r.stdout, "SUCCEEDED c1-1000/create") != 1 {
		t.Errorf("a status change is printed more than once:\n%s", r.stdout)
	}
	for _, want := range []string{
		"job j1 FAILED: task c1-1000/nginx/install failed after 2 attempts",
		"error: install script exited 2",
		"apt: no such package nginx-extra",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

func TestClustersCreateWait(t *testing.T) {
	fastPolling(t)
	api := fakeEnv(t, "hdl_user")
	api.reply("POST /v1/clusters", 202, `{"cluster":{"id":"c1","name":"web1","status":"PENDING"},"job":{"id":"j1","clusterId":"c1","operation":"create","status":"PENDING"}}`)
	api.sequence("GET /v1/clusters/c1/jobs/j1",
		jobBody("RUNNING", "", "c1-1000/create=RUNNING"),
		jobBody("SUCCEEDED", "", "c1-1000/create=SUCCEEDED"),
	)
	r := runCLI(t, "", "clusters", "create", "web1", "--template", "web", "--size", "1", "--wait")
	if r.code != 0 {
		t.Fatalf("create --wait: %+v", r)
	}
	for _, want := range []string{"cluster  c1 (web1, PENDING)", "job      j1 (create, PENDING)", "job j1 SUCCEEDED in 4s: 1 task: 1 SUCCEEDED\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if q := api.requests()[0].Query; q != "" {
		t.Errorf("create sent query %q", q)
	}
}

func TestClustersCreateDryRun(t *testing.T) {
	api := fakeEnv(t, "hdl_user")
	api.reply("POST /v1/clusters", 200, `{"dryRun":true,"cluster":{"id":"c1","name":"web1"},
		"preview":{"operation":"create","diff":{"addedNodes":[{"id":"c1-1000","num":1000,"hardwareType":"small","imageType":"debian","services":["lb"]}]},
		"summary":{"workTasks":7,"joins":1,"edges":9,"stages":4},"tasks":[],"stages":[]},
		"layout":[{"hardwareType":"small","imageType":"debian","services":["lb"],"count":1},{"hardwareType":"small","imageType":"debian","services":["kv","web"],"count":2}]}`)
	r := runCLI(t, "", "clusters", "create", "web1", "--template", "web", "--size", "3", "--dry-run")
	if r.code != 0 {
		t.Fatalf("dry run: %+v", r)
	}
	if q := api.last(t).Query; q != "dryRun=true" {
		t.Errorf("query %q", q)
	}
	for _, want := range []string{"nothing was changed", "+ node  c1-1000", "7 work tasks, 1 joins, 9 edges, 4 stages", "2      small     debian  kv,web"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestOutputJSON(t *testing.T) {
	api := fakeEnv(t, "hdl_user")
	view := `{"id":"c1","name":"web1","status":"ACTIVE","nodes":[{"id":"c1-1000","hostname":"h","addresses":{"access_v4":"10.0.0.1"},"services":["web"],"status":"ACTIVE"}]}`
	api.reply("GET /v1/clusters/c1", 200, view)
	r := runCLI(t, "", "clusters", "show", "c1", "-o", "json")
	if r.code != 0 {
		t.Fatalf("show -o json: %+v", r)
	}
	var want bytes.Buffer
	_ = json.Indent(&want, []byte(view), "", "  ")
	want.WriteByte('\n')
	if r.stdout != want.String() {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want.String())
	}

	// The table view of the same answer.
	r = runCLI(t, "", "clusters", "show", "c1")
	if r.code != 0 || !strings.Contains(r.stdout, "10.0.0.1") || !strings.Contains(r.stdout, "lease expires  never") {
		t.Errorf("show:\n%s", r.stdout)
	}

	// -o yaml is the same answer as YAML.
	if r := runCLI(t, "", "clusters", "show", "c1", "-o", "yaml"); r.code != 0 || !strings.Contains(r.stdout, "access_v4: 10.0.0.1\n") {
		t.Errorf("-o yaml: %+v", r)
	}
	if r := runCLI(t, "", "clusters", "show", "c1", "-o", "xml"); r.code != 1 || !strings.Contains(r.stderr, "table, json or yaml") {
		t.Errorf("-o xml: %+v", r)
	}
}

func TestTenantsCreate(t *testing.T) {
	api := fakeEnv(t, "hdl_super")
	api.reply("POST /v1/tenants", 201, `{"tenant":{"id":"acme","workers":4,"maxClusters":10,"maxNodes":100,"usage":{"clusters":0,"nodes":0}},
		"adminKey":{"id":"key_1","tenantId":"acme","user":"alice","secret":"hdl_secret"}}`)
	r := runCLI(t, "", "tenants", "create", "acme", "--max-clusters", "10", "--max-nodes", "100", "--workers", "4", "--admin", "alice")
	if r.code != 0 || !strings.Contains(r.stdout, "  hdl_secret\n") {
		t.Fatalf("tenants create: %+v", r)
	}
	var sent map[string]any
	if err := json.Unmarshal(api.last(t).Body, &sent); err != nil {
		t.Fatal(err)
	}
	if sent["id"] != "acme" || sent["maxClusters"] != 10.0 || sent["maxNodes"] != 100.0 || sent["workers"] != 4.0 || sent["admin"] != "alice" {
		t.Errorf("sent %v", sent)
	}
}

func TestMutationRequests(t *testing.T) {
	api := fakeEnv(t, "hdl_user")
	accepted := `{"cluster":{"id":"c1","name":"web1","status":"ACTIVE"},"job":{"id":"j2","clusterId":"c1","operation":"x","status":"PENDING"}}`
	for _, p := range []string{"DELETE /v1/clusters/c1", "POST /v1/clusters/c1/expand", "POST /v1/clusters/c1/shrink",
		"POST /v1/clusters/c1/reconfigure", "POST /v1/clusters/c1/rolling-restart", "POST /v1/clusters/c1/stop",
		"POST /v1/clusters/c1/add-services", "POST /v1/clusters/c1/remove-services", "POST /v1/clusters/c1/sync"} {
		api.reply(p, 202, accepted)
	}
	for _, tc := range []struct {
		args             []string
		method, path, qs string
		body             string
	}{
		{[]string{"clusters", "delete", "c1", "--force"}, "DELETE", "/v1/clusters/c1", "force=true", ""},
		{[]string{"clusters", "expand", "c1", "--count", "2"}, "POST", "/v1/clusters/c1/expand", "", `{"count":2}`},
		{[]string{"clusters", "shrink", "c1", "--nodes", "c1-1001,c1-1002"}, "POST", "/v1/clusters/c1/shrink", "", `{"nodeIds":["c1-1001","c1-1002"]}`},
		{[]string{"clusters", "reconfigure", "c1", "--config", `{"port":8080}`, "--restart"}, "POST", "/v1/clusters/c1/reconfigure", "", `{"config":{"port":8080},"restart":true}`},
		{[]string{"clusters", "rolling-restart", "c1", "--batch-size", "2", "--services", "web"}, "POST", "/v1/clusters/c1/rolling-restart", "", `{"services":["web"],"batchSize":2}`},
		{[]string{"clusters", "stop", "c1"}, "POST", "/v1/clusters/c1/stop", "", `{}`},
		{[]string{"clusters", "add-services", "c1", "--services", "lb", "--max-new-nodes", "1"}, "POST", "/v1/clusters/c1/add-services", "", `{"services":["lb"],"maxNewNodes":1}`},
		{[]string{"clusters", "remove-services", "c1", "--services", "lb"}, "POST", "/v1/clusters/c1/remove-services", "", `{"services":["lb"]}`},
		{[]string{"clusters", "sync", "c1", "--template-version", "2"}, "POST", "/v1/clusters/c1/sync", "", `{"templateVersion":2}`},
	} {
		r := runCLI(t, "", tc.args...)
		if r.code != 0 || !strings.Contains(r.stdout, "job      j2") {
			t.Errorf("%v: %+v", tc.args, r)
			continue
		}
		got := api.last(t)
		if got.Method != tc.method || got.Path != tc.path || got.Query != tc.qs || strings.TrimSpace(string(got.Body)) != tc.body {
			t.Errorf("%v sent %s %s?%s %s", tc.args, got.Method, got.Path, got.Query, got.Body)
		}
	}
	if r := runCLI(t, "", "clusters", "shrink", "c1"); r.code != 1 {
		t.Errorf("shrink without --count or --nodes: %+v", r)
	}
	if r := runCLI(t, "", "clusters", "reconfigure", "c1", "--config", "[1]"); r.code != 1 || !strings.Contains(r.stderr, "JSON object") {
		t.Errorf("reconfigure with a non-object config: %+v", r)
	}
}

func TestBuiltinCommands(t *testing.T) {
	isolate(t)
	for _, args := range [][]string{{"version"}, {"keygen"}, {"completion", "bash"}, {"completion", "zsh"}, {"completion", "fish"}} {
		r := runCLI(t, "", args...)
		if r.code != 0 || r.stdout == "" {
			t.Errorf("%v: %+v", args, r)
		}
	}
	if r := runCLI(t, "", "keygen"); !strings.HasPrefix(r.stdout, "hdl_") {
		t.Errorf("keygen printed %q", r.stdout)
	}
	// version says what buildinfo read, not a fixed word.
	if r := runCLI(t, "", "version"); r.stdout != buildinfo.Read().String()+"\n" || !strings.HasPrefix(r.stdout, "heddle ") {
		t.Errorf("version printed %q", r.stdout)
	}
}

func TestUsageBarsScaleToTheLargest(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	printUsage(&out, &usage.Report{GroupBy: usage.ByCluster, Step: usage.Day,
		Rows: []usage.Row{{Group: "big", Total: 10}, {Group: "small", Total: 2.5}, {Group: "tiny", Total: 0.01}}}, true, nil)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 5)
	require.Equal(t, 30, strings.Count(lines[2], "█"))
	require.Equal(t, 8, strings.Count(lines[3], "█"))
	require.Equal(t, 1, strings.Count(lines[4], "█"), "a group that used anything shows")
	out.Reset()
	printUsage(&out, &usage.Report{Rows: []usage.Row{{Group: "big", Total: 10}}}, false, nil)
	require.NotContains(t, out.String(), "█", "no bars off a terminal")
	out.Reset()
	printUsage(&out, &usage.Report{GroupBy: usage.ByCluster, Rows: []usage.Row{{Group: "c1", Total: 10}, {Group: "c2", Total: 1}}}, false,
		map[string]string{"c1": "shop"})
	require.Regexp(t, `(?m)^CLUSTER\s+NAME\s+NODE-HOURS\s*$`, out.String())
	require.Regexp(t, `(?m)^c1\s+shop\s+10\.00\s*$`, out.String(), "a cluster's name beside its id")
	require.Regexp(t, `(?m)^c2\s+-\s+1\.00\s*$`, out.String(), "a cluster the caller cannot list has no name")
}

func TestJobsTasksAllFollowsCursors(t *testing.T) {
	api := fakeEnv(t, "hdl_user")
	api.mux.HandleFunc("GET /v1/clusters/c1/jobs/j1/tasks", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("status") != "FAILED" {
			t.Errorf("the filter was not sent: %s", r.URL.RawQuery)
		}
		switch r.URL.Query().Get("cursor") {
		case "":
			_, _ = io.WriteString(w, `{"items":[{"id":"n1/install","status":"FAILED","action":"install"}],"nextCursor":"p2"}`)
		case "p2":
			_, _ = io.WriteString(w, `{"items":[{"id":"n2/install","status":"FAILED","action":"install"}]}`)
		default:
			t.Errorf("unexpected cursor %q", r.URL.Query().Get("cursor"))
		}
	})
	r := runCLI(t, "", "jobs", "tasks", "c1", "j1", "--status", "failed")
	if r.code != 0 || !strings.Contains(r.stdout, "n1/install") || strings.Contains(r.stdout, "n2/install") || !strings.Contains(r.stdout, "--cursor p2") {
		t.Fatalf("one page with how to get the next: %+v", r)
	}
	r = runCLI(t, "", "jobs", "tasks", "c1", "j1", "--status", "failed", "--all")
	if r.code != 0 || !strings.Contains(r.stdout, "n1/install") || !strings.Contains(r.stdout, "n2/install") || strings.Contains(r.stdout, "more:") {
		t.Fatalf("--all follows the cursors to the end: %+v", r)
	}
}

func TestClustersShowSummarizes(t *testing.T) {
	api := fakeEnv(t, "hdl_user")
	api.reply("GET /v1/clusters/c1", http.StatusOK, `{"id":"c1","name":"big","status":"ACTIVE","nodeCount":250,
		"layout":[{"hardwareType":"small","imageType":"debian","services":["web"],"count":249},{"hardwareType":"small","imageType":"debian","services":["lb"],"count":1}],
		"nodeStatus":{"ACTIVE":250},"nodes":[{"id":"c1-1000","status":"ACTIVE","services":["lb"]}],"nodesOmitted":249}`)
	r := runCLI(t, "", "clusters", "show", "c1")
	for _, want := range []string{"250 ACTIVE", "249", "and 249 more nodes: heddle clusters nodes c1 --all"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
}
