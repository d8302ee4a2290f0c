package provision

import (
	"context"
	"errors"
	"os"
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
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/sshexec"
	"github.com/heddle-io/heddle/internal/sshexec/sshtest"
	"github.com/stretchr/testify/require"
)

func TestLocalClusterEndToEnd(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3)

	created := w.must(domain.ActionCreate, "")
	for _, r := range created {
		require.NotNil(t, r.Node)
		// Each local node has a loopback address of its own (127.42.x.y),
		// or 127.0.0.1 where the system offers no other.
		require.True(t, strings.HasPrefix(r.Node.Addresses[provider.AddressAccess], "127."), r.Node.Addresses[provider.AddressAccess])
		require.NotEmpty(t, r.Node.HostKey)
		require.NotEmpty(t, r.Node.Properties[provider.PropSSHPort])
		require.Equal(t, "true", r.Node.Properties[provider.PropNoSudo])
		require.Equal(t, "host", r.Node.Flavor)
		require.Equal(t, "host-os", r.Node.Image)
		require.Contains(t, r.Stdout, "created node c1-100")
	}
	require.Equal(t, "zk-ensemble-1000.example.test", w.clusters.node("c1-1000").Hostname)
	w.must(domain.ActionConfirm, "")
	boot := w.must(domain.ActionBootstrap, "")
	require.Contains(t, boot[0].Stdout, "heddle: bootstrapped as ")

	install := w.must(domain.ActionInstall, "zookeeper")
	out := install[1].Stdout
	require.Contains(t, out, "installing on zk-ensemble-1001.example.test as instance 2 of 3\n")
	require.Contains(t, out, "servers=zk-ensemble-1000.example.test:2181,zk-ensemble-1001.example.test:2181,zk-ensemble-1002.example.test:2181\n")
	require.Contains(t, out, "greeting=hello from "+w.clusters.node("c1-1001").Addresses[provider.AddressAccess]+"\n")
	require.Contains(t, out, `"quorum":"3"`)

	configure := w.must(domain.ActionConfigure, "zookeeper")
	require.Equal(t, "installed\nconfigured c1-1002\n", configure[2].Stdout)
	w.must(domain.ActionStart, "zookeeper")
	// A service action the service does not define is skipped.
	check := w.must(domain.ActionCheck, "zookeeper")
	require.Contains(t, check[0].Stdout, "defines no check action")
	w.must(domain.ActionStop, "zookeeper")
	w.must(domain.ActionRemove, "zookeeper")
	deleted := w.must(domain.ActionDelete, "")
	require.Contains(t, deleted[0].Stdout, "deleted node c1-1000")
	require.Equal(t, 0, w.local.Nodes())
	entries, err := os.ReadDir(filepath.Join(w.dataDir, "nodes"))
	require.NoError(t, err)
	require.Empty(t, entries)
}

func TestLocalNodesAnswerAfterARestart(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	w.must(domain.ActionCreate, "")
	w.must(domain.ActionConfirm, "")
	w.must(domain.ActionInstall, "zookeeper")
	pinned := w.clusters.node("c1-1000").HostKey

	w.restart()
	// Same addresses, same pinned host keys, same files.
	res := w.must(domain.ActionConfigure, "zookeeper")
	require.Equal(t, "installed\nconfigured c1-1000\n", res[0].Stdout)
	require.Equal(t, pinned, w.clusters.node("c1-1000").HostKey)
	w.must(domain.ActionDelete, "")
}

func TestRetriedCreateMakesOneNode(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	ctx := context.Background()
	first := w.d.Execute(ctx, w.attempt(domain.ActionCreate, "c1-1000", "", 1))
	require.NoError(t, first.Err)
	// The worker died before recording the result; the engine retries.
	second := w.d.Execute(ctx, w.attempt(domain.ActionCreate, "c1-1000", "", 2))
	require.NoError(t, second.Err)
	require.Equal(t, first.Node, second.Node)
	require.Equal(t, 1, w.local.Nodes())

	// A create from another job for the same node id is another token: the
	// local provider refuses to hand out a node another task made.
	w.job++
	third := w.d.Execute(ctx, w.attempt(domain.ActionCreate, "c1-1000", "", 1))
	require.ErrorContains(t, third.Err, "made by another create")
}

