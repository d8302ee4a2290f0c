package tenantmove

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/crypto/nacl/box"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/static"
	"github.com/heddle-io/heddle/internal/secrets"
)

// Recipient is the X25519 public key an export seals secrets to.
type Recipient [32]byte

// ParseRecipient reads a recipient as base64url (what String writes).
func ParseRecipient(s string) (Recipient, error) {
	var r Recipient
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != len(r) {
		return r, errors.New("is not an export recipient: 32 bytes of X25519 public key, base64url without padding")
	}
	copy(r[:], b)
	return r, nil
}

func (r Recipient) String() string { return base64.RawURLEncoding.EncodeToString(r[:]) }

// Identity is the private half that opens what was sealed to a Recipient.
// It prints as secrets.Redacted.
type Identity struct {
	public, private [32]byte
}

// NewIdentity makes a fresh key pair.
func NewIdentity() (*Identity, error) {
	pub, priv, err := box.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("tenantmove: make an export key pair: %w", err)
	}
	return &Identity{public: *pub, private: *priv}, nil
}

// ParseIdentity reads what MarshalText wrote.
func ParseIdentity(b []byte) (*Identity, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(b)), identityPrefix)))
	if err != nil || len(raw) != 64 || !bytes.HasPrefix(bytes.TrimSpace(b), []byte(identityPrefix)) {
		return nil, errors.New("tenantmove: not an export key (heddle tenant export writes export.key)")
	}
	id := &Identity{}
	copy(id.public[:], raw[:32])
	copy(id.private[:], raw[32:])
	return id, nil
}

const identityPrefix = "heddle-export-key:"

// MarshalText is the key file's content. Keep it as secret as the data.
func (id *Identity) MarshalText() ([]byte, error) {
	return []byte(identityPrefix + base64.RawURLEncoding.EncodeToString(append(id.public[:], id.private[:]...)) + "\n"), nil
}

func (id *Identity) String() string { return secrets.Redacted }

// Recipient is the public half.
func (id *Identity) Recipient() Recipient { return id.public }

// Open opens one boxed secret.
func (id *Identity) Open(boxed string) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(boxed)
	if err != nil {
		return "", errors.New("tenantmove: a boxed secret is not base64url")
	}
	plain, ok := box.OpenAnonymous(nil, raw, &id.public, &id.private)
	if !ok {
		return "", errors.New("tenantmove: a boxed secret does not open with this export key (another export's key, or altered)")
	}
	return string(plain), nil
}

// Unbox turns an exported page's boxed secrets into values for an import
// request, in place.
func (id *Identity) Unbox(records []Record) error {
	for i := range records {
		for j := range records[i].Secrets {
			s := &records[i].Secrets[j]
			v, err := id.Open(s.Boxed)
			if err != nil {
				return fmt.Errorf("%s / %s at %s: %w", records[i].PK, records[i].SK, s.Path, err)
			}
			s.Value, s.Boxed = v, ""
		}
	}
	return nil
}

func seal(r Recipient, plain []byte) (string, error) {
	out, err := box.SealAnonymous(nil, plain, (*[32]byte)(&r), rand.Reader)
	if err != nil {
		return "", fmt.Errorf("tenantmove: seal a secret to the recipient: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(out), nil
}

// doc is an item body parsed for its strings.
type doc = any

func parseDoc(data []byte) (doc, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// spot is one string of a document that is a sealed value (export) or a
// Placeholder (import).
type spot struct {
	path []string
	set  func(string)
	val  string
}

// spots finds every string in v for which match holds, in a stable order.
func spots(v doc, match func(string) bool) []spot {
	var out []spot
	var walk func(v any, path []string, set func(any))
	walk = func(v any, path []string, set func(any)) {
		switch t := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(t[k], append(append([]string(nil), path...), k), func(n any) { t[k] = n })
			}
		case []any:
			for i := range t {
				walk(t[i], append(append([]string(nil), path...), fmt.Sprint(i)), func(n any) { t[i] = n })
			}
		case string:
			if match(t) {
				out = append(out, spot{path: path, val: t, set: func(s string) { set(s) }})
			}
		}
	}
	walk(v, nil, func(any) {})
	return out
}

// pointer renders a path as a JSON pointer.
func pointer(path []string) string {
	var b strings.Builder
	for _, p := range path {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(p))
	}
	return b.String()
}

// field returns the string at path in v, or "".
func field(v doc, path ...string) string {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[p]
	}
	s, _ := v.(string)
	return s
}

// binding says which binding the sealed value at path of the item pk/sk
// was sealed with; false when this package does not know one there. The
// same rules serve the export (to open it) and the import (to seal it), so
// a forged export cannot make the target seal under any other binding.
func binding(tenant, pk, sk string, v doc, path []string) (secrets.Binding, bool) {
	at := func(want ...string) bool {
		if len(path) != len(want)+1 {
			return false
		}
		for i, w := range want {
			if path[i] != w {
				return false
			}
		}
		return true
	}
	last := ""
	if len(path) > 0 {
		last = path[len(path)-1]
	}
	providers := "CAT#" + string(domain.KindProvider)
	switch {
	case pk == providers || strings.HasPrefix(pk, providers+"#"):
		if at("fields") {
			return provider.FieldBinding(tenant, field(v, "name"), last), true
		}
	case pk == "CLUSTERSPECS":
		switch {
		case at("provider", "fields"):
			return provider.FieldBinding(tenant, field(v, "provider", "name"), last), true
		case at("providerFields"):
			return provider.UserFieldBinding(tenant, sk, last), true
		case len(path) == 2 && path[0] == "key" && path[1] == "privateKey":
			return secrets.ClusterKeyBinding(tenant, sk), true
		}
	case strings.HasPrefix(pk, "HOSTS#"):
		if len(path) == 1 && path[0] == "sealedKey" {
			return static.HostKeyBinding(tenant, strings.TrimPrefix(pk, "HOSTS#"), sk), true
		}
	}
	return nil, false
}
