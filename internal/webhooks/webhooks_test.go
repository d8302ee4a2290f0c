package webhooks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/events"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

func TestPolicyRefusesInsideAddresses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		ip                  string
		public, local, priv bool // allowed by default, in the local server, with AllowPrivate
	}{
		{"93.184.216.34", true, true, true},
		{"2606:2800:220:1:248:1893:25c8:1946", true, true, true},
		{"127.0.0.1", false, true, false},
		{"::1", false, true, false},
		{"10.1.2.3", false, false, true},
		{"172.16.0.1", false, false, true},
		{"192.168.1.1", false, false, true},
		{"169.254.169.254", false, false, true}, // cloud metadata
		{"fe80::1", false, false, true},
		{"fd00::1", false, false, true},
		{"100.64.0.1", false, false, true},
		{"::ffff:10.0.0.1", false, false, true}, // mapped v4 is checked as v4
		{"0.0.0.0", false, false, false},
		{"224.0.0.1", false, false, false},
	}
	for _, c := range cases {
		ip := netip.MustParseAddr(c.ip)
		require.Equal(t, c.public, Policy{}.allowed(ip) == nil, "%s by default", c.ip)
		require.Equal(t, c.local, Policy{Local: true}.allowed(ip) == nil, "%s locally", c.ip)
		require.Equal(t, c.priv, Policy{AllowPrivate: true}.allowed(ip) == nil, "%s with private allowed", c.ip)
	}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		url        string
		aws, local bool
	}{
		{"https://hooks.example.com/heddle", true, true},
		{"https://hooks.example.com:8443/x?y=1", true, true},
		{"http://hooks.example.com/heddle", false, false},
		{"http://127.0.0.1:9000/hook", false, true},
		{"http://localhost:9000/hook", false, true},
		{"http://[::1]:9000/hook", false, true},
		{"https://localhost/hook", false, true},
		{"http://10.0.0.1/hook", false, false},
		{"https://10.0.0.1/hook", false, false},
		{"https://169.254.169.254/latest/meta-data", false, false},
		{"https://user:pw@hooks.example.com/", false, false},
		{"ftp://hooks.example.com/", false, false},
		{"hooks.example.com/heddle", false, false},
		{"https:///nohost", false, false},
		{"https://hooks.example.com/#frag", false, false},
	}
	for _, c := range cases {
		require.Equal(t, c.aws, Policy{}.CheckURL(c.url) == nil, "%s in AWS", c.url)
		require.Equal(t, c.local, Policy{Local: true}.CheckURL(c.url) == nil, "%s locally", c.url)
	}
}

// The check is on the address dialed, not on the URL's name: a name that
// resolves to a refused address is refused when dialed.
func TestClientChecksTheDialedAddress(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(srv.Close)
	byName := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	_, err := Policy{}.Client().Post(byName, "application/json", nil)
	require.ErrorIs(t, err, ErrRefusedAddress, "localhost resolves to loopback, refused outside the local server")
	resp, err := Policy{Local: true}.Client().Post(byName, "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
}

func TestClientFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	var inner atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { inner.Add(1) }))
	t.Cleanup(target.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	resp, err := Policy{Local: true}.Client().Post(srv.URL, "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusTemporaryRedirect, resp.StatusCode)
	require.Zero(t, inner.Load())
}

func TestVerify(t *testing.T) {
	t.Parallel()
	now := time.Unix(1764079261, 0)
	body := []byte(`{"event":{}}`)
	h := Sign("s3cret", now, body)
	require.Regexp(t, `^t=1764079261,v1=[0-9a-f]{64}$`, h)
	require.NoError(t, Verify("s3cret", h, body, now.Add(time.Minute)))
	require.ErrorIs(t, Verify("s3cret", h, body, now.Add(10*time.Minute)), ErrStaleSignature)
	require.ErrorIs(t, Verify("other", h, body, now), ErrBadSignature)
	require.ErrorIs(t, Verify("s3cret", h, []byte(`{"event":{"x":1}}`), now), ErrBadSignature)
	require.ErrorIs(t, Verify("s3cret", "v1=abc", body, now), ErrMalformedSignature)
	require.ErrorIs(t, Verify("s3cret", "garbage", body, now), ErrMalformedSignature)
	// A later timestamp with the old signature does not pass.
	forged := strings.Replace(h, "t=1764079261", "t=1764079861", 1)
	require.ErrorIs(t, Verify("s3cret", forged, body, now.Add(10*time.Minute)), ErrBadSignature)
}

func FuzzVerify(f *testing.F) {
	f.Add("t=1,v1=00", []byte("{}"))
	f.Add(Sign("k", time.Unix(5, 0), []byte("x")), []byte("x"))
	f.Add("t=,v1=", []byte(""))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		err := Verify("k", header, body, time.Unix(5, 0))
		if err == nil {
			// What passes is bound to the key: no header passes for two.
			require.Error(t, Verify("k2", header, body, time.Unix(5, 0)))
		}
	})
}

type deliverySetup struct {
	d    *Deliverer
	reg  *Registry
	s    store.Store
	sent []string
}