func TestChangedHostKeyFailsTheTask(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	w.must(domain.ActionCreate, "")
	w.must(domain.ActionConfirm, "")
	real := w.clusters.node("c1-1000").HostKey
	realKey, err := sshexec.ParsePublicKey(real)
	require.NoError(t, err)
	impostor := sshtest.NewHostKey(t).PublicKey()
	// The node as recorded pins a key the node no longer presents (it was
	// rebuilt, or something sits in between).
	w.clusters.update(func(s *ClusterSpec) { s.Nodes[0].HostKey = sshexec.FormatPublicKey(impostor) })

	res := w.exec(domain.ActionInstall, "c1-1000", "zookeeper")
	var hk *sshexec.HostKeyError
	require.ErrorAs(t, res.Err, &hk)
	msg := res.Err.Error()
	require.Contains(t, msg, "install of zookeeper on node c1-1000")
	require.Contains(t, msg, sshexec.Fingerprint(impostor))
	require.Contains(t, msg, sshexec.Fingerprint(realKey))
	require.Equal(t, -1, res.ExitCode)
	require.Nil(t, res.Node, "a refused key is not re-pinned")
	require.Empty(t, res.Stdout)

	// Confirm refuses it too.
	conf := w.exec(domain.ActionConfirm, "c1-1000", "")
	require.ErrorAs(t, conf.Err, &hk)
}

func TestFailingScriptReportsItsStatus(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	w.must(domain.ActionCreate, "")
	w.must(domain.ActionConfirm, "")
	w.clusters.update(func(s *ClusterSpec) {
		svc := s.Services["zookeeper"]
		svc.Actions = map[domain.Action]domain.ServiceAction{
			domain.ActionStart: {Type: shell.Type, Fields: map[string]string{"script": "echo 'port 2181 in use' >&2; exit 7"}},
		}
		s.Services["zookeeper"] = svc
	})
	res := w.exec(domain.ActionStart, "c1-1000", "zookeeper")
	require.Error(t, res.Err)
	require.Equal(t, 7, res.ExitCode)
	require.Equal(t, "port 2181 in use\n", res.Stderr)
	require.ErrorContains(t, res.Err, "start of zookeeper on node c1-1000")
}

