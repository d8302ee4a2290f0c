package dashboard_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/identity/identitytest"
)

// TestDashboardSignInWithProviderInBrowser: the login page offers "Sign in
// with ..." for the provider acme trusts; the authorization code flow with
// PKCE runs through the provider (a test provider in this process) and
// back; the ID token lives in session storage only and is renewed with the
// refresh token before it expires; a person the rules map to no tenant is
// told so and nothing is created. The Content-Security-Policy is the
// dashboard's usual one: the page never talks to the provider itself.
func TestDashboardSignInWithProviderInBrowser(t *testing.T) {
	ctx, problems := browser(t)
	s := startServer(t)
	s.tenant()
	idp := identitytest.New(t, "heddle-dashboard")
	idp.SetUser(map[string]any{"sub": "7", "email": "dora@example.com", "email_verified": true, "groups": []string{"heddle-admins"}})
	require.Equal(t, http.StatusCreated, s.call(s.admin, "POST", "/v1/issuers", map[string]any{
		"name": "corp", "url": idp.URL, "audience": "heddle-dashboard", "displayName": "Corp SSO", "scopes": []string{"groups"},
		"rules": []map[string]any{{"claim": "groups", "value": "heddle-admins", "role": "admin"}, {"emailDomain": "example.com", "role": "user"}},
	}, nil))
	shot := newShots(t)
	step, value := steps(t, ctx, time.Now())

	step("the login page offers the provider",
		chromedp.Navigate(s.srv.URL()+"/"),
		chromedp.WaitVisible(css("#signin-0")),
		shot.take("signin-offered"))
	require.Equal(t, "Sign in with Corp SSO", value("button", chromedp.Text(css("#signin-0"))))

	step("sign in through the provider",
		chromedp.Click(css("#signin-0")),
		chromedp.WaitVisible(css("#clusters")),
		until(`document.querySelector('#whoami').textContent.includes('dora_at_example.com · admin · tenant acme')`),
		shot.take("signed-in"))
	require.Equal(t, "openid email profile offline_access groups", idp.LastScope(), "the issuer's scopes are asked for")
	stored := value("tokens in session storage only", chromedp.Evaluate[string](
		`[sessionStorage.getItem('heddle.key').split('.').length, !!JSON.parse(sessionStorage.getItem('heddle.signin')).refreshToken,
		  localStorage.length, location.href].join('|')`))
	require.Equal(t, "3|true|0|"+s.srv.URL()+"/#/clusters", stored, "an ID token and a refresh token in session storage; no code left in the URL")
	first := value("the ID token", chromedp.Evaluate[string](`sessionStorage.getItem('heddle.key')`))

	step("an ID token about to expire is renewed before it is sent",
		chromedp.Evaluate[chromedp.Void](`(() => { const s = JSON.parse(sessionStorage.getItem('heddle.signin'));
			s.expiry = new Date(Date.now() + 5000).toISOString(); sessionStorage.setItem('heddle.signin', JSON.stringify(s)); })()`),
		chromedp.Click(css(`#nav-users`)),
		until(`!!document.querySelector('#users tr[data-user="dora_at_example.com"]')`),
		until(`sessionStorage.getItem('heddle.key') !== `+jsString(first)),
		shot.take("renewed"))

	step("sign out",
		chromedp.Click(css("#logout")),
		chromedp.WaitVisible(css("#signin-0")))
	require.Equal(t, "0", value("nothing kept", chromedp.Evaluate[string](`String(sessionStorage.length + localStorage.length)`)))

	idp.SetUser(map[string]any{"sub": "8", "email": "eve@elsewhere.org"})
	step("a person mapped to no tenant goes to the provider", chromedp.Click(css("#signin-0")))
	// The page is replaced twice (to the provider and back); a poll that
	// runs while a page goes away fails, so this one retries.
	deadline := time.Now().Add(30 * time.Second)
	for {
		flash, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector('#flash') || {}).textContent || ''`))
		if err == nil && strings.Contains(flash, "no rule maps you to a heddle tenant") {
			break
		}
		require.True(t, time.Now().Before(deadline), "the refusal is shown (last: %q, %v)", flash, err)
		time.Sleep(100 * time.Millisecond)
	}
	step("and is told why", chromedp.WaitVisible(css("#signin-0")), shot.take("refused"))
	require.Equal(t, http.StatusNotFound, s.call(s.admin, "GET", "/v1/users/eve_at_elsewhere.org", nil, nil), "nothing is created")

	var unexpected []string
	for _, p := range problems() {
		if !strings.Contains(p, "status of 401") { // the refused sign-in's answer
			unexpected = append(unexpected, p)
		}
	}
	require.Empty(t, unexpected, "the page logged errors (a CSP violation would be one)")
}

func jsString(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }
