package static

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/sshexec"
)

// What the API and the CLI do with a static provider's hosts: the pool's
// bookkeeping, plus what needs SSH (the registration's check, cleaning up a
// readmitted host).

// Pool is the pool the provider takes hosts from.
func (s *Static) Pool() *Pool { return s.pool }

// From returns the static provider of a registry, or nil when it has none.
func From(r *provider.Registry) *Static {
	if r == nil {
		return nil
	}
	p, _ := r.Provider(TypeName)
	s, _ := p.(*Static)
	return s
}

// CodeCheckFailed is the problem code of a host the registration's check
// could not log in to.
const CodeCheckFailed = "check_failed"

// checkTimeout bounds one host's check: a registration answers within API
// Gateway's 30 s.
const checkTimeout = 10 * time.Second

// checkConcurrency bounds the logins one registration makes at once: all
// of them, so that the slowest (checkTimeout) bounds the answer.
const checkConcurrency = MaxRegister

// Register registers hosts all or nothing (see Pool.RegisterAll). With
// check, every host is first logged in to with its own key, and a host
// that cannot be (unreachable, the key refused, a host key other than the
// one given) fails the whole registration with the reason at its field; a
// host given without a host key gets the one it presented, pinned.
func (s *Static) Register(ctx context.Context, tenant, provider string, specs []HostSpec, check bool) ([]Registered, error) {
	if check && len(specs) <= MaxRegister {
		if _, ps := prepareAll(specs); len(ps) > 0 {
			return nil, ps
		}
		if ps := checkAll(ctx, specs); len(ps) > 0 {
			return nil, ps
		}
	}
	return s.pool.RegisterAll(ctx, tenant, provider, specs)
}

// checkAll checks specs concurrently and pins the host keys it saw.
func checkAll(ctx context.Context, specs []HostSpec) domain.Problems {
	problems := make([]*domain.Problem, len(specs))
	sem := make(chan struct{}, checkConcurrency)
	var wg sync.WaitGroup
	for i := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			hostKey, err := checkHost(ctx, specs[i])
			if err != nil {
				problems[i] = checkProblem(fmt.Sprintf("hosts[%d].", i), specs[i], err)
				return
			}
			if specs[i].HostKey == "" {
				specs[i].HostKey, specs[i].hostKeySource = hostKey, PinChecked
			}
		}()
	}
	wg.Wait()
	var ps domain.Problems
	for _, p := range problems {
		if p != nil {
			ps = append(ps, *p)
		}
	}
	return ps
}

// checkHost logs in to h as its user with its key, runs a no-op, and
// returns the host key it presented.
func checkHost(ctx context.Context, h HostSpec) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	signer, err := sshexec.ParsePrivateKey([]byte(h.PrivateKey.Reveal()))
	if err != nil {
		return "", err
	}
	return provider.Probe(ctx, sshexec.Target{Node: h.ID, Address: net.JoinHostPort(h.Address, strconv.Itoa(h.Port)),
		User: h.User, Key: signer, HostKey: h.HostKey, NoSudo: true})
}

// checkProblem says why a check failed, at the field to fix.
func checkProblem(prefix string, h HostSpec, err error) *domain.Problem {
	var (
		hk *sshexec.HostKeyError
		un *sshexec.UnreachableError
		to *sshexec.TimeoutError
		tr *sshexec.TransportError
	)
	addr := net.JoinHostPort(h.Address, strconv.Itoa(h.Port))
	p := &domain.Problem{Field: prefix + "address", Code: CodeCheckFailed}
	switch {
	case errors.As(err, &hk):
		p.Field = prefix + "hostKey"
		p.Message = fmt.Sprintf("%s presented host key %s, not the given %s: the host was rebuilt or someone is in the middle; check the key on the host (ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub)", addr, hk.Presented, hk.Pinned)
	case errors.As(err, &un):
		p.Message = fmt.Sprintf("%s is unreachable (%v): check the address, the port and the firewall", addr, un.Err)
	case errors.As(err, &to):
		p.Message = fmt.Sprintf("%s did not answer within %s: check the address, the port and the firewall", addr, checkTimeout)
	case errors.As(err, &tr) && tr.Op == "authenticate":
		p.Field = prefix + "privateKey"
		p.Message = fmt.Sprintf("%s refused this key for user %q: add its public half to the user's authorized_keys", addr, h.User)
	default:
		p.Message = fmt.Sprintf("logging in to %s as %q failed: %v", addr, h.User, err)
	}
	return p
}

// Readmit returns a dirty host (after an operator cleaned it) or a drained
// one to the pool. For a dirty host the old node's key line is removed
// first, so the cluster that held it cannot log in any more; a host that
// cannot be reached for it stays dirty, with the reason.
func (s *Static) Readmit(ctx context.Context, tenant, provider, id string) (Host, error) {
	return s.pool.readmit(ctx, tenant, provider, id, func(rec hostRecord) error {
		if rec.Status != StatusDirty || rec.Claim == nil {
			return nil
		}
		key, err := s.pool.openKey(ctx, tenant, provider, rec)
		if err != nil {
			return err
		}
		c := rec.Claim
		// Bounded like a check: the API answers within API Gateway's 30 s.
		ctx, cancel := context.WithTimeout(ctx, checkTimeout)
		defer cancel()
		if _, err := s.editKeys(ctx, taken{hostRecord: rec, key: key}, c.NodeID, removeKeyScript(marker(tenant, c.ClusterID, c.NodeID))); err != nil {
			return fmt.Errorf("static: readmit host %s: removing node %s's key failed, so it stays dirty: %w", id, c.NodeID, err)
		}
		return nil
	})
}
