package dashboard_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/demotest"
)

// TestDashboardShowsHealthAndEventsInBrowser: the clusters list shows each
// cluster's health, the cluster page its latest verification (with the
// checks that did not pass) and its events, and "Verify now" runs another.
func TestDashboardShowsHealthAndEventsInBrowser(t *testing.T) {
	ctx, problems := browser(t)
	s := startServer(t)
	s.admin = demotest.TenantWithCatalog(t, s.srv.URL(), s.super, "acme", 10, "../../docs/examples/health-catalog.yaml")
	var created struct {
		Cluster struct{ ID string } `json:"cluster"`
	}
	require.Equal(t, http.StatusAccepted, s.call(s.admin, "POST", "/v1/clusters",
		map[string]any{"name": "probes", "template": "health", "size": 1, "services": []string{"steady", "broken"}}, &created))
	id := created.Cluster.ID
	shot := newShots(t)
	step, value := steps(t, ctx, time.Now())

	step("log in", chromedp.Navigate(s.srv.URL()+"/"), login(s.admin, "ann"))
	// The create's success makes a verification due; the janitor runs it.
	step("health in the list", until(fmt.Sprintf(`(() => {
		const cell = document.querySelector('tr[data-cluster=%q] td.health .status');
		return !!cell && cell.dataset.status === 'RED';
	})()`, id)), shot.take("clusters-health"))

	step("open the cluster", chromedp.Navigate(s.srv.URL()+"/#/clusters/"+id),
		until(`(() => { const c = document.querySelector('#health'); return !!c && c.dataset.status === 'RED'; })()`),
		until(`!!document.querySelector('#health-problems tr[data-service="broken"][data-status="failing"]')`),
		until(`!!document.querySelector('#events tr[data-type="cluster.verified"][data-status="RED"]')`),
		shot.take("cluster-health-events"))
	verified := value("verifications so far", chromedp.Evaluate[string](
		`String(document.querySelectorAll('#events tr[data-type="cluster.verified"]').length)`))
	require.Equal(t, "1", verified)

	step("verify again", chromedp.Click(css("#verify")),
		until(`document.querySelectorAll('#events tr[data-type="cluster.verified"]').length === 2`),
		shot.take("verified-again"))
	require.Empty(t, problems())
}

// TestDashboardWebhooksInBrowser: an admin registers an endpoint, sees its
// secret once, and reads its delivery log as events are delivered.
func TestDashboardWebhooksInBrowser(t *testing.T) {
	ctx, problems := browser(t)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(receiver.Close)
	s := startServer(t)
	s.admin = demotest.TenantWithCatalog(t, s.srv.URL(), s.super, "acme", 10, "../../docs/examples/health-catalog.yaml")
	shot := newShots(t)
	step, value := steps(t, ctx, time.Now())

	step("log in", chromedp.Navigate(s.srv.URL()+"/"), login(s.admin, "ann"))
	step("register", chromedp.Click(css("#nav-webhooks")), chromedp.WaitVisible(css("#create-webhook-form")),
		chromedp.SendKeys(css("#webhook-url"), receiver.URL+"/heddle"),
		chromedp.Click(css(`input.webhook-type[value="cluster.status"]`)),
		chromedp.Click(css("#create-webhook")),
		chromedp.WaitVisible(css("#new-webhook-secret")),
		until(`document.querySelectorAll('#webhooks tr[data-webhook]').length === 1`),
		shot.take("webhook-registered"))
	secret := value("the secret", chromedp.Evaluate[string](`document.querySelector('#new-webhook-secret').textContent`))
	require.Regexp(t, `^whsec_`, secret)

	var created struct {
		Cluster struct{ ID string } `json:"cluster"`
	}
	require.Equal(t, http.StatusAccepted, s.call(s.admin, "POST", "/v1/clusters",
		map[string]any{"name": "hooked", "template": "health", "size": 1}, &created))
	step("delivery log", chromedp.Click(css(`#webhooks tr[data-webhook] a`)),
		until(`document.querySelectorAll('#deliveries tr[data-status="DELIVERED"]').length === 2`),
		shot.take("webhook-deliveries"))
	require.Empty(t, problems())
}

