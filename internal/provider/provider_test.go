package provider

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/sshexec"
	"github.com/heddle-io/heddle/internal/sshexec/sshtest"
	"github.com/stretchr/testify/require"
)

// nopProvider is a registration target: these tests exercise the registry,
// not a provider.
type nopProvider struct{}

func (nopProvider) Create(context.Context, Request) (Node, error)      { return Node{}, nil }
func (nopProvider) Confirm(context.Context, Request) (Progress, error) { return Done(Node{}), nil }
func (nopProvider) Delete(context.Context, Request) (Progress, error)  { return Done(Node{}), nil }

var cloudType = Type{
	Name:  "cloud",
	Label: "A cloud",
	Parameters: Parameters{
		Admin: ParameterSet{
			Fields: map[string]Field{
				"region":     {Label: "Region", Type: FieldSelect, Options: []string{"north", "south"}},
				"api_key":    {Label: "API key", Type: FieldText},
				"api_secret": {Label: "API secret", Type: FieldPassword, Sensitive: true},
				"role":       {Label: "Role", Type: FieldText},
				"public_ip":  {Label: "Public IP", Type: FieldCheckbox, Default: "false", Override: true},
				"port":       {Label: "SSH port", Type: FieldNumber, Default: "22", Min: 1, Max: 65535},
			},
			Required: [][]string{{"region", "api_key", "api_secret"}, {"region", "role"}},
		},
		User: ParameterSet{
			Fields: map[string]Field{
				"project": {Label: "Project", Type: FieldText},
				"token":   {Label: "Token", Type: FieldPassword, Sensitive: true},
			},
			Required: [][]string{{"project"}},
		},
	},
	Check: func(f map[string]string) domain.Problems {
		if strings.HasPrefix(f["api_key"], "bad") {
			return domain.Problems{{Field: "api_key", Code: domain.CodeInvalid, Message: "must not start with bad"}}
		}
		return nil
	},
}

func setup(t testing.TB) (*Registry, *secrets.Keyring) {
	t.Helper()
	r := NewRegistry()
	require.NoError(t, r.Register(cloudType, nopProvider{}))
	key, err := secrets.LoadOrCreateKeyFile(filepath.Join(t.TempDir(), "master.key"))
	require.NoError(t, err)
	return r, secrets.NewKeyring(key)
}

func TestRegister(t *testing.T) {
	t.Parallel()
	r, _ := setup(t)
	require.ErrorContains(t, r.Register(cloudType, nopProvider{}), "already registered")
	bad := Type{Name: "bad", Parameters: Parameters{Admin: ParameterSet{Required: [][]string{{"ghost"}}}}}
	require.ErrorContains(t, r.Register(bad, nopProvider{}), `requires "ghost"`)
	require.Error(t, r.Register(Type{Name: "x"}, nil))
	require.Len(t, r.Types(), 1)
	_, ok := r.Provider("cloud")
	require.True(t, ok)

	// The form description a UI draws from.
	js, err := json.Marshal(r.Types()[0])
	require.NoError(t, err)
	require.Contains(t, string(js), `"api_secret":{"label":"API secret","type":"password","sensitive":true}`)
	require.Contains(t, string(js), `"required":[["region","api_key","api_secret"],["region","role"]]`)
	require.NotContains(t, string(js), "Check")
}

