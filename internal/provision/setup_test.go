package provision

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heddle-io/heddle/internal/automator"
	"github.com/heddle-io/heddle/internal/automator/shell"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/local"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/stretchr/testify/require"
)

const tenant = "acme"

// clusters is the fixture standing in for the cluster service: one
// cluster's spec, with node facts applied as the engine would apply them in
// the completing transaction.
type clusters struct {
	mu    sync.Mutex
	spec  ClusterSpec
	calls int
	// withNodes records, per Spec call, whether it asked for the node list;
	// layoutReads counts LayoutNodes calls.
	withNodes   []bool
	layoutReads int
}

func (c *clusters) Spec(_ context.Context, tn, clusterID string, withNodes bool) (*ClusterSpec, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	c.withNodes = append(c.withNodes, withNodes)
	if tn != tenant || clusterID != c.spec.ClusterID {
		return nil, fmt.Errorf("no cluster %s/%s", tn, clusterID)
	}
	out := c.spec
	out.Nodes = nil
	if withNodes {
		for _, n := range c.spec.Nodes {
			n.Addresses, n.Properties = maps.Clone(n.Addresses), maps.Clone(n.Properties)
			out.Nodes = append(out.Nodes, n)
		}
	}
	return &out, nil
}

// LayoutNodes is the cluster service's NodeLister.
func (c *clusters) LayoutNodes(ctx context.Context, tn, clusterID string) ([]domain.Node, error) {
	c.mu.Lock()
	c.layoutReads++
	c.mu.Unlock()
	spec, err := c.Spec(ctx, tn, clusterID, true)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.withNodes = c.withNodes[:len(c.withNodes)-1] // not a spec read
	c.calls--
	c.mu.Unlock()
	return spec.Nodes, nil
}

func (c *clusters) node(id string) domain.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.spec.Nodes {
		if n.ID == id {
			n.Addresses, n.Properties = maps.Clone(n.Addresses), maps.Clone(n.Properties)
			return n
		}
	}
	panic("no node " + id)
}

// apply records facts the way engine.NodeFacts.apply does.
func (c *clusters) apply(id string, f *engine.NodeFacts) {
	if f == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.spec.Nodes {
		n := &c.spec.Nodes[i]
		if n.ID != id {
			continue
		}
		set := func(dst *string, v string) {
			if v != "" {
				*dst = v
			}
		}
		set(&n.Hostname, f.Hostname)
		set(&n.SSHUser, f.SSHUser)
		set(&n.HostKey, f.HostKey)
		set(&n.ProviderID, f.ProviderID)
		set(&n.Flavor, f.Flavor)
		set(&n.Image, f.Image)
		if n.Addresses == nil {
			n.Addresses = map[string]string{}
		}
		maps.Copy(n.Addresses, f.Addresses)
		if n.Properties == nil {
			n.Properties = map[string]string{}
		}
		maps.Copy(n.Properties, f.Properties)
	}
}

func (c *clusters) update(fn func(s *ClusterSpec)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fn(&c.spec)
}

// world is a dispatcher over the local provider and the shell automator,
// with a three-node zookeeper cluster.
type world struct {
	t        testing.TB
	clusters *clusters
	keyring  *secrets.Keyring
	local    *local.Local
	registry *provider.Registry
	shell    *shell.Shell
	d        *Dispatcher
	dataDir  string
	job      int
	// shellConfig, when set, configures the shell automator (next start).
	shellConfig shell.Config
}

func newKeyring(t testing.TB) *secrets.Keyring {
	t.Helper()
	key, err := secrets.LoadOrCreateKeyFile(filepath.Join(t.TempDir(), "master.key"))
	require.NoError(t, err)
	return secrets.NewKeyring(key)
}

func zookeeper() domain.Service {
	return domain.Service{
		Meta: domain.Meta{Name: "zookeeper"},
		Actions: map[domain.Action]domain.ServiceAction{
			domain.ActionInstall: {Type: shell.Type, Fields: map[string]string{
				"script": `echo "installing on %host.self% as instance %instance.self.service.zookeeper% of %num.service.zookeeper%"
echo "servers=%join(map(host.service.zookeeper,'$:2181'),',')%"
echo "greeting=$HEDDLE_FIELD_GREETING"
grep -o '"quorum":"[^"]*"' "$HEDDLE_CONTEXT"
mkdir -p "$HOME/zk" && echo installed > "$HOME/zk/state"`,
				"greeting": "hello from %ip.self%",
			}},
			domain.ActionConfigure: {Type: shell.Type, Fields: map[string]string{"script": `cat "$HOME/zk/state"; echo "configured $HEDDLE_NODE_ID"`}},
			domain.ActionStart:     {Type: shell.Type, Fields: map[string]string{"script": `echo started`}},
			domain.ActionStop:      {Type: shell.Type, Fields: map[string]string{"script": `echo stopped`}},
			domain.ActionRemove:    {Type: shell.Type, Fields: map[string]string{"script": `rm -rf "$HOME/zk"; echo removed`}},
		},
	}
}

