package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/onboard"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

// recordingOnboarder records the calls the tenant handlers make, and fails
// the next call of a method while its error is set.
type recordingOnboarder struct {
	mu                            sync.Mutex
	calls                         []string // "onboard acme 3", "resize acme 4", "offboard acme"
	onboardErr, resizeErr, offErr error
}

var _ onboard.Onboarder = (*recordingOnboarder)(nil)

func (o *recordingOnboarder) Onboard(_ context.Context, t domain.Tenant) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, fmt.Sprintf("onboard %s %d", t.ID, t.Workers))
	return o.onboardErr
}

func (o *recordingOnboarder) Resize(_ context.Context, t domain.Tenant) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, fmt.Sprintf("resize %s %d", t.ID, t.Workers))
	return o.resizeErr
}

func (o *recordingOnboarder) Offboard(_ context.Context, id string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, "offboard "+id)
	return o.offErr
}

func (o *recordingOnboarder) set(f func(o *recordingOnboarder)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f(o)
}

func (o *recordingOnboarder) took() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.calls
	o.calls = nil
	return out
}

// setupOnboarding is setup with a recording onboarder.
func setupOnboarding(t *testing.T) (*testBundle, *recordingOnboarder) {
	t.Helper()
	o := &recordingOnboarder{}
	b := newBundle(t, boltstore.Options{}, o)
	b.acmeKey = b.createTenant(t, "acme")
	require.Equal(t, []string{"onboard acme 2"}, o.took())
	return b, o
}

func TestTenantLifecycleOnboards(t *testing.T) {
	t.Parallel()
	b, o := setupOnboarding(t)

	tenant := map[string]any{"workers": 6, "maxClusters": 5, "maxNodes": 50}
	status, body := b.do(t, b.rootKey, http.MethodPut, "/v1/tenants/acme", tenant)
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, []string{"resize acme 6"}, o.took())

	status, body = b.do(t, b.rootKey, http.MethodDelete, "/v1/tenants/acme", nil)
	require.Equal(t, http.StatusNoContent, status, "%v", body)
	require.Equal(t, []string{"offboard acme"}, o.took())
}

// TestFailedOnboardingIsRetriedByPUT: the tenant exists after a failed
// onboarding, the answer says so and still carries the admin key, and PUT
// of the tenant onboards it (Resize repairs).
func TestFailedOnboardingIsRetriedByPUT(t *testing.T) {
	t.Parallel()
	b, o := setupOnboarding(t)
	o.set(func(o *recordingOnboarder) { o.onboardErr = errors.New("SQS is down") })

	tenant := map[string]any{"id": "globex", "workers": 3, "maxClusters": 5, "maxNodes": 50, "admin": "boss"}
	resp := b.raw(t, b.rootKey, http.MethodPost, "/v1/tenants", tenant)
	defer resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "/v1/tenants/globex", resp.Header.Get("Location"), "the tenant exists")
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	code, e := errorOf(t, body)
	require.Equal(t, CodeOnboardingIncomplete, code)
	require.Contains(t, e["message"], `tenant "globex" was created, but its queue could not be made`)
	require.Contains(t, e["message"], "SQS is down")
	require.Contains(t, e["message"], "PUT /v1/tenants/globex")
	require.Contains(t, e["message"], "heddle tenants update globex", "names the CLI command too")
	require.Equal(t, []string{"onboard globex 3"}, o.took())

	require.Equal(t, "globex", body["tenant"].(map[string]any)["id"])
	secret := body["adminKey"].(map[string]any)["secret"].(string)
	status, _ := b.do(t, secret, http.MethodGet, "/v1/me", nil)
	require.Equal(t, http.StatusOK, status, "the admin key works, so it must not be lost with the error")

	status, body = b.do(t, b.rootKey, http.MethodPost, "/v1/tenants", tenant)
	require.Equal(t, http.StatusConflict, status, "POST again is not the retry: %v", body)
	require.Empty(t, o.took())

	o.set(func(o *recordingOnboarder) { o.onboardErr = nil })
	delete(tenant, "admin")
	status, body = b.do(t, b.rootKey, http.MethodPut, "/v1/tenants/globex", tenant)
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, []string{"resize globex 3"}, o.took())
}

