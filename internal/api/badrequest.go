package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/heddle-io/heddle/internal/domain"
)

// CodeBadRequest: the request itself (its request line or headers) could
// not be read, so it never reached a route.
const CodeBadRequest = "bad_request"

// MalformedTarget tells whether target, a request's path and query as sent,
// is one net/http cannot parse (a '%' that does not start a two-hex-digit
// escape), and if so returns the envelope to answer with. net/http refuses
// such a request before any handler runs, so whatever fronts the API checks
// it first: the Lambda on the event's raw path, the local server through
// ListenerWithEnvelope. requestID is the client's X-Request-Id, if any.
func MalformedTarget(target, requestID string) (ErrorBody, bool) {
	if _, err := url.ParseRequestURI(target); err == nil {
		return ErrorBody{}, false
	}
	return ErrorBody{Error: malformedTarget(target, requestIDFrom(requestID))}, true
}

func malformedTarget(target, requestID string) ErrorDetail {
	if len(target) > 200 {
		target = target[:200] + "..."
	}
	msg := "every % must start an escape of two hex digits; write a literal % as %25"
	return ErrorDetail{Status: http.StatusBadRequest, Code: CodeBadRequest, RequestID: requestID,
		Message: fmt.Sprintf("the path %q cannot be parsed: %s", target, msg),
		Details: []domain.Problem{{Field: "path", Code: domain.CodeMalformed, Message: msg}}}
}

// ListenerWithEnvelope wraps ln so that the answers net/http's server
// writes itself, before any handler, when it cannot read a request (a
// malformed escape in the path, a bad request line or header) carry the
// JSON error envelope like every other answer, instead of a plain-text
// "400 Bad Request".
//
// net/http offers no hook for these: it writes the answer to the connection
// in one call and closes it. The wrapped connection recognizes that write
// (its status line followed directly by the fixed text/plain and
// Connection: close headers and no Date, which no handler's answer lacks)
// and writes the envelope instead, naming the request line it last read
// when that is what failed to parse.
func ListenerWithEnvelope(ln net.Listener) net.Listener { return envelopeListener{ln} }

type envelopeListener struct{ net.Listener }

func (l envelopeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &envelopeConn{Conn: c}, nil
}

// serverErrorHeaders follows the status line of every answer net/http's
// server writes on its own (server.go, errorHeaders).
const serverErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// recentBytes is how much of what a connection read is kept to find the
// request line that failed: a request line longer than this is reported
// without being named.
const recentBytes = 8 << 10

type envelopeConn struct {
	net.Conn
	mu     sync.Mutex
	recent []byte // the last recentBytes read
}

func (c *envelopeConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.recent = append(c.recent, p[:n]...)
		if over := len(c.recent) - recentBytes; over > 0 {
			c.recent = append(c.recent[:0], c.recent[over:]...)
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *envelopeConn) Write(p []byte) (int, error) {
	status, reason, ok := serverRefusal(p)
	if !ok {
		return c.Conn.Write(p)
	}
	c.mu.Lock()
	d := describeRefusal(status, reason, c.recent)
	c.mu.Unlock()
	body, err := json.MarshalIndent(ErrorBody{Error: d}, "", "  ")
	if err != nil {
		return 0, err
	}
	body = append(body, '\n')
	head := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\nX-Request-Id: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
		status, http.StatusText(status), d.RequestID, len(body))
	if _, err := c.Conn.Write(append([]byte(head), body...)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// serverRefusal recognizes an answer net/http's server wrote itself
// ("HTTP/1.1 400 Bad Request: reason" + serverErrorHeaders + text) and
// returns its status and the reason it gave, if any.
func serverRefusal(p []byte) (status int, reason string, ok bool) {
	line, rest, found := bytes.Cut(p, []byte("\r\n"))
	if !found || !bytes.HasPrefix(rest, []byte(serverErrorHeaders[2:])) {
		return 0, "", false
	}
	proto, statusText, found := strings.Cut(string(line), " ")
	if !found || !strings.HasPrefix(proto, "HTTP/1.") || len(statusText) < 3 {
		return 0, "", false
	}
	status, err := strconv.Atoi(statusText[:3])
	if err != nil || status < 400 || status > 599 {
		return 0, "", false
	}
	_, reason, _ = strings.Cut(statusText[3:], ": ")
	return status, reason, true
}

// describeRefusal is the envelope for a refusal with status and reason;
// recent is what the connection last read.
func describeRefusal(status int, reason string, recent []byte) ErrorDetail {
	id := requestIDFrom("")
	if status == http.StatusBadRequest {
		if target, ok := unparsableTarget(recent); ok {
			return malformedTarget(target, id)
		}
	}
	msg := "the request could not be read: its request line or a header is malformed"
	switch {
	case reason != "":
		msg = "the request could not be read: " + reason
	case status == http.StatusRequestHeaderFieldsTooLarge:
		msg = "the request's headers are too large; send fewer or shorter headers"
	}
	return ErrorDetail{Status: status, Code: CodeBadRequest, Message: msg, RequestID: id}
}

// unparsableTarget finds, in what a connection last read, the request line
// whose target net/http could not parse: the last line of the form
// "METHOD target HTTP/x.y".
func unparsableTarget(recent []byte) (string, bool) {
	lines := strings.Split(string(recent), "\r\n")
	for i := len(lines) - 1; i >= 0; i-- {
		parts := strings.Split(lines[i], " ")
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "HTTP/") {
			continue
		}
		if _, err := url.ParseRequestURI(parts[1]); err != nil {
			return parts[1], true
		}
		return "", false
	}
	return "", false
}
