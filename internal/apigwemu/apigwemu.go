package apigwemu

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heddle-io/heddle/internal/lambdaemu"
)

// API Gateway's limits.
const (
	// MaxRequest is the largest request body an HTTP API accepts.
	MaxRequest = 10 * 1024 * 1024
	// Timeout is an HTTP API's integration timeout.
	Timeout = 30 * time.Second
	// RouteKey is template.yaml's route for every path below the root.
	RouteKey = "ANY /{proxy+}"
	// RootRouteKey is template.yaml's route for the root (the dashboard's
	// page), which /{proxy+} does not match.
	RootRouteKey = "ANY /"
)

// Invoker runs the function behind the door (*lambdaemu.Pool).
type Invoker interface {
	Invoke(ctx context.Context, payload []byte) (lambdaemu.Result, error)
}

// Config configures New.
type Config struct {
	Function Invoker
	// Timeout is the integration timeout; 0 is Timeout (30 s). Tests
	// shorten it.
	Timeout time.Duration
	// APIID and AccountID fill the requestContext; local and
	// 000000000000 when empty.
	APIID, AccountID string
	Logger           *slog.Logger
	// Authorizer, when set, guards its route as template.yaml's JWT
	// authorizer does (authorizer.go); other paths stay on RouteKey.
	Authorizer *JWTAuthorizer
}

// FrontDoor is the HTTP API.
type FrontDoor struct {
	cfg Config
	log *slog.Logger
}

// New returns the front door to cfg.Function.
func New(cfg Config) *FrontDoor {
	if cfg.Timeout == 0 {
		cfg.Timeout = Timeout
	}
	if cfg.APIID == "" {
		cfg.APIID = "local"
	}
	if cfg.AccountID == "" {
		cfg.AccountID = "000000000000"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &FrontDoor{cfg: cfg, log: log}
}

// gatewayError is API Gateway's own answer.
func gatewayError(w http.ResponseWriter, requestID string, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Apigw-Requestid", requestID)
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "{\"message\":%q}", message)
}

