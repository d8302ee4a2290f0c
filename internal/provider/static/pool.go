package static

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
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

	hostKeySource string // PinChecked when a check saw HostKey
}

// Host is a registered host as the pool shows it (no key).
type Host struct {
	ID      string `json:"id"`
	Address string `json:"address"`
	Port    int    `json:"port"`
	User    string `json:"user"`
	HostKey string `json:"hostKey,omitempty"`
	// HostKeySource says where HostKey came from: PinRegistered,
	// PinChecked or PinFirstContact; empty while no contact was made.
	HostKeySource string `json:"hostKeySource,omitempty"`
	// KeyFingerprint is the SHA256 fingerprint of the login key's public
	// half: what a person compares, and what makes a repeated registration
	// of the same host a no-op without opening the sealed key.
	KeyFingerprint string `json:"keyFingerprint"`
	Status         string `json:"status"` // StatusFree, StatusTaken, StatusWiping or StatusDirty
	// Drained hosts are given to no new node; a taken one stays with its
	// node until the node is deleted.
	Drained bool `json:"drained,omitempty"`
	// Reason says why a dirty host is out of the pool (the wipe's failure).
	Reason    string    `json:"reason,omitempty"`
	Claim     *Claim    `json:"claim,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt,omitempty"`
}

// Claim says which node holds a taken host.
type Claim struct {
	ClusterID string    `json:"clusterId"`
	NodeID    string    `json:"nodeId"`
	Token     string    `json:"token"`
	TakenAt   time.Time `json:"takenAt"`
}

// Host statuses, kept in the item's status so that taking a host is one
// conditional write on it. A node holds its host (the claim item exists)
// in every status but FREE.
const (
	StatusFree   = "FREE"
	StatusTaken  = "TAKEN"
	StatusWiping = "WIPING" // the node's delete runs the wipe script
	StatusDirty  = "DIRTY"  // the wipe failed: out of the pool until a delete succeeds or an operator readmits it
)

