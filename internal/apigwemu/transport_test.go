package apigwemu

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAuthorizerClientHasATransportOfItsOwn: an authorizer without an
// HTTPClient does not read discovery through http.DefaultTransport, whose
// connections httptest.Server.Close (another test's, in parallel) closes
// under a request in flight.
func TestAuthorizerClientHasATransportOfItsOwn(t *testing.T) {
	t.Parallel()
	require.NotNil(t, ownClient.Transport)
	require.NotSame(t, http.DefaultTransport, ownClient.Transport)
}
