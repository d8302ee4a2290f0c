package opsmodel

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider/providertest"
	"github.com/heddle-io/heddle/internal/provider/static"
)

// poolHosts is how many OpenSSH hosts the model's static pool has: fewer
// than the tenant's 6 nodes, so that the pool runs out before the quota.
const poolHosts = 3

// staticPool is the model's static pool: real OpenSSH hosts
// (scripts/sshd-hosts.sh), claimed for the whole test, and a directory of
// the test's own for the nodes' homes.
type staticPool struct {
	ssh   providertest.OpenSSH
	hosts []providertest.Host
	homes string
}

// newStaticPool claims the pool's hosts for the test. Without
// HEDDLE_SSH_HOSTS the model leaves its static part out (nil) and says so,
// except under CI=true, where it fails: CI must exercise the static
// provider on real hosts.
func newStaticPool(t *testing.T) *staticPool {
	if os.Getenv("HEDDLE_SSH_HOSTS") == "" && os.Getenv("CI") != "true" {
		t.Logf("HEDDLE_SSH_HOSTS is unset: the model leaves out its static pool (%s)", providertest.HowTo)
		return nil
	}
	ssh := providertest.StartOpenSSH(t)
	return &staticPool{ssh: ssh, hosts: ssh.Claim(t, poolHosts, 5*time.Minute), homes: providertest.NodeHomes(t)}
}

// staticCatalog is the pool's provider and a template on it. Its nodes run
// "placeholder" (no actions): what the model tests here is the pool (hosts
// taken at create, held by the submission, wiped back at delete), not the
// services, which the "ops" template covers. The wipe script removes the
// node's home and stops what runs in it, as docs/examples/static-pool.yaml.
func (p *staticPool) catalog() []byte {
	return []byte(`apiVersion: heddle/v1
providers:
  - name: pool
    description: The model's OpenSSH hosts.
    providerType: static
    fields:
      node_homes: ` + p.homes + `
      wipe_timeout: "60"
      wipe_script: |
        home="$HEDDLE_NODE_HOME"
        case "$home" in ` + p.homes + `/*/*/*) ;; *) echo "wipe: not a node home: $home" >&2; exit 1 ;; esac
        for q in /proc/[0-9]*; do
          cwd=$(readlink "$q/cwd" 2>/dev/null) || continue
          case "$cwd" in "$home" | "$home"/*) kill -9 "${q#/proc/}" 2>/dev/null ;; esac
        done
        rm -rf -- "$home"
hardwareTypes:
  - {name: host, providerMap: {pool: {flavor: host}}}
imageTypes:
  - {name: installed, providerMap: {pool: {image: installed}}}
clusterTemplates:
  - name: static
    description: Nodes on the model's static pool.
    compatibility: {services: [placeholder]}
    defaults: {services: [placeholder], provider: pool, hardwareType: host, imageType: installed}
    constraints: {size: {min: 1, max: 3}}
    administration:
      lease: {initial: 24h, max: 168h, step: 24h}
`)
}

// usePool gives the check's tenant the pool: its catalog and its hosts.
func (w *world) usePool(t *rapid.T, p *staticPool) {
	if p == nil {
		return
	}
	w.pool = p
	ctx, cancel := callCtx()
	defer cancel()
	if _, err := w.admin.ImportCatalog(ctx, p.catalog(), "application/yaml"); err != nil {
		t.Fatalf("applying the static pool's catalog: %v", err)
	}
	reg := api.RegisterHosts{}
	for i, h := range p.hosts {
		host, port, _ := strings.Cut(h.Address, ":")
		var n int
		if _, err := fmt.Sscan(port, &n); err != nil {
			t.Fatalf("host address %s: %v", h.Address, err)
		}
		reg.Hosts = append(reg.Hosts, api.HostSpec{ID: fmt.Sprintf("h%d", i), Address: host, Port: n, User: p.ssh.User,
			PrivateKey: string(p.ssh.KeyPEM), HostKey: h.HostKey})
	}
	if _, err := w.admin.JSON(ctx, http.MethodPost, "/v1/providers/pool/hosts", nil, reg); err != nil {
		t.Fatalf("registering the pool's hosts: %v", err)
	}
}

// poolHostList lists the pool's hosts as the API shows them.
func (w *world) poolHostList(t *rapid.T) []static.Host {
	ctx, cancel := callCtx()
	defer cancel()
	hs, err := client.Collect(client.Each[static.Host](ctx, w.admin, "/v1/providers/pool/hosts", nil, 0))
	if err != nil {
		t.Fatalf("listing the pool's hosts: %v", err)
	}
	return hs
}

