package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/identity"
)

// Status is what /v1/status answers.
type Status struct {
	Status  string `json:"status"`
	Version string `json:"version"`
	// Revision, RevisionTime and Modified say which commit the server was
	// built from and whether its tree had uncommitted changes (package
	// buildinfo); a build without VCS information leaves Revision out.
	Revision     string    `json:"revision,omitempty"`
	RevisionTime time.Time `json:"revisionTime,omitzero"`
	Modified     bool      `json:"modified"`
	Backend      string    `json:"backend"`
	Started      time.Time `json:"started"`
}

func (s *Server) getStatus(w http.ResponseWriter, r *http.Request, _ access.Principal) error {
	b := s.build
	writeJSON(w, http.StatusOK, Status{Status: "ok", Version: b.Version, Revision: b.Revision, RevisionTime: b.RevisionTime,
		Modified: b.Modified, Backend: s.backend, Started: s.started.UTC()})
	return nil
}

func (s *Server) getOpenAPI(w http.ResponseWriter, r *http.Request, _ access.Principal) error {
	doc, err := OpenAPIJSON()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(doc)
	return nil
}

// Me is the answer to GET /v1/me: who the caller is and, for a caller
// signed in with a token, notes on the sign-in (a rule reads a claim the
// token lacks), which heddle login shows once.
type Me struct {
	access.Principal
	Notes []string `json:"notes,omitempty"`
}

func (s *Server) getMe(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	me := Me{Principal: p}
	if a, ok := r.Context().Value(admissionKey{}).(*identity.Admission); ok {
		me.Notes = a.Notes
	}
	writeJSON(w, http.StatusOK, me)
	return nil
}

// pathTenant reads {tenant} and hides tenants the caller may not see: anyone
// but a superadmin sees only their own, and gets 404 for any other, so ids of
// other tenants cannot be probed.
func pathTenant(r *http.Request, p access.Principal) (string, error) {
	id := r.PathValue("tenant")
	if !domain.ValidName(id) || (p.Role != domain.RoleSuperadmin && id != p.Tenant) {
		return "", errNotFound(fmt.Sprintf("tenant %q does not exist", id))
	}
	return id, nil
}

func (s *Server) listTenants(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	pr, err := s.pageOf(r, p, listPaging)
	if err != nil {
		return err
	}
	items, next, err := s.access.ListTenants(r.Context(), pr.Limit, pr.After)
	if err != nil {
		return err
	}
	writePage(s, w, pr, items, next)
	return nil
}

// CreateTenantRequest is the body of POST /v1/tenants.
type CreateTenantRequest struct {
	domain.Tenant
	// Admin names the tenant's first admin; their key is in the response.
	Admin string `json:"admin,omitempty"`
}

// CreateTenantResponse is the answer to POST /v1/tenants.
type CreateTenantResponse struct {
	Tenant   access.TenantView `json:"tenant"`
	AdminKey *domain.APIKey    `json:"adminKey,omitempty"`
}

func (s *Server) createTenant(w http.ResponseWriter, r *http.Request, _ access.Principal) error {
	var req CreateTenantRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Version != 0 || !req.CreatedAt.IsZero() {
		return domain.Problems{{Field: "version", Code: domain.CodeInvalid, Message: "version and createdAt are set by the server; leave them out"}}
	}
	view, key, err := s.access.CreateTenant(r.Context(), req.Tenant, req.Admin)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/tenants/"+view.ID)
	w.Header().Set("ETag", versionETag(view.Version))
	created := CreateTenantResponse{Tenant: view, AdminKey: key}
	if err := s.onboarder.Onboard(r.Context(), view.Tenant); err != nil {
		// The tenant exists and its admin key is shown only now, so the
		// error carries both.
		d := s.errorDetail(r, fmt.Errorf("%w: %w", onboardingIncomplete(fmt.Sprintf(
			"tenant %q was created, but its queue could not be made (%v); heddle tenants update %s (PUT /v1/tenants/%s with the tenant) retries it",
			view.ID, err, view.ID, view.ID)), err))
		writeJSON(w, d.Status, CreateTenantIncompleteResponse{Error: d, CreateTenantResponse: created})
		return nil
	}
	writeJSON(w, http.StatusCreated, created)
	return nil
}

