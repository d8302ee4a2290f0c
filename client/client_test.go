package client_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/demotest"
	"github.com/heddle-io/heddle/internal/localserver"
)

type bundle struct {
	t     *testing.T
	srv   *localserver.Server
	super string
	c     *client.Client // the tenant admin's
}

// setup starts a local server with tenant acme (the demo catalog applied)
// and returns a client for its admin.
func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{t: t, super: access.NewKeySecret()}
	dir := t.TempDir()
	srv, err := localserver.Start(context.Background(), localserver.Config{
		DataDir: dir, Listen: "127.0.0.1:0", BootstrapKey: b.super, Version: "test",
		Logger: slog.New(slog.DiscardHandler), JanitorPeriod: 200 * time.Millisecond,
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		demotest.KillProcessesUnder(dir)
	})
	b.srv = srv
	admin := demotest.TenantWithCatalog(t, srv.URL(), b.super, "acme", 12, "../docs/examples/catalog.yaml")
	b.c = client.New(srv.URL()+"/v1/", admin)
	return b
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return c
}

// create makes a cluster of the demo template and waits for it.
func (b *bundle) create(name string, size int) *client.Result {
	b.t.Helper()
	res, err := b.c.CreateCluster(ctx(b.t), client.CreateRequest{Name: name, Template: "web", Size: size}, client.Mutate{})
	require.NoError(b.t, err)
	require.NotNil(b.t, res.Job)
	v, err := b.c.WaitJob(ctx(b.t), res.Cluster.ID, res.Job.ID, client.WaitOptions{Interval: 50 * time.Millisecond})
	require.NoError(b.t, err)
	require.Equal(b.t, client.JobSucceeded, v.Status, v.StatusMessage)
	return res
}

// TestClientDrivesAClusterThroughItsLife: dry run, create, wait, read,
// list by the iterators, mutate, mark, delete, against a real server.
func TestClientDrivesAClusterThroughItsLife(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.c

	dry, err := c.CreateCluster(ctx(t), client.CreateRequest{Name: "shop", Template: "web", Size: 3}, client.Mutate{DryRun: true})
	require.NoError(t, err)
	require.True(t, dry.DryRun)
	require.NotNil(t, dry.Preview)
	require.Nil(t, dry.Job)
	none, err := client.Collect(c.Clusters(ctx(t), client.ClusterFilter{}))
	require.NoError(t, err)
	require.Empty(t, none, "a dry run creates nothing")

	shop := b.create("shop", 3)
	b.create("cart", 2)
	view, err := c.GetCluster(ctx(t), shop.Cluster.ID)
	require.NoError(t, err)
	require.Equal(t, "shop", view.Name)
	require.Equal(t, 3, view.NodeCount)

	// One cluster a page: the iterator follows the cursor to the second.
	var names []string
	for cl, err := range c.Clusters(ctx(t), client.ClusterFilter{PageSize: 1}) {
		require.NoError(t, err)
		names = append(names, cl.Name)
	}
	require.ElementsMatch(t, []string{"shop", "cart"}, names)
	// Breaking out of the loop stops it.
	seen := 0
	for range c.Clusters(ctx(t), client.ClusterFilter{PageSize: 1}) {
		seen++
		break
	}
	require.Equal(t, 1, seen)
	nodes, err := client.Collect(c.Nodes(ctx(t), shop.Cluster.ID))
	require.NoError(t, err)
	require.Len(t, nodes, 3)
	tasks, err := client.Collect(c.Tasks(ctx(t), shop.Cluster.ID, shop.Job.ID, client.TaskFilter{Action: "install"}))
	require.NoError(t, err)
	require.NotEmpty(t, tasks)
	jobs, err := client.Collect(c.Jobs(ctx(t), shop.Cluster.ID))
	require.NoError(t, err)
	require.Len(t, jobs, 1)

	res, err := c.Expand(ctx(t), shop.Cluster.ID, client.ExpandRequest{Count: 1}, client.Mutate{})
	require.NoError(t, err)
	v, err := c.WaitJob(ctx(t), shop.Cluster.ID, res.Job.ID, client.WaitOptions{Interval: 50 * time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, client.JobSucceeded, v.Status)

	// The managed-by mark is on the record, for the API and the client.
	marked, err := c.Manage(ctx(t), shop.Cluster.ID, client.ManageRequest{ManagedBy: "apply"})
	require.NoError(t, err)
	require.Equal(t, "apply", marked.ManagedBy)
	view, err = c.GetCluster(ctx(t), shop.Cluster.ID)
	require.NoError(t, err)
	require.Equal(t, "apply", view.ManagedBy)
	require.Equal(t, 4, view.NodeCount)

	// The raw answer is kept for who asks.
	var raw []byte
	_, err = c.GetCluster(client.KeepAnswer(ctx(t), &raw), shop.Cluster.ID)
	require.NoError(t, err)
	require.Regexp(t, `"managedBy":\s*"apply"`, string(raw))

	del, err := c.DeleteCluster(ctx(t), shop.Cluster.ID, false, client.Mutate{})
	require.NoError(t, err)
	v, err = c.WaitJob(ctx(t), shop.Cluster.ID, del.Job.ID, client.WaitOptions{})
	require.NoError(t, err)
	require.Equal(t, client.JobSucceeded, v.Status)
}

// TestClientErrorsCarryTheEnvelope: a refused request is an *Error with
// the status, the code and the problems by field; it changed nothing.
func TestClientErrorsCarryTheEnvelope(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.c
	_, err := c.CreateCluster(ctx(t), client.CreateRequest{Name: "shop", Template: "web", Size: 0, ManagedBy: "no good"}, client.Mutate{})
	var e *client.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, http.StatusUnprocessableEntity, e.Status)
	require.NotEmpty(t, e.Code)
	require.Equal(t, e.Code, client.ErrorCode(err))
	require.NotEmpty(t, e.Field("size"))
	require.NotEmpty(t, e.Field("managedBy"))
	require.Empty(t, e.Field("name"))

	_, err = c.GetCluster(ctx(t), "c-nothere")
	require.True(t, client.IsNotFound(err), "%v", err)
	_, err = c.Manage(ctx(t), "c-nothere", client.ManageRequest{ManagedBy: "apply"})
	require.True(t, client.IsNotFound(err), "%v", err)

	shop := b.create("shop", 2)
	_, err = c.Manage(ctx(t), shop.Cluster.ID, client.ManageRequest{ManagedBy: "has spaces"})
	require.ErrorAs(t, err, &e)
	require.NotEmpty(t, e.Field("managedBy"))
	view, err := c.GetCluster(ctx(t), shop.Cluster.ID)
	require.NoError(t, err)
	require.Empty(t, view.ManagedBy, "a refused mark changes nothing")

	// Another tenant cannot see, nor mark, the cluster.
	other := client.New(b.srv.URL(), demotest.TenantWithCatalog(t, b.srv.URL(), b.super, "other", 4, "../docs/examples/catalog.yaml"))
	_, err = other.Manage(ctx(t), shop.Cluster.ID, client.ManageRequest{ManagedBy: "apply"})
	require.True(t, client.IsNotFound(err), "%v", err)

	// A listing's error ends its sequence with the error.
	bad := client.New(b.srv.URL(), "hdl_not-a-key")
	for _, err := range bad.Clusters(ctx(t), client.ClusterFilter{}) {
		require.ErrorAs(t, err, &e)
		require.Equal(t, http.StatusUnauthorized, e.Status)
	}
}

