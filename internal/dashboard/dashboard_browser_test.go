package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/demotest"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/localserver"
)

// chromium is Debian's browser, which .ci/run installs.
const chromium = "/usr/bin/chromium"

type server struct {
	t     *testing.T
	srv   *localserver.Server
	super string
	admin string
}

func startServer(t *testing.T) *server { return startServerWith(t, engine.Config{}) }

// startServerWith starts a local server whose engine takes ecfg.
func startServerWith(t *testing.T, ecfg engine.Config) *server {
	t.Helper()
	s := &server{t: t, super: access.NewKeySecret()}
	srv, err := localserver.Start(context.Background(), localserver.Config{
		DataDir: t.TempDir(), Listen: "127.0.0.1:0", BootstrapKey: s.super, Version: "test",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), JanitorPeriod: 200 * time.Millisecond, Engine: ecfg,
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	s.srv = srv
	return s
}

// call sends one API request (see demotest.Call).
func (s *server) call(key, method, path string, body, out any) int {
	s.t.Helper()
	return demotest.Call(s.t, s.srv.URL(), key, method, path, body, out)
}

// tenant creates tenant acme with admin ann and applies the demo catalog.
func (s *server) tenant() {
	s.t.Helper()
	s.admin = demotest.Tenant(s.t, s.srv.URL(), s.super, "acme", 20)
}

// The local server serves the dashboard at / and leaves /v1 to the API.
func TestDashboardMountedNextToTheAPI(t *testing.T) {
	s := startServer(t)
	get := func(path string) (*http.Response, string) {
		resp, err := testHTTP.Get(s.srv.URL() + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(data)
	}
	resp, body := get("/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'self'")
	require.Contains(t, body, "app.js")

	resp, body = get("/v1/status")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "application/json")
	require.Contains(t, body, `"status"`)

	for _, path := range []string{"/v1", "/v1/no-such-thing", "/v1/clusters"} {
		resp, body = get(path)
		require.Contains(t, []int{http.StatusNotFound, http.StatusUnauthorized}, resp.StatusCode, path)
		require.Contains(t, resp.Header.Get("Content-Type"), "application/json", path)
		require.Contains(t, body, `"error"`, "%s answers the API's envelope, not a page", path)
	}
}

// browser starts a headless Debian Chromium with a fresh profile and
// collects what the page logs as an error (exceptions, console errors,
// failed loads, Content-Security-Policy violations).
func browser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	return browserFor(t, 90*time.Second)
}

// browserFor is browser whose context ends after limit.
func browserFor(t *testing.T, limit time.Duration) (context.Context, func() []string) {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing; .ci/run installs Debian's chromium", chromium)
		}
		t.Skipf("%s is missing (apt-get install chromium)", chromium)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	// The first call starts the browser, on a context without a deadline
	// (a deadline there would bound the browser's life, not the call's).
	require.NoError(t, chromedp.Do(bctx), "starting %s", chromium)

	var mu sync.Mutex
	var problems []string
	require.NoError(t, chromedp.Listen(bctx, func(ev any) {
		var p string
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			p = "exception: " + e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				p += " " + e.ExceptionDetails.Exception.Description
			}
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value))
				}
				p = "console.error: " + strings.Join(args, " ")
			}
		case *log.EventEntryAdded:
			// The API's refusals the tests provoke (422 for the bad
			// template, 409 for deleting a script a service runs) are
			// expected; anything else the browser logs as an error is not.
			if e.Entry.Level == log.EntryLevelError && !strings.Contains(e.Entry.Text, "status of 422") &&
				!strings.Contains(e.Entry.Text, "status of 409") {
				p = "log: " + e.Entry.Text + " " + e.Entry.URL
			}
		}
		if p != "" {
			mu.Lock()
			problems = append(problems, p)
			mu.Unlock()
		}
	}))
	ctx, cancel := context.WithTimeout(bctx, limit)
	t.Cleanup(cancel)
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}

