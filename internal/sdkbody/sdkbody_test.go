package sdkbody

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

type recordingClient struct{ body io.ReadCloser }

func (c *recordingClient) Do(r *http.Request) (*http.Response, error) {
	c.body = r.Body
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
}

// TestGuardHidesWriteTo: the body the transport sees has no WriteTo (the
// method whose io.EOF after an early close makes net/http drop the
// connection) and still reads the same bytes.
func TestGuardHidesWriteTo(t *testing.T) {
	t.Parallel()
	inner := &recordingClient{}
	req, err := http.NewRequest(http.MethodPost, "http://example.invalid/", bytes.NewReader([]byte("payload")))
	require.NoError(t, err)
	_, isWriterTo := req.Body.(io.WriterTo)
	require.True(t, isWriterTo, "the request's own body has WriteTo, as the SDK's does")

	_, err = Guard(inner).Do(req)
	require.NoError(t, err)
	_, isWriterTo = inner.body.(io.WriterTo)
	require.False(t, isWriterTo)
	got, err := io.ReadAll(inner.body)
	require.NoError(t, err)
	require.Equal(t, "payload", string(got))
}

// TestGuardLeavesEmptyBodiesAlone: a request without a body is passed on
// as it is (net/http treats http.NoBody specially).
func TestGuardLeavesEmptyBodiesAlone(t *testing.T) {
	t.Parallel()
	inner := &recordingClient{}
	req, err := http.NewRequest(http.MethodGet, "http://example.invalid/", nil)
	require.NoError(t, err)
	_, err = Guard(inner).Do(req)
	require.NoError(t, err)
	require.Nil(t, inner.body)
}
