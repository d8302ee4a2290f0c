package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heddle-io/heddle/internal/sshexec"
)

// ProbeTimeout bounds one SSH readiness probe: a node that swallows
// packets costs a poll this long, not the action's whole timeout.
const ProbeTimeout = 10 * time.Second

// ConfirmSSH is one SSH readiness probe of a node whose facts are n: it
// logs in to target with its key once. With a pool (the worker's, shared
// with the automators) the login is the probe: the connection stays in the
// pool, logged in as the node's endpoint will be (n.NoSudo), and the
// node's bootstrap on this worker runs on it, with no second handshake.
// Without one it also runs a no-op and closes. When that works it answers
// Done with n and the host key the node presented (pinned from then on). A new node refuses connections, then accepts them before its key is
// installed: either answers Later(again, poll, the reason), and the
// dispatcher probes again on the next poll. A host key other than
// target.HostKey (when one is pinned) is an error: waiting would not change
// it.
func ConfirmSSH(ctx context.Context, pool *sshexec.Pool, target sshexec.Target, n Node, again time.Duration, poll string) (Progress, error) {
	hostKey, err := probeOnce(ctx, pool, target, n.NoSudo)
	if err == nil {
		n.HostKey = hostKey
		return Done(n), nil
	}
	var hk *sshexec.HostKeyError
	if errors.As(err, &hk) {
		return Progress{}, err
	}
	if ctx.Err() != nil {
		return Progress{}, fmt.Errorf("node %s did not answer on SSH at %s in time: %w", target.Node, target.Address, err)
	}
	return Later(again, poll, fmt.Sprintf("node %s does not answer on SSH at %s yet: %v", target.Node, target.Address, err)), nil
}

// Probe logs in to target once, without sudo, runs a no-op and returns the
// host key it presented; one attempt is bounded to ProbeTimeout. It is the
// check a host's registration asks for.
func Probe(ctx context.Context, target sshexec.Target) (string, error) {
	return probeOnce(ctx, nil, target, true)
}

func probeOnce(ctx context.Context, pool *sshexec.Pool, target sshexec.Target, noSudo bool) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	if pool != nil {
		// The target the automators will use (EndpointOf), so that they
		// find this connection; it runs nothing, so sudo is not tried here
		// (bootstrap checks it).
		target.NoSudo = noSudo
		c, err := pool.Client(ctx, target)
		if err != nil {
			return "", err
		}
		return c.HostKey(), nil
	}
	target.NoSudo = true // the probe needs no root; bootstrap checks sudo
	c, err := sshexec.Dial(ctx, target)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if _, err := c.Run(ctx, sshexec.Command{Script: ":"}); err != nil {
		return "", err
	}
	return c.HostKey(), nil
}