// shots saves full-page screenshots, numbered in order, into
// HEDDLE_SCREENSHOTS (CI keeps them as artifacts) or a temporary directory.
type shots struct {
	t   *testing.T
	dir string
	n   int
}

func newShots(t *testing.T) *shots {
	dir := os.Getenv("HEDDLE_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return &shots{t: t, dir: dir}
}

func (s *shots) take(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		buf, err := chromedp.FullScreenshot(100)(ctx, tg)
		if err != nil {
			return err
		}
		s.n++
		path := filepath.Join(s.dir, fmt.Sprintf("%02d-%s.png", s.n, name))
		s.t.Logf("screenshot %s", path)
		return os.WriteFile(path, buf, 0o644)
	})
}

// until waits for a JavaScript condition on the page.
func until(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second))
}

// css shortens the selectors below.
type css = chromedp.CSS

// clusterIs is true when the detail page shows the cluster with the status,
// node count and latest job.
func clusterIs(status string, nodes int, operation string) string {
	return fmt.Sprintf(`(() => {
		const info = document.querySelector('#cluster-info');
		const job = document.querySelector('#progress');
		return !!info && info.dataset.status === %q &&
			document.querySelectorAll('#nodes tr[data-node]').length === %d &&
			!!job && job.dataset.operation === %q && job.dataset.status === 'SUCCEEDED';
	})()`, status, nodes, operation)
}

// steps returns step, which runs actions and fails the test with the step's
// name, and value, which reads one value from the page.
func steps(t *testing.T, ctx context.Context, start time.Time) (
	step func(string, ...chromedp.Action[chromedp.Void]), value func(string, chromedp.Action[string]) string,
) {
	step = func(name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(ctx, actions...), "step %q (after %s)", name, time.Since(start).Round(time.Millisecond))
	}
	value = func(name string, a chromedp.Action[string]) string {
		t.Helper()
		v, err := chromedp.Run(ctx, a)
		require.NoError(t, err, "step %q", name)
		return v
	}
	return step, value
}

// login logs in on the login page with key and waits for the clusters page
// of user.
func login(key, user string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.WaitVisible(css("#key")),
		chromedp.SendKeys(css("#key"), key),
		chromedp.Click(css("#login-submit")),
		chromedp.WaitVisible(css("#clusters")),
		until(fmt.Sprintf(`document.querySelector('#whoami').textContent.includes(%q)`, user)))
}

