package provision

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddle-io/heddle/internal/automator"
	"github.com/heddle-io/heddle/internal/automator/shell"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/local"
	"github.com/heddle-io/heddle/internal/provider/providertest"
	"github.com/heddle-io/heddle/internal/secrets"
	"golang.org/x/crypto/ssh"
)

// openSSHCluster is a cluster whose nodes are the OpenSSH servers of
// scripts/sshd-hosts.sh, with the servers' client key as the cluster key.
func openSSHCluster(b *testing.B, n int, noSudo bool) (*clusters, *secrets.Keyring, providertest.OpenSSH) {
	b.Helper()
	hosts := providertest.StartOpenSSH(b)
	if len(hosts.Hosts) < n {
		b.Skipf("%d OpenSSH hosts run; the benchmark needs %d (%s)", len(hosts.Hosts), n, providertest.HowTo)
	}
	kr := newKeyring(b)
	sealed, err := kr.Seal(context.Background(), hosts.KeyPEM, secrets.ClusterKeyBinding(tenant, "c1"))
	if err != nil {
		b.Fatal(err)
	}
	bench := domain.Service{Meta: domain.Meta{Name: "bench"}, Actions: map[domain.Action]domain.ServiceAction{
		domain.ActionStart: {Type: shell.Type, Fields: map[string]string{"script": "sleep 1; echo done %num.service.bench%"}},
	}}
	c := &clusters{spec: ClusterSpec{
		ClusterID: "c1", Name: "bench", Owner: "alice",
		Config:   []byte(`{"bench":{"peers":"%join(map(host.service.bench,'$:2181'),',')%","secret":"bench-secret-value"}}`),
		Provider: domain.Provider{Meta: domain.Meta{Name: "laptop"}, ProviderType: local.TypeName},
		Services: map[string]domain.Service{"bench": bench},
		Key:      secrets.ClusterKey{PrivateKey: sealed},
	}}
	for i, h := range hosts.Hosts[:n] {
		host, port, _ := strings.Cut(h.Address, ":")
		// Root's files and the login user's apart: a directory made through
		// sudo is not writable without it.
		dir := "/tmp/heddle-bench-provision-root"
		if noSudo {
			dir = "/tmp/heddle-bench-provision-" + hosts.User
		}
		props := provider.Node{SSHPort: atoi(port), NoSudo: noSudo, WorkDir: dir}.PropertiesWithEndpoint()
		c.spec.Nodes = append(c.spec.Nodes, domain.Node{
			ID: fmt.Sprintf("c1-%d", 1000+i), ClusterID: "c1", Num: 1000 + i, Hostname: fmt.Sprintf("bench-%d", 1000+i),
			NodeLayout: domain.NodeLayout{Services: []string{"bench"}}, SSHUser: hosts.User, HostKey: h.HostKey,
			Addresses: map[string]string{provider.AddressAccess: host, provider.AddressBind: host}, Properties: props,
		})
	}
	return c, kr, hosts
}

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

func benchDispatcher(b *testing.B, c *clusters, kr *secrets.Keyring, sh *shell.Shell) *Dispatcher {
	b.Helper()
	l, err := local.New(local.Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(l.Close)
	reg := provider.NewRegistry()
	if err := reg.Register(local.Type(), l); err != nil {
		b.Fatal(err)
	}
	d, err := New(Config{Clusters: c, Providers: reg, Keyring: kr, Automators: map[string]automator.Automator{shell.Type: sh}})
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// fanOut runs one start task on every node at once through Execute and
// returns the wall time.
func fanOut(b *testing.B, d *Dispatcher, c *clusters, iteration int) time.Duration {
	b.Helper()
	nodes := c.spec.Nodes
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	start := time.Now()
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			node := nodes[i]
			res := d.Execute(context.Background(), engine.Attempt{Tenant: tenant, Node: &node, Task: domain.Task{
				ID: "start:bench:" + node.ID, JobID: fmt.Sprintf("c1-job-%d", iteration), ClusterID: "c1", NodeID: node.ID,
				Service: "bench", Action: domain.ActionStart, Attempt: 1, Timeout: domain.Duration(time.Minute),
			}})
			errs[i] = res.Err
			if res.Err == nil && res.Stdout != fmt.Sprintf("done %d\n", len(nodes)) {
				errs[i] = fmt.Errorf("unexpected output %q", res.Stdout)
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	for i, err := range errs {
		if err != nil {
			b.Fatalf("node %d: %v", i, err)
		}
	}
	return took
}

// minimal is the floor: dial, run, close, nothing else.
func minimal(b *testing.B, hosts providertest.OpenSSH, n int) time.Duration {
	b.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i, h := range hosts.Hosts[:n] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := ssh.Dial("tcp", h.Address, &ssh.ClientConfig{User: hosts.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(hosts.Key)}, HostKeyCallback: ssh.InsecureIgnoreHostKey()})
			if err != nil {
				errs[i] = err
				return
			}
			defer c.Close()
			s, err := c.NewSession()
			if err != nil {
				errs[i] = err
				return
			}
			defer s.Close()
			errs[i] = s.Run("sleep 1")
		}()
	}
	wg.Wait()
	took := time.Since(start)
	for i, err := range errs {
		if err != nil {
			b.Fatalf("host %d: %v", i, err)
		}
	}
	return took
}

