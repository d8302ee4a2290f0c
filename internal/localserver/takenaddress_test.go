package localserver

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/demotest"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/local"
	"github.com/stretchr/testify/require"
)

// TestServerStartsWhenANodesAddressIsTaken: a local node whose address
// another process took while heddle was down stays down, and the server
// starts anyway; the node comes back on its next use once the address is
// free, and its cluster can be deleted meanwhile.
func TestServerStartsWhenANodesAddressIsTaken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	t.Cleanup(func() { demotest.KillProcessesUnder(dir) })
	super := access.NewKeySecret()
	start := func() *bundle {
		t.Helper()
		srv, err := Start(context.Background(), Config{
			DataDir: dir, Listen: "127.0.0.1:0", BootstrapKey: super, Version: "test",
			Logger: testLogger(), JanitorPeriod: 200 * time.Millisecond,
		})
		require.NoError(t, err, "the server starts whatever its nodes do")
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
		})
		return &bundle{t: t, srv: srv, super: super}
	}
	b := start()
	b.tenant(10)
	admin := b.admin
	var created result
	require.Equal(t, http.StatusAccepted, b.call(admin, "POST", "/v1/clusters",
		map[string]any{"name": "squatted", "template": "web", "size": 2}, &created))
	id := created.Cluster.ID
	v := b.settleTo(admin, id, "ACTIVE")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, b.srv.Shutdown(ctx))

	host := v.Nodes[0].Addresses[provider.AddressAccess]
	require.NotEmpty(t, host, "the node has an address: a listener on :%d would take every node's", local.SSHPort)
	addr := net.JoinHostPort(host, strconv.Itoa(local.SSHPort))
	squatter, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = squatter.Close() })

	b = start()
	b.admin = admin
	var got clusterView
	require.Equal(t, http.StatusOK, b.call(admin, "GET", "/v1/clusters/"+id, nil, &got), "the API answers")
	require.Equal(t, "ACTIVE", got.Status)

	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	require.Error(t, err, "the squatter, not an SSH server, holds the address: the node stays down")
	_ = conn.Close()

	// The address is free again: the node comes back by itself, and
	// deleting the cluster reaches every node.
	require.NoError(t, squatter.Close())
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		banner := make([]byte, 4)
		_, err = io.ReadFull(c, banner)
		return err == nil && string(banner) == "SSH-"
	}, time.Minute, 100*time.Millisecond, "the node's SSH server is back at its address")
	var del result
	require.Equal(t, http.StatusAccepted, b.call(admin, "DELETE", "/v1/clusters/"+id, nil, &del))
	b.settleTo(admin, id, "TERMINATED")
}