// TestDashboardClusterLifecycleInBrowser drives the dashboard in headless
// Chromium the way a person would: log in with a key, create a cluster
// from the demo template after seeing its plan, watch it reach ACTIVE,
// expand it, delete it (through the confirmation dialog), and see the
// field-level validation error of a bad template.
func TestDashboardClusterLifecycleInBrowser(t *testing.T) {
	ctx, problems := browser(t)
	s := startServer(t)
	s.tenant()
	shot := newShots(t)
	start := time.Now()
	step, value := steps(t, ctx, start)

	step("login",
		chromedp.Navigate(s.srv.URL()+"/"),
		chromedp.WaitVisible(css("#key")),
		shot.take("login"),
		login(s.admin, "ann"),
		shot.take("clusters-empty"))
	stored := value("key in session storage only", chromedp.Evaluate[string](
		`sessionStorage.getItem('heddle.key') + '|' + location.href + '|' + localStorage.length`))
	require.Equal(t, s.admin+"|"+s.srv.URL()+"/#/clusters|0", stored, "the key is in session storage, never in the URL")

	step("plan preview",
		chromedp.Click(css(`#nav a[href="#/clusters/new"]`)),
		chromedp.WaitVisible(css("#cluster-name")),
		until(`!!document.querySelector('#cluster-template option[value="web"]')`),
		chromedp.SendKeys(css("#cluster-name"), "shop"),
		chromedp.SetValue(css("#cluster-template"), "web"),
		chromedp.SetValue(css("#cluster-size"), "3"),
		chromedp.Click(css("#preview-button")),
		chromedp.WaitVisible(css("#plan-summary")),
		until(`document.querySelectorAll('#plan-layout tbody tr').length === 3`),
		shot.take("plan-preview"))
	require.Regexp(t, `^\d+ tasks in \d+ stages`, value("plan summary", chromedp.Text(css("#plan-summary"))))
	var none struct {
		Items []any `json:"items"`
	}
	require.Equal(t, http.StatusOK, s.call(s.admin, "GET", "/v1/clusters", nil, &none))
	require.Empty(t, none.Items, "the preview creates nothing")

	step("create and watch it reach ACTIVE",
		chromedp.Click(css("#confirm-create")),
		chromedp.WaitVisible(css("#cluster-info")),
		shot.take("creating"),
		until(clusterIs("ACTIVE", 3, "create")),
		shot.take("active"))

	step("the list shows it ACTIVE",
		chromedp.Click(css(`#nav a[href="#/clusters"]`)),
		until(`(() => { const r = document.querySelector('#clusters tr[data-name="shop"]');
			return !!r && r.querySelector('.status').textContent === 'ACTIVE'; })()`),
		shot.take("list-active"),
		chromedp.Click(css(`#clusters tr[data-name="shop"] a`)),
		until(clusterIs("ACTIVE", 3, "create")))

	step("a cluster's page by its name (GET /v1/clusters?name=, as the CLI looks it up)",
		chromedp.Navigate(s.srv.URL()+"/#/clusters/shop"),
		until(`/^#\/clusters\/c[0-9a-f]+$/.test(location.hash)`),
		until(clusterIs("ACTIVE", 3, "create")))

	step("expand by one",
		chromedp.SetValue(css("#expand-count"), "1"),
		chromedp.Click(css("#expand")),
		until(`!!document.querySelector('#action-result a')`),
		until(clusterIs("ACTIVE", 4, "expand")),
		until(`[...document.querySelectorAll('#nodes tr[data-node] .status')].every((b) => b.textContent === 'ACTIVE')`),
		// Every service on every node shows the run state the jobs left it in.
		until(`(() => { const s = [...document.querySelectorAll('#nodes tr[data-node] .service-states [data-service]')];
			return s.length >= 4 && s.every((d) => d.dataset.state === 'running'); })()`),
		shot.take("expanded"))

	step("the job view lists the expand's tasks and reads a task's output when opened",
		chromedp.Click(css("#progress a")),
		chromedp.WaitVisible(css(`#job-info[data-status="SUCCEEDED"]`)),
		until(`document.querySelectorAll('#tasks tr[data-task][data-status="SUCCEEDED"]').length > 0`),
		until(`!!document.querySelector('#tasks tr[data-task] details')`),
		chromedp.Click(css(`#tasks tr[data-task] details summary`)),
		until(`(() => { const d = document.querySelector('#tasks tr[data-task] details');
			return d.open && !d.textContent.includes('Loading'); })()`),
		shot.take("job"),
		chromedp.Click(css(`main a[href^="#/clusters/"]`)),
		until(clusterIs("ACTIVE", 4, "expand")))

	step("delete through the confirmation dialog",
		chromedp.Click(css("#delete")),
		chromedp.WaitVisible(css("#confirm-ok")),
		shot.take("confirm-delete"),
		chromedp.Click(css("#confirm-ok")),
		until(`document.querySelector('#cluster-info')?.dataset.status === 'TERMINATED'`),
		shot.take("terminated"))

	step("open the web template in the catalog",
		chromedp.Click(css(`#nav a[href="#/catalog"]`)),
		chromedp.Click(css(`#kinds a[href="#/catalog/clustertemplates"]`)),
		chromedp.Click(css(`#entities a[href="#/catalog/clustertemplates/web"]`)),
		until(`document.querySelector('#entity-json')?.value.includes('"constraints"')`))
	var tmpl map[string]any
	require.NoError(t, json.Unmarshal([]byte(value("read the template", chromedp.Value(css("#entity-json")))), &tmpl))
	tmpl["constraints"].(map[string]any)["size"] = map[string]any{"min": 30, "max": 20}
	bad, err := json.MarshalIndent(tmpl, "", "  ")
	require.NoError(t, err)

	step("save a bad template and see the field's error",
		chromedp.SetValue(css("#entity-json"), string(bad)),
		chromedp.Click(css("#save-entity")),
		chromedp.WaitVisible(css(`#entity-errors li[data-field="constraints.size"]`)),
		shot.take("validation-error"))
	require.Contains(t, value("message", chromedp.Text(css("#entity-errors .message"))), "not valid")
	problem := value("problem", chromedp.Text(css(`#entity-errors li[data-field="constraints.size"]`)))
	require.Contains(t, problem, "constraints.size")
	require.Contains(t, problem, "min 30 is greater than max 20")
	var web struct {
		Version int `json:"version"`
	}
	require.Equal(t, http.StatusOK, s.call(s.admin, "GET", "/v1/clustertemplates/web", nil, &web))
	require.Equal(t, 1, web.Version, "a refused PUT changes nothing")

	require.Empty(t, problems(), "the page logged errors")
	t.Logf("browser flow took %s", time.Since(start).Round(time.Millisecond))
}

