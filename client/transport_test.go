package client_test

import (
	"net/http"
	"testing"

	"github.com/heddle-io/heddle/client"
	"github.com/stretchr/testify/require"
)

// TestNewClientHasATransportOfItsOwn: a client from New does not use
// http.DefaultTransport (a nil Transport means it), whose connections
// anything else in the program may close under a request in flight:
// httptest.Server.Close does, and that broke a parallel test's request in
// CI ("CloseIdleConnections called").
func TestNewClientHasATransportOfItsOwn(t *testing.T) {
	t.Parallel()
	c := client.New("http://127.0.0.1:1", "k")
	require.NotNil(t, c.HTTP.Transport)
	require.NotSame(t, http.DefaultTransport, c.HTTP.Transport)
}
