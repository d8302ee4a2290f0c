package dashboard

import (
	"bytes"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/heddle-io/heddle/web"
)

// ContentSecurityPolicy is sent with every answer: the page loads its own
// scripts, styles and API only, runs no inline code and cannot be framed.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// contentTypes are set explicitly: the platform's MIME table (which
// mime.TypeByExtension reads) differs between machines, and a module script
// served as text/plain does not run.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
}

// Handler serves the embedded dashboard.
func Handler() http.Handler {
	return newHandler(web.Files)
}

type handler struct {
	files    fs.FS
	modified time.Time // the process start: embedded files carry no time
}

func newHandler(files fs.FS) *handler {
	return &handler{files: files, modified: time.Now()}
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", ContentSecurityPolicy)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("X-Frame-Options", "DENY")
	if r.URL.Path == "/v1" || strings.HasPrefix(r.URL.Path, "/v1/") {
		// The API's space: never answer a page there.
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name == "" || name == "index.html" {
		h.serve(w, r, "index.html")
		return
	}
	if _, err := fs.Stat(h.files, name); err == nil && path.Ext(name) != ".go" {
		h.serve(w, r, name)
		return
	}
	if path.Ext(name) != "" {
		// A missing asset: index.html in its place would only hide the error.
		http.NotFound(w, r)
		return
	}
	h.serve(w, r, "index.html")
}

func (h *handler) serve(w http.ResponseWriter, r *http.Request, name string) {
	data, err := fs.ReadFile(h.files, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	ct, ok := contentTypes[path.Ext(name)]
	if !ok {
		ct = mime.TypeByExtension(path.Ext(name))
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	// The files change with the binary only: revalidate every time (cheap,
	// Last-Modified) so that an upgrade is seen at once.
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, name, h.modified, bytes.NewReader(data))
}