func newWorld(t testing.TB, nodes int) *world {
	t.Helper()
	kr := newKeyring(t)
	key, err := secrets.NewClusterKey(context.Background(), kr, tenant, "c1")
	require.NoError(t, err)
	w := &world{t: t, keyring: kr, dataDir: t.TempDir()}
	w.clusters = &clusters{spec: ClusterSpec{
		ClusterID: "c1", Name: "ZK Ensemble", Owner: "alice", DNSSuffix: "example.test",
		Config:        json.RawMessage(`{"zk":{"quorum":"%num.service.zookeeper%"}}`),
		Provider:      domain.Provider{Meta: domain.Meta{Name: "laptop"}, ProviderType: local.TypeName},
		HardwareTypes: map[string]domain.HardwareType{"small": {Meta: domain.Meta{Name: "small"}, ProviderMap: map[string]domain.HardwareFlavor{"laptop": {Flavor: "host"}}}},
		ImageTypes:    map[string]domain.ImageType{"debian": {Meta: domain.Meta{Name: "debian"}, ProviderMap: map[string]domain.ImageRef{"laptop": {Image: "host-os"}}}},
		Services:      map[string]domain.Service{"zookeeper": zookeeper()},
		Key:           key,
	}}
	for i := range nodes {
		w.clusters.spec.Nodes = append(w.clusters.spec.Nodes, domain.Node{
			ID: fmt.Sprintf("c1-%d", 1000+i), ClusterID: "c1", Num: 1000 + i, Status: domain.NodePlanned,
			NodeLayout: domain.NodeLayout{HardwareType: "small", ImageType: "debian", Services: []string{"zookeeper"}},
		})
	}
	// Registered before start's cleanups, so it runs after them: whatever
	// the test did, and even when it failed half-way, its nodes are deleted
	// (which kills what their scripts detached), and nothing they started
	// may be left running.
	t.Cleanup(func() {
		for _, id := range w.nodeIDs() {
			node := w.clusters.node(id)
			if _, err := w.local.Delete(context.Background(), provider.Request{Tenant: tenant, ClusterID: node.ClusterID, Node: node}); err != nil {
				t.Errorf("delete node %s: %v", id, err)
			}
		}
		left, err := w.local.Processes()
		require.NoError(t, err)
		if len(left) > 0 {
			t.Errorf("processes the nodes started are still running after their delete: %v", left)
		}
	})
	w.start()
	return w
}

// start builds the plugins and the dispatcher (again, after a restart).
func (w *world) start() {
	t := w.t
	l, err := local.New(local.Config{Dir: w.dataDir})
	require.NoError(t, err)
	t.Cleanup(l.Close)
	w.local = l
	w.registry = provider.NewRegistry()
	require.NoError(t, w.registry.Register(local.Type(), l))
	cfg := w.shellConfig
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 50 * time.Millisecond
	}
	if cfg.QuickWait == 0 {
		cfg.QuickWait = -1 // these tests follow detached runs through the dispatcher's polls
	}
	w.shell = shell.New(cfg)
	t.Cleanup(w.shell.Close)
	w.d, err = New(Config{
		Clusters: w.clusters, Providers: w.registry, Keyring: w.keyring,
		Automators: map[string]automator.Automator{shell.Type: w.shell},
	})
	require.NoError(t, err)
}

// restart is heddle stopping and starting: the local provider's servers
// stop, and new plugins restore them from disk.
func (w *world) restart() {
	w.shell.Close()
	w.local.Close()
	w.start()
	require.NoError(w.t, w.local.Restore(context.Background()))
}

func (w *world) attempt(action domain.Action, nodeID, service string, n int) engine.Attempt {
	node := w.clusters.node(nodeID)
	id := string(action) + ":" + nodeID
	if service != "" {
		id = string(action) + ":" + service + ":" + nodeID
	}
	return engine.Attempt{Tenant: tenant, Node: &node, Task: domain.Task{
		ID: id, TenantID: tenant, JobID: fmt.Sprintf("c1-job-%d", w.job), ClusterID: "c1", NodeID: nodeID,
		Service: service, Action: action, Attempt: n, Status: domain.TaskRunning, Timeout: domain.Duration(time.Minute),
	}}
}

// exec runs one task's attempt as a worker would and records its facts.
func (w *world) exec(action domain.Action, nodeID, service string) engine.Result {
	w.t.Helper()
	in := w.attempt(action, nodeID, service, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := w.d.Execute(ctx, in)
	if res.Err == nil {
		w.clusters.apply(nodeID, res.Node)
	}
	return res
}

// must runs a task on every node at once and requires success.
func (w *world) must(action domain.Action, service string) []engine.Result {
	w.t.Helper()
	ids := w.nodeIDs()
	out := make([]engine.Result, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = w.exec(action, id, service)
		}()
	}
	wg.Wait()
	for i, r := range out {
		require.NoError(w.t, r.Err, "%s on %s: stdout %q stderr %q", action, ids[i], r.Stdout, r.Stderr)
	}
	return out
}

func (w *world) nodeIDs() []string {
	w.clusters.mu.Lock()
	defer w.clusters.mu.Unlock()
	var ids []string
	for _, n := range w.clusters.spec.Nodes {
		ids = append(ids, n.ID)
	}
	slices.Sort(ids)
	return ids
}
