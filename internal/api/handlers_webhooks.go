package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/webhooks"
)

var errNoWebhooks = newError(http.StatusServiceUnavailable, CodeUnavailable, "this server delivers no webhooks")

// deliveryPaging: a delivery record holds up to MaxAttempts attempts with
// 256-byte answers, a few KB.
var deliveryPaging = Paging{Default: 50, Max: 200}

// CreatedWebhook answers a registration: the endpoint and its secret, which
// is shown this once.
type CreatedWebhook struct {
	webhooks.Endpoint
	Secret string `json:"secret"`
}

func (s *Server) webhookError(err error) error {
	switch {
	case errors.Is(err, webhooks.ErrNotFound):
		return errNotFound(strings.TrimPrefix(err.Error(), webhooks.ErrNotFound.Error()+": ") + " does not exist")
	case errors.Is(err, webhooks.ErrTooMany):
		return newError(http.StatusConflict, CodeConflict, err.Error())
	}
	return err
}

func pathWebhook(r *http.Request) (string, error) {
	id := r.PathValue("webhook")
	if !strings.HasPrefix(id, "wh-") || len(id) > 64 {
		return "", errNotFound(fmt.Sprintf("webhook %q does not exist", id))
	}
	return id, nil
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	if s.hooks == nil {
		return errNoWebhooks
	}
	var req webhooks.Request
	if err := decode(r, &req); err != nil {
		return err
	}
	e, secret, err := s.hooks.Create(r.Context(), p.Tenant, p.User, req)
	if err != nil {
		return s.webhookError(err)
	}
	w.Header().Set("Location", "/v1/webhooks/"+e.ID)
	writeJSON(w, http.StatusCreated, CreatedWebhook{Endpoint: e, Secret: secret})
	return nil
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	if s.hooks == nil {
		return errNoWebhooks
	}
	list, err := s.hooks.List(r.Context(), p.Tenant)
	if err != nil {
		return err
	}
	for i := range list {
		list[i].Secret = ""
	}
	// At most MaxEndpoints: one page.
	writeJSON(w, http.StatusOK, Page[webhooks.Endpoint]{Items: list})
	return nil
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	if s.hooks == nil {
		return errNoWebhooks
	}
	id, err := pathWebhook(r)
	if err != nil {
		return err
	}
	e, err := s.hooks.Get(r.Context(), p.Tenant, id)
	if err != nil {
		return s.webhookError(err)
	}
	e.Secret = ""
	writeJSON(w, http.StatusOK, e)
	return nil
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	if s.hooks == nil {
		return errNoWebhooks
	}
	id, err := pathWebhook(r)
	if err != nil {
		return err
	}
	if err := s.hooks.Delete(r.Context(), p.Tenant, id); err != nil {
		return s.webhookError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	if s.delivered == nil {
		return errNoWebhooks
	}
	id, err := pathWebhook(r)
	if err != nil {
		return err
	}
	pr, err := s.pageOf(r, p, deliveryPaging)
	if err != nil {
		return err
	}
	list, next, err := s.delivered.Log(r.Context(), p.Tenant, id, pr.Limit, pr.After)
	if err != nil {
		return s.webhookError(err)
	}
	writePage(s, w, pr, list, next)
	return nil
}
