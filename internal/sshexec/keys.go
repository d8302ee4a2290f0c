package sshexec

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
)

// KeyPair is a generated ed25519 key pair: heddle makes one per cluster, keeps
// the private half encrypted at rest and has the provider install the public
// half on every node.
type KeyPair struct {
	// PrivateKey is the OpenSSH private key file ("-----BEGIN OPENSSH PRIVATE
	// KEY-----"), unencrypted: encryption at rest is the store's job.
	PrivateKey []byte
	// AuthorizedKey is the public key as one authorized_keys line, without the
	// trailing newline.
	AuthorizedKey string
}

// keyComment labels generated keys in authorized_keys files on the nodes, so
// an administrator can tell heddle's key from others.
const keyComment = "heddle"

// GenerateKeyPair makes an ed25519 key pair.
func GenerateKeyPair() (KeyPair, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return KeyPair{}, fmt.Errorf("sshexec: generate key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, keyComment)
	if err != nil {
		return KeyPair{}, fmt.Errorf("sshexec: encode private key: %w", err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return KeyPair{}, fmt.Errorf("sshexec: encode public key: %w", err)
	}
	return KeyPair{PrivateKey: pem.EncodeToMemory(block), AuthorizedKey: FormatPublicKey(sshPub) + " " + keyComment}, nil
}

// ParsePrivateKey reads a private key file (OpenSSH or PEM) into a signer.
func ParsePrivateKey(key []byte) (ssh.Signer, error) {
	s, err := ssh.ParsePrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("sshexec: parse private key: %w", err)
	}
	return s, nil
}

// ParsePublicKey reads one authorized_keys-form key ("ssh-ed25519 AAAA...
// [comment]"), the form in which pinned host keys are stored.
func ParsePublicKey(line string) (ssh.PublicKey, error) {
	k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		return nil, fmt.Errorf("sshexec: parse public key %q: %w", line, err)
	}
	return k, nil
}

// FormatPublicKey renders a key in authorized_keys form without a newline.
func FormatPublicKey(k ssh.PublicKey) string {
	return strings.TrimSuffix(string(ssh.MarshalAuthorizedKey(k)), "\n")
}

// Fingerprint is the key's SHA256 fingerprint as ssh-keygen -l prints it.
func Fingerprint(k ssh.PublicKey) string { return ssh.FingerprintSHA256(k) }