// Where a host's pinned key came from.
const (
	PinRegistered   = "registered"    // given at registration
	PinChecked      = "checked"       // seen by the registration's check
	PinFirstContact = "first-contact" // seen by the first node's create
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

// HostKeyBinding is the binding of a host's sealed login key: a tenant
// export opens it and an import seals it again under another master key.
func HostKeyBinding(tenant, provider, host string) secrets.Binding {
	return hostKeyBinding(tenant, provider, host)
}

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
// removed now. The error is a *BusyError naming the cluster.
var ErrHostTaken = errors.New("static: the host is taken by a node")

// ErrNoHost: the pool has no free host.
var ErrNoHost = errors.New("static: no free host in the pool")

// ErrHostNotFound: no host of that id is registered.
var ErrHostNotFound = errors.New("static: no such host")

// ErrChanged: a host changed while it was being registered; trying again
// reads it anew.
var ErrChanged = errors.New("static: a host changed while it was being written; try again")

// BusyError says which cluster's node holds a host that cannot be changed.
type BusyError struct {
	Host   string
	Status string
	Claim  Claim
}

func (e *BusyError) Error() string {
	what := "is taken by"
	switch e.Status {
	case StatusWiping:
		what = "is being wiped for"
	case StatusDirty:
		what = "is dirty (its wipe failed) after"
	}
	return fmt.Sprintf("host %s %s node %s of cluster %s; it returns to the pool when that node is deleted", e.Host, what, e.Claim.NodeID, e.Claim.ClusterID)
}

func (e *BusyError) Is(target error) bool { return target == ErrHostTaken }

func busy(h Host) error {
	b := &BusyError{Host: h.ID, Status: h.Status}
	if h.Claim != nil {
		b.Claim = *h.Claim
	}
	return b
}

// MaxRegister is the most hosts one registration writes: they are written
// in one transaction (all or nothing), which holds at most
// store.MaxTransactItems items.
const MaxRegister = store.MaxTransactItems

// Validate checks a host spec, with field paths for the API.
func (h HostSpec) Validate() domain.Problems { return h.validate("") }

func (h HostSpec) validate(prefix string) domain.Problems {
	var ps domain.Problems
	add := func(field, code, msg string) {
		ps = append(ps, domain.Problem{Field: prefix + field, Code: code, Message: msg})
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
		if _, err := NormalizeHostKey(h.HostKey); err != nil {
			add("hostKey", domain.CodeInvalid, "is not a public key in authorized_keys form nor a known_hosts line")
		}
	}
	return ps
}

// NormalizeHostKey accepts a host key in authorized_keys form ("ssh-ed25519
// AAAA... comment") or a known_hosts line ("[10.0.0.5]:2222 ssh-ed25519
// AAAA...", hashed names too) and returns it as "type base64".
func NormalizeHostKey(s string) (string, error) {
	s = strings.TrimSpace(s)
	if k, err := sshexec.ParsePublicKey(s); err == nil {
		return sshexec.FormatPublicKey(k), nil
	}
	fields := strings.Fields(s)
	if len(fields) >= 3 && !strings.HasPrefix(fields[0], "@") {
		if k, err := sshexec.ParsePublicKey(strings.Join(fields[1:], " ")); err == nil {
			return sshexec.FormatPublicKey(k), nil
		}
	}
	return "", errors.New("static: not a public key nor a known_hosts line")
}

// Registered is one host of a registration and what it did.
type Registered struct {
	Host
	// Result: "created", "updated" or "unchanged" (the same registration
	// again: nothing written, whatever the host's status).
	Result string `json:"result"`
	// Note says what happens next, e.g. that the host key will be pinned
	// on first contact.
	Note string `json:"note,omitempty"`
}

// Registration results.
const (
	ResultCreated   = "created"
	ResultUpdated   = "updated"
	ResultUnchanged = "unchanged"
)

// NoteFirstContact is the note of a host registered without a host key.
const NoteFirstContact = "no host key given: the key the host presents on first contact (its first node's create) will be pinned and checked from then on"

// Register adds a host to a provider's pool, or replaces a free host's
// registration.
func (p *Pool) Register(ctx context.Context, tenant, provider string, h HostSpec) (Host, error) {
	out, err := p.RegisterAll(ctx, tenant, provider, []HostSpec{h})
	if err != nil {
		var ps domain.Problems
		if errors.As(err, &ps) {
			for i := range ps {
				ps[i].Field = strings.TrimPrefix(ps[i].Field, "hosts[0].")
			}
			return Host{}, ps
		}
		return Host{}, err
	}
	return out[0].Host, nil
}

// prepare fills defaults and normalizes a spec's host key.
func (h *HostSpec) prepare() {
	if h.Port == 0 {
		h.Port = 22
	}
	if k, err := NormalizeHostKey(h.HostKey); err == nil {
		h.HostKey = k
	}
}

// RegisterAll registers hosts all or nothing: every spec is validated, and
// every change (new hosts, changed free hosts) is written in one
// transaction. A host registered again exactly as it is changes nothing,
// even while it is taken; changing a host that a node holds is refused
// with a *BusyError.
func (p *Pool) RegisterAll(ctx context.Context, tenant, provider string, specs []HostSpec) ([]Registered, error) {
	if len(specs) == 0 {
		return nil, domain.Problems{{Field: "hosts", Code: domain.CodeRequired, Message: "name at least one host"}}
	}
	if len(specs) > MaxRegister {
		return nil, domain.Problems{{Field: "hosts", Code: domain.CodeOutOfRange,
			Message: fmt.Sprintf("%d hosts in one registration; at most %d are written at once (split the list)", len(specs), MaxRegister)}}
	}
	fingerprints, ps := prepareAll(specs)
	if len(ps) > 0 {
		return nil, ps
	}
	s, err := p.scoped(tenant)
	if err != nil {
		return nil, err
	}
	now := p.clock().UTC()
	out := make([]Registered, len(specs))
	var ops []store.Op
	for i, h := range specs {
		key := store.Key{PK: hostsPK(provider), SK: h.ID}
		rec := hostRecord{Host: Host{ID: h.ID, Address: h.Address, Port: h.Port, User: h.User, HostKey: h.HostKey,
			KeyFingerprint: fingerprints[i], Status: StatusFree, CreatedAt: now, UpdatedAt: now}}
		if h.HostKey != "" {
			rec.HostKeySource = PinRegistered
			if h.hostKeySource != "" {
				rec.HostKeySource = h.hostKeySource
			}
		}
		cond := store.Condition{MustNotExist: true}
		result := ResultCreated
		it, err := s.Get(ctx, key)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			old, err := decodeHost(it)
			if err != nil {
				return nil, err
			}
			if sameHost(old.Host, rec.Host) {
				out[i] = Registered{Host: old.Host, Result: ResultUnchanged, Note: pinNote(old.Host)}
				ops = append(ops, store.Check(key, store.Condition{Version: it.Version}))
				continue
			}
			if old.Status != StatusFree {
				return nil, busy(old.Host)
			}
			// Same address: a key pinned on first contact still holds.
			if rec.HostKey == "" && old.Address == rec.Address && old.Port == rec.Port {
				rec.HostKey, rec.HostKeySource = old.HostKey, old.HostKeySource
			}
			rec.CreatedAt, rec.Drained = old.CreatedAt, old.Drained
			cond, result = store.Condition{Version: it.Version, StatusIn: []string{StatusFree}}, ResultUpdated
		}
		rec.SealedKey, err = p.keyring.SealString(ctx, h.PrivateKey.Reveal(), hostKeyBinding(tenant, provider, h.ID))
		if err != nil {
			return nil, err
		}
		data, err := json.Marshal(rec)
		if err != nil {
			return nil, err
		}
		ops = append(ops, store.Put(store.Item{Key: key, Status: StatusFree, Data: data}, cond))
		out[i] = Registered{Host: rec.Host, Result: result, Note: pinNote(rec.Host)}
	}
	if err := s.Transact(ctx, ops); err != nil {
		if errors.Is(err, store.ErrConditionFailed) {
			return nil, ErrChanged
		}
		return nil, err
	}
	return out, nil
}

