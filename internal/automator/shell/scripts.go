package shell

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// Scripts keeps named, versioned script resources per tenant, so that many
// services can share one install script and a fix is a new version rather
// than an edit of every service. Versions are immutable: a service action
// that names a version runs exactly that text forever; one that names none
// runs the latest.
type Scripts struct {
	store store.Store
	clock func() time.Time
}

// Script is one version of a script resource.
type Script struct {
	Name      string    `json:"name"`
	Version   int       `json:"version"`
	Content   string    `json:"content"`
	SHA256    string    `json:"sha256"`
	CreatedAt time.Time `json:"createdAt"`
}

// MaxScriptSize bounds a script resource: it is stored in one item
// (DynamoDB's limit is 400 KB) and a bigger script belongs in an image.
const MaxScriptSize = 256 << 10

// scriptsPK is the partition of a tenant's script resources (under the
// tenant's scope); sort keys are "<name>#<version, zero-padded>", so the
// latest version is the last key with the name's prefix.
const scriptsPK = "SCRIPTS"

// ErrScriptNotFound: no such script resource or version.
var ErrScriptNotFound = errors.New("shell: script resource not found")

// NewScripts keeps script resources in s (the unscoped store; every call is
// confined to its tenant).
func NewScripts(s store.Store) *Scripts { return &Scripts{store: s, clock: time.Now} }

func (sc *Scripts) scoped(tenant string) (store.Store, error) {
	if !domain.ValidName(tenant) {
		return nil, fmt.Errorf("shell: %q is not a valid tenant name", tenant)
	}
	return store.Scoped(sc.store, tenant), nil
}

func scriptKey(name string, version int) string {
	return name + "#" + fmt.Sprintf("%010d", version)
}

// Put stores content as the next version of the named script and returns
// it. Concurrent puts of one name get distinct versions (each write is
// conditional on its version not existing).
func (sc *Scripts) Put(ctx context.Context, tenant, name, content string) (Script, error) {
	if !domain.ValidName(name) {
		return Script{}, fmt.Errorf("shell: %q is not a valid script name (letters, digits, '.', '_' and '-', up to 63)", name)
	}
	if len(content) > MaxScriptSize {
		return Script{}, fmt.Errorf("shell: script %s is %d bytes; the limit is %d", name, len(content), MaxScriptSize)
	}
	if strings.IndexByte(content, 0) >= 0 {
		return Script{}, fmt.Errorf("shell: script %s holds a NUL byte", name)
	}
	s, err := sc.scoped(tenant)
	if err != nil {
		return Script{}, err
	}
	for range 10 {
		latest, err := sc.latest(ctx, s, name)
		if err != nil && !errors.Is(err, ErrScriptNotFound) {
			return Script{}, err
		}
		sum := sha256.Sum256([]byte(content))
		next := Script{Name: name, Version: latest.Version + 1, Content: content, SHA256: hex.EncodeToString(sum[:]), CreatedAt: sc.clock().UTC()}
		data, err := json.Marshal(next)
		if err != nil {
			return Script{}, err
		}
		_, err = s.Write(ctx, store.Put(store.Item{Key: store.Key{PK: scriptsPK, SK: scriptKey(name, next.Version)}, Data: data}, store.Condition{MustNotExist: true}))
		if errors.Is(err, store.ErrConditionFailed) {
			continue // another put took this version: take the next
		}
		if err != nil {
			return Script{}, fmt.Errorf("shell: store script %s: %w", name, err)
		}
		return next, nil
	}
	return Script{}, fmt.Errorf("shell: script %s: too many concurrent versions; try again", name)
}

// Get returns a version of the named script; version 0 means the latest.
func (sc *Scripts) Get(ctx context.Context, tenant, name string, version int) (Script, error) {
	s, err := sc.scoped(tenant)
	if err != nil {
		return Script{}, err
	}
	if version == 0 {
		return sc.latest(ctx, s, name)
	}
	it, err := s.Get(ctx, store.Key{PK: scriptsPK, SK: scriptKey(name, version)})
	if errors.Is(err, store.ErrNotFound) {
		return Script{}, fmt.Errorf("%w: %s version %d", ErrScriptNotFound, name, version)
	}
	if err != nil {
		return Script{}, err
	}
	return decodeScript(it)
}

func (sc *Scripts) latest(ctx context.Context, s store.Store, name string) (Script, error) {
	page, err := s.Query(ctx, scriptsPK, store.Query{Prefix: name + "#", Descending: true, Limit: 1})
	if err != nil {
		return Script{}, err
	}
	if len(page.Items) == 0 {
		return Script{}, fmt.Errorf("%w: %s", ErrScriptNotFound, name)
	}
	return decodeScript(page.Items[0])
}

// Versions lists the versions of the named script, oldest first.
func (sc *Scripts) Versions(ctx context.Context, tenant, name string) ([]Script, error) {
	s, err := sc.scoped(tenant)
	if err != nil {
		return nil, err
	}
	var out []Script
	q := store.Query{Prefix: name + "#"}
	for {
		page, err := s.Query(ctx, scriptsPK, q)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			sc, err := decodeScript(it)
			if err != nil {
				return nil, err
			}
			out = append(out, sc)
		}
		if page.Next == "" {
			return out, nil
		}
		q.Cursor = page.Next
	}
}

func decodeScript(it store.Item) (Script, error) {
	var s Script
	if err := json.Unmarshal(it.Data, &s); err != nil {
		return Script{}, fmt.Errorf("shell: script item %s: %w", it.Key, err)
	}
	return s, nil
}

// parseVersion reads a script_version field: empty is 0 (the latest).
func parseVersion(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%q is not a version number (1, 2, ...)", v)
	}
	return n, nil
}
