package localserver

import (
	"context"
	"fmt"
)

// LoseNode makes a local node look like a machine that died outside
// heddle: its SSH server stops and its processes end, its directory stays
// (local.Local.Crash). Tests of drift and repair from other packages (the
// operations model) use it; heddle never calls it.
func (s *Server) LoseNode(tenant, cluster, node string) error {
	if err := s.local.Crash(tenant, cluster, node); err != nil {
		return fmt.Errorf("losing node %s: %w", node, err)
	}
	return nil
}

// FindNodes brings back every local node that LoseNode stopped and that
// heddle has not deleted since, as machines that are powered on again.
func (s *Server) FindNodes(ctx context.Context) error {
	if err := s.local.Restore(ctx); err != nil {
		return fmt.Errorf("bringing lost nodes back: %w", err)
	}
	return nil
}

// LoseModeledNode terminates a latency-provider node outside heddle, by
// its provider id: the next drift check finds it gone
// (latency.Latency.Lose). The repair benchmark uses it.
func (s *Server) LoseModeledNode(providerID string) { s.latency.Lose(providerID) }