func (d *FrontDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	requestID := newRequestID()
	if r.ContentLength > MaxRequest {
		gatewayError(w, requestID, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxRequest+1))
	if err != nil {
		gatewayError(w, requestID, http.StatusBadRequest, "Bad Request")
		return
	}
	if len(body) > MaxRequest {
		gatewayError(w, requestID, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
		return
	}
	if r.URL.Path != "/" && strings.Trim(r.URL.Path, "/") == "" {
		gatewayError(w, requestID, http.StatusNotFound, "Not Found") // "//": no route matches
		return
	}
	ev := Event(r, body, d.cfg.APIID, d.cfg.AccountID, requestID, time.Now())
	if a := d.cfg.Authorizer; a != nil && a.guards(r.URL.Path) && !a.authorize(r, &ev) {
		w.Header().Set("Www-Authenticate", "Bearer")
		gatewayError(w, requestID, http.StatusUnauthorized, "Unauthorized")
		return
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		gatewayError(w, requestID, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), d.cfg.Timeout)
	defer cancel()
	res, err := d.cfg.Function.Invoke(ctx, payload)
	switch {
	case errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil:
		d.log.Warn("apigwemu: the function did not answer in time", "requestId", requestID, "timeout", d.cfg.Timeout)
		gatewayError(w, requestID, http.StatusServiceUnavailable, "Service Unavailable")
		return
	case err != nil:
		d.log.Warn("apigwemu: the function could not be invoked", "requestId", requestID, "error", err)
		gatewayError(w, requestID, http.StatusInternalServerError, "Internal Server Error")
		return
	case res.ErrorType == lambdaemu.ErrorTypeResponseSize:
		gatewayError(w, requestID, http.StatusBadGateway, "Bad Gateway")
		return
	case res.FunctionError != "":
		d.log.Warn("apigwemu: the invocation failed", "requestId", requestID, "errorType", res.ErrorType, "answer", string(res.Payload))
		gatewayError(w, requestID, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	resp, err := Response(res.Payload)
	if err != nil {
		d.log.Warn("apigwemu: the function's answer is not a payload 2.0 response", "requestId", requestID, "error", err)
		gatewayError(w, requestID, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	writeResponse(w, requestID, resp)
}

// Event is the payload-2.0 event API Gateway makes of r (whose body is
// body) for the route ANY /{proxy+}, or ANY / for the root.
func Event(r *http.Request, body []byte, apiID, accountID, requestID string, now time.Time) events.APIGatewayV2HTTPRequest {
	sourceIP := r.RemoteAddr
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		sourceIP = host
	}
	headers := map[string]string{}
	var cookies []string
	for name, values := range r.Header {
		name = strings.ToLower(name)
		if name == "cookie" {
			for _, v := range values {
				for c := range strings.SplitSeq(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		headers[name] = strings.Join(values, ",")
	}
	host := r.Host
	headers["host"] = host
	if len(body) > 0 || r.ContentLength > 0 {
		headers["content-length"] = fmt.Sprint(len(body))
	}
	if xff := headers["x-forwarded-for"]; xff != "" {
		headers["x-forwarded-for"] = xff + ", " + sourceIP
	} else {
		headers["x-forwarded-for"] = sourceIP
	}
	_, port, _ := net.SplitHostPort(r.Host)
	proto := "http"
	if r.TLS != nil {
		proto = "https"
	}
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[proto]
	}
	headers["x-forwarded-port"] = port
	headers["x-forwarded-proto"] = proto
	headers["x-amzn-trace-id"] = fmt.Sprintf("Root=1-%08x-%x", now.Unix(), []byte(requestID + "000000000000")[:12])

	var query map[string]string
	if q, err := url.ParseQuery(r.URL.RawQuery); err == nil && len(q) > 0 {
		query = map[string]string{}
		for k, vs := range q {
			query[k] = strings.Join(vs, ",")
		}
	}
	path := r.URL.Path
	routeKey, params := RouteKey, map[string]string{"proxy": strings.TrimPrefix(path, "/")}
	if path == "/" {
		routeKey, params = RootRouteKey, nil
	}
	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              routeKey,
		RawPath:               r.URL.EscapedPath(),
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: query,
		PathParameters:        params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     routeKey,
			AccountID:    accountID,
			Stage:        "$default",
			RequestID:    requestID,
			APIID:        apiID,
			DomainName:   hostOnly(host),
			DomainPrefix: strings.SplitN(hostOnly(host), ".", 2)[0],
			Time:         now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      path,
				Protocol:  r.Proto,
				SourceIP:  sourceIP,
				UserAgent: r.UserAgent(),
			},
		},
	}
	if len(body) > 0 {
		if isText(r.Header.Get("Content-Type")) && utf8.Valid(body) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	return ev
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// isText says whether API Gateway passes a body of this type as text.
func isText(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return strings.HasPrefix(mt, "text/") || slices.Contains([]string{"application/json", "application/xml",
		"application/javascript", "application/x-www-form-urlencoded", "application/yaml", "application/x-yaml"}, mt) ||
		strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml")
}

// Response reads a function's answer as API Gateway does with payload 2.0:
// a JSON object with a statusCode is a response; any other JSON is a 200
// whose body is that JSON; anything else is an error.
func Response(payload []byte) (events.APIGatewayV2HTTPResponse, error) {
	var probe map[string]json.RawMessage
	if json.Unmarshal(payload, &probe) == nil {
		if _, ok := probe["statusCode"]; ok {
			var resp events.APIGatewayV2HTTPResponse
			if err := json.Unmarshal(payload, &resp); err != nil {
				return resp, fmt.Errorf("apigwemu: a malformed response: %w", err)
			}
			if resp.StatusCode < 100 || resp.StatusCode > 599 {
				return resp, fmt.Errorf("apigwemu: status %d is not an HTTP status", resp.StatusCode)
			}
			return resp, nil
		}
	}
	if !json.Valid(payload) {
		return events.APIGatewayV2HTTPResponse{}, errors.New("apigwemu: the answer is not JSON")
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK, Body: string(payload),
		Headers: map[string]string{"Content-Type": "application/json"}}, nil
}

func writeResponse(w http.ResponseWriter, requestID string, resp events.APIGatewayV2HTTPResponse) {
	h := w.Header()
	for k, v := range resp.Headers {
		h.Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		h.Add("Set-Cookie", c)
	}
	h.Set("Apigw-Requestid", requestID)
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		decoded, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			gatewayError(w, requestID, http.StatusInternalServerError, "Internal Server Error")
			return
		}
		body = decoded
	}
	if h.Get("Content-Type") == "" && len(body) > 0 {
		h.Set("Content-Type", http.DetectContentType(body))
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, bytes.NewReader(body))
}

// newRequestID is shaped like API Gateway's (16 base64 characters).
func newRequestID() string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)[:15] + "="
}
