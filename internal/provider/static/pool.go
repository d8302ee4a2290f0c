package static

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/sshexec"
	"github.com/heddle-io/heddle/internal/store"
)

// HostSpec is a host as an administrator registers it.
type HostSpec struct {
	ID      string `json:"id"`      // a name, unique in the pool
	Address string `json:"address"` // host name or IP address
	Port    int    `json:"port,omitempty"`
	User    string `json:"user"`
	// PrivateKey logs in as User (OpenSSH or PEM form). It is sealed before
	// it is stored and never returned.
	PrivateKey secrets.Secret `json:"-"`
	// HostKey, in authorized_keys form, pins the host's key from the start;
	// empty: pinned on first contact.
	HostKey string `json:"hostKey,omitempty"`
}

// Host is a registered host as the pool shows it (no key).
type Host struct {
	ID        string    `json:"id"`
	Address   string    `json:"address"`
	Port      int       `json:"port"`
	User      string    `json:"user"`
	HostKey   string    `json:"hostKey,omitempty"`
	Status    string    `json:"status"` // StatusFree or StatusTaken
	Claim     *Claim    `json:"claim,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// Claim says which node holds a taken host.
type Claim struct {
	ClusterID string    `json:"clusterId"`
	NodeID    string    `json:"nodeId"`
	Token     string    `json:"token"`
	TakenAt   time.Time `json:"takenAt"`
}

// Host statuses, kept in the item's status so that taking a host is one
// conditional write on it.
const (
	StatusFree  = "FREE"
	StatusTaken = "TAKEN"
)

// hostRecord is a host item's body.
type hostRecord struct {
	Host
	SealedKey secrets.Sealed `json:"sealedKey"`
}

// claimRecord is the claim item: it maps a node to its host, so a repeated
// create finds its host with one read, and its MustNotExist condition makes
// two hosts for one node impossible.
type claimRecord struct {
	HostID string `json:"hostId"`
	Token  string `json:"token"`
}

// Pool keeps the registered hosts of every static provider, per tenant, in
// the store:
//
//	HOSTS#<provider>   <host id>            the host; status FREE or TAKEN
//	HOSTCLAIM#<provider> <cluster>#<node>   which host a node holds
//
// A host is taken and returned with transactions conditional on its status
// and version, together with its claim item.
type Pool struct {
	store   store.Store
	keyring *secrets.Keyring
	clock   func() time.Time
}

// NewPool keeps hosts in s (unscoped: every call is confined to its
// tenant) with their login keys sealed by kr.
func NewPool(s store.Store, kr *secrets.Keyring) *Pool {
	return &Pool{store: s, keyring: kr, clock: time.Now}
}

func hostsPK(provider string) string  { return "HOSTS#" + provider }
func claimsPK(provider string) string { return "HOSTCLAIM#" + provider }
func claimSK(clusterID, nodeID string) string {
	return clusterID + "#" + nodeID
}

// PurposeHostKey is the binding purpose of a host's sealed login key.
const PurposeHostKey = "static-host-login-key"

func hostKeyBinding(tenant, provider, host string) secrets.Binding {
	return secrets.Binding{"tenant": tenant, "provider": provider, "host": host, "purpose": PurposeHostKey}
}

func (p *Pool) scoped(tenant string) (store.Store, error) {
	if !domain.ValidName(tenant) {
		return nil, fmt.Errorf("static: %q is not a valid tenant name", tenant)
	}
	return store.Scoped(p.store, tenant), nil
}

// ErrHostTaken: the host is held by a node, so it cannot be changed or
// removed now.
var ErrHostTaken = errors.New("static: the host is taken by a node")

// ErrNoHost: the pool has no free host.
var ErrNoHost = errors.New("static: no free host in the pool")

// Validate checks a host spec, with field paths for the API.
func (h HostSpec) Validate() domain.Problems {
	var ps domain.Problems
	add := func(field, code, msg string) {
		ps = append(ps, domain.Problem{Field: field, Code: code, Message: msg})
	}
	if !domain.ValidName(h.ID) {
		add("id", domain.CodeInvalid, fmt.Sprintf("%q is not a valid host id (letters, digits, '.', '_' and '-', up to 63)", h.ID))
	}
	if h.Address == "" || strings.ContainsAny(h.Address, " \t\n/@") {
		add("address", domain.CodeInvalid, fmt.Sprintf("%q is not a host name or IP address", h.Address))
	}
	if h.Port < 0 || h.Port > 65535 {
		add("port", domain.CodeOutOfRange, fmt.Sprintf("%d is not a port (1-65535)", h.Port))
	}
	if h.User == "" || strings.ContainsAny(h.User, " \t\n:@") {
		add("user", domain.CodeInvalid, fmt.Sprintf("%q is not a login name", h.User))
	}
	if h.PrivateKey.IsZero() {
		add("privateKey", domain.CodeRequired, "the key heddle logs in with is required")
	} else if _, err := sshexec.ParsePrivateKey([]byte(h.PrivateKey.Reveal())); err != nil {
		add("privateKey", domain.CodeInvalid, "is not an unencrypted OpenSSH or PEM private key")
	}
	if h.HostKey != "" {
		if _, err := sshexec.ParsePublicKey(h.HostKey); err != nil {
			add("hostKey", domain.CodeInvalid, "is not a public key in authorized_keys form")
		}
	}
	return ps
}

// Register adds a host to a provider's pool, or replaces a free host's
// registration.
func (p *Pool) Register(ctx context.Context, tenant, provider string, h HostSpec) (Host, error) {
	if h.Port == 0 {
		h.Port = 22
	}
	if ps := h.Validate(); len(ps) > 0 {
		return Host{}, ps
	}
	s, err := p.scoped(tenant)
	if err != nil {
		return Host{}, err
	}
	sealed, err := p.keyring.SealString(ctx, h.PrivateKey.Reveal(), hostKeyBinding(tenant, provider, h.ID))
	if err != nil {
		return Host{}, err
	}
	rec := hostRecord{Host: Host{ID: h.ID, Address: h.Address, Port: h.Port, User: h.User, HostKey: h.HostKey, Status: StatusFree, CreatedAt: p.clock().UTC()}, SealedKey: sealed}
	data, err := json.Marshal(rec)
	if err != nil {
		return Host{}, err
	}
	key := store.Key{PK: hostsPK(provider), SK: h.ID}
	// New, or replacing a free one; never a taken one.
	_, err = s.Write(ctx, store.Put(store.Item{Key: key, Status: StatusFree, Data: data}, store.Condition{MustNotExist: true}))
	if errors.Is(err, store.ErrConditionFailed) {
		_, err = s.Write(ctx, store.Put(store.Item{Key: key, Status: StatusFree, Data: data}, store.Condition{StatusIn: []string{StatusFree}}))
		if errors.Is(err, store.ErrConditionFailed) {
			return Host{}, fmt.Errorf("%w: %s", ErrHostTaken, h.ID)
		}
	}
	if err != nil {
		return Host{}, err
	}
	return rec.Host, nil
}

// Remove takes a free host out of the pool.
func (p *Pool) Remove(ctx context.Context, tenant, provider, id string) error {
	s, err := p.scoped(tenant)
	if err != nil {
		return err
	}
	_, err = s.Write(ctx, store.Delete(store.Key{PK: hostsPK(provider), SK: id}, store.Condition{StatusIn: []string{StatusFree}}))
	var ce *store.ConditionError
	if errors.As(err, &ce) {
		if ce.Current == nil {
			return nil // already gone
		}
		return fmt.Errorf("%w: %s", ErrHostTaken, id)
	}
	return err
}

// List returns a provider's hosts.
func (p *Pool) List(ctx context.Context, tenant, provider string) ([]Host, error) {
	s, err := p.scoped(tenant)
	if err != nil {
		return nil, err
	}
	var out []Host
	q := store.Query{}
	for {
		page, err := s.Query(ctx, hostsPK(provider), q)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			rec, err := decodeHost(it)
			if err != nil {
				return nil, err
			}
			out = append(out, rec.Host)
		}
		if page.Next == "" {
			return out, nil
		}
		q.Cursor = page.Next
	}
}

func decodeHost(it store.Item) (hostRecord, error) {
	var rec hostRecord
	if err := json.Unmarshal(it.Data, &rec); err != nil {
		return hostRecord{}, fmt.Errorf("static: host item %s: %w", it.Key, err)
	}
	rec.Status = it.Status
	return rec, nil
}

// taken is a host held by a node, with its login key opened.
type taken struct {
	hostRecord
	key *secrets.SSHKey
}

func (t taken) address() string { return net.JoinHostPort(t.Address, strconv.Itoa(t.Port)) }

// take gives the node a host: the one it already holds (same token), or a
// free one, taken in one transaction with the node's claim.
func (p *Pool) take(ctx context.Context, tenant, provider, clusterID, nodeID, token string) (taken, error) {
	s, err := p.scoped(tenant)
	if err != nil {
		return taken{}, err
	}
	if t, found, err := p.held(ctx, s, tenant, provider, clusterID, nodeID, token); found || err != nil {
		return t, err
	}
	claimKey := store.Key{PK: claimsPK(provider), SK: claimSK(clusterID, nodeID)}
	q := store.Query{}
	total := 0
	for {
		page, err := s.Query(ctx, hostsPK(provider), q)
		if err != nil {
			return taken{}, err
		}
		for _, it := range page.Items {
			total++
			if it.Status != StatusFree {
				continue
			}
			rec, err := decodeHost(it)
			if err != nil {
				return taken{}, err
			}
			rec.Status = StatusTaken
			rec.Claim = &Claim{ClusterID: clusterID, NodeID: nodeID, Token: token, TakenAt: p.clock().UTC()}
			data, err := json.Marshal(rec)
			if err != nil {
				return taken{}, err
			}
			cd, _ := json.Marshal(claimRecord{HostID: rec.ID, Token: token})
			status := StatusTaken
			err = s.Transact(ctx, []store.Op{
				store.Update(it.Key, store.Condition{Version: it.Version, StatusIn: []string{StatusFree}}, store.Changes{Data: data, Status: &status}),
				store.Put(store.Item{Key: claimKey, Data: cd}, store.Condition{MustNotExist: true}),
			})
			var te *store.TransactionError
			if errors.As(err, &te) && len(te.Reasons) == 2 && te.Reasons[1] != nil {
				// A concurrent create of the same node claimed first.
				t, found, err := p.held(ctx, s, tenant, provider, clusterID, nodeID, token)
				if !found && err == nil {
					err = fmt.Errorf("static: node %s's claim vanished while taking a host; try again", nodeID)
				}
				return t, err
			}
			if errors.Is(err, store.ErrConditionFailed) {
				continue // another node took this host: try the next
			}
			if err != nil {
				return taken{}, err
			}
			key, err := p.openKey(ctx, tenant, provider, rec)
			return taken{hostRecord: rec, key: key}, err
		}
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	return taken{}, fmt.Errorf("%w %s (%d hosts registered, none free)", ErrNoHost, provider, total)
}

// held returns the host a node's claim names, checking the token.
func (p *Pool) held(ctx context.Context, s store.Store, tenant, provider, clusterID, nodeID, token string) (taken, bool, error) {
	it, err := s.Get(ctx, store.Key{PK: claimsPK(provider), SK: claimSK(clusterID, nodeID)})
	if errors.Is(err, store.ErrNotFound) {
		return taken{}, false, nil
	}
	if err != nil {
		return taken{}, false, err
	}
	var c claimRecord
	if err := json.Unmarshal(it.Data, &c); err != nil {
		return taken{}, false, err
	}
	if token != "" && c.Token != token {
		return taken{}, true, fmt.Errorf("static: node %s already holds host %s, taken by another create (token %s, not %s)", nodeID, c.HostID, c.Token, token)
	}
	hit, err := s.Get(ctx, store.Key{PK: hostsPK(provider), SK: c.HostID})
	if err != nil {
		return taken{}, true, fmt.Errorf("static: node %s's host %s: %w", nodeID, c.HostID, err)
	}
	rec, err := decodeHost(hit)
	if err != nil {
		return taken{}, true, err
	}
	key, err := p.openKey(ctx, tenant, provider, rec)
	return taken{hostRecord: rec, key: key}, true, err
}

func (p *Pool) openKey(ctx context.Context, tenant, provider string, rec hostRecord) (*secrets.SSHKey, error) {
	pem, err := p.keyring.Open(ctx, rec.SealedKey, hostKeyBinding(tenant, provider, rec.ID))
	if err != nil {
		return nil, fmt.Errorf("static: host %s's login key: %w", rec.ID, err)
	}
	return secrets.NewSSHKey(pem)
}

// release returns the node's host to the pool: the host becomes free and
// the claim is deleted, together.
func (p *Pool) release(ctx context.Context, tenant, provider, clusterID, nodeID string) error {
	s, err := p.scoped(tenant)
	if err != nil {
		return err
	}
	claimKey := store.Key{PK: claimsPK(provider), SK: claimSK(clusterID, nodeID)}
	for range 5 {
		t, found, err := p.held(ctx, s, tenant, provider, clusterID, nodeID, "")
		if err != nil || !found {
			return err
		}
		hostKey := store.Key{PK: hostsPK(provider), SK: t.ID}
		hit, err := s.Get(ctx, hostKey)
		if err != nil {
			return err
		}
		rec, err := decodeHost(hit)
		if err != nil {
			return err
		}
		rec.Status, rec.Claim = StatusFree, nil
		data, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		status := StatusFree
		err = s.Transact(ctx, []store.Op{
			store.Update(hostKey, store.Condition{Version: hit.Version}, store.Changes{Data: data, Status: &status}),
			store.Delete(claimKey, store.Condition{MustExist: true}),
		})
		if !errors.Is(err, store.ErrConditionFailed) {
			return err
		}
		// The host changed meanwhile (re-registered) or a concurrent
		// release won: look again.
	}
	return fmt.Errorf("static: could not return node %s's host to the pool; try again", nodeID)
}