func pssh(b *testing.B, hosts providertest.OpenSSH, n int) (time.Duration, bool) {
	bin, err := exec.LookPath("parallel-ssh")
	if err != nil {
		return 0, false
	}
	var list strings.Builder
	for _, h := range hosts.Hosts[:n] {
		list.WriteString(h.Address + "\n")
	}
	file := filepath.Join(b.TempDir(), "hosts")
	if err := os.WriteFile(file, []byte(list.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "-h", file, "-l", hosts.User, "-p", fmt.Sprint(n), "-t", "60",
		"-x", "-i "+os.Getenv("HEDDLE_SSH_KEY")+" -o UserKnownHostsFile="+os.Getenv("HEDDLE_SSH_KNOWN_HOSTS")+" -o StrictHostKeyChecking=yes -o BatchMode=yes",
		"sleep 1")
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("parallel-ssh: %v\n%s", err, out)
	}
	return time.Since(start), true
}

// BenchmarkFanOut50SleepOne runs a start action that sleeps 1 s on 50
// OpenSSH hosts through the executor (spec read, key unsealed, macros
// expanded in the script and the config, host keys pinned, context
// uploaded, output captured and redacted), each iteration against the
// minimal x/crypto/ssh program (dial, run, close) and parallel-ssh on the
// same hosts with the same key. "cold" uses a fresh automator per run (a
// new connection per node, like the minimal program); "warm" reuses the
// automator's connections, as a worker does between tasks.
//
//	scripts/sshd-hosts.sh start 50 && eval "$(scripts/sshd-hosts.sh env)"
//	go test -run '^$' -bench FanOut50 -benchtime 3x ./internal/provision/
func BenchmarkFanOut50SleepOne(b *testing.B) {
	const n = 50
	sudoCluster, kr, hosts := openSSHCluster(b, n, false)
	noSudoCluster, kr2, _ := openSSHCluster(b, n, true)
	warmShell := shell.New(shell.Config{})
	b.Cleanup(warmShell.Close)
	warm := benchDispatcher(b, sudoCluster, kr, warmShell)
	fanOut(b, warm, sudoCluster, -1) // open the warm connections

	var floor, cold, coldNoSudo, warmSudo, parallelSSH time.Duration
	psshRuns := 0
	iteration := 0
	b.ReportAllocs()
	for b.Loop() {
		iteration++
		floor += minimal(b, hosts, n)

		sh := shell.New(shell.Config{})
		cold += fanOut(b, benchDispatcher(b, sudoCluster, kr, sh), sudoCluster, iteration)
		sh.Close()

		sh = shell.New(shell.Config{})
		coldNoSudo += fanOut(b, benchDispatcher(b, noSudoCluster, kr2, sh), noSudoCluster, iteration)
		sh.Close()

		warmSudo += fanOut(b, warm, sudoCluster, iteration)
		if d, ok := pssh(b, hosts, n); ok {
			parallelSSH += d
			psshRuns++
		}
	}
	runs := float64(iteration)
	b.ReportMetric(floor.Seconds()/runs, "minimal-s")
	b.ReportMetric(cold.Seconds()/runs, "heddle-cold-sudo-s")
	b.ReportMetric(coldNoSudo.Seconds()/runs, "heddle-cold-nosudo-s")
	b.ReportMetric(warmSudo.Seconds()/runs, "heddle-warm-sudo-s")
	b.ReportMetric(cold.Seconds()/floor.Seconds(), "ratio-cold-sudo")
	b.ReportMetric(coldNoSudo.Seconds()/floor.Seconds(), "ratio-cold-nosudo")
	b.ReportMetric(warmSudo.Seconds()/floor.Seconds(), "ratio-warm-sudo")
	if psshRuns > 0 {
		b.ReportMetric(parallelSSH.Seconds()/float64(psshRuns), "pssh-s")
	}
}
