package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/usage"
)

var errNoUsage = newError(http.StatusServiceUnavailable, CodeUnavailable, "this server keeps no usage records")

// getUsage answers node-hours over a range: a user's own clusters, an
// admin's tenant, and for the superadmin every tenant (or ?tenant=).
func (s *Server) getUsage(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	if s.usage == nil {
		return errNoUsage
	}
	q, err := usageQuery(r, time.Now().UTC())
	if err != nil {
		return err
	}
	tenants := []string{p.Tenant}
	switch {
	case p.Role == domain.RoleUser:
		q.Owner = p.User
	case p.Role == domain.RoleSuperadmin:
		if t := r.URL.Query().Get("tenant"); t != "" {
			tenants = []string{t}
		} else {
			all, err := s.access.AllTenants(r.Context())
			if err != nil {
				return err
			}
			tenants = tenants[:0]
			for _, t := range all {
				tenants = append(tenants, t.ID)
			}
		}
	}
	if t := r.URL.Query().Get("tenant"); t != "" && p.Role != domain.RoleSuperadmin && t != p.Tenant {
		return errNotFound(fmt.Sprintf("tenant %q does not exist", t))
	}
	var lifetimes []usage.Lifetime
	for _, t := range tenants {
		ls, err := s.usage.Lifetimes(r.Context(), t, q.From, q.To)
		if err != nil {
			return err
		}
		lifetimes = append(lifetimes, ls...)
	}
	report, err := usage.Compute(q, lifetimes, time.Now().UTC())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, report)
	return nil
}

// usageQuery reads from, to, groupBy and step; by default the last seven
// days, by day and cluster.
func usageQuery(r *http.Request, now time.Time) (usage.Query, error) {
	v := r.URL.Query()
	q := usage.Query{To: now, GroupBy: usage.ByCluster, Step: usage.Day}
	if g := v.Get("groupBy"); g != "" {
		q.GroupBy = usage.Grouping(g)
	}
	if st := v.Get("step"); st != "" {
		q.Step = usage.Step(st)
	}
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"to", &q.To}, {"from", &q.From}} {
		if raw := v.Get(f.name); raw != "" {
			t, err := time.Parse(time.RFC3339, raw)
			if err != nil {
				return q, badQuery(f.name, fmt.Sprintf("%q is not a time; write it as RFC 3339, e.g. 2026-11-24T00:00:00Z", raw))
			}
			*f.dst = t.UTC()
		}
	}
	// Whether from was given, not whether it is the zero time: an explicit
	// 0001-01-01T00:00:00Z is a range to refuse, not a request for the
	// default week.
	if v.Get("from") == "" {
		q.From = q.To.Add(-7 * 24 * time.Hour)
	}
	if err := q.Check(); err != nil {
		var p *usage.Problem
		if errors.As(err, &p) {
			return q, badQuery(p.Field, p.Message)
		}
		return q, err
	}
	return q, nil
}
