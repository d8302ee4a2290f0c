package provision

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/macros"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/sshexec"
)

// BootIDProperty is the node property that holds the boot id a drift probe
// first read on the node (Linux's /proc/sys/kernel/random/boot_id, new at
// every boot): a later probe that reads another one found a rebooted or
// replaced machine.
const BootIDProperty = "heddle.bootId"

// bootIDScript prints the boot id, or nothing where the kernel has none.
const bootIDScript = "cat /proc/sys/kernel/random/boot_id 2>/dev/null || true"

// probe is a drift check's look at one node: the provider's view of its
// machine when the provider can tell, then one short command over SSH with
// the pinned host key. What it finds is the attempt's Drift; it never
// fails for what it finds (engine.probeResult).
func (a *attempt) probe(ctx context.Context) engine.Result {
	p := a.spec.Provider
	impl, ok := a.d.cfg.Providers.Provider(p.ProviderType)
	if ok {
		if insp, ok := impl.(provider.Inspector); ok {
			opened, err := a.d.cfg.Providers.OpenFields(ctx, a.d.cfg.Keyring, a.in.Tenant, a.spec.ClusterID, p, a.spec.ProviderFields)
			if err != nil {
				return fail(err)
			}
			for _, s := range opened.Secrets {
				a.secrets = s.AppendTo(a.secrets)
			}
			req := provider.Request{Tenant: a.in.Tenant, ClusterID: a.spec.ClusterID, Provider: p.Name, Node: *a.node,
				Fields: opened.Fields, Key: a.key}
			state, detail, err := insp.Inspect(ctx, req)
			if err != nil {
				return fail(fmt.Errorf("asking provider %s about node %s: %w", p.Name, a.node.ID, err))
			}
			switch state {
			case provider.MachineGone:
				return engine.Result{Drift: domain.DriftMachineGone, Stdout: detail + "\n"}
			case provider.MachineStopped:
				return engine.Result{Drift: domain.DriftMachineStopped, Stdout: detail + "\n"}
			}
		}
		if _, ok := impl.(provider.Modeled); ok {
			return engine.Result{Stdout: "a modeled node: the provider's answer is all there is to know\n"}
		}
	}
	ep, err := provider.EndpointOf(a.node)
	if err != nil {
		return fail(err)
	}
	target := sshexec.Target{Node: a.node.ID, Address: ep.Address, User: ep.User, Key: a.key.Signer(), HostKey: ep.HostKey, NoSudo: true}
	cmd := sshexec.Command{Script: bootIDScript}
	var out sshexec.Result
	if a.d.cfg.SSH != nil {
		out, err = a.d.cfg.SSH.Run(ctx, target, cmd)
	} else {
		var c *sshexec.Client
		if c, err = sshexec.Dial(ctx, target); err == nil {
			out, err = c.Run(ctx, cmd)
			_ = c.Close()
		}
	}
	var hk *sshexec.HostKeyError
	switch {
	case errors.As(err, &hk):
		// Pinned keys are never re-trusted: a reinstalled host, or another
		// machine at the address, is reported for a person to look at.
		return engine.Result{Drift: domain.DriftHostKeyChanged, Err: err}
	case err != nil:
		return engine.Result{Drift: domain.DriftUnreachable, Err: err}
	}
	boot := strings.TrimSpace(out.Stdout.String())
	recorded := a.node.Properties[BootIDProperty]
	switch {
	case boot == "":
		return engine.Result{Stdout: "reachable; no boot id on this node\n"}
	case recorded == "":
		return engine.Result{Stdout: "reachable; boot id " + boot + " recorded\n",
			Node: &engine.NodeFacts{Properties: map[string]string{BootIDProperty: boot}}}
	case recorded != boot:
		return engine.Result{Drift: domain.DriftRebooted, Stdout: fmt.Sprintf("boot id %s, recorded %s\n", boot, recorded)}
	}
	return engine.Result{Stdout: "reachable; boot id unchanged\n"}
}

// ConfigDigest is the digest of what a configure of service on node
// applies, given the cluster's spec (its config, its services and its
// current nodes, which the macros read): the service's configure action
// with its fields expanded for the node, and the cluster config expanded
// for the node. A configure records it when it succeeds; a drift check
// computes it again from the cluster's definition now and reports the node
// stale when the two differ. A service with no configure action has
// nothing to drift: "".
func ConfigDigest(spec *ClusterSpec, layout *macros.Layout, node *domain.Node, service string) (string, error) {
	svc, ok := spec.Services[service]
	if !ok {
		return "", fmt.Errorf("provision: the cluster's spec has no service %q", service)
	}
	def, ok := svc.Actions[domain.ActionConfigure]
	if !ok {
		return "", nil
	}
	config, err := macros.ExpandJSON(spec.Config, layout, node)
	if err != nil {
		return "", fmt.Errorf("provision: cluster config for node %s: %w", node.ID, err)
	}
	keys := make([]string, 0, len(def.Fields))
	for k := range def.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	fields := make([][2]string, 0, len(keys))
	for _, k := range keys {
		v, err := macros.Expand(def.Fields[k], layout, node)
		if err != nil {
			return "", fmt.Errorf("provision: service %s's configure action, field %s, for node %s: %w", service, k, node.ID, err)
		}
		fields = append(fields, [2]string{k, v})
	}
	b, err := json.Marshal(struct {
		Service string      `json:"service"`
		Type    string      `json:"type"`
		Fields  [][2]string `json:"fields"`
		Config  string      `json:"config"`
	}{service, def.Type, fields, string(config)})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:16]), nil
}
