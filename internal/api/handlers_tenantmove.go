package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/tenantmove"
)

// MaxTenantImportBodyBytes is the largest body POST /v1/tenant/import
// accepts: an export page's records (about 1 MiB of item bodies, base64
// in JSON) with their secrets, below what the API Lambda's 6 MB event
// holds once API Gateway has base64-encoded it.
const MaxTenantImportBodyBytes = 4 << 20

// getTenantExport answers one page of the caller's tenant's data
// (tenantmove.Export), its secrets sealed to ?recipient=, the X25519 key of
// whoever asked (heddle tenant export and heddle migrate make one and keep
// its private half). The cursor is signed, bound to the tenant and the
// recipient.
func (s *Server) getTenantExport(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	if s.moves == nil {
		return newError(http.StatusNotImplemented, CodeNotSupported, "this deployment was started without tenant export and import")
	}
	raw := r.URL.Query().Get("recipient")
	if raw == "" {
		return badQuery("recipient", "is required: the base64url X25519 public key the export's secrets are sealed to (heddle tenant export makes one)")
	}
	to, err := tenantmove.ParseRecipient(raw)
	if err != nil {
		return badQuery("recipient", err.Error())
	}
	// A page's size is the export's own (tenantmove.MaxPageRecords and
	// MaxPageBytes); the cursor is the walk's position, signed.
	pr := pageRequest{tenant: p.Tenant, scope: pageScope(r)}
	if c := r.URL.Query().Get("cursor"); c != "" {
		if pr.After, err = s.cursors.open(pr.tenant, pr.scope, c); err != nil {
			return err
		}
	}
	page, err := s.moves.Export(r.Context(), p.Tenant, to, pr.After)
	if err != nil {
		return moveError(err)
	}
	page.Next = pr.next(s, page.Next)
	writeJSON(w, http.StatusOK, page)
	return nil
}

// postTenantImport writes the records of one export page that the caller's
// tenant is missing (tenantmove.Import), sealing their secrets under this
// deployment's key; with "check": true it only says what it would do.
func (s *Server) postTenantImport(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	if s.moves == nil {
		return newError(http.StatusNotImplemented, CodeNotSupported, "this deployment was started without tenant export and import")
	}
	// Not decode's strict decoder: record bodies are base64 ([]byte),
	// which it does not read.
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var req tenantmove.ImportRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return badBody{domain.Problems{{Code: domain.CodeMalformed, Message: "the body is not an import request (a page of heddle tenant export): " + err.Error()}}}
	}
	res, err := s.moves.Import(r.Context(), p.Tenant, p.Role, req)
	if err != nil {
		return moveError(err)
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// moveError maps tenantmove's errors to answers.
func moveError(err error) error {
	var ce *tenantmove.ConflictError
	var ps domain.Problems
	switch {
	case errors.As(err, &ps):
		return err
	case errors.As(err, &ce):
		ae := newError(http.StatusConflict, CodeConflict, ce.Error()+
			"; the target must be empty at these keys: import into a tenant that holds none of this data, or remove it there first")
		for _, c := range ce.Conflicts {
			ae.details = append(ae.details, domain.Problem{Field: fmt.Sprintf("records[%s/%s]", c.PK, c.SK), Code: CodeConflict, Message: c.Reason})
		}
		return ae
	case errors.Is(err, tenantmove.ErrBusy), errors.Is(err, tenantmove.ErrQuota):
		return newError(http.StatusConflict, CodeConflict, trimMovePrefix(err))
	case errors.Is(err, tenantmove.ErrBadCursor):
		return errBadCursor
	case errors.Is(err, tenantmove.ErrUnknownSecret):
		return newError(http.StatusInternalServerError, CodeInternal, trimMovePrefix(err)+"; this heddle cannot export it, report it")
	}
	return err
}

func trimMovePrefix(err error) string {
	msg := err.Error()
	for _, sentinel := range []error{tenantmove.ErrBusy, tenantmove.ErrQuota, tenantmove.ErrUnknownSecret} {
		if errors.Is(err, sentinel) {
			if rest, ok := strings.CutPrefix(msg, sentinel.Error()+": "); ok {
				return rest
			}
		}
	}
	return msg
}
