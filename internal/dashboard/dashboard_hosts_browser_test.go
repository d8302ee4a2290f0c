package dashboard_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/provider/providertest"
	"github.com/heddle-io/heddle/internal/sshexec"
)

// hostRow is true when the hosts page shows host id in status (and
// drained or not).
func hostRow(id, status string, drained bool) string {
	return fmt.Sprintf(`(() => { const r = document.querySelector('#hosts tr[data-host=%q]');
		return !!r && r.dataset.status === %q && r.dataset.drained === %q; })()`, id, status, fmt.Sprint(drained))
}

// hostsPage starts a server whose tenant acme has static provider "pool"
// (whose wipe fails, on purpose) and a one-node template on it, logs in
// and opens the pool's hosts page from the provider's catalog page.
func hostsPage(t *testing.T, firstShot int) (*server, *shots, func(string, ...chromedp.Action[chromedp.Void]), func(string, chromedp.Action[string]) string, func() []string) {
	t.Helper()
	ctx, problems := browser(t)
	s := startServerWith(t, engine.Config{Backoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	s.tenant()
	for _, e := range []struct{ path, body string }{
		{"/v1/providers/pool", `{"providerType": "static", "fields": {"wipe_script": "echo 'disk still mounted' >&2; exit 1"}}`},
		{"/v1/hardwaretypes/host", `{"providerMap": {"pool": {"flavor": "host"}}}`},
		{"/v1/imagetypes/installed", `{"providerMap": {"pool": {"image": "installed"}}}`},
		{"/v1/services/noop", `{"actions": {"install": {"type": "shell", "fields": {"script": "true"}}}}`},
		{"/v1/clustertemplates/one", `{"compatibility": {"services": ["noop"]}, "defaults": {"services": ["noop"], "provider": "pool", "hardwareType": "host", "imageType": "installed"}, "constraints": {"size": {"min": 1, "max": 1}}}`},
	} {
		status := s.call(s.admin, http.MethodPut, e.path, rawJSON(e.body), nil)
		require.Contains(t, []int{http.StatusOK, http.StatusCreated}, status, e.path)
	}
	shot := newShots(t)
	shot.n = firstShot
	step, value := steps(t, ctx, time.Now())
	step("from the provider's page to its hosts",
		chromedp.Navigate(s.srv.URL()+"/"),
		login(s.admin, "ann"),
		chromedp.Navigate(s.srv.URL()+"/#/catalog/providers/pool"),
		until(visible("#provider-hosts")),
		chromedp.Click(css("#provider-hosts")),
		chromedp.WaitVisible(css("#register-host-form")),
		until(`document.querySelector('#hosts').textContent.includes('No hosts yet')`),
		shot.take("hosts-empty"))
	return s, shot, step, value, problems
}

// unexpected drops the refusals the hosts page shows on purpose (the
// browser logs their 4xx answers).
func unexpected(problems []string) []string {
	var left []string
	for _, p := range problems {
		if !strings.Contains(p, "status of 409") {
			left = append(left, p)
		}
	}
	return left
}

// TestDashboardHostsInBrowser registers a host on the pool's page (a
// refused one first, its field named), drains, readmits and removes it.
// No host is contacted.
func TestDashboardHostsInBrowser(t *testing.T) {
	s, shot, step, value, problems := hostsPage(t, 80)
	kp, err := sshexec.GenerateKeyPair()
	require.NoError(t, err)
	step("a refused registration names the field",
		chromedp.SetValue(css("#host-id"), "rack-7"),
		chromedp.SetValue(css("#host-address"), "admin@192.0.2.7"),
		chromedp.SetValue(css("#host-user"), "admin"),
		chromedp.SetValue(css("#host-private-key"), string(kp.PrivateKey)),
		chromedp.Click(css("#register-host")),
		chromedp.WaitVisible(css(`#host-result li[data-field="hosts[0].address"]`)),
		shot.take("host-invalid"))
	step("register it",
		chromedp.SetValue(css("#host-address"), "192.0.2.7"),
		chromedp.Click(css("#register-host")),
		until(hostRow("rack-7", "FREE", false)),
		shot.take("host-registered"))
	require.Contains(t, value("the note", chromedp.Text(css("#host-result"))), "pinned and checked from then on")
	require.Equal(t, "pinned on first contact", value("the host key", chromedp.Text(css(`#hosts tr[data-host="rack-7"] .hostkey`))))
	require.NotContains(t, value("the page", chromedp.Evaluate[string](`document.body.innerText`)), "PRIVATE KEY", "the key is not shown")
	step("drain and readmit",
		chromedp.Click(css(`#hosts tr[data-host="rack-7"] .drain-host`)),
		until(hostRow("rack-7", "FREE", true)),
		shot.take("host-drained"),
		chromedp.Click(css(`#hosts tr[data-host="rack-7"] .readmit-host`)),
		until(hostRow("rack-7", "FREE", false)))
	step("remove it through the confirmation dialog",
		chromedp.Click(css(`#hosts tr[data-host="rack-7"] .remove-host`)),
		chromedp.WaitVisible(css("#confirm-ok")),
		chromedp.Click(css("#confirm-ok")),
		until(`!document.querySelector('#hosts tr[data-host="rack-7"]')`))
	require.Equal(t, http.StatusNotFound, s.call(s.admin, http.MethodGet, "/v1/providers/pool/hosts/rack-7", nil, nil))
	require.Empty(t, unexpected(problems()), "the page logged errors")
}

// TestDashboardHostLifecycleInBrowser follows a real host (an OpenSSH
// server; skipped without HEDDLE_SSH_HOSTS, like every OpenSSH test)
// through its states on the page: the check refuses a wrong host key at
// its field; registered and checked, a cluster takes it (the page names
// the cluster, and removing it is refused naming the cluster); the
// cluster's delete fails its wipe, leaving it DIRTY with the reason;
// readmitted, it is FREE; then it is removed. The cluster's service runs
// nothing in the background, so the host need not be claimed from other
// tests.
func TestDashboardHostLifecycleInBrowser(t *testing.T) {
	openssh := providertest.StartOpenSSH(t)
	s, shot, step, value, problems := hostsPage(t, 90)
	pem, err := os.ReadFile(os.Getenv("HEDDLE_SSH_KEY"))
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(openssh.Hosts[0].Address)
	require.NoError(t, err)
	fill := func(id, port string) chromedp.Action[chromedp.Void] {
		return chromedp.Steps(
			chromedp.SetValue(css("#host-id"), id),
			chromedp.SetValue(css("#host-address"), host),
			chromedp.SetValue(css("#host-port"), port),
			chromedp.SetValue(css("#host-user"), openssh.User),
			chromedp.SetValue(css("#host-private-key"), string(pem)))
	}
	require.Greater(t, len(openssh.Hosts), 1, "two OpenSSH hosts are needed")
	step("a registration the check refuses (another host's key) names the field and the reason",
		fill("sshd-1", port),
		chromedp.SendKeys(css("#host-host-key"), openssh.Hosts[1].HostKey),
		chromedp.Click(css("#host-check")),
		chromedp.Click(css("#register-host")),
		chromedp.WaitVisible(css(`#host-result li[data-field="hosts[0].hostKey"]`)),
		shot.take("host-refused"))
	require.Contains(t, value("the reason", chromedp.Text(css(`#host-result li[data-field="hosts[0].hostKey"]`))), "presented host key")
	value("clear the host key", chromedp.Evaluate[string](`document.querySelector('#host-host-key').value = ''`))
	step("register it, logged in to first",
		chromedp.Click(css("#register-host")),
		until(hostRow("sshd-1", "FREE", false)),
		shot.take("host-checked"))
	require.Contains(t, value("the note", chromedp.Text(css("#host-result"))), "pinned by the check")
	require.Contains(t, value("the key's source", chromedp.Text(css(`#hosts tr[data-host="sshd-1"] .hostkey`))), "(checked)")

	var created struct {
		Cluster struct {
			ID string `json:"id"`
		} `json:"cluster"`
	}
	require.Equal(t, http.StatusAccepted, s.call(s.admin, http.MethodPost, "/v1/clusters", map[string]any{"name": "one", "template": "one", "size": 1}, &created))
	id := created.Cluster.ID
	step("a cluster takes it: the page names the cluster, and removing it is refused",
		until(hostRow("sshd-1", "TAKEN", false)),
		until(fmt.Sprintf(`document.querySelector('#hosts tr[data-host="sshd-1"] .claim a')?.textContent === %q`, id)),
		chromedp.Click(css(`#hosts tr[data-host="sshd-1"] .remove-host`)),
		chromedp.WaitVisible(css("#confirm-ok")),
		chromedp.Click(css("#confirm-ok")),
		chromedp.WaitVisible(css("#host-result .error")),
		shot.take("host-taken"))
	require.Contains(t, value("the refusal", chromedp.Text(css("#host-result .error"))), "cluster "+id)

	waitCluster(t, s, id, "ACTIVE")
	require.Equal(t, http.StatusAccepted, s.call(s.admin, http.MethodDelete, "/v1/clusters/"+id, nil, nil))
	step("its wipe fails: DIRTY with the reason",
		until(hostRow("sshd-1", "DIRTY", false)),
		until(`document.querySelector('#hosts tr[data-host="sshd-1"] .reason').textContent.includes('disk still mounted')`),
		shot.take("host-dirty"))
	waitJobEnded(t, s, id)
	step("readmit the dirty host",
		chromedp.Click(css(`#hosts tr[data-host="sshd-1"] .readmit-host`)),
		until(hostRow("sshd-1", "FREE", false)),
		until(`document.querySelector('#hosts tr[data-host="sshd-1"] .claim').textContent === '—'`),
		chromedp.Click(css(`#hosts tr[data-host="sshd-1"] .remove-host`)),
		chromedp.WaitVisible(css("#confirm-ok")),
		chromedp.Click(css("#confirm-ok")),
		until(`!document.querySelector('#hosts tr[data-host="sshd-1"]')`),
		shot.take("host-removed"))

	require.Empty(t, unexpected(problems()), "the page logged errors")
}

type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

func waitCluster(t *testing.T, s *server, id, status string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var c struct {
			Status string `json:"status"`
		}
		s.call(s.admin, http.MethodGet, "/v1/clusters/"+id, nil, &c)
		if c.Status == status {
			return
		}
		require.True(t, time.Now().Before(deadline), "cluster %s is %s, not %s", id, c.Status, status)
		time.Sleep(200 * time.Millisecond)
	}
}

// waitJobEnded waits until the cluster has no running job (its delete gave
// up after its retries).
func waitJobEnded(t *testing.T, s *server, id string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var page struct {
			Items []struct {
				Status string `json:"status"`
			} `json:"items"`
		}
		s.call(s.admin, http.MethodGet, "/v1/clusters/"+id+"/jobs", nil, &page)
		if len(page.Items) > 0 && (page.Items[0].Status == "FAILED" || page.Items[0].Status == "SUCCEEDED") {
			return
		}
		require.True(t, time.Now().Before(deadline), "the cluster's delete did not end")
		time.Sleep(200 * time.Millisecond)
	}
}