// prepareAll fills the specs' defaults and validates them, with field paths
// hosts[i].field, and returns their login keys' fingerprints.
func prepareAll(specs []HostSpec) ([]string, domain.Problems) {
	var ps domain.Problems
	seen := map[string]int{}
	fingerprints := make([]string, len(specs))
	for i := range specs {
		specs[i].prepare()
		prefix := fmt.Sprintf("hosts[%d].", i)
		ps = append(ps, specs[i].validate(prefix)...)
		if j, dup := seen[specs[i].ID]; dup {
			ps = append(ps, domain.Problem{Field: prefix + "id", Code: domain.CodeDuplicate, Message: fmt.Sprintf("%q is also hosts[%d]'s id", specs[i].ID, j)})
		}
		seen[specs[i].ID] = i
		if signer, err := sshexec.ParsePrivateKey([]byte(specs[i].PrivateKey.Reveal())); err == nil {
			fingerprints[i] = sshexec.Fingerprint(signer.PublicKey())
		}
	}
	return fingerprints, ps
}

// sameHost: registering next over old would change nothing. A key pinned
// since (on first contact or by a check) is not a change when none is given.
func sameHost(old, next Host) bool {
	return old.Address == next.Address && old.Port == next.Port && old.User == next.User &&
		old.KeyFingerprint == next.KeyFingerprint && (next.HostKey == "" || next.HostKey == old.HostKey)
}

func pinNote(h Host) string {
	if h.HostKey == "" {
		return NoteFirstContact
	}
	if h.HostKeySource == PinChecked {
		return "host key pinned by the check's first contact: " + h.HostKey
	}
	return ""
}

// Remove takes a free host out of the pool; a host a node holds is
// refused with a *BusyError naming its cluster.
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
		rec, derr := decodeHost(*ce.Current)
		if derr != nil {
			return derr
		}
		return busy(rec.Host)
	}
	return err
}

// List returns every host of a provider.
func (p *Pool) List(ctx context.Context, tenant, provider string) ([]Host, error) {
	var out []Host
	cursor := ""
	for {
		page, next, err := p.ListPage(ctx, tenant, provider, store.MaxPageSize, cursor)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if next == "" {
			return out, nil
		}
		cursor = next
	}
}

