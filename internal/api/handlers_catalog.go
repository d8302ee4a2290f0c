package api

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider"
)

func pathKind(r *http.Request) (domain.Kind, error) {
	k := domain.Kind(r.PathValue("kind"))
	if domain.NewEntity(k) == nil {
		names := make([]string, len(domain.Kinds))
		for i, kk := range domain.Kinds {
			names[i] = string(kk)
		}
		return "", errNotFound(fmt.Sprintf("/v1/%s is not a collection; the catalog has %s", k, strings.Join(names, ", ")))
	}
	return k, nil
}

func pathEntity(r *http.Request) (domain.Kind, string, error) {
	k, err := pathKind(r)
	if err != nil {
		return "", "", err
	}
	name, err := pathName(r, "name")
	return k, name, err
}

func (s *Server) listEntities(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	k, err := pathKind(r)
	if err != nil {
		return err
	}
	pr, err := s.pageOf(r, p, entityPaging)
	if err != nil {
		return err
	}
	items, next, err := s.catalog.List(r.Context(), p.Tenant, k, pr.Limit, pr.After)
	if err != nil {
		return err
	}
	writePage(s, w, pr, s.listed(items), next)
	return nil
}

func (s *Server) getEntity(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	k, name, err := pathEntity(r)
	if err != nil {
		return err
	}
	e, err := s.catalog.Get(r.Context(), p.Tenant, k, name, 0)
	if err != nil {
		return err
	}
	w.Header().Set("ETag", catalog.ETag(e.EntityMeta().Version))
	writeJSON(w, http.StatusOK, s.catalog.Redacted(e))
	return nil
}

func (s *Server) getVersion(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	k, name, err := pathEntity(r)
	if err != nil {
		return err
	}
	v, err := strconv.Atoi(r.PathValue("version"))
	if err != nil || v < 1 {
		return badParam("version", fmt.Sprintf("%q is not a version; versions are whole numbers from 1", r.PathValue("version")))
	}
	e, err := s.catalog.Get(r.Context(), p.Tenant, k, name, v)
	if err != nil {
		return err
	}
	w.Header().Set("ETag", catalog.ETag(e.EntityMeta().Version))
	writeJSON(w, http.StatusOK, s.catalog.Redacted(e))
	return nil
}

func (s *Server) listVersions(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	k, name, err := pathEntity(r)
	if err != nil {
		return err
	}
	pr, err := s.pageOf(r, p, entityPaging)
	if err != nil {
		return err
	}
	items, next, err := s.catalog.Versions(r.Context(), p.Tenant, k, name, pr.Limit, pr.After)
	if err != nil {
		return err
	}
	writePage(s, w, pr, s.listed(items), next)
	return nil
}

// putEntity writes the entity's next version. A body naming a version acts as
// If-Match on it, so GET, edit, PUT is safe against concurrent edits. The
// Heddle-Outcome header says whether it created the entity, wrote a new
// version, or wrote nothing (unchanged: the body is the latest version).
func (s *Server) putEntity(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	k, name, err := pathEntity(r)
	if err != nil {
		return err
	}
	e, text, err := decodeEntity(r, k)
	if err != nil {
		return err
	}
	meta := e.EntityMeta()
	if meta.Name == "" {
		meta.Name = name
	}
	if meta.Name != name {
		return domain.Problems{{Field: "name", Code: domain.CodeConflict,
			Message: fmt.Sprintf("is %q but the URL names %q; they must agree", meta.Name, name)}}
	}
	ifMatch := r.Header.Get("If-Match")
	if ifMatch == "" && meta.Version != 0 {
		ifMatch = catalog.ETag(meta.Version)
	}
	var (
		stored  domain.Entity
		outcome catalog.Outcome
	)
	if text {
		// A script's bare text keeps the description it had (see
		// Catalog.WriteScriptText).
		stored, outcome, err = s.catalog.WriteScriptText(r.Context(), p.Tenant, name, e.(*domain.Script).Content, ifMatch)
	} else {
		stored, outcome, err = s.catalog.Write(r.Context(), p.Tenant, e, ifMatch)
	}
	if err != nil {
		return err
	}
	w.Header().Set("ETag", catalog.ETag(stored.EntityMeta().Version))
	w.Header().Set(OutcomeHeader, string(outcome))
	status := http.StatusOK
	if outcome == catalog.OutcomeCreated {
		status = http.StatusCreated
		w.Header().Set("Location", r.URL.Path)
	}
	writeJSON(w, status, s.catalog.Redacted(stored))
	return nil
}

