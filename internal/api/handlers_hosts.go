package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider/static"
	"github.com/heddle-io/heddle/internal/secrets"
)

// HostSpec is a host as a registration sends it: the static provider's
// spec with the private key in the open (it is sealed before it is stored
// and never sent back).
type HostSpec struct {
	ID         string `json:"id"`
	Address    string `json:"address"`
	Port       int    `json:"port,omitempty"`
	User       string `json:"user"`
	PrivateKey string `json:"privateKey"`
	// HostKey: authorized_keys form or a known_hosts line.
	HostKey string `json:"hostKey,omitempty"`
}

// RegisterHosts is the body of POST /v1/providers/{provider}/hosts.
type RegisterHosts struct {
	Hosts []HostSpec `json:"hosts"`
	// Check logs in to every host first and refuses the registration when
	// one cannot be logged in to.
	Check bool `json:"check,omitempty"`
}

// RegisteredHosts is its answer.
type RegisteredHosts struct {
	Items []static.Registered `json:"items"`
}

// staticProvider checks that the path's provider is one of the caller's
// tenant's static providers, and returns the static provider and its name.
func (s *Server) staticProvider(r *http.Request, p access.Principal) (*static.Static, string, error) {
	name, err := pathName(r, "provider")
	if err != nil {
		return nil, "", err
	}
	e, err := s.catalog.Get(r.Context(), p.Tenant, domain.KindProvider, name, 0)
	if err != nil {
		return nil, "", err
	}
	if pt := e.(*domain.Provider).ProviderType; pt != static.TypeName {
		return nil, "", newError(http.StatusConflict, CodeConflict,
			fmt.Sprintf("provider %q is of type %q; only a %q provider has hosts to register", name, pt, static.TypeName))
	}
	st := static.From(s.providers)
	if st == nil {
		return nil, "", newError(http.StatusServiceUnavailable, CodeUnavailable, "this deployment has no static provider")
	}
	return st, name, nil
}

// hostError answers the static pool's refusals.
func hostError(err error) error {
	var busy *static.BusyError
	switch {
	case errors.As(err, &busy):
		return newError(http.StatusConflict, CodeHostBusy, busy.Error())
	case errors.Is(err, static.ErrHostNotFound):
		return errNotFound(trimPrefix(err) + ": no such host in this provider's pool")
	case errors.Is(err, static.ErrNotReadmittable), errors.Is(err, static.ErrChanged):
		return newError(http.StatusConflict, CodeConflict, trimPrefix(err))
	}
	return err
}

// CodeHostBusy: the host is held by a node (the message names the cluster).
const CodeHostBusy = "host_busy"

func (s *Server) listHosts(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	st, prov, err := s.staticProvider(r, p)
	if err != nil {
		return err
	}
	pr, err := s.pageOf(r, p, listPaging)
	if err != nil {
		return err
	}
	hosts, next, err := st.Pool().ListPage(r.Context(), p.Tenant, prov, pr.Limit, pr.After)
	if err != nil {
		return err
	}
	writePage(s, w, pr, hosts, next)
	return nil
}

func (s *Server) registerHosts(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	st, prov, err := s.staticProvider(r, p)
	if err != nil {
		return err
	}
	var body RegisterHosts
	if err := decode(r, &body); err != nil {
		return err
	}
	specs := make([]static.HostSpec, len(body.Hosts))
	for i, h := range body.Hosts {
		specs[i] = static.HostSpec{ID: h.ID, Address: h.Address, Port: h.Port, User: h.User, HostKey: h.HostKey}
		if h.PrivateKey != "" {
			specs[i].PrivateKey = secrets.NewSecret(h.PrivateKey)
		}
	}
	got, err := st.Register(r.Context(), p.Tenant, prov, specs, body.Check)
	if err != nil {
		return hostError(err)
	}
	writeJSON(w, http.StatusOK, RegisteredHosts{Items: got})
	return nil
}

// hostAction serves the routes on one host.
func (s *Server) hostAction(do func(st *static.Static, r *http.Request, tenant, provider, host string) (*static.Host, error)) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p access.Principal) error {
		st, prov, err := s.staticProvider(r, p)
		if err != nil {
			return err
		}
		host, err := pathName(r, "host")
		if err != nil {
			return err
		}
		h, err := do(st, r, p.Tenant, prov, host)
		if err != nil {
			return hostError(err)
		}
		if h == nil {
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
		writeJSON(w, http.StatusOK, h)
		return nil
	}
}

func hostResult(h static.Host, err error) (*static.Host, error) {
	if err != nil {
		return nil, err
	}
	return &h, nil
}

func getHost(st *static.Static, r *http.Request, tenant, provider, host string) (*static.Host, error) {
	return hostResult(st.Pool().Get(r.Context(), tenant, provider, host))
}

func drainHost(st *static.Static, r *http.Request, tenant, provider, host string) (*static.Host, error) {
	return hostResult(st.Pool().Drain(r.Context(), tenant, provider, host))
}

func readmitHost(st *static.Static, r *http.Request, tenant, provider, host string) (*static.Host, error) {
	return hostResult(st.Readmit(r.Context(), tenant, provider, host))
}

func removeHost(st *static.Static, r *http.Request, tenant, provider, host string) (*static.Host, error) {
	return nil, st.Pool().Remove(r.Context(), tenant, provider, host)
}
