package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/heddle-io/heddle/internal/sshexec"
	"github.com/heddle-io/heddle/internal/sshexec/sshtest"
)

// readmeStaticHosts are the machines the README's "Static pools" block
// talks to: db-7 at 10.0.0.7 (`hosts add`) and the hosts of the
// inventory.ini a user would have (`hosts import`), with enough of them
// for its 4-node cluster.
var readmeStaticHosts = []string{"10.0.0.7", "10.0.0.8", "10.0.0.9", "10.0.0.10"}

// runReadmeStaticPools runs the README's "Static pools" block exactly as
// written, after the "To run heddle yourself" steps (the server runs and
// the demo catalog is applied). Inside this test's network namespace the
// block's addresses are this test's own: each gets an SSH server on port
// 22 (in-process, accepting ~/.ssh/id_ed25519 and, as sshd does, whatever
// the login's ~/.ssh/authorized_keys lists, where the static provider
// installs the cluster's key). HOME is a temporary directory holding that
// key, the known_hosts file and nothing else; inventory.ini is what a user
// would have in the working directory. setHome makes later steps see the
// new HOME.
func runReadmeStaticPools(t *testing.T, work string, setHome func(string), run func(string) string, runFailing func(string) string) {
	home := t.TempDir()
	// The SSH servers run commands as this process with its environment,
	// as a login would get HOME=/home/admin.
	t.Setenv("HOME", home)
	setHome(home)
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	kp, err := sshexec.GenerateKeyPair()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), kp.PrivateKey, 0o600))
	pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(kp.AuthorizedKey))
	require.NoError(t, err)
	var knownHosts, inventory strings.Builder
	inventory.WriteString("[web]\n")
	for i, addr := range readmeStaticHosts {
		out, err := exec.Command("ip", "addr", "add", addr+"/32", "dev", "lo").CombinedOutput()
		require.NoError(t, err, "%s", out)
		srv := sshtest.Start(t, addr+":22", nil, pub)
		srv.AuthorizeKeysIn(filepath.Join(home, ".ssh", "authorized_keys"))
		fmt.Fprintf(&knownHosts, "%s %s\n", addr, sshexec.FormatPublicKey(srv.HostKey.PublicKey()))
		if i > 0 { // db-7 is added by hand
			fmt.Fprintf(&inventory, "web-%d ansible_host=%s\n", i, addr)
		}
	}
	inventory.WriteString("[all:vars]\nansible_user=admin\nansible_ssh_private_key_file=~/.ssh/id_ed25519\n")
	require.NoError(t, os.WriteFile(filepath.Join(home, ".ssh", "known_hosts"), []byte(knownHosts.String()), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(work, "inventory.ini"), []byte(inventory.String()), 0o600))

	steps := readmeSteps(t, "### Static pools")
	require.Contains(t, steps, "bin/heddle hosts list pool")
	var clusterID string
	for _, line := range steps {
		t.Logf("$ %s", line)
		if strings.HasPrefix(line, "bin/heddle hosts remove ") {
			// Refused while a node holds the host, as the README says.
			out := runFailing(line)
			require.Contains(t, out, "cluster "+clusterID, "the refusal names the cluster")
			continue
		}
		out := run(line)
		switch {
		case strings.HasPrefix(line, "bin/heddle hosts add"):
			require.Contains(t, out, "1 created")
		case strings.HasPrefix(line, "bin/heddle hosts import"):
			require.Contains(t, out, fmt.Sprintf("%d created", len(readmeStaticHosts)-1))
		case strings.HasPrefix(line, "bin/heddle clusters create"):
			m := regexp.MustCompile(`(?m)^cluster\s+(\S+)`).FindStringSubmatch(out)
			require.NotNil(t, m, "the create names its cluster:\n%s", out)
			clusterID = m[1]
			require.Contains(t, run("bin/heddle clusters show "+clusterID), "ACTIVE")
			require.Contains(t, run("bin/heddle hosts list pool"), "TAKEN")
		case strings.HasPrefix(line, "bin/heddle hosts drain"):
			require.Contains(t, run("bin/heddle hosts list pool"), "drained")
		}
	}
	require.NotEmpty(t, clusterID, "the block creates a cluster")
	// Not in the README: give the hosts back (the wipe removes the nodes'
	// homes and stops their services).
	run("bin/heddle clusters delete " + clusterID + " --wait")
	require.NotContains(t, run("bin/heddle hosts list pool"), "TAKEN")
}