// CodeOnboardingIncomplete: the tenant change was made, but what the tenant
// needs outside the store (its queues and their consumer, in AWS) was not;
// the message says which request finishes it.
const CodeOnboardingIncomplete = "onboarding_incomplete"

func onboardingIncomplete(message string) *apiError {
	return newError(http.StatusServiceUnavailable, CodeOnboardingIncomplete, message)
}

// CreateTenantIncompleteResponse is the answer to POST /v1/tenants when the
// tenant was created but not onboarded (503, onboarding_incomplete): the
// error, and the tenant and its admin key, which is not shown again.
type CreateTenantIncompleteResponse struct {
	Error ErrorDetail `json:"error"`
	CreateTenantResponse
}

func versionETag(v int64) string { return `"` + strconv.FormatInt(v, 10) + `"` }

func (s *Server) getTenant(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	id, err := pathTenant(r, p)
	if err != nil {
		return err
	}
	view, err := s.access.GetTenant(r.Context(), id)
	if err != nil {
		return err
	}
	w.Header().Set("ETag", versionETag(view.Version))
	writeJSON(w, http.StatusOK, view)
	return nil
}

func (s *Server) updateTenant(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	id, err := pathTenant(r, p)
	if err != nil {
		return err
	}
	if p.Role != domain.RoleSuperadmin {
		return errForbidden
	}
	var t domain.Tenant
	if err := decode(r, &t); err != nil {
		return err
	}
	if t.ID == "" {
		t.ID = id
	}
	if t.ID != id {
		return domain.Problems{{Field: "id", Code: domain.CodeConflict, Message: fmt.Sprintf("is %q but the URL names %q; they must agree", t.ID, id)}}
	}
	ifVersion := t.Version
	if m := r.Header.Get("If-Match"); m != "" {
		if ifVersion, err = strconv.ParseInt(strings.Trim(m, `"`), 10, 64); err != nil {
			return badParam("If-Match", fmt.Sprintf("%q is not an ETag this API returned", m))
		}
	}
	view, err := s.access.UpdateTenant(r.Context(), t, ifVersion)
	if err != nil {
		return err
	}
	w.Header().Set("ETag", versionETag(view.Version))
	// Resize also onboards a tenant whose onboarding failed, so this PUT is
	// how a failed POST is finished.
	if err := s.onboarder.Resize(r.Context(), view.Tenant); err != nil {
		return fmt.Errorf("%w: %w", onboardingIncomplete(fmt.Sprintf(
			"tenant %q was updated to version %d, but its queue and worker mapping could not be brought to %d workers (%v); heddle tenants update %s (or PUT the tenant again, If-Match: %s) retries it",
			view.ID, view.Version, view.Workers, err, view.ID, versionETag(view.Version))), err)
	}
	writeJSON(w, http.StatusOK, view)
	return nil
}

func (s *Server) deleteTenant(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	id, err := pathTenant(r, p)
	if err != nil {
		return err
	}
	if p.Role != domain.RoleSuperadmin {
		return errForbidden
	}
	// access refuses a tenant with clusters, then marks it deleting (its
	// keys stop working) before it calls drop: the queues go only when no
	// cluster can use them, and before the catalog and the tenant item. A
	// failed Offboard leaves the tenant deleting, and DELETE again resumes
	// (see package onboard).
	drop := func(ctx context.Context, tenant string) error {
		if err := s.onboarder.Offboard(ctx, tenant); err != nil {
			return fmt.Errorf("%w: %w", onboardingIncomplete(fmt.Sprintf(
				"tenant %q is being deleted and its keys no longer work, but its queues could not be removed (%v); DELETE it again to finish",
				tenant, err)), err)
		}
		if s.identity != nil {
			if err := s.identity.DropTenant(ctx, tenant); err != nil {
				return err
			}
		}
		if err := s.catalog.DropTenant(ctx, tenant); err != nil {
			return err
		}
		return s.throttle.forgetTenant(ctx, tenant)
	}
	if err := s.access.DeleteTenant(r.Context(), id, drop); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	pr, err := s.pageOf(r, p, listPaging)
	if err != nil {
		return err
	}
	items, next, err := s.access.ListUsers(r.Context(), p.Tenant, pr.Limit, pr.After)
	if err != nil {
		return err
	}
	writePage(s, w, pr, items, next)
	return nil
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	var u domain.User
	if err := decode(r, &u); err != nil {
		return err
	}
	if u.TenantID != "" && u.TenantID != p.Tenant {
		return domain.Problems{{Field: "tenantId", Code: domain.CodeInvalid, Message: "users are created in your own tenant; leave tenantId out"}}
	}
	if !p.Role.AtLeast(u.Role) {
		return domain.Problems{{Field: "role", Code: domain.CodeInvalid, Message: fmt.Sprintf("you are %s and cannot create a %s", p.Role, u.Role)}}
	}
	created, err := s.access.CreateUser(r.Context(), p.Tenant, u)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/users/"+created.Name)
	writeJSON(w, http.StatusCreated, created)
	return nil
}

