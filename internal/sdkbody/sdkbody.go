package sdkbody

import (
	"io"
	"net/http"
)

// HTTPClient is what every AWS SDK service client takes as its HTTPClient
// (aws.HTTPClient and each service's own, which are the same method).
type HTTPClient interface {
	Do(*http.Request) (*http.Response, error)
}

// The SDK (smithy-go) hands net/http each request body wrapped in a
// "safe" reader that it closes as soon as the response headers are back,
// and whose WriteTo answers io.EOF once closed. net/http writes a body of
// known length in two steps: the Content-Length bytes, then one more copy
// to make sure nothing follows; that copy goes through WriteTo. When the
// server answers between the two steps (it has every byte it needs), the
// SDK closes the body, the second copy gets io.EOF, and net/http takes it
// for a failed write and closes the connection, while the response body is
// still being read from it. The read fails with "use of closed network
// connection", the SDK retries, and the service serves the call twice: a
// second DescribeInstances against EC2's request rate, or a conditional
// DynamoDB write that succeeded tried again and refused by its own
// condition, which reads as a lost race. It needs a response larger than
// the connection's read buffer (4 KB): a cluster's listing, a task item
// returned by an update. See aws/aws-sdk-go-v2#2737; the SDK's answer
// there is to retry such errors, which is exactly the duplicate call.
//
// Guard hides WriteTo: net/http then reads the closed body with Read,
// which answers a plain io.EOF, the end it expects, and the connection
// stays whole.
func Guard(next HTTPClient) HTTPClient { return guard{next} }

type guard struct{ next HTTPClient }

func (g guard) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = readOnlyBody{r.Body}
	}
	return g.next.Do(r)
}

// readOnlyBody has only Read and Close, whatever the body it wraps has.
type readOnlyBody struct{ io.ReadCloser }
