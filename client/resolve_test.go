package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/client"
)

// setupClusters serves GET /v1/clusters?name= and GET /v1/clusters/{id}
// over clusters, as the API does (newest first), and returns a client.
func setupClusters(t *testing.T, clusters ...client.Cluster) *client.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/clusters" {
			require.Equal(t, "true", r.URL.Query().Get("all"), "terminated clusters are looked at too")
			page := client.Page[client.Cluster]{Items: []client.Cluster{}}
			for _, c := range clusters {
				if c.Name == r.URL.Query().Get("name") {
					page.Items = append(page.Items, c)
				}
			}
			_ = json.NewEncoder(w).Encode(page)
			return
		}
		id := strings.TrimPrefix(r.URL.Path, "/v1/clusters/")
		for _, c := range clusters {
			if c.ID == id {
				_ = json.NewEncoder(w).Encode(c)
				return
			}
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"status":404,"code":"not_found","message":"cluster does not exist"}}`))
	}))
	t.Cleanup(srv.Close)
	return client.New(srv.URL, "k")
}

func TestResolveClusterByIDOrName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := setupClusters(t,
		client.Cluster{ID: "c3", Name: "c1", Status: "ACTIVE"}, // named as another's id
		client.Cluster{ID: "c2", Name: "shop", Status: "TERMINATED"},
		client.Cluster{ID: "c1", Name: "shop", Status: "ACTIVE"},
		client.Cluster{ID: "c0", Name: "old", Status: "TERMINATED"},
		client.Cluster{ID: "c9", Name: "old", Status: "TERMINATED"},
		client.Cluster{ID: "c5", Name: "twin", Status: "ACTIVE"},
		client.Cluster{ID: "c6", Name: "twin", Status: "FAILED"},
	)

	ref, err := c.ResolveCluster(ctx, "shop")
	require.NoError(t, err)
	require.Equal(t, client.ClusterRef{ID: "c1", Name: "shop", ByName: true}, *ref, "the live one of its name")

	ref, err = c.ResolveCluster(ctx, "c1")
	require.NoError(t, err)
	require.Equal(t, "c1", ref.ID, "an id wins over a name")
	require.False(t, ref.ByName)
	require.Len(t, ref.Shadowed, 1)
	require.Equal(t, "c3", ref.Shadowed[0].ID)

	ref, err = c.ResolveCluster(ctx, "old")
	require.NoError(t, err)
	require.Equal(t, "c0", ref.ID, "without a live one, the newest of the name")

	_, err = c.ResolveCluster(ctx, "twin")
	require.Equal(t, "conflict", client.ErrorCode(err))
	require.ErrorContains(t, err, "2 live clusters are named \"twin\" (c5, c6)")

	_, err = c.ResolveCluster(ctx, "nothing")
	require.True(t, client.IsNotFound(err))
	require.ErrorContains(t, err, `no cluster has the id or the name "nothing"`)
}