func TestValidate(t *testing.T) {
	t.Parallel()
	r, _ := setup(t)
	tests := []struct {
		name   string
		typ    string
		fields map[string]string
		want   []domain.Problem // Field and Code; Message checked for a word
	}{
		{"first set complete", "cloud", map[string]string{"region": "north", "api_key": "k", "api_secret": "s"}, nil},
		{"second set complete", "cloud", map[string]string{"region": "south", "role": "r", "port": "2222", "public_ip": "true"}, nil},
		{"unknown type", "nimbus", nil, []domain.Problem{{Field: "providerType", Code: domain.CodeUnknownRef, Message: "cloud"}}},
		{"closest set reported", "cloud", map[string]string{"region": "north", "api_key": "k"},
			[]domain.Problem{{Field: "fields.api_secret", Code: domain.CodeRequired, Message: "[region, role]"}}},
		{"nothing given", "cloud", nil, []domain.Problem{
			{Field: "fields.region", Code: domain.CodeRequired}, {Field: "fields.role", Code: domain.CodeRequired}}},
		{"unknown field", "cloud", map[string]string{"region": "north", "role": "r", "zone": "z"},
			[]domain.Problem{{Field: "fields.zone", Code: domain.CodeUnknownField, Message: "api_key, api_secret"}}},
		{"bad values", "cloud", map[string]string{"region": "east", "role": "r", "public_ip": "yes", "port": "99999"}, []domain.Problem{
			{Field: "fields.port", Code: domain.CodeInvalid, Message: "outside"},
			{Field: "fields.public_ip", Code: domain.CodeInvalid, Message: "true or false"},
			{Field: "fields.region", Code: domain.CodeInvalid, Message: "north, south"}}},
		{"not a number", "cloud", map[string]string{"region": "north", "role": "r", "port": "ssh"},
			[]domain.Problem{{Field: "fields.port", Code: domain.CodeInvalid, Message: "whole number"}}},
		{"type's own check", "cloud", map[string]string{"region": "north", "role": "r", "api_key": "bad-key"},
			[]domain.Problem{{Field: "fields.api_key", Code: domain.CodeInvalid, Message: "bad"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ps := r.Validate(&domain.Provider{Meta: domain.Meta{Name: "p"}, ProviderType: tt.typ, Fields: tt.fields})
			require.Len(t, ps, len(tt.want), "%v", ps)
			for i, w := range tt.want {
				require.Equal(t, w.Field, ps[i].Field)
				require.Equal(t, w.Code, ps[i].Code)
				require.Contains(t, ps[i].Message, w.Message)
			}
		})
	}
}

func TestValidateUserFields(t *testing.T) {
	t.Parallel()
	r, _ := setup(t)
	require.Empty(t, r.ValidateUserFields("cloud", map[string]string{"project": "p", "public_ip": "true"}))
	ps := r.ValidateUserFields("cloud", map[string]string{"region": "north"})
	require.Len(t, ps, 2)
	require.Equal(t, "providerFields.project", ps[0].Field)
	require.Equal(t, domain.CodeRequired, ps[0].Code)
	require.Equal(t, "providerFields.region", ps[1].Field, "region is an admin field users may not override")
	require.Equal(t, domain.CodeUnknownField, ps[1].Code)
}

func TestMerge(t *testing.T) {
	t.Parallel()
	got := cloudType.Merge(
		map[string]string{"region": "north", "role": "r", "public_ip": "false"},
		map[string]string{"project": "p", "public_ip": "true", "region": "south"},
	)
	require.Equal(t, map[string]string{"region": "north", "role": "r", "public_ip": "true", "port": "22", "project": "p"}, got)
}

func TestSensitiveFieldsSealedOpenedAndRedacted(t *testing.T) {
	t.Parallel()
	r, kr := setup(t)
	ctx := context.Background()
	p := &domain.Provider{Meta: domain.Meta{Name: "prod"}, ProviderType: "cloud",
		Fields: map[string]string{"region": "north", "api_key": "AKID", "api_secret": "s3cr3t-value"}}
	require.NoError(t, r.SealFields(ctx, kr, "acme", p))
	require.True(t, secrets.IsSealed(p.Fields["api_secret"]))
	require.Equal(t, "AKID", p.Fields["api_key"], "only sensitive fields are sealed")
	sealedOnce := p.Fields["api_secret"]
	require.NoError(t, r.SealFields(ctx, kr, "acme", p))
	require.Equal(t, sealedOnce, p.Fields["api_secret"], "sealing twice leaves a sealed value alone")
	require.Empty(t, r.Validate(p), "a sealed value passes validation")

	user, err := r.SealUserFields(ctx, kr, "acme", "c1", "cloud", map[string]string{"project": "x", "token": "user-token-1"})
	require.NoError(t, err)
	require.True(t, secrets.IsSealed(user["token"]))

	opened, err := r.OpenFields(ctx, kr, "acme", "c1", *p, user)
	require.NoError(t, err)
	require.Equal(t, "s3cr3t-value", opened.Fields["api_secret"])
	require.Equal(t, "user-token-1", opened.Fields["token"])
	var revealed []string
	for _, s := range opened.Secrets {
		revealed = s.AppendTo(revealed)
	}
	require.ElementsMatch(t, []string{"s3cr3t-value", "user-token-1"}, revealed)

	_, err = r.OpenFields(ctx, kr, "other-tenant", "c1", *p, nil)
	require.ErrorIs(t, err, secrets.ErrOpen)
	_, err = r.OpenFields(ctx, kr, "acme", "c2", *p, user)
	require.ErrorIs(t, err, secrets.ErrOpen, "user fields are bound to their cluster")

	red := r.Redact(*p)
	require.Equal(t, secrets.Redacted, red.Fields["api_secret"])
	require.Equal(t, "AKID", red.Fields["api_key"])
	require.True(t, secrets.IsSealed(p.Fields["api_secret"]), "Redact copies")

	resubmitted := red
	resubmitted.Fields = map[string]string{"region": "south", "api_key": "AKID", "api_secret": secrets.Redacted}
	KeepRedacted(p, &resubmitted)
	require.Equal(t, sealedOnce, resubmitted.Fields["api_secret"])
}

func TestEndpointOf(t *testing.T) {
	t.Parallel()
	n := &domain.Node{ID: "c1-1000", SSHUser: "admin", HostKey: "ssh-ed25519 AAAA",
		Addresses:  map[string]string{AddressAccess: "10.0.0.5", AddressBind: "10.0.0.5"},
		Properties: Node{SSHPort: 2222, NoSudo: true, WorkDir: "/srv/heddle"}.PropertiesWithEndpoint()}
	e, err := EndpointOf(n)
	require.NoError(t, err)
	require.Equal(t, Endpoint{Address: "10.0.0.5:2222", User: "admin", HostKey: "ssh-ed25519 AAAA", NoSudo: true, WorkDir: "/srv/heddle"}, e)

	n6 := &domain.Node{ID: "n", SSHUser: "u", Addresses: map[string]string{AddressAccess: "fd00::1"}}
	e, err = EndpointOf(n6)
	require.NoError(t, err)
	require.Equal(t, "[fd00::1]:22", e.Address)
	require.Equal(t, DefaultWorkDir, e.WorkDir)

	for _, bad := range []*domain.Node{
		nil,
		{ID: "n", SSHUser: "u"},
		{ID: "n", Addresses: map[string]string{AddressAccess: "h"}},
		{ID: "n", SSHUser: "u", Addresses: map[string]string{AddressAccess: "h"}, Properties: map[string]string{PropSSHPort: "70000"}},
	} {
		_, err := EndpointOf(bad)
		require.Error(t, err)
	}
}

func TestConfirmSSHProbesOnce(t *testing.T) {
	t.Parallel()
	kp, err := sshexec.GenerateKeyPair()
	require.NoError(t, err)
	signer, err := sshexec.ParsePrivateKey(kp.PrivateKey)
	require.NoError(t, err)

	// A port nobody listens on yet: one probe, refused, answers "again".
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	target := sshexec.Target{Node: "n1", Address: addr, User: "u", Key: signer}
	facts := Node{ProviderID: "p-1", SSHUser: "u"}
	p, err := ConfirmSSH(ctx, nil, target, facts, 2*time.Second, "ssh")
	require.NoError(t, err)
	require.True(t, p.Pending())
	require.Equal(t, 2*time.Second, p.Again)
	require.Equal(t, "ssh", p.Poll)
	require.Contains(t, p.Waiting, "node n1 does not answer on SSH")

	// The server is up: done, with the facts and the presented host key.
	hostKey := sshtest.NewHostKey(t)
	sshtest.Start(t, addr, hostKey, signer.PublicKey())
	p, err = ConfirmSSH(ctx, nil, target, facts, 2*time.Second, "ssh")
	require.NoError(t, err)
	require.False(t, p.Pending())
	require.Equal(t, "p-1", p.Node.ProviderID)
	require.Equal(t, sshexec.FormatPublicKey(hostKey.PublicKey()), p.Node.HostKey)

	// Pinned to another key: fails at once, naming both fingerprints.
	other := sshtest.NewHostKey(t)
	target.HostKey = sshexec.FormatPublicKey(other.PublicKey())
	_, err = ConfirmSSH(ctx, nil, target, facts, 2*time.Second, "ssh")
	var hk *sshexec.HostKeyError
	require.ErrorAs(t, err, &hk)
	require.Contains(t, err.Error(), sshexec.Fingerprint(hostKey.PublicKey()))
	require.Contains(t, err.Error(), sshexec.Fingerprint(other.PublicKey()))

	// The attempt's time is spent: an error, not another poll.
	spent, cancelSpent := context.WithCancel(context.Background())
	cancelSpent()
	_, err = ConfirmSSH(spent, nil, sshexec.Target{Node: "n2", Address: "127.0.0.1:1", User: "u", Key: signer}, facts, time.Second, "")
	require.ErrorContains(t, err, "did not answer on SSH")
}

// TestConfirmSSHLeavesItsLoginInThePool: with the worker's pool, the login
// that confirms the node is the connection the node's next task gets, as
// the endpoint will name it (sudo or not) and with the host key pinned.
func TestConfirmSSHLeavesItsLoginInThePool(t *testing.T) {
	t.Parallel()
	kp, err := sshexec.GenerateKeyPair()
	require.NoError(t, err)
	signer, err := sshexec.ParsePrivateKey(kp.PrivateKey)
	require.NoError(t, err)
	hostKey := sshtest.NewHostKey(t)
	srv := sshtest.Start(t, "127.0.0.1:0", hostKey, signer.PublicKey())
	pool := sshexec.NewPool()
	t.Cleanup(pool.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	target := sshexec.Target{Node: "n1", Address: srv.Addr, User: "u", Key: signer}
	p, err := ConfirmSSH(ctx, pool, target, Node{SSHUser: "u"}, time.Second, "")
	require.NoError(t, err)
	require.False(t, p.Pending())
	pinned := sshexec.FormatPublicKey(hostKey.PublicKey())
	require.Equal(t, pinned, p.Node.HostKey)

	// What the automator asks for next: the same login, the key pinned.
	confirmed, err := pool.Client(ctx, target)
	require.NoError(t, err)
	target.HostKey = pinned
	next, err := pool.Client(ctx, target)
	require.NoError(t, err)
	require.Same(t, confirmed, next, "no second handshake")
	res, err := next.Run(ctx, sshexec.Command{Script: "echo ok"})
	require.NoError(t, err)
	require.Equal(t, "ok\n", res.Stdout.Text)
	require.Equal(t, int64(1), srv.Logins.Load(), "one login: the confirm's")
}