// staticStep is one step on the pool: a create on it (size drawn, so that
// it runs out: the submission is refused pool_exhausted, naming the pool,
// and changes nothing), or an operator's drain or readmit of a host. A
// drained host is given to no new node; one a node holds stays with it
// until the node's delete gives it back. Expands, shrinks and deletes of
// the pool's clusters are the model's ordinary steps.
//
// Who gives back the pool's hosts a step takes: a submission holds the
// hosts its new nodes need (a conditional hold in its first transaction,
// engine holds), given back by the transaction that ends its job, on every
// path (success, failure, veto, rollback, abort, the janitor); a node's
// host goes back to the pool when its delete's wipe succeeds (or DIRTY,
// out of the pool, when the wipe fails, until a readmit).
func (w *world) staticStep(t *rapid.T) {
	if w.pool == nil {
		t.Skip("no static pool (HEDDLE_SSH_HOSTS is unset)")
	}
	switch rapid.SampledFrom([]string{"create", "drain", "readmit"}).Draw(t, "poolStep") {
	case "create":
		w.create(t, client.CreateRequest{Name: rapid.SampledFrom(names).Draw(t, "name"), Template: "static",
			Size: rapid.IntRange(1, poolHosts).Draw(t, "size")})
	default:
		action := "drain"
		if rapid.Bool().Draw(t, "readmit") {
			action = "readmit"
		}
		host := fmt.Sprintf("h%d", rapid.IntRange(0, poolHosts-1).Draw(t, "host"))
		ctx, cancel := callCtx()
		_, err := w.admin.Do(ctx, http.MethodPost, "/v1/providers/pool/hosts/"+host+"/"+action, nil, nil, "")
		cancel()
		if err != nil {
			ce := refused(t, action+" "+host, err)
			t.Logf("%s host %s: refused %d %s", action, host, ce.Status, ce.Code)
			return
		}
		w.m.accept(http.MethodPost, "/v1/providers/{provider}/hosts/{host}/"+action, "")
		t.Logf("%s host %s", action, host)
	}
}

// checkPool holds when no job runs: no host is WIPING (a delete's wipe
// ended) or DIRTY (no wipe fails here: its script cannot), every TAKEN
// host is held by a node of a cluster of the pool that is not DELETED, no
// node holds two, and every ACTIVE node of the pool's clusters holds one.
// (A node that never got a host, PLANNED after an abort, or one whose
// create failed, holds none; a node that found no host is marked DELETED
// by its rollback.) True: a job started meanwhile, and the checks are to
// run again once it ends (see quiet).
func (w *world) checkPool(t *rapid.T, cs []client.Cluster) bool {
	if w.pool == nil {
		return false
	}
	live := map[string]string{}   // node -> cluster, of the pool's clusters
	active := map[string]string{} // the ACTIVE ones
	for _, c := range cs {
		if mc := w.m.clusters[c.ID]; mc == nil || mc.template != "static" {
			continue
		}
		for _, n := range w.nodes(t, c.ID) {
			if n.Status != domain.NodeDeleted {
				live[n.ID] = c.ID
			}
			if n.Status == domain.NodeActive {
				active[n.ID] = c.ID
			}
		}
	}
	msg := ""
	held := map[string]string{} // node -> host
	for _, h := range w.poolHostList(t) {
		switch {
		case h.Status == static.StatusFree:
			continue
		case h.Status != static.StatusTaken:
			msg = fmt.Sprintf("host %s is %s with no job running: %s (claim %+v)", h.ID, h.Status, h.Reason, h.Claim)
		case h.Claim == nil:
			msg = fmt.Sprintf("host %s is TAKEN by no node", h.ID)
		case live[h.Claim.NodeID] == "":
			msg = fmt.Sprintf("host %s is held by node %s of cluster %s, which is no live node of the pool's clusters; its jobs:%s", h.ID, h.Claim.NodeID, h.Claim.ClusterID, w.history(t, h.Claim.ClusterID))
		case held[h.Claim.NodeID] != "":
			msg = fmt.Sprintf("node %s holds two hosts: %s and %s", h.Claim.NodeID, held[h.Claim.NodeID], h.ID)
		default:
			held[h.Claim.NodeID] = h.ID
		}
	}
	for n, c := range active {
		if held[n] == "" && msg == "" {
			msg = fmt.Sprintf("node %s of cluster %s is ACTIVE and holds no host of the pool; its jobs:%s", n, c, w.history(t, c))
		}
	}
	if msg == "" {
		return false
	}
	if w.busy(t) {
		return true
	}
	t.Fatalf("%s", msg)
	return false
}