func TestConfigurationErrors(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	w.must(domain.ActionCreate, "")
	w.must(domain.ActionConfirm, "")
	tests := []struct {
		name   string
		change func(s *ClusterSpec)
		action domain.Action
		want   string
	}{
		{"out-of-range macro", func(s *ClusterSpec) {
			svc := zookeeper()
			svc.Actions[domain.ActionInstall] = domain.ServiceAction{Type: shell.Type, Fields: map[string]string{"script": "echo %host.service.zookeeper[5]%"}}
			s.Services["zookeeper"] = svc
		}, domain.ActionInstall, "field script, for node c1-1000"},
		{"bad macro in the config", func(s *ClusterSpec) { s.Config = []byte(`{"a":"%nope.self%"}`) }, domain.ActionInstall, "cluster config for node c1-1000"},
		{"unknown automator", func(s *ClusterSpec) {
			svc := zookeeper()
			svc.Actions[domain.ActionInstall] = domain.ServiceAction{Type: "chef-solo"}
			s.Services["zookeeper"] = svc
		}, domain.ActionInstall, `automator type "chef-solo"`},
		{"missing service", func(s *ClusterSpec) { delete(s.Services, "zookeeper") }, domain.ActionInstall, `service "zookeeper", which the cluster's spec lacks`},
		{"no flavor for the provider", func(s *ClusterSpec) {
			s.HardwareTypes["small"] = domain.HardwareType{Meta: domain.Meta{Name: "small"}, ProviderMap: map[string]domain.HardwareFlavor{"aws": {Flavor: "t3.micro"}}}
		}, domain.ActionCreate, "hardware type small has no flavor for provider laptop"},
		{"unknown provider type", func(s *ClusterSpec) { s.Provider.ProviderType = "openstack" }, domain.ActionCreate, `type "openstack", which this worker does not have`},
		{"key of another cluster", func(s *ClusterSpec) {
			k, err := secrets.NewClusterKey(context.Background(), w.keyring, tenant, "c2")
			require.NoError(t, err)
			s.Key = k
		}, domain.ActionInstall, "secrets: sealed value does not open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Not parallel: each case changes the shared spec and restores it.
			saved := w.clusters.spec
			saved.Services = map[string]domain.Service{"zookeeper": zookeeper()}
			saved.HardwareTypes = map[string]domain.HardwareType{"small": w.clusters.spec.HardwareTypes["small"]}
			defer w.clusters.update(func(s *ClusterSpec) {
				s.Services, s.HardwareTypes, s.Config, s.Provider, s.Key = saved.Services, saved.HardwareTypes, saved.Config, saved.Provider, saved.Key
			})
			w.clusters.update(tt.change)
			res := w.exec(tt.action, "c1-1000", map[bool]string{true: "zookeeper"}[tt.action.IsServiceAction()])
			require.ErrorContains(t, res.Err, tt.want)
			require.Equal(t, -1, res.ExitCode)
		})
	}
	unknown := w.d.Execute(context.Background(), w.attempt("reboot", "c1-1000", "", 1))
	require.ErrorContains(t, unknown.Err, `action "reboot"`)
	missing := w.attempt(domain.ActionInstall, "c1-1000", "zookeeper", 1)
	missing.Node, missing.Task.NodeID = nil, "c1-9999"
	require.ErrorContains(t, w.d.Execute(context.Background(), missing).Err, `node "c1-9999"`)
}

func TestTokenIsStablePerTaskAndDistinctAcrossTasks(t *testing.T) {
	t.Parallel()
	base := domain.Task{ID: "create:c1-1000", JobID: "c1-job-1", ClusterID: "c1", Attempt: 1}
	tok := Token("acme", base)
	require.Len(t, tok, 40)
	retry := base
	retry.Attempt = 3
	require.Equal(t, tok, Token("acme", retry), "every attempt of a task shares the token")
	seen := map[string]bool{tok: true}
	variants := []func(*domain.Task) string{
		func(t *domain.Task) string { t.ID = "create:c1-1001"; return "acme" },
		func(t *domain.Task) string { t.JobID = "c1-job-2"; return "acme" },
		func(t *domain.Task) string { t.ClusterID = "c2"; return "acme" },
		func(t *domain.Task) string { return "other" },
	}
	for _, v := range variants {
		task := base
		tn := v(&task)
		got := Token(tn, task)
		require.False(t, seen[got])
		seen[got] = true
	}
}

func TestHostname(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, suffix, want string
	}{
		{"ZK Ensemble", "example.test.", "zk-ensemble-1000.example.test"},
		{"", "", "c1-1000.local"},
		{"---", "", "node-1000.local"},
		{"Ünïcode & co", "", "n-code-co-1000.local"},
		{strings.Repeat("long", 30), "", strings.Repeat("long", 10) + "-1000.local"},
	} {
		got := Hostname(&ClusterSpec{ClusterID: "c1", Name: tt.name, DNSSuffix: tt.suffix}, &domain.Node{Num: 1000})
		require.Equal(t, tt.want, got)
	}
	require.Equal(t, "kept", Hostname(&ClusterSpec{}, &domain.Node{Hostname: "kept"}))
}

// recorder is a provider type with a sensitive field whose calls are
// recorded, to check what the dispatcher hands a provider.
type recorder struct {
	mu    sync.Mutex
	calls []provider.Request
	err   error
}

