package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heddle-io/heddle/internal/sshexec"
)

// WaitForSSH dials target until a login with its key runs a command, every
// interval, and returns the host key the node presented (pinned from then
// on). A new node refuses connections, then accepts them before its key is
// installed: both are waited out. A host key other than target.HostKey (when
// one is pinned) fails at once: waiting would not change it. The context
// bounds the wait; the last failure is in the error.
func WaitForSSH(ctx context.Context, target sshexec.Target, interval time.Duration) (string, error) {
	target.NoSudo = true // the probe needs no root; bootstrap checks sudo
	var last error
	for {
		hostKey, err := Probe(ctx, target)
		if err == nil {
			return hostKey, nil
		}
		var hk *sshexec.HostKeyError
		if errors.As(err, &hk) {
			return "", err
		}
		last = err
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", fmt.Errorf("node %s did not answer on SSH at %s in time: %w", target.Node, target.Address, last)
		case <-t.C:
		}
	}
}

// Probe logs in to target once, runs a no-op, and returns the host key it
// presented; one attempt is bounded to 20 s.
func Probe(ctx context.Context, target sshexec.Target) (string, error) {
	// One attempt must not use up the caller's whole budget on a node that
	// swallows packets.
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
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