// visible is a JavaScript test that the element exists and is not hidden.
func visible(selector string) string {
	return fmt.Sprintf(`(() => { const el = document.querySelector(%q); return !!el && !el.hidden && el.offsetParent !== null; })()`, selector)
}

// TestDashboardAdminPagesInBrowser drives the admin pages: the tenant admin
// creates a user and an API key for them (whose secret is shown once), and
// the superadmin creates a tenant and changes its quotas.
func TestDashboardAdminPagesInBrowser(t *testing.T) {
	ctx, problems := browser(t)
	s := startServer(t)
	s.tenant()
	shot := newShots(t)
	shot.n = 50 // after the cluster flow's screenshots
	start := time.Now()
	step, value := steps(t, ctx, start)

	step("log in as the tenant admin: Users, but no Tenants",
		chromedp.Navigate(s.srv.URL()+"/"),
		login(s.admin, "ann"),
		until(visible("#nav-users")),
		until(`document.querySelector('#nav-tenants').hidden`))

	step("create user bob",
		chromedp.Click(css("#nav-users")),
		until(`!!document.querySelector('#users tr[data-user="ann"]')`),
		chromedp.SendKeys(css("#user-name"), "bob"),
		chromedp.SetValue(css("#user-role"), "user"),
		chromedp.Click(css("#create-user")),
		until(`!!document.querySelector('#users tr[data-user="bob"]')`),
		shot.take("users"))
	require.Equal(t, "user", value("bob's role", chromedp.Text(css(`#users tr[data-user="bob"] td:nth-child(2)`))))
	var bob struct {
		Role string `json:"role"`
	}
	require.Equal(t, http.StatusOK, s.call(s.admin, "GET", "/v1/users/bob", nil, &bob))
	require.Equal(t, "user", bob.Role)

	step("create a key for bob",
		chromedp.Click(css(`#users tr[data-user="bob"] a`)),
		chromedp.WaitVisible(css("#create-key")),
		until(`!!document.querySelector('#keys p, #keys table')`),
		chromedp.Click(css("#create-key")),
		chromedp.WaitVisible(css("#new-key-secret")),
		until(`document.querySelectorAll('#keys tr[data-key]').length === 1`),
		shot.take("new-key"))
	secret := value("the secret", chromedp.Text(css("#new-key-secret")))
	require.True(t, strings.HasPrefix(secret, "hdl_"), "secret %q", secret)
	require.Contains(t, value("the note", chromedp.Text(css("#new-key"))), "will not be shown again")
	var me struct {
		User string `json:"user"`
		Role string `json:"role"`
	}
	require.Equal(t, http.StatusOK, s.call(secret, "GET", "/v1/me", nil, &me))
	require.Equal(t, "bob", me.User, "the shown secret is bob's key")

	step("the secret is gone after navigating away and back",
		chromedp.Click(css(`main a[href="#/users"]`)),
		until(`!!document.querySelector('#users tr[data-user="bob"]')`),
		chromedp.Click(css(`#users tr[data-user="bob"] a`)),
		until(`document.querySelectorAll('#keys tr[data-key]').length === 1`),
		shot.take("keys-later"))
	page := value("the keys page", chromedp.Evaluate[string](
		`(document.querySelector('#new-key') ? 'BOX ' : '') + document.body.innerText + JSON.stringify(sessionStorage)`))
	require.NotContains(t, page, "BOX ", "the secret box is shown only once")
	require.NotContains(t, page, secret, "the secret is shown only once")

	step("log out and in as the superadmin: Tenants",
		chromedp.Click(css("#logout")),
		login(s.super, "superadmin"),
		until(visible("#nav-tenants")),
		chromedp.Click(css("#nav-tenants")),
		until(`!!document.querySelector('#tenants tr[data-tenant="acme"]')`),
		shot.take("tenants"))
	require.Equal(t, "0 / 5", value("acme's clusters", chromedp.Text(css(`#tenants tr[data-tenant="acme"] td.clusters`))))

	step("create tenant globex",
		chromedp.SendKeys(css("#tenant-id"), "globex"),
		chromedp.SetValue(css("#tenant-max-clusters"), "3"),
		chromedp.SetValue(css("#tenant-max-nodes"), "12"),
		chromedp.SetValue(css("#tenant-workers"), "2"),
		chromedp.SendKeys(css("#tenant-admin"), "gina"),
		chromedp.Click(css("#create-tenant")),
		chromedp.WaitVisible(css("#new-key-secret")),
		until(`!!document.querySelector('#tenants tr[data-tenant="globex"]')`),
		shot.take("tenant-created"))
	row := `#tenants tr[data-tenant="globex"] `
	require.Equal(t, "0 / 3", value("globex's clusters", chromedp.Text(css(row+"td.clusters"))))
	require.Equal(t, "0 / 12", value("globex's nodes", chromedp.Text(css(row+"td.nodes"))))
	require.Equal(t, "2", value("globex's workers", chromedp.Text(css(row+"td.workers"))))
	gina := value("gina's secret", chromedp.Text(css("#new-key-secret")))
	require.Equal(t, http.StatusOK, s.call(gina, "GET", "/v1/me", nil, &me))
	require.Equal(t, "gina", me.User)
	require.Equal(t, "admin", me.Role)

	step("raise globex's node quota",
		chromedp.Click(css(row+"a")),
		chromedp.WaitVisible(css("#save-tenant")),
		chromedp.SetValue(css("#tenant-max-nodes"), "16"),
		chromedp.Click(css("#save-tenant")),
		until(`document.querySelector('#tenants tr[data-tenant="globex"] td.nodes')?.textContent === '0 / 16'`),
		shot.take("tenant-updated"))
	var globex struct {
		MaxNodes int   `json:"maxNodes"`
		Version  int64 `json:"version"`
	}
	require.Equal(t, http.StatusOK, s.call(s.super, "GET", "/v1/tenants/globex", nil, &globex))
	require.Equal(t, 16, globex.MaxNodes)
	require.EqualValues(t, 2, globex.Version)

	step("delete tenant globex through the confirmation dialog",
		chromedp.Click(css(row+"button.delete-tenant")),
		chromedp.WaitVisible(css("#confirm-ok")),
		chromedp.Click(css("#confirm-ok")),
		until(`!document.querySelector('#tenants tr[data-tenant="globex"]')`),
		shot.take("tenant-deleted"))
	require.Equal(t, "Tenant globex deleted.", value("the result", chromedp.Text(css("#tenant-result p.ok"))))
	require.Equal(t, http.StatusNotFound, s.call(s.super, "GET", "/v1/tenants/globex", nil, nil))

	require.Empty(t, problems(), "the page logged errors")
	t.Logf("admin flow took %s", time.Since(start).Round(time.Millisecond))
}