func (r *recorder) Create(_ context.Context, req provider.Request) (provider.Node, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, req)
	if r.err != nil {
		return provider.Node{}, r.err
	}
	return provider.Node{ProviderID: "r-" + req.Token[:8], Addresses: map[string]string{provider.AddressAccess: "192.0.2.1"}}, nil
}

// Confirm and Delete answer "again" once, then done, recording the poll
// state each call was handed.
func (r *recorder) Confirm(_ context.Context, req provider.Request) (provider.Progress, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, req)
	switch req.Poll {
	case "":
		return provider.Later(20*time.Millisecond, "booting", "instance r-1 pending"), nil
	case "booting":
		return provider.Done(provider.Node{ProviderID: req.Node.ProviderID, Addresses: map[string]string{provider.AddressAccess: "192.0.2.1"}, HostKey: "ssh-ed25519 AAAA"}), nil
	}
	return provider.Progress{}, errors.New("unexpected poll state " + req.Poll)
}

func (r *recorder) Delete(_ context.Context, req provider.Request) (provider.Progress, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, req)
	if req.Poll == "" {
		return provider.Later(time.Millisecond, "ending", "instance r-1 shutting down"), nil
	}
	return provider.Done(provider.Node{}), nil
}

// useRecorder registers a recorder as provider "cloudy" with fields
// (sealed as the catalog would) and makes it the cluster's provider.
func (w *world) useRecorder(fields map[string]string) *recorder {
	w.t.Helper()
	rec := &recorder{}
	require.NoError(w.t, w.registry.Register(recorderType, rec))
	p := domain.Provider{Meta: domain.Meta{Name: "cloudy"}, ProviderType: "recorder", Fields: fields}
	require.NoError(w.t, w.registry.SealFields(context.Background(), w.keyring, tenant, &p))
	w.clusters.update(func(s *ClusterSpec) {
		s.Provider = p
		s.HardwareTypes["small"].ProviderMap["cloudy"] = domain.HardwareFlavor{Flavor: "m1"}
		s.ImageTypes["debian"].ProviderMap["cloudy"] = domain.ImageRef{Image: "img-1", SSHUser: "admin"}
	})
	return rec
}

var recorderType = provider.Type{Name: "recorder", Parameters: provider.Parameters{
	Admin: provider.ParameterSet{Fields: map[string]provider.Field{
		"region": {Type: provider.FieldText}, "api_secret": {Type: provider.FieldPassword, Sensitive: true},
	}},
	User: provider.ParameterSet{Fields: map[string]provider.Field{"project": {Type: provider.FieldText}}},
}}

func TestProviderGetsOpenedFieldsAndSecretsAreRedacted(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	rec := w.useRecorder(map[string]string{"region": "north", "api_secret": "sk-live-123456"})
	w.clusters.update(func(s *ClusterSpec) {
		s.ProviderFields = map[string]string{"project": "apollo"}
	})
	res := w.exec(domain.ActionCreate, "c1-1000", "")
	require.NoError(t, res.Err)
	require.Len(t, rec.calls, 1)
	got := rec.calls[0]
	require.Equal(t, map[string]string{"region": "north", "api_secret": "sk-live-123456", "project": "apollo"}, got.Fields)
	require.Equal(t, "m1", got.Flavor)
	require.Equal(t, "img-1", got.Image)
	require.Equal(t, "admin", got.SSHUser)
	require.Equal(t, "admin", res.Node.SSHUser, "the image's login user is recorded when the provider does not say")
	require.Equal(t, Token(tenant, w.attempt(domain.ActionCreate, "c1-1000", "", 1).Task), got.Token)
	require.NotNil(t, got.Key)

	rec.err = errors.New("cloud said: bad credentials sk-live-123456")
	failed := w.exec(domain.ActionCreate, "c1-1000", "")
	require.Error(t, failed.Err)
	require.NotContains(t, failed.Err.Error(), "sk-live-123456")
	require.Contains(t, failed.Err.Error(), secrets.Redacted)
	require.ErrorIs(t, failed.Err, rec.err, "the chain is kept")
}

