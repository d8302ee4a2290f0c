package api

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// Paging and the answer ceiling: the one place that bounds what the API
// answers (invariant 11). A route that lists a collection reads its page
// with (*Server).pageOf and answers it with writePage; every answer goes
// through writeJSON, which refuses to send more than MaxAnswerBytes.
//
// A cursor is opaque to clients: the collection's own cursor (a store
// cursor, or a position in a sorted view) with an HMAC over the tenant,
// the route's path and its filters. A cursor changed by hand, taken from
// another tenant, another collection or the same collection with other
// filters is refused with a 400 on the field "query.cursor", before anything is
// read.

// MaxAnswerBytes is the most any answer may carry: below the Lambda's 6 MB
// synchronous payload (API Gateway adds headers and base64 for binary).
// Default pages are far below it; an answer that would exceed it is an
// error telling the caller to ask for less.
const MaxAnswerBytes = 5 << 20

// CodeAnswerTooLarge: the answer would have exceeded MaxAnswerBytes.
const CodeAnswerTooLarge = "answer_too_large"

// maxCursorChars bounds a cursor before it is decoded; heddle's own are a
// few hundred characters.
const maxCursorChars = 2048

// Paging is a collection's page size: Default when ?limit= is absent, at
// most Max.
type Paging struct {
	Default, Max int
}

// Page sizes. Stored collections use the store's bounds; collections whose
// items may be large (catalog entities carry scripts of up to 400 KB, task
// records carry their attempts) page smaller, so a default page stays well
// under 1 MB.
var (
	listPaging   = Paging{Default: store.DefaultPageSize, Max: store.MaxPageSize}
	entityPaging = Paging{Default: 20, Max: 200}
	nodePaging   = Paging{Default: 100, Max: 1000}
	taskPaging   = Paging{Default: 100, Max: 500}
	// catalogPaging pages GET /v1/catalog, whose pages are also cut at
	// catalogPageBytes of stored entities: most catalogs are one page.
	catalogPaging = Paging{Default: 100, Max: 500}
)

// catalogPageBytes bounds the stored entities one page of a catalog
// export carries (at least one entity, of at most 400 KB, is always sent).
const catalogPageBytes = 1 << 20

// pageRequest is a parsed ?limit= and ?cursor=: After is the collection's
// own cursor, verified ("" for the first page).
type pageRequest struct {
	Limit  int
	After  string
	tenant string
	scope  string
}

// pageOf reads ?limit= and ?cursor= for the collection at r's path, seen by
// p, with its page sizes.
func (s *Server) pageOf(r *http.Request, p access.Principal, pg Paging) (pageRequest, error) {
	pr := pageRequest{Limit: pg.Default, tenant: p.Tenant, scope: pageScope(r)}
	q := r.URL.Query()
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > pg.Max {
			return pageRequest{}, badQuery("limit", fmt.Sprintf("%q is not a page size; use 1 to %d", v, pg.Max))
		}
		pr.Limit = n
	}
	if v := q.Get("cursor"); v != "" {
		after, err := s.cursors.open(pr.tenant, pr.scope, v)
		if err != nil {
			return pageRequest{}, err
		}
		pr.After = after
	}
	return pr, nil
}

// next turns the collection's cursor for the following page into the one
// the client sees ("" stays "": the last page).
func (pr pageRequest) next(s *Server, after string) string {
	if after == "" {
		return ""
	}
	return s.cursors.seal(pr.tenant, pr.scope, after)
}

// pageScope is what a cursor is bound to besides the tenant: the path and
// every query parameter but the page's own, in a canonical order.
func pageScope(r *http.Request) string {
	q := r.URL.Query()
	q.Del("limit")
	q.Del("cursor")
	return r.URL.Path + "?" + q.Encode()
}

