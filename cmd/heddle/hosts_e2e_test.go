package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/provider/static"
	"github.com/heddle-io/heddle/internal/sshexec"
)

func writeKey(t *testing.T, dir string) string {
	t.Helper()
	kp, err := sshexec.GenerateKeyPair()
	require.NoError(t, err)
	path := filepath.Join(dir, fmt.Sprintf("key-%d", time.Now().UnixNano()))
	writeFile(t, path, string(kp.PrivateKey))
	return path
}

func (s *server) hosts(key, provider string) []static.Host {
	s.t.Helper()
	var page struct {
		Items []static.Host `json:"items"`
	}
	require.NoError(s.t, json.Unmarshal([]byte(s.must(key, "hosts", "list", provider, "-o", "json")), &page))
	return page.Items
}

// TestHostsThroughTheCLI fills a pool from an inventory and tends it, with
// no host contacted (no --check).
func TestHostsThroughTheCLI(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	admin := s.tenant("acme")
	s.must(admin, "apply", "-f", "../../docs/examples/catalog.yaml")
	s.must(admin, "apply", "-f", "../../docs/examples/static-pool.yaml")
	dir := t.TempDir()
	key := writeKey(t, dir)

	inv := filepath.Join(dir, "inventory.ini")
	writeFile(t, inv, `[web]
web[1:2] ansible_host=192.0.2.10 ansible_user=deploy
[db]
db1 ansible_host=192.0.2.20 ansible_port=2222 ansible_ssh_private_key_file=`+filepath.Base(key)+`
[all:vars]
ansible_user=admin
`)
	out := s.must(admin, "hosts", "import", "pool", inv, "--key-file", key)
	require.Contains(t, out, "3 created, 0 updated, 0 unchanged")
	require.Contains(t, out, "pinned and checked from then on", "it says host keys will be pinned on first contact")
	out = s.must(admin, "hosts", "import", "pool", inv, "--key-file", key)
	require.Contains(t, out, "0 created, 0 updated, 3 unchanged", "a second import changes nothing")

	hosts := s.hosts(admin, "pool")
	require.Len(t, hosts, 3)
	require.Equal(t, "db1", hosts[0].ID)
	require.Equal(t, 2222, hosts[0].Port)
	require.Equal(t, "admin", hosts[0].User)
	require.Equal(t, "deploy", hosts[1].User)
	require.Equal(t, static.StatusFree, hosts[1].Status)

	// A malformed inventory names the line, and nothing is imported; so
	// does one whose hosts cannot all be registered.
	bad := filepath.Join(dir, "bad.ini")
	writeFile(t, bad, "[web]\nnew1 ansible_host=192.0.2.30\nnew2 ansible_port=ssh\n")
	r := s.cli(admin, "hosts", "import", "pool", bad, "--key-file", key)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "bad.ini: line 3: host new2: ansible_port \"ssh\" is not a port")
	require.Contains(t, r.stderr, "nothing was imported")
	writeFile(t, bad, "new1 ansible_host=192.0.2.30\nnew2 ansible_ssh_private_key_file=/no/such/key\n")
	r = s.cli(admin, "hosts", "import", "pool", bad, "--key-file", key, "--user", "ops")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "line 2: host new2")
	writeFile(t, bad, "new1 ansible_host=192.0.2.30\nnew2 ansible_host=no/such\n")
	r = s.cli(admin, "hosts", "import", "pool", bad, "--key-file", key, "--user", "ops")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "hosts[1].address")
	require.Len(t, s.hosts(admin, "pool"), 3, "nothing of a refused import is registered")

	r = s.cli(admin, "hosts", "import", "pool", "-", "--key-file", key, "--user", "ops")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "stdin: line 1: the inventory names no host")

	out = s.must(admin, "hosts", "add", "pool", "extra", "--address", "192.0.2.40", "--user", "ops", "--key-file", key,
		"--host-key", "[192.0.2.40]:22 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl")
	require.Contains(t, out, "1 created")
	require.Contains(t, out, "(registered)")

	s.must(admin, "hosts", "drain", "pool", "web1")
	require.Contains(t, s.must(admin, "hosts", "list", "pool"), "FREE (drained)")
	s.must(admin, "hosts", "readmit", "pool", "web1")
	require.NotContains(t, s.must(admin, "hosts", "list", "pool"), "drained")
	require.Contains(t, s.must(admin, "hosts", "remove", "pool", "extra"), "removed host extra")
	require.Len(t, s.hosts(admin, "pool"), 3)
	require.NotContains(t, s.must(admin, "hosts", "list", "pool", "-o", "json"), "PRIVATE KEY")

	r = s.cli(admin, "hosts", "list", "local")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, `provider "local" is of type "local"`)
}