func TestFirstContactAtAnActionPinsTheKey(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	w.must(domain.ActionCreate, "")
	real := w.clusters.node("c1-1000").HostKey
	// A provider that reported no host key: the first automator contact
	// pins it.
	w.clusters.update(func(s *ClusterSpec) { s.Nodes[0].HostKey = "" })
	res := w.exec(domain.ActionBootstrap, "c1-1000", "")
	require.NoError(t, res.Err)
	require.NotNil(t, res.Node)
	require.Equal(t, real, res.Node.HostKey)
	require.Equal(t, real, w.clusters.node("c1-1000").HostKey)
}

func TestNewRequiresItsParts(t *testing.T) {
	t.Parallel()
	_, err := New(Config{})
	require.Error(t, err)
}

func TestDetachedActionThroughTheDispatcher(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	w.must(domain.ActionCreate, "")
	w.must(domain.ActionConfirm, "")
	w.clusters.update(func(s *ClusterSpec) {
		svc := zookeeper()
		svc.Actions[domain.ActionInitialize] = domain.ServiceAction{Type: shell.Type, Timeout: domain.Duration(time.Hour),
			Fields: map[string]string{"script": "sleep 0.3; echo initialized %num.service.zookeeper%"}}
		s.Services["zookeeper"] = svc
	})
	in := w.attempt(domain.ActionInitialize, "c1-1000", "zookeeper", 1)
	in.Task.Timeout = domain.Duration(time.Hour) // over the threshold: detached
	w.clusters.mu.Lock()
	before, layoutsBefore := len(w.clusters.withNodes), w.clusters.layoutReads
	w.clusters.mu.Unlock()
	res, polls := w.untilDone(in, false)
	require.NoError(t, res.Err)
	require.Equal(t, "initialized 1\n", res.Stdout)
	require.NotZero(t, polls, "a detached action is finished by polls, not by a waiting Execute")
	w.clusters.mu.Lock()
	asked, layouts := w.clusters.withNodes[before:], w.clusters.layoutReads-layoutsBefore
	w.clusters.mu.Unlock()
	require.Len(t, asked, polls+1, "one spec read to start, one per poll")
	for _, withNodes := range asked {
		require.False(t, withNodes, "the spec is read without the node list")
	}
	require.Equal(t, 1, layouts, "the start expands macros against the node list; polls do not read it")
}

// TestNothingToDoReadsNoNodeList: a bootstrap of a node whose services use
// no automator and an action a service does not define answer from the
// spec alone; the node list (every node of a 1,000-node cluster) is not
// read.
func TestNothingToDoReadsNoNodeList(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3)
	w.must(domain.ActionCreate, "")
	w.must(domain.ActionConfirm, "")
	w.clusters.update(func(s *ClusterSpec) {
		s.Services["zookeeper"] = domain.Service{Meta: domain.Meta{Name: "zookeeper"}}
	})
	w.clusters.mu.Lock()
	before, specsBefore := w.clusters.layoutReads, len(w.clusters.withNodes)
	w.clusters.mu.Unlock()
	res := w.exec(domain.ActionBootstrap, "c1-1000", "")
	require.NoError(t, res.Err)
	require.Contains(t, res.Stdout, "nothing to bootstrap")
	res = w.exec(domain.ActionStart, "c1-1000", "zookeeper")
	require.NoError(t, res.Err)
	require.Contains(t, res.Stdout, "defines no start action")
	w.clusters.mu.Lock()
	defer w.clusters.mu.Unlock()
	require.Equal(t, before, w.clusters.layoutReads)
	require.Equal(t, []bool{false, false}, w.clusters.withNodes[specsBefore:], "two spec reads, neither with the nodes")
}

// TestProviderChecksAreParked: a confirm or delete whose node is not there
// yet returns at once with a poll delay and state; the next Execute (any
// worker) hands the provider its own state back, and the final answer
// carries the node's facts.
func TestProviderChecksAreParked(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	rec := w.useRecorder(map[string]string{"region": "north"})

	in := w.attempt(domain.ActionConfirm, "c1-1000", "", 1)
	first := w.d.Execute(context.Background(), in)
	require.NoError(t, first.Err)
	require.Equal(t, 20*time.Millisecond, first.PollAfter)
	require.Equal(t, providerPoll+"booting", first.PollState)
	require.Equal(t, "instance r-1 pending\n", first.Stdout)
	require.Nil(t, first.Node)

	res, polls := w.untilDone(in, false)
	require.NoError(t, res.Err)
	require.Equal(t, 1, polls)
	require.Equal(t, "ssh-ed25519 AAAA", res.Node.HostKey)
	require.Equal(t, "192.0.2.1", res.Node.Addresses[provider.AddressAccess])
	require.Equal(t, "booting", rec.calls[len(rec.calls)-1].Poll, "the provider's own state came back")

	del, polls := w.untilDone(w.attempt(domain.ActionDelete, "c1-1000", "", 1), false)
	require.NoError(t, del.Err)
	require.Equal(t, 1, polls)
	require.Contains(t, del.Stdout, "deleted node c1-1000")

	// Create never parks, so a poll of one is refused.
	create := w.attempt(domain.ActionCreate, "c1-1000", "", 1)
	create.Poll = providerPoll + "booting"
	require.ErrorContains(t, w.d.Execute(context.Background(), create).Err, "never runs detached")
}

// untilDone runs an attempt the way the engine does: Execute, then, while
// the result asks for it, Execute again with its poll state after its
// delay, each call on a context bounded by what is left of the timeout.
// With restart, heddle restarts between the calls (a poll may come to any
// worker). It returns the final result and the number of polls.
func (w *world) untilDone(in engine.Attempt, restart bool) (engine.Result, int) {
	w.t.Helper()
	end := time.Now().Add(in.Task.Timeout.Std())
	for polls := 0; ; polls++ {
		ctx, cancel := context.WithDeadline(context.Background(), end)
		res := w.d.Execute(ctx, in)
		cancel()
		if res.Err != nil || res.PollAfter <= 0 {
			return res, polls
		}
		require.NotEmpty(w.t, res.PollState)
		require.Less(w.t, polls, 1000, "still polling")
		time.Sleep(res.PollAfter)
		if restart {
			w.restart()
		}
		in.Poll = res.PollState
	}
}