// TestWaitJobBacksOffAndOutlastsBlips: polls that fail with a 5xx are
// retried (with a growing wait), a 4xx ends the wait at once.
func TestWaitJobBacksOffAndOutlastsBlips(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	var stamps []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		stamps = append(stamps, time.Now())
		switch {
		case r.URL.Path == "/v1/clusters/c1/jobs/gone":
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"status":404,"code":"not_found","message":"job gone does not exist"}}`))
		case n <= 2:
			w.WriteHeader(http.StatusBadGateway)
		case n <= 5:
			_, _ = w.Write([]byte(`{"id":"j1","status":"RUNNING","taskDone":0,"taskTotal":2}`))
		default:
			_, _ = w.Write([]byte(`{"id":"j1","status":"SUCCEEDED","taskDone":2,"taskTotal":2}`))
		}
	}))
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, "k")
	var retries, updates int
	v, err := c.WaitJob(context.Background(), "c1", "j1", client.WaitOptions{
		Interval: 10 * time.Millisecond, MaxInterval: 40 * time.Millisecond,
		OnRetry: func(error) { retries++ }, OnUpdate: func(*client.JobView) { updates++ },
	})
	require.NoError(t, err)
	require.Equal(t, client.JobSucceeded, v.Status)
	require.Equal(t, 2, retries)
	require.Equal(t, 4, updates)
	// Each wait is at least the one before: backoff, never a tighter loop.
	// (Only order is checked, never a duration a loaded machine stretches.)
	for i := 2; i < len(stamps); i++ {
		require.False(t, stamps[i].Before(stamps[i-1]))
	}

	_, err = c.WaitJob(context.Background(), "c1", "gone", client.WaitOptions{Interval: time.Millisecond})
	require.True(t, client.IsNotFound(err))
	require.Equal(t, "not_found", client.ErrorCode(err))
	require.False(t, errors.Is(err, context.Canceled))
}