// ListPage returns up to limit hosts, in id order, after cursor (an opaque
// string a previous page returned), and the next page's cursor.
func (p *Pool) ListPage(ctx context.Context, tenant, provider string, limit int, cursor string) ([]Host, string, error) {
	s, err := p.scoped(tenant)
	if err != nil {
		return nil, "", err
	}
	page, err := s.Query(ctx, hostsPK(provider), store.Query{Limit: limit, Cursor: cursor})
	if err != nil {
		return nil, "", err
	}
	out := make([]Host, 0, len(page.Items))
	for _, it := range page.Items {
		rec, err := decodeHost(it)
		if err != nil {
			return nil, "", err
		}
		out = append(out, rec.Host)
	}
	return out, page.Next, nil
}

// Get returns one host.
func (p *Pool) Get(ctx context.Context, tenant, provider, id string) (Host, error) {
	s, err := p.scoped(tenant)
	if err != nil {
		return Host{}, err
	}
	it, err := s.Get(ctx, store.Key{PK: hostsPK(provider), SK: id})
	if errors.Is(err, store.ErrNotFound) {
		return Host{}, fmt.Errorf("%w: %s", ErrHostNotFound, id)
	}
	if err != nil {
		return Host{}, err
	}
	rec, err := decodeHost(it)
	return rec.Host, err
}

// change rewrites host id with edit, conditional on the version read, and
// reads again when a concurrent change won. edit returns extra operations
// for the same transaction, or an error to stop.
func (p *Pool) change(ctx context.Context, tenant, provider, id string, edit func(*hostRecord) ([]store.Op, error)) (Host, error) {
	s, err := p.scoped(tenant)
	if err != nil {
		return Host{}, err
	}
	key := store.Key{PK: hostsPK(provider), SK: id}
	for range 5 {
		it, err := s.Get(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			return Host{}, fmt.Errorf("%w: %s", ErrHostNotFound, id)
		}
		if err != nil {
			return Host{}, err
		}
		rec, err := decodeHost(it)
		if err != nil {
			return Host{}, err
		}
		extra, err := edit(&rec)
		if err != nil {
			return Host{}, err
		}
		rec.UpdatedAt = p.clock().UTC()
		data, err := json.Marshal(rec)
		if err != nil {
			return Host{}, err
		}
		status := rec.Status
		ops := append([]store.Op{store.Update(key, store.Condition{Version: it.Version}, store.Changes{Data: data, Status: &status})}, extra...)
		if len(ops) == 1 {
			_, err = s.Write(ctx, ops[0])
		} else {
			err = s.Transact(ctx, ops)
		}
		if !errors.Is(err, store.ErrConditionFailed) {
			return rec.Host, err
		}
	}
	return Host{}, fmt.Errorf("static: host %s: %w", id, ErrChanged)
}

// Drain gives the host to no new node; a node that holds it keeps it until
// it is deleted. Undrain (Readmit) ends it.
func (p *Pool) Drain(ctx context.Context, tenant, provider, id string) (Host, error) {
	return p.change(ctx, tenant, provider, id, func(rec *hostRecord) ([]store.Op, error) {
		rec.Drained = true
		return nil, nil
	})
}

// ErrNotReadmittable: the host is held by a node that still runs.
var ErrNotReadmittable = errors.New("static: only a dirty or drained host can be readmitted")

