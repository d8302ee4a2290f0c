package ec2

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestListingReadAfterEarlyBodyClose: the SDK closes a request's body as
// soon as the response headers are back; when that happens before net/http
// has finished writing the body (it answers from the bytes it has), the
// listing must still be read whole from the connection, not retried (a
// second DescribeInstances that EC2 serves and the describe budget never
// counted). The client here stalls each body write until the SDK has closed
// the body, the ordering that otherwise comes only now and then (it made
// TestConfirmPollsShareOneDescribe see two listings about once in 40 runs).
func TestListingReadAfterEarlyBodyClose(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.fake.pendingDescribes = 1
	// Twenty instances: a listing well past the connection's 4 KB read
	// buffer, so reading it needs the connection.
	reqs := f.createNodes(t, 20)
	before := len(f.fake.calls("DescribeInstances"))
	p := New(Config{HTTPClient: stallingClient(t), PollInterval: time.Second, ViewMaxAge: time.Hour})

	got, err := p.Confirm(testCtx(t), reqs[0])
	require.NoError(t, err)
	require.True(t, got.Pending(), got.Waiting)
	require.Len(t, f.fake.calls("DescribeInstances"), before+1, "one listing, read whole on its first attempt")
	require.Equal(t, int64(1), p.describes.Load())
}

// stallingClient is an HTTP client whose connections hold each request
// body write until the SDK has closed that body.
func stallingClient(t *testing.T) *http.Client {
	t.Helper()
	var mu sync.Mutex
	var closed chan struct{} // of the request being written
	tr := &http.Transport{}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &stallingConn{Conn: c, closed: func() chan struct{} { mu.Lock(); defer mu.Unlock(); return closed }}, nil
	}
	t.Cleanup(tr.CloseIdleConnections)
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Body != nil && r.Body != http.NoBody {
			ch := make(chan struct{})
			mu.Lock()
			closed = ch
			mu.Unlock()
			r.Body = watchClose(r.Body, ch)
		}
		return tr.RoundTrip(r)
	})
	return &http.Client{Transport: rt}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// stallingConn returns from a body write (any write that does not start
// a request) only once the body is closed: the bytes are on their way, the
// server answers, the SDK closes the body, then net/http goes on writing.
type stallingConn struct {
	net.Conn
	closed func() chan struct{}
}

func (c *stallingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err == nil && !bytes.HasPrefix(b, []byte("POST ")) {
		if ch := c.closed(); ch != nil {
			select {
			case <-ch:
			case <-time.After(5 * time.Second): // never hang the test
			}
		}
	}
	return n, err
}

// watchClose wraps a request body so that closing it closes ch, keeping
// the body's WriteTo when it has one (net/http copies through it).
func watchClose(body io.ReadCloser, ch chan struct{}) io.ReadCloser {
	w := &closeWatcher{ReadCloser: body, ch: ch}
	if _, ok := body.(io.WriterTo); ok {
		return closeWatcherWriteTo{w}
	}
	return w
}

type closeWatcher struct {
	io.ReadCloser
	once sync.Once
	ch   chan struct{}
}

func (w *closeWatcher) Close() error {
	err := w.ReadCloser.Close()
	w.once.Do(func() { close(w.ch) })
	return err
}

type closeWatcherWriteTo struct{ *closeWatcher }

func (w closeWatcherWriteTo) WriteTo(dst io.Writer) (int64, error) {
	return w.ReadCloser.(io.WriterTo).WriteTo(dst)
}
