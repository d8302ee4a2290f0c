package lambdaemu

import "net/http"

// testHTTP is this package's tests' HTTP client. It has a transport of its
// own because httptest.Server.Close closes http.DefaultTransport's idle
// connections, which broke a request of a parallel test in flight
// ("CloseIdleConnections called") in one CI run.
var testHTTP = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
