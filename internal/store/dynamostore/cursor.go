package dynamostore

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/heddle-io/heddle/internal/store"
)

// cursor is where a page ended: the last item returned, bound to the query
// that produced it so that a cursor replayed against another partition,
// prefix or direction is refused rather than silently misread. It becomes
// the next request's ExclusiveStartKey. Callers see only its base64 form,
// the same as boltstore's.
type cursor struct {
	Kind       string `json:"k"`           // "q" for Query, "i" for QueryIndex
	Partition  string `json:"p"`           // PK, or index partition
	Prefix     string `json:"x,omitempty"` // Query only
	Descending bool   `json:"d,omitempty"` // Query only
	Sort       string `json:"s"`           // last SK, or last index sort key
	PK         string `json:"pk,omitempty"`
	SK         string `json:"sk,omitempty"`
}

const (
	queryCursor = "q"
	indexCursor = "i"
)

func (c cursor) encode() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("dynamostore: encoding a cursor: %v", err)) // strings and a bool always marshal
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, fmt.Errorf("%w: %v", store.ErrBadCursor, err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c cursor
	if err := dec.Decode(&c); err != nil {
		return cursor{}, fmt.Errorf("%w: %v", store.ErrBadCursor, err)
	}
	if dec.More() {
		return cursor{}, fmt.Errorf("%w: trailing data", store.ErrBadCursor)
	}
	return c, nil
}

// queryCursorFor decodes s and checks it belongs to a Query of pk with q's
// prefix and direction.
func queryCursorFor(s, pk string, q store.Query) (cursor, error) {
	c, err := decodeCursor(s)
	if err != nil {
		return cursor{}, err
	}
	if c.Kind != queryCursor || c.Partition != pk || c.Prefix != q.Prefix || c.Descending != q.Descending ||
		c.Sort == "" || !strings.HasPrefix(c.Sort, q.Prefix) || c.PK != "" || c.SK != "" {
		return cursor{}, fmt.Errorf("%w: it was made by another query", store.ErrBadCursor)
	}
	return c, nil
}

// indexCursorFor decodes s and checks it belongs to a QueryIndex of partition.
func indexCursorFor(s, partition string) (cursor, error) {
	c, err := decodeCursor(s)
	if err != nil {
		return cursor{}, err
	}
	if c.Kind != indexCursor || c.Partition != partition || c.Sort == "" || c.PK == "" || c.SK == "" ||
		c.Prefix != "" || c.Descending {
		return cursor{}, fmt.Errorf("%w: it was made by another query", store.ErrBadCursor)
	}
	return c, nil
}
