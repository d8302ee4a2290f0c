// Package dashboard serves heddle's web dashboard: a single page of plain ES
// modules (web/ at the repository root: no build step, no npm) that drives
// the /v1 API with an API key the user types in and the browser keeps in
// session storage, never in a URL.
//
// The files are embedded with go:embed (see the web package), so the heddle
// binary carries them: the local server mounts Handler at / next to the API
// under /v1. The same files can be served as they are from a bucket or CDN
// in front of the API; every URL the page uses is relative (v1/...), so it
// works under a path prefix too.
//
// Handler sets a strict Content-Security-Policy (default-src 'self', no
// inline script or style, no framing), answers index.html for paths that are
// not files (the page routes with the URL's fragment, so those are old or
// hand-typed links) and 404 for anything under /v1, which is the API's.
package dashboard