// OutcomeHeader, on the answer to a catalog PUT, says what the PUT did:
// created, updated, or unchanged (nothing written).
const OutcomeHeader = "Heddle-Outcome"

func (s *Server) deleteEntity(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	k, name, err := pathEntity(r)
	if err != nil {
		return err
	}
	if err := s.catalog.Delete(r.Context(), p.Tenant, k, name, r.Header.Get("If-Match")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) resolveTemplate(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	name, err := pathName(r, "name")
	if err != nil {
		return err
	}
	version := 0
	if v := r.URL.Query().Get("version"); v != "" {
		if version, err = strconv.Atoi(v); err != nil || version < 1 {
			return badQuery("version", fmt.Sprintf("%q is not a version; versions are whole numbers from 1", v))
		}
	}
	t, err := s.catalog.Resolve(r.Context(), p.Tenant, name, version)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

func (s *Server) exportCatalog(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	asYAML := false
	switch f := r.URL.Query().Get("format"); f {
	case "", "json":
	case "yaml":
		asYAML = true
	default:
		return badQuery("format", fmt.Sprintf("%q is not a format; use json or yaml", f))
	}
	pr, err := s.pageOf(r, p, catalogPaging)
	if err != nil {
		return err
	}
	d, next, err := s.catalog.ExportPage(r.Context(), p.Tenant, pr.Limit, catalogPageBytes, pr.After)
	if err != nil {
		return err
	}
	d = s.catalog.RedactedDocument(d)
	d.NextCursor = pr.next(s, next)
	body, err := catalog.MarshalDocument(d, asYAML)
	if err != nil {
		return err
	}
	if asYAML {
		w.Header().Set("Content-Type", "application/yaml")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	_, _ = w.Write(body)
	return nil
}

func (s *Server) importCatalog(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	d, err := catalog.DecodeDocument(body)
	if err != nil {
		if ps, ok := err.(domain.Problems); ok && isShapeProblem(ps) {
			return badBody{ps}
		}
		return err
	}
	res, err := s.catalog.Import(r.Context(), p.Tenant, d)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// decodeEntity reads a PUT's entity of kind k. A script may also be sent as
// its bare text (Content-Type text/plain, text/x-shellscript or
// application/octet-stream), so that `curl --data-binary @install.sh`
// uploads a file as it is; text says it was.
func decodeEntity(r *http.Request, k domain.Kind) (e domain.Entity, text bool, err error) {
	if k == domain.KindScript {
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil && scriptMediaTypes[mt] {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return nil, false, err
			}
			return &domain.Script{Content: string(body)}, true, nil
		}
	}
	e = domain.NewEntity(k)
	if err := decode(r, e); err != nil {
		return nil, false, err
	}
	return e, false, nil
}

var scriptMediaTypes = map[string]bool{"text/plain": true, "text/x-shellscript": true, "text/x-sh": true, "application/x-sh": true, "application/octet-stream": true}

// listed is what listings show of entities: Redacted, and a script without
// its content (Size and SHA256 describe it), so that a page of scripts stays
// small whatever they hold; GET one version for the content.
func (s *Server) listed(es []domain.Entity) []domain.Entity {
	out := s.redacted(es)
	for _, e := range out {
		if sc, ok := e.(*domain.Script); ok {
			sc.Content = ""
		}
	}
	return out
}

// redacted passes catalog entities through Catalog.Redacted: no API
// response carries a provider's sensitive field, sealed or not.
func (s *Server) redacted(es []domain.Entity) []domain.Entity {
	out := make([]domain.Entity, len(es))
	for i, e := range es {
		out[i] = s.catalog.Redacted(e)
	}
	return out
}

// listProviderTypes lists the provider types this heddle runs, with the
// parameters each declares (admin and user fields, required sets, sensitive
// flags), so a UI can draw the form for a provider and for cluster create.
func (s *Server) listProviderTypes(w http.ResponseWriter, _ *http.Request, _ access.Principal) error {
	if s.providers == nil {
		return errNoProviders
	}
	writeJSON(w, http.StatusOK, Page[provider.Type]{Items: s.providers.Types()})
	return nil
}

var errNoProviders = newError(http.StatusServiceUnavailable, CodeUnavailable,
	"this heddle has no provider plugins configured, so it lists no provider types")

// isShapeProblem tells decoding problems (400) from semantic ones (422).
func isShapeProblem(ps domain.Problems) bool {
	for _, p := range ps {
		switch p.Code {
		case domain.CodeMalformed, domain.CodeUnknownField, domain.CodeWrongType:
		default:
			return false
		}
	}
	return true
}
