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
// logs in to target with its key once and runs a no-op. When that works it
// answers Done with n and the host key the node presented (pinned from then
// on). A new node refuses connections, then accepts them before its key is
// installed: either answers Later(again, poll, the reason), and the
// dispatcher probes again on the next poll. A host key other than
// target.HostKey (when one is pinned) is an error: waiting would not change
// it.
func ConfirmSSH(ctx context.Context, target sshexec.Target, n Node, again time.Duration, poll string) (Progress, error) {
	hostKey, err := probeOnce(ctx, target)
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

func probeOnce(ctx context.Context, target sshexec.Target) (string, error) {
	target.NoSudo = true // the probe needs no root; bootstrap checks sudo
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
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
