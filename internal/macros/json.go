package macros

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
)

// ExpandJSON expands the macros in every string value of a JSON document (a
// cluster config), leaving object keys, numbers and structure as they are.
// Key order and number text are kept; the result is compact. An empty or
// null document is returned as is. An error names the JSON path of the value.
func ExpandJSON(doc json.RawMessage, l *Layout, self *domain.Node) (json.RawMessage, error) {
	if isEmptyDoc(doc) {
		return doc, nil
	}
	var out bytes.Buffer
	out.Grow(len(doc))
	err := walkJSON(doc, &out, func(path string, s string) (string, error) {
		if strings.IndexByte(s, '%') < 0 {
			return s, nil
		}
		t, err := Parse(s)
		if err == nil {
			s, err = t.Expand(l, self)
		}
		return s, atPath(err, path)
	})
	if err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// ServicesReferencedJSON is ServicesReferenced over every string value of a
// JSON document.
func ServicesReferencedJSON(doc json.RawMessage) ([]string, error) {
	if isEmptyDoc(doc) {
		return nil, nil
	}
	var all []string
	err := walkJSON(doc, nil, func(path string, s string) (string, error) {
		services, err := ServicesReferenced(s)
		all = append(all, services...)
		return s, atPath(err, path)
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(all)
	return slices.Compact(all), nil
}

// ValidateJSON parses every macro in a JSON document's string values and
// returns every malformed or unknown one (errors.Join of *Error, each with its
// path), or an error if doc is not JSON. The API calls it when a config or a
// template is written, long before any layout exists.
func ValidateJSON(doc json.RawMessage) error {
	if isEmptyDoc(doc) {
		return nil
	}
	var errs []error
	err := walkJSON(doc, nil, func(path string, s string) (string, error) {
		if strings.IndexByte(s, '%') >= 0 {
			if _, err := Parse(s); err != nil {
				errs = append(errs, atPath(err, path))
			}
		}
		return s, nil
	})
	if err != nil {
		return err
	}
	return errors.Join(errs...)
}

func isEmptyDoc(doc json.RawMessage) bool {
	d := bytes.TrimSpace(doc)
	return len(d) == 0 || string(d) == "null"
}

func atPath(err error, path string) error {
	var e *Error
	if errors.As(err, &e) {
		c := *e
		c.Path = path
		return &c
	}
	return err
}

// frame is one open container while walking a document.
type frame struct {
	object  bool
	n       int    // members or elements seen so far
	key     string // object: the current member's key
	wantKey bool   // object: the next string is a key
}

// walkJSON streams doc token by token, calling fn on each string value with
// its path and, when out is not nil, writing the document with fn's results.
// Streaming keeps key order and number text, which a decode into maps would
// lose.
func walkJSON(doc []byte, out *bytes.Buffer, fn func(path, s string) (string, error)) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var stack []frame
	write := func(b []byte) {
		if out != nil {
			out.Write(b)
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if len(stack) > 0 {
				return fmt.Errorf("macros: invalid JSON document: %w", io.ErrUnexpectedEOF)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("macros: invalid JSON document: %w", err)
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			write([]byte{byte(d)})
			if len(stack) == 0 {
				return expectEnd(dec)
			}
			continue
		}
		// A value or a key: write the separator that precedes it.
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
			switch {
			case top.object && top.wantKey:
				if top.n > 0 {
					write([]byte{','})
				}
			case top.object:
				write([]byte{':'})
			case top.n > 0:
				write([]byte{','})
			}
		}
		if top != nil && top.object && top.wantKey {
			key := tok.(string) // the decoder only yields string keys
			top.key, top.wantKey = key, false
			write(encodeString(key))
			continue
		}
		path := ""
		if top != nil {
			path = pathOf(stack)
			top.n++
			if top.object {
				top.wantKey = true
			}
		}
		switch v := tok.(type) {
		case json.Delim:
			stack = append(stack, frame{object: v == '{', wantKey: v == '{'})
			write([]byte{byte(v)})
			continue
		case string:
			s, err := fn(path, v)
			if err != nil {
				return err
			}
			write(encodeString(s))
		case json.Number:
			write([]byte(v))
		case bool:
			write([]byte(strconv.FormatBool(v)))
		case nil:
			write([]byte("null"))
		}
		if len(stack) == 0 {
			return expectEnd(dec)
		}
	}
}

func expectEnd(dec *json.Decoder) error {
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("macros: invalid JSON document: data after the top-level value")
	}
	return nil
}

// pathOf renders the path of the value about to be read in the innermost frame.
func pathOf(stack []frame) string {
	var b strings.Builder
	for i, f := range stack {
		if f.object {
			if isPlainKey(f.key) {
				if i > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.key)
			} else {
				b.WriteString("[" + strconv.Quote(f.key) + "]")
			}
			continue
		}
		// The innermost array's element is not counted yet; an outer array's
		// current element was counted when it was opened.
		n := f.n
		if i < len(stack)-1 {
			n--
		}
		b.WriteString("[" + strconv.Itoa(n) + "]")
	}
	return b.String()
}

func isPlainKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c == '.' || !isNameByte(c) {
			return false
		}
	}
	return true
}

func encodeString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}
