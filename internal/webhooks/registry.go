package webhooks

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/events"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store"
)

// Endpoint is one registered receiver.
type Endpoint struct {
	ID    string        `json:"id"`
	URL   string        `json:"url"`
	Types []events.Type `json:"types,omitempty"` // empty: every type (none for a pre-start hook)
	// PreStart makes the endpoint a pre-start hook: every job of the
	// tenant waits, before it starts, for it to answer 2xx within the
	// timeout, and fails with its answer otherwise.
	PreStart    bool      `json:"preStart,omitempty"`
	Description string    `json:"description,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
	CreatedBy   string    `json:"createdBy"`
	// Secret is the signing secret, sealed; the API never shows it but in
	// the answer to the registration.
	Secret secrets.Sealed `json:"secret,omitempty"`
}

// Wants reports whether e subscribes to t.
func (e Endpoint) Wants(t events.Type) bool {
	if len(e.Types) == 0 {
		return !e.PreStart
	}
	return slices.Contains(e.Types, t)
}

// Request registers an endpoint.
type Request struct {
	URL         string        `json:"url"`
	Types       []events.Type `json:"types,omitempty"`
	PreStart    bool          `json:"preStart,omitempty"`
	Description string        `json:"description,omitempty"`
}

// MaxEndpoints bounds a tenant's endpoints: every event reads them all.
const MaxEndpoints = 20

// ErrNotFound: no such endpoint.
var ErrNotFound = errors.New("webhooks: no such endpoint")

// ErrTooMany: the tenant has MaxEndpoints already.
var ErrTooMany = errors.New("webhooks: too many endpoints")

// Registry keeps a tenant's endpoints.
type Registry struct {
	s      store.Store
	kr     *secrets.Keyring
	policy Policy
}

// NewRegistry keeps endpoints in s, their secrets sealed by kr.
func NewRegistry(s store.Store, kr *secrets.Keyring, p Policy) *Registry {
	return &Registry{s: s, kr: kr, policy: p}
}

func endpointsPK(tenant string) string { return store.TenantPK(tenant, "WEBHOOKS") }

func binding(tenant, id string) secrets.Binding {
	return secrets.Binding{"purpose": "webhook-secret", "tenant": tenant, "endpoint": id}
}

// Validate checks a request: structured problems, nothing written.
func (r *Registry) Validate(req Request) domain.Problems {
	var ps domain.Problems
	if req.URL == "" {
		ps = append(ps, domain.Problem{Field: "url", Code: domain.CodeRequired, Message: "give the URL heddle posts events to"})
	} else if len(req.URL) > 2048 {
		ps = append(ps, domain.Problem{Field: "url", Code: domain.CodeOutOfRange, Message: "is longer than 2048 characters"})
	} else if err := r.policy.CheckURL(req.URL); err != nil {
		ps = append(ps, domain.Problem{Field: "url", Code: domain.CodeInvalid, Message: err.Error()})
	}
	for i, t := range req.Types {
		if !slices.Contains(events.Types, t) {
			ps = append(ps, domain.Problem{Field: fmt.Sprintf("types[%d]", i), Code: domain.CodeInvalid,
				Message: fmt.Sprintf("%q is not an event type; use one of %v", t, events.Types)})
		}
	}
	if len(req.Description) > 500 {
		ps = append(ps, domain.Problem{Field: "description", Code: domain.CodeOutOfRange, Message: "is longer than 500 characters"})
	}
	return ps
}

// Create registers an endpoint and returns it with its secret in clear,
// the only time the secret is shown.
func (r *Registry) Create(ctx context.Context, tenant, user string, req Request) (Endpoint, string, error) {
	if ps := r.Validate(req); len(ps) > 0 {
		return Endpoint{}, "", ps
	}
	list, err := r.List(ctx, tenant)
	if err != nil {
		return Endpoint{}, "", err
	}
	if len(list) >= MaxEndpoints {
		return Endpoint{}, "", fmt.Errorf("%w: a tenant has at most %d; delete one first", ErrTooMany, MaxEndpoints)
	}
	idb := make([]byte, 6)
	raw := make([]byte, 32)
	_, _ = rand.Read(idb)
	_, _ = rand.Read(raw)
	id := "wh-" + hex.EncodeToString(idb)
	secret := "whsec_" + base64.RawURLEncoding.EncodeToString(raw)
	sealed, err := r.kr.SealString(ctx, secret, binding(tenant, id))
	if err != nil {
		return Endpoint{}, "", fmt.Errorf("sealing the secret of webhook %s: %w", id, err)
	}
	e := Endpoint{ID: id, URL: req.URL, Types: req.Types, PreStart: req.PreStart, Description: req.Description, CreatedAt: time.Now().UTC(), CreatedBy: user, Secret: sealed}
	data, _ := json.Marshal(e)
	if _, err := r.s.Write(ctx, store.Put(store.Item{Key: store.Key{PK: endpointsPK(tenant), SK: id}, Data: data}, store.Condition{MustNotExist: true})); err != nil {
		return Endpoint{}, "", fmt.Errorf("registering webhook %s: %w", id, err)
	}
	e.Secret = ""
	return e, secret, nil
}

// Get returns one endpoint, its secret still sealed.
func (r *Registry) Get(ctx context.Context, tenant, id string) (Endpoint, error) {
	it, err := r.s.Get(ctx, store.Key{PK: endpointsPK(tenant), SK: id})
	if errors.Is(err, store.ErrNotFound) {
		return Endpoint{}, fmt.Errorf("%w: webhook %q", ErrNotFound, id)
	}
	if err != nil {
		return Endpoint{}, err
	}
	var e Endpoint
	if err := json.Unmarshal(it.Data, &e); err != nil {
		return Endpoint{}, fmt.Errorf("reading webhook %s: %w", id, err)
	}
	return e, nil
}

// List returns every endpoint of the tenant (at most MaxEndpoints), secrets
// sealed.
func (r *Registry) List(ctx context.Context, tenant string) ([]Endpoint, error) {
	page, err := r.s.Query(ctx, endpointsPK(tenant), store.Query{Limit: store.MaxPageSize})
	if err != nil {
		return nil, err
	}
	out := make([]Endpoint, 0, len(page.Items))
	for _, it := range page.Items {
		var e Endpoint
		if err := json.Unmarshal(it.Data, &e); err != nil {
			return nil, fmt.Errorf("reading webhook %s: %w", it.SK, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// Delete removes an endpoint; deliveries under way to it give up.
func (r *Registry) Delete(ctx context.Context, tenant, id string) error {
	_, err := r.s.Write(ctx, store.Delete(store.Key{PK: endpointsPK(tenant), SK: id}, store.Condition{MustExist: true}))
	if errors.Is(err, store.ErrConditionFailed) {
		return fmt.Errorf("%w: webhook %q", ErrNotFound, id)
	}
	return err
}

func (r *Registry) secret(ctx context.Context, tenant string, e Endpoint) (string, error) {
	s, err := r.kr.OpenString(ctx, e.Secret, binding(tenant, e.ID))
	if err != nil {
		return "", fmt.Errorf("opening the secret of webhook %s: %w", e.ID, err)
	}
	return s.Reveal(), nil
}
