package identity

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
)

// DefaultUserClaim names the user when an issuer does not say otherwise.
const DefaultUserClaim = "email"

// DefaultScopes are what every sign-in asks for: openid for the ID token,
// email and profile for the claims rules usually read, offline_access for
// a refresh token.
var DefaultScopes = []string{"openid", "email", "profile", "offline_access"}

// MaxScopes bounds an issuer's extra scopes.
const MaxScopes = 20

// MaxRules bounds an issuer's mapping rules, so that an issuer always fits
// in one store item and a sign-in evaluates a bounded list.
const MaxRules = 100

// Issuer is one trusted OpenID Connect provider of a tenant.
type Issuer struct {
	TenantID string `json:"tenantId"`
	// Name identifies the issuer inside its tenant.
	Name string `json:"name"`
	// URL is the issuer exactly as tokens carry it in iss; discovery reads
	// URL/.well-known/openid-configuration.
	URL string `json:"url"`
	// Audience is what tokens must carry in aud: the client id heddle is
	// registered under at the provider.
	Audience string `json:"audience"`
	// ClientID is the public client the CLI and the dashboard sign in
	// with; empty is Audience.
	ClientID string `json:"clientId,omitempty"`
	// CLIClientID is the public client `heddle login` signs in with when
	// it is not ClientID: a client per surface, for providers that keep
	// one refresh token per user and client (Dex), where the dashboard's
	// sign-in would revoke the CLI's. Its ID tokens carry it in aud, and
	// heddle accepts them beside Audience's.
	CLIClientID string `json:"cliClientId,omitempty"`
	// DisplayName labels the dashboard's "sign in with ..." button; empty
	// is the URL's host.
	DisplayName string `json:"displayName,omitempty"`
	// UserClaim is the claim whose value names the user (email,
	// preferred_username, sub, ...); empty is DefaultUserClaim.
	UserClaim string `json:"userClaim,omitempty"`
	// Scopes are asked for by `heddle login` and the dashboard beside
	// DefaultScopes: some providers put a claim the rules read in the ID
	// token only when its scope is asked for (Dex's groups).
	Scopes []string `json:"scopes,omitempty"`
	// Rules map claims to a tenant and a role; the first that matches
	// decides. No match: the token is refused.
	Rules     []Rule    `json:"rules"`
	CreatedAt time.Time `json:"createdAt"`
	Version   int64     `json:"version"`
}

// Rule maps a token to a tenant and a role when every condition it sets
// holds (a rule with no condition matches every verified token).
type Rule struct {
	// Claim and Value: the claim equals Value, or is a list holding it
	// (groups, roles).
	Claim string `json:"claim,omitempty"`
	Value string `json:"value,omitempty"`
	// EmailDomain: the email claim ends in @EmailDomain and email_verified
	// is not false.
	EmailDomain string `json:"emailDomain,omitempty"`
	// Tenant the user joins; empty is the issuer's own tenant. Only the
	// system tenant's issuers may name another.
	Tenant string `json:"tenant,omitempty"`
	// Role the user gets: user or admin (superadmin only in the system
	// tenant).
	Role domain.Role `json:"role"`
}

// ClientIDOrAudience is the client id sign-in uses.
func (is *Issuer) ClientIDOrAudience() string {
	if is.ClientID != "" {
		return is.ClientID
	}
	return is.Audience
}

// CLIClientIDOrDefault is the client id `heddle login` uses.
func (is *Issuer) CLIClientIDOrDefault() string {
	if is.CLIClientID != "" {
		return is.CLIClientID
	}
	return is.ClientIDOrAudience()
}

// acceptsAudience: tokens for aud are for heddle under this issuer.
func (is *Issuer) acceptsAudience(aud []string) bool {
	return slices.Contains(aud, is.Audience) || (is.CLIClientID != "" && slices.Contains(aud, is.CLIClientID))
}

// UserClaimOrDefault is the claim that names the user.
func (is *Issuer) UserClaimOrDefault() string {
	if is.UserClaim != "" {
		return is.UserClaim
	}
	return DefaultUserClaim
}

// Label is what the dashboard's button says.
func (is *Issuer) Label() string {
	if is.DisplayName != "" {
		return is.DisplayName
	}
	if u, err := url.Parse(is.URL); err == nil && u.Host != "" {
		return u.Host
	}
	return is.Name
}

