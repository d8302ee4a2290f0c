package faults

import (
	"errors"
	"net/http"
	"net/http/httputil"
	"net/url"
)

// Proxy is a reverse proxy to target (an emulator's endpoint) that injects
// in's faults: for processes that take an endpoint, not a client. A fault
// that loses the answer (TimeoutAfter, Reset) closes the client's
// connection without one, which is what a client of a service whose
// answer was lost sees.
func (in *Injector) Proxy(target *url.URL) http.Handler {
	rp := httputil.NewSingleHostReverseProxy(target)
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 64
	rp.Transport = in.Transport(base)
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if errors.Is(err, ErrInjected) {
			panic(http.ErrAbortHandler) // the connection closes with no answer
		}
		w.WriteHeader(http.StatusBadGateway)
	}
	return rp
}