// TestDashboardScriptsInBrowser drives the scripts pages as a tenant admin:
// upload a script from a file, push a second version from the editor, show
// the first again, and see the delete refused, with the service that runs
// the script, through the confirmation dialog.
func TestDashboardScriptsInBrowser(t *testing.T) {
	ctx, problems := browser(t)
	s := startServer(t)
	s.tenant()
	shot := newShots(t)
	shot.n = 80 // after the other flows' screenshots
	start := time.Now()
	step, value := steps(t, ctx, start)
	file := filepath.Join(t.TempDir(), "hello.sh")
	require.NoError(t, os.WriteFile(file, []byte("echo one > /dev/null\n"), 0o600))

	step("log in and open Scripts",
		chromedp.Navigate(s.srv.URL()+"/"),
		login(s.admin, "ann"),
		chromedp.Click(css("#nav-scripts")),
		until(`document.querySelector('#scripts')?.textContent.includes('No scripts yet')`))

	step("upload hello from a file",
		chromedp.SendKeys(css("#script-name"), "hello"),
		chromedp.SetUploadFiles(css("#script-file"), []string{file}),
		until(`document.querySelector('#script-text').value === 'echo one > /dev/null\n'`),
		chromedp.Click(css("#upload-script")),
		until(`document.querySelector('#script-content')?.dataset.version === '1'`),
		shot.take("script"))
	require.Equal(t, "echo one > /dev/null", strings.TrimSpace(value("the content", chromedp.Text(css("#script-content")))))

	step("push version 2 from the editor",
		until(`document.querySelector('#script-text')?.value === 'echo one > /dev/null\n'`),
		chromedp.SetValue(css("#script-text"), "echo two\n"),
		chromedp.Click(css("#upload-script")),
		until(`document.querySelector('#script-content')?.dataset.version === '2'`),
		until(`document.querySelectorAll('#script-versions tr[data-version]').length === 2`))

	step("show version 1 again",
		chromedp.Click(css(`#script-versions tr[data-version="1"] button.show-version`)),
		until(`document.querySelector('#script-content')?.dataset.version === '1'`))
	var versions struct {
		Items []struct {
			Version int `json:"version"`
		} `json:"items"`
	}
	require.Equal(t, http.StatusOK, s.call(s.admin, "GET", "/v1/scripts/hello/versions", nil, &versions))
	require.Len(t, versions.Items, 2)

	service := map[string]any{"actions": map[string]any{"start": map[string]any{"type": "shell", "fields": map[string]any{"script_resource": "hello"}}}}
	require.Equal(t, http.StatusCreated, s.call(s.admin, "PUT", "/v1/services/app", service, nil))
	step("delete is refused while a service runs it",
		chromedp.Click(css("#delete-script")),
		chromedp.WaitVisible(css("#confirm-ok")),
		chromedp.Click(css("#confirm-ok")),
		until(`document.querySelector('#script-delete-result .error')?.textContent.includes('services/app')`),
		shot.take("script-in-use"))
	require.Equal(t, http.StatusOK, s.call(s.admin, "GET", "/v1/scripts/hello", nil, nil))

	step("the list shows hello at version 2",
		chromedp.Click(css(`main a[href="#/scripts"]`)),
		until(`document.querySelector('#scripts tr[data-script="hello"] td.version')?.textContent === '2'`),
		shot.take("scripts"))

	require.Empty(t, problems(), "the page logged errors")
	t.Logf("scripts flow took %s", time.Since(start).Round(time.Millisecond))
}