// TestDashboardShowsDriftInBrowser: the cluster page shows the latest
// drift check, "Check drift now" runs another, and what it finds is listed
// per node with its kind; "Repair" runs a repair, listed in the job history
// as its own operation, after which a check finds nothing.
func TestDashboardShowsDriftInBrowser(t *testing.T) {
	ctx, problems := browser(t)
	s := startServer(t)
	s.admin = demotest.TenantWithCatalog(t, s.srv.URL(), s.super, "acme", 10, "../../docs/examples/drift-catalog.yaml")
	var created struct {
		Cluster struct{ ID string } `json:"cluster"`
	}
	require.Equal(t, http.StatusAccepted, s.call(s.admin, "POST", "/v1/clusters",
		map[string]any{"name": "drifty", "template": "drift", "size": 1}, &created))
	id := created.Cluster.ID
	shot := newShots(t)
	step, _ := steps(t, ctx, time.Now())

	step("log in", chromedp.Navigate(s.srv.URL()+"/"), login(s.admin, "ann"))
	// The create makes a verification due; wait for it, so the cluster is
	// free for the drift check.
	step("open the cluster", chromedp.Navigate(s.srv.URL()+"/#/clusters/"+id),
		until(`(() => { const c = document.querySelector('#health'); return !!c && c.dataset.status === 'GREEN'; })()`),
		until(`(() => { const c = document.querySelector('#drift'); return !!c && c.dataset.drifted === ''; })()`))
	step("check drift", chromedp.Click(css("#drift-check")),
		until(`(() => { const c = document.querySelector('#drift'); return !!c && c.dataset.drifted === '0'; })()`))

	require.Equal(t, http.StatusAccepted, s.call(s.admin, "POST", "/v1/clusters/"+id+"/reconfigure",
		map[string]any{"services": []string{"cache"}, "config": map[string]any{"size": 2}}, nil))
	require.Eventually(t, func() bool {
		var c struct {
			ActiveJobID string `json:"activeJobId"`
		}
		return s.call(s.admin, "GET", "/v1/clusters/"+id, nil, &c) == http.StatusOK && c.ActiveJobID == ""
	}, 60*time.Second, 100*time.Millisecond, "the reconfigure ends")
	step("stale config found", chromedp.Click(css("#drift-check")),
		until(`(() => { const c = document.querySelector('#drift'); return !!c && c.dataset.drifted === '1'; })()`),
		until(`!!document.querySelector('#drift-findings tr[data-kind="configStale"]')`),
		shot.take("cluster-drift"))
	step("drift in the list", chromedp.Navigate(s.srv.URL()+"/#/clusters"),
		until(fmt.Sprintf(`(() => {
			const cell = document.querySelector('tr[data-cluster=%q] td.drift .status');
			return !!cell && cell.dataset.status === 'DRIFTED';
		})()`, id)))
	// Repair: its own operation in the job history.
	step("repair", chromedp.Navigate(s.srv.URL()+"/#/clusters/"+id),
		until(`!!document.querySelector('#drift-repair')`), chromedp.Click(css("#drift-repair")),
		until(`[...document.querySelectorAll('#jobs td')].some((td) => td.textContent === 'repair')`),
		until(`(() => { const p = document.querySelector('#progress'); return !!p && p.dataset.operation === 'repair' && p.dataset.status === 'SUCCEEDED'; })()`))
	step("repaired", chromedp.Click(css("#drift-check")),
		until(`(() => { const c = document.querySelector('#drift'); return !!c && c.dataset.drifted === '0'; })()`),
		until(`!document.querySelector('#drift-repair')`))
	require.Empty(t, problems())
}