// TestFailedResizeSaysHowToRetry: the tenant is updated, the answer says
// the mapping is not, with the new ETag to retry with.
func TestFailedResizeSaysHowToRetry(t *testing.T) {
	t.Parallel()
	b, o := setupOnboarding(t)
	o.set(func(o *recordingOnboarder) { o.resizeErr = errors.New("Lambda is busy") })

	tenant := map[string]any{"workers": 9, "maxClusters": 5, "maxNodes": 50}
	resp := b.raw(t, b.rootKey, http.MethodPut, "/v1/tenants/acme", tenant)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	etag := resp.Header.Get("ETag")
	require.NotEmpty(t, etag)

	status, body := b.do(t, b.rootKey, http.MethodGet, "/v1/tenants/acme", nil)
	require.Equal(t, http.StatusOK, status)
	require.EqualValues(t, 9, body["workers"], "the tenant was updated")

	status, body = b.do(t, b.rootKey, http.MethodPut, "/v1/tenants/acme", tenant, "If-Match", etag)
	require.Equal(t, http.StatusServiceUnavailable, status)
	code, e := errorOf(t, body)
	require.Equal(t, CodeOnboardingIncomplete, code)
	require.Contains(t, e["message"], "could not be brought to 9 workers")
	require.Contains(t, e["message"], "Lambda is busy")
	require.Contains(t, e["message"], "heddle tenants update acme", "names the CLI command")
	require.Equal(t, []string{"resize acme 9", "resize acme 9"}, o.took())

	o.set(func(o *recordingOnboarder) { o.resizeErr = nil })
	status, body = b.do(t, b.rootKey, http.MethodPut, "/v1/tenants/acme", tenant)
	require.Equal(t, http.StatusOK, status, "%v", body)
}

// TestFailedOffboardingIsRetriedByDELETE: the tenant stops working at once
// and stays deleting until a DELETE gets its queues removed.
func TestFailedOffboardingIsRetriedByDELETE(t *testing.T) {
	t.Parallel()
	b, o := setupOnboarding(t)
	o.set(func(o *recordingOnboarder) { o.offErr = errors.New("SQS is down") })

	status, body := b.do(t, b.rootKey, http.MethodDelete, "/v1/tenants/acme", nil)
	require.Equal(t, http.StatusServiceUnavailable, status)
	code, e := errorOf(t, body)
	require.Equal(t, CodeOnboardingIncomplete, code)
	require.Contains(t, e["message"], "DELETE it again")
	require.Equal(t, []string{"offboard acme"}, o.took())
	status, _ = b.do(t, b.acmeKey, http.MethodGet, "/v1/me", nil)
	require.Equal(t, http.StatusUnauthorized, status, "a deleting tenant's keys stop working")

	// The tenant is deleting, not gone: its id is still taken.
	status, _ = b.do(t, b.rootKey, http.MethodPost, "/v1/tenants", map[string]any{"id": "acme", "workers": 1, "maxClusters": 1, "maxNodes": 1})
	require.Equal(t, http.StatusConflict, status)

	o.set(func(o *recordingOnboarder) { o.offErr = nil })
	status, body = b.do(t, b.rootKey, http.MethodDelete, "/v1/tenants/acme", nil)
	require.Equal(t, http.StatusNoContent, status, "%v", body)
	require.Equal(t, []string{"offboard acme"}, o.took())
	status, _ = b.do(t, b.rootKey, http.MethodDelete, "/v1/tenants/acme", nil)
	require.Equal(t, http.StatusNotFound, status)
	require.Empty(t, o.took())
}

// TestTenantWithClustersKeepsItsQueues: deleting a tenant that has clusters
// is refused before its queues are touched.
func TestTenantWithClustersKeepsItsQueues(t *testing.T) {
	t.Parallel()
	b, o := setupOnboarding(t)
	b.importExample(t, b.acmeKey)
	resp := b.raw(t, b.acmeKey, http.MethodPost, "/v1/clusters", map[string]any{"name": "shop", "template": "web", "size": 3})
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)

	status, body := b.do(t, b.rootKey, http.MethodDelete, "/v1/tenants/acme", nil)
	require.Equal(t, http.StatusConflict, status, "%v", body)
	_, e := errorOf(t, body)
	require.Contains(t, e["message"], "still has 1 clusters")
	require.Empty(t, o.took(), "no Offboard while clusters may use the queues")
}
