package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider/providertest"
)

// badHostsCatalog is one static provider and a one-node template: enough
// for a node to take a host and confirm it.
const badHostsCatalog = `apiVersion: heddle/v1
providers:
  - {name: pool, providerType: static}
hardwareTypes:
  - {name: host, providerMap: {pool: {flavor: host}}}
imageTypes:
  - {name: installed, providerMap: {pool: {image: installed}}}
services:
  - name: marker
    actions:
      install: {type: shell, fields: {script: "true"}}
clusterTemplates:
  - name: one
    compatibility: {services: [marker]}
    defaults: {services: [marker], provider: pool, hardwareType: host, imageType: installed}
    constraints: {size: {min: 1, max: 1}}
`

// TestBadHostsFailTheConfirm: hosts registered without --check that cannot
// be used (nothing listens at the address, the host refuses the registered
// key, the host presents another key than the registered one) are taken by
// a node's create, which contacts no host, and fail the node's confirm
// task with the reason, against real OpenSSH servers.
func TestBadHostsFailTheConfirm(t *testing.T) {
	t.Parallel()
	openssh := providertest.StartOpenSSH(t)
	claimed := openssh.Claim(t, 2, 5*time.Minute)
	dir := t.TempDir()
	otherKey := writeKey(t, dir)
	// A port nothing listens on: one this test held and closed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	good := os.Getenv("HEDDLE_SSH_KEY")

	for _, tc := range []struct {
		name, address, port, key, hostKey, want string
	}{
		{"unreachable", "127.0.0.1", strconv.Itoa(dead), good, "", "is unreachable"},
		{"wrong-key", hostOf(t, claimed[0].Address), portOf(t, claimed[0].Address), otherKey, claimed[0].HostKey, "authenticate failed"},
		{"changed-host-key", hostOf(t, claimed[0].Address), portOf(t, claimed[0].Address), good, claimed[1].HostKey, "host key of node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t)
			admin := s.tenant("acme")
			catalog := filepath.Join(t.TempDir(), "catalog.yaml")
			writeFile(t, catalog, badHostsCatalog)
			s.must(admin, "apply", "-f", catalog)
			args := []string{"hosts", "add", "pool", tc.name, "--address", tc.address, "--port", tc.port,
				"--user", openssh.User, "--key-file", tc.key}
			if tc.hostKey != "" {
				args = append(args, "--host-key", tc.hostKey)
			}
			s.must(admin, args...)

			id, job := s.createdID(s.must(admin, "clusters", "create", "bad", "--template", "one", "--size", "1", "-o", "json"))
			r := s.cli(admin, "jobs", "watch", id, job)
			require.Contains(t, r.stdout+r.stderr, "FAILED", "the create fails")

			var page struct {
				Items []domain.Task `json:"items"`
			}
			require.NoError(t, json.Unmarshal([]byte(s.must(admin, "jobs", "tasks", id, job, "--action", "confirm", "-o", "json")), &page))
			require.Len(t, page.Items, 1)
			var confirm domain.Task
			require.NoError(t, json.Unmarshal([]byte(s.must(admin, "jobs", "task", id, job, page.Items[0].ID, "-o", "json")), &confirm))
			require.Equal(t, domain.TaskFailed, confirm.Status)
			require.NotEmpty(t, confirm.Attempts)
			last := confirm.Attempts[len(confirm.Attempts)-1]
			require.Contains(t, last.Error, "host "+tc.name, "the confirm names the host")
			require.Contains(t, last.Error, tc.want, "and says why")

			require.NoError(t, json.Unmarshal([]byte(s.must(admin, "jobs", "tasks", id, job, "--action", "create", "-o", "json")), &page))
			require.Len(t, page.Items, 1)
			require.Equal(t, domain.TaskSucceeded, page.Items[0].Status, "the create only took the host")
		})
	}
}
