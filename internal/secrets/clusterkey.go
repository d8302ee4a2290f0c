package secrets

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/heddle-io/heddle/internal/sshexec"
	"golang.org/x/crypto/ssh"
)

// ClusterKey is a cluster's SSH key pair as stored with the cluster: the
// public half in authorized_keys form (providers install it on every node)
// and the private half sealed. The cluster service makes one when it
// creates a cluster, before the first node is created.
type ClusterKey struct {
	AuthorizedKey string `json:"authorizedKey"`
	PrivateKey    Sealed `json:"privateKey"`
}

// PurposeClusterKey is the binding purpose of a cluster's private key.
const PurposeClusterKey = "cluster-ssh-key"

// ClusterKeyBinding binds a cluster's private key to its tenant and cluster.
func ClusterKeyBinding(tenant, clusterID string) Binding {
	return Binding{"tenant": tenant, "cluster": clusterID, "purpose": PurposeClusterKey}
}

// NewClusterKey generates an ed25519 key pair for a cluster and seals its
// private half.
func NewClusterKey(ctx context.Context, kr *Keyring, tenant, clusterID string) (ClusterKey, error) {
	kp, err := sshexec.GenerateKeyPair()
	if err != nil {
		return ClusterKey{}, err
	}
	defer clear(kp.PrivateKey)
	sealed, err := kr.Seal(ctx, kp.PrivateKey, ClusterKeyBinding(tenant, clusterID))
	if err != nil {
		return ClusterKey{}, fmt.Errorf("secrets: seal the key of cluster %s: %w", clusterID, err)
	}
	return ClusterKey{AuthorizedKey: kp.AuthorizedKey, PrivateKey: sealed}, nil
}

// Open unseals the private key.
func (k ClusterKey) Open(ctx context.Context, kr *Keyring, tenant, clusterID string) (*SSHKey, error) {
	if k.PrivateKey == "" {
		return nil, fmt.Errorf("secrets: cluster %s has no SSH key", clusterID)
	}
	pem, err := kr.Open(ctx, k.PrivateKey, ClusterKeyBinding(tenant, clusterID))
	if err != nil {
		return nil, fmt.Errorf("secrets: open the key of cluster %s: %w", clusterID, err)
	}
	key, err := NewSSHKey(pem)
	if err != nil {
		return nil, fmt.Errorf("secrets: the key of cluster %s: %w", clusterID, err)
	}
	return key, nil
}

// SSHKey is an unsealed SSH private key. It prints as Redacted in every
// form; Signer is what an SSH client authenticates with, and PEM the key file
// for the rare caller that must hand it on (a static host's login key).
type SSHKey struct {
	pem    []byte
	signer ssh.Signer
}

// NewSSHKey parses a private key file (OpenSSH or PEM form).
func NewSSHKey(pem []byte) (*SSHKey, error) {
	signer, err := sshexec.ParsePrivateKey(pem)
	if err != nil {
		return nil, err
	}
	return &SSHKey{pem: append([]byte(nil), pem...), signer: signer}, nil
}

func (k *SSHKey) Signer() ssh.Signer { return k.signer }

// PEM returns a copy of the key file.
func (k *SSHKey) PEM() []byte { return append([]byte(nil), k.pem...) }

// AuthorizedKey is the public half in authorized_keys form.
func (k *SSHKey) AuthorizedKey() string { return sshexec.FormatPublicKey(k.signer.PublicKey()) }

func (*SSHKey) String() string               { return Redacted }
func (*SSHKey) GoString() string             { return Redacted }
func (*SSHKey) LogValue() slog.Value         { return slog.StringValue(Redacted) }
func (*SSHKey) MarshalText() ([]byte, error) { return []byte(Redacted), nil }
func (*SSHKey) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }
