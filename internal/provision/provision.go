package provision

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/automator"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/macros"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/sshexec"
)

// ClusterSpec is what the dispatcher needs to know about a cluster beyond
// the task and its node. The cluster service builds it from the store.
type ClusterSpec struct {
	ClusterID string
	Name      string // the cluster's name, for hostnames
	Owner     string // for %cluster.owner%
	DNSSuffix string // hostnames are <name>-<num>.<suffix>; empty: "local"
	// Config is the cluster's config; macros in it are expanded per task.
	Config json.RawMessage
	// Provider is the cluster's provider entity as stored (sensitive fields
	// sealed) and ProviderFields the user fields given at cluster create
	// (sensitive ones sealed; see provider.Registry.SealUserFields).
	Provider       domain.Provider
	ProviderFields map[string]string
	// HardwareTypes, ImageTypes and Services hold at least those the
	// cluster's nodes use, by name.
	HardwareTypes map[string]domain.HardwareType
	ImageTypes    map[string]domain.ImageType
	Services      map[string]domain.Service
	// Nodes are the cluster's current nodes (deleted ones left out), with
	// every fact recorded so far: macros are expanded against them. Only
	// required when the Clusters call asked for nodes.
	Nodes []domain.Node
	// Key is the cluster's SSH key pair, made with secrets.NewClusterKey
	// when the cluster was created.
	Key secrets.ClusterKey
}

// Clusters gives the dispatcher a cluster's spec. The cluster service
// implements it over the store; withNodes is false for provider actions,
// which do not expand macros, so the node list need not be read. The spec
// must reflect every task completion committed before the call (a stale
// node list makes macros miss the addresses the planner ordered the task
// after).
type Clusters interface {
	Spec(ctx context.Context, tenant, clusterID string, withNodes bool) (*ClusterSpec, error)
}

// NodeLister is what a Clusters may also implement: the cluster's current
// nodes alone (what Spec with nodes would hold). The dispatcher reads the
// spec without nodes first and the nodes only once it knows the attempt
// runs an automator: a bootstrap with nothing to bootstrap or an action a
// service does not define reads no node list, which at 1,000 nodes is most
// of such a task's cost. Without it the dispatcher reads the spec again
// with nodes.
type NodeLister interface {
	LayoutNodes(ctx context.Context, tenant, clusterID string) ([]domain.Node, error)
}

// Config assembles a dispatcher.
type Config struct {
	Clusters   Clusters
	Providers  *provider.Registry
	Automators map[string]automator.Automator // by type name ("shell")
	Keyring    *secrets.Keyring
	Logger     *slog.Logger
	// SSH is the worker's connection pool, which the shell automator
	// should share (shell.Config.Pool): a confirm's login stays open in it
	// for the node's next tasks. Nil: confirms dial and close.
	SSH *sshexec.Pool
}

// Dispatcher implements engine.Executor with the provisioning plugins.
type Dispatcher struct {
	cfg Config
	log *slog.Logger
}

var _ engine.Executor = (*Dispatcher)(nil)

// New checks cfg and returns a dispatcher.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Clusters == nil || cfg.Providers == nil || cfg.Keyring == nil {
		return nil, errors.New("provision: Clusters, Providers and Keyring are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Dispatcher{cfg: cfg, log: cfg.Logger}, nil
}

// Execute runs one attempt.
func (d *Dispatcher) Execute(ctx context.Context, in engine.Attempt) engine.Result {
	a := &attempt{d: d, in: in, task: in.Task}
	res := a.run(ctx)
	if res.Err != nil {
		if res.ExitCode == 0 {
			res.ExitCode = -1
		}
		res.Err = redactError(res.Err, a.secrets)
		d.log.WarnContext(ctx, "task attempt failed", "tenant", in.Tenant, "cluster", in.Task.ClusterID,
			"task", in.Task.ID, "attempt", in.Task.Attempt, "error", res.Err)
	}
	return res
}

// attempt is one Execute call.
type attempt struct {
	d       *Dispatcher
	in      engine.Attempt
	task    domain.Task
	spec    *ClusterSpec
	node    *domain.Node
	key     *secrets.SSHKey
	secrets []string // opened values to redact
}

func fail(err error) engine.Result { return engine.Result{Err: err, ExitCode: -1} }

func (a *attempt) run(ctx context.Context) engine.Result {
	act := a.task.Action
	providerAction := act == domain.ActionCreate || act == domain.ActionConfirm || act == domain.ActionDelete
	if !providerAction && act != domain.ActionBootstrap && act != domain.ActionProbe && !act.IsServiceAction() {
		return fail(fmt.Errorf("provision: task %s has action %q, which no plugin carries out", a.task.ID, act))
	}
	if a.in.Poll != "" && !act.IsServiceAction() && !(strings.HasPrefix(a.in.Poll, providerPoll) && (act == domain.ActionConfirm || act == domain.ActionDelete)) {
		return fail(fmt.Errorf("provision: task %s is polled (%q), but %s never runs detached", a.task.ID, a.in.Poll, act))
	}
	// Provider actions expand no macros, and a poll only checks a run that
	// was started with its context already expanded: neither needs the
	// cluster's node list. Other actions read it when they know they run
	// (layout); only an attempt that does not carry its node reads it now.
	spec, err := a.d.cfg.Clusters.Spec(ctx, a.in.Tenant, a.task.ClusterID, a.in.Node == nil)
	if err != nil {
		return fail(fmt.Errorf("provision: cluster %s: %w", a.task.ClusterID, err))
	}
	a.spec = spec
	a.node = a.in.Node
	if a.node == nil {
		for i := range spec.Nodes {
			if spec.Nodes[i].ID == a.task.NodeID {
				a.node = &spec.Nodes[i]
			}
		}
	}
	if a.node == nil {
		return fail(fmt.Errorf("provision: task %s names node %q, which cluster %s does not have", a.task.ID, a.task.NodeID, a.task.ClusterID))
	}
	if !providerAction && act != domain.ActionProbe {
		if res, done := a.nothingToDo(); done {
			return res
		}
	}
	a.key, err = spec.Key.Open(ctx, a.d.cfg.Keyring, a.in.Tenant, spec.ClusterID)
	if err != nil {
		return fail(err)
	}
	if providerAction {
		return a.provider(ctx)
	}
	if act == domain.ActionProbe {
		return a.probe(ctx)
	}
	return a.automate(ctx)
}

// Token is the idempotency token of a task: the same for every attempt of
// the task (so a retried create finds the node the first attempt made) and
// different for every task, job, cluster and tenant. It is 40 characters of
// [a-z2-7], within EC2's 64-character ClientToken.
func Token(tenant string, t domain.Task) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{"heddle-token-v1", tenant, t.ClusterID, t.JobID, t.ID}, "\x00")))
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:25]))
}

// Hostname is the name heddle gives a node: <cluster name>-<num>.<suffix>,
// every label reduced to what DNS accepts.
func Hostname(spec *ClusterSpec, n *domain.Node) string {
	if n.Hostname != "" {
		return n.Hostname
	}
	name := spec.Name
	if name == "" {
		name = spec.ClusterID
	}
	label := dnsLabel(name, 40)
	if label == "" {
		label = "node"
	}
	var suffix []string
	for _, part := range strings.Split(spec.DNSSuffix, ".") {
		if l := dnsLabel(part, 63); l != "" {
			suffix = append(suffix, l)
		}
	}
	if len(suffix) == 0 {
		suffix = []string{"local"}
	}
	return label + "-" + strconv.Itoa(n.Num) + "." + strings.Join(suffix, ".")
}

// dnsLabel lower-cases s and keeps letters and digits, turning each run of
// anything else into one inner hyphen, within max characters.
func dnsLabel(s string, max int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
		if b.Len() >= max {
			break
		}
	}
	return strings.Trim(b.String(), "-")
}

func (a *attempt) provider(ctx context.Context) engine.Result {
	p := a.spec.Provider
	impl, ok := a.d.cfg.Providers.Provider(p.ProviderType)
	if !ok {
		return fail(fmt.Errorf("provision: provider %s has type %q, which this worker does not have", p.Name, p.ProviderType))
	}
	opened, err := a.d.cfg.Providers.OpenFields(ctx, a.d.cfg.Keyring, a.in.Tenant, a.spec.ClusterID, p, a.spec.ProviderFields)
	if err != nil {
		return fail(err)
	}
	for _, s := range opened.Secrets {
		a.secrets = s.AppendTo(a.secrets)
	}
	req := provider.Request{
		Tenant: a.in.Tenant, ClusterID: a.spec.ClusterID, Provider: p.Name, Node: *a.node,
		Token: Token(a.in.Tenant, a.task), Hostname: Hostname(a.spec, a.node),
		Fields: opened.Fields, Key: a.key, SSH: a.d.cfg.SSH,
	}
	if a.task.Action == domain.ActionCreate {
		if req.Flavor, req.Image, req.SSHUser, err = a.mapTypes(); err != nil {
			return fail(err)
		}
	} else {
		req.Flavor, req.Image, req.SSHUser = a.node.Flavor, a.node.Image, a.node.SSHUser
		if req.SSHUser == "" {
			_, _, req.SSHUser, _ = a.mapTypes()
		}
	}
	req.Poll = strings.TrimPrefix(a.in.Poll, providerPoll)
	var got provider.Node
	var progress provider.Progress
	switch a.task.Action {
	case domain.ActionCreate:
		got, err = impl.Create(ctx, req)
	case domain.ActionConfirm:
		progress, err = impl.Confirm(ctx, req)
		got = progress.Node
	case domain.ActionDelete:
		progress, err = impl.Delete(ctx, req)
	}
	if err != nil {
		return fail(fmt.Errorf("%s of node %s (provider %s): %w", a.task.Action, a.node.ID, p.Name, err))
	}
	if progress.Pending() {
		// The node is booting, not answering SSH yet or shutting down: the
		// engine parks the attempt and any free worker checks again after
		// the provider's delay; nothing waits meanwhile.
		return engine.Result{Stdout: progress.Waiting + "\n", PollAfter: max(progress.Again, minPollAfter), PollState: providerPoll + progress.Poll}
	}
	if a.task.Action == domain.ActionDelete {
		return engine.Result{Stdout: fmt.Sprintf("deleted node %s (%s)\n", a.node.ID, a.node.ProviderID)}
	}
	if got.SSHUser == "" {
		got.SSHUser = req.SSHUser
	}
	facts := &engine.NodeFacts{
		Hostname: got.Hostname, Addresses: got.Addresses, SSHUser: got.SSHUser, HostKey: got.HostKey,
		ProviderID: got.ProviderID, Flavor: got.Flavor, Image: got.Image, Properties: got.PropertiesWithEndpoint(),
	}
	if facts.Hostname == "" {
		facts.Hostname = req.Hostname
	}
	summary := fmt.Sprintf("%s node %s: provider id %s, address %s", pastTense(a.task.Action), a.node.ID, got.ProviderID, got.Addresses[provider.AddressAccess])
	if got.HostKey != "" {
		if k, err := sshexec.ParsePublicKey(got.HostKey); err == nil {
			summary += ", host key " + sshexec.Fingerprint(k)
		}
	}
	return engine.Result{Stdout: summary + "\n", Node: facts}
}

func pastTense(a domain.Action) string {
	if a == domain.ActionCreate {
		return "created"
	}
	return "confirmed"
}

// mapTypes finds the node's flavor, image and login user for the cluster's
// provider in its hardware and image types.
func (a *attempt) mapTypes() (flavor, image, user string, err error) {
	pname := a.spec.Provider.Name
	hw, ok := a.spec.HardwareTypes[a.node.HardwareType]
	if !ok {
		return "", "", "", fmt.Errorf("provision: node %s has hardware type %q, which the cluster's spec lacks", a.node.ID, a.node.HardwareType)
	}
	f, ok := hw.ProviderMap[pname]
	if !ok {
		return "", "", "", fmt.Errorf("provision: hardware type %s has no flavor for provider %s", hw.Name, pname)
	}
	im, ok := a.spec.ImageTypes[a.node.ImageType]
	if !ok {
		return "", "", "", fmt.Errorf("provision: node %s has image type %q, which the cluster's spec lacks", a.node.ID, a.node.ImageType)
	}
	ref, ok := im.ProviderMap[pname]
	if !ok {
		return "", "", "", fmt.Errorf("provision: image type %s has no image for provider %s", im.Name, pname)
	}
	return f.Flavor, ref.Image, ref.SSHUser, nil
}

// automate runs bootstrap or a service action.
func (a *attempt) automate(ctx context.Context) engine.Result {
	// The provider's sensitive fields never reach a node, but a script could
	// still print a value that matches one: redact them too.
	opened, err := a.d.cfg.Providers.OpenFields(ctx, a.d.cfg.Keyring, a.in.Tenant, a.spec.ClusterID, a.spec.Provider, a.spec.ProviderFields)
	if err != nil {
		// Not needed to run the action: carry on, and say so.
		a.d.log.WarnContext(ctx, "the provider's fields do not open; their values are not redacted from this task's output",
			"cluster", a.spec.ClusterID, "provider", a.spec.Provider.Name, "error", err)
	}
	for _, s := range opened.Secrets {
		a.secrets = s.AppendTo(a.secrets)
	}
	ep, err := provider.EndpointOf(a.node)
	if err != nil {
		return fail(err)
	}
	target := sshexec.Target{Node: a.node.ID, Address: ep.Address, User: ep.User, Key: a.key.Signer(), HostKey: ep.HostKey, NoSudo: ep.NoSudo}
	tc := automator.TaskContext{
		Tenant: a.in.Tenant, ClusterID: a.spec.ClusterID, JobID: a.task.JobID, TaskID: a.task.ID,
		Attempt: a.task.Attempt, Action: a.task.Action, Service: a.task.Service,
		Node: automator.NewNodeInfo(a.node),
	}
	// A poll checks a run whose context was expanded and uploaded when it
	// started: the layout, the config and the fields are not needed again.
	polling := a.in.Poll != ""
	base := automator.Request{Target: target, WorkDir: ep.WorkDir, Timeout: a.task.Timeout.Std(), Secrets: a.secrets, Expect: a.in.Expect}
	var layout *macros.Layout
	if !polling {
		if err := a.readLayout(ctx); err != nil {
			return fail(err)
		}
		layout = macros.NewLayout(a.spec.ClusterID, a.spec.Owner, a.spec.Nodes)
		if tc.Config, err = macros.ExpandJSON(a.spec.Config, layout, a.node); err != nil {
			return fail(fmt.Errorf("provision: cluster config for node %s: %w", a.node.ID, err))
		}
		for i := range a.spec.Nodes {
			tc.Nodes = append(tc.Nodes, automator.NewNodeInfo(&a.spec.Nodes[i]))
		}
	}

	if a.task.Action == domain.ActionBootstrap {
		return a.bootstrap(ctx, base, tc)
	}
	svc := a.spec.Services[a.task.Service] // nothingToDo checked both
	def := svc.Actions[a.task.Action]
	auto, ok := a.d.cfg.Automators[def.Type]
	if !ok {
		return fail(fmt.Errorf("provision: service %s's %s action uses automator type %q, which this worker does not have", svc.Name, a.task.Action, def.Type))
	}
	det, detaches := auto.(automator.Detacher)
	// A configure records what it applied (ConfigDigest); a detached one
	// carries the digest in its poll state, since a poll expands nothing.
	poll, digest, _ := strings.Cut(a.in.Poll, digestSep)
	if a.in.Poll != "" && (!detaches || poll != pollState(def.Type)) {
		return fail(fmt.Errorf("provision: task %s is polled (%q), but its automator type %s did not start it detached", a.task.ID, a.in.Poll, def.Type))
	}
	if !polling {
		tc.Fields = make(map[string]string, len(def.Fields))
		for k, v := range def.Fields {
			if tc.Fields[k], err = macros.Expand(v, layout, a.node); err != nil {
				return fail(fmt.Errorf("provision: service %s's %s action, field %s, for node %s: %w", svc.Name, a.task.Action, k, a.node.ID, err))
			}
		}
	}
	if !polling && a.task.Action == domain.ActionConfigure {
		if digest, err = ConfigDigest(a.spec, layout, a.node, a.task.Service); err != nil {
			return fail(err)
		}
	}
	base.Context = tc
	var out automator.Output
	switch {
	case !detaches:
		res := a.result(auto.Run(ctx, base))
		res.Digest = digest
		return res
	case a.in.Poll != "":
		out = det.Check(ctx, base)
	default:
		out = det.Start(ctx, base)
	}
	res := a.result(out)
	res.Digest = digest
	if out.Pending && out.Err == nil {
		// Detached and still running: the engine parks the attempt and
		// polls it through Execute again after PollAfter; no worker waits.
		res.PollAfter, res.PollState = max(out.PollAfter, minPollAfter), pollState(def.Type)
		if digest != "" {
			res.PollState += digestSep + digest
		}
	}
	return res
}

// minPollAfter keeps a pending result pending: a zero PollAfter would read
// as success.
const minPollAfter = 10 * time.Millisecond

// providerPoll prefixes the engine's poll state of a parked confirm or
// delete; the provider's own Progress.Poll follows it.
const providerPoll = "provider:"

// pollState is the engine's poll state of a detached action: what Execute
// expects back in Attempt.Poll. The automator finds the run from the task
// and attempt, so only its type is needed, to check it still matches.
func pollState(automatorType string) string { return "detached:" + automatorType }

// digestSep separates a detached configure's digest from its poll state.
const digestSep = "|"

// nothingToDo answers a bootstrap of a node whose services use no
// automator, and an action its service does not define (Coopr skipped
// those too), before anything is opened or read for a run: no key, no
// fields, no node list.
func (a *attempt) nothingToDo() (engine.Result, bool) {
	if a.task.Action == domain.ActionBootstrap {
		if len(a.bootstrapTypes()) == 0 {
			return engine.Result{Stdout: "no service on this node uses an automator: nothing to bootstrap\n"}, true
		}
		return engine.Result{}, false
	}
	svc, ok := a.spec.Services[a.task.Service]
	if !ok {
		return fail(fmt.Errorf("provision: task %s names service %q, which the cluster's spec lacks", a.task.ID, a.task.Service)), true
	}
	if _, ok := svc.Actions[a.task.Action]; !ok {
		return engine.Result{Stdout: fmt.Sprintf("service %s defines no %s action: nothing to do\n", svc.Name, a.task.Action)}, true
	}
	return engine.Result{}, false
}

// readLayout reads the cluster's nodes, for macros, unless the spec came
// with them; a rollback's layout leaves out the nodes the job adds.
func (a *attempt) readLayout(ctx context.Context) error {
	var err error
	switch nl, ok := a.d.cfg.Clusters.(NodeLister); {
	case a.in.Node == nil: // read with the spec
	case ok:
		a.spec.Nodes, err = nl.LayoutNodes(ctx, a.in.Tenant, a.spec.ClusterID)
	default:
		var withNodes *ClusterSpec
		if withNodes, err = a.d.cfg.Clusters.Spec(ctx, a.in.Tenant, a.spec.ClusterID, true); err == nil {
			a.spec.Nodes = withNodes.Nodes
		}
	}
	if err != nil {
		return fmt.Errorf("provision: cluster %s's nodes: %w", a.spec.ClusterID, err)
	}
	if a.task.Rollback {
		a.spec.Nodes = withoutPlanned(a.spec.Nodes)
	}
	return nil
}

// withoutPlanned leaves out the nodes the job adds (PLANNED until the job
// succeeds): a rollback reconfigures the remaining nodes against the layout
// they had before the job, and a node the job added is being deleted or
// was never made (a create that found no host has no address, and a macro
// naming it could never expand, so the rollback, and every retry of it,
// would fail).
func withoutPlanned(nodes []domain.Node) []domain.Node {
	out := make([]domain.Node, 0, len(nodes))
	for _, n := range nodes {
		if n.Status != domain.NodePlanned {
			out = append(out, n)
		}
	}
	return out
}

// bootstrapTypes are the automator types the node's services use, by name.
func (a *attempt) bootstrapTypes() []string {
	var types []string
	for _, name := range a.node.Services {
		for _, def := range a.spec.Services[name].Actions {
			if !slices.Contains(types, def.Type) {
				types = append(types, def.Type)
			}
		}
	}
	slices.Sort(types)
	return types
}

// bootstrap runs the bootstrap of every automator the node's services use,
// in name order, stopping at the first failure.
func (a *attempt) bootstrap(ctx context.Context, base automator.Request, tc automator.TaskContext) engine.Result {
	var out engine.Result
	for _, typ := range a.bootstrapTypes() {
		auto, ok := a.d.cfg.Automators[typ]
		if !ok {
			return fail(fmt.Errorf("provision: node %s's services use automator type %q, which this worker does not have", a.node.ID, typ))
		}
		base.Context = tc
		res := a.result(auto.Bootstrap(ctx, base))
		out.Stdout += res.Stdout
		out.Stderr += res.Stderr
		out.ExitCode, out.Err = res.ExitCode, res.Err
		if res.Node != nil {
			out.Node = res.Node
			base.Target.HostKey = res.Node.HostKey
		}
		if res.Err != nil {
			break
		}
	}
	return out
}

func (a *attempt) result(out automator.Output) engine.Result {
	res := engine.Result{Err: out.Err, ExitCode: out.ExitCode, Stdout: out.Stdout.String(), Stderr: out.Stderr.String()}
	if out.HostKey != "" && a.node.HostKey == "" {
		// First contact happened here rather than at confirm: pin it now.
		res.Node = &engine.NodeFacts{HostKey: out.HostKey}
	}
	return res
}

// redactedError hides secrets in an error's text and keeps its chain for
// errors.As (an *sshexec.HostKeyError stays one).
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func redactError(err error, secretValues []string) error {
	msg := err.Error()
	changed := false
	for _, s := range secretValues {
		if s != "" && strings.Contains(msg, s) {
			msg = strings.ReplaceAll(msg, s, secrets.Redacted)
			changed = true
		}
	}
	if !changed {
		return err
	}
	return &redactedError{msg: msg, err: err}
}