// TestDashboardLargeJobInBrowser opens a job of over 40,000 tasks (a
// 10,000-node create on a server without workers, so it stays as
// submitted): the page shows the counts, one page of tasks in view order,
// filters by status and pages on, never reading the job whole.
func TestDashboardLargeJobInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("submits a 10,000-node create")
	}
	// The browser's context runs from here: it covers the wait (up to ten
	// minutes, a liveness bound) for the job to start as well as the page.
	ctx, problems := browserFor(t, 12*time.Minute)
	s := &server{t: t, super: access.NewKeySecret()}
	srv, err := localserver.Start(context.Background(), localserver.Config{
		DataDir: t.TempDir(), Listen: "127.0.0.1:0", BootstrapKey: s.super, Version: "test", NoWorkers: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), JanitorPeriod: time.Hour,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	s.srv = srv
	s.admin = demotest.TenantWithCatalog(t, srv.URL(), s.super, "acme", 10000, demotest.BigCatalog)
	var created struct {
		Cluster struct{ ID string } `json:"cluster"`
		Job     struct {
			ID        string `json:"id"`
			TaskTotal int    `json:"taskTotal"`
		} `json:"job"`
	}
	require.Equal(t, http.StatusAccepted, s.call(s.admin, "POST", "/v1/clusters", map[string]any{"name": "huge", "template": "big", "size": 10000}, &created))
	require.GreaterOrEqual(t, created.Job.TaskTotal, 40000)
	require.Eventually(t, func() bool {
		var job struct{ Status string }
		s.call(s.admin, "GET", fmt.Sprintf("/v1/clusters/%s/jobs/%s", created.Cluster.ID, created.Job.ID), nil, &job)
		return job.Status == "RUNNING"
	}, 10*time.Minute, 100*time.Millisecond, "the job, planned and written in the background, starts (minutes under -race on a loaded machine: a liveness bound)")
	shot := newShots(t)
	step, value := steps(t, ctx, time.Now())

	step("open the job",
		chromedp.Navigate(srv.URL()+"/"),
		login(s.admin, "ann"),
		chromedp.Navigate(fmt.Sprintf("%s/#/clusters/%s/jobs/%s", srv.URL(), created.Cluster.ID, created.Job.ID)),
		chromedp.WaitVisible(css("#task-counts")),
		until(`document.querySelectorAll('#tasks tr[data-task]').length === 50`),
		shot.take("large-job"))
	// No task failed or runs (no workers): the view order is then the
	// forward plan's ids, ready and blocked tasks together.
	require.Equal(t, "sorted", value("rows", chromedp.Evaluate[string](`(() => {
		const ids = [...document.querySelectorAll('#tasks tr[data-task]')].map((r) => r.dataset.task);
		return ids.every((id, i) => i === 0 || ids[i - 1] < id) ? 'sorted' : ids.join(' ');
	})()`)))
	require.Contains(t, value("counts", chromedp.Text(css("#task-counts"))), "BLOCKED")

	step("filter by status and page on",
		chromedp.SetValue(css("#task-status"), "BLOCKED"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#task-status').dispatchEvent(new Event('change'))`),
		until(`(() => { const rows = [...document.querySelectorAll('#tasks tr[data-task]')];
			return rows.length === 50 && rows.every((r) => r.dataset.status === 'BLOCKED'); })()`),
		chromedp.Evaluate[chromedp.Void](`window.firstBlocked = document.querySelector('#tasks tr[data-task]').dataset.task`),
		chromedp.Click(css("#tasks-next")),
		until(`document.querySelector('#tasks-page').textContent.startsWith('Page 2') &&
			document.querySelector('#tasks tr[data-task]').dataset.task !== window.firstBlocked`),
		chromedp.Click(css("#tasks-prev")),
		until(`document.querySelector('#tasks-page').textContent.startsWith('Page 1') &&
			document.querySelector('#tasks tr[data-task]').dataset.task === window.firstBlocked`),
		shot.take("large-job-blocked"))
	require.Empty(t, problems())
}