// readmit returns a dirty host (an operator cleaned it) or a drained one
// to the pool: free, undrained, its claim (if any) deleted with it. A
// drained host a node still holds is only undrained (it returns to the
// pool when its node is deleted). A taken (undrained) or wiping host is
// refused with a *BusyError. before runs with the record
// read, before anything is written (to clean the host up).
func (p *Pool) readmit(ctx context.Context, tenant, provider, id string, before func(hostRecord) error) (Host, error) {
	return p.change(ctx, tenant, provider, id, func(rec *hostRecord) ([]store.Op, error) {
		switch {
		case rec.Status == StatusTaken && rec.Drained:
			// Drained while a node holds it: undrained, the node keeps
			// it (nothing to clean; the claim stays).
			rec.Drained = false
			return nil, nil
		case rec.Status == StatusTaken || rec.Status == StatusWiping:
			return nil, busy(rec.Host)
		case rec.Status == StatusFree && !rec.Drained:
			return nil, fmt.Errorf("%w: host %s is free and not drained already", ErrNotReadmittable, rec.ID)
		}
		if err := before(*rec); err != nil {
			return nil, err
		}
		var extra []store.Op
		if rec.Claim != nil {
			extra = append(extra, store.Delete(store.Key{PK: claimsPK(provider), SK: claimSK(rec.Claim.ClusterID, rec.Claim.NodeID)}, store.Condition{}))
		}
		rec.Status, rec.Claim, rec.Reason, rec.Drained = StatusFree, nil, "", false
		return extra, nil
	})
}

// setStatus moves the host a node holds to status (WIPING or DIRTY, with
// the reason), checking that the node's claim still names it.
func (p *Pool) setStatus(ctx context.Context, tenant, provider, id, nodeID, status, reason string) error {
	_, err := p.change(ctx, tenant, provider, id, func(rec *hostRecord) ([]store.Op, error) {
		if rec.Claim == nil || rec.Claim.NodeID != nodeID {
			return nil, fmt.Errorf("static: host %s is no longer held by node %s", id, nodeID)
		}
		rec.Status, rec.Reason = status, reason
		return nil, nil
	})
	return err
}

// pin records the host key a host presented on first contact, unless one
// was pinned meanwhile.
func (p *Pool) pin(ctx context.Context, tenant, provider, id, hostKey string) error {
	_, err := p.change(ctx, tenant, provider, id, func(rec *hostRecord) ([]store.Op, error) {
		if rec.HostKey == "" {
			rec.HostKey, rec.HostKeySource = hostKey, PinFirstContact
		}
		return nil, nil
	})
	return err
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
	total, lost := 0, false
	for {
		page, err := s.Query(ctx, hostsPK(provider), q)
		if err != nil {
			return taken{}, err
		}
		// The first free host in id order; after a lost race, the page read
		// again (a read costs less than a losing write, and shows the hosts
		// taken meanwhile), from a place of the node's own: in id order, the
		// k-th of n concurrent creates would lose k-1 conditional writes,
		// n²/2 in all, and walking a page read once, a node whose place
		// another took would lose a write on every host the others took.
		start := 0
		if lost {
			start = spread(nodeID, len(page.Items))
		}
		retry := false
		for n := range page.Items {
			it := page.Items[(start+n)%len(page.Items)]
			if it.Status != StatusFree {
				continue
			}
			rec, err := decodeHost(it)
			if err != nil {
				return taken{}, err
			}
			if rec.Drained {
				continue
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
				lost, retry = true, true // another create took it: read the page again
				break
			}
			if err != nil {
				return taken{}, err
			}
			key, err := p.openKey(ctx, tenant, provider, rec)
			return taken{hostRecord: rec, key: key}, err
		}
		if retry {
			// Every lost race is another create's win, so the page runs
			// out of free hosts after as many reads as it has hosts.
			if err := ctx.Err(); err != nil {
				return taken{}, err
			}
			continue
		}
		total += len(page.Items)
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	return taken{}, fmt.Errorf("%w %s (%d hosts registered, none free and undrained)", ErrNoHost, provider, total)
}

// spread maps a node's id to [0, n): by its number when it has one (a node
// id ends in "-<number>", consecutive in a cluster), so that the nodes of
// one cluster created at once start at different hosts of a page; by a hash
// of the id otherwise.
func spread(id string, n int) int {
	if n == 0 {
		return 0
	}
	if i := strings.LastIndexByte(id, '-'); i >= 0 {
		if num, err := strconv.ParseUint(id[i+1:], 10, 32); err == nil {
			return int(num % uint64(n))
		}
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
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
		rec.Status, rec.Claim, rec.Reason = StatusFree, nil, ""
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