func newDeliverySetup(t *testing.T, cfg Config) *deliverySetup {
	t.Helper()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	key, err := secrets.NewLocalKey(make([]byte, 32))
	require.NoError(t, err)
	cfg.Policy.Local = true
	ds := &deliverySetup{s: db}
	ds.reg = NewRegistry(db, secrets.NewKeyring(key), cfg.Policy)
	ds.d = NewDeliverer(db, ds.reg, func(_ context.Context, tenant, endpoint, eventID string, _ int) error {
		ds.sent = append(ds.sent, tenant+"|"+endpoint+"|"+eventID)
		return nil
	}, cfg)
	return ds
}

// An endpoint that never answers well costs MaxAttempts attempts, each
// bounded by the timeout, with growing waits between, then the delivery
// gives up; the event leaves the outbox once.
func TestDeliveryGivesUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		http.Error(w, "down", http.StatusBadGateway)
	}))
	t.Cleanup(srv.Close)
	ds := newDeliverySetup(t, Config{MaxAttempts: 3, Backoff: time.Second, MaxBackoff: 90 * time.Second})
	ctx := context.Background()
	e, _, err := ds.reg.Create(ctx, "acme", "ann", Request{URL: srv.URL})
	require.NoError(t, err)
	_, err = ds.s.Write(ctx, events.Op("acme", events.Event{Type: events.ClusterStatus, Cluster: "c1", Status: "ACTIVE"}))
	require.NoError(t, err)
	_, err = ds.s.Write(ctx, events.Op("globex", events.Event{Type: events.ClusterStatus, Cluster: "c9", Status: "ACTIVE"}))
	require.NoError(t, err)

	made, err := ds.d.Dispatch(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, made, "acme's endpoint gets acme's event, not globex's")
	again, err := ds.d.Dispatch(ctx)
	require.NoError(t, err)
	require.Zero(t, again, "a dispatched event left the outbox")
	require.Len(t, ds.sent, 1)
	ref := strings.Split(ds.sent[0], "|")

	now := time.Now()
	ds.d.now = func() time.Time { return now }
	var waits []time.Duration
	for range 5 {
		wait, err := ds.d.Deliver(ctx, ref[0], ref[1], ref[2])
		require.NoError(t, err)
		waits = append(waits, wait)
		now = now.Add(wait)
	}
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 0, 0, 0}, waits)
	require.EqualValues(t, 3, calls.Load(), "no attempt after the last")
	log, _, err := ds.d.Log(ctx, "acme", e.ID, 10, "")
	require.NoError(t, err)
	require.Len(t, log, 1)
	require.Equal(t, GaveUp, log[0].Status)
	require.Len(t, log[0].Attempts, 3)
	require.Equal(t, http.StatusBadGateway, log[0].Attempts[2].Status)
	require.Equal(t, "down\n", log[0].Attempts[2].Answer)

	// Early messages wait out the backoff instead of attempting.
	_, err = ds.s.Write(ctx, events.Op("acme", events.Event{Type: events.JobStatus, Cluster: "c1", Status: "RUNNING"}))
	require.NoError(t, err)
	_, err = ds.d.Dispatch(ctx)
	require.NoError(t, err)
	ref = strings.Split(ds.sent[len(ds.sent)-1], "|")
	wait, err := ds.d.Deliver(ctx, ref[0], ref[1], ref[2])
	require.NoError(t, err)
	require.Equal(t, time.Second, wait)
	early, err := ds.d.Deliver(ctx, ref[0], ref[1], ref[2])
	require.NoError(t, err)
	require.Equal(t, time.Second, early, "a message back before its time waits")
	require.EqualValues(t, 4, calls.Load())

	// A lost message is sent again once overdue.
	now = now.Add(10 * time.Minute)
	resent, err := ds.d.ResendLost(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, resent)
}

func TestRegistryValidatesAndBounds(t *testing.T) {
	t.Parallel()
	ds := newDeliverySetup(t, Config{})
	ctx := context.Background()
	_, _, err := ds.reg.Create(ctx, "acme", "ann", Request{URL: "http://example.com", Types: []events.Type{"nope"}})
	require.Error(t, err)
	require.Contains(t, err.Error(), "url")
	require.Contains(t, err.Error(), "types[0]")
	for i := range MaxEndpoints {
		_, secret, err := ds.reg.Create(ctx, "acme", "ann", Request{URL: "http://127.0.0.1:1/" + string(rune('a'+i))})
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(secret, "whsec_"))
	}
	_, _, err = ds.reg.Create(ctx, "acme", "ann", Request{URL: "http://127.0.0.1:1/more"})
	require.ErrorIs(t, err, ErrTooMany)
	list, err := ds.reg.List(ctx, "acme")
	require.NoError(t, err)
	for _, e := range list {
		require.True(t, strings.HasPrefix(string(e.Secret), secrets.SealedPrefix), "stored sealed")
	}
	require.ErrorIs(t, ds.reg.Delete(ctx, "globex", list[0].ID), ErrNotFound, "another tenant's endpoint is not found")
}