// Validate checks an issuer about to be stored in tenant.
func (is *Issuer) Validate(tenant string) domain.Problems {
	var ps domain.Problems
	add := func(field, code, format string, args ...any) {
		ps = append(ps, domain.Problem{Field: field, Code: code, Message: fmt.Sprintf(format, args...)})
	}
	if !domain.ValidName(is.Name) {
		add("name", domain.CodeInvalid, "%q is not a valid name; use letters, digits, '.', '_' and '-', at most 63", is.Name)
	}
	if msg := checkIssuerURL(is.URL); msg != "" {
		add("url", domain.CodeInvalid, "%s", msg)
	}
	if is.Audience == "" || len(is.Audience) > 256 {
		add("audience", domain.CodeInvalid, "give the client id tokens carry in aud (1 to 256 characters)")
	}
	if len(is.ClientID) > 256 {
		add("clientId", domain.CodeOutOfRange, "is %d characters long; keep it under 257", len(is.ClientID))
	}
	if len(is.CLIClientID) > 256 {
		add("cliClientId", domain.CodeOutOfRange, "is %d characters long; keep it under 257", len(is.CLIClientID))
	}
	if len(is.DisplayName) > 64 {
		add("displayName", domain.CodeOutOfRange, "is %d characters long; keep it under 65", len(is.DisplayName))
	}
	if len(is.UserClaim) > 64 || strings.ContainsAny(is.UserClaim, " \t\n") {
		add("userClaim", domain.CodeInvalid, "name one claim (email, preferred_username, sub, ...)")
	}
	if len(is.Scopes) > MaxScopes {
		add("scopes", domain.CodeOutOfRange, "has %d scopes; keep it to %d", len(is.Scopes), MaxScopes)
	}
	for i, sc := range is.Scopes {
		if !validScope(sc) {
			add(fmt.Sprintf("scopes[%d]", i), domain.CodeInvalid, "%q is not a scope; give one scope name per entry (groups), without spaces or quotes", sc)
		}
	}
	if len(is.Rules) == 0 {
		add("rules", domain.CodeRequired, "give at least one rule; without one no token maps to a tenant")
	}
	if len(is.Rules) > MaxRules {
		add("rules", domain.CodeOutOfRange, "has %d rules; keep it to %d", len(is.Rules), MaxRules)
	}
	for i, r := range is.Rules {
		field := fmt.Sprintf("rules[%d]", i)
		if (r.Claim == "") != (r.Value == "") {
			add(field+".claim", domain.CodeInvalid, "claim and value go together: the rule matches when the claim equals or holds the value")
		}
		if len(r.Claim) > 64 || len(r.Value) > 256 {
			add(field+".value", domain.CodeOutOfRange, "keep claim under 65 and value under 257 characters")
		}
		if r.EmailDomain != "" && (strings.ContainsAny(r.EmailDomain, "@ /") || len(r.EmailDomain) > 253) {
			add(field+".emailDomain", domain.CodeInvalid, "%q is not a domain; write it without @ (example.com)", r.EmailDomain)
		}
		target := r.Tenant
		if target == "" {
			target = tenant
		}
		switch {
		case r.Tenant != "" && !domain.ValidName(r.Tenant):
			add(field+".tenant", domain.CodeInvalid, "%q is not a valid tenant id", r.Tenant)
		case r.Tenant != "" && r.Tenant != tenant && tenant != domain.SystemTenant:
			add(field+".tenant", domain.CodeInvalid, "a tenant's issuer maps only into its own tenant %q; leave tenant out (the superadmin configures issuers for other tenants)", tenant)
		}
		switch {
		case !r.Role.Valid():
			add(field+".role", domain.CodeInvalid, "%q is not a role; use user or admin", r.Role)
		case r.Role == domain.RoleSuperadmin && target != domain.SystemTenant:
			add(field+".role", domain.CodeInvalid, "superadmins live only in the system tenant; use admin or user")
		}
	}
	return ps
}

// validScope is RFC 6749's scope-token (printable ASCII but space, '"'
// and backslash), bounded.
func validScope(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range []byte(s) {
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// ScopesToAsk are the scopes a sign-in with is asks for: DefaultScopes and
// the issuer's own, each once.
func (is *Issuer) ScopesToAsk() []string {
	return mergeScopes(slices.Clone(DefaultScopes), is.Scopes)
}

func mergeScopes(into, more []string) []string {
	for _, s := range more {
		if !slices.Contains(into, s) {
			into = append(into, s)
		}
	}
	return into
}

// checkIssuerURL says what is wrong with an issuer URL, or "". heddle
// fetches from it, so it must be https, except on a loopback host (a
// provider on the operator's own machine).
func checkIssuerURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Sprintf("%q is not an issuer URL; give it exactly as tokens carry it in iss (https://idp.example.com/realms/acme)", raw)
	}
	if len(raw) > 512 {
		return "is longer than 512 characters"
	}
	switch u.Scheme {
	case "https":
		return ""
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			return ""
		}
	}
	return fmt.Sprintf("%q must use https (http only on a loopback host)", raw)
}
