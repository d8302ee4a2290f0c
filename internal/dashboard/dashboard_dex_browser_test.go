package dashboard_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/identity/dextest"
)

// TestDashboardSignInWithDexInBrowser: the dashboard's "Sign in with ..."
// button against a real Dex set up as docs/sign-in.md says (the
// dashboard's client with the page's address as its redirect URI, the
// CLI's client beside it, the groups scope): Chromium goes to Dex's login
// page, signs in as a member of heddle-admins, comes back an admin, and its
// ID token is renewed with Dex's refresh token through heddle.
func TestDashboardSignInWithDexInBrowser(t *testing.T) {
	ctx, problems := browser(t)
	s := startServer(t)
	s.tenant()
	doc := dextest.ReadDoc(t)
	dex := dextest.Start(t, dextest.Binary(t), doc, dextest.Options{
		DashboardRedirect: s.srv.URL() + "/",
		Users:             []dextest.User{{Email: "dora@example.com", Groups: []string{"heddle-admins"}}},
	})
	// The doc's `heddle issuers add dex ...` line, as the API takes it
	// (TestDexSignIn runs the line itself).
	require.Contains(t, doc.IssuerLine, "--audience heddle --cli-client-id heddle-cli --scope groups --rule groups=heddle-admins,role=admin --rule emailDomain=example.com,role=user")
	require.Equal(t, http.StatusCreated, s.call(s.admin, "POST", "/v1/issuers", map[string]any{
		"name": "dex", "url": dex.Issuer, "audience": "heddle", "cliClientId": "heddle-cli", "scopes": []string{"groups"},
		"rules": []map[string]any{{"claim": "groups", "value": "heddle-admins", "role": "admin"}, {"emailDomain": "example.com", "role": "user"}},
	}, nil))
	shot := newShots(t)
	step, value := steps(t, ctx, time.Now())

	step("the login page offers Dex",
		chromedp.Navigate(s.srv.URL()+"/"),
		chromedp.WaitVisible(css("#signin-0")))
	step("Dex's login page",
		chromedp.Click(css("#signin-0")),
		chromedp.WaitVisible(css("#login")),
		shot.take("dex-login"))
	step("sign in at Dex and come back an admin",
		chromedp.SendKeys(css("#login"), "dora@example.com"),
		chromedp.SendKeys(css("#password"), dextest.Password),
		chromedp.Click(css("#submit-login")),
		chromedp.WaitVisible(css("#clusters")),
		until(`document.querySelector('#whoami').textContent.includes('dora_at_example.com · admin · tenant acme')`),
		shot.take("dex-signed-in"))
	first := value("the ID token", chromedp.Evaluate[string](`sessionStorage.getItem('heddle.key')`))
	require.Equal(t, 3, len(strings.Split(first, ".")), "a JWT")

	step("the ID token is renewed with Dex's refresh token before it expires",
		chromedp.Evaluate[chromedp.Void](`(() => { const s = JSON.parse(sessionStorage.getItem('heddle.signin'));
			s.expiry = new Date(Date.now() + 5000).toISOString(); sessionStorage.setItem('heddle.signin', JSON.stringify(s)); })()`),
		chromedp.Click(css(`#nav-users`)),
		until(`!!document.querySelector('#users tr[data-user="dora_at_example.com"]')`),
		until(`sessionStorage.getItem('heddle.key') !== `+jsString(first)))
	require.Empty(t, problems(), "the page logged errors (a CSP violation would be one)")
}
