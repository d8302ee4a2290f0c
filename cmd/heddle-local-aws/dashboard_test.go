package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// chromium is Debian's browser, which .ci/run installs.
const chromium = "/usr/bin/chromium"

// TestDashboardThroughTheFrontDoor: the api function serves the dashboard
// (its page on template.yaml's Root route, its files and the API it calls
// on /{proxy+}), so headless Chromium pointed at the front door logs in
// with the tenant admin's key, lists the cluster the CLI created, and
// follows it to ACTIVE, with no error in the page.
func TestDashboardThroughTheFrontDoor(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing; .ci/run installs Debian's chromium", chromium)
		}
		t.Skipf("%s is missing (apt-get install chromium)", chromium)
	}
	d := setup(t)
	need(t, "HEDDLE_SSH_HOSTS", "scripts/sshd-hosts.sh")
	d.createTenant("2", "10", "2")
	d.registerHostsAs("acme", 1, "dash")
	d.mustHeddle("apply", "-f", "testdata/static-catalog.yaml")
	out := d.mustHeddle("clusters", "create", "seen", "--template", "pair", "--size", "1", "-o", "json")
	var created struct {
		Cluster struct {
			ID string `json:"id"`
		} `json:"cluster"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &created), out)

	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-networking", true), chromedp.UserDataDir(t.TempDir()))
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	require.NoError(t, chromedp.Do(bctx), "starting %s", chromium)
	var mu sync.Mutex
	var problems []string
	require.NoError(t, chromedp.Listen(bctx, func(ev any) {
		var p string
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			p = "exception: " + e.ExceptionDetails.Text
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				p = fmt.Sprintf("console.error: %v", e.Args)
			}
		}
		if p != "" {
			mu.Lock()
			problems = append(problems, p)
			mu.Unlock()
		}
	}))
	ctx, cancel := context.WithTimeout(bctx, 3*time.Minute)
	defer cancel()
	until := func(expr string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute))
	}
	type css = chromedp.CSS
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(d.ready.Endpoint+"/"),
		chromedp.WaitVisible(css("#key")),
		chromedp.SendKeys(css("#key"), d.key),
		chromedp.Click(css("#login-submit")),
		chromedp.WaitVisible(css("#clusters")),
		until(`document.querySelector('#whoami').textContent.includes('ann')`),
		until(fmt.Sprintf(`document.querySelector('#clusters').textContent.includes(%q)`, created.Cluster.ID)),
		chromedp.Navigate(d.ready.Endpoint+"/#/clusters/"+created.Cluster.ID),
		until(`(() => { const i = document.querySelector('#cluster-info'); return !!i && i.dataset.status === 'ACTIVE'; })()`),
	), "the dashboard through the front door")
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, problems, "errors in the page: %s", strings.Join(problems, "\n"))
}
