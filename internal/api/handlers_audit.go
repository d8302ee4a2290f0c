package api

import (
	"fmt"
	"net/http"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
)

var errNoAudit = newError(http.StatusServiceUnavailable, CodeUnavailable,
	"this server keeps no audit records (it was started without an audit log)")

// listAudit pages the audit records of the caller's tenant, newest first; a
// superadmin names any tenant with ?tenant= (its own, system, by default).
func (s *Server) listAudit(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	if s.audit == nil {
		return errNoAudit
	}
	tenant := p.Tenant
	if t := r.URL.Query().Get("tenant"); t != "" && t != p.Tenant {
		if p.Role != domain.RoleSuperadmin || !domain.ValidName(t) {
			// As for every other tenant route: what the caller may not
			// see does not exist, so ids cannot be probed.
			return errNotFound(fmt.Sprintf("tenant %q does not exist", t))
		}
		tenant = t
	}
	pr, err := s.pageOf(r, p, listPaging)
	if err != nil {
		return err
	}
	items, next, err := s.audit.List(r.Context(), tenant, pr.Limit, pr.After)
	if err != nil {
		return err
	}
	writePage(s, w, pr, items, next)
	return nil
}

var errNoMetrics = newError(http.StatusServiceUnavailable, CodeUnavailable,
	"this deployment serves no metrics here: on AWS they are in CloudWatch (namespace heddle)")

// getMetrics serves the Prometheus text format to the superadmin: the
// labels name tenants, which no tenant may see of another.
func (s *Server) getMetrics(w http.ResponseWriter, r *http.Request, _ access.Principal) error {
	if s.metrics == nil {
		return errNoMetrics
	}
	s.metrics.ServeHTTP(w, r)
	return nil
}