// pathUser reads {user}: admins may name any user of their tenant, a plain
// user only themselves (others answer 404, not 403, so names cannot be
// probed).
func pathUser(r *http.Request, p access.Principal) (string, error) {
	name := r.PathValue("user")
	if !domain.ValidName(name) || (!p.Role.AtLeast(domain.RoleAdmin) && name != p.User) {
		return "", errNotFound(fmt.Sprintf("user %q does not exist", name))
	}
	return name, nil
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	name, err := pathUser(r, p)
	if err != nil {
		return err
	}
	u, err := s.access.GetUser(r.Context(), p.Tenant, name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, u)
	return nil
}

// SetRoleRequest is the body of PUT /v1/users/{user}: the user's new role
// and, when not 0, the version read before (an optimistic lock).
type SetRoleRequest struct {
	Role    domain.Role `json:"role"`
	Version int64       `json:"version,omitempty"`
}

func (s *Server) setUserRole(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	name, err := pathUser(r, p)
	if err != nil {
		return err
	}
	// The user is read first: another tenant's user answers 404 before
	// any 400 of the body, so its names cannot be probed.
	cur, err := s.access.GetUser(r.Context(), p.Tenant, name)
	if err != nil {
		return err
	}
	var req SetRoleRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if !p.Role.AtLeast(req.Role) {
		return domain.Problems{{Field: "role", Code: domain.CodeInvalid, Message: fmt.Sprintf("you are %s and cannot make anyone %s", p.Role, req.Role)}}
	}
	if name == p.User {
		// An admin who demotes themselves may leave the tenant with none.
		return newError(http.StatusConflict, CodeConflict, "you cannot change your own role; ask another admin")
	}
	if !p.Role.AtLeast(cur.Role) {
		return errForbidden
	}
	u, err := s.access.SetRole(r.Context(), p.Tenant, name, req.Role, req.Version)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, u)
	return nil
}

func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	name, err := pathUser(r, p)
	if err != nil {
		return err
	}
	if name == p.User {
		return newError(http.StatusConflict, CodeConflict, "you cannot delete yourself; ask another admin")
	}
	if err := s.access.DeleteUser(r.Context(), p.Tenant, name); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	name, err := pathUser(r, p)
	if err != nil {
		return err
	}
	if _, err := s.access.GetUser(r.Context(), p.Tenant, name); err != nil {
		return err
	}
	pr, err := s.pageOf(r, p, listPaging)
	if err != nil {
		return err
	}
	items, next, err := s.access.ListKeys(r.Context(), p.Tenant, name, pr.Limit, pr.After)
	if err != nil {
		return err
	}
	writePage(s, w, pr, items, next)
	return nil
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	name, err := pathUser(r, p)
	if err != nil {
		return err
	}
	key, err := s.access.CreateKey(r.Context(), p.Tenant, name)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, key)
	return nil
}

func (s *Server) deleteKey(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	name, err := pathUser(r, p)
	if err != nil {
		return err
	}
	id := r.PathValue("key")
	if !domain.ValidName(id) {
		return errNotFound(fmt.Sprintf("key %q does not exist", id))
	}
	if err := s.access.DeleteKey(r.Context(), p.Tenant, name, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