// Page is a listing response.
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// writePage answers one page; after is the collection's cursor for the next.
func writePage[T any](s *Server, w http.ResponseWriter, pr pageRequest, items []T, after string) {
	if items == nil {
		items = []T{}
	}
	writeJSON(w, http.StatusOK, Page[T]{Items: items, NextCursor: pr.next(s, after)})
}

// errBadCursor is the answer to a cursor heddle did not make for this
// listing; the store's own refusals (store.ErrBadCursor) read the same.
var errBadCursor = badQuery("cursor", "is not a cursor this listing returned; start again without it")

// cursorSigner seals and opens cursors with an HMAC key.
type cursorSigner struct{ key []byte }

const cursorMACBytes = 16

func (c cursorSigner) mac(tenant, scope string, inner []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	for _, part := range [][]byte{[]byte(tenant), []byte(scope), inner} {
		var n [8]byte
		for i, l := 0, uint64(len(part)); i < 8; i++ {
			n[i] = byte(l >> (8 * i))
		}
		m.Write(n[:])
		m.Write(part)
	}
	return m.Sum(nil)[:cursorMACBytes]
}

func (c cursorSigner) seal(tenant, scope, inner string) string {
	b := append([]byte(inner), c.mac(tenant, scope, []byte(inner))...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (c cursorSigner) open(tenant, scope, cursor string) (string, error) {
	if len(cursor) > maxCursorChars {
		return "", errBadCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(b) <= cursorMACBytes {
		return "", errBadCursor
	}
	inner, sum := b[:len(b)-cursorMACBytes], b[len(b)-cursorMACBytes:]
	if !hmac.Equal(sum, c.mac(tenant, scope, inner)) {
		return "", errBadCursor
	}
	return string(inner), nil
}

// cursorKeyItem holds the key every API instance signs cursors with, so a
// cursor one Lambda instance made opens on any other. It protects the
// integrity of cursors, not data: anyone who can read the table can read
// everything a cursor points at anyway.
var cursorKeyItem = store.Key{PK: "SETTINGS", SK: "cursor-key"}

// LoadCursorKey returns the deployment's cursor key from st, making it on
// first use (a conditional put, so instances starting at once agree).
func LoadCursorKey(ctx context.Context, st store.Store) ([]byte, error) {
	for range 3 {
		it, err := st.Get(ctx, cursorKeyItem)
		if err == nil && len(it.Data) >= 32 {
			return it.Data, nil
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("reading the cursor key: %w", err)
		}
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		_, err = st.Write(ctx, store.Put(store.Item{Key: cursorKeyItem, Data: key}, store.Condition{MustNotExist: true}))
		if err == nil {
			return key, nil
		}
		if !errors.Is(err, store.ErrConditionFailed) {
			return nil, fmt.Errorf("writing the cursor key: %w", err)
		}
	}
	return nil, errors.New("api: the cursor key could not be read or made")
}

// writeJSON answers v, unless its encoding exceeds MaxAnswerBytes: then the
// caller gets a 422 that says to ask for a smaller page, never a truncated
// or oversized answer.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		_ = json.NewEncoder(&buf).Encode(ErrorBody{Error: ErrorDetail{Status: status, Code: CodeInternal,
			Message: "heddle could not encode its answer"}})
	}
	if buf.Len() > MaxAnswerBytes {
		size := buf.Len()
		status = http.StatusUnprocessableEntity
		buf.Reset()
		msg := fmt.Sprintf("the answer would be %d bytes, over heddle's bound of %d; ask for less with ?limit= (or a narrower filter) and follow nextCursor",
			size, MaxAnswerBytes)
		// ServeHTTP has set the request id on the answer already.
		_ = json.NewEncoder(&buf).Encode(ErrorBody{Error: ErrorDetail{Status: status, Code: CodeAnswerTooLarge, Message: msg, RequestID: w.Header().Get("X-Request-Id"),
			Details: []domain.Problem{{Field: "query.limit", Code: domain.CodeOutOfRange, Message: "ask for fewer items per page"}}}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