// TestDetachedActionCompletesThroughPolls: with a short detach threshold,
// an install over a local-provider node starts detached and returns at
// once; polls (each a separate Execute, with heddle restarted in between)
// finish it; a synchronous action below the threshold still finishes in
// one call; a poll that finds the run's status gone fails the attempt.
func TestDetachedActionCompletesThroughPolls(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	w.shellConfig = shell.Config{PollInterval: 50 * time.Millisecond, DetachAfter: 10 * time.Second, QuickWait: -1}
	w.restart()
	w.must(domain.ActionCreate, "")
	w.must(domain.ActionConfirm, "")
	w.must(domain.ActionBootstrap, "")
	w.clusters.update(func(s *ClusterSpec) {
		svc := zookeeper()
		svc.Actions[domain.ActionInstall] = domain.ServiceAction{Type: shell.Type,
			Fields: map[string]string{"script": "sleep 0.5; echo installed on $HEDDLE_NODE_ID attempt $HEDDLE_ATTEMPT"}}
		svc.Actions[domain.ActionStart] = domain.ServiceAction{Type: shell.Type,
			Fields: map[string]string{"script": "echo started"}}
		s.Services["zookeeper"] = svc
	})

	in := w.attempt(domain.ActionInstall, "c1-1000", "zookeeper", 1) // a minute: over the threshold
	res, polls := w.untilDone(in, true)
	require.NoError(t, res.Err)
	require.Equal(t, "installed on c1-1000 attempt 1\n", res.Stdout)
	require.NotZero(t, polls)

	short := w.attempt(domain.ActionStart, "c1-1000", "zookeeper", 1)
	short.Task.Timeout = domain.Duration(5 * time.Second) // under the threshold: synchronous
	res = w.d.Execute(context.Background(), short)
	require.NoError(t, res.Err)
	require.Zero(t, res.PollAfter)
	require.Equal(t, "started\n", res.Stdout)

	// A run whose status vanished (a reboot into a fresh /tmp) fails at
	// the next poll, clearly.
	w.clusters.update(func(s *ClusterSpec) {
		svc := s.Services["zookeeper"]
		svc.Actions[domain.ActionInstall] = domain.ServiceAction{Type: shell.Type,
			Fields: map[string]string{"script": "sleep 30"}}
		s.Services["zookeeper"] = svc
	})
	in = w.attempt(domain.ActionInstall, "c1-1000", "zookeeper", 2)
	first := w.d.Execute(context.Background(), in)
	require.NoError(t, first.Err)
	require.Positive(t, first.PollAfter)
	ep, err := provider.EndpointOf(in.Node)
	require.NoError(t, err)
	runs, err := filepath.Glob(filepath.Join(ep.WorkDir, "tasks", "*-a2", "run"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.NoError(t, os.Rename(runs[0], runs[0]+".gone"))
	in.Poll = first.PollState
	res = w.d.Execute(context.Background(), in)
	var lost *sshexec.LostError
	require.ErrorAs(t, res.Err, &lost)
	require.ErrorContains(t, res.Err, "install of zookeeper on node c1-1000")
	require.Zero(t, res.PollAfter)

	// A poll for an action that never detaches is refused.
	bad := w.attempt(domain.ActionConfirm, "c1-1000", "", 1)
	bad.Poll = first.PollState
	require.ErrorContains(t, w.d.Execute(context.Background(), bad).Err, "never runs detached")
}

var _ automator.Automator = (*shell.Shell)(nil)

// TestRollbackLayoutLeavesOutTheNodesTheJobAdds is an expand whose third
// node found no host (static pool exhausted): its create failed, so it has
// no hostname or address. The rollback reconfigures the two nodes that
// stay against the layout they had; before, the macro naming the third
// node failed the rollback (and every retry of it) with "layout
// incomplete", and the cluster could only be force-deleted.
func TestRollbackLayoutLeavesOutTheNodesTheJobAdds(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 3)
	kept := []string{"c1-1000", "c1-1001"}
	for _, a := range []domain.Action{domain.ActionCreate, domain.ActionConfirm, domain.ActionBootstrap} {
		for _, id := range kept {
			res := w.exec(a, id, "")
			require.NoError(t, res.Err, "%s on %s: %s", a, id, res.Stderr)
		}
	}
	w.clusters.update(func(s *ClusterSpec) {
		for i := range s.Nodes[:2] {
			s.Nodes[i].Status = domain.NodeActive // the cluster's nodes before the expand
		}
	})

	forward := w.exec(domain.ActionInstall, "c1-1000", "zookeeper")
	require.Error(t, forward.Err, "a forward task needs every node the layout names")
	require.Contains(t, forward.Err.Error(), "c1-1002) has no hostname yet")

	in := w.attempt(domain.ActionInstall, "c1-1000", "zookeeper", 1)
	in.Task.Rollback = true
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := w.d.Execute(ctx, in)
	require.NoError(t, res.Err, "stderr %q", res.Stderr)
	require.Contains(t, res.Stdout, "servers=zk-ensemble-1000.example.test:2181,zk-ensemble-1001.example.test:2181\n",
		"the rollback's layout is the cluster's before the expand")
	require.Contains(t, res.Stdout, "of 2\n")
}
