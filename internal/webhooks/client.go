package webhooks

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Policy says which endpoints the operator allows.
type Policy struct {
	// AllowPrivate lets deliveries reach private, link-local and CGNAT
	// addresses (a receiver inside the operator's own network).
	AllowPrivate bool
	// Local is the local server: http is accepted for loopback URLs, and
	// loopback addresses may be dialed.
	Local bool
	// Timeout bounds one attempt, from dialing to the answer's last byte
	// read (default DefaultTimeout).
	Timeout time.Duration
}

// DefaultTimeout bounds one delivery attempt: a slow endpoint costs a
// worker this much at most.
const DefaultTimeout = 10 * time.Second

// ErrRefusedAddress: the endpoint's address is one the policy refuses.
var ErrRefusedAddress = errors.New("webhooks: the address is refused")

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// allowed reports whether ip may be dialed under p.
func (p Policy) allowed(ip netip.Addr) error {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid(), ip.IsUnspecified(), ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return fmt.Errorf("%w: %s is not a unicast address", ErrRefusedAddress, ip)
	case ip.IsLoopback():
		if !p.Local {
			return fmt.Errorf("%w: %s is a loopback address", ErrRefusedAddress, ip)
		}
	case ip.IsPrivate(), ip.IsLinkLocalUnicast(), cgnat.Contains(ip):
		if !p.AllowPrivate {
			return fmt.Errorf("%w: %s is a private or link-local address (the operator may allow them)", ErrRefusedAddress, ip)
		}
	}
	return nil
}

// CheckURL validates an endpoint URL when it is registered: https (http
// only to loopback in the local server), a host, no credentials, and no
// literal address the policy refuses. Names are checked again, resolved,
// at every dial.
func (p Policy) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return errors.New("is not an absolute URL such as https://hooks.example.com/heddle")
	}
	if u.User != nil {
		return errors.New("must not carry credentials; the signature authenticates heddle")
	}
	if u.Fragment != "" {
		return errors.New("must not have a fragment")
	}
	host := u.Hostname()
	ip, parseErr := netip.ParseAddr(host)
	loopbackName := strings.EqualFold(host, "localhost") || (parseErr == nil && ip.IsLoopback())
	switch u.Scheme {
	case "https":
	case "http":
		if !p.Local || !loopbackName {
			return errors.New("must be https (the local server also takes http to a loopback address)")
		}
	default:
		return errors.New("must be https")
	}
	if parseErr == nil {
		if err := p.allowed(ip); err != nil {
			return err
		}
	} else if strings.EqualFold(host, "localhost") && !p.Local {
		return fmt.Errorf("%w: localhost is a loopback address", ErrRefusedAddress)
	}
	return nil
}

// Client returns the HTTP client deliveries use: no proxy, no redirects,
// bounded in time, and every dialed address checked against p.
func (p Policy) Client() *http.Client {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	dialer := &net.Dialer{
		Timeout: timeout,
		// Control runs with the address about to be dialed, after name
		// resolution: what is checked is what is reached.
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %q", ErrRefusedAddress, address)
			}
			return p.allowed(ap.Addr())
		},
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       30 * time.Second,
			ForceAttemptHTTP2:     true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
