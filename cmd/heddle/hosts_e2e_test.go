package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/provider/providertest"
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

	// More than one transaction's worth: written 100 at a time, and again
	// unchanged.
	bigDoc := filepath.Join(dir, "big.yaml")
	writeFile(t, bigDoc, "apiVersion: heddle/v1\nproviders:\n  - {name: big, providerType: static}\n")
	s.must(admin, "apply", "-f", bigDoc)
	bigInv := filepath.Join(dir, "big.ini")
	writeFile(t, bigInv, "[rack]\nnode[000:149] ansible_host=192.0.2.50\n")
	require.Contains(t, s.must(admin, "hosts", "import", "big", bigInv, "--key-file", key, "--user", "ops"), "150 created, 0 updated, 0 unchanged")
	require.Contains(t, s.must(admin, "hosts", "import", "big", bigInv, "--key-file", key, "--user", "ops"), "0 created, 0 updated, 150 unchanged")
	require.Len(t, s.hosts(admin, "big"), 150, "the listing follows the cursor")

	r = s.cli(admin, "hosts", "list", "local")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, `provider "local" is of type "local"`)
}

// TestStaticPoolEndToEnd is `make demo-static` as a test: the demo catalog
// on a static pool of real OpenSSH hosts, imported from an Ansible
// inventory with --check; create, use, expand, delete; every host wiped
// and back in the pool. The hosts are claimed (providertest.Claim) because
// the services listen on the hosts' addresses.
func TestStaticPoolEndToEnd(t *testing.T) {
	t.Parallel()
	openssh := providertest.StartOpenSSH(t)
	claimed := openssh.Claim(t, 6, 5*time.Minute)
	s := newServer(t)
	admin := s.tenant("acme")
	s.must(admin, "apply", "-f", "../../docs/examples/catalog.yaml")
	pool, nodeHomes := staticPoolWithOwnHomes(t)
	s.must(admin, "apply", "-f", pool)
	dir := t.TempDir()

	// Bad hosts are refused with the reason when --check asks.
	otherKey := writeKey(t, dir)
	r := s.cli(admin, "hosts", "add", "pool", "wrong-key", "--address", hostOf(t, claimed[0].Address), "--port", portOf(t, claimed[0].Address),
		"--user", openssh.User, "--key-file", otherKey, "--check")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "refused this key")
	r = s.cli(admin, "hosts", "add", "pool", "changed", "--address", hostOf(t, claimed[0].Address), "--port", portOf(t, claimed[0].Address),
		"--user", openssh.User, "--key-file", os.Getenv("HEDDLE_SSH_KEY"), "--check",
		"--host-key", claimed[1].HostKey) // another server's key
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "presented host key")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	r = s.cli(admin, "hosts", "add", "pool", "gone", "--address", "127.0.0.1", "--port", strconv.Itoa(dead),
		"--user", openssh.User, "--key-file", os.Getenv("HEDDLE_SSH_KEY"), "--check")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "unreachable")
	require.Empty(t, s.hosts(admin, "pool"), "refused hosts are not registered")

	// The claimed hosts as a YAML inventory; their keys from known_hosts.
	invPath := filepath.Join(dir, "hosts.yaml")
	writeFile(t, invPath, openssh.Inventory(t, claimed))
	out := s.must(admin, "hosts", "import", "pool", invPath, "--known-hosts", os.Getenv("HEDDLE_SSH_KNOWN_HOSTS"), "--check")
	require.Contains(t, out, "6 created")
	for _, h := range s.hosts(admin, "pool") {
		require.Equal(t, static.PinRegistered, h.HostKeySource, "host %s's key came from known_hosts", h.ID)
	}

	id, job := s.createdID(s.must(admin, "clusters", "create", "shop", "--template", "web-static", "--size", "4", "-o", "json"))
	require.Contains(t, s.must(admin, "jobs", "watch", id, job), "SUCCEEDED")
	c := s.show(admin, id)
	require.Equal(t, "ACTIVE", c.Status)
	require.Len(t, answerers(t, c, 12), webNodes(c), "every web node answers through the load balancer")

	s.must(admin, "clusters", "expand", id, "--count", "2", "--wait")
	c = s.show(admin, id)
	require.Len(t, c.Nodes, 6)
	require.Len(t, answerers(t, c, 18), webNodes(c), "the load balancer reaches the new web nodes")
	taken := s.hosts(admin, "pool")
	for _, h := range taken {
		require.Equal(t, static.StatusTaken, h.Status)
		require.Equal(t, id, h.Claim.ClusterID)
	}
	r = s.cli(admin, "hosts", "remove", "pool", taken[0].ID)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "cluster "+id)

	s.must(admin, "clusters", "delete", id, "--wait")
	require.Equal(t, "TERMINATED", s.show(admin, id).Status)
	for _, h := range s.hosts(admin, "pool") {
		require.Equal(t, static.StatusFree, h.Status, "host %s is back in the pool", h.ID)
	}
	homes := filepath.Join(nodeHomes, "acme", id)
	require.NoDirExists(t, homes, "the wipe removed every node's home, and the cluster's directory with the last")
	require.Empty(t, processesIn(t, homes), "and stopped every process the services left")
	require.NoError(t, s.kill(syscall.SIGTERM))
}

// staticPoolWithOwnHomes is docs/examples/static-pool.yaml with node homes
// of this test's own (providertest.NodeHomes) instead of the machine-wide
// /var/tmp/heddle-nodes.
func staticPoolWithOwnHomes(t *testing.T) (doc, homes string) {
	t.Helper()
	homes = providertest.NodeHomes(t)
	example, err := os.ReadFile("../../docs/examples/static-pool.yaml")
	require.NoError(t, err)
	require.Contains(t, string(example), "/var/tmp/heddle-nodes")
	doc = filepath.Join(t.TempDir(), "static-pool.yaml")
	writeFile(t, doc, strings.ReplaceAll(string(example), "/var/tmp/heddle-nodes", homes))
	return doc, homes
}

func webNodes(c shownCluster) int {
	n := 0
	for _, node := range c.Nodes {
		for _, svc := range node.Services {
			if svc == "web" {
				n++
			}
		}
	}
	return n
}

func hostOf(t *testing.T, hostport string) string {
	t.Helper()
	h, _, err := net.SplitHostPort(hostport)
	require.NoError(t, err)
	return h
}

func portOf(t *testing.T, hostport string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(hostport)
	require.NoError(t, err)
	return p
}

// processesIn lists the processes working in dir (or below).
func processesIn(t *testing.T, dir string) []string {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/cwd")
	require.NoError(t, err)
	var out []string
	for _, p := range procs {
		cwd, err := os.Readlink(p)
		if err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+"/")) {
			out = append(out, p)
		}
	}
	return out
}
